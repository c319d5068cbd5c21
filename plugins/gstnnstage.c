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
 * negotiated, and a caps change builds a new stage.  Input caps that do not
 * fit the model fail negotiation with an error naming what the model
 * expects and what it got.
 *
 * The model file is loaded once per process (#GstNnStage:model) and shared
 * by every nnstage that names it.  #GstNnStage:threads sets the stage's
 * intra-op threads and #GstNnStage:cpus pins them to cores.  Timestamps
 * and metas pass through; LATENCY queries add the measured processing time
 * (median of the last buffers).
 *
 * ## Example launch lines
 * |[
 * gst-launch-1.0 filesrc location=input.f32 blocksize=110592 ! \
 *     other/tensors,format=static,num_tensors=1,types=float32,dimensions=192:48:3:1,framerate=0/1 ! \
 *     nnstage model=ch_ppocr_mobile_v2.0_cls_infer.onnx ! filesink location=output.f32
 * ]| runs the text direction classifier on a raw 1x3x48x192 float32 tensor
 * (110592 bytes) read from a file and writes its 1x2 output (see
 * pipelines/stage.sh).
 * |[
 * gst-launch-1.0 videotestsrc num-buffers=10 ! video/x-raw,width=640,height=480 ! \
 *     nnconvert mean=0.485,0.456,0.406 std=0.229,0.224,0.225 multiple-of=32 ! \
 *     nnstage model=ch_PP-OCRv4_det_infer.onnx threads=2 cpus=0,1 ! fakesink
 * ]| runs the text detector at the frame's size on two threads pinned to
 * cores 0 and 1.
 */

#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "gstnnstage.h"
#include "gstnntensorcaps.h"
#include "gstnntensorpool.h"

#include <nnpipe/model.h>
#include <nnpipe/stage.h>

#include <stdlib.h>
#include <string.h>

GST_DEBUG_CATEGORY_STATIC (gst_nn_stage_debug);
#define GST_CAT_DEFAULT gst_nn_stage_debug

#define DEFAULT_MODEL NULL
#define DEFAULT_DEVICE GST_NN_STAGE_DEVICE_CPU
#define DEFAULT_THREADS 1
#define DEFAULT_CPUS NULL

#define MAX_THREADS 256
#define MAX_CPUS 1024
/* processing-time samples kept for the LATENCY query */
#define LATENCY_WINDOW 16

enum
{
  PROP_0,
  PROP_MODEL,
  PROP_DEVICE,
  PROP_THREADS,
  PROP_CPUS,
  /* the split issue adds the part of the model to run (nodes) here */
};

static GstStaticPadTemplate sink_template = GST_STATIC_PAD_TEMPLATE ("sink",
    GST_PAD_SINK,
    GST_PAD_ALWAYS,
    GST_STATIC_CAPS (GST_NN_TENSORS_CAPS_TEMPLATE_ANY));

static GstStaticPadTemplate src_template = GST_STATIC_PAD_TEMPLATE ("src",
    GST_PAD_SRC,
    GST_PAD_ALWAYS,
    GST_STATIC_CAPS (GST_NN_TENSORS_CAPS_TEMPLATE));

struct _GstNnStage
{
  GstBaseTransform parent;

  /* properties (object lock) */
  gchar *model_path;
  GstNnStageDevice device;
  gint threads;
  gchar *cpus;

  /* the model and the shape-inference cache: transform_caps runs on any
   * thread (lock) */
  GMutex lock;
  NnpModel *model;              /* owned ref, between start() and stop() */
  gchar *model_name;            /* file name, for messages */
  gboolean spec_valid;
  GstNnTensorsInfo spec_in;     /* the inputs the cached result is for */
  NnpGraph *spec_graph;         /* owned ref, or NULL when spec_error */
  GError *spec_error;

  /* negotiated state (streaming thread) */
  GstNnTensorsInfo in_info, out_info;
  NnpStage *stage;

  /* measured processing time (object lock) */
  GstClockTime run_times[LATENCY_WINDOW];
  guint n_run_times, run_time_pos;
  GstClockTime reported_latency;
};

G_DEFINE_TYPE (GstNnStage, gst_nn_stage, GST_TYPE_BASE_TRANSFORM);
GST_ELEMENT_REGISTER_DEFINE (nnstage, "nnstage", GST_RANK_NONE,
    GST_TYPE_NN_STAGE);

GType
gst_nn_stage_device_get_type (void)
{
  static GType type = 0;
  static const GEnumValue values[] = {
    {GST_NN_STAGE_DEVICE_CPU, "CPU (libnnpipe's kernels)", "cpu"},
    {0, NULL, NULL}
  };

  if (g_once_init_enter (&type)) {
    GType t = g_enum_register_static ("GstNnStageDevice", values);
    g_once_init_leave (&type, t);
  }
  return type;
}

static const gchar *
device_name (GstNnStageDevice device)
{
  switch (device) {
    case GST_NN_STAGE_DEVICE_CPU:
    default:
      return "cpu";
  }
}

/* Parse "0,1,4-7" into a list of core numbers; NULL or "" gives none. */
static gboolean
parse_cpus (const gchar * str, GArray * out)
{
  gchar **parts;
  gboolean ok = TRUE;

  if (str == NULL)
    return TRUE;
  parts = g_strsplit (str, ",", -1);
  for (gint i = 0; parts[i] != NULL && ok; i++) {
    gchar *p = g_strstrip (parts[i]), *end = NULL;
    gint64 lo, hi;

    if (*p == '\0')
      continue;
    lo = g_ascii_strtoll (p, &end, 10);
    if (end == p || lo < 0 || lo >= MAX_CPUS) {
      ok = FALSE;
      break;
    }
    hi = lo;
    if (*end == '-') {
      gchar *start = end + 1;

      hi = g_ascii_strtoll (start, &end, 10);
      if (end == start || hi < lo || hi >= MAX_CPUS) {
        ok = FALSE;
        break;
      }
    }
    if (*end != '\0') {
      ok = FALSE;
      break;
    }
    for (gint64 c = lo; c <= hi && out->len < MAX_CPUS; c++) {
      gint v = (gint) c;

      g_array_append_val (out, v);
    }
  }
  g_strfreev (parts);
  return ok;
}

/* ------------------------------------------------------------------------ */
/* Shape inference: caps <-> model inputs and outputs */

/* The model's real inputs (graph inputs without a constant), in order. */
static guint
model_inputs (NnpGraph * graph, const NnpValue ** inputs)
{
  guint n = 0;

  for (guint i = 0; i < graph->inputs->len; i++) {
    const NnpValue *v =
        nnp_graph_value (graph, g_array_index (graph->inputs, int, i));

    if (v == NULL || v->constant != NULL)
      continue;
    if (n < GST_NN_TENSORS_MAX)
      inputs[n] = v;
    n++;
  }
  return n;
}

/* "float32 1x3x?x? (dimensions=?:?:3:1)" for a graph value. */
static gchar *
describe_value (const NnpValue * v)
{
  gchar *onnx = nnp_shape_to_string (&v->shape);
  gchar *caps = gst_nn_dims_to_string (&v->shape);
  gchar *ret;

  if (v->shape.rank < 0)
    ret = g_strdup_printf ("%s of any shape", nnp_dtype_name (v->dtype));
  else
    ret = g_strdup_printf ("%d dims %s %s (dimensions=%s)", v->shape.rank,
        nnp_dtype_name (v->dtype), onnx, caps);
  g_free (onnx);
  g_free (caps);
  return ret;
}

/* Match caps tensors to the model's inputs (in order) and fill shapes[]. */
static gboolean
match_inputs (const gchar * model_name, NnpGraph * graph,
    const GstNnTensorsInfo * info, NnpInputShape * shapes, GError ** error)
{
  const NnpValue *inputs[GST_NN_TENSORS_MAX];
  guint n = model_inputs (graph, inputs);

  if (n != info->n_tensors) {
    GString *names = g_string_new (NULL);

    for (guint i = 0; i < MIN (n, GST_NN_TENSORS_MAX); i++)
      g_string_append_printf (names, "%s'%s'", i ? ", " : "", inputs[i]->name);
    g_set_error (error, NNP_ERROR, NNP_ERROR_INVALID,
        "model %s: expects %u input tensors (%s), got num_tensors=%u",
        model_name, n, names->str, info->n_tensors);
    g_string_free (names, TRUE);
    return FALSE;
  }

  for (guint i = 0; i < n; i++) {
    const NnpValue *v = inputs[i];
    const GstNnTensorInfo *t = &info->tensors[i];
    NnpShape shape;
    gboolean ok = TRUE;

    if (v->dtype != NNP_DTYPE_UNDEFINED && v->dtype != t->dtype)
      ok = FALSE;
    if (ok && v->shape.rank >= 0) {
      if (!gst_nn_shape_fit_rank (&t->shape, v->shape.rank, &shape)) {
        ok = FALSE;
      } else {
        for (gint d = 0; d < v->shape.rank; d++)
          if (v->shape.dims[d] >= 0 && v->shape.dims[d] != shape.dims[d])
            ok = FALSE;
      }
    } else {
      shape = t->shape;
    }

    if (!ok) {
      gchar *want = describe_value (v);
      gchar *got = gst_nn_dims_to_string (&t->shape);

      g_set_error (error, NNP_ERROR, NNP_ERROR_INVALID,
          "model %s: input '%s' expects %s, got dimensions=%s types=%s",
          model_name, v->name, want, got, nnp_dtype_name (t->dtype));
      g_free (want);
      g_free (got);
      return FALSE;
    }
    shapes[i].name = v->name;
    shapes[i].shape = shape;
  }
  return TRUE;
}

/* Output tensors of a specialised graph. */
static gboolean
outputs_info (const gchar * model_name, NnpGraph * graph,
    GstNnTensorsInfo * out, GError ** error)
{
  gst_nn_tensors_info_init (out);
  if (graph->outputs->len < 1 || graph->outputs->len > GST_NN_TENSORS_MAX) {
    g_set_error (error, NNP_ERROR, NNP_ERROR_UNSUPPORTED,
        "model %s: has %u outputs, other/tensors carries 1 to %d", model_name,
        graph->outputs->len, GST_NN_TENSORS_MAX);
    return FALSE;
  }
  out->n_tensors = graph->outputs->len;
  for (guint i = 0; i < out->n_tensors; i++) {
    const NnpValue *v =
        nnp_graph_value (graph, g_array_index (graph->outputs, int, i));

    if (!nnp_shape_is_static (&v->shape) || nnp_dtype_size (v->dtype) == 0) {
      g_set_error (error, NNP_ERROR, NNP_ERROR_INVALID,
          "model %s: output '%s' has no static shape and type after "
          "shape inference", model_name, v->name);
      return FALSE;
    }
    for (gint d = 0; d < v->shape.rank; d++) {
      if (v->shape.dims[d] <= 0) {
        gchar *s = nnp_shape_to_string (&v->shape);

        g_set_error (error, NNP_ERROR, NNP_ERROR_UNSUPPORTED,
            "model %s: output '%s' has an empty shape %s", model_name,
            v->name, s);
        g_free (s);
        return FALSE;
      }
    }
    out->tensors[i].dtype = v->dtype;
    out->tensors[i].shape = v->shape;
  }
  return TRUE;
}

/* Specialise the model for these inputs (cached: one entry).  Returns a new
 * graph reference or NULL with error.  Call with self->lock held. */
static NnpGraph *
specialize_locked (GstNnStage * self, const GstNnTensorsInfo * info,
    GError ** error)
{
  NnpInputShape shapes[GST_NN_TENSORS_MAX];
  NnpGraph *graph;
  GError *err = NULL;

  if (self->model == NULL) {
    g_set_error (error, NNP_ERROR, NNP_ERROR_FAILED, "no model loaded");
    return NULL;
  }

  if (self->spec_valid && gst_nn_tensors_info_is_equal (&self->spec_in, info)) {
    if (self->spec_graph)
      return nnp_graph_ref (self->spec_graph);
    g_propagate_error (error, g_error_copy (self->spec_error));
    return NULL;
  }

  /* cheap checks first, not cached: upstream may probe several candidates */
  if (!match_inputs (self->model_name, nnp_model_get_graph (self->model),
          info, shapes, error))
    return NULL;

  graph = nnp_model_specialize (self->model, shapes, (int) info->n_tensors,
      NNP_SPECIALIZE_DEFAULT, &err);
  if (graph == NULL && err != NULL) {
    /* name the model and what it got */
    gchar *got = gst_nn_tensors_info_to_string (info);
    gchar *msg = g_strdup_printf ("model %s: shape inference failed for "
        "dimensions=%s: %s", self->model_name, got, err->message);

    g_free (err->message);
    err->message = msg;
    g_free (got);
  }
  if (graph == NULL && err == NULL)
    g_set_error (&err, NNP_ERROR, NNP_ERROR_FAILED,
        "model %s: shape inference failed", self->model_name);

  g_clear_pointer (&self->spec_graph, nnp_graph_unref);
  g_clear_error (&self->spec_error);
  self->spec_in = *info;
  self->spec_valid = TRUE;
  if (graph) {
    self->spec_graph = nnp_graph_ref (graph);
    return graph;
  }
  self->spec_error = g_error_copy (err);
  g_propagate_error (error, err);
  return NULL;
}

/* Output info for input info (NULL graph_out: not wanted). */
static gboolean
gst_nn_stage_infer (GstNnStage * self, const GstNnTensorsInfo * in,
    GstNnTensorsInfo * out, NnpGraph ** graph_out, GError ** error)
{
  NnpGraph *graph;
  gboolean ok;

  g_mutex_lock (&self->lock);
  graph = specialize_locked (self, in, error);
  ok = graph != NULL && outputs_info (self->model_name, graph, out, error);
  g_mutex_unlock (&self->lock);

  if (ok) {
    out->fps_n = in->fps_n;
    out->fps_d = in->fps_d;
  }
  if (ok && graph_out)
    *graph_out = graph;
  else if (graph)
    nnp_graph_unref (graph);
  return ok;
}

/* Caps describing the model's inputs (dims when all are static). */
static GstCaps *
model_input_caps (GstNnStage * self, const GValue * framerate)
{
  const NnpValue *inputs[GST_NN_TENSORS_MAX];
  GstCaps *caps = gst_caps_new_empty ();
  GString *types, *dims;
  gboolean known_types = TRUE, known_dims = TRUE;
  GstStructure *s;
  guint n;

  g_mutex_lock (&self->lock);
  if (self->model == NULL) {
    g_mutex_unlock (&self->lock);
    gst_caps_unref (caps);
    return gst_static_pad_template_get_caps (&sink_template);
  }
  n = model_inputs (nnp_model_get_graph (self->model), inputs);
  if (n < 1 || n > GST_NN_TENSORS_MAX) {
    g_mutex_unlock (&self->lock);
    return caps;
  }

  types = g_string_new (NULL);
  dims = g_string_new (NULL);
  for (guint i = 0; i < n; i++) {
    gchar *d = gst_nn_dims_to_string (&inputs[i]->shape);

    if (inputs[i]->dtype == NNP_DTYPE_UNDEFINED)
      known_types = FALSE;
    if (!nnp_shape_is_static (&inputs[i]->shape))
      known_dims = FALSE;
    g_string_append_printf (types, "%s%s", i ? "," : "",
        nnp_dtype_name (inputs[i]->dtype));
    g_string_append_printf (dims, "%s%s", i ? "," : "", d);
    g_free (d);
  }
  g_mutex_unlock (&self->lock);

  s = gst_structure_new (GST_NN_TENSORS_MEDIA_TYPE,
      "format", G_TYPE_STRING, "static", "num_tensors", G_TYPE_INT, (gint) n,
      NULL);
  if (known_types)
    gst_structure_set (s, "types", G_TYPE_STRING, types->str, NULL);
  if (known_types && known_dims)
    gst_structure_set (s, "dimensions", G_TYPE_STRING, dims->str, NULL);
  if (framerate)
    gst_structure_set_value (s, "framerate", framerate);
  else
    gst_structure_set (s, "framerate", GST_TYPE_FRACTION_RANGE, 0, 1,
        G_MAXINT, 1, NULL);
  gst_caps_append_structure (caps, s);

  /* NNStreamer's single-tensor form */
  if (n == 1) {
    s = gst_structure_new_empty (GST_NN_TENSOR_MEDIA_TYPE);
    if (known_types)
      gst_structure_set (s, "type", G_TYPE_STRING, types->str, NULL);
    if (known_types && known_dims)
      gst_structure_set (s, "dimension", G_TYPE_STRING, dims->str, NULL);
    if (framerate)
      gst_structure_set_value (s, "framerate", framerate);
    else
      gst_structure_set (s, "framerate", GST_TYPE_FRACTION_RANGE, 0, 1,
          G_MAXINT, 1, NULL);
    gst_caps_append_structure (caps, s);
  }
  g_string_free (types, TRUE);
  g_string_free (dims, TRUE);
  return caps;
}

/* Whether tensors fit the model's declared inputs (count, types, ranks,
 * fixed dims), without shape inference. */
static gboolean
inputs_match (GstNnStage * self, const GstNnTensorsInfo * info)
{
  NnpInputShape shapes[GST_NN_TENSORS_MAX];
  gboolean ret;

  g_mutex_lock (&self->lock);
  ret = self->model != NULL && match_inputs (self->model_name,
      nnp_model_get_graph (self->model), info, shapes, NULL);
  g_mutex_unlock (&self->lock);
  return ret;
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
    if (gst_nn_stage_infer (self, &in, &out, NULL, &err)) {
      ret = gst_nn_tensors_info_to_structure (&out);
    } else if (!inputs_match (self, &in)) {
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

/* The structures of caps that are not fixed tensors the model's inputs
 * refuse (count, type, rank or a fixed dim).  New caps. */
static GstCaps *
filter_model_inputs (GstNnStage * self, GstCaps * caps)
{
  GstCaps *ret = gst_caps_new_empty ();

  g_mutex_lock (&self->lock);
  for (guint i = 0; i < gst_caps_get_size (caps); i++) {
    const GstStructure *s = gst_caps_get_structure (caps, i);
    NnpInputShape shapes[GST_NN_TENSORS_MAX];
    GstNnTensorsInfo info;
    GError *err = NULL;

    if (self->model && gst_nn_tensors_info_from_structure (&info, s, NULL)
        && !match_inputs (self->model_name, nnp_model_get_graph (self->model),
            &info, shapes, &err)) {
      GST_DEBUG_OBJECT (self, "dropping %" GST_PTR_FORMAT ": %s", s,
          err->message);
      g_clear_error (&err);
      continue;
    }
    gst_caps_append_structure_full (ret, gst_structure_copy (s),
        gst_caps_features_copy (gst_caps_get_features (caps, i)));
  }
  g_mutex_unlock (&self->lock);
  return ret;
}

static GstCaps *
gst_nn_stage_transform_caps (GstBaseTransform * trans,
    GstPadDirection direction, GstCaps * caps, GstCaps * filter)
{
  GstNnStage *self = GST_NN_STAGE (trans);
  GstCaps *ret;
  gboolean have_model;

  g_mutex_lock (&self->lock);
  have_model = self->model != NULL;
  g_mutex_unlock (&self->lock);

  if (!have_model) {
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

  if (filter) {
    GstCaps *f = filter, *tmp;

    /* upstream offers candidates: drop fixed ones the model cannot take
     * (e.g. 1 channel for a model that wants 3), which the caps above
     * cannot say when the model's sizes are dynamic */
    if (have_model && direction == GST_PAD_SRC)
      f = filter_model_inputs (self, filter);
    tmp = gst_caps_intersect_full (f, ret, GST_CAPS_INTERSECT_FIRST);
    if (f != filter)
      gst_caps_unref (f);
    gst_caps_unref (ret);
    ret = tmp;
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
  GST_DEBUG_OBJECT (trans, "accept caps %" GST_PTR_FORMAT ": %d", caps, ret);
  return ret;
}

/* Post the reason fixed input caps do not fit the model, before the base
 * class refuses them (it only says "not negotiated"). */
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
    ok = gst_nn_tensors_info_from_caps (&in, caps, &err)
        && gst_nn_stage_infer (self, &in, &out, NULL, &err);
    if (!ok) {
      gchar *str = gst_caps_to_string (caps);

      GST_ELEMENT_ERROR (self, CORE, NEGOTIATION, ("%s", err->message),
          ("input caps %s", str));
      g_free (str);
      g_clear_error (&err);
      gst_event_unref (event);
      return FALSE;
    }
  }
  return GST_BASE_TRANSFORM_CLASS (gst_nn_stage_parent_class)->sink_event
      (trans, event);
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
  NnpStage *stage;
  GArray *cpus;
  gchar *cpus_str;
  GError *err = NULL;
  gint64 t0;

  if (!gst_nn_tensors_info_from_caps (&in, incaps, &err)
      || !gst_nn_tensors_info_from_caps (&out, outcaps, &err))
    goto invalid_caps;

  if (self->stage && gst_nn_tensors_info_is_equal (&in, &self->in_info)
      && gst_nn_tensors_info_is_equal (&out, &self->out_info)) {
    GST_DEBUG_OBJECT (self, "same shapes, keeping the stage");
    self->in_info = in;
    self->out_info = out;
    return TRUE;
  }

  if (!gst_nn_stage_infer (self, &in, &want, &graph, &err))
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
  opts.device = device_name (self->device);
  opts.threads = self->threads;
  cpus_str = g_strdup (self->cpus);
  GST_OBJECT_UNLOCK (self);

  cpus = g_array_new (FALSE, FALSE, sizeof (gint));
  parse_cpus (cpus_str, cpus);  /* validated when set */
  g_free (cpus_str);
  opts.cpus = cpus->len ? (const int *) cpus->data : NULL;
  opts.n_cpus = (int) cpus->len;

  t0 = g_get_monotonic_time ();
  stage = nnp_stage_new (graph, NULL, 0, &opts, &err);
  g_array_unref (cpus);
  nnp_graph_unref (graph);
  if (stage == NULL)
    goto no_stage;
  if (!check_stage (self, stage, &in, &out, &err)) {
    nnp_stage_free (stage);
    goto no_stage;
  }

  g_clear_pointer (&self->stage, nnp_stage_free);
  self->stage = stage;
  self->in_info = in;
  self->out_info = out;

  {
    gchar *is = gst_nn_tensors_info_to_string (&in);
    gchar *os = gst_nn_tensors_info_to_string (&out);

    GST_INFO_OBJECT (self, "model %s: stage for %s -> %s on %s, %d threads, "
        "arena %" G_GSIZE_FORMAT " bytes, built in %.1f ms", self->model_name,
        is, os, opts.device, MAX (opts.threads, 1),
        nnp_stage_get_arena_bytes (stage),
        (g_get_monotonic_time () - t0) / 1000.0);
    g_free (is);
    g_free (os);
  }
  return TRUE;

  /* ERRORS */
invalid_caps:
  {
    GST_ELEMENT_ERROR (self, CORE, NEGOTIATION, ("%s", err->message),
        ("input caps %" GST_PTR_FORMAT ", output caps %" GST_PTR_FORMAT,
            incaps, outcaps));
    g_clear_error (&err);
    return FALSE;
  }
no_shapes:
  {
    GST_ELEMENT_ERROR (self, CORE, NEGOTIATION, ("%s", err->message),
        ("input caps %" GST_PTR_FORMAT ", output caps %" GST_PTR_FORMAT,
            incaps, outcaps));
    g_clear_error (&err);
    if (graph)
      nnp_graph_unref (graph);
    return FALSE;
  }
no_stage:
  {
    GST_ELEMENT_ERROR (self, LIBRARY, INIT,
        ("model %s: could not prepare a %s stage", self->model_name,
            opts.device), ("%s", err->message));
    g_clear_error (&err);
    return FALSE;
  }
}

/* Buffers carry one memory per tensor: use our pool, whatever downstream
 * offers. */
static gboolean
gst_nn_stage_decide_allocation (GstBaseTransform * trans, GstQuery * query)
{
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

  return GST_BASE_TRANSFORM_CLASS (gst_nn_stage_parent_class)->decide_allocation
      (trans, query);
}

/* Map the n tensors of a buffer: one memory each, or (from a plain source
 * such as filesrc) one block holding them all back to back. */
typedef struct
{
  GstBuffer *buffer;
  gboolean whole;
  guint n;
  GstMapInfo maps[GST_NN_TENSORS_MAX];
  guint8 *data[GST_NN_TENSORS_MAX];
} TensorsMap;

static gboolean
tensors_map (TensorsMap * tm, GstBuffer * buffer, const GstNnTensorsInfo * info,
    GstMapFlags flags, GError ** error)
{
  guint n = info->n_tensors;
  gsize total = gst_nn_tensors_info_get_size (info);

  memset (tm, 0, sizeof (*tm));
  tm->buffer = buffer;

  if (gst_buffer_n_memory (buffer) == n) {
    for (guint i = 0; i < n; i++) {
      gsize want = gst_nn_tensor_info_get_size (&info->tensors[i]);
      GstMemory *mem = gst_buffer_peek_memory (buffer, i);

      if (gst_memory_get_sizes (mem, NULL, NULL) != want)
        break;
      if (!gst_memory_map (mem, &tm->maps[i], flags)) {
        g_set_error (error, NNP_ERROR, NNP_ERROR_FAILED,
            "could not map tensor %u", i);
        tm->n = i;
        return FALSE;
      }
      tm->data[i] = tm->maps[i].data;
      tm->n = i + 1;
    }
    if (tm->n == n)
      return TRUE;
    /* sizes differ: try as one block */
    for (guint i = 0; i < tm->n; i++)
      gst_memory_unmap (gst_buffer_peek_memory (buffer, i), &tm->maps[i]);
    tm->n = 0;
  }

  if (gst_buffer_get_size (buffer) != total) {
    GString *sizes = g_string_new (NULL);

    for (guint i = 0; i < gst_buffer_n_memory (buffer); i++)
      g_string_append_printf (sizes, "%s%" G_GSIZE_FORMAT, i ? "+" : "",
          gst_memory_get_sizes (gst_buffer_peek_memory (buffer, i), NULL,
              NULL));
    g_set_error (error, NNP_ERROR, NNP_ERROR_INVALID,
        "buffer has %u memories of %s bytes, the caps want %u tensors of "
        "%" G_GSIZE_FORMAT " bytes in all", gst_buffer_n_memory (buffer),
        sizes->str, n, total);
    g_string_free (sizes, TRUE);
    return FALSE;
  }
  if (!gst_buffer_map (buffer, &tm->maps[0], flags)) {
    g_set_error (error, NNP_ERROR, NNP_ERROR_FAILED, "could not map buffer");
    return FALSE;
  }
  tm->whole = TRUE;
  {
    gsize off = 0;

    for (guint i = 0; i < n; i++) {
      tm->data[i] = tm->maps[0].data + off;
      off += gst_nn_tensor_info_get_size (&info->tensors[i]);
    }
  }
  return TRUE;
}

static void
tensors_unmap (TensorsMap * tm)
{
  if (tm->whole) {
    gst_buffer_unmap (tm->buffer, &tm->maps[0]);
  } else {
    for (guint i = 0; i < tm->n; i++)
      gst_memory_unmap (gst_buffer_peek_memory (tm->buffer, i), &tm->maps[i]);
  }
  tm->n = 0;
  tm->whole = FALSE;
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
  TensorsMap in_map, out_map;
  GError *err = NULL;
  gboolean ok;
  gint64 t0, t1;
  guint n_in, n_out;

  if (G_UNLIKELY (self->stage == NULL))
    goto not_negotiated;
  n_in = self->in_info.n_tensors;
  n_out = self->out_info.n_tensors;

  if (!tensors_map (&in_map, inbuf, &self->in_info, GST_MAP_READ, &err))
    goto bad_input;
  if (!tensors_map (&out_map, outbuf, &self->out_info, GST_MAP_WRITE, &err)) {
    tensors_unmap (&in_map);
    goto bad_output;
  }

  /* wrap, no copy: the maps outlive the tensors */
  for (guint i = 0; i < n_in; i++) {
    const NnpValue *v = nnp_stage_get_input (self->stage, (int) i);

    inputs[i] = nnp_tensor_new_wrapped (v->dtype, &v->shape, in_map.data[i],
        NULL, NULL);
  }
  for (guint i = 0; i < n_out; i++) {
    const NnpValue *v = nnp_stage_get_output (self->stage, (int) i);

    outputs[i] = nnp_tensor_new_wrapped (v->dtype, &v->shape, out_map.data[i],
        NULL, NULL);
  }

  t0 = g_get_monotonic_time ();
  ok = nnp_stage_run (self->stage, inputs, outputs, &err);
  t1 = g_get_monotonic_time ();

  for (guint i = 0; i < n_in; i++)
    nnp_tensor_unref (inputs[i]);
  for (guint i = 0; i < n_out; i++)
    nnp_tensor_unref (outputs[i]);
  tensors_unmap (&out_map);
  tensors_unmap (&in_map);

  if (!ok)
    goto run_failed;

  GST_LOG_OBJECT (self, "ran %" GST_TIME_FORMAT " in %.2f ms",
      GST_TIME_ARGS (GST_BUFFER_PTS (inbuf)), (t1 - t0) / 1000.0);
  record_run_time (self, (GstClockTime) (t1 - t0) * GST_USECOND);
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

static gboolean
gst_nn_stage_start (GstBaseTransform * trans)
{
  GstNnStage *self = GST_NN_STAGE (trans);
  NnpModel *model;
  gchar *path;
  GError *err = NULL;

  GST_OBJECT_LOCK (self);
  path = g_strdup (self->model_path);
  GST_OBJECT_UNLOCK (self);

  if (path == NULL || *path == '\0')
    goto no_model;

  model = nnp_model_load (path, &err);
  if (model == NULL)
    goto load_failed;

  g_mutex_lock (&self->lock);
  g_clear_pointer (&self->model, nnp_model_unref);
  g_free (self->model_name);
  self->model = model;
  self->model_name = g_path_get_basename (path);
  self->spec_valid = FALSE;
  g_mutex_unlock (&self->lock);

  GST_INFO_OBJECT (self, "model %s loaded (digest %s)", path,
      nnp_model_get_digest (model));
  g_free (path);
  return TRUE;

  /* ERRORS */
no_model:
  {
    GST_ELEMENT_ERROR (self, RESOURCE, NOT_FOUND,
        ("No model file given"), ("set the 'model' property"));
    g_free (path);
    return FALSE;
  }
load_failed:
  {
    if (g_error_matches (err, NNP_ERROR, NNP_ERROR_IO))
      GST_ELEMENT_ERROR (self, RESOURCE, OPEN_READ,
          ("Could not read model \"%s\"", path), ("%s", err->message));
    else
      GST_ELEMENT_ERROR (self, STREAM, DECODE,
          ("Could not load model \"%s\"", path), ("%s", err->message));
    g_clear_error (&err);
    g_free (path);
    return FALSE;
  }
}

/* Forget all stream state. */
static gboolean
gst_nn_stage_stop (GstBaseTransform * trans)
{
  GstNnStage *self = GST_NN_STAGE (trans);

  g_clear_pointer (&self->stage, nnp_stage_free);
  gst_nn_tensors_info_init (&self->in_info);
  gst_nn_tensors_info_init (&self->out_info);

  g_mutex_lock (&self->lock);
  self->spec_valid = FALSE;
  g_clear_pointer (&self->spec_graph, nnp_graph_unref);
  g_clear_error (&self->spec_error);
  g_clear_pointer (&self->model, nnp_model_unref);
  g_clear_pointer (&self->model_name, g_free);
  g_mutex_unlock (&self->lock);

  GST_OBJECT_LOCK (self);
  self->n_run_times = self->run_time_pos = 0;
  self->reported_latency = 0;
  GST_OBJECT_UNLOCK (self);
  return TRUE;
}

static void
gst_nn_stage_set_property (GObject * object, guint prop_id,
    const GValue * value, GParamSpec * pspec)
{
  GstNnStage *self = GST_NN_STAGE (object);

  switch (prop_id) {
    case PROP_MODEL:
      GST_OBJECT_LOCK (self);
      g_free (self->model_path);
      self->model_path = g_value_dup_string (value);
      GST_OBJECT_UNLOCK (self);
      break;
    case PROP_DEVICE:
      GST_OBJECT_LOCK (self);
      self->device = g_value_get_enum (value);
      GST_OBJECT_UNLOCK (self);
      break;
    case PROP_THREADS:
      GST_OBJECT_LOCK (self);
      self->threads = g_value_get_int (value);
      GST_OBJECT_UNLOCK (self);
      break;
    case PROP_CPUS:{
      const gchar *str = g_value_get_string (value);
      GArray *cpus = g_array_new (FALSE, FALSE, sizeof (gint));
      gboolean ok = parse_cpus (str, cpus);

      g_array_unref (cpus);
      if (!ok) {
        g_warning ("nnstage: invalid cpus \"%s\": want core numbers and "
            "ranges separated by commas, e.g. 0,1 or 0-3", str);
        break;
      }
      GST_OBJECT_LOCK (self);
      g_free (self->cpus);
      self->cpus = g_strdup (str);
      GST_OBJECT_UNLOCK (self);
      break;
    }
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
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
      g_value_set_enum (value, self->device);
      break;
    case PROP_THREADS:
      g_value_set_int (value, self->threads);
      break;
    case PROP_CPUS:
      g_value_set_string (value, self->cpus);
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

  g_clear_pointer (&self->stage, nnp_stage_free);
  g_clear_pointer (&self->spec_graph, nnp_graph_unref);
  g_clear_error (&self->spec_error);
  g_clear_pointer (&self->model, nnp_model_unref);
  g_free (self->model_name);
  g_free (self->model_path);
  g_free (self->cpus);
  g_mutex_clear (&self->lock);

  G_OBJECT_CLASS (gst_nn_stage_parent_class)->finalize (object);
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
   * The device the stage runs on.
   */
  g_object_class_install_property (gobject_class, PROP_DEVICE,
      g_param_spec_enum ("device", "Device", "The device the stage runs on",
          GST_TYPE_NN_STAGE_DEVICE, DEFAULT_DEVICE,
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

  gst_element_class_add_static_pad_template (element_class, &sink_template);
  gst_element_class_add_static_pad_template (element_class, &src_template);
  gst_element_class_set_static_metadata (element_class,
      "Neural network stage", "Filter/Tensor",
      "Runs an ONNX model (or a stage of one) on tensor buffers with libnnpipe",
      "nnpipe developers");

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

  gst_type_mark_as_plugin_api (GST_TYPE_NN_STAGE_DEVICE, 0);
}

static void
gst_nn_stage_init (GstNnStage * self)
{
  g_mutex_init (&self->lock);
  self->model_path = g_strdup (DEFAULT_MODEL);
  self->device = DEFAULT_DEVICE;
  self->threads = DEFAULT_THREADS;
  self->cpus = g_strdup (DEFAULT_CPUS);
  gst_nn_tensors_info_init (&self->in_info);
  gst_nn_tensors_info_init (&self->out_info);
}
