/* GStreamer nnpipe plugin: nnpipeline
 *
 * This library is free software; you can redistribute it and/or
 * modify it under the terms of the GNU Library General Public
 * License as published by the Free Software Foundation; either
 * version 2.1 of the License, or (at your option) any later version.
 */

/**
 * SECTION:element-nnpipeline
 * @title: nnpipeline
 * @short_description: run an ONNX model as a pipeline of stages
 *
 * nnpipeline splits a model into stages and runs them as
 * `nnstage ! queue ! nnstage ! ...` inside itself, so that frame N+1
 * enters stage 1 while frame N is in stage 2.  From outside it looks like
 * a whole-model nnstage: the same sink caps (the model's inputs) and src
 * caps (one tensor per model output).
 *
 * The split is computed when the input caps are known (or at READY ->
 * PAUSED when the model's input shapes are static): from a plan file
 * (#GstNnPipeline:plan), from manual cuts (#GstNnPipeline:cuts, topological
 * node indices or node names of the specialised graph), or automatically
 * for #GstNnPipeline:devices, minimising the slowest stage (see
 * docs/partition.md).  Each stage runs on its device with its threads,
 * pinned to cores when the plan says so (or with #GstNnPipeline:pin).
 *
 * The chosen plan is posted as an element message `nnpipeline-plan`
 * (stage count, and per stage its device, threads, node count, first and
 * last node, predicted milliseconds and the bytes crossing to the next
 * stage) and logged.  Every #GstNnPipeline:stats-interval milliseconds an
 * `nnpipeline-stats` message gives each stage's busy percentage and frames,
 * the throughput and the fill of each queue, so the bottleneck shows; at
 * EOS a last one with `final=true` sums up the run.
 *
 * When the input caps change to other sizes, the stages re-specialise the
 * model for them and check that the plan's nodes still fit.
 *
 * ## Example launch lines
 * |[
 * gst-launch-1.0 -m videotestsrc num-buffers=30 pattern=ball ! \
 *     video/x-raw,format=RGB,width=640,height=640,framerate=30/1 ! \
 *     nnconvert mean=0.485,0.456,0.406 std=0.229,0.224,0.225 ! \
 *     nnpipeline model=.cache/models/ch_PP-OCRv4_det_infer.onnx stages=2 devices=cpu:1,cpu:1 \
 *       stats-interval=1000 ! fakesink
 * ]| runs the text detector as two single-thread stages and prints the plan
 * and stats messages (pipelines/split.sh).  `pipelines/split.sh 2 cpu,opencl`
 * runs the same line with devices=cpu,opencl: the detector split between
 * the CPU and the first OpenCL device, balanced with the partitioner's
 * OpenCL costs (add fallback=true to plan on the CPU when there is no
 * OpenCL device).
 * |[
 * gst-launch-1.0 -m filesrc location=in.f32 blocksize=4915200 ! \
 *     other/tensors,format=static,num_tensors=1,types=float32,dimensions=640:640:3:1,framerate=0/1 ! \
 *     nnpipeline model=.cache/models/ch_PP-OCRv4_det_infer.onnx stages=2 devices=cpu:1,cpu:1 \
 *       stats-interval=1000 ! fakesink
 * ]| the same on raw 1x3x640x640 float32 tensors read from a file
 * (`NNP_INPUT=in.f32 pipelines/split.sh`).  With cuts=20,40 instead of
 * stages and devices the model is cut by hand into three stages starting
 * at nodes 0, 20 and 40.
 */

#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "gstnnpipeline.h"
#include "gstnnstage.h"
#include "gstnntensorcaps.h"

#include <nnpipe/model.h>
#include <nnpipe/plan.h>
#include <nnpipe/trace.h>

#include <string.h>

GST_DEBUG_CATEGORY_STATIC (gst_nn_pipeline_debug);
#define GST_CAT_DEFAULT gst_nn_pipeline_debug

#define DEFAULT_MODEL NULL
#define DEFAULT_STAGES "auto"
#define DEFAULT_DEVICES NULL
#define DEFAULT_PLAN NULL
#define DEFAULT_QUEUE_SIZE 2
#define DEFAULT_CUTS NULL
#define DEFAULT_STATS_INTERVAL 1000
#define DEFAULT_PIN FALSE
#define DEFAULT_FALLBACK FALSE
#define DEFAULT_STAGE_LOAD NULL
#define DEFAULT_TRACE NULL

#define MAX_STAGES 64

enum
{
  PROP_0,
  PROP_MODEL,
  PROP_STAGES,
  PROP_DEVICES,
  PROP_PLAN,
  PROP_QUEUE_SIZE,
  PROP_CUTS,
  PROP_STATS_INTERVAL,
  PROP_PIN,
  PROP_FALLBACK,
  PROP_STAGE_LOAD,
  PROP_TRACE,
};

static GstStaticPadTemplate sink_template = GST_STATIC_PAD_TEMPLATE ("sink",
    GST_PAD_SINK,
    GST_PAD_ALWAYS,
    GST_STATIC_CAPS (GST_NN_TENSORS_CAPS_TEMPLATE_ANY));

static GstStaticPadTemplate src_template = GST_STATIC_PAD_TEMPLATE ("src",
    GST_PAD_SRC,
    GST_PAD_ALWAYS,
    GST_STATIC_CAPS (GST_NN_TENSORS_CAPS_TEMPLATE));

struct _GstNnPipeline
{
  GstBin parent;

  GstPad *sinkpad, *srcpad;     /* ghost pads (owned by the element) */

  /* properties (object lock) */
  gchar *model_path;
  gchar *stages;
  gchar *devices;
  gchar *plan_path;
  guint queue_size;
  gchar *cuts;
  guint stats_interval;
  gboolean pin;
  gboolean fallback;
  gchar *stage_load;
  gchar *trace_path;

  /* stream state (build_lock), between READY -> PAUSED and back */
  GMutex build_lock;
  NnpModel *model;              /* owned ref */
  gchar *model_file;            /* path the model was loaded from */
  NnpPlan *plan;                /* owned, NULL until built */
  GPtrArray *stage_elems;       /* nnstage GstElement* (refs) */
  GPtrArray *queues;            /* queue GstElement* (refs) */
  gchar *built_key;             /* input caps the stages were built for */
  NnpTrace *trace;              /* owned ref, NULL when not tracing: the
                                 * queues' levels; the stages hold their own */

  GstCaps *refused_caps;        /* input caps whose error was posted (ref,
                                 * build_lock): posted once, not on every
                                 * retry of the same CAPS event */

  /* statistics (stats_lock).  post_stats runs on the clock thread and, at
   * EOS, on a streaming thread holding stream locks: it must never take
   * build_lock (a state change holds build_lock while inner elements stop,
   * which takes their stream locks).  So the stages and queues it reads are
   * its own references, set by build_locked() and dropped by
   * teardown_locked() under stats_lock. */
  GMutex stats_lock;
  GMutex post_lock;             /* one post_stats at a time, so that the
                                 * messages leave in order */
  GPtrArray *stats_stages;      /* nnstage GstElement* (refs) */
  GPtrArray *stats_queues;      /* queue GstElement* (refs) */
  gboolean final_posted;        /* the final=true message is out: no
                                 * periodic one after it */
  GstClockID stats_id;
  gint64 last_tick;             /* monotonic us */
  guint64 last_busy[MAX_STAGES];
  guint64 last_frames;
  guint64 frames_in, frames_out;
  gint64 first_in;              /* monotonic us of the first input buffer, 0 */
  gint64 first_out, last_out;   /* monotonic us of the first and last output buffers */
};

G_DEFINE_TYPE (GstNnPipeline, gst_nn_pipeline, GST_TYPE_BIN);
GST_ELEMENT_REGISTER_DEFINE (nnpipeline, "nnpipeline", GST_RANK_NONE,
    GST_TYPE_NN_PIPELINE);

/* ------------------------------------------------------------------------ */
/* Building the stages */

/* Trace of one queue's level: buffers in minus buffers out, counted by
 * probes on its pads (no lock, no property read on the streaming path). */
typedef struct
{
  NnpTrace *trace;              /* not owned: closed after the queues are gone */
  gint counter;
  gint level;                   /* atomic */
} QueueTrace;

static GstPadProbeReturn
queue_trace_probe (GstPad * pad, GstPadProbeInfo * info, gpointer user_data)
{
  QueueTrace *qt = user_data;
  gint delta = GST_PAD_IS_SINK (pad) ? 1 : -1;
  gint level = g_atomic_int_add (&qt->level, delta) + delta;

  nnp_trace_counter (qt->trace, qt->counter, level, nnp_trace_now ());
  return GST_PAD_PROBE_OK;
}

static void
queue_trace_attach (GstNnPipeline * self, GstElement * queue)
{
  QueueTrace *qt = g_new0 (QueueTrace, 1);
  GstPad *sink = gst_element_get_static_pad (queue, "sink");
  GstPad *src = gst_element_get_static_pad (queue, "src");

  qt->trace = self->trace;
  qt->counter = nnp_trace_add_counter (self->trace, GST_OBJECT_NAME (queue));
  /* qt lives as long as the queue: freed with its src pad probe */
  gst_pad_add_probe (sink, GST_PAD_PROBE_TYPE_BUFFER, queue_trace_probe, qt,
      NULL);
  gst_pad_add_probe (src, GST_PAD_PROBE_TYPE_BUFFER, queue_trace_probe, qt,
      g_free);
  gst_object_unref (sink);
  gst_object_unref (src);
}

/* Parse "10,20" (indices) or "conv_3,conv_9" (names): *all_ints tells. */
static gchar **
parse_cuts (const gchar * str, gint ** ints, gint * n, gboolean * all_ints)
{
  gchar **parts = g_strsplit (str, ",", -1);
  guint len = g_strv_length (parts);

  *ints = g_new0 (gint, MAX (len, 1));
  *n = 0;
  *all_ints = TRUE;
  for (guint i = 0; i < len; i++) {
    gchar *p = g_strstrip (parts[i]), *end = NULL;
    gint64 v;

    if (*p == '\0')
      continue;
    v = g_ascii_strtoll (p, &end, 10);
    if (end == p || *end != '\0' || v < 0 || v > G_MAXINT)
      *all_ints = FALSE;
    else
      (*ints)[*n] = (gint) v;
    (*n)++;
  }
  return parts;
}

/* Model input shapes as "x=1x3x48x160" (new string). */
static gchar *
shapes_string (const NnpInputShape * shapes, guint n)
{
  GString *s = g_string_new (NULL);

  for (guint i = 0; i < n; i++) {
    gchar *d = nnp_shape_to_string (&shapes[i].shape);

    g_string_append_printf (s, "%s%s=%s", i ? "," : "", shapes[i].name, d);
    g_free (d);
  }
  return g_string_free (s, FALSE);
}

/* Bytes a stage hands to the next one (its outputs). */
static gint64
stage_out_bytes (NnpGraph * graph, const NnpPlanStage * st)
{
  gint64 bytes = 0;

  for (gint i = 0; i < st->n_outputs; i++) {
    const NnpValue *v = nnp_graph_find_value (graph, st->outputs[i]);

    if (v && nnp_shape_numel (&v->shape) > 0)
      bytes += nnp_shape_numel (&v->shape) * (gint64) nnp_dtype_size (v->dtype);
  }
  return bytes;
}

static gboolean
is_opencl (const gchar * device)
{
  return device != NULL && g_ascii_strncasecmp (device, "opencl", 6) == 0
      && (device[6] == '\0' || device[6] == ':');
}

/* fallback=true: the device list with every OpenCL item this machine
 * cannot open ("opencl", "opencl:N", "opencl:NAME") replaced by "cpu" (one
 * thread), each announced with a warning.  The list itself is parsed by
 * nnp_device_specs_parse() as for `nnpipe split --devices`.  New string. */
static gchar *
fallback_devices (GstNnPipeline * self, const gchar * devices)
{
  gchar **items = g_strsplit (devices, ",", -1);
  GString *out = g_string_new (NULL);

  for (guint i = 0; items[i]; i++) {
    const gchar *item = g_strstrip (items[i]);

    if (is_opencl (item) && !nnp_device_available (item)) {
      GST_ELEMENT_WARNING (self, RESOURCE, NOT_FOUND,
          ("OpenCL device '%s' is not available, planning its stage on the "
              "CPU instead", item), ("devices=%s, fallback=true", devices));
      item = "cpu";
    }
    g_string_append_printf (out, "%s%s", i ? "," : "", item);
  }
  g_strfreev (items);
  return g_string_free (out, FALSE);
}

/* fallback=true: a plan's stages on an OpenCL device this machine cannot
 * open run on the CPU (one thread), with a warning. */
static void
fallback_plan (GstNnPipeline * self, NnpPlan * plan)
{
  for (gint k = 0; k < plan->n_stages; k++) {
    NnpPlanStage *st = &plan->stages[k];

    if (is_opencl (st->device) && !nnp_device_available (st->device)) {
      GST_ELEMENT_WARNING (self, RESOURCE, NOT_FOUND,
          ("OpenCL device '%s' is not available, running stage %d on the "
              "CPU instead", st->device, k), ("plan, fallback=true"));
      g_free (st->device);
      st->device = g_strdup ("cpu");
      st->threads = 1;
    }
  }
}

/* Compute (or load) the plan for these model input shapes.  New plan or
 * NULL with error.  Call with build_lock held. */
static NnpPlan *
make_plan (GstNnPipeline * self, const NnpInputShape * shapes, guint n_shapes,
    NnpGraph * graph, GError ** error)
{
  gchar *stages_str, *devices, *plan_path, *cuts, *stage_load;
  gboolean pin, fallback;
  gdouble *load = NULL;
  gint n_load = 0;
  NnpDeviceSpec *specs = NULL;
  NnpCostModel *cm = NULL;
  NnpPlan *plan = NULL;
  gint n_specs = 0, n_stages = 0;
  const gchar *digest = nnp_model_get_digest (self->model);
  gchar *key = shapes_string (shapes, n_shapes);

  GST_OBJECT_LOCK (self);
  stages_str = g_strdup (self->stages);
  devices = g_strdup (self->devices);
  plan_path = g_strdup (self->plan_path);
  cuts = g_strdup (self->cuts);
  pin = self->pin;
  fallback = self->fallback;
  stage_load = g_strdup (self->stage_load);
  GST_OBJECT_UNLOCK (self);

  if (stage_load && *stage_load
      && !(load = nnp_stage_load_parse (stage_load, &n_load, error)))
    goto out;

  if (stages_str && g_ascii_strcasecmp (stages_str, "auto") != 0)
    n_stages = (gint) g_ascii_strtoll (stages_str, NULL, 10);

  if (plan_path && *plan_path) {
    plan = nnp_plan_load (plan_path, error);
    if (plan == NULL)
      goto out;
    if (plan->digest && *plan->digest
        && g_ascii_strcasecmp (plan->digest, digest) != 0) {
      g_set_error (error, NNP_ERROR, NNP_ERROR_PLAN,
          "plan %s was made for another model than %s (digest %s, the "
          "model's is %s)", plan_path, self->model_file, plan->digest, digest);
      g_clear_pointer (&plan, nnp_plan_free);
      goto out;
    }
    if (plan->no_fusion) {
      graph = nnp_model_specialize (self->model, shapes, (int) n_shapes,
          NNP_SPECIALIZE_NO_FUSION, error);
      if (graph == NULL) {
        g_clear_pointer (&plan, nnp_plan_free);
        goto out;
      }
    } else {
      nnp_graph_ref (graph);
    }
    /* the stages start at the shapes negotiated */
    for (guint i = 0; i < n_shapes; i++)
      nnp_plan_set_shape (plan, shapes[i].name, &shapes[i].shape);
    if (fallback)
      fallback_plan (self, plan);
    if (!nnp_plan_resolve (plan, graph, error)) {
      g_clear_pointer (&plan, nnp_plan_free);
      nnp_graph_unref (graph);
      goto out;
    }
    if (plan->predicted_bottleneck_ms < 0) {
      cm = nnp_cost_model_new (graph, digest, key, NNP_COST_AUTO);
      nnp_plan_predict (plan, graph, cm);
    }
    nnp_graph_unref (graph);
    goto out;
  }

  if (devices && *devices) {
    /* the same syntax as `nnpipe split --devices` (one parser): OpenCL
     * stages are planned on the OpenCL device with its own costs */
    if (fallback) {
      gchar *usable = fallback_devices (self, devices);

      specs = nnp_device_specs_parse (usable, &n_specs, error);
      g_free (usable);
    } else {
      specs = nnp_device_specs_parse (devices, &n_specs, error);
    }
    if (specs == NULL)
      goto out;
  } else {
    /* one single-thread CPU stage per stage (auto: per core) */
    gint n = n_stages > 0 ? n_stages : MAX ((gint) g_get_num_processors (), 2);
    GString *d = g_string_new (NULL);

    if (cuts && *cuts && n_stages <= 0) {
      gint *ints, nc;
      gboolean all;

      g_strfreev (parse_cuts (cuts, &ints, &nc, &all));
      g_free (ints);
      n = nc + 1;
    }
    for (gint i = 0; i < MIN (n, MAX_STAGES); i++)
      g_string_append_printf (d, "%scpu:1", i ? "," : "");
    specs = nnp_device_specs_parse (d->str, &n_specs, error);
    g_string_free (d, TRUE);
    if (specs == NULL)
      goto out;
  }

  cm = nnp_cost_model_new (graph, digest, key, NNP_COST_AUTO);

  if (cuts && *cuts) {
    gint *ints, nc;
    gboolean all;
    gchar **names = parse_cuts (cuts, &ints, &nc, &all);

    if (n_stages > 0 && nc + 1 != n_stages) {
      g_set_error (error, NNP_ERROR, NNP_ERROR_PLAN,
          "cuts \"%s\" make %d stages, stages=%d", cuts, nc + 1, n_stages);
    } else if (all) {
      plan = nnp_plan_new_from_cuts (self->model_file, digest, shapes,
          (int) n_shapes, graph, ints, nc, specs, n_specs, cm, error);
    } else {
      GPtrArray *v = g_ptr_array_new ();

      /* indices mixed with names: indices name the node there */
      for (guint i = 0; names[i]; i++) {
        const gchar *name = g_strstrip (names[i]);
        gchar *end = NULL;
        gint64 idx;

        if (*name == '\0')
          continue;
        idx = g_ascii_strtoll (name, &end, 10);
        if (end != name && *end == '\0' && idx >= 0
            && idx < (gint64) graph->nodes->len
            && nnp_graph_find_node (graph, name) == NULL)
          name = nnp_graph_node (graph, (int) idx)->name;
        g_ptr_array_add (v, (gpointer) name);
      }
      plan = nnp_plan_new_from_cut_names (self->model_file, digest, shapes,
          (int) n_shapes, graph, (const char *const *) v->pdata, (int) v->len,
          specs, n_specs, cm, error);
      g_ptr_array_unref (v);
    }
    g_free (ints);
    g_strfreev (names);
  } else {
    NnpSplitOptions opts = { 0 };

    opts.devices = specs;
    opts.n_devices = n_specs;
    opts.n_stages = n_stages;
    opts.stage_load = load;
    opts.n_stage_load = n_load;
    plan = nnp_plan_new_auto (self->model_file, digest, shapes, (int) n_shapes,
        graph, &opts, cm, error);
  }

out:
  if (plan && pin) {
    /* consecutive cores for the stages the plan does not pin */
    gint n_cores = MAX ((gint) g_get_num_processors (), 1), next = 0;

    for (gint k = 0; k < plan->n_stages; k++) {
      NnpPlanStage *st = &plan->stages[k];

      if (st->n_cpus > 0) {
        next = st->cpus[st->n_cpus - 1] + 1;
        continue;
      }
      st->cpus = g_new0 (int, MAX (st->threads, 1));
      st->n_cpus = MAX (st->threads, 1);
      for (gint t = 0; t < st->n_cpus; t++)
        st->cpus[t] = (next++) % n_cores;
    }
  }
  if (specs)
    nnp_device_specs_free (specs, n_specs);
  if (cm)
    nnp_cost_model_free (cm);
  g_free (key);
  g_free (load);
  g_free (stage_load);
  g_free (stages_str);
  g_free (devices);
  g_free (plan_path);
  g_free (cuts);
  return plan;
}

/* The plan as an element message (and in the log). */
static void
post_plan (GstNnPipeline * self, NnpGraph * graph, const gchar * shapes)
{
  const NnpPlan *plan = self->plan;
  GValue stages = G_VALUE_INIT;
  GstStructure *s;
  gchar *table;

  g_value_init (&stages, GST_TYPE_ARRAY);
  for (gint k = 0; k < plan->n_stages; k++) {
    const NnpPlanStage *st = &plan->stages[k];
    GValue v = G_VALUE_INIT;
    GString *cpus = g_string_new (NULL);
    GstStructure *ss;

    for (gint i = 0; i < st->n_cpus; i++)
      g_string_append_printf (cpus, "%s%d", i ? "," : "", st->cpus[i]);
    ss = gst_structure_new ("stage",
        "index", G_TYPE_INT, k,
        "device", G_TYPE_STRING, st->device,
        "threads", G_TYPE_INT, st->threads,
        "cpus", G_TYPE_STRING, cpus->str,
        "nodes", G_TYPE_INT, st->n_nodes,
        "first-node", G_TYPE_STRING, st->n_nodes ? st->nodes[0] : "",
        "last-node", G_TYPE_STRING,
        st->n_nodes ? st->nodes[st->n_nodes - 1] : "",
        "inputs", G_TYPE_INT, st->n_inputs,
        "outputs", G_TYPE_INT, st->n_outputs,
        "predicted-ms", G_TYPE_DOUBLE, st->predicted_ms,
        "crossing-bytes", G_TYPE_INT64, k + 1 < plan->n_stages ?
        stage_out_bytes (graph, st) : (gint64) 0, NULL);
    g_string_free (cpus, TRUE);
    g_value_init (&v, GST_TYPE_STRUCTURE);
    gst_value_set_structure (&v, ss);
    gst_structure_free (ss);
    gst_value_array_append_and_take_value (&stages, &v);
  }

  s = gst_structure_new ("nnpipeline-plan",
      "model", G_TYPE_STRING, self->model_file,
      "shapes", G_TYPE_STRING, shapes,
      "n-stages", G_TYPE_INT, plan->n_stages,
      "method", G_TYPE_STRING, plan->method ? plan->method : "plan",
      "cost", G_TYPE_STRING, plan->cost ? plan->cost : "",
      "predicted-bottleneck-ms", G_TYPE_DOUBLE, plan->predicted_bottleneck_ms,
      "bottleneck-stage", G_TYPE_INT, plan->bottleneck_stage, NULL);
  gst_structure_take_value (s, "stages", &stages);

  table = nnp_plan_to_table (plan);
  GST_INFO_OBJECT (self, "plan for %s at %s:\n%s", self->model_file, shapes,
      table);
  g_free (table);

  gst_element_post_message (GST_ELEMENT (self),
      gst_message_new_element (GST_OBJECT (self), s));
}

/* Remove the inner elements.  Call with build_lock held, streaming
 * stopped. */
static void
teardown_locked (GstNnPipeline * self)
{
  gst_ghost_pad_set_target (GST_GHOST_PAD (self->sinkpad), NULL);
  gst_ghost_pad_set_target (GST_GHOST_PAD (self->srcpad), NULL);
  for (guint i = 0; i < self->stage_elems->len; i++) {
    GstElement *e = g_ptr_array_index (self->stage_elems, i);

    gst_element_set_state (e, GST_STATE_NULL);
    gst_bin_remove (GST_BIN (self), e);
  }
  for (guint i = 0; i < self->queues->len; i++) {
    GstElement *e = g_ptr_array_index (self->queues, i);

    gst_element_set_state (e, GST_STATE_NULL);
    gst_bin_remove (GST_BIN (self), e);
  }
  g_ptr_array_set_size (self->stage_elems, 0);
  g_ptr_array_set_size (self->queues, 0);
  g_clear_pointer (&self->plan, nnp_plan_free);
  g_clear_pointer (&self->built_key, g_free);
  gst_caps_replace (&self->refused_caps, NULL);

  g_mutex_lock (&self->stats_lock);
  g_ptr_array_set_size (self->stats_stages, 0);
  g_ptr_array_set_size (self->stats_queues, 0);
  g_mutex_unlock (&self->stats_lock);
}

/* Specialise, plan and create the stages for these inputs (NULL: the
 * model's static declared shapes).  sync: bring the new elements to the
 * bin's state (when built while streaming).  Call with build_lock held. */
static gboolean
build_locked (GstNnPipeline * self, const GstNnTensorsInfo * info,
    gboolean sync, GError ** error)
{
  NnpInputShape shapes[GST_NN_TENSORS_MAX];
  NnpGraph *graph;
  GstElement *prev = NULL;
  guint n_shapes = 0, queue_size;
  gboolean fallback;
  gchar *key;
  gint64 t0 = g_get_monotonic_time ();

  if (info) {
    if (!gst_nn_stage_match_model_inputs (self->model, info, shapes, &n_shapes,
            error))
      return FALSE;
  } else {
    NnpGraph *mg = nnp_model_get_graph (self->model);

    for (guint i = 0; i < mg->inputs->len; i++) {
      const NnpValue *v =
          nnp_graph_value (mg, g_array_index (mg->inputs, int, i));

      if (v->constant)
        continue;
      if (n_shapes >= GST_NN_TENSORS_MAX || !nnp_shape_is_static (&v->shape))
        return TRUE;            /* wait for caps */
      shapes[n_shapes].name = v->name;
      shapes[n_shapes].shape = v->shape;
      n_shapes++;
    }
  }

  graph = nnp_model_specialize (self->model, shapes, (int) n_shapes,
      NNP_SPECIALIZE_DEFAULT, error);
  if (graph == NULL)
    return FALSE;
  self->plan = make_plan (self, shapes, n_shapes, graph, error);
  if (self->plan == NULL) {
    nnp_graph_unref (graph);
    return FALSE;
  }
  if (self->plan->n_stages < 1 || self->plan->n_stages > MAX_STAGES) {
    g_set_error (error, NNP_ERROR, NNP_ERROR_PLAN,
        "the plan has %d stages, nnpipeline runs 1 to %d",
        self->plan->n_stages, MAX_STAGES);
    g_clear_pointer (&self->plan, nnp_plan_free);
    nnp_graph_unref (graph);
    return FALSE;
  }
  key = shapes_string (shapes, n_shapes);

  GST_OBJECT_LOCK (self);
  queue_size = self->queue_size;
  fallback = self->fallback;
  GST_OBJECT_UNLOCK (self);

  for (gint k = 0; k < self->plan->n_stages; k++) {
    /* a remote:// device: the stage runs on a server (docs/remote.md) */
    gboolean remote = g_str_has_prefix (self->plan->stages[k].device,
        "remote://");
    GstElement *stage = gst_element_factory_make (remote ? "nnremote" :
        "nnstage", NULL);
    gchar *name = g_strdup_printf ("stage%d", k);

    g_object_set (stage, "name", name, "model", self->model_file,
        "plan-object", self->plan, "stage", k, NULL);
    if (remote)
      g_object_set (stage, "hosts", self->plan->stages[k].device, NULL);
    else
      g_object_set (stage, "fallback", fallback, NULL);
    if (self->trace && !remote)
      g_object_set (stage, "trace", nnp_trace_get_path (self->trace), NULL);
    g_free (name);
    gst_bin_add (GST_BIN (self), stage);
    g_ptr_array_add (self->stage_elems, gst_object_ref (stage));
    if (prev) {
      GstElement *queue = gst_element_factory_make ("queue", NULL);

      name = g_strdup_printf ("queue%d", k - 1);
      g_object_set (queue, "name", name, "max-size-buffers", queue_size,
          "max-size-bytes", 0, "max-size-time", (guint64) 0, NULL);
      g_free (name);
      gst_bin_add (GST_BIN (self), queue);
      g_ptr_array_add (self->queues, gst_object_ref (queue));
      if (self->trace)
        queue_trace_attach (self, queue);
      gst_element_link_pads (prev, "src", queue, "sink");
      gst_element_link_pads (queue, "src", stage, "sink");
    }
    prev = stage;
  }

  {
    GstPad *first = gst_element_get_static_pad (g_ptr_array_index
        (self->stage_elems, 0), "sink");
    GstPad *last = gst_element_get_static_pad (prev, "src");

    gst_ghost_pad_set_target (GST_GHOST_PAD (self->srcpad), last);
    gst_ghost_pad_set_target (GST_GHOST_PAD (self->sinkpad), first);
    gst_object_unref (first);
    gst_object_unref (last);
  }

  if (sync) {
    /* downstream first, so that data meets running elements */
    for (gint k = self->plan->n_stages - 1; k >= 0; k--) {
      if (!gst_element_sync_state_with_parent (g_ptr_array_index
              (self->stage_elems, k))) {
        g_set_error (error, NNP_ERROR, NNP_ERROR_PLAN,
            "stage %d failed to start", k);
        g_free (key);
        nnp_graph_unref (graph);
        return FALSE;
      }
      if (k > 0)
        gst_element_sync_state_with_parent (g_ptr_array_index (self->queues,
                k - 1));
    }
  }

  g_mutex_lock (&self->stats_lock);
  g_ptr_array_set_size (self->stats_stages, 0);
  g_ptr_array_set_size (self->stats_queues, 0);
  for (guint i = 0; i < self->stage_elems->len; i++)
    g_ptr_array_add (self->stats_stages,
        gst_object_ref (g_ptr_array_index (self->stage_elems, i)));
  for (guint i = 0; i < self->queues->len; i++)
    g_ptr_array_add (self->stats_queues,
        gst_object_ref (g_ptr_array_index (self->queues, i)));
  g_mutex_unlock (&self->stats_lock);

  g_free (self->built_key);
  self->built_key = info ? gst_nn_tensors_info_to_string (info) :
      g_strdup (key);
  GST_INFO_OBJECT (self, "built %d stages for %s in %.1f ms",
      self->plan->n_stages, key, (g_get_monotonic_time () - t0) / 1000.0);
  post_plan (self, graph, key);
  g_free (key);
  nnp_graph_unref (graph);
  return TRUE;
}

/* Load the model named by the property (or the plan's).  Build lock held. */
static gboolean
load_model_locked (GstNnPipeline * self, GError ** error)
{
  gchar *path, *plan_path;

  GST_OBJECT_LOCK (self);
  path = g_strdup (self->model_path);
  plan_path = g_strdup (self->plan_path);
  GST_OBJECT_UNLOCK (self);

  if ((path == NULL || *path == '\0') && plan_path && *plan_path) {
    NnpPlan *plan = nnp_plan_load (plan_path, error);

    if (plan == NULL) {
      g_free (path);
      g_free (plan_path);
      return FALSE;
    }
    /* nnp_plan_load() resolved a relative model against the plan's folder */
    g_free (path);
    path = g_strdup (plan->model);
    nnp_plan_free (plan);
  }
  g_free (plan_path);
  if (path == NULL || *path == '\0') {
    g_set_error (error, NNP_ERROR, NNP_ERROR_IO,
        "no model file given: set the 'model' property");
    g_free (path);
    return FALSE;
  }
  self->model = nnp_model_load (path, error);
  if (self->model == NULL) {
    g_free (path);
    return FALSE;
  }
  g_free (self->model_file);
  self->model_file = path;
  return TRUE;
}

/* ------------------------------------------------------------------------ */
/* Statistics */

/* The stages' busy time and frames and the queues' fill, read without
 * stats_lock (the elements take their own locks). */
typedef struct
{
  guint n_stages, n_queues;
  guint64 busy[MAX_STAGES], frames[MAX_STAGES];
  guint levels[MAX_STAGES];
} StatsSample;

/* Take references to the stages and queues (stats_lock held by caller). */
static void
stats_elements_locked (GstNnPipeline * self, GstElement ** stages,
    GstElement ** queues, StatsSample * sample)
{
  sample->n_stages = MIN (self->stats_stages->len, MAX_STAGES);
  sample->n_queues = MIN (self->stats_queues->len, MAX_STAGES);
  for (guint k = 0; k < sample->n_stages; k++)
    stages[k] = gst_object_ref (g_ptr_array_index (self->stats_stages, k));
  for (guint i = 0; i < sample->n_queues; i++)
    queues[i] = gst_object_ref (g_ptr_array_index (self->stats_queues, i));
}

/* Read the elements and drop the references. */
static void
stats_read (GstElement ** stages, GstElement ** queues, StatsSample * sample)
{
  for (guint k = 0; k < sample->n_stages; k++) {
    g_object_get (stages[k], "busy-time", &sample->busy[k], "frames",
        &sample->frames[k], NULL);
    gst_object_unref (stages[k]);
  }
  for (guint i = 0; i < sample->n_queues; i++) {
    g_object_get (queues[i], "current-level-buffers", &sample->levels[i],
        NULL);
    gst_object_unref (queues[i]);
  }
}

/* Post an nnpipeline-stats message: periodic (the interval since the last
 * one) or final (the whole run, once, at EOS).  Called from the clock
 * thread and from a streaming thread: takes post_lock and stats_lock,
 * never build_lock (see the struct). */
static void
post_stats (GstNnPipeline * self, gboolean final)
{
  GstElement *stage_refs[MAX_STAGES], *queue_refs[MAX_STAGES];
  GValue stages = G_VALUE_INIT, queues = G_VALUE_INIT;
  StatsSample sample;
  GstStructure *s;
  gint64 before, now, dt;
  guint64 frames = 0;
  gdouble worst = -1.0;
  gint bottleneck = -1;

  g_mutex_lock (&self->post_lock);
  g_mutex_lock (&self->stats_lock);
  if (self->final_posted || self->stats_stages->len == 0) {
    g_mutex_unlock (&self->stats_lock);
    g_mutex_unlock (&self->post_lock);
    return;
  }
  if (final)
    self->final_posted = TRUE;
  stats_elements_locked (self, stage_refs, queue_refs, &sample);
  g_mutex_unlock (&self->stats_lock);

  /* busy time grows at most as fast as the clock: over [the previous read's
   * start, this read's end] no stage can be more than 100 % busy */
  before = g_get_monotonic_time ();
  stats_read (stage_refs, queue_refs, &sample);
  now = g_get_monotonic_time ();

  g_value_init (&stages, GST_TYPE_ARRAY);
  g_value_init (&queues, GST_TYPE_ARRAY);
  g_mutex_lock (&self->stats_lock);
  dt = final ? now - self->first_in : now - self->last_tick;
  if (dt <= 0)
    dt = 1;
  for (guint k = 0; k < sample.n_stages; k++) {
    guint64 busy = sample.busy[k], f = sample.frames[k];
    gdouble pct;
    GValue v = G_VALUE_INIT;
    GstStructure *ss;

    pct = final ? busy / 1000.0 / dt * 100.0 :
        (busy - MIN (busy, self->last_busy[k])) / 1000.0 / dt * 100.0;
    self->last_busy[k] = busy;
    if (pct > worst) {
      worst = pct;
      bottleneck = (gint) k;
    }
    if (k == sample.n_stages - 1)
      frames = f;
    ss = gst_structure_new ("stage", "index", G_TYPE_INT, (gint) k,
        "busy-percent", G_TYPE_DOUBLE, pct,
        "busy-ms", G_TYPE_DOUBLE, busy / 1e6,
        "frames", G_TYPE_UINT64, f,
        "ms-per-frame", G_TYPE_DOUBLE, f ? busy / 1e6 / f : 0.0, NULL);
    g_value_init (&v, GST_TYPE_STRUCTURE);
    gst_value_set_structure (&v, ss);
    gst_structure_free (ss);
    gst_value_array_append_and_take_value (&stages, &v);
  }
  for (guint i = 0; i < sample.n_queues; i++) {
    GValue v = G_VALUE_INIT;

    g_value_init (&v, G_TYPE_UINT);
    g_value_set_uint (&v, sample.levels[i]);
    gst_value_array_append_and_take_value (&queues, &v);
  }

  s = gst_structure_new ("nnpipeline-stats",
      "final", G_TYPE_BOOLEAN, final,
      "elapsed-ms", G_TYPE_DOUBLE, dt / 1000.0,
      "frames-in", G_TYPE_UINT64, self->frames_in,
      "frames-out", G_TYPE_UINT64, self->frames_out,
      "fps", G_TYPE_DOUBLE, final ? self->frames_out * 1e6 / dt :
      (frames - MIN (frames, self->last_frames)) * 1e6 / dt,
      "bottleneck-stage", G_TYPE_INT, bottleneck, NULL);
  /* steady-state rate: frames between the first and the last output, so the
   * time the first frame takes to fill the pipeline is not counted */
  if (final && self->frames_out > 1 && self->last_out > self->first_out)
    gst_structure_set (s, "steady-fps", G_TYPE_DOUBLE,
        (self->frames_out - 1) * 1e6 / (self->last_out - self->first_out), NULL);
  self->last_frames = frames;
  self->last_tick = before;
  g_mutex_unlock (&self->stats_lock);

  gst_structure_take_value (s, "stages", &stages);
  gst_structure_take_value (s, "queues", &queues);
  GST_DEBUG_OBJECT (self, "%" GST_PTR_FORMAT, s);
  gst_element_post_message (GST_ELEMENT (self),
      gst_message_new_element (GST_OBJECT (self), s));
  g_mutex_unlock (&self->post_lock);
}

static gboolean
stats_tick (GstClock * clock, GstClockTime time, GstClockID id,
    gpointer user_data)
{
  post_stats (GST_NN_PIPELINE (user_data), FALSE);
  return TRUE;
}

static void
stats_start (GstNnPipeline * self)
{
  GstClock *clock;
  guint interval;

  GST_OBJECT_LOCK (self);
  interval = self->stats_interval;
  GST_OBJECT_UNLOCK (self);
  if (interval == 0)
    return;

  clock = gst_system_clock_obtain ();
  g_mutex_lock (&self->post_lock);
  g_mutex_lock (&self->stats_lock);
  if (self->stats_id == NULL) {
    GstClockTime period = interval * GST_MSECOND;
    GstElement *stage_refs[MAX_STAGES], *queue_refs[MAX_STAGES];
    StatsSample sample;

    /* the first interval starts now: work done before (prerolling in
     * PAUSED, an earlier PLAYING) is not counted in it */
    gint64 before;

    stats_elements_locked (self, stage_refs, queue_refs, &sample);
    g_mutex_unlock (&self->stats_lock);
    before = g_get_monotonic_time ();
    stats_read (stage_refs, queue_refs, &sample);
    g_mutex_lock (&self->stats_lock);
    for (guint k = 0; k < sample.n_stages; k++)
      self->last_busy[k] = sample.busy[k];
    self->last_frames = sample.n_stages ?
        sample.frames[sample.n_stages - 1] : 0;
    self->last_tick = before;
    self->stats_id = gst_clock_new_periodic_id (clock,
        gst_clock_get_time (clock) + period, period);
    gst_clock_id_wait_async (self->stats_id, stats_tick, gst_object_ref (self),
        (GDestroyNotify) gst_object_unref);
  }
  g_mutex_unlock (&self->stats_lock);
  g_mutex_unlock (&self->post_lock);
  gst_object_unref (clock);
}

static void
stats_stop (GstNnPipeline * self)
{
  GstClockID id;

  g_mutex_lock (&self->stats_lock);
  id = self->stats_id;
  self->stats_id = NULL;
  g_mutex_unlock (&self->stats_lock);
  if (id) {
    gst_clock_id_unschedule (id);
    gst_clock_id_unref (id);
  }
}

static GstPadProbeReturn
sink_probe (GstPad * pad, GstPadProbeInfo * info, gpointer user_data)
{
  GstNnPipeline *self = GST_NN_PIPELINE (user_data);

  g_mutex_lock (&self->stats_lock);
  if (self->frames_in++ == 0)
    self->first_in = g_get_monotonic_time ();
  g_mutex_unlock (&self->stats_lock);
  return GST_PAD_PROBE_OK;
}

static GstPadProbeReturn
src_probe (GstPad * pad, GstPadProbeInfo * info, gpointer user_data)
{
  GstNnPipeline *self = GST_NN_PIPELINE (user_data);

  if (info->type & GST_PAD_PROBE_TYPE_BUFFER) {
    gint64 now = g_get_monotonic_time ();

    g_mutex_lock (&self->stats_lock);
    if (self->frames_out++ == 0)
      self->first_out = now;
    self->last_out = now;
    g_mutex_unlock (&self->stats_lock);
  } else if (GST_IS_EVENT (info->data)
      && GST_EVENT_TYPE (GST_EVENT (info->data)) == GST_EVENT_EOS) {
    /* no periodic message after the final one */
    stats_stop (self);
    post_stats (self, TRUE);
  } else if (GST_IS_EVENT (info->data)
      && GST_EVENT_TYPE (GST_EVENT (info->data)) == GST_EVENT_FLUSH_STOP) {
    /* a flushing seek after EOS: the stream goes on, and so do the stats */
    gboolean playing;

    g_mutex_lock (&self->post_lock);
    g_mutex_lock (&self->stats_lock);
    self->final_posted = FALSE;
    g_mutex_unlock (&self->stats_lock);
    g_mutex_unlock (&self->post_lock);
    GST_OBJECT_LOCK (self);
    playing = GST_STATE (self) == GST_STATE_PLAYING
        && GST_STATE_PENDING (self) == GST_STATE_VOID_PENDING;
    GST_OBJECT_UNLOCK (self);
    if (playing)
      stats_start (self);
  }
  return GST_PAD_PROBE_OK;
}

/* ------------------------------------------------------------------------ */
/* Ghost pads */

static gboolean
gst_nn_pipeline_sink_event (GstPad * pad, GstObject * parent, GstEvent * event)
{
  GstNnPipeline *self = GST_NN_PIPELINE (parent);

  if (GST_EVENT_TYPE (event) == GST_EVENT_CAPS) {
    GstCaps *caps;
    GstNnTensorsInfo info;
    GError *err = NULL;
    gboolean ok = TRUE;

    gst_event_parse_caps (event, &caps);
    g_mutex_lock (&self->build_lock);
    if (self->refused_caps && gst_caps_is_equal (caps, self->refused_caps)) {
      /* upstream retries the refused CAPS event with every buffer: the
       * error was posted for the first one */
      g_mutex_unlock (&self->build_lock);
      GST_DEBUG_OBJECT (self, "caps refused before: %" GST_PTR_FORMAT, caps);
      gst_event_unref (event);
      return FALSE;
    }
    if (self->model == NULL) {
      ok = FALSE;
      g_set_error (&err, NNP_ERROR, NNP_ERROR_FAILED, "no model loaded");
    } else if (!gst_nn_tensors_info_from_caps (&info, caps, &err)) {
      ok = FALSE;
    } else if (self->plan == NULL) {
      ok = build_locked (self, &info, TRUE, &err);
    } else {
      gchar *s = gst_nn_tensors_info_to_string (&info);

      if (g_strcmp0 (s, self->built_key) != 0)
        GST_INFO_OBJECT (self, "input now %s (stages built for %s): the "
            "stages re-specialise the model", s, self->built_key);
      g_free (s);
    }
    if (!ok)
      gst_caps_replace (&self->refused_caps, caps);
    g_mutex_unlock (&self->build_lock);
    if (!ok) {
      GST_ELEMENT_ERROR (self, CORE, NEGOTIATION, ("%s", err->message),
          ("input caps %" GST_PTR_FORMAT, caps));
      g_clear_error (&err);
      gst_event_unref (event);
      return FALSE;
    }
  } else if (GST_EVENT_TYPE (event) == GST_EVENT_EOS) {
    GstPad *target = gst_ghost_pad_get_target (GST_GHOST_PAD (pad));

    /* no stages yet (EOS before any caps or buffer): nothing inside would
     * forward it, and downstream would wait for it forever */
    if (target == NULL)
      return gst_pad_push_event (self->srcpad, event);
    gst_object_unref (target);
  }
  return gst_pad_event_default (pad, parent, event);
}

/* Without stages yet, answer caps queries as a whole-model nnstage. */
static gboolean
gst_nn_pipeline_pad_query (GstPad * pad, GstObject * parent, GstQuery * query)
{
  GstNnPipeline *self = GST_NN_PIPELINE (parent);
  GstPad *target = gst_ghost_pad_get_target (GST_GHOST_PAD (pad));
  GstCaps *caps = NULL, *filter, *tmpl;

  if (target) {
    gst_object_unref (target);
    return gst_pad_query_default (pad, parent, query);
  }

  switch (GST_QUERY_TYPE (query)) {
    case GST_QUERY_CAPS:
      gst_query_parse_caps (query, &filter);
      g_mutex_lock (&self->build_lock);
      if (pad == self->sinkpad && self->model)
        caps = gst_nn_stage_model_sink_caps_filtered (self->model, filter);
      g_mutex_unlock (&self->build_lock);
      if (caps == NULL)
        caps = gst_pad_get_pad_template_caps (pad);
      else
        filter = NULL;          /* applied */
      if (filter) {
        GstCaps *tmp = gst_caps_intersect_full (filter, caps,
            GST_CAPS_INTERSECT_FIRST);

        gst_caps_unref (caps);
        caps = tmp;
      }
      gst_query_set_caps_result (query, caps);
      gst_caps_unref (caps);
      return TRUE;
    case GST_QUERY_ACCEPT_CAPS:
      gst_query_parse_accept_caps (query, &caps);
      tmpl = gst_pad_get_pad_template_caps (pad);
      gst_query_set_accept_caps_result (query, gst_caps_can_intersect (tmpl,
              caps));
      gst_caps_unref (tmpl);
      return TRUE;
    default:
      return gst_pad_query_default (pad, parent, query);
  }
}

/* ------------------------------------------------------------------------ */
/* GstElement */

static gboolean
valid_stages (const gchar * str)
{
  gchar *end = NULL;
  gint64 v;

  if (str == NULL || g_ascii_strcasecmp (str, "auto") == 0)
    return TRUE;
  v = g_ascii_strtoll (str, &end, 10);
  return end != str && *end == '\0' && v >= 1 && v <= MAX_STAGES;
}

/* The properties a start must refuse (an error naming the property and
 * the value), before anything is loaded. */
static gboolean
check_properties (GstNnPipeline * self, GError ** error)
{
  gchar *stages, *devices, **items = NULL;
  gboolean ok = TRUE;

  GST_OBJECT_LOCK (self);
  stages = g_strdup (self->stages);
  devices = g_strdup (self->devices);
  GST_OBJECT_UNLOCK (self);

  if (!valid_stages (stages)) {
    g_set_error (error, NNP_ERROR, NNP_ERROR_INVALID, "invalid value \"%s\" "
        "for property 'stages': expected \"auto\" or a number of stages from 1 "
        "to %d", stages, MAX_STAGES);
    ok = FALSE;
  }
  /* the syntax of each device here, whether it is there when planning */
  if (ok && devices && *devices)
    items = g_strsplit (devices, ",", -1);
  for (guint i = 0; ok && items && items[i]; i++) {
    GError *err = NULL;

    if (!nnp_device_spec_parse (items[i], NULL, NULL, &err)) {
      g_set_error (error, NNP_ERROR, NNP_ERROR_INVALID, "invalid value \"%s\" "
          "for property 'devices': item %u: %s", devices, i, err->message);
      g_error_free (err);
      ok = FALSE;
    }
  }
  g_strfreev (items);
  g_free (stages);
  g_free (devices);
  return ok;
}

/* Open the trace of the 'trace' property or NNP_TRACE, if any (build_lock). */
static gboolean
trace_open_locked (GstNnPipeline * self, GError ** error)
{
  gchar *path;

  GST_OBJECT_LOCK (self);
  path = g_strdup (self->trace_path ? self->trace_path : nnp_trace_env_path ());
  GST_OBJECT_UNLOCK (self);
  if (path && self->trace == NULL)
    self->trace = nnp_trace_open (path, 0, error);
  g_free (path);
  return path == NULL || self->trace != NULL;
}

/* Close it (after the stages and queues are gone): the last of the trace's
 * users writes the file (build_lock). */
static gboolean
trace_close_locked (GstNnPipeline * self, GError ** error)
{
  if (self->trace == NULL)
    return TRUE;
  return nnp_trace_close (g_steal_pointer (&self->trace), error);
}

static GstStateChangeReturn
gst_nn_pipeline_change_state (GstElement * element, GstStateChange transition)
{
  GstNnPipeline *self = GST_NN_PIPELINE (element);
  GstStateChangeReturn ret;
  GError *err = NULL;
  gboolean ok = TRUE;

  switch (transition) {
    case GST_STATE_CHANGE_READY_TO_PAUSED:
      if (!check_properties (self, &err))
        goto bad_property;
      g_mutex_lock (&self->stats_lock);
      self->final_posted = FALSE;
      self->frames_in = self->frames_out = 0;
      self->first_in = self->first_out = self->last_out = 0;
      self->last_frames = 0;
      memset (self->last_busy, 0, sizeof (self->last_busy));
      g_mutex_unlock (&self->stats_lock);
      g_mutex_lock (&self->build_lock);
      ok = trace_open_locked (self, &err);
      if (ok)
        ok = load_model_locked (self, &err);
      /* static input shapes: build now, caps queries then reach the stages */
      if (ok)
        ok = build_locked (self, NULL, FALSE, &err);
      g_mutex_unlock (&self->build_lock);
      if (!ok)
        goto build_failed;
      break;
    case GST_STATE_CHANGE_PAUSED_TO_PLAYING:
      stats_start (self);
      break;
    default:
      break;
  }

  ret = GST_ELEMENT_CLASS (gst_nn_pipeline_parent_class)->change_state
      (element, transition);
  if (ret == GST_STATE_CHANGE_FAILURE)
    return ret;

  switch (transition) {
    case GST_STATE_CHANGE_PLAYING_TO_PAUSED:
      stats_stop (self);
      break;
    case GST_STATE_CHANGE_PAUSED_TO_READY:
      stats_stop (self);
      g_mutex_lock (&self->build_lock);
      teardown_locked (self);
      g_clear_pointer (&self->model, nnp_model_unref);
      ok = trace_close_locked (self, &err);
      g_mutex_unlock (&self->build_lock);
      if (!ok)
        goto trace_failed;
      break;
    default:
      break;
  }
  return ret;

  /* ERRORS */
trace_failed:
  {
    GST_ELEMENT_ERROR (self, RESOURCE, WRITE, ("%s", err->message), (NULL));
    g_clear_error (&err);
    return GST_STATE_CHANGE_FAILURE;
  }
bad_property:
  {
    GST_ELEMENT_ERROR (self, RESOURCE, SETTINGS, ("%s", err->message),
        (NULL));
    g_clear_error (&err);
    return GST_STATE_CHANGE_FAILURE;
  }
build_failed:
  {
    GST_ELEMENT_ERROR (self, RESOURCE, SETTINGS, ("%s", err->message),
        (NULL));
    g_clear_error (&err);
    g_mutex_lock (&self->build_lock);
    teardown_locked (self);
    g_clear_pointer (&self->model, nnp_model_unref);
    trace_close_locked (self, NULL);
    g_mutex_unlock (&self->build_lock);
    return GST_STATE_CHANGE_FAILURE;
  }
}

/* ------------------------------------------------------------------------ */
/* GObject */

static void
gst_nn_pipeline_set_property (GObject * object, guint prop_id,
    const GValue * value, GParamSpec * pspec)
{
  GstNnPipeline *self = GST_NN_PIPELINE (object);

  GST_OBJECT_LOCK (self);
  switch (prop_id) {
    case PROP_MODEL:
      g_free (self->model_path);
      self->model_path = g_value_dup_string (value);
      break;
    case PROP_STAGES:
      /* checked at start (an error there names the property) */
      g_free (self->stages);
      self->stages = g_value_dup_string (value);
      break;
    case PROP_DEVICES:
      g_free (self->devices);
      self->devices = g_value_dup_string (value);
      break;
    case PROP_PLAN:
      g_free (self->plan_path);
      self->plan_path = g_value_dup_string (value);
      break;
    case PROP_QUEUE_SIZE:
      self->queue_size = g_value_get_uint (value);
      break;
    case PROP_CUTS:
      g_free (self->cuts);
      self->cuts = g_value_dup_string (value);
      break;
    case PROP_STATS_INTERVAL:
      self->stats_interval = g_value_get_uint (value);
      break;
    case PROP_PIN:
      self->pin = g_value_get_boolean (value);
      break;
    case PROP_FALLBACK:
      self->fallback = g_value_get_boolean (value);
      break;
    case PROP_STAGE_LOAD:
      g_free (self->stage_load);
      self->stage_load = g_value_dup_string (value);
      break;
    case PROP_TRACE:
      g_free (self->trace_path);
      self->trace_path = g_value_dup_string (value);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
  GST_OBJECT_UNLOCK (self);
}

static void
gst_nn_pipeline_get_property (GObject * object, guint prop_id, GValue * value,
    GParamSpec * pspec)
{
  GstNnPipeline *self = GST_NN_PIPELINE (object);

  GST_OBJECT_LOCK (self);
  switch (prop_id) {
    case PROP_MODEL:
      g_value_set_string (value, self->model_path);
      break;
    case PROP_STAGES:
      g_value_set_string (value, self->stages);
      break;
    case PROP_DEVICES:
      g_value_set_string (value, self->devices);
      break;
    case PROP_PLAN:
      g_value_set_string (value, self->plan_path);
      break;
    case PROP_QUEUE_SIZE:
      g_value_set_uint (value, self->queue_size);
      break;
    case PROP_CUTS:
      g_value_set_string (value, self->cuts);
      break;
    case PROP_STATS_INTERVAL:
      g_value_set_uint (value, self->stats_interval);
      break;
    case PROP_PIN:
      g_value_set_boolean (value, self->pin);
      break;
    case PROP_FALLBACK:
      g_value_set_boolean (value, self->fallback);
      break;
    case PROP_STAGE_LOAD:
      g_value_set_string (value, self->stage_load);
      break;
    case PROP_TRACE:
      g_value_set_string (value, self->trace_path);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
  GST_OBJECT_UNLOCK (self);
}

static void
gst_nn_pipeline_finalize (GObject * object)
{
  GstNnPipeline *self = GST_NN_PIPELINE (object);

  stats_stop (self);
  g_ptr_array_unref (self->stage_elems);
  g_ptr_array_unref (self->queues);
  g_ptr_array_unref (self->stats_stages);
  g_ptr_array_unref (self->stats_queues);
  gst_caps_replace (&self->refused_caps, NULL);
  g_clear_pointer (&self->plan, nnp_plan_free);
  g_clear_pointer (&self->model, nnp_model_unref);
  g_free (self->model_file);
  g_free (self->built_key);
  g_free (self->model_path);
  g_free (self->stages);
  g_free (self->devices);
  g_free (self->plan_path);
  g_free (self->cuts);
  g_free (self->stage_load);
  g_free (self->trace_path);
  g_mutex_clear (&self->build_lock);
  g_mutex_clear (&self->stats_lock);
  g_mutex_clear (&self->post_lock);

  G_OBJECT_CLASS (gst_nn_pipeline_parent_class)->finalize (object);
}

static void
gst_nn_pipeline_class_init (GstNnPipelineClass * klass)
{
  GObjectClass *gobject_class = G_OBJECT_CLASS (klass);
  GstElementClass *element_class = GST_ELEMENT_CLASS (klass);

  GST_DEBUG_CATEGORY_INIT (gst_nn_pipeline_debug, "nnpipeline", 0,
      "nnpipe model pipeline");

  gobject_class->set_property = gst_nn_pipeline_set_property;
  gobject_class->get_property = gst_nn_pipeline_get_property;
  gobject_class->finalize = gst_nn_pipeline_finalize;

  /**
   * GstNnPipeline:model:
   *
   * Path of the ONNX model file (or unset with #GstNnPipeline:plan: the
   * plan's model).
   */
  g_object_class_install_property (gobject_class, PROP_MODEL,
      g_param_spec_string ("model", "Model", "Path of the ONNX model file",
          DEFAULT_MODEL, G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_READY));

  /**
   * GstNnPipeline:stages:
   *
   * Number of stages, or "auto": as many as devices (the split may use
   * fewer when that is not slower).
   */
  g_object_class_install_property (gobject_class, PROP_STAGES,
      g_param_spec_string ("stages", "Stages",
          "Number of stages (1 to 64) or \"auto\"", DEFAULT_STAGES,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_READY));

  /**
   * GstNnPipeline:devices:
   *
   * Devices of the stages, comma-separated: "cpu" or "cpu:THREADS", and
   * "opencl", "opencl:N" or "opencl:NAME" (an OpenCL device by index or
   * name, never a thread count), e.g. "cpu:1,cpu:1" or "cpu,opencl".
   * Stage k uses item k, the last item repeats.  Parsed as `nnpipe split
   * --devices` (nnp_device_specs_parse()); OpenCL stages are planned with
   * the partitioner's OpenCL costs.  Unset: one single-thread CPU stage
   * per stage (with stages=auto, one per core).
   */
  g_object_class_install_property (gobject_class, PROP_DEVICES,
      g_param_spec_string ("devices", "Devices",
          "Devices of the stages: cpu[:THREADS] or opencl[:N|:NAME], "
          "comma-separated, e.g. \"cpu:1,cpu:1\" or \"cpu,opencl\" (unset: "
          "cpu:1 per stage)", DEFAULT_DEVICES,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_READY));

  /**
   * GstNnPipeline:plan:
   *
   * Path of a plan file (JSON) to load instead of computing a split.
   */
  g_object_class_install_property (gobject_class, PROP_PLAN,
      g_param_spec_string ("plan", "Plan",
          "Path of a plan file (JSON) to load instead of computing a split",
          DEFAULT_PLAN, G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_READY));

  /**
   * GstNnPipeline:queue-size:
   *
   * max-size-buffers of each queue between stages.
   */
  g_object_class_install_property (gobject_class, PROP_QUEUE_SIZE,
      g_param_spec_uint ("queue-size", "Queue size",
          "Buffers each queue between stages holds at most", 1, 1024,
          DEFAULT_QUEUE_SIZE, G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_READY));

  /**
   * GstNnPipeline:cuts:
   *
   * Manual split: where stages start, as topological node indices of the
   * specialised graph ("10,20": stages [0,10) [10,20) [20,n)) or node
   * names.
   */
  g_object_class_install_property (gobject_class, PROP_CUTS,
      g_param_spec_string ("cuts", "Cuts",
          "Manual split: node indices (\"10,20\") or names where stages start",
          DEFAULT_CUTS, G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_READY));

  /**
   * GstNnPipeline:stats-interval:
   *
   * Milliseconds between `nnpipeline-stats` messages (0: none; the final
   * one at EOS is always posted).
   */
  g_object_class_install_property (gobject_class, PROP_STATS_INTERVAL,
      g_param_spec_uint ("stats-interval", "Stats interval",
          "Milliseconds between nnpipeline-stats messages (0 = off)", 0,
          G_MAXUINT, DEFAULT_STATS_INTERVAL,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_READY));

  /**
   * GstNnPipeline:pin:
   *
   * Pin the threads of stages the plan does not pin to consecutive cores
   * (stage 0 on core 0, ...).
   */
  g_object_class_install_property (gobject_class, PROP_PIN,
      g_param_spec_boolean ("pin", "Pin",
          "Pin stages the plan does not pin to consecutive cores",
          DEFAULT_PIN, G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_READY));

  /**
   * GstNnPipeline:fallback:
   *
   * Stages on an OpenCL device that is missing or cannot run them run on
   * the CPU instead, with a warning (#GstNnStage:fallback).  A missing
   * device of #GstNnPipeline:devices or of a plan file is replaced by
   * "cpu" before planning.
   */
  g_object_class_install_property (gobject_class, PROP_FALLBACK,
      g_param_spec_boolean ("fallback", "Fallback",
          "Run OpenCL stages on the CPU (with a warning) when their device "
          "is missing or cannot run them", DEFAULT_FALLBACK,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_READY));

  /**
   * GstNnPipeline:stage-load:
   *
   * Other work sharing each stage's core, as fractions of the whole
   * model's time, for the automatic split: "0,0.6" = the second of two
   * stages also runs something taking 0.6 of this model's time (a second
   * model downstream in the same thread, e.g. the text recogniser after
   * the detector), so it gets fewer of this model's nodes.
   */
  g_object_class_install_property (gobject_class, PROP_STAGE_LOAD,
      g_param_spec_string ("stage-load", "Stage load",
          "Automatic split: other work on each stage's core, as fractions of "
          "the model's time (\"0,0.6\")", DEFAULT_STAGE_LOAD,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_READY));

  /**
   * GstNnPipeline:trace:
   *
   * Record which stage ran which frame when, and the level of every queue
   * between stages, into one Chrome trace-event JSON file (Perfetto,
   * chrome://tracing, `nnpipe timeline FILE -o timeline.svg`), written when
   * the element goes back to READY.  Unset: $NNP_TRACE, if set.
   */
  g_object_class_install_property (gobject_class, PROP_TRACE,
      g_param_spec_string ("trace", "Trace",
          "Write a Chrome trace-event JSON file of the stages' runs and the "
          "queue levels (default: $NNP_TRACE)", DEFAULT_TRACE,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_READY));

  gst_element_class_add_static_pad_template (element_class, &sink_template);
  gst_element_class_add_static_pad_template (element_class, &src_template);
  gst_element_class_set_static_metadata (element_class,
      "Neural network pipeline", "Filter/Tensor",
      "Runs an ONNX model as a pipeline of device-bound stages",
      "nnpipe developers");

  element_class->change_state =
      GST_DEBUG_FUNCPTR (gst_nn_pipeline_change_state);
}

static void
gst_nn_pipeline_init (GstNnPipeline * self)
{
  GstPadTemplate *tmpl;

  g_mutex_init (&self->build_lock);
  g_mutex_init (&self->stats_lock);
  g_mutex_init (&self->post_lock);
  self->stats_stages = g_ptr_array_new_with_free_func (gst_object_unref);
  self->stats_queues = g_ptr_array_new_with_free_func (gst_object_unref);
  self->stages = g_strdup (DEFAULT_STAGES);
  self->queue_size = DEFAULT_QUEUE_SIZE;
  self->stats_interval = DEFAULT_STATS_INTERVAL;
  self->pin = DEFAULT_PIN;
  self->fallback = DEFAULT_FALLBACK;
  self->stage_elems = g_ptr_array_new_with_free_func (gst_object_unref);
  self->queues = g_ptr_array_new_with_free_func (gst_object_unref);

  tmpl = gst_static_pad_template_get (&sink_template);
  self->sinkpad = gst_ghost_pad_new_no_target_from_template ("sink", tmpl);
  gst_object_unref (tmpl);
  gst_pad_set_event_function (self->sinkpad,
      GST_DEBUG_FUNCPTR (gst_nn_pipeline_sink_event));
  gst_pad_set_query_function (self->sinkpad,
      GST_DEBUG_FUNCPTR (gst_nn_pipeline_pad_query));
  gst_pad_add_probe (self->sinkpad, GST_PAD_PROBE_TYPE_BUFFER, sink_probe,
      self, NULL);
  gst_element_add_pad (GST_ELEMENT (self), self->sinkpad);

  tmpl = gst_static_pad_template_get (&src_template);
  self->srcpad = gst_ghost_pad_new_no_target_from_template ("src", tmpl);
  gst_object_unref (tmpl);
  gst_pad_set_query_function (self->srcpad,
      GST_DEBUG_FUNCPTR (gst_nn_pipeline_pad_query));
  gst_pad_add_probe (self->srcpad, GST_PAD_PROBE_TYPE_BUFFER |
      GST_PAD_PROBE_TYPE_EVENT_DOWNSTREAM | GST_PAD_PROBE_TYPE_EVENT_FLUSH,
      src_probe, self, NULL);
  gst_element_add_pad (GST_ELEMENT (self), self->srcpad);
}
