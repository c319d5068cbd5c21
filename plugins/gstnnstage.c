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
#include "gstnnclmemory.h"
#include "gstnntensorcaps.h"
#include "gstnntensorpool.h"

#include <nnpipe/model.h>
#include <nnpipe/plan.h>
#include <nnpipe/stage.h>

#include <stdlib.h>
#include <string.h>

GST_DEBUG_CATEGORY_STATIC (gst_nn_stage_debug);
#define GST_CAT_DEFAULT gst_nn_stage_debug

#define DEFAULT_MODEL NULL
#define DEFAULT_DEVICE GST_NN_STAGE_DEVICE_CPU
#define DEFAULT_THREADS 1
#define DEFAULT_CPUS NULL
#define DEFAULT_PLAN NULL
#define DEFAULT_STAGE 0
#define DEFAULT_NODES NULL
#define DEFAULT_DEVICE_INDEX -1
#define DEFAULT_DEVICE_NAME NULL
#define DEFAULT_FALLBACK FALSE

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
  PROP_PLAN,
  PROP_STAGE,
  PROP_NODES,
  PROP_PLAN_OBJECT,
  PROP_BUSY_TIME,
  PROP_FRAMES,
  PROP_DEVICE_INDEX,
  PROP_DEVICE_NAME,
  PROP_FALLBACK,
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

struct _GstNnStage
{
  GstBaseTransform parent;

  /* properties (object lock) */
  gchar *model_path;
  GstNnStageDevice device;
  gint threads;
  gchar *cpus;
  gchar *plan_path;
  gint stage_index;
  gchar *nodes;
  NnpPlan *plan_object;         /* owned copy (set by nnpipeline) */
  gint device_index;
  gchar *device_name;
  gboolean fallback;

  /* the device, between start() and stop(): dev_spec is what the stage
   * runs on ("cpu", "opencl:1"); use_cl when that is an OpenCL device,
   * which is then cl_device (shared through GstContext; also set by
   * set_context).  Set in start() before negotiation, read by
   * transform_caps. */
  gchar *dev_spec;
  gboolean use_cl;
  NnpDevice *cl_device;         /* owned ref */

  /* the model and the shape-inference cache: transform_caps runs on any
   * thread (lock) */
  GMutex lock;
  NnpModel *model;              /* owned ref, between start() and stop() */
  gchar *model_name;            /* file name, for messages */
  NnpSpecializeFlags spec_flags;
  gboolean spec_valid;
  GstNnTensorsInfo spec_in;     /* the inputs the cached result is for */
  NnpGraph *spec_graph;         /* owned ref, or NULL when spec_error */
  NnpPlan *spec_plan;           /* part: resolved for spec_graph (owned) */
  gint spec_stage;
  GError *spec_error;
  GPtrArray *recent_keys;       /* model input shapes keys, newest first */

  /* part of the model, between start() and stop() (lock) */
  gboolean part;                /* plan or nodes set */
  NnpPlan *plan;                /* the plan file / plan-object (owned), or NULL */
  gint part_stage;              /* stage index in plan */
  gboolean part_first;          /* the part's inputs are the model's (stage
                                 * 0 of a plan, or nodes with nothing
                                 * before them): caps as a whole model */
  gchar *part_name;             /* "stage 1 of plan.json", for messages */
  gint part_threads;            /* nodes form: threads and cpus */
  GArray *part_cpus;
  GHashTable *graphs;           /* shapes key -> specialised NnpGraph (ref) */

  /* negotiated state (streaming thread) */
  GstNnTensorsInfo in_info, out_info;
  NnpStage *stage;
  gboolean stage_on_cl;         /* the stage runs on cl_device (no fallback) */
  gboolean out_device;          /* output caps have memory:OpenCL */

  /* measured processing time (object lock) */
  GstClockTime run_times[LATENCY_WINDOW];
  guint n_run_times, run_time_pos;
  GstClockTime reported_latency;
  guint64 busy_ns, frames;      /* accumulated processing time, buffers */
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
    {GST_NN_STAGE_DEVICE_OPENCL, "OpenCL device (see device-index, "
          "device-name)", "opencl"},
    {0, NULL, NULL}
  };

  if (g_once_init_enter (&type)) {
    GType t = g_enum_register_static ("GstNnStageDevice", values);
    g_once_init_leave (&type, t);
  }
  return type;
}

/* The device spec of the properties: "cpu", "opencl", "opencl:N",
 * "opencl:NAME" (new string).  Call with the object lock held. */
static gchar *
device_spec_locked (GstNnStage * self)
{
  switch (self->device) {
    case GST_NN_STAGE_DEVICE_OPENCL:
      if (self->device_name && *self->device_name)
        return g_strdup_printf ("opencl:%s", self->device_name);
      if (self->device_index >= 0)
        return g_strdup_printf ("opencl:%d", self->device_index);
      return g_strdup ("opencl");
    case GST_NN_STAGE_DEVICE_CPU:
    default:
      return g_strdup ("cpu");
  }
}

static gboolean
spec_is_opencl (const gchar * spec)
{
  return spec != NULL && g_ascii_strncasecmp (spec, "opencl", 6) == 0
      && (spec[6] == '\0' || spec[6] == ':');
}

/* A copy of plan that the partitioner can resolve when the plan names an
 * OpenCL device this machine cannot open: nnp_plan_resolve() refuses
 * those, but nnstage's own device logic reports them (the error naming the
 * device) or, with fallback=true, runs the stage on the CPU with a warning.
 * They are resolved as "cpu": node sets and boundaries do not depend on
 * the device.  Available OpenCL devices are resolved as they are (the
 * partitioner checks their op support). */
static NnpPlan *
plan_copy_for_resolve (const NnpPlan * plan)
{
  NnpPlan *copy = nnp_plan_copy (plan);

  for (gint k = 0; copy && k < copy->n_stages; k++) {
    NnpPlanStage *st = &copy->stages[k];

    if (st->device && !nnp_device_available (st->device)
        && spec_is_opencl (st->device)) {
      g_free (st->device);
      st->device = g_strdup ("cpu");
    }
  }
  return copy;
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

/* ------------------------------------------------------------------------ */
/* A part of the model: stage k of a plan, or a set of nodes.
 *
 * A part's input caps describe intermediate tensors, which do not say what
 * the model's input sizes are.  The stage learns them from, in order: the
 * caps themselves when they fit the model's inputs, the stage upstream (a
 * custom query every nnstage answers with the model input shapes it
 * specialised for), the plan's shapes, the model's static declared shapes,
 * and the shapes it last used.  The first candidate whose specialised graph
 * gives the stage inputs the caps describe wins. */

#define SHAPES_QUERY_NAME "nnp-model-input-shapes"
#define MAX_RECENT_KEYS 4
#define MAX_CACHED_GRAPHS 8

/* "1x3x48x160;1x4": the shapes of the model's inputs, in model order. */
static gchar *
shapes_key (const NnpInputShape * shapes, guint n)
{
  GString *s = g_string_new (NULL);

  for (guint i = 0; i < n; i++) {
    gchar *d = nnp_shape_to_string (&shapes[i].shape);

    g_string_append_printf (s, "%s%s", i ? ";" : "", d);
    g_free (d);
  }
  return g_string_free (s, FALSE);
}

/* Parse a key into shapes of the model's inputs (names point into
 * model_graph). */
static gboolean
shapes_from_key (NnpGraph * model_graph, const gchar * key,
    NnpInputShape * shapes, guint * n_out)
{
  const NnpValue *inputs[GST_NN_TENSORS_MAX];
  guint n = model_inputs (model_graph, inputs);
  gchar **parts;
  gboolean ok = TRUE;

  if (n > GST_NN_TENSORS_MAX)
    return FALSE;
  parts = g_strsplit (key, ";", -1);
  if (g_strv_length (parts) != n)
    ok = FALSE;
  for (guint i = 0; ok && i < n; i++) {
    NnpShape shape = { 0 };

    if (g_strcmp0 (parts[i], "scalar") != 0) {
      gchar **dims = g_strsplit (parts[i], "x", -1);
      guint rank = g_strv_length (dims);

      if (rank < 1 || rank > NNP_MAX_RANK)
        ok = FALSE;
      for (guint d = 0; ok && d < rank; d++) {
        gchar *end = NULL;
        gint64 v = g_ascii_strtoll (dims[d], &end, 10);

        if (end == dims[d] || *end != '\0' || v < 0)
          ok = FALSE;
        shape.dims[d] = v;
      }
      shape.rank = (int) rank;
      g_strfreev (dims);
    }
    shapes[i].name = inputs[i]->name;
    shapes[i].shape = shape;
  }
  g_strfreev (parts);
  *n_out = n;
  return ok;
}

/* The model specialised for a shapes key (cached).  New ref or NULL.
 * Call with self->lock held. */
static NnpGraph *
graph_for_key_locked (GstNnStage * self, const gchar * key, GError ** error)
{
  NnpInputShape shapes[GST_NN_TENSORS_MAX];
  NnpGraph *graph;
  GError *err = NULL;
  guint n = 0;

  graph = g_hash_table_lookup (self->graphs, key);
  if (graph)
    return nnp_graph_ref (graph);
  if (!shapes_from_key (nnp_model_get_graph (self->model), key, shapes, &n)) {
    g_set_error (error, NNP_ERROR, NNP_ERROR_INVALID,
        "model %s: invalid input shapes \"%s\"", self->model_name, key);
    return NULL;
  }
  graph = nnp_model_specialize (self->model, shapes, (int) n,
      self->spec_flags, &err);
  if (graph == NULL) {
    g_set_error (error, NNP_ERROR, err ? err->code : NNP_ERROR_FAILED,
        "model %s: shape inference failed for input shapes %s: %s",
        self->model_name, key, err ? err->message : "unknown error");
    g_clear_error (&err);
    return NULL;
  }
  if (g_hash_table_size (self->graphs) >= MAX_CACHED_GRAPHS)
    g_hash_table_remove_all (self->graphs);
  g_hash_table_insert (self->graphs, g_strdup (key), nnp_graph_ref (graph));
  return graph;
}

/* Keep the shapes keys last specialised for (newest first): they answer
 * the upstream query of the next stage. */
static void
remember_key_locked (GstNnStage * self, const gchar * key)
{
  for (guint i = 0; i < self->recent_keys->len; i++) {
    if (g_str_equal (g_ptr_array_index (self->recent_keys, i), key)) {
      g_ptr_array_remove_index (self->recent_keys, i);
      break;
    }
  }
  g_ptr_array_insert (self->recent_keys, 0, g_strdup (key));
  if (self->recent_keys->len > MAX_RECENT_KEYS)
    g_ptr_array_set_size (self->recent_keys, MAX_RECENT_KEYS);
}

/* Node index by name, or by topological index ("12"); -1 with error. */
static gint
find_node (NnpGraph * graph, const gchar * nodes, const gchar * what,
    GError ** error)
{
  gchar *name = g_strstrip (g_strdup (what));
  NnpNode *node;
  gchar *end = NULL;
  gint64 idx;

  if (*name == '\0') {
    g_set_error (error, NNP_ERROR, NNP_ERROR_PLAN,
        "nodes \"%s\": empty node name", nodes);
    g_free (name);
    return -1;
  }
  node = nnp_graph_find_node (graph, name);
  if (node) {
    g_free (name);
    return node->index;
  }
  idx = g_ascii_strtoll (name, &end, 10);
  if (end != name && *end == '\0') {
    if (idx < 0 || idx >= (gint64) graph->nodes->len) {
      g_set_error (error, NNP_ERROR, NNP_ERROR_PLAN,
          "nodes \"%s\": node index %" G_GINT64_FORMAT " out of range (the "
          "specialised graph has %u nodes)", nodes, idx, graph->nodes->len);
      g_free (name);
      return -1;
    }
    g_free (name);
    return (gint) idx;
  }
  g_set_error (error, NNP_ERROR, NNP_ERROR_PLAN,
      "nodes \"%s\": unknown node '%s' (not in the specialised graph)", nodes,
      name);
  g_free (name);
  return -1;
}

/* Mark the nodes of "a,b,c" or "first..last" in sel[]. */
static gboolean
select_nodes (NnpGraph * graph, const gchar * nodes, gboolean * sel,
    GError ** error)
{
  const gchar *dots = strstr (nodes, "..");

  if (dots) {
    gchar *a = g_strndup (nodes, dots - nodes);
    gint first = find_node (graph, nodes, a, error), last = -1;

    g_free (a);
    if (first < 0)
      return FALSE;
    last = find_node (graph, nodes, dots + 2, error);
    if (last < 0)
      return FALSE;
    if (first > last) {
      g_set_error (error, NNP_ERROR, NNP_ERROR_PLAN,
          "nodes \"%s\": '%s' (node %d) comes after '%s' (node %d) in "
          "topological order", nodes, nnp_graph_node (graph, first)->name,
          first, nnp_graph_node (graph, last)->name, last);
      return FALSE;
    }
    for (gint i = first; i <= last; i++)
      sel[i] = TRUE;
  } else {
    gchar **names = g_strsplit (nodes, ",", -1);

    for (guint i = 0; names[i] != NULL; i++) {
      gint idx = find_node (graph, nodes, names[i], error);

      if (idx < 0) {
        g_strfreev (names);
        return FALSE;
      }
      sel[idx] = TRUE;
    }
    g_strfreev (names);
  }
  return TRUE;
}

/* A plan for a hand-made part: [nodes before it], the part, [the rest].
 * "Before" are the nodes that precede the part's first node in
 * topological order and the part's ancestors; adjacent parts given as
 * ranges therefore agree on what crosses between them.  Stage index of the
 * part in *stage_out. */
static NnpPlan *
nodes_plan_locked (GstNnStage * self, NnpGraph * graph, const gchar * key,
    gint * stage_out, GError ** error)
{
  guint n = graph->nodes->len;
  gboolean *sel = g_new0 (gboolean, MAX (n, 1));
  guint8 *down = g_new0 (guint8, MAX (n, 1));   /* fed by the part */
  guint8 *up = g_new0 (guint8, MAX (n, 1));     /* feeds the part */
  GPtrArray *before = g_ptr_array_new (), *mine = g_ptr_array_new (),
      *after = g_ptr_array_new ();
  NnpInputShape shapes[GST_NN_TENSORS_MAX];
  NnpPlan *plan = NULL;
  NnpPlanStage *st;
  guint n_shapes = 0;
  gint first = -1;

  if (!select_nodes (graph, self->nodes, sel, error))
    goto out;

  for (guint i = 0; i < n; i++) {
    const NnpNode *node = nnp_graph_node (graph, (int) i);

    if (sel[i]) {
      if (first < 0)
        first = (gint) i;
      continue;
    }
    for (gint k = 0; k < node->n_inputs; k++) {
      const NnpValue *v = nnp_node_input (graph, node, k);

      if (v && v->producer >= 0 && (sel[v->producer] || down[v->producer]))
        down[i] = 1;
    }
  }
  for (gint i = (gint) n - 1; i >= 0; i--) {
    const NnpNode *node = nnp_graph_node (graph, i);

    if (sel[i])
      continue;
    for (gint k = 0; k < node->n_outputs; k++) {
      const NnpValue *v = nnp_node_output (graph, node, k);

      for (gint c = 0; v && c < v->n_consumers; c++)
        if (sel[v->consumers[c]] || up[v->consumers[c]])
          up[i] = 1;
    }
    if (up[i] && down[i]) {
      g_set_error (error, NNP_ERROR, NNP_ERROR_PLAN,
          "nodes \"%s\": not convex: node '%s' (%s) is outside the stage but "
          "both reads from it and feeds it", self->nodes, node->name,
          node->op_type);
      goto out;
    }
  }

  for (guint i = 0; i < n; i++) {
    const NnpNode *node = nnp_graph_node (graph, (int) i);

    if (sel[i])
      g_ptr_array_add (mine, node->name);
    else if ((gint) i < first || up[i])
      g_ptr_array_add (before, node->name);
    else
      g_ptr_array_add (after, node->name);
  }

  plan = nnp_plan_new (self->model_path, nnp_model_get_digest (self->model));
  plan->no_fusion = (self->spec_flags & NNP_SPECIALIZE_NO_FUSION) != 0;
  if (!shapes_from_key (nnp_model_get_graph (self->model), key, shapes,
          &n_shapes)) {
    g_set_error (error, NNP_ERROR, NNP_ERROR_INVALID,
        "model %s: invalid input shapes \"%s\"", self->model_name, key);
    g_clear_pointer (&plan, nnp_plan_free);
    goto out;
  }
  for (guint i = 0; i < n_shapes; i++)
    nnp_plan_set_shape (plan, shapes[i].name, &shapes[i].shape);
  if (before->len)
    nnp_plan_add_stage (plan, "cpu", 1, (const char *const *) before->pdata,
        (int) before->len);
  /* resolved as "cpu": the stage's own device is self->dev_spec */
  st = nnp_plan_add_stage (plan, "cpu",
      MAX (self->part_threads, 1), (const char *const *) mine->pdata,
      (int) mine->len);
  if (self->part_cpus && self->part_cpus->len) {
    st->cpus = g_memdup2 (self->part_cpus->data,
        self->part_cpus->len * sizeof (gint));
    st->n_cpus = (int) self->part_cpus->len;
  }
  if (after->len)
    nnp_plan_add_stage (plan, "cpu", 1, (const char *const *) after->pdata,
        (int) after->len);
  if (!nnp_plan_resolve (plan, graph, error)) {
    g_clear_pointer (&plan, nnp_plan_free);
    goto out;
  }
  *stage_out = before->len ? 1 : 0;

out:
  g_free (sel);
  g_free (down);
  g_free (up);
  g_ptr_array_unref (before);
  g_ptr_array_unref (mine);
  g_ptr_array_unref (after);
  return plan;
}

/* The part's plan resolved on graph.  New plan or NULL. */
static NnpPlan *
part_plan_locked (GstNnStage * self, NnpGraph * graph, const gchar * key,
    gint * stage_out, GError ** error)
{
  NnpPlan *plan;

  if (self->plan == NULL)
    return nodes_plan_locked (self, graph, key, stage_out, error);

  plan = plan_copy_for_resolve (self->plan);
  if (!nnp_plan_resolve (plan, graph, error)) {
    nnp_plan_free (plan);
    return NULL;
  }
  *stage_out = self->part_stage;
  return plan;
}

/* Whether caps tensors are the stage's inputs; else why not (new string). */
static gboolean
part_inputs_match (NnpGraph * graph, const NnpPlanStage * st,
    const GstNnTensorsInfo * info, gchar ** why)
{
  GString *want = g_string_new (NULL);
  gboolean ok = (guint) st->n_inputs == info->n_tensors;

  for (gint i = 0; i < st->n_inputs; i++) {
    const NnpValue *v = nnp_graph_find_value (graph, st->inputs[i]);
    gchar *s;

    if (v == NULL) {
      ok = FALSE;
      continue;
    }
    s = nnp_shape_to_string (&v->shape);
    g_string_append_printf (want, "%s'%s' %s %s", i ? ", " : "", v->name,
        nnp_dtype_name (v->dtype), s);
    g_free (s);
    if (ok && (guint) i < info->n_tensors) {
      const GstNnTensorInfo *t = &info->tensors[i];
      NnpShape shape;

      if (t->dtype != v->dtype
          || !gst_nn_shape_fit_rank (&t->shape, v->shape.rank, &shape)
          || !nnp_shape_equal (&shape, &v->shape))
        ok = FALSE;
    }
  }
  if (!ok)
    *why = g_strdup_printf ("the stage's %d inputs are %s", st->n_inputs,
        want->str);
  g_string_free (want, TRUE);
  return ok;
}

/* Add key to the candidates unless there. */
static void
add_candidate (GPtrArray * keys, GPtrArray * sources, gchar * key,
    const gchar * source)
{
  for (guint i = 0; i < keys->len; i++) {
    if (g_str_equal (g_ptr_array_index (keys, i), key)) {
      g_free (key);
      return;
    }
  }
  g_ptr_array_add (keys, key);
  g_ptr_array_add (sources, (gpointer) source);
}

/* Specialise for a part (see above).  Call with self->lock held. */
static NnpGraph *
specialize_part_locked (GstNnStage * self, const GstNnTensorsInfo * info,
    const gchar * const *upstream, NnpPlan ** plan_out, gint * stage_out,
    GError ** error)
{
  NnpGraph *model_graph = nnp_model_get_graph (self->model);
  const NnpValue *inputs[GST_NN_TENSORS_MAX];
  NnpInputShape shapes[GST_NN_TENSORS_MAX];
  GPtrArray *keys = g_ptr_array_new_with_free_func (g_free);
  GPtrArray *sources = g_ptr_array_new ();
  GString *why = g_string_new (NULL);
  NnpGraph *ret = NULL;
  guint n = model_inputs (model_graph, inputs);
  gboolean all_static = n <= GST_NN_TENSORS_MAX;

  if (match_inputs (self->model_name, model_graph, info, shapes, NULL))
    add_candidate (keys, sources, shapes_key (shapes, info->n_tensors),
        "the caps");
  for (guint i = 0; upstream && upstream[i]; i++)
    add_candidate (keys, sources, g_strdup (upstream[i]), "upstream");
  if (self->plan && n <= GST_NN_TENSORS_MAX) {
    gboolean have_all = TRUE;

    for (guint i = 0; i < n && have_all; i++) {
      have_all = FALSE;
      for (gint j = 0; j < self->plan->n_shapes; j++) {
        if (g_strcmp0 (self->plan->shape_names[j], inputs[i]->name) == 0) {
          shapes[i].name = inputs[i]->name;
          shapes[i].shape = self->plan->shapes[j];
          have_all = TRUE;
        }
      }
    }
    if (have_all)
      add_candidate (keys, sources, shapes_key (shapes, n), "the plan");
  }
  for (guint i = 0; i < n && all_static; i++) {
    all_static = nnp_shape_is_static (&inputs[i]->shape);
    shapes[i].name = inputs[i]->name;
    shapes[i].shape = inputs[i]->shape;
  }
  if (all_static)
    add_candidate (keys, sources, shapes_key (shapes, n), "the model");
  for (guint i = 0; i < self->recent_keys->len; i++)
    add_candidate (keys, sources,
        g_strdup (g_ptr_array_index (self->recent_keys, i)), "last caps");

  for (guint c = 0; c < keys->len && ret == NULL; c++) {
    const gchar *key = g_ptr_array_index (keys, c);
    GError *err = NULL;
    NnpGraph *graph = graph_for_key_locked (self, key, &err);
    NnpPlan *plan = NULL;
    gint stage = 0;
    gchar *reason = NULL;

    if (graph)
      plan = part_plan_locked (self, graph, key, &stage, &err);
    if (plan && part_inputs_match (graph, &plan->stages[stage], info,
            &reason)) {
      ret = graph;
      *plan_out = plan;
      *stage_out = stage;
      remember_key_locked (self, key);
      GST_DEBUG_OBJECT (self, "%s: model input shapes %s (from %s)",
          self->part_name, key, (const gchar *) g_ptr_array_index (sources,
              c));
      break;
    }
    g_string_append_printf (why, "%sat model input shapes %s (from %s): %s",
        why->len ? "; " : "", key,
        (const gchar *) g_ptr_array_index (sources, c),
        err ? err->message : reason);
    g_clear_error (&err);
    g_free (reason);
    g_clear_pointer (&plan, nnp_plan_free);
    g_clear_pointer (&graph, nnp_graph_unref);
  }

  if (ret == NULL) {
    gchar *got = gst_nn_tensors_info_to_string (info);

    if (keys->len == 0)
      g_set_error (error, NNP_ERROR, NNP_ERROR_PLAN,
          "model %s, %s: cannot tell the model's input shapes for input %s "
          "(the caps are not the model's inputs, no stage upstream answered, "
          "and the model's inputs are not static): use a plan with shapes",
          self->model_name, self->part_name, got);
    else
      g_set_error (error, NNP_ERROR, NNP_ERROR_PLAN,
          "model %s, %s: input %s does not fit the stage: %s",
          self->model_name, self->part_name, got, why->str);
    g_free (got);
  }
  g_string_free (why, TRUE);
  g_ptr_array_unref (keys);
  g_ptr_array_unref (sources);
  return ret;
}

/* Specialise the model for these inputs (cached: one entry).  Returns a new
 * graph reference or NULL with error; for a part also the resolved plan (a
 * new copy in *plan_out when plan_out is not NULL) and the stage index.
 * Call with self->lock held. */
static NnpGraph *
specialize_locked (GstNnStage * self, const GstNnTensorsInfo * info,
    const gchar * const *upstream, NnpPlan ** plan_out, gint * stage_out,
    GError ** error)
{
  NnpInputShape shapes[GST_NN_TENSORS_MAX];
  NnpGraph *graph = NULL;
  NnpPlan *plan = NULL;
  gint stage = 0;
  GError *err = NULL;

  if (self->model == NULL) {
    g_set_error (error, NNP_ERROR, NNP_ERROR_FAILED, "no model loaded");
    return NULL;
  }

  if (self->spec_valid && gst_nn_tensors_info_is_equal (&self->spec_in, info)) {
    if (self->spec_graph) {
      if (plan_out && self->spec_plan)
        *plan_out = nnp_plan_copy (self->spec_plan);
      if (stage_out)
        *stage_out = self->spec_stage;
      return nnp_graph_ref (self->spec_graph);
    }
    g_propagate_error (error, g_error_copy (self->spec_error));
    return NULL;
  }

  if (self->part) {
    graph = specialize_part_locked (self, info, upstream, &plan, &stage, &err);
  } else {
    /* cheap checks first, not cached: upstream may probe several candidates */
    if (!match_inputs (self->model_name, nnp_model_get_graph (self->model),
            info, shapes, error))
      return NULL;

    graph = nnp_model_specialize (self->model, shapes, (int) info->n_tensors,
        self->spec_flags, &err);
    if (graph == NULL && err != NULL) {
      /* name the model and what it got */
      gchar *got = gst_nn_tensors_info_to_string (info);
      gchar *msg = g_strdup_printf ("model %s: shape inference failed for "
          "dimensions=%s: %s", self->model_name, got, err->message);

      g_free (err->message);
      err->message = msg;
      g_free (got);
    }
    if (graph) {
      gchar *key = shapes_key (shapes, info->n_tensors);

      remember_key_locked (self, key);
      g_free (key);
    }
  }
  if (graph == NULL && err == NULL)
    g_set_error (&err, NNP_ERROR, NNP_ERROR_FAILED,
        "model %s: shape inference failed", self->model_name);

  g_clear_pointer (&self->spec_graph, nnp_graph_unref);
  g_clear_pointer (&self->spec_plan, nnp_plan_free);
  g_clear_error (&self->spec_error);
  self->spec_in = *info;
  self->spec_valid = TRUE;
  if (graph) {
    self->spec_graph = nnp_graph_ref (graph);
    self->spec_plan = plan;
    self->spec_stage = stage;
    if (plan_out && plan)
      *plan_out = nnp_plan_copy (plan);
    if (stage_out)
      *stage_out = stage;
    return graph;
  }
  self->spec_error = g_error_copy (err);
  g_propagate_error (error, err);
  return NULL;
}

/* Output tensors of stage k of a resolved plan. */
static gboolean
part_outputs_info (const gchar * model_name, NnpGraph * graph,
    const NnpPlan * plan, gint k, GstNnTensorsInfo * out, GError ** error)
{
  const NnpPlanStage *st = &plan->stages[k];

  gst_nn_tensors_info_init (out);
  if (st->n_outputs < 1 || st->n_outputs > GST_NN_TENSORS_MAX) {
    g_set_error (error, NNP_ERROR, NNP_ERROR_UNSUPPORTED,
        "model %s: stage %d has %d outputs, other/tensors carries 1 to %d",
        model_name, k, st->n_outputs, GST_NN_TENSORS_MAX);
    return FALSE;
  }
  out->n_tensors = (guint) st->n_outputs;
  for (gint i = 0; i < st->n_outputs; i++) {
    const NnpValue *v = nnp_graph_find_value (graph, st->outputs[i]);

    if (v == NULL || !nnp_shape_is_static (&v->shape)
        || nnp_dtype_size (v->dtype) == 0) {
      g_set_error (error, NNP_ERROR, NNP_ERROR_PLAN,
          "model %s: stage %d output '%s' has no static shape and type",
          model_name, k, st->outputs[i]);
      return FALSE;
    }
    out->tensors[i].dtype = v->dtype;
    out->tensors[i].shape = v->shape;
  }
  return TRUE;
}

/* Send the upstream query for model input shapes (keys, newest first). */
static gchar **
query_upstream_keys (GstNnStage * self, const gchar * digest)
{
  GstStructure *s = gst_structure_new (SHAPES_QUERY_NAME,
      "digest", G_TYPE_STRING, digest, NULL);
  GstQuery *q = gst_query_new_custom (GST_QUERY_CUSTOM, s);
  gchar **ret = NULL;

  if (gst_pad_peer_query (GST_BASE_TRANSFORM_SINK_PAD (self), q)) {
    const gchar *keys = gst_structure_get_string (gst_query_get_structure (q),
        "shapes");

    if (keys && *keys)
      ret = g_strsplit (keys, "|", -1);
  }
  gst_query_unref (q);
  return ret;
}

/* Answer the query when we run the same model and know our shapes. */
static gboolean
answer_shapes_query (GstNnStage * self, GstQuery * query)
{
  const GstStructure *s = gst_query_get_structure (query);
  gboolean ret = FALSE;

  g_mutex_lock (&self->lock);
  if (self->model && self->recent_keys->len > 0
      && g_strcmp0 (gst_structure_get_string (s, "digest"),
          nnp_model_get_digest (self->model)) == 0) {
    GString *keys = g_string_new (NULL);

    for (guint i = 0; i < self->recent_keys->len; i++)
      g_string_append_printf (keys, "%s%s", i ? "|" : "",
          (const gchar *) g_ptr_array_index (self->recent_keys, i));
    gst_structure_set (gst_query_writable_structure (query), "shapes",
        G_TYPE_STRING, keys->str, NULL);
    g_string_free (keys, TRUE);
    ret = TRUE;
  }
  g_mutex_unlock (&self->lock);
  return ret;
}

/* Output info for input info (NULL graph_out: not wanted; plan_out: the
 * resolved plan of a part, a new copy, NULL for a whole model). */
static gboolean
gst_nn_stage_infer (GstNnStage * self, const GstNnTensorsInfo * in,
    GstNnTensorsInfo * out, NnpGraph ** graph_out, NnpPlan ** plan_out,
    gint * stage_out, GError ** error)
{
  NnpGraph *graph;
  NnpPlan *plan = NULL;
  gchar **upstream = NULL;
  gint stage = 0;
  gboolean ok;

  g_mutex_lock (&self->lock);
  if (self->part && self->model
      && !(self->spec_valid && gst_nn_tensors_info_is_equal (&self->spec_in,
              in))) {
    gchar *digest = g_strdup (nnp_model_get_digest (self->model));

    g_mutex_unlock (&self->lock);
    upstream = query_upstream_keys (self, digest);
    g_free (digest);
    g_mutex_lock (&self->lock);
  }
  graph = specialize_locked (self, in, (const gchar * const *) upstream,
      &plan, &stage, error);
  if (graph && plan)
    ok = part_outputs_info (self->model_name, graph, plan, stage, out, error);
  else
    ok = graph != NULL && outputs_info (self->model_name, graph, out, error);
  g_mutex_unlock (&self->lock);
  g_strfreev (upstream);

  if (ok) {
    out->fps_n = in->fps_n;
    out->fps_d = in->fps_d;
  }
  if (ok && graph_out)
    *graph_out = graph;
  else if (graph)
    nnp_graph_unref (graph);
  if (ok && plan_out)
    *plan_out = plan;
  else if (plan)
    nnp_plan_free (plan);
  if (stage_out)
    *stage_out = stage;
  return ok;
}

/* Caps describing the model's inputs (dims when all are static);
 * framerate: the value to set, or NULL for any. */
static GstCaps *
model_caps (NnpGraph * graph, const GValue * framerate)
{
  const NnpValue *inputs[GST_NN_TENSORS_MAX];
  GstCaps *caps = gst_caps_new_empty ();
  GString *types, *dims;
  gboolean known_types = TRUE, known_dims = TRUE;
  GstStructure *s;
  guint n;

  n = model_inputs (graph, inputs);
  if (n < 1 || n > GST_NN_TENSORS_MAX)
    return caps;

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

static GstCaps *
model_input_caps (GstNnStage * self, const GValue * framerate)
{
  GstCaps *caps;

  g_mutex_lock (&self->lock);
  if (self->model == NULL) {
    g_mutex_unlock (&self->lock);
    return gst_static_pad_template_get_caps (&sink_template);
  }
  caps = model_caps (nnp_model_get_graph (self->model), framerate);
  g_mutex_unlock (&self->lock);
  return caps;
}

GstCaps *
gst_nn_stage_model_sink_caps (NnpModel * model)
{
  g_return_val_if_fail (model != NULL, NULL);
  return model_caps (nnp_model_get_graph (model), NULL);
}

gboolean
gst_nn_stage_match_model_inputs (NnpModel * model,
    const GstNnTensorsInfo * info, NnpInputShape * shapes, guint * n_shapes,
    GError ** error)
{
  gchar *name;
  gboolean ok;

  g_return_val_if_fail (model != NULL, FALSE);
  name = g_path_get_basename (nnp_model_get_name (model));
  ok = match_inputs (name, nnp_model_get_graph (model), info, shapes, error);
  g_free (name);
  if (ok)
    *n_shapes = info->n_tensors;
  return ok;
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
    if (gst_nn_stage_infer (self, &in, &out, NULL, NULL, NULL, &err)) {
      ret = gst_nn_tensors_info_to_structure (&out);
    } else if ((!self->part || self->part_first) && !inputs_match (self, &in)) {
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

/* The structures of caps except fixed tensors the model's inputs refuse
 * (count, type, rank or a fixed dim).  New caps. */
static GstCaps *
drop_refused_inputs (GstObject * obj, const gchar * model_name,
    NnpGraph * graph, GstCaps * caps)
{
  GstCaps *ret = gst_caps_new_empty ();

  for (guint i = 0; i < gst_caps_get_size (caps); i++) {
    const GstStructure *s = gst_caps_get_structure (caps, i);
    NnpInputShape shapes[GST_NN_TENSORS_MAX];
    GstNnTensorsInfo info;
    GError *err = NULL;

    if (graph && gst_nn_tensors_info_from_structure (&info, s, NULL)
        && !match_inputs (model_name, graph, &info, shapes, &err)) {
      GST_DEBUG_OBJECT (obj, "dropping %" GST_PTR_FORMAT ": %s", s,
          err->message);
      g_clear_error (&err);
      continue;
    }
    gst_caps_append_structure_full (ret, gst_structure_copy (s),
        gst_caps_features_copy (gst_caps_get_features (caps, i)));
  }
  return ret;
}

static GstCaps *
filter_model_inputs (GstNnStage * self, GstCaps * caps)
{
  GstCaps *ret;

  g_mutex_lock (&self->lock);
  ret = drop_refused_inputs (GST_OBJECT (self), self->model_name,
      self->model ? nnp_model_get_graph (self->model) : NULL, caps);
  g_mutex_unlock (&self->lock);
  return ret;
}

GstCaps *
gst_nn_stage_model_sink_caps_filtered (NnpModel * model, GstCaps * filter)
{
  GstCaps *caps, *f, *ret;
  gchar *name;

  g_return_val_if_fail (model != NULL, NULL);
  caps = gst_nn_stage_model_sink_caps (model);
  if (filter == NULL)
    return caps;
  name = g_path_get_basename (nnp_model_get_name (model));
  f = drop_refused_inputs (NULL, name, nnp_model_get_graph (model), filter);
  g_free (name);
  ret = gst_caps_intersect_full (f, caps, GST_CAPS_INTERSECT_FIRST);
  gst_caps_unref (f);
  gst_caps_unref (caps);
  return ret;
}

static gboolean
has_cl_feature (GstCaps * caps, guint i)
{
  GstCapsFeatures *f = gst_caps_get_features (caps, i);

  return f != NULL && !gst_caps_features_is_any (f)
      && gst_caps_features_contains (f, GST_CAPS_FEATURE_MEMORY_OPENCL);
}

/* The memory features the stage offers on either pad (takes caps, returns
 * new caps): on OpenCL every structure in device memory first, then the
 * same in system memory; on the CPU system memory only. */
static GstCaps *
offer_features (GstNnStage * self, GstCaps * caps)
{
  GstCaps *cl, *sys;

  if (gst_caps_is_any (caps))
    return caps;
  cl = gst_caps_new_empty ();
  sys = gst_caps_new_empty ();
  for (guint i = 0; i < gst_caps_get_size (caps); i++) {
    const GstStructure *s = gst_caps_get_structure (caps, i);

    if (self->use_cl)
      cl = gst_caps_merge_structure_full (cl, gst_structure_copy (s),
          gst_caps_features_new (GST_CAPS_FEATURE_MEMORY_OPENCL, NULL));
    sys = gst_caps_merge_structure (sys, gst_structure_copy (s));
  }
  gst_caps_unref (caps);
  return gst_caps_merge (cl, sys);
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

  ret = offer_features (self, ret);

  if (filter) {
    GstCaps *f = filter, *tmp;

    /* upstream offers candidates: drop fixed ones the model cannot take
     * (e.g. 1 channel for a model that wants 3), which the caps above
     * cannot say when the model's sizes are dynamic */
    if (have_model && !part && direction == GST_PAD_SRC)
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
  /* device memory only on an OpenCL stage */
  for (guint i = 0; ret && !GST_NN_STAGE (trans)->use_cl
      && i < gst_caps_get_size (caps); i++)
    if (has_cl_feature (caps, i))
      ret = FALSE;
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
        && gst_nn_stage_infer (self, &in, &out, NULL, NULL, NULL, &err);
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

/* Stage k of a resolved plan on a device (the plan's own device may be
 * an unavailable one resolved as "cpu", see plan_copy_for_resolve()). */
static NnpStage *
plan_stage_new (const NnpPlan * plan, gint k, NnpGraph * graph,
    const gchar * device, GError ** error)
{
  const NnpPlanStage *st = &plan->stages[k];
  gint *nodes = g_new0 (gint, MAX (st->n_nodes, 1));
  gint *in = g_new0 (gint, MAX (st->n_inputs, 1));
  gint *out = g_new0 (gint, MAX (st->n_outputs, 1));
  NnpStageOptions opts = { 0 };
  NnpStage *stage = NULL;

  for (gint i = 0; i < st->n_nodes; i++) {
    NnpNode *node = nnp_graph_find_node (graph, st->nodes[i]);

    if (node == NULL) {
      g_set_error (error, NNP_ERROR, NNP_ERROR_PLAN, "stage %d: unknown node "
          "'%s'", k, st->nodes[i]);
      goto out;
    }
    nodes[i] = node->index;
  }
  for (gint i = 0; i < st->n_inputs + st->n_outputs; i++) {
    gboolean is_in = i < st->n_inputs;
    const gchar *name = is_in ? st->inputs[i] : st->outputs[i - st->n_inputs];
    const NnpValue *v = nnp_graph_find_value (graph, name);

    if (v == NULL) {
      g_set_error (error, NNP_ERROR, NNP_ERROR_PLAN, "stage %d: unknown value "
          "'%s'", k, name);
      goto out;
    }
    if (is_in)
      in[i] = v->id;
    else
      out[i - st->n_inputs] = v->id;
  }
  opts.device = device;
  opts.threads = st->threads;
  opts.cpus = st->cpus;
  opts.n_cpus = st->n_cpus;
  opts.inputs = in;
  opts.n_inputs = st->n_inputs;
  opts.outputs = out;
  opts.n_outputs = st->n_outputs;
  stage = nnp_stage_new (graph, nodes, st->n_nodes, &opts, error);
out:
  g_free (nodes);
  g_free (in);
  g_free (out);
  return stage;
}

/* The stage on opts->device, or with #GstNnStage:fallback on the CPU when
 * the OpenCL device cannot run it (a program that does not build, an op
 * without kernel, out of memory): a warning names the device and why. */
static NnpStage *
make_stage (GstNnStage * self, const NnpPlan * plan, gint k, NnpGraph * graph,
    NnpStageOptions * opts, GError ** error)
{
  GError *err = NULL;
  NnpStage *stage;
  gboolean fallback;

  stage = plan ? plan_stage_new (plan, k, graph, opts->device, &err) :
      nnp_stage_new (graph, NULL, 0, opts, &err);
  self->stage_on_cl = stage != NULL && self->use_cl;
  if (stage || !self->use_cl)
    goto done;

  GST_OBJECT_LOCK (self);
  fallback = self->fallback;
  GST_OBJECT_UNLOCK (self);
  if (!fallback || !(g_error_matches (err, NNP_ERROR, NNP_ERROR_DEVICE)
          || g_error_matches (err, NNP_ERROR, NNP_ERROR_UNSUPPORTED)))
    goto done;

  GST_ELEMENT_WARNING (self, RESOURCE, FAILED,
      ("model %s: OpenCL device '%s' (%s) cannot run the stage, running it "
          "on the CPU instead: %s", self->model_name, self->dev_spec,
          nnp_device_get_name (self->cl_device), err->message),
      ("fallback=true"));
  g_clear_error (&err);
  opts->device = "cpu";
  stage = plan ? plan_stage_new (plan, k, graph, "cpu", &err) :
      nnp_stage_new (graph, NULL, 0, opts, &err);

done:
  if (err)
    g_propagate_error (error, err);
  return stage;
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
  GArray *cpus;
  gchar *cpus_str;
  GError *err = NULL;
  gint64 t0;
  gint k = 0;

  if (!gst_nn_tensors_info_from_caps (&in, incaps, &err)
      || !gst_nn_tensors_info_from_caps (&out, outcaps, &err))
    goto invalid_caps;

  self->out_device = has_cl_feature (outcaps, 0);
  if (self->stage && gst_nn_tensors_info_is_equal (&in, &self->in_info)
      && gst_nn_tensors_info_is_equal (&out, &self->out_info)) {
    GST_DEBUG_OBJECT (self, "same shapes, keeping the stage");
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
  opts.threads = self->threads;
  cpus_str = g_strdup (self->cpus);
  GST_OBJECT_UNLOCK (self);

  cpus = g_array_new (FALSE, FALSE, sizeof (gint));
  parse_cpus (cpus_str, cpus);  /* validated when set */
  g_free (cpus_str);
  opts.cpus = cpus->len ? (const int *) cpus->data : NULL;
  opts.n_cpus = (int) cpus->len;

  t0 = g_get_monotonic_time ();
  if (plan) {
    /* the plan's device (dev_spec, set at start), threads and pinning */
    opts.threads = plan->stages[k].threads;
  }
  stage = make_stage (self, plan, k, graph, &opts, &err);
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

/* Map the n tensors of a buffer: one memory each, or (from a plain source
 * such as filesrc) one block holding them all back to back. */
typedef struct
{
  GstBuffer *buffer;
  gboolean whole;
  guint n;
  GstMapInfo maps[GST_NN_TENSORS_MAX];
  guint8 *data[GST_NN_TENSORS_MAX];
  gboolean skip[GST_NN_TENSORS_MAX];    /* not mapped (device memory) */
} TensorsMap;

/* skip: tensors not to map (in device memory), NULL for none; only when
 * the buffer has one memory per tensor. */
static gboolean
tensors_map (TensorsMap * tm, GstBuffer * buffer, const GstNnTensorsInfo * info,
    const gboolean * skip, GstMapFlags flags, GError ** error)
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
      tm->n = i + 1;
      if (skip && skip[i])
        continue;
      if (!gst_memory_map (mem, &tm->maps[i], flags)) {
        g_set_error (error, NNP_ERROR, NNP_ERROR_FAILED,
            "could not map tensor %u", i);
        for (guint j = 0; j < i; j++)
          if (!(skip && skip[j]))
            gst_memory_unmap (gst_buffer_peek_memory (buffer, j),
                &tm->maps[j]);
        tm->n = 0;
        return FALSE;
      }
      tm->data[i] = tm->maps[i].data;
    }
    if (tm->n == n) {
      if (skip)
        memcpy (tm->skip, skip, n * sizeof (gboolean));
      return TRUE;
    }
    /* sizes differ: try as one block */
    for (guint i = 0; i < tm->n; i++)
      if (!(skip && skip[i]))
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
      if (!tm->skip[i])
        gst_memory_unmap (gst_buffer_peek_memory (tm->buffer, i),
            &tm->maps[i]);
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
  self->busy_ns += t;
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

/* Device tensors for the memories of buffer that are OpenCL memory the
 * stage can use as they are: on an OpenCL stage those of its device, on a
 * CPU stage (fallback) any (the library copies them, once each).  Others
 * stay NULL and are mapped. */
static guint
device_tensors (GstNnStage * self, GstBuffer * buffer, gboolean output,
    NnpDeviceTensor ** tensors, gboolean * mask)
{
  guint n = output ? self->out_info.n_tensors : self->in_info.n_tensors;
  NnpDevice *dev = nnp_stage_get_device (self->stage);
  guint found = 0;

  memset (mask, 0, n * sizeof (gboolean));
  if (gst_buffer_n_memory (buffer) != n)
    return 0;
  for (guint i = 0; i < n; i++) {
    GstMemory *mem = gst_buffer_peek_memory (buffer, i);
    const NnpValue *v = output ? nnp_stage_get_output (self->stage, (int) i) :
        nnp_stage_get_input (self->stage, (int) i);

    if (!gst_is_nn_cl_memory (mem))
      continue;
    if (self->stage_on_cl && gst_nn_cl_memory_get_device (mem) != dev)
      continue;
    tensors[i] = gst_nn_cl_memory_get_tensor (mem, v->dtype, &v->shape,
        output);
    if (tensors[i]) {
      mask[i] = TRUE;
      found++;
    }
  }
  return found;
}

static GstFlowReturn
gst_nn_stage_transform (GstBaseTransform * trans, GstBuffer * inbuf,
    GstBuffer * outbuf)
{
  GstNnStage *self = GST_NN_STAGE (trans);
  NnpTensor *inputs[GST_NN_TENSORS_MAX] = { NULL };
  NnpTensor *outputs[GST_NN_TENSORS_MAX] = { NULL };
  NnpDeviceTensor *dev_in[GST_NN_TENSORS_MAX] = { NULL };
  NnpDeviceTensor *dev_out[GST_NN_TENSORS_MAX] = { NULL };
  gboolean in_mask[GST_NN_TENSORS_MAX], out_mask[GST_NN_TENSORS_MAX];
  TensorsMap in_map, out_map;
  GError *err = NULL;
  gboolean ok;
  gint64 t0, t1;
  guint n_in, n_out, n_dev;

  if (G_UNLIKELY (self->stage == NULL))
    goto not_negotiated;
  n_in = self->in_info.n_tensors;
  n_out = self->out_info.n_tensors;

  /* device memory is used in place, the rest mapped */
  n_dev = device_tensors (self, inbuf, FALSE, dev_in, in_mask);
  n_dev += device_tensors (self, outbuf, TRUE, dev_out, out_mask);

  if (!tensors_map (&in_map, inbuf, &self->in_info, in_mask, GST_MAP_READ,
          &err))
    goto bad_input;
  if (!tensors_map (&out_map, outbuf, &self->out_info, out_mask,
          GST_MAP_WRITE, &err)) {
    tensors_unmap (&in_map);
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
  if (n_dev > 0)
    ok = nnp_stage_run_device (self->stage, inputs, dev_in, outputs, dev_out,
        &err);
  else
    ok = nnp_stage_run (self->stage, inputs, outputs, &err);
  t1 = g_get_monotonic_time ();

  for (guint i = 0; i < n_in; i++) {
    g_clear_pointer (&inputs[i], nnp_tensor_unref);
    g_clear_pointer (&dev_in[i], nnp_device_tensor_unref);
  }
  for (guint i = 0; i < n_out; i++) {
    g_clear_pointer (&outputs[i], nnp_tensor_unref);
    g_clear_pointer (&dev_out[i], nnp_device_tensor_unref);
  }
  tensors_unmap (&out_map);
  tensors_unmap (&in_map);

  if (!ok)
    goto run_failed;

  GST_LOG_OBJECT (self, "ran %" GST_TIME_FORMAT " in %.2f ms (%u tensors in "
      "device memory)", GST_TIME_ARGS (GST_BUFFER_PTS (inbuf)),
      (t1 - t0) / 1000.0, n_dev);
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
    for (guint i = 0; i < GST_NN_TENSORS_MAX; i++) {
      g_clear_pointer (&dev_in[i], nnp_device_tensor_unref);
      g_clear_pointer (&dev_out[i], nnp_device_tensor_unref);
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
      g_clear_pointer (&dev_in[i], nnp_device_tensor_unref);
      g_clear_pointer (&dev_out[i], nnp_device_tensor_unref);
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
      && gst_query_get_structure (query)
      && gst_structure_has_name (gst_query_get_structure (query),
          SHAPES_QUERY_NAME) && answer_shapes_query (self, query))
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

/* Check a part at the plan's shapes (or the model's static ones) so that a
 * bad plan or node list fails at start.  TRUE when there is nothing to
 * check yet.  Call with self->lock held. */
static gboolean
check_part_locked (GstNnStage * self, GError ** error)
{
  NnpGraph *model_graph = nnp_model_get_graph (self->model);
  const NnpValue *inputs[GST_NN_TENSORS_MAX];
  NnpInputShape shapes[GST_NN_TENSORS_MAX];
  guint n = model_inputs (model_graph, inputs);
  gboolean have_all = n <= GST_NN_TENSORS_MAX;
  NnpGraph *graph;
  NnpPlan *plan;
  gchar *key;
  gint k = 0;

  for (guint i = 0; i < n && have_all; i++) {
    shapes[i].name = inputs[i]->name;
    shapes[i].shape = inputs[i]->shape;
    have_all = FALSE;
    for (gint j = 0; self->plan && j < self->plan->n_shapes; j++) {
      if (g_strcmp0 (self->plan->shape_names[j], inputs[i]->name) == 0) {
        shapes[i].shape = self->plan->shapes[j];
        have_all = TRUE;
      }
    }
    if (!have_all)
      have_all = nnp_shape_is_static (&inputs[i]->shape);
  }
  if (!have_all)
    return TRUE;

  key = shapes_key (shapes, n);
  graph = graph_for_key_locked (self, key, error);
  plan = graph ? part_plan_locked (self, graph, key, &k, error) : NULL;
  if (plan) {
    const NnpPlanStage *st = &plan->stages[k];

    if (self->plan == NULL)
      self->part_first = k == 0;
    GST_INFO_OBJECT (self, "%s at model input shapes %s: %d nodes ('%s' .. "
        "'%s'), %d inputs, %d outputs", self->part_name, key, st->n_nodes,
        st->nodes[0], st->nodes[st->n_nodes - 1], st->n_inputs, st->n_outputs);
  }
  g_free (key);
  g_clear_pointer (&graph, nnp_graph_unref);
  if (plan == NULL)
    return FALSE;
  nnp_plan_free (plan);
  return TRUE;
}

/* The device of the stage: the plan stage's, else the properties'.  An
 * OpenCL device is found or opened and shared through GstContext; when it
 * is missing, #GstNnStage:fallback runs the stage on the CPU with a
 * warning, else the element fails with an error naming the device. */
static gboolean
open_device (GstNnStage * self, gint stage_index)
{
  gchar *spec;
  gboolean fallback;
  GError *err = NULL;

  GST_OBJECT_LOCK (self);
  if (self->plan && stage_index < self->plan->n_stages
      && self->plan->stages[stage_index].device)
    spec = g_strdup (self->plan->stages[stage_index].device);
  else
    spec = device_spec_locked (self);
  fallback = self->fallback;
  GST_OBJECT_UNLOCK (self);

  self->use_cl = FALSE;
  if (!spec_is_opencl (spec)) {
    g_clear_pointer (&self->cl_device, nnp_device_unref);
    g_free (self->dev_spec);
    self->dev_spec = spec;
    return TRUE;
  }

  /* set_context (answering our NEED_CONTEXT) reads it */
  g_free (self->dev_spec);
  self->dev_spec = g_strdup (spec);
  if (gst_nn_cl_ensure_element_device (GST_ELEMENT (self), spec,
          &self->cl_device, &err)) {
    self->use_cl = TRUE;
    g_free (self->dev_spec);
    self->dev_spec = spec;
    GST_INFO_OBJECT (self, "running on %s",
        nnp_device_get_name (self->cl_device));
    return TRUE;
  }

  if (fallback) {
    GST_ELEMENT_WARNING (self, RESOURCE, NOT_FOUND,
        ("OpenCL device '%s' is not available, running on the CPU instead: "
            "%s", spec, err->message), ("fallback=true"));
    g_clear_error (&err);
    g_free (spec);
    g_free (self->dev_spec);
    self->dev_spec = g_strdup ("cpu");
    return TRUE;
  }
  GST_ELEMENT_ERROR (self, RESOURCE, NOT_FOUND,
      ("OpenCL device '%s' is not available: %s", spec, err->message),
      ("set fallback=true to run on the CPU instead"));
  g_clear_error (&err);
  g_free (spec);
  return FALSE;
}

static gboolean
gst_nn_stage_start (GstBaseTransform * trans)
{
  GstNnStage *self = GST_NN_STAGE (trans);
  NnpModel *model = NULL;
  NnpPlan *plan = NULL;
  gchar *path, *plan_path, *nodes, *cpus_str, *plan_name;
  gint stage_index, threads;
  GError *err = NULL;
  gboolean ok = TRUE;

  GST_OBJECT_LOCK (self);
  path = g_strdup (self->model_path);
  plan_path = g_strdup (self->plan_path);
  nodes = g_strdup (self->nodes);
  stage_index = self->stage_index;
  threads = self->threads;
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
    /* the plan's model, relative to the plan file when not found as is */
    g_free (path);
    if (plan_path && !g_path_is_absolute (plan->model)
        && !g_file_test (plan->model, G_FILE_TEST_EXISTS)) {
      gchar *dir = g_path_get_dirname (plan_path);

      path = g_build_filename (dir, plan->model, NULL);
      g_free (dir);
    } else {
      path = g_strdup (plan->model);
    }
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
  parse_cpus (cpus_str, self->part_cpus);
  g_hash_table_remove_all (self->graphs);
  g_ptr_array_set_size (self->recent_keys, 0);
  ok = !self->part || check_part_locked (self, &err);
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

  if (!open_device (self, stage_index)) {
    /* the model and plan are ours now; stop() or the next start frees them */
    model = NULL;
    plan = NULL;
    goto fail;
  }

  GST_INFO_OBJECT (self, "model %s loaded (digest %s)", path,
      nnp_model_get_digest (model));
  g_free (path);
  g_free (plan_path);
  g_free (plan_name);
  g_free (nodes);
  g_free (cpus_str);
  return TRUE;

  /* ERRORS */
plan_failed:
  {
    GST_ELEMENT_ERROR (self, RESOURCE, SETTINGS,
        ("Invalid plan \"%s\": %s", plan_path, err->message),
        ("%s", err->message));
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

  g_clear_pointer (&self->stage, nnp_stage_free);
  gst_nn_tensors_info_init (&self->in_info);
  gst_nn_tensors_info_init (&self->out_info);
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
    case PROP_PLAN:
      GST_OBJECT_LOCK (self);
      g_free (self->plan_path);
      self->plan_path = g_value_dup_string (value);
      GST_OBJECT_UNLOCK (self);
      break;
    case PROP_STAGE:
      GST_OBJECT_LOCK (self);
      self->stage_index = g_value_get_int (value);
      GST_OBJECT_UNLOCK (self);
      break;
    case PROP_NODES:
      GST_OBJECT_LOCK (self);
      g_free (self->nodes);
      self->nodes = g_value_dup_string (value);
      GST_OBJECT_UNLOCK (self);
      break;
    case PROP_DEVICE_INDEX:
      GST_OBJECT_LOCK (self);
      self->device_index = g_value_get_int (value);
      GST_OBJECT_UNLOCK (self);
      break;
    case PROP_DEVICE_NAME:
      GST_OBJECT_LOCK (self);
      g_free (self->device_name);
      self->device_name = g_value_dup_string (value);
      GST_OBJECT_UNLOCK (self);
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
    case PROP_PLAN:
      g_value_set_string (value, self->plan_path);
      break;
    case PROP_STAGE:
      g_value_set_int (value, self->stage_index);
      break;
    case PROP_NODES:
      g_value_set_string (value, self->nodes);
      break;
    case PROP_BUSY_TIME:
      g_value_set_uint64 (value, self->busy_ns);
      break;
    case PROP_FRAMES:
      g_value_set_uint64 (value, self->frames);
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

  g_clear_pointer (&self->stage, nnp_stage_free);
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
  g_free (self->nodes);
  g_free (self->cpus);
  g_free (self->device_name);
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
      device_spec_locked (self);
  GST_OBJECT_UNLOCK (self);
  if (spec_is_opencl (spec))
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
   * The device the stage runs on.  On `opencl` the stage's tensors live in
   * device memory; its output stays there (caps feature memory:OpenCL)
   * when downstream accepts it, and input in device memory of the same
   * device is used in place.  A stage of a plan runs on the plan's device
   * instead.
   */
  g_object_class_install_property (gobject_class, PROP_DEVICE,
      g_param_spec_enum ("device", "Device", "The device the stage runs on",
          GST_TYPE_NN_STAGE_DEVICE, DEFAULT_DEVICE,
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
   * Nanoseconds spent running the model since the element started.
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
  self->plan_path = g_strdup (DEFAULT_PLAN);
  self->stage_index = DEFAULT_STAGE;
  self->nodes = g_strdup (DEFAULT_NODES);
  self->device_index = DEFAULT_DEVICE_INDEX;
  self->device_name = g_strdup (DEFAULT_DEVICE_NAME);
  self->fallback = DEFAULT_FALLBACK;
  self->graphs = g_hash_table_new_full (g_str_hash, g_str_equal, g_free,
      (GDestroyNotify) nnp_graph_unref);
  self->recent_keys = g_ptr_array_new_with_free_func (g_free);
  self->part_cpus = g_array_new (FALSE, FALSE, sizeof (gint));
  gst_nn_tensors_info_init (&self->in_info);
  gst_nn_tensors_info_init (&self->out_info);
}
