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
 * #GstNnStage:shape-cache (4) distinct input shapes are kept prepared (each
 * with its own arena) and reused when those shapes come back
 * (#GstNnStage:stages-built counts the stages built).  The element is
 * thin: caps -> model input shapes -> NnpPart (include/nnpipe/part.h:
 * the part of the model it runs, specialised and prepared per shape set)
 * -> NnpStage, and a buffer is mapped and run.  Caps queries offer
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
#include "gstnnclmemory.h"
#include "gstnnmodelcaps.h"
#include "gstnnrunstats.h"
#include "gstnntensorcaps.h"
#include "gstnntensormap.h"

#include <nnpipe/model.h>
#include <nnpipe/part.h>
#include <nnpipe/plan.h>
#include <nnpipe/stage.h>

#include <stdlib.h>
#include <string.h>

/* The element: properties, start/stop, the per-buffer path and queries.
 * What part of the model runs, where and at which shapes, is an NnpPart of
 * libnnpipe, made in one call (nnp_part_open(), which also chooses the
 * device and applies the CPU fallback); negotiation (caps -> shapes ->
 * part -> stage) is gstnnstagecaps.c, caps <-> model inputs the shared
 * gstnnmodelcaps.c, properties -> device spec and part and the
 * memory:OpenCL features gstnnstagedevice.c.  The instance struct is in
 * gstnnstage-private.h. */

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
#define DEFAULT_SHAPE_CACHE NNP_PART_DEFAULT_CACHE_SIZE

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
  PROP_SHAPE_CACHE,
  PROP_DEBUG_SLOWDOWN,
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

/* debug-slowdown: after a run that began at t0, busy-wait FACTOR times its
 * length, inside the busy time (a slowed core, deterministic whatever the
 * machine's load: nnpipeline's re-balancing test). */
static void
gst_nn_stage_debug_slowdown (GstNnStage * self, gint64 t0)
{
  gdouble factor;
  gint64 now, until;

  GST_OBJECT_LOCK (self);
  factor = self->debug_slowdown;
  GST_OBJECT_UNLOCK (self);
  if (factor <= 0.0)
    return;
  now = g_get_monotonic_time ();
  until = now + (gint64) ((now - t0) * factor);
  while (g_get_monotonic_time () < until);
}
GST_ELEMENT_REGISTER_DEFINE (nnstage, "nnstage", GST_RANK_NONE,
    GST_TYPE_NN_STAGE);

/* Device memory is used in place, the rest mapped and wrapped: one call
 * per side, then one run. */
static GstFlowReturn
gst_nn_stage_transform (GstBaseTransform * trans, GstBuffer * inbuf,
    GstBuffer * outbuf)
{
  GstNnStage *self = GST_NN_STAGE (trans);
  GstNnTensorsMap in_map, out_map;
  GError *err = NULL;
  gboolean ok;
  gint64 t0, t1;

  if (G_UNLIKELY (self->stage == NULL))
    goto not_negotiated;
  if (!gst_nn_tensors_map_stage (&in_map, inbuf, &self->in_info, self->stage,
          FALSE, self->stage_on_cl, GST_MAP_READ, &err))
    goto bad_input;
  if (!gst_nn_tensors_map_stage (&out_map, outbuf, &self->out_info,
          self->stage, TRUE, self->stage_on_cl, GST_MAP_WRITE, &err)) {
    gst_nn_tensors_unmap (&in_map);
    goto bad_output;
  }

  t0 = gst_nn_run_stats_begin (&self->stats);
  ok = nnp_stage_run (self->stage, in_map.tensors, out_map.tensors, &err);
  gst_nn_stage_debug_slowdown (self, t0);
  t1 = g_get_monotonic_time ();
  gst_nn_run_stats_end (&self->stats, GST_ELEMENT (self), t0, t1, ok);
  GST_LOG_OBJECT (self, "ran %" GST_TIME_FORMAT " in %.2f ms (%u tensors in "
      "device memory)", GST_TIME_ARGS (GST_BUFFER_PTS (inbuf)),
      (t1 - t0) / 1000.0, in_map.n_device + out_map.n_device);
  gst_nn_tensors_unmap (&out_map);
  gst_nn_tensors_unmap (&in_map);
  if (!ok)
    goto run_failed;
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
    GST_ELEMENT_ERROR (self, STREAM, FORMAT,
        ("model %s: invalid input buffer", self->model_name),
        ("%s", err->message));
    g_clear_error (&err);
    return GST_FLOW_ERROR;
  }
bad_output:
  {
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
      && gst_nn_stage_answer_shapes_query (self, query))
    return TRUE;

  ret = GST_BASE_TRANSFORM_CLASS (gst_nn_stage_parent_class)->query (trans,
      direction, query);

  if (ret && direction == GST_PAD_SRC
      && GST_QUERY_TYPE (query) == GST_QUERY_LATENCY)
    gst_nn_run_stats_add_latency (&self->stats, GST_OBJECT (self), query);
  return ret;
}

/* The properties are checked first (a bad value fails naming it), then
 * the library makes the part and chooses its device (falling back to the
 * CPU when told to: the element posts the library's reason), and an
 * OpenCL device is shared with the neighbours through GstContext. */
static gboolean
gst_nn_stage_start (GstBaseTransform * trans)
{
  GstNnStage *self = GST_NN_STAGE (trans);
  NnpPart *part = NULL;
  NnpModel *model;
  gchar *cpus_str, *spec, *trace, *track;
  gboolean ok;
  gint threads, stage_index, spec_threads = 0, *cpus = NULL, n_cpus = 0;
  GError *err = NULL, *why = NULL;

  GST_OBJECT_LOCK (self);
  spec = gst_nn_stage_device_spec_locked (self, &spec_threads, &err);
  threads = self->threads;
  cpus_str = g_strdup (self->cpus);
  self->stages_built = 0;
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

  part = gst_nn_stage_open_part (self, NULL, &why, &err);
  if (part == NULL)
    goto open_failed;
  if (why) {
    GST_ELEMENT_WARNING (self, RESOURCE, NOT_FOUND, ("%s", why->message),
        ("fallback=true"));
    g_clear_error (&why);
  }

  model = nnp_part_get_model (part);
  g_mutex_lock (&self->lock);
  gst_nn_stage_forget_part_locked (self);
  self->part = part;
  self->model = nnp_model_ref (model);
  self->model_name = g_path_get_basename (nnp_model_get_name (model));
  self->part_name = g_strdup (nnp_part_get_name (part));
  g_mutex_unlock (&self->lock);

  /* set_context (answering our NEED_CONTEXT) reads dev_spec */
  g_free (self->dev_spec);
  self->dev_spec = g_strdup (nnp_part_get_device (part));
  self->use_cl = gst_nn_stage_spec_is_opencl (self->dev_spec);
  if (!self->use_cl)
    g_clear_pointer (&self->cl_device, nnp_device_unref);
  else if (!gst_nn_cl_ensure_element_device (GST_ELEMENT (self),
          self->dev_spec, &self->cl_device, &err))
    goto no_device;

  GST_INFO_OBJECT (self, "model %s loaded (digest %s), %s on %s",
      nnp_model_get_name (model), nnp_model_get_digest (model),
      self->part_name, self->dev_spec);
  GST_OBJECT_LOCK (self);
  trace = g_strdup (self->trace_path);
  track = g_strdup_printf ("%s (%s)", GST_OBJECT_NAME (self), self->dev_spec);
  stage_index = self->stage_index;
  GST_OBJECT_UNLOCK (self);
  ok = gst_nn_run_stats_open_trace (&self->stats, trace, track, stage_index,
      &err);
  g_free (trace);
  g_free (track);
  if (!ok)
    goto trace_failed;
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
open_failed:
  {
    /* the library's message names the file, device or setting */
    if (g_error_matches (err, NNP_ERROR, NNP_ERROR_IO))
      GST_ELEMENT_ERROR (self, RESOURCE, OPEN_READ, ("%s", err->message),
          (NULL));
    else if (g_error_matches (err, NNP_ERROR, NNP_ERROR_DEVICE))
      GST_ELEMENT_ERROR (self, RESOURCE, NOT_FOUND, ("%s", err->message),
          ("set fallback=true to run on the CPU instead"));
    else if (g_error_matches (err, NNP_ERROR, NNP_ERROR_PLAN))
      GST_ELEMENT_ERROR (self, RESOURCE, SETTINGS, ("%s", err->message),
          ("properties 'model', 'plan', 'stage', 'nodes'"));
    else
      GST_ELEMENT_ERROR (self, STREAM, DECODE, ("%s", err->message), (NULL));
    g_clear_error (&err);
    return FALSE;
  }
no_device:
  {
    GST_ELEMENT_ERROR (self, RESOURCE, NOT_FOUND,
        ("device '%s' is not available: %s", self->dev_spec, err->message),
        (NULL));
    goto fail;
  }
trace_failed:
  {
    GST_ELEMENT_ERROR (self, RESOURCE, OPEN_WRITE, ("%s", err->message),
        ("property 'trace' or NNP_TRACE"));
    goto fail;
  }
fail:
  {
    g_clear_error (&err);
    g_mutex_lock (&self->lock);
    gst_nn_stage_forget_part_locked (self);  /* the element stays in READY */
    g_mutex_unlock (&self->lock);
    return FALSE;
  }
}

/* Forget all stream state. */
static gboolean
gst_nn_stage_stop (GstBaseTransform * trans)
{
  GstNnStage *self = GST_NN_STAGE (trans);
  GError *err = NULL;

  if (!gst_nn_run_stats_reset (&self->stats, GST_OBJECT (self), &err)) {
    GST_ELEMENT_ERROR (self, RESOURCE, WRITE, ("%s", err->message), (NULL));
    g_clear_error (&err);
  }
  self->stage = NULL;
  g_clear_pointer (&self->spec, nnp_part_spec_unref);
  gst_nn_tensors_info_init (&self->in_info);
  gst_nn_tensors_info_init (&self->out_info);
  gst_caps_replace (&self->refused_caps, NULL);
  self->stage_on_cl = self->out_device = self->use_cl = FALSE;
  g_clear_pointer (&self->dev_spec, g_free);
  g_clear_pointer (&self->cl_device, nnp_device_unref);

  g_mutex_lock (&self->lock);
  gst_nn_stage_forget_part_locked (self);
  g_mutex_unlock (&self->lock);
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
    case PROP_SHAPE_CACHE:
      /* resizes the running part's cache: its stages stay */
      GST_OBJECT_LOCK (self);
      self->shape_cache = g_value_get_int (value);
      GST_OBJECT_UNLOCK (self);
      g_mutex_lock (&self->lock);
      if (self->part)
        nnp_part_set_cache_size (self->part, g_value_get_int (value));
      g_mutex_unlock (&self->lock);
      return;
    case PROP_DEBUG_SLOWDOWN:
      /* changes no part: takes effect with the next frame */
      GST_OBJECT_LOCK (self);
      self->debug_slowdown = g_value_get_double (value);
      GST_OBJECT_UNLOCK (self);
      return;
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
  /* every other writable property selects the part: a new one */
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
      g_value_set_uint64 (value, gst_nn_run_stats_busy_ns (&self->stats));
      break;
    case PROP_FRAMES:
      g_value_set_uint64 (value, gst_nn_run_stats_frames (&self->stats));
      break;
    case PROP_STAGES_BUILT:
      g_value_set_uint (value, self->stages_built);
      break;
    case PROP_DEBUG_SLOWDOWN:
      g_value_set_double (value, self->debug_slowdown);
      break;
    case PROP_SHAPE_CACHE:
      g_value_set_int (value, self->shape_cache);
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

  g_clear_pointer (&self->spec, nnp_part_spec_unref);
  gst_caps_replace (&self->refused_caps, NULL);
  gst_nn_stage_forget_part_locked (self);
  g_clear_pointer (&self->plan_object, nnp_plan_free);
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
  gst_nn_run_stats_clear (&self->stats);

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
   * stay among the last #GstNnStage:shape-cache negotiated (a debugging aid).
   */
  g_object_class_install_property (gobject_class, PROP_STAGES_BUILT,
      g_param_spec_uint ("stages-built", "Stages built",
          "Stages prepared since the element last started", 0, G_MAXUINT, 0,
          G_PARAM_READABLE | G_PARAM_STATIC_STRINGS));

  /**
   * GstNnStage:shape-cache:
   *
   * How many input shape sets keep their specialised model and prepared
   * stage (least recently used dropped first; each stage has its own
   * arena).  A dynamic model whose sizes change every buffer (a text
   * recogniser after nncrop) rebuilds no stage while its sizes stay among
   * the last shape-cache ones.  May be changed while running.
   */
  g_object_class_install_property (gobject_class, PROP_SHAPE_CACHE,
      g_param_spec_int ("shape-cache", "Shape cache",
          "Input shape sets whose prepared stages are kept (LRU)", 1, 256,
          DEFAULT_SHAPE_CACHE,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_PLAYING));

  /**
   * GstNnStage:debug-slowdown:
   *
   * For tests and benchmarks: after each run, busy-wait this many times
   * the run's length (0 = none), counted in busy-time: the stage behaves
   * as if its core were FACTOR + 1 times slower.  May be changed while
   * running.
   */
  g_object_class_install_property (gobject_class, PROP_DEBUG_SLOWDOWN,
      g_param_spec_double ("debug-slowdown", "Debug slowdown",
          "Busy-wait FACTOR x each run's time after it (testing)", 0.0, 100.0,
          0.0, G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_PLAYING));

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
  self->shape_cache = DEFAULT_SHAPE_CACHE;
  gst_nn_run_stats_init (&self->stats);
  gst_nn_tensors_info_init (&self->in_info);
  gst_nn_tensors_info_init (&self->out_info);
}
