/* GStreamer nnpipe plugin: nnpipeline, building the stages
 *
 * This library is free software; you can redistribute it and/or
 * modify it under the terms of the GNU Library General Public
 * License as published by the Free Software Foundation; either
 * version 2.1 of the License, or (at your option) any later version.
 */

/* The plan (nnp_plan_make(), the same call as `nnpipe split`), the nnstage
 * and queue elements it needs, the nnpipeline-plan message, the model and
 * the trace file.  Everything here runs with build_lock held. */

#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "gstnnpipeline-private.h"
#include "gstnnreplicas.h"
#include "gstnnstage.h"

#include <nnpipe/remote.h>
#include <string.h>

#define GST_CAT_DEFAULT gst_nn_pipeline_debug

/* Trace of one queue's level: buffers in minus buffers out, counted by
 * probes on its pads (no lock, no property read on the streaming path). */
typedef struct
{
  NnpTrace *trace; /* not owned: closed after the queues are gone */
  gint counter;
  gint level; /* atomic */
} QueueTrace;

static GstPadProbeReturn
queue_trace_probe (GstPad *pad, GstPadProbeInfo *info, gpointer user_data)
{
  QueueTrace *qt = user_data;
  gint delta = GST_PAD_IS_SINK (pad) ? 1 : -1;
  gint level = g_atomic_int_add (&qt->level, delta) + delta;

  nnp_trace_counter (qt->trace, qt->counter, level, nnp_trace_now ());
  return GST_PAD_PROBE_OK;
}

static void
queue_trace_attach (GstNnPipeline *self, GstElement *queue)
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

/* Bytes a stage hands to the next one (its outputs). */
static gint64
stage_out_bytes (NnpGraph *graph, const NnpPlanStage *st)
{
  gint64 bytes = 0;

  for (gint i = 0; i < st->n_outputs; i++) {
    const NnpValue *v = nnp_graph_find_value (graph, st->outputs[i]);

    if (v && nnp_shape_numel (&v->shape) > 0)
      bytes += nnp_shape_numel (&v->shape) * (gint64) nnp_dtype_size (v->dtype);
  }
  return bytes;
}

/* What planning changed of what was asked, as a warning: fallback=true
 * replacing an OpenCL device by the CPU, a remote device planned without its
 * server's costs. */
static void
plan_notice (int stage, const char *message, gpointer user_data)
{
  GstNnPipeline *self = GST_NN_PIPELINE (user_data);

  GST_ELEMENT_WARNING (self, RESOURCE, NOT_FOUND, ("%s", message), (NULL));
}

/* A remote server's answer (its link and node costs), in the log. */
static void
plan_answered (int stage, const char *message, gpointer user_data)
{
  GST_INFO_OBJECT (user_data, "%s", message);
}

/* Compute (or load) the plan for these model input shapes: the request is
 * the properties, the policy is nnp_plan_make()'s (the same as `nnpipe
 * split`).  New plan (and *graph, the specialised graph it refers to) or
 * NULL with error.  Call with build_lock held. */
static NnpPlan *
make_plan (GstNnPipeline *self, const NnpInputShape *shapes, guint n_shapes,
    NnpGraph **graph, GError **error)
{
  NnpPlanRequest req = { 0 };
  gchar *stages, *devices, *plan_path, *cuts, *stage_load;
  NnpPlan *plan;

  GST_OBJECT_LOCK (self);
  stages = g_strdup (self->stages);
  devices = g_strdup (self->devices);
  plan_path = g_strdup (self->plan_path);
  cuts = g_strdup (self->cuts);
  stage_load = g_strdup (self->stage_load);
  req.pin = self->pin;
  req.fallback = self->fallback;
  req.max_replicas = (int) self->max_replicas;
  GST_OBJECT_UNLOCK (self);

  req.model_path = self->model_file;
  req.plan_path = plan_path;
  /* checked by check_properties() at start */
  if (stages && g_ascii_strcasecmp (stages, "auto") != 0)
    req.n_stages = (gint) g_ascii_strtoll (stages, NULL, 10);
  req.devices = devices;
  req.cuts = cuts;
  req.stage_load = stage_load;
  req.cost = NNP_COST_AUTO;
  req.notice = plan_notice;
  req.notice_data = self;
  /* remote:// devices: their servers are asked (window 4, no token); a
   * server that does not answer or refuses: the stage is planned with this
   * host's CPU costs, said in a warning (plan_notice); the stage itself
   * then connects (or fails) as usual */
  req.remote.strict = FALSE;
  req.remote.answered = plan_answered;
  req.remote.answered_data = self;
  plan =
      nnp_plan_make (self->model, shapes, (int) n_shapes, &req, graph, error);

  g_free (stages);
  g_free (devices);
  g_free (plan_path);
  g_free (cuts);
  g_free (stage_load);
  return plan;
}

/* The plan as an element message (and in the log). */
static void
post_plan (GstNnPipeline *self, NnpGraph *graph, const gchar *shapes)
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
    ss = gst_structure_new ("stage", "index", G_TYPE_INT, k, "device",
        G_TYPE_STRING, st->device, "threads", G_TYPE_INT, st->threads,
        "replicas", G_TYPE_INT, MAX (st->replicas, 1), "cpus", G_TYPE_STRING,
        cpus->str, "nodes", G_TYPE_INT, st->n_nodes, "first-node",
        G_TYPE_STRING, st->n_nodes ? st->nodes[0] : "", "last-node",
        G_TYPE_STRING, st->n_nodes ? st->nodes[st->n_nodes - 1] : "", "inputs",
        G_TYPE_INT, st->n_inputs, "outputs", G_TYPE_INT, st->n_outputs,
        "predicted-ms", G_TYPE_DOUBLE, st->predicted_ms, "crossing-bytes",
        G_TYPE_INT64,
        k + 1 < plan->n_stages ? stage_out_bytes (graph, st) : (gint64) 0,
        NULL);
    g_string_free (cpus, TRUE);
    g_value_init (&v, GST_TYPE_STRUCTURE);
    gst_value_set_structure (&v, ss);
    gst_structure_free (ss);
    gst_value_array_append_and_take_value (&stages, &v);
  }

  s = gst_structure_new ("nnpipeline-plan", "model", G_TYPE_STRING,
      self->model_file, "shapes", G_TYPE_STRING, shapes, "n-stages", G_TYPE_INT,
      plan->n_stages, "method", G_TYPE_STRING,
      plan->method ? plan->method : "plan", "cost", G_TYPE_STRING,
      plan->cost ? plan->cost : "", "predicted-bottleneck-ms", G_TYPE_DOUBLE,
      plan->predicted_bottleneck_ms, "bottleneck-stage", G_TYPE_INT,
      plan->bottleneck_stage, NULL);
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
void
gst_nn_pipeline_teardown_locked (GstNnPipeline *self)
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
  g_clear_pointer (&self->graph, nnp_graph_unref);
  g_clear_pointer (&self->next_plan, nnp_plan_free);
  g_clear_pointer (&self->built_key, g_free);
  gst_caps_replace (&self->refused_caps, NULL);

  gst_nn_pipeline_stats_set_elements (self, NULL, NULL);
}

typedef struct
{
  GstNnPipeline *self;
  gint k;
  gboolean fallback;
} MakeStage;

/* The nnstage of stage k (or of one of its replicas).  Floating ref. */
static GstElement *
make_stage (gpointer user_data, guint r)
{
  MakeStage *ms = user_data;
  const NnpPlanStage *ps = &ms->self->plan->stages[ms->k];
  const gchar *device = ps->device;
  /* a remote:// device: the stage runs on a server (docs/remote.md) */
  gboolean remote = nnp_device_spec_remote_address (device) != NULL;
  GstElement *stage =
      gst_element_factory_make (remote ? "nnremote" : "nnstage", NULL);
  gint threads = MAX (ps->threads, 1);
  NnpPlan *own = NULL; /* owned: replica r's cores */

  if (ps->replicas > 1 && ps->n_cpus >= threads * ps->replicas) {
    /* a pinned replicated stage: replica r on cpus [r * threads, (r + 1) *
     * threads) of the stage's (pin=true, or a plan file's list) */
    NnpPlanStage *os;

    own = nnp_plan_copy (ms->self->plan);
    os = &own->stages[ms->k];
    memmove (os->cpus, os->cpus + r * threads, threads * sizeof (int));
    os->n_cpus = threads;
  }
  g_object_set (stage, "model", ms->self->model_file, "plan-object",
      own ? own : ms->self->plan, "stage", ms->k, NULL);
  nnp_plan_free (own); /* nnstage copied it */
  if (remote)
    g_object_set (stage, "hosts", device, NULL);
  else
    g_object_set (stage, "fallback", ms->fallback, NULL);
  if (ms->self->trace && !remote)
    g_object_set (stage, "trace", nnp_trace_get_path (ms->self->trace), NULL);
  if (ms->k == 0 && !remote)
    g_object_set (stage, "inference-interval", ms->self->inference_interval,
        NULL);
  return stage;
}

/* Specialise, plan and create the stages for these inputs (NULL: the
 * model's static declared shapes).  sync: bring the new elements to the
 * bin's state (when built while streaming).  Call with build_lock held. */
gboolean
gst_nn_pipeline_build_locked (GstNnPipeline *self, const GstNnTensorsInfo *info,
    gboolean sync, GError **error)
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
        return TRUE; /* wait for caps */
      shapes[n_shapes].name = v->name;
      shapes[n_shapes].shape = v->shape;
      n_shapes++;
    }
  }

  /* a switch of gstnnpipeline-rebalance.c brings its plan */
  self->plan = g_steal_pointer (&self->next_plan);
  if (self->plan) {
    NnpInputShape *ps;
    gint n_ps = 0;

    ps = nnp_plan_get_input_shapes (self->plan, &n_ps);
    graph = nnp_model_specialize (self->model, ps, n_ps,
        self->plan->no_fusion ? NNP_SPECIALIZE_NO_FUSION
                              : NNP_SPECIALIZE_DEFAULT,
        error);
    g_free (ps);
    if (graph == NULL) {
      g_clear_pointer (&self->plan, nnp_plan_free);
      return FALSE;
    }
  } else {
    self->plan = make_plan (self, shapes, n_shapes, &graph, error);
  }
  if (self->plan == NULL)
    return FALSE;
  key = nnp_shapes_key (shapes, (int) n_shapes, NNP_SPECIALIZE_DEFAULT);

  GST_OBJECT_LOCK (self);
  queue_size = self->queue_size;
  fallback = self->fallback;
  GST_OBJECT_UNLOCK (self);

  for (gint k = 0; k < self->plan->n_stages; k++) {
    GstElement *stage;
    gchar *name = g_strdup_printf ("stage%d", k);
    MakeStage ms = { self, k, fallback };

    if (self->plan->stages[k].replicas > 1) {
      /* K copies fed in turn, outputs in order (gstnnreplicas.c) */
      stage = gst_nn_replicas_new (name, self->plan->stages[k].replicas,
          make_stage, &ms);
    } else {
      stage = make_stage (&ms, 0);
      g_object_set (stage, "name", name, NULL);
    }
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
    GstPad *first =
        gst_element_get_static_pad (g_ptr_array_index (self->stage_elems, 0),
            "sink");
    GstPad *last = gst_element_get_static_pad (prev, "src");

    if (self->streams) {
      gst_nn_streams_attach (self->streams, first, last);
    } else {
      gst_ghost_pad_set_target (GST_GHOST_PAD (self->srcpad), last);
      gst_ghost_pad_set_target (GST_GHOST_PAD (self->sinkpad), first);
    }
    gst_object_unref (first);
    gst_object_unref (last);
  }

  if (sync) {
    /* downstream first, so that data meets running elements */
    for (gint k = self->plan->n_stages - 1; k >= 0; k--) {
      if (!gst_element_sync_state_with_parent (
              g_ptr_array_index (self->stage_elems, k))) {
        g_set_error (error, NNP_ERROR, NNP_ERROR_PLAN,
            "stage %d failed to start", k);
        g_free (key);
        nnp_graph_unref (graph);
        return FALSE;
      }
      if (k > 0)
        gst_element_sync_state_with_parent (
            g_ptr_array_index (self->queues, k - 1));
    }
  }

  gst_nn_pipeline_stats_set_elements (self, self->stage_elems, self->queues);
  self->graph = nnp_graph_ref (graph);

  g_free (self->built_key);
  self->built_key =
      info ? gst_nn_tensors_info_to_string (info) : g_strdup (key);
  GST_INFO_OBJECT (self, "built %d stages for %s in %.1f ms",
      self->plan->n_stages, key, (g_get_monotonic_time () - t0) / 1000.0);
  post_plan (self, graph, key);
  g_free (key);
  nnp_graph_unref (graph);
  return TRUE;
}

/* Load the model named by the property (or the plan's).  Build lock held. */
gboolean
gst_nn_pipeline_load_model_locked (GstNnPipeline *self, GError **error)
{
  gchar *path, *plan_path;
  NnpModel *model;

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
  model = nnp_model_load (path, error);
  GST_OBJECT_LOCK (self);
  self->model = model;
  GST_OBJECT_UNLOCK (self);
  if (model == NULL) {
    g_free (path);
    return FALSE;
  }
  g_free (self->model_file);
  self->model_file = path;
  return TRUE;
}

/* Open the trace of the 'trace' property or NNP_TRACE, if any (build_lock). */
gboolean
gst_nn_pipeline_trace_open_locked (GstNnPipeline *self, GError **error)
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
gboolean
gst_nn_pipeline_trace_close_locked (GstNnPipeline *self, GError **error)
{
  if (self->trace == NULL)
    return TRUE;
  return nnp_trace_close (g_steal_pointer (&self->trace), error);
}
