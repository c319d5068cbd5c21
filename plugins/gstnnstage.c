/* GStreamer nnpipe plugin: nnstage
 *
 * This library is free software; you can redistribute it and/or
 * modify it under the terms of the GNU Library General Public
 * License as published by the Free Software Foundation; either
 * version 2.1 of the License, or (at your option) any later version.
 */

/**
 * SECTION:element-nnstage
 * @title: nnstage
 * @short_description: run an ONNX model on tensor buffers
 *
 * nnstage runs an ONNX model with libnnpipe on `other/tensors` buffers
 * (NNStreamer's caps, see docs/tensor-caps.md): each input buffer holds
 * one GstMemory per model input, in the model's input order, and each
 * output buffer one GstMemory per model output.
 *
 * The output caps come from shape inference on the input caps, so models
 * with dynamic sizes (text detectors, recognisers) run at whatever size is
 * negotiated, and a caps change builds a new stage.  The stages of the last
 * 4 distinct input shapes are kept prepared (each with its own arena, so up
 * to 4 times one stage's memory) and reused when those shapes come back
 * (#GstNnStage:stages-built counts the stages built).  Caps queries offer
 * only what the model's inputs accept; a CAPS event that does not fit the
 * model fails with an error naming what the model expects and what it got.
 *
 * The model file is loaded once per process (#GstNnStage:model) and shared
 * by every nnstage that names it.  #GstNnStage:threads sets the stage's
 * intra-op threads and #GstNnStage:cpus pins them to cores.
 * #GstNnStage:plan with #GstNnStage:stage, or #GstNnStage:nodes, run one
 * part of the model (docs/pipeline.md); #GstNnStage:device runs the stage
 * on the CPU or an OpenCL device (#GstNnStage:device-index,
 * #GstNnStage:device-name, #GstNnStage:fallback; docs/opencl.md).
 * Timestamps and metas pass through; LATENCY queries add the measured
 * processing time (median of the last buffers).
 *
 * ## Example launch lines
 * |[
 * gst-launch-1.0 filesrc location=in.f32 blocksize=110592 ! \
 *     other/tensors,format=static,num_tensors=1,types=float32,dimensions=192:48:3:1,framerate=0/1 ! \
 *     nnstage model=.cache/models/ch_ppocr_mobile_v2.0_cls_infer.onnx ! filesink location=stage-out.f32
 * ]| runs the text direction classifier on raw 1x3x48x192 float32 tensors
 * (110592 bytes each) read from a file and writes their 1x2 outputs
 * (pipelines/stage.sh).
 * |[
 * ... ! nnconvert mean=0.485,0.456,0.406 std=0.229,0.224,0.225 channel-order=bgr \
 *     keep-aspect-ratio=true multiple-of=32 keep-frame=true ! \
 *     nnstage model=.cache/models/ch_PP-OCRv4_det_infer.onnx device=opencl ! nndbdecode ! \
 *     nncrop channel-order=bgr ! nnstage model=.cache/models/ch_PP-OCRv4_rec_infer.onnx device=cpu ! ...
 * ]| runs the text detector on an OpenCL device and the recogniser on the
 * CPU (pipelines/ocr-opencl.sh; pipelines/ocr.sh is the same on the CPU).
 */

#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "gstnnstage.h"
#include "gstnnstage-private.h"
#include "gstnnstagedevice.h"
#include "gstnnstagepart.h"
#include "gstnnclmemory.h"
#include "gstnntensorcaps.h"
#include "gstnntensorpool.h"

#include <nnpipe/model.h>
#include <nnpipe/plan.h>
#include <nnpipe/stage.h>

#include <stdlib.h>
#include <string.h>

/* The element: properties, caps, allocation, the per-buffer path and the
 * LATENCY query.  What part of the model runs, and at which shapes, lives
 * in gstnnstagepart.c; the device, memory:OpenCL and mapping buffers in
 * gstnnstagedevice.c.  The instance struct is in gstnnstage-private.h. */

GST_DEBUG_CATEGORY (gst_nn_stage_debug);
#define GST_CAT_DEFAULT gst_nn_stage_debug

#define DEFAULT_MODEL NULL
#define DEFAULT_DEVICE "cpu"
#define DEFAULT_THREADS 1
#define DEFAULT_CPUS NULL
#define DEFAULT_PLAN NULL
#define DEFAULT_STAGE 0
#define DEFAULT_NODES NULL
#define DEFAULT_DEVICE_INDEX -1
#define DEFAULT_DEVICE_NAME NULL
#define DEFAULT_FALLBACK FALSE
#define DEFAULT_TRACE NULL

#define MAX_THREADS 256

enum
{
  PROP_0,
  PROP_MODEL,
  PROP_DEVICE,
  PROP_THREADS,
  PROP_CPUS,
  PROP_PLAN,
  PROP_STAGE,
  PROP_NODES,
  PROP_PLAN_OBJECT,
  PROP_BUSY_TIME,
  PROP_FRAMES,
  PROP_DEVICE_INDEX,
  PROP_DEVICE_NAME,
  PROP_FALLBACK,
  PROP_STAGES_BUILT,
  PROP_TRACE,
};

/* device memory first: an OpenCL stage prefers it (see transform_caps) */
#define CL_TENSORS_CAPS \
  "other/tensors(" GST_CAPS_FEATURE_MEMORY_OPENCL "), format = (string) static, " \
  "num_tensors = (int) [ 1, 16 ], framerate = (fraction) [ 0/1, MAX ]"

static GstStaticPadTemplate sink_template = GST_STATIC_PAD_TEMPLATE ("sink",
    GST_PAD_SINK,
    GST_PAD_ALWAYS,
    GST_STATIC_CAPS (CL_TENSORS_CAPS "; " GST_NN_TENSORS_CAPS_TEMPLATE_ANY));

static GstStaticPadTemplate src_template = GST_STATIC_PAD_TEMPLATE ("src",
    GST_PAD_SRC,
    GST_PAD_ALWAYS,
    GST_STATIC_CAPS (CL_TENSORS_CAPS "; " GST_NN_TENSORS_CAPS_TEMPLATE));



G_DEFINE_TYPE (GstNnStage, gst_nn_stage, GST_TYPE_BASE_TRANSFORM);
GST_ELEMENT_REGISTER_DEFINE (nnstage, "nnstage", GST_RANK_NONE,
    GST_TYPE_NN_STAGE);

static GstCaps *
model_input_caps (GstNnStage * self, const GValue * framerate)
{
  GstCaps *caps;

  g_mutex_lock (&self->lock);
  if (self->model == NULL) {
    g_mutex_unlock (&self->lock);
    return gst_static_pad_template_get_caps (&sink_template);
  }
  caps = gst_nn_stage_graph_input_caps (nnp_model_get_graph (self->model), framerate);
  g_mutex_unlock (&self->lock);
  return caps;
}

/* Output caps for one input structure: exact when it is fixed, else any
 * tensors.  NULL when fixed caps do not fit the model's declared inputs.
 * Fixed caps that fit them but fail shape inference (a detector's size
 * that is not a multiple of 32) give any tensors: the CAPS event then
 * fails with an error saying why, where a refusal here would only make
 * upstream report "not-negotiated". */
static GstStructure *
output_structure (GstNnStage * self, const GstStructure * s)
{
  const GValue *framerate = gst_structure_get_value (s, "framerate");
  GstNnTensorsInfo in, out;
  GstStructure *ret;
  GError *err = NULL;

  if (gst_nn_tensors_info_from_structure (&in, s, NULL)) {
    if (gst_nn_stage_infer (self, &in, &out, NULL, NULL, NULL, &err)) {
      ret = gst_nn_tensors_info_to_structure (&out);
    } else if ((!self->part || self->part_first) && !gst_nn_stage_inputs_match (self, &in)) {
      GST_DEBUG_OBJECT (self, "%s", err->message);
      g_clear_error (&err);
      return NULL;
    } else {
      GST_DEBUG_OBJECT (self, "%s (left to the CAPS event)", err->message);
      g_clear_error (&err);
      ret = gst_structure_new (GST_NN_TENSORS_MEDIA_TYPE,
          "format", G_TYPE_STRING, "static", NULL);
    }
  } else {
    ret = gst_structure_new (GST_NN_TENSORS_MEDIA_TYPE,
        "format", G_TYPE_STRING, "static", NULL);
  }
  if (framerate)
    gst_structure_set_value (ret, "framerate", framerate);
  else
    gst_structure_remove_field (ret, "framerate");
  return ret;
}

static GstCaps *
gst_nn_stage_transform_caps (GstBaseTransform * trans,
    GstPadDirection direction, GstCaps * caps, GstCaps * filter)
{
  GstNnStage *self = GST_NN_STAGE (trans);
  GstCaps *ret;
  gboolean have_model, part = FALSE;

  g_mutex_lock (&self->lock);
  have_model = self->model != NULL;
  /* a first part takes the model's inputs: its sink caps are the model's */
  part = self->part && !self->part_first;
  g_mutex_unlock (&self->lock);

  if (!have_model || (part && direction == GST_PAD_SRC)) {
    /* a later part's inputs are checked on the CAPS event */
    /* before start(): anything our templates allow */
    ret = gst_pad_get_pad_template_caps (direction == GST_PAD_SINK ?
        GST_BASE_TRANSFORM_SRC_PAD (trans) : GST_BASE_TRANSFORM_SINK_PAD (trans));
  } else if (direction == GST_PAD_SINK) {
    ret = gst_caps_new_empty ();
    for (guint i = 0; i < gst_caps_get_size (caps); i++) {
      GstStructure *s = output_structure (self, gst_caps_get_structure (caps,
              i));

      if (s)
        ret = gst_caps_merge_structure (ret, s);
    }
    /* none fits the model: any tensors, so that upstream sends its caps
     * and the CAPS event fails with an error naming what the model expects
     * and what it got (an empty answer would only make upstream fail with
     * a bare "not-negotiated") */
    if (gst_caps_is_empty (ret) && !gst_caps_is_empty (caps)) {
      gst_caps_unref (ret);
      ret = gst_pad_get_pad_template_caps (GST_BASE_TRANSFORM_SRC_PAD (trans));
    }
  } else {
    ret = gst_caps_new_empty ();
    for (guint i = 0; i < gst_caps_get_size (caps); i++) {
      const GstStructure *s = gst_caps_get_structure (caps, i);

      ret = gst_caps_merge (ret, model_input_caps (self,
              gst_structure_get_value (s, "framerate")));
    }
    if (gst_caps_get_size (caps) == 0 && gst_caps_is_any (caps))
      ret = gst_caps_merge (ret, model_input_caps (self, NULL));
  }

  ret = gst_nn_stage_offer_features (self, ret);

  if (filter) {
    GstCaps *f = filter, *tmp;

    /* upstream offers candidates: drop fixed ones the model cannot take
     * (e.g. 1 channel for a model that wants 3), which the caps above
     * cannot say when the model's sizes are dynamic */
    if (have_model && !part && direction == GST_PAD_SRC)
      f = gst_nn_stage_filter_model_inputs (self, filter);
    tmp = gst_caps_intersect_full (f, ret, GST_CAPS_INTERSECT_FIRST);
    if (f != filter)
      gst_caps_unref (f);
    gst_caps_unref (ret);
    ret = tmp;
    /* nothing upstream offers fits the model: answer with its own offer,
     * so that it sends its caps and the CAPS event fails with an error
     * naming what the model expects and what it got (an empty answer
     * would only make upstream fail with a bare "not-negotiated") */
    if (have_model && !part && direction == GST_PAD_SRC
        && gst_caps_is_empty (ret) && !gst_caps_is_empty (filter)) {
      GstCaps *tmpl =
          gst_pad_get_pad_template_caps (GST_BASE_TRANSFORM_SINK_PAD (trans));

      gst_caps_unref (ret);
      ret = gst_caps_intersect_full (filter, tmpl, GST_CAPS_INTERSECT_FIRST);
      gst_caps_unref (tmpl);
      GST_DEBUG_OBJECT (self, "no offer fits the model, answering %"
          GST_PTR_FORMAT " (the CAPS event says why)", ret);
    }
  }

  GST_DEBUG_OBJECT (self, "%s: %" GST_PTR_FORMAT " -> %" GST_PTR_FORMAT,
      direction == GST_PAD_SINK ? "sink->src" : "src->sink", caps, ret);
  return ret;
}

static GstCaps *
gst_nn_stage_fixate_caps (GstBaseTransform * trans, GstPadDirection direction,
    GstCaps * caps, GstCaps * othercaps)
{
  GstCaps *ret = gst_nn_tensors_caps_fixate (othercaps);

  GST_DEBUG_OBJECT (trans, "fixated to %" GST_PTR_FORMAT, ret);
  return ret;
}

static gboolean
gst_nn_stage_get_unit_size (GstBaseTransform * trans, GstCaps * caps,
    gsize * size)
{
  GstNnTensorsInfo info;

  if (!gst_nn_tensors_info_from_caps (&info, caps, NULL))
    return FALSE;
  *size = gst_nn_tensors_info_get_size (&info);
  return *size > 0;
}

/* Accept any tensor caps our template allows: whether they fit the model is
 * checked on the CAPS event, which fails with an error naming what the
 * model expects and what it got (an accept-caps refusal would only say
 * "not negotiated").  Upstream elements that can choose learn the model's
 * inputs from caps queries (transform_caps). */
static gboolean
gst_nn_stage_accept_caps (GstBaseTransform * trans, GstPadDirection direction,
    GstCaps * caps)
{
  GstCaps *tmpl;
  gboolean ret;

  if (direction != GST_PAD_SINK)
    return GST_BASE_TRANSFORM_CLASS (gst_nn_stage_parent_class)->accept_caps
        (trans, direction, caps);

  tmpl = gst_pad_get_pad_template_caps (GST_BASE_TRANSFORM_SINK_PAD (trans));
  ret = gst_caps_can_intersect (tmpl, caps);
  gst_caps_unref (tmpl);
  /* device memory only on an OpenCL stage */
  for (guint i = 0; ret && !GST_NN_STAGE (trans)->use_cl
      && i < gst_caps_get_size (caps); i++)
    if (gst_nn_caps_has_cl_memory (caps, i))
      ret = FALSE;
  GST_DEBUG_OBJECT (trans, "accept caps %" GST_PTR_FORMAT ": %d", caps, ret);
  return ret;
}

/* Post the reason fixed input caps do not fit the model, before the base
 * class refuses them (it only says "not negotiated").  Upstream sends the
 * refused CAPS event again with every buffer it tries: the error is posted
 * for the first one only. */
static gboolean
gst_nn_stage_sink_event (GstBaseTransform * trans, GstEvent * event)
{
  GstNnStage *self = GST_NN_STAGE (trans);

  if (GST_EVENT_TYPE (event) == GST_EVENT_CAPS) {
    GstCaps *caps;
    GstNnTensorsInfo in, out;
    GError *err = NULL;
    gboolean ok;

    gst_event_parse_caps (event, &caps);
    if (self->refused_caps && gst_caps_is_equal (caps, self->refused_caps)) {
      GST_DEBUG_OBJECT (self, "caps refused before (error posted then): %"
          GST_PTR_FORMAT, caps);
      gst_event_unref (event);
      return FALSE;
    }
    ok = gst_nn_tensors_info_from_caps (&in, caps, &err)
        && gst_nn_stage_infer (self, &in, &out, NULL, NULL, NULL, &err);
    if (!ok) {
      gchar *str = gst_caps_to_string (caps);

      GST_ELEMENT_ERROR (self, CORE, NEGOTIATION, ("%s", err->message),
          ("input caps %s", str));
      gst_caps_replace (&self->refused_caps, caps);
      g_free (str);
      g_clear_error (&err);
      gst_event_unref (event);
      return FALSE;
    }
  }
  return GST_BASE_TRANSFORM_CLASS (gst_nn_stage_parent_class)->sink_event
      (trans, event);
}

/* A prepared stage and the shapes it was built for. */
typedef struct
{
  GstNnTensorsInfo in, out;
  NnpStage *stage;              /* owned */
  gboolean stage_on_cl;
} GstNnCachedStage;

static void
cached_stage_free (gpointer data)
{
  GstNnCachedStage *c = data;

  nnp_stage_free (c->stage);
  g_free (c);
}

/* Drop every cached stage (streaming thread, or no streaming). */
static void
stage_cache_clear (GstNnStage * self)
{
  self->stage = NULL;
  g_ptr_array_set_size (self->stage_cache, 0);
}

/* Make the cached stage for in -> out the current one (moved to the front);
 * FALSE when there is none. */
static gboolean
stage_cache_use (GstNnStage * self, const GstNnTensorsInfo * in,
    const GstNnTensorsInfo * out)
{
  for (guint i = 0; i < self->stage_cache->len; i++) {
    GstNnCachedStage *c = g_ptr_array_index (self->stage_cache, i);

    if (!gst_nn_tensors_info_is_equal (&c->in, in)
        || !gst_nn_tensors_info_is_equal (&c->out, out))
      continue;
    if (i > 0) {
      g_ptr_array_steal_index (self->stage_cache, i);
      g_ptr_array_insert (self->stage_cache, 0, c);
    }
    self->stage = c->stage;
    self->stage_on_cl = c->stage_on_cl;
    return TRUE;
  }
  return FALSE;
}

/* Keep a new stage (owned) as the current one, dropping the least
 * recently used beyond STAGE_CACHE_SIZE. */
static void
stage_cache_add (GstNnStage * self, const GstNnTensorsInfo * in,
    const GstNnTensorsInfo * out, NnpStage * stage)
{
  GstNnCachedStage *c = g_new0 (GstNnCachedStage, 1);

  c->in = *in;
  c->out = *out;
  c->stage = stage;
  c->stage_on_cl = self->stage_on_cl;
  g_ptr_array_insert (self->stage_cache, 0, c);
  while (self->stage_cache->len > STAGE_CACHE_SIZE)
    g_ptr_array_remove_index (self->stage_cache, self->stage_cache->len - 1);
  self->stage = stage;
}

static gboolean
check_stage (GstNnStage * self, NnpStage * stage,
    const GstNnTensorsInfo * in, const GstNnTensorsInfo * out, GError ** error)
{
  if ((guint) nnp_stage_get_n_inputs (stage) != in->n_tensors
      || (guint) nnp_stage_get_n_outputs (stage) != out->n_tensors) {
    g_set_error (error, NNP_ERROR, NNP_ERROR_PLAN,
        "model %s: stage has %d inputs and %d outputs, caps have %u and %u",
        self->model_name, nnp_stage_get_n_inputs (stage),
        nnp_stage_get_n_outputs (stage), in->n_tensors, out->n_tensors);
    return FALSE;
  }
  for (guint i = 0; i < out->n_tensors; i++) {
    const NnpValue *v = nnp_stage_get_output (stage, (int) i);

    if (v->dtype != out->tensors[i].dtype
        || nnp_shape_numel (&v->shape) !=
        nnp_shape_numel (&out->tensors[i].shape)) {
      g_set_error (error, NNP_ERROR, NNP_ERROR_PLAN,
          "model %s: stage output %u ('%s') does not match the output caps",
          self->model_name, i, v->name);
      return FALSE;
    }
  }
  return TRUE;
}

static gboolean
gst_nn_stage_set_caps (GstBaseTransform * trans, GstCaps * incaps,
    GstCaps * outcaps)
{
  GstNnStage *self = GST_NN_STAGE (trans);
  GstNnTensorsInfo in, out, want;
  NnpStageOptions opts = { 0 };
  NnpGraph *graph = NULL;
  NnpPlan *plan = NULL;
  NnpStage *stage;
  gint *cpus = NULL;
  gint n_cpus = 0;
  gchar *cpus_str;
  GError *err = NULL;
  gint64 t0;
  gint k = 0;
  guint gen;

  if (!gst_nn_tensors_info_from_caps (&in, incaps, &err)
      || !gst_nn_tensors_info_from_caps (&out, outcaps, &err))
    goto invalid_caps;

  self->out_device = gst_nn_caps_has_cl_memory (outcaps, 0);
  if (self->stage && gst_nn_tensors_info_is_equal (&in, &self->in_info)
      && gst_nn_tensors_info_is_equal (&out, &self->out_info)) {
    GST_DEBUG_OBJECT (self, "same shapes, keeping the stage");
    self->in_info = in;
    self->out_info = out;
    return TRUE;
  }

  /* a property changed since the cached stages were built: forget them */
  GST_OBJECT_LOCK (self);
  gen = self->props_gen;
  GST_OBJECT_UNLOCK (self);
  if (gen != self->stage_cache_gen) {
    stage_cache_clear (self);
    self->stage_cache_gen = gen;
  }
  if (stage_cache_use (self, &in, &out)) {
    GST_DEBUG_OBJECT (self, "shapes seen before, reusing their stage");
    self->in_info = in;
    self->out_info = out;
    return TRUE;
  }

  if (!gst_nn_stage_infer (self, &in, &want, &graph, &plan, &k, &err))
    goto no_shapes;
  if (!gst_nn_tensors_info_is_equal (&want, &out)) {
    gchar *w = gst_nn_tensors_info_to_string (&want);
    gchar *g = gst_nn_tensors_info_to_string (&out);

    g_set_error (&err, NNP_ERROR, NNP_ERROR_INVALID,
        "model %s: outputs are %s, output caps say %s", self->model_name, w,
        g);
    g_free (w);
    g_free (g);
    goto no_shapes;
  }

  GST_OBJECT_LOCK (self);
  opts.device = self->dev_spec ? self->dev_spec : "cpu";
  opts.threads = self->dev_threads;
  cpus_str = g_strdup (self->cpus);
  GST_OBJECT_UNLOCK (self);

  nnp_cpus_parse (cpus_str, &cpus, &n_cpus, NULL);      /* checked at start */
  g_free (cpus_str);
  opts.cpus = cpus;
  opts.n_cpus = n_cpus;

  t0 = g_get_monotonic_time ();
  if (plan) {
    /* the plan's device (dev_spec, set at start), threads and pinning */
    opts.threads = plan->stages[k].threads;
  }
  stage = gst_nn_stage_make_stage (self, plan, k, graph, &opts, &err);
  g_free (cpus);
  nnp_graph_unref (graph);
  if (stage == NULL)
    goto no_stage;
  if (!check_stage (self, stage, &in, &out, &err)) {
    nnp_stage_free (stage);
    goto no_stage;
  }

  stage_cache_add (self, &in, &out, stage);
  self->in_info = in;
  self->out_info = out;
  GST_OBJECT_LOCK (self);
  self->stages_built++;
  GST_OBJECT_UNLOCK (self);

  {
    gchar *is = gst_nn_tensors_info_to_string (&in);
    gchar *os = gst_nn_tensors_info_to_string (&out);

    GST_INFO_OBJECT (self, "model %s: stage for %s -> %s on %s, %d threads, "
        "arena %" G_GSIZE_FORMAT " bytes, built in %.1f ms, output in %s "
        "memory", self->model_name, is, os,
        nnp_device_get_name (nnp_stage_get_device (stage)),
        MAX (opts.threads, 1),
        nnp_stage_get_arena_bytes (stage),
        (g_get_monotonic_time () - t0) / 1000.0,
        self->out_device ? "device" : "host");
    g_free (is);
    g_free (os);
  }
  if (plan)
    GST_INFO_OBJECT (self, "%s: %d nodes, '%s' .. '%s'", self->part_name,
        plan->stages[k].n_nodes, plan->stages[k].nodes[0],
        plan->stages[k].nodes[plan->stages[k].n_nodes - 1]);
  g_clear_pointer (&plan, nnp_plan_free);
  return TRUE;

  /* ERRORS (each posted once: sink_event refuses these caps from now on) */
invalid_caps:
  {
    GST_ELEMENT_ERROR (self, CORE, NEGOTIATION, ("%s", err->message),
        ("input caps %" GST_PTR_FORMAT ", output caps %" GST_PTR_FORMAT,
            incaps, outcaps));
    gst_caps_replace (&self->refused_caps, incaps);
    g_clear_error (&err);
    return FALSE;
  }
no_shapes:
  {
    GST_ELEMENT_ERROR (self, CORE, NEGOTIATION, ("%s", err->message),
        ("input caps %" GST_PTR_FORMAT ", output caps %" GST_PTR_FORMAT,
            incaps, outcaps));
    gst_caps_replace (&self->refused_caps, incaps);
    g_clear_error (&err);
    if (graph)
      nnp_graph_unref (graph);
    g_clear_pointer (&plan, nnp_plan_free);
    return FALSE;
  }
no_stage:
  {
    if (self->use_cl)
      GST_ELEMENT_ERROR (self, LIBRARY, INIT,
          ("model %s: could not prepare the stage on OpenCL device '%s' "
              "(%s): %s", self->model_name, self->dev_spec,
              nnp_device_get_name (self->cl_device), err->message),
          ("%s (set fallback=true to run on the CPU instead)", err->message));
    else
      GST_ELEMENT_ERROR (self, LIBRARY, INIT,
          ("model %s: could not prepare a %s stage: %s", self->model_name,
              opts.device, err->message), ("%s", err->message));
    gst_caps_replace (&self->refused_caps, incaps);
    g_clear_error (&err);
    g_clear_pointer (&plan, nnp_plan_free);
    return FALSE;
  }
}

/* Buffers carry one memory per tensor: use our pool, whatever downstream
 * offers; in device memory (memory:OpenCL caps) its allocator is one of
 * the stage's OpenCL device. */
static gboolean
gst_nn_stage_decide_allocation (GstBaseTransform * trans, GstQuery * query)
{
  GstNnStage *self = GST_NN_STAGE (trans);
  GstCaps *outcaps;
  GstNnTensorsInfo info;
  GstBufferPool *pool;
  guint min = 0;

  gst_query_parse_allocation (query, &outcaps, NULL);
  if (outcaps == NULL || !gst_nn_tensors_info_from_caps (&info, outcaps, NULL))
    return FALSE;

  /* keep downstream's minimum; no maximum */
  if (gst_query_get_n_allocation_pools (query) > 0)
    gst_query_parse_nth_allocation_pool (query, 0, NULL, NULL, &min, NULL);
  while (gst_query_get_n_allocation_pools (query) > 0)
    gst_query_remove_nth_allocation_pool (query, 0);

  pool = gst_nn_tensor_pool_new ();
  gst_query_add_allocation_pool (query, pool,
      (guint) gst_nn_tensors_info_get_size (&info), min, 0);
  gst_object_unref (pool);

  if (self->out_device) {
    GstAllocator *allocator;
    GstAllocationParams params;

    if (self->cl_device == NULL)
      return FALSE;
    allocator = gst_nn_cl_allocator_new (self->cl_device);
    gst_allocation_params_init (&params);
    while (gst_query_get_n_allocation_params (query) > 0)
      gst_query_remove_nth_allocation_param (query, 0);
    gst_query_add_allocation_param (query, allocator, &params);
    gst_object_unref (allocator);
  }

  return GST_BASE_TRANSFORM_CLASS (gst_nn_stage_parent_class)->decide_allocation
      (trans, query);
}

static GstClockTime
median_run_time_locked (GstNnStage * self)
{
  GstClockTime v[LATENCY_WINDOW];
  guint n = self->n_run_times;

  if (n == 0)
    return 0;
  memcpy (v, self->run_times, n * sizeof (GstClockTime));
  /* insertion sort: n <= 16 */
  for (guint i = 1; i < n; i++) {
    GstClockTime x = v[i];
    guint j = i;

    while (j > 0 && v[j - 1] > x) {
      v[j] = v[j - 1];
      j--;
    }
    v[j] = x;
  }
  return v[n / 2];
}

/* Record one run; tell the pipeline when the latency estimate grows. */
static void
record_run_time (GstNnStage * self, GstClockTime t)
{
  GstClockTime median;
  gboolean post;

  GST_OBJECT_LOCK (self);
  self->busy_ns += t;
  self->run_start = 0;
  self->frames++;
  self->run_times[self->run_time_pos] = t;
  self->run_time_pos = (self->run_time_pos + 1) % LATENCY_WINDOW;
  if (self->n_run_times < LATENCY_WINDOW)
    self->n_run_times++;
  median = median_run_time_locked (self);
  post = median > self->reported_latency + self->reported_latency / 4;
  if (post)
    self->reported_latency = median;
  GST_OBJECT_UNLOCK (self);

  if (post) {
    GST_DEBUG_OBJECT (self, "processing time now %" GST_TIME_FORMAT,
        GST_TIME_ARGS (median));
    gst_element_post_message (GST_ELEMENT (self),
        gst_message_new_latency (GST_OBJECT (self)));
  }
}

static GstFlowReturn
gst_nn_stage_transform (GstBaseTransform * trans, GstBuffer * inbuf,
    GstBuffer * outbuf)
{
  GstNnStage *self = GST_NN_STAGE (trans);
  NnpTensor *inputs[GST_NN_TENSORS_MAX] = { NULL };
  NnpTensor *outputs[GST_NN_TENSORS_MAX] = { NULL };
  gboolean in_mask[GST_NN_TENSORS_MAX], out_mask[GST_NN_TENSORS_MAX];
  GstNnTensorsMap in_map, out_map;
  GError *err = NULL;
  gboolean ok;
  gint64 t0, t1;
  guint n_in, n_out, n_dev;

  if (G_UNLIKELY (self->stage == NULL))
    goto not_negotiated;
  n_in = self->in_info.n_tensors;
  n_out = self->out_info.n_tensors;

  /* device memory is used in place (tensors in device memory), the rest
   * mapped */
  n_dev = gst_nn_stage_device_tensors (self, inbuf, FALSE, inputs, in_mask);
  n_dev += gst_nn_stage_device_tensors (self, outbuf, TRUE, outputs, out_mask);

  if (!gst_nn_tensors_map (&in_map, inbuf, &self->in_info, in_mask, GST_MAP_READ,
          &err))
    goto bad_input;
  if (!gst_nn_tensors_map (&out_map, outbuf, &self->out_info, out_mask,
          GST_MAP_WRITE, &err)) {
    gst_nn_tensors_unmap (&in_map);
    goto bad_output;
  }

  /* wrap, no copy: the maps outlive the tensors */
  for (guint i = 0; i < n_in; i++) {
    const NnpValue *v = nnp_stage_get_input (self->stage, (int) i);

    if (!in_mask[i])
      inputs[i] = nnp_tensor_new_wrapped (v->dtype, &v->shape,
          in_map.data[i], NULL, NULL);
  }
  for (guint i = 0; i < n_out; i++) {
    const NnpValue *v = nnp_stage_get_output (self->stage, (int) i);

    if (!out_mask[i])
      outputs[i] = nnp_tensor_new_wrapped (v->dtype, &v->shape,
          out_map.data[i], NULL, NULL);
  }

  t0 = g_get_monotonic_time ();
  GST_OBJECT_LOCK (self);
  self->run_start = t0;
  GST_OBJECT_UNLOCK (self);
  ok = nnp_stage_run (self->stage, inputs, outputs, &err);
  t1 = g_get_monotonic_time ();

  for (guint i = 0; i < n_in; i++)
    g_clear_pointer (&inputs[i], nnp_tensor_unref);
  for (guint i = 0; i < n_out; i++)
    g_clear_pointer (&outputs[i], nnp_tensor_unref);
  gst_nn_tensors_unmap (&out_map);
  gst_nn_tensors_unmap (&in_map);

  if (!ok) {
    GST_OBJECT_LOCK (self);
    self->run_start = 0;
    GST_OBJECT_UNLOCK (self);
    goto run_failed;
  }

  GST_LOG_OBJECT (self, "ran %" GST_TIME_FORMAT " in %.2f ms (%u tensors in "
      "device memory)", GST_TIME_ARGS (GST_BUFFER_PTS (inbuf)),
      (t1 - t0) / 1000.0, n_dev);
  record_run_time (self, (GstClockTime) (t1 - t0) * GST_USECOND);
  if (self->trace)
    nnp_trace_span (self->trace, self->trace_track, (gint64) self->trace_frame++, t0, t1);
  return GST_FLOW_OK;

  /* ERRORS */
not_negotiated:
  {
    GST_ELEMENT_ERROR (self, CORE, NEGOTIATION, (NULL),
        ("no stage: caps were not negotiated"));
    return GST_FLOW_NOT_NEGOTIATED;
  }
bad_input:
  {
    for (guint i = 0; i < GST_NN_TENSORS_MAX; i++) {
      g_clear_pointer (&inputs[i], nnp_tensor_unref);
      g_clear_pointer (&outputs[i], nnp_tensor_unref);
    }
    GST_ELEMENT_ERROR (self, STREAM, FORMAT,
        ("model %s: invalid input buffer", self->model_name),
        ("%s", err->message));
    g_clear_error (&err);
    return GST_FLOW_ERROR;
  }
bad_output:
  {
    for (guint i = 0; i < GST_NN_TENSORS_MAX; i++) {
      g_clear_pointer (&inputs[i], nnp_tensor_unref);
      g_clear_pointer (&outputs[i], nnp_tensor_unref);
    }
    GST_ELEMENT_ERROR (self, STREAM, FAILED,
        ("model %s: invalid output buffer", self->model_name),
        ("%s", err->message));
    g_clear_error (&err);
    return GST_FLOW_ERROR;
  }
run_failed:
  {
    GST_ELEMENT_ERROR (self, STREAM, FAILED,
        ("model %s: inference failed", self->model_name),
        ("%s", err->message));
    g_clear_error (&err);
    return GST_FLOW_ERROR;
  }
}

static gboolean
gst_nn_stage_query (GstBaseTransform * trans, GstPadDirection direction,
    GstQuery * query)
{
  GstNnStage *self = GST_NN_STAGE (trans);
  gboolean ret;

  if (GST_QUERY_TYPE (query) == GST_QUERY_CONTEXT
      && gst_nn_cl_handle_context_query (GST_ELEMENT (self), query,
          self->cl_device, self->dev_spec))
    return TRUE;

  if (direction == GST_PAD_SRC && GST_QUERY_TYPE (query) == GST_QUERY_CUSTOM
      && gst_nn_stage_handle_shapes_query (self, query))
    return TRUE;

  ret = GST_BASE_TRANSFORM_CLASS (gst_nn_stage_parent_class)->query (trans,
      direction, query);

  if (ret && direction == GST_PAD_SRC
      && GST_QUERY_TYPE (query) == GST_QUERY_LATENCY) {
    gboolean live;
    GstClockTime min, max, ours;

    gst_query_parse_latency (query, &live, &min, &max);
    GST_OBJECT_LOCK (self);
    ours = median_run_time_locked (self);
    self->reported_latency = ours;
    GST_OBJECT_UNLOCK (self);

    min += ours;
    if (GST_CLOCK_TIME_IS_VALID (max))
      max += ours;
    GST_DEBUG_OBJECT (self, "latency: adding %" GST_TIME_FORMAT
        " processing time, min %" GST_TIME_FORMAT " max %" GST_TIME_FORMAT,
        GST_TIME_ARGS (ours), GST_TIME_ARGS (min), GST_TIME_ARGS (max));
    gst_query_set_latency (query, live, min, max);
  }
  return ret;
}

/* Open the trace named by the 'trace' property or NNP_TRACE (none: no trace). */
static gboolean
trace_open (GstNnStage * self, gint stage_index, GError ** error)
{
  gchar *path, *track;

  GST_OBJECT_LOCK (self);
  path = g_strdup (self->trace_path ? self->trace_path : nnp_trace_env_path ());
  track = g_strdup_printf ("%s (%s)", GST_OBJECT_NAME (self),
      self->dev_spec ? self->dev_spec : self->device);
  GST_OBJECT_UNLOCK (self);
  if (path)
    self->trace = nnp_trace_open (path, 0, error);
  g_free (path);
  if (path && self->trace == NULL) {
    g_free (track);
    return FALSE;
  }
  if (self->trace == NULL) {
    g_free (track);
    return TRUE;
  }
  self->trace_track = nnp_trace_add_track (self->trace, track, stage_index);
  self->trace_frame = 0;
  g_free (track);
  return TRUE;
}

static gboolean
gst_nn_stage_start (GstBaseTransform * trans)
{
  GstNnStage *self = GST_NN_STAGE (trans);
  NnpModel *model = NULL;
  NnpPlan *plan = NULL;
  gchar *path, *plan_path, *nodes, *cpus_str, *plan_name = NULL, *spec;
  gint stage_index, threads, spec_threads = 0, *cpus = NULL, n_cpus = 0;
  GError *err = NULL;
  gboolean ok = TRUE;

  /* the properties first: a bad value fails here, naming it */
  GST_OBJECT_LOCK (self);
  spec = gst_nn_stage_device_spec_locked (self, &spec_threads, &err);
  threads = self->threads;
  cpus_str = g_strdup (self->cpus);
  GST_OBJECT_UNLOCK (self);
  if (spec == NULL)
    goto bad_property;
  g_free (spec);
  if (spec_threads > 0 && threads != DEFAULT_THREADS && threads != spec_threads) {
    g_set_error (&err, NNP_ERROR, NNP_ERROR_INVALID, "property 'device' says %d "
        "threads, property 'threads' says %d", spec_threads, threads);
    goto bad_property;
  }
  if (!nnp_cpus_parse (cpus_str, &cpus, &n_cpus, &err)) {
    g_prefix_error (&err, "invalid value \"%s\" for property 'cpus': ",
        cpus_str);
    goto bad_property;
  }
  g_clear_pointer (&cpus, g_free);
  g_free (cpus_str);
  self->dev_threads = spec_threads > 0 ? spec_threads : threads;

  GST_OBJECT_LOCK (self);
  self->stages_built = 0;
  path = g_strdup (self->model_path);
  plan_path = g_strdup (self->plan_path);
  nodes = g_strdup (self->nodes);
  stage_index = self->stage_index;
  threads = self->dev_threads;
  cpus_str = g_strdup (self->cpus);
  if (self->plan_object)
    plan = nnp_plan_copy (self->plan_object);
  GST_OBJECT_UNLOCK (self);

  if (nodes && *nodes == '\0')
    g_clear_pointer (&nodes, g_free);
  if (plan) {
    plan_name = g_strdup ("the pipeline's plan");
  } else if (plan_path && *plan_path) {
    plan_name = g_path_get_basename (plan_path);
    plan = nnp_plan_load (plan_path, &err);
    if (plan == NULL)
      goto plan_failed;
  } else {
    plan_name = NULL;
  }
  if (plan && nodes)
    goto plan_and_nodes;
  if (plan && (stage_index < 0 || stage_index >= plan->n_stages))
    goto bad_stage;

  if ((path == NULL || *path == '\0') && plan && plan->model) {
    /* the plan's model (nnp_plan_load() resolved a relative one against
     * the plan file's folder) */
    g_free (path);
    path = g_strdup (plan->model);
  }
  if (path == NULL || *path == '\0')
    goto no_model;

  model = nnp_model_load (path, &err);
  if (model == NULL)
    goto load_failed;
  if (plan && plan->digest && *plan->digest
      && g_ascii_strcasecmp (plan->digest, nnp_model_get_digest (model)) != 0)
    goto wrong_model;

  g_mutex_lock (&self->lock);
  g_clear_pointer (&self->model, nnp_model_unref);
  g_free (self->model_name);
  self->model = model;
  self->model_name = g_path_get_basename (path);
  self->spec_valid = FALSE;
  g_clear_pointer (&self->plan, nnp_plan_free);
  self->plan = plan;
  self->part = plan != NULL || nodes != NULL;
  self->part_stage = stage_index;
  /* a plan's first stage takes the model's inputs in model order (plan.h) */
  self->part_first = plan != NULL && stage_index == 0;
  g_free (self->part_name);
  if (plan)
    self->part_name = g_strdup_printf ("stage %d of %s", stage_index,
        plan_name);
  else
    self->part_name = g_strdup_printf ("nodes \"%s\"", nodes);
  self->spec_flags = plan && plan->no_fusion ? NNP_SPECIALIZE_NO_FUSION :
      NNP_SPECIALIZE_DEFAULT;
  self->part_threads = threads;
  g_array_set_size (self->part_cpus, 0);
  if (nnp_cpus_parse (cpus_str, &cpus, &n_cpus, NULL))
    g_array_append_vals (self->part_cpus, cpus, n_cpus);
  g_clear_pointer (&cpus, g_free);
  g_hash_table_remove_all (self->graphs);
  g_ptr_array_set_size (self->recent_keys, 0);
  ok = !self->part || gst_nn_stage_check_part_locked (self, &err);
  if (!ok) {
    /* forget it all: the element stays in READY */
    g_clear_pointer (&self->model, nnp_model_unref);
    g_clear_pointer (&self->plan, nnp_plan_free);
    g_hash_table_remove_all (self->graphs);
    self->part = FALSE;
    self->part_first = FALSE;
    model = NULL;
    plan = NULL;
  }
  g_mutex_unlock (&self->lock);
  if (!ok)
    goto bad_part;

  if (!gst_nn_stage_open_device (self, stage_index)) {
    /* the model and plan are ours now; stop() or the next start frees them */
    model = NULL;
    plan = NULL;
    goto fail;
  }

  GST_INFO_OBJECT (self, "model %s loaded (digest %s)", path,
      nnp_model_get_digest (model));
  if (!trace_open (self, stage_index, &err))
    goto trace_failed;
  g_free (path);
  g_free (plan_path);
  g_free (plan_name);
  g_free (nodes);
  g_free (cpus_str);
  return TRUE;

  /* ERRORS */
bad_property:
  {
    GST_ELEMENT_ERROR (self, RESOURCE, SETTINGS, ("%s", err->message),
        (NULL));
    g_clear_error (&err);
    g_free (cpus_str);
    return FALSE;
  }
plan_failed:
  {
    GST_ELEMENT_ERROR (self, RESOURCE, SETTINGS,
        ("Invalid plan \"%s\": %s", plan_path, err->message),
        ("%s", err->message));
    goto fail;
  }
trace_failed:
  {
    GST_ELEMENT_ERROR (self, RESOURCE, OPEN_WRITE, ("%s", err->message),
        ("property 'trace' or NNP_TRACE"));
    goto fail;
  }
plan_and_nodes:
  {
    GST_ELEMENT_ERROR (self, RESOURCE, SETTINGS,
        ("Both a plan and nodes are set"), ("set either 'plan' or 'nodes'"));
    goto fail;
  }
bad_stage:
  {
    GST_ELEMENT_ERROR (self, RESOURCE, SETTINGS,
        ("%s has %d stages, there is no stage %d", plan_name, plan->n_stages,
            stage_index), (NULL));
    goto fail;
  }
no_model:
  {
    GST_ELEMENT_ERROR (self, RESOURCE, NOT_FOUND,
        ("No model file given"), ("set the 'model' property"));
    goto fail;
  }
load_failed:
  {
    if (g_error_matches (err, NNP_ERROR, NNP_ERROR_IO))
      GST_ELEMENT_ERROR (self, RESOURCE, OPEN_READ,
          ("Could not read model \"%s\"", path), ("%s", err->message));
    else
      GST_ELEMENT_ERROR (self, STREAM, DECODE,
          ("Could not load model \"%s\"", path), ("%s", err->message));
    goto fail;
  }
wrong_model:
  {
    GST_ELEMENT_ERROR (self, RESOURCE, SETTINGS,
        ("%s was made for another model than \"%s\" (digest %s, the model's "
            "is %s)", plan_name, path, plan->digest,
            nnp_model_get_digest (model)), (NULL));
    goto fail;
  }
bad_part:
  {
    GST_ELEMENT_ERROR (self, RESOURCE, SETTINGS, ("%s", err->message),
        (NULL));
    goto fail;
  }
fail:
  {
    g_clear_error (&err);
    g_clear_pointer (&model, nnp_model_unref);
    g_clear_pointer (&plan, nnp_plan_free);
    g_free (path);
    g_free (plan_path);
    g_free (plan_name);
    g_free (nodes);
    g_free (cpus_str);
    return FALSE;
  }
}

/* Forget all stream state. */
static gboolean
gst_nn_stage_stop (GstBaseTransform * trans)
{
  GstNnStage *self = GST_NN_STAGE (trans);
  GError *err = NULL;

  if (self->trace) {
    GST_INFO_OBJECT (self, "trace: %" G_GUINT64_FORMAT " frames, %u dropped events",
        self->trace_frame, nnp_trace_get_n_dropped (self->trace));
    if (!nnp_trace_close (g_steal_pointer (&self->trace), &err)) {
      GST_ELEMENT_ERROR (self, RESOURCE, WRITE, ("%s", err->message), (NULL));
      g_clear_error (&err);
    }
  }
  stage_cache_clear (self);
  gst_nn_tensors_info_init (&self->in_info);
  gst_nn_tensors_info_init (&self->out_info);
  gst_caps_replace (&self->refused_caps, NULL);
  self->stage_on_cl = self->out_device = self->use_cl = FALSE;
  g_clear_pointer (&self->dev_spec, g_free);
  g_clear_pointer (&self->cl_device, nnp_device_unref);

  g_mutex_lock (&self->lock);
  self->spec_valid = FALSE;
  g_clear_pointer (&self->spec_graph, nnp_graph_unref);
  g_clear_pointer (&self->spec_plan, nnp_plan_free);
  g_clear_error (&self->spec_error);
  g_clear_pointer (&self->model, nnp_model_unref);
  g_clear_pointer (&self->model_name, g_free);
  g_clear_pointer (&self->plan, nnp_plan_free);
  g_clear_pointer (&self->part_name, g_free);
  self->part = FALSE;
  self->part_first = FALSE;
  g_hash_table_remove_all (self->graphs);
  g_ptr_array_set_size (self->recent_keys, 0);
  g_mutex_unlock (&self->lock);

  GST_OBJECT_LOCK (self);
  self->n_run_times = self->run_time_pos = 0;
  self->reported_latency = 0;
  self->busy_ns = self->frames = 0;
  self->run_start = 0;
  GST_OBJECT_UNLOCK (self);
  return TRUE;
}

/* A string property, under the object lock. */
static void
set_string (GstNnStage * self, gchar ** field, const GValue * value)
{
  GST_OBJECT_LOCK (self);
  g_free (*field);
  *field = g_value_dup_string (value);
  GST_OBJECT_UNLOCK (self);
}

static void
gst_nn_stage_set_property (GObject * object, guint prop_id,
    const GValue * value, GParamSpec * pspec)
{
  GstNnStage *self = GST_NN_STAGE (object);

  switch (prop_id) {
    case PROP_MODEL:
      set_string (self, &self->model_path, value);
      break;
    case PROP_DEVICE:
      /* checked at start (an error there names the property) */
      set_string (self, &self->device, value);
      break;
    case PROP_THREADS:
      GST_OBJECT_LOCK (self);
      self->threads = g_value_get_int (value);
      GST_OBJECT_UNLOCK (self);
      break;
    case PROP_CPUS:
      /* checked at start (an error there names the property) */
      set_string (self, &self->cpus, value);
      break;
    case PROP_PLAN:
      set_string (self, &self->plan_path, value);
      break;
    case PROP_TRACE:
      set_string (self, &self->trace_path, value);
      break;
    case PROP_STAGE:
      GST_OBJECT_LOCK (self);
      self->stage_index = g_value_get_int (value);
      GST_OBJECT_UNLOCK (self);
      break;
    case PROP_NODES:
      set_string (self, &self->nodes, value);
      break;
    case PROP_DEVICE_INDEX:
      GST_OBJECT_LOCK (self);
      self->device_index = g_value_get_int (value);
      GST_OBJECT_UNLOCK (self);
      break;
    case PROP_DEVICE_NAME:
      set_string (self, &self->device_name, value);
      break;
    case PROP_FALLBACK:
      GST_OBJECT_LOCK (self);
      self->fallback = g_value_get_boolean (value);
      GST_OBJECT_UNLOCK (self);
      break;
    case PROP_PLAN_OBJECT:{
      const NnpPlan *plan = g_value_get_pointer (value);

      GST_OBJECT_LOCK (self);
      g_clear_pointer (&self->plan_object, nnp_plan_free);
      self->plan_object = plan ? nnp_plan_copy (plan) : NULL;
      GST_OBJECT_UNLOCK (self);
      break;
    }
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      return;
  }
  /* every writable property selects the stage: drop the cached ones */
  GST_OBJECT_LOCK (self);
  self->props_gen++;
  GST_OBJECT_UNLOCK (self);
}

static void
gst_nn_stage_get_property (GObject * object, guint prop_id, GValue * value,
    GParamSpec * pspec)
{
  GstNnStage *self = GST_NN_STAGE (object);

  GST_OBJECT_LOCK (self);
  switch (prop_id) {
    case PROP_MODEL:
      g_value_set_string (value, self->model_path);
      break;
    case PROP_DEVICE:
      g_value_set_string (value, self->device);
      break;
    case PROP_THREADS:
      g_value_set_int (value, self->threads);
      break;
    case PROP_CPUS:
      g_value_set_string (value, self->cpus);
      break;
    case PROP_PLAN:
      g_value_set_string (value, self->plan_path);
      break;
    case PROP_TRACE:
      g_value_set_string (value, self->trace_path);
      break;
    case PROP_STAGE:
      g_value_set_int (value, self->stage_index);
      break;
    case PROP_NODES:
      g_value_set_string (value, self->nodes);
      break;
    case PROP_BUSY_TIME:
      /* with the run in progress, if any */
      g_value_set_uint64 (value, self->busy_ns + (self->run_start ?
              (guint64) (g_get_monotonic_time () - self->run_start) *
              GST_USECOND : 0));
      break;
    case PROP_FRAMES:
      g_value_set_uint64 (value, self->frames);
      break;
    case PROP_STAGES_BUILT:
      g_value_set_uint (value, self->stages_built);
      break;
    case PROP_DEVICE_INDEX:
      g_value_set_int (value, self->device_index);
      break;
    case PROP_DEVICE_NAME:
      g_value_set_string (value, self->device_name);
      break;
    case PROP_FALLBACK:
      g_value_set_boolean (value, self->fallback);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
  GST_OBJECT_UNLOCK (self);
}

static void
gst_nn_stage_finalize (GObject * object)
{
  GstNnStage *self = GST_NN_STAGE (object);

  stage_cache_clear (self);
  g_ptr_array_unref (self->stage_cache);
  gst_caps_replace (&self->refused_caps, NULL);
  g_clear_pointer (&self->spec_graph, nnp_graph_unref);
  g_clear_pointer (&self->spec_plan, nnp_plan_free);
  g_clear_error (&self->spec_error);
  g_clear_pointer (&self->model, nnp_model_unref);
  g_clear_pointer (&self->plan, nnp_plan_free);
  g_clear_pointer (&self->plan_object, nnp_plan_free);
  g_hash_table_unref (self->graphs);
  g_ptr_array_unref (self->recent_keys);
  g_array_unref (self->part_cpus);
  g_free (self->part_name);
  g_free (self->model_name);
  g_free (self->model_path);
  g_free (self->plan_path);
  g_free (self->trace_path);
  g_free (self->nodes);
  g_free (self->cpus);
  g_free (self->device_name);
  g_free (self->device);
  g_free (self->dev_spec);
  g_clear_pointer (&self->cl_device, nnp_device_unref);
  g_mutex_clear (&self->lock);

  G_OBJECT_CLASS (gst_nn_stage_parent_class)->finalize (object);
}

/* A device shared by the application or another element. */
static void
gst_nn_stage_set_context (GstElement * element, GstContext * context)
{
  GstNnStage *self = GST_NN_STAGE (element);
  gchar *spec;

  GST_OBJECT_LOCK (self);
  spec = self->dev_spec ? g_strdup (self->dev_spec) :
      gst_nn_stage_device_spec_locked (self, NULL, NULL);
  GST_OBJECT_UNLOCK (self);
  if (spec && gst_nn_stage_spec_is_opencl (spec))
    gst_nn_cl_handle_set_context (element, context, spec, &self->cl_device);
  g_free (spec);

  GST_ELEMENT_CLASS (gst_nn_stage_parent_class)->set_context (element,
      context);
}

static void
gst_nn_stage_class_init (GstNnStageClass * klass)
{
  GObjectClass *gobject_class = G_OBJECT_CLASS (klass);
  GstElementClass *element_class = GST_ELEMENT_CLASS (klass);
  GstBaseTransformClass *trans_class = GST_BASE_TRANSFORM_CLASS (klass);

  GST_DEBUG_CATEGORY_INIT (gst_nn_stage_debug, "nnstage", 0,
      "nnpipe model stage");

  gobject_class->set_property = gst_nn_stage_set_property;
  gobject_class->get_property = gst_nn_stage_get_property;
  gobject_class->finalize = gst_nn_stage_finalize;

  /**
   * GstNnStage:model:
   *
   * Path of the ONNX model file.  Loaded when the element starts (READY ->
   * PAUSED), once per process for all elements naming the same file.
   */
  g_object_class_install_property (gobject_class, PROP_MODEL,
      g_param_spec_string ("model", "Model",
          "Path of the ONNX model file (loaded once per process)",
          DEFAULT_MODEL,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_READY));

  /**
   * GstNnStage:device:
   *
   * The device the stage runs on, in the syntax of nnpipeline's devices,
   * `nnpipe split --devices` and plans (nnp_device_spec_parse()): `cpu`,
   * `cpu:THREADS` (the same as #GstNnStage:threads), `opencl` (the first
   * GPU, else the first OpenCL device; #GstNnStage:device-index or
   * #GstNnStage:device-name choose another), `opencl:N` or `opencl:NAME`.
   * A malformed value fails the start with an error naming it.  On
   * OpenCL the stage's tensors live in device memory; its output stays
   * there (caps feature memory:OpenCL) when downstream accepts it, and
   * input in device memory of the same device is used in place.  A stage
   * of a plan runs on the plan's device instead.
   */
  g_object_class_install_property (gobject_class, PROP_DEVICE,
      g_param_spec_string ("device", "Device",
          "The device the stage runs on: cpu, cpu:THREADS, opencl, opencl:N "
          "or opencl:NAME", DEFAULT_DEVICE,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_READY));

  /**
   * GstNnStage:device-index:
   *
   * With device=opencl: the N-th OpenCL device, counting the devices of
   * every platform in platform order (as `clinfo -l` lists them); -1 = the
   * first GPU, else the first device.
   */
  g_object_class_install_property (gobject_class, PROP_DEVICE_INDEX,
      g_param_spec_int ("device-index", "Device index",
          "With device=opencl: index of the OpenCL device (-1 = first GPU, "
          "else first device)", -1, G_MAXINT, DEFAULT_DEVICE_INDEX,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_READY));

  /**
   * GstNnStage:device-name:
   *
   * With device=opencl: the first OpenCL device whose device or platform
   * name contains this (case-insensitive), e.g. "H100" or "portable".
   * Takes precedence over #GstNnStage:device-index.
   */
  g_object_class_install_property (gobject_class, PROP_DEVICE_NAME,
      g_param_spec_string ("device-name", "Device name",
          "With device=opencl: a substring of the OpenCL device or platform "
          "name (overrides device-index)", DEFAULT_DEVICE_NAME,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_READY));

  /**
   * GstNnStage:fallback:
   *
   * When the OpenCL device is missing or cannot run the stage (a program
   * that does not build, an op without kernel): run on the CPU instead and
   * post a warning naming the device and the reason.  When FALSE such a
   * stage fails with an error naming the device.
   */
  g_object_class_install_property (gobject_class, PROP_FALLBACK,
      g_param_spec_boolean ("fallback", "Fallback",
          "Run on the CPU (with a warning) when the OpenCL device is missing "
          "or cannot run the stage", DEFAULT_FALLBACK,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_READY));

  /**
   * GstNnStage:threads:
   *
   * Number of intra-op threads the stage owns.
   */
  g_object_class_install_property (gobject_class, PROP_THREADS,
      g_param_spec_int ("threads", "Threads",
          "Number of intra-op threads the stage owns", 1, MAX_THREADS,
          DEFAULT_THREADS,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_READY));

  /**
   * GstNnStage:cpus:
   *
   * Cores to pin the stage's threads to, e.g. "0,1" or "0-3": thread i runs
   * on the i-th listed core (modulo the list).  Unset: not pinned.
   */
  g_object_class_install_property (gobject_class, PROP_CPUS,
      g_param_spec_string ("cpus", "CPUs",
          "Cores to pin the stage's threads to (e.g. \"0,1\" or \"0-3\"; "
          "unset = not pinned)", DEFAULT_CPUS,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_READY));

  /**
   * GstNnStage:plan:
   *
   * Path of a plan file (JSON, made by `nnpipe split` or nnpipeline): the
   * element runs stage #GstNnStage:stage of it, on the plan's device,
   * threads and cores.  Its sink caps are the stage's input tensors and its
   * src caps its outputs, in the plan's order; stage 0 takes the model's
   * inputs.  The model is the #GstNnStage:model property or else the
   * plan's.
   */
  g_object_class_install_property (gobject_class, PROP_PLAN,
      g_param_spec_string ("plan", "Plan",
          "Path of a plan file (JSON): run one stage of it (see 'stage')",
          DEFAULT_PLAN,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_READY));

  /**
   * GstNnStage:trace:
   *
   * Record when this stage ran which frame into a Chrome trace-event JSON
   * file (opens in Perfetto and chrome://tracing; `nnpipe timeline FILE`
   * draws it).  Stages given the same file share it; the file is written
   * when the last of them stops.  Unset: the environment variable
   * NNP_TRACE, if set, names the file.  See docs/pipeline.md.
   */
  g_object_class_install_property (gobject_class, PROP_TRACE,
      g_param_spec_string ("trace", "Trace",
          "Write a Chrome trace-event JSON file of the stage's runs (default: $NNP_TRACE)",
          DEFAULT_TRACE,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_READY));

  /**
   * GstNnStage:stage:
   *
   * Index of the plan's stage to run (with #GstNnStage:plan).
   */
  g_object_class_install_property (gobject_class, PROP_STAGE,
      g_param_spec_int ("stage", "Stage",
          "Index of the plan's stage to run (with 'plan')", 0, G_MAXINT,
          DEFAULT_STAGE,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_READY));

  /**
   * GstNnStage:nodes:
   *
   * Run only these nodes of the specialised graph: comma-separated node
   * names, or "first..last" (names or topological indices, inclusive).
   * The nodes must form a convex set.  The nodes before it (in
   * topological order, and its ancestors) are taken to run upstream, the
   * rest downstream: the input tensors are what crosses from before, the
   * output tensors what crosses to after, in the plan order of
   * include/nnpipe/plan.h, so chains of ranges fit together.
   */
  g_object_class_install_property (gobject_class, PROP_NODES,
      g_param_spec_string ("nodes", "Nodes",
          "Run only these nodes: \"name,name,...\" or \"first..last\" "
          "(names or topological indices of the specialised graph)",
          DEFAULT_NODES,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_READY));

  /**
   * GstNnStage:plan-object:
   *
   * A plan (an NnpPlan pointer, copied) instead of a plan file: nnpipeline
   * hands its plan to its stages this way.
   */
  g_object_class_install_property (gobject_class, PROP_PLAN_OBJECT,
      g_param_spec_pointer ("plan-object", "Plan object",
          "An NnpPlan (copied) instead of a plan file (used by nnpipeline)",
          G_PARAM_WRITABLE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_READY));

  /**
   * GstNnStage:busy-time:
   *
   * Nanoseconds spent running the model since the element started,
   * including the run in progress.
   */
  g_object_class_install_property (gobject_class, PROP_BUSY_TIME,
      g_param_spec_uint64 ("busy-time", "Busy time",
          "Nanoseconds spent running the model since start", 0, G_MAXUINT64,
          0, G_PARAM_READABLE | G_PARAM_STATIC_STRINGS));

  /**
   * GstNnStage:frames:
   *
   * Buffers processed since the element started.
   */
  g_object_class_install_property (gobject_class, PROP_FRAMES,
      g_param_spec_uint64 ("frames", "Frames",
          "Buffers processed since start", 0, G_MAXUINT64, 0,
          G_PARAM_READABLE | G_PARAM_STATIC_STRINGS));

  /**
   * GstNnStage:stages-built:
   *
   * Stages prepared (model specialised, kernels and weights packed) since
   * the element last started: one per distinct input shape while those
   * stay among the last 4 negotiated (a debugging aid).
   */
  g_object_class_install_property (gobject_class, PROP_STAGES_BUILT,
      g_param_spec_uint ("stages-built", "Stages built",
          "Stages prepared since the element last started", 0, G_MAXUINT, 0,
          G_PARAM_READABLE | G_PARAM_STATIC_STRINGS));

  gst_element_class_add_static_pad_template (element_class, &sink_template);
  gst_element_class_add_static_pad_template (element_class, &src_template);
  gst_element_class_set_static_metadata (element_class,
      "Neural network stage", "Filter/Tensor",
      "Runs an ONNX model (or a stage of one) on tensor buffers with libnnpipe",
      "nnpipe developers");

  element_class->set_context = GST_DEBUG_FUNCPTR (gst_nn_stage_set_context);

  trans_class->start = GST_DEBUG_FUNCPTR (gst_nn_stage_start);
  trans_class->stop = GST_DEBUG_FUNCPTR (gst_nn_stage_stop);
  trans_class->transform_caps = GST_DEBUG_FUNCPTR (gst_nn_stage_transform_caps);
  trans_class->fixate_caps = GST_DEBUG_FUNCPTR (gst_nn_stage_fixate_caps);
  trans_class->get_unit_size = GST_DEBUG_FUNCPTR (gst_nn_stage_get_unit_size);
  trans_class->accept_caps = GST_DEBUG_FUNCPTR (gst_nn_stage_accept_caps);
  trans_class->sink_event = GST_DEBUG_FUNCPTR (gst_nn_stage_sink_event);
  trans_class->set_caps = GST_DEBUG_FUNCPTR (gst_nn_stage_set_caps);
  trans_class->decide_allocation =
      GST_DEBUG_FUNCPTR (gst_nn_stage_decide_allocation);
  trans_class->transform = GST_DEBUG_FUNCPTR (gst_nn_stage_transform);
  trans_class->query = GST_DEBUG_FUNCPTR (gst_nn_stage_query);
  trans_class->passthrough_on_same_caps = FALSE;
}

static void
gst_nn_stage_init (GstNnStage * self)
{
  g_mutex_init (&self->lock);
  self->model_path = g_strdup (DEFAULT_MODEL);
  self->device = g_strdup (DEFAULT_DEVICE);
  self->threads = DEFAULT_THREADS;
  self->cpus = g_strdup (DEFAULT_CPUS);
  self->plan_path = g_strdup (DEFAULT_PLAN);
  self->stage_index = DEFAULT_STAGE;
  self->nodes = g_strdup (DEFAULT_NODES);
  self->device_index = DEFAULT_DEVICE_INDEX;
  self->device_name = g_strdup (DEFAULT_DEVICE_NAME);
  self->fallback = DEFAULT_FALLBACK;
  self->graphs = g_hash_table_new_full (g_str_hash, g_str_equal, g_free,
      (GDestroyNotify) nnp_graph_unref);
  self->recent_keys = g_ptr_array_new_with_free_func (g_free);
  self->stage_cache = g_ptr_array_new_with_free_func (cached_stage_free);
  self->part_cpus = g_array_new (FALSE, FALSE, sizeof (gint));
  gst_nn_tensors_info_init (&self->in_info);
  gst_nn_tensors_info_init (&self->out_info);
}
