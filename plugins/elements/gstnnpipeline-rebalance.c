/* GStreamer nnpipe plugin: nnpipeline, re-balancing while PLAYING
 *
 * This library is free software; you can redistribute it and/or
 * modify it under the terms of the GNU Library General Public
 * License as published by the Free Software Foundation; either
 * version 2.1 of the License, or (at your option) any later version.
 */

/* rebalance=true: a thread of our own ("nnpipeline-rebal") reads each
 * stage's busy time and frames every rebalance-interval ms, and asks the
 * planner for the best plan under the measured costs
 * (nnp_plan_rebalance(): node costs scaled by measured / predicted of their
 * stage).  When that plan's bottleneck beats the measured one by
 * rebalance-threshold in rebalance-sustain windows in a row, the plan is
 * handed to the streaming thread: at the next buffer into the bin it waits
 * for the frames in flight to leave (no frame is dropped), swaps the stage
 * elements for the new plan's (teardown + build, gstnnpipeline-build.c),
 * lets the buffer go on and posts `nnpipeline-rebalance`.  The new stages
 * compute the same nodes in the same order, so the output is the whole
 * model's, bit-exact, as any split's.
 *
 * With request pads (sink_%u) the same happens between the streams' mux
 * and demux (gstnnstreams.c): the frame boundary is a buffer pushed into
 * the shared stage chain (the mux pushes one at a time, under its in_lock,
 * so the streams wait behind the switch), the drain counts the chain's
 * buffers in and out, and the mux's sticky events go to the new first
 * stage with that buffer (gst_pad_link() schedules them again).
 *
 * Remote stages are refused at start (gst_nn_pipeline_rebalance_built()):
 * their node costs are their servers' and a switch would need the servers
 * to prepare new parts.  A replicated stage (gstnnreplicas.c) reports its
 * busy time divided by its replicas, so its measured ms per frame is the
 * stage's throughput (K replicas in parallel); nnp_plan_rebalance()
 * predicts it the same way (node costs / replicas).
 *
 * Locks: rb->lock guards everything here; the thread never takes
 * build_lock (it reads the stages through stats_lock, as the stats do), the
 * streaming thread takes build_lock with a try-lock loop that gives up when
 * the pad flushes (a state change going down holds build_lock after
 * flushing the pads). */

#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "gstnnpipeline-private.h"

#include <nnpipe/rebalance.h>

#define GST_CAT_DEFAULT gst_nn_pipeline_debug

#define DEFAULT_REBALANCE FALSE
#define DEFAULT_REBALANCE_THRESHOLD 1.15
#define DEFAULT_REBALANCE_INTERVAL 1000
#define DEFAULT_REBALANCE_SUSTAIN 2
#define DEFAULT_DEBUG_SLOWDOWN NULL

/* the longest wait for the frames in flight before a switch (us) */
#define DRAIN_TIMEOUT (30 * G_TIME_SPAN_SECOND)

struct _GstNnPipelineRebalance
{
  /* properties (object lock of the element) */
  gboolean enabled;
  gdouble threshold;
  guint interval;        /* ms */
  guint sustain;         /* windows */
  gchar *debug_slowdown; /* "0,2": per stage, or NULL */

  GMutex lock;
  GCond cond;               /* the thread's stop; the drain */
  GThread *thread;          /* the monitor, or NULL */
  gboolean stop;            /* the monitor must end */
  NnpModel *model;          /* owned ref: the current stages' model */
  NnpPlan *plan;            /* owned copy of the current plan, or NULL */
  NnpGraph *graph;          /* owned ref: its specialised graph */
  guint gen;                /* bumped when the stages are rebuilt */
  NnpPlan *pending;         /* owned: the plan to switch to, or NULL */
  NnpRebalance pending_why; /* what nnp_plan_rebalance() found for it */
  guint64 in, out;          /* buffers into and out of the stages */
  guint count;              /* switches done since READY -> PAUSED */
  gboolean refused;         /* the plan cannot be re-balanced (said once) */
};

/* ------------------------------------------------------------------------ */
/* properties */

void
gst_nn_pipeline_rebalance_install_properties (GObjectClass *gobject_class)
{
  /**
   * GstNnPipeline:rebalance:
   *
   * Re-plan while PLAYING when the measured stage times show a better
   * split (docs/pipeline.md, "Re-balancing while PLAYING").
   */
  g_object_class_install_property (gobject_class, PROP_REBALANCE,
      g_param_spec_boolean ("rebalance", "Rebalance",
          "Switch to a better split while playing when the measured stage times call for one",
          DEFAULT_REBALANCE,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS
              | GST_PARAM_MUTABLE_PLAYING));
  g_object_class_install_property (gobject_class, PROP_REBALANCE_THRESHOLD,
      g_param_spec_double ("rebalance-threshold", "Rebalance threshold",
          "Switch when the measured bottleneck exceeds the best plan's for the measured costs by this factor",
          1.0, 100.0, DEFAULT_REBALANCE_THRESHOLD,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS
              | GST_PARAM_MUTABLE_PLAYING));
  g_object_class_install_property (gobject_class, PROP_REBALANCE_INTERVAL,
      g_param_spec_uint ("rebalance-interval", "Rebalance interval",
          "Milliseconds of one measurement window", 50, 600000,
          DEFAULT_REBALANCE_INTERVAL,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS
              | GST_PARAM_MUTABLE_READY));
  g_object_class_install_property (gobject_class, PROP_REBALANCE_SUSTAIN,
      g_param_spec_uint ("rebalance-sustain", "Rebalance sustain",
          "Windows in a row over the threshold before a switch", 1, 1000,
          DEFAULT_REBALANCE_SUSTAIN,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS
              | GST_PARAM_MUTABLE_PLAYING));
  g_object_class_install_property (gobject_class, PROP_DEBUG_SLOWDOWN,
      g_param_spec_string ("debug-slowdown", "Debug slowdown",
          "Testing: per stage, the nnstage debug-slowdown factor (\"0,2\": stage 1 three times slower), kept across re-balancing",
          DEFAULT_DEBUG_SLOWDOWN,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS
              | GST_PARAM_MUTABLE_PLAYING));
}

static void apply_slowdown (GstNnPipeline *self, GPtrArray *stages);
static void refuse_remote_playing (GstNnPipeline *self);

gboolean
gst_nn_pipeline_rebalance_set_property (GstNnPipeline *self, guint prop_id,
    const GValue *value)
{
  GstNnPipelineRebalance *rb = self->rb;

  GST_OBJECT_LOCK (self);
  switch (prop_id) {
    case PROP_REBALANCE: {
      gboolean enabled = g_value_get_boolean (value);

      rb->enabled = enabled;
      GST_OBJECT_UNLOCK (self);
      if (enabled)
        refuse_remote_playing (self);
      return TRUE;
    }
    case PROP_REBALANCE_THRESHOLD:
      rb->threshold = g_value_get_double (value);
      break;
    case PROP_REBALANCE_INTERVAL:
      rb->interval = g_value_get_uint (value);
      break;
    case PROP_REBALANCE_SUSTAIN:
      rb->sustain = g_value_get_uint (value);
      break;
    case PROP_DEBUG_SLOWDOWN:
      g_free (rb->debug_slowdown);
      rb->debug_slowdown = g_value_dup_string (value);
      GST_OBJECT_UNLOCK (self);
      /* the running stages at once */
      g_mutex_lock (&self->stats_lock);
      apply_slowdown (self, self->stats_stages);
      g_mutex_unlock (&self->stats_lock);
      return TRUE;
    default:
      GST_OBJECT_UNLOCK (self);
      return FALSE;
  }
  GST_OBJECT_UNLOCK (self);
  return TRUE;
}

gboolean
gst_nn_pipeline_rebalance_get_property (GstNnPipeline *self, guint prop_id,
    GValue *value)
{
  GstNnPipelineRebalance *rb = self->rb;

  GST_OBJECT_LOCK (self);
  switch (prop_id) {
    case PROP_REBALANCE:
      g_value_set_boolean (value, rb->enabled);
      break;
    case PROP_REBALANCE_THRESHOLD:
      g_value_set_double (value, rb->threshold);
      break;
    case PROP_REBALANCE_INTERVAL:
      g_value_set_uint (value, rb->interval);
      break;
    case PROP_REBALANCE_SUSTAIN:
      g_value_set_uint (value, rb->sustain);
      break;
    case PROP_DEBUG_SLOWDOWN:
      g_value_set_string (value, rb->debug_slowdown);
      break;
    default:
      GST_OBJECT_UNLOCK (self);
      return FALSE;
  }
  GST_OBJECT_UNLOCK (self);
  return TRUE;
}

/* The factors of a debug-slowdown string ("0,3"): each item a number from 0
 * to 100 (nnstage's range); NULL or "" is none.  FALSE with an error naming
 * the property and the value otherwise. */
static gboolean
parse_slowdown (const gchar *str, GArray **factors, GError **error)
{
  gchar **items;
  gboolean ok = TRUE;

  *factors = g_array_new (FALSE, TRUE, sizeof (gdouble));
  if (str == NULL || *str == '\0')
    return TRUE;
  items = g_strsplit (str, ",", -1);
  for (guint k = 0; ok && items[k]; k++) {
    gchar *end;
    gdouble f = g_ascii_strtod (items[k], &end);

    if (end == items[k] || *end != '\0' || !(f >= 0.0 && f <= 100.0)) {
      g_set_error (error, NNP_ERROR, NNP_ERROR_INVALID,
          "invalid value \"%s\" for property 'debug-slowdown': item %u (\"%s\") is not a factor from 0 to 100",
          str, k, items[k]);
      ok = FALSE;
    }
    g_array_append_val (*factors, f);
  }
  g_strfreev (items);
  if (!ok)
    g_clear_pointer (factors, g_array_unref);
  return ok;
}

/* rebalance=true refused: remote stages (`what` says where). */
static void
remote_error (const gchar *what, GError **error)
{
  g_set_error (error, NNP_ERROR, NNP_ERROR_INVALID,
      "property 'rebalance' cannot be true with remote stages (%s): their node costs are their "
      "servers' and a switch would need the servers to prepare new parts; set rebalance=false or plan the stages on this host",
      what);
}

/* Whether a device list ("cpu:1,remote://h:7000") names a remote stage. */
static gboolean
names_remote (const gchar *devices)
{
  gchar **items = g_strsplit (devices, ",", -1);
  gboolean remote = FALSE;

  for (guint i = 0; items[i] && !remote; i++)
    remote = nnp_device_spec_remote_address (items[i]) != NULL;
  g_strfreev (items);
  return remote;
}

gboolean
gst_nn_pipeline_rebalance_check (GstNnPipeline *self, GError **error)
{
  GArray *factors;
  gboolean ok;

  GST_OBJECT_LOCK (self);
  ok = parse_slowdown (self->rb->debug_slowdown, &factors, error);
  if (ok && self->rb->enabled && self->devices
      && names_remote (self->devices)) {
    gchar *what = g_strdup_printf ("devices \"%s\"", self->devices);

    remote_error (what, error);
    g_free (what);
    ok = FALSE;
  }
  GST_OBJECT_UNLOCK (self);
  if (factors)
    g_array_unref (factors);
  return ok;
}

/* Element e (a stage) and, for a replicated stage (a bin), every element
 * in it that has a debug-slowdown: all replicas slowed alike. */
static void
set_slowdown (GstElement *e, gdouble f)
{
  if (GST_IS_BIN (e)) {
    GstIterator *it = gst_bin_iterate_elements (GST_BIN (e));
    GValue v = G_VALUE_INIT;

    while (gst_iterator_next (it, &v) == GST_ITERATOR_OK) {
      set_slowdown (g_value_get_object (&v), f);
      g_value_reset (&v);
    }
    g_value_unset (&v);
    gst_iterator_free (it);
  } else if (g_object_class_find_property (G_OBJECT_GET_CLASS (e),
                 "debug-slowdown")) {
    g_object_set (e, "debug-slowdown", f, NULL);
  }
}

/* Stage k's nnstage gets item k of debug-slowdown (0 past the list); each
 * replica of a replicated stage the same.  stages: GstElement*.  A value
 * that does not parse (set while PLAYING) is an element error and leaves
 * the stages as they are; at start check_properties refused it already. */
static void
apply_slowdown (GstNnPipeline *self, GPtrArray *stages)
{
  GArray *factors;
  GError *err = NULL;
  gboolean ok;

  GST_OBJECT_LOCK (self);
  ok = parse_slowdown (self->rb->debug_slowdown, &factors, &err);
  GST_OBJECT_UNLOCK (self);
  if (!ok) {
    GST_ELEMENT_ERROR (self, RESOURCE, SETTINGS, ("%s", err->message), (NULL));
    g_error_free (err);
    return;
  }
  for (guint k = 0; stages && k < stages->len; k++) {
    gdouble f = k < factors->len ? g_array_index (factors, gdouble, k) : 0.0;

    set_slowdown (g_ptr_array_index (stages, k), f);
  }
  g_array_unref (factors);
}

/* ------------------------------------------------------------------------ */
/* hooks of the build (build_lock held) */

/* The first stage of plan that runs on a server, or -1. */
static gint
remote_stage (const NnpPlan *plan)
{
  for (gint k = 0; plan && k < plan->n_stages; k++)
    if (nnp_device_spec_remote_address (plan->stages[k].device))
      return k;
  return -1;
}

/* rebalance=true and a remote stage in plan: the error saying why not. */
static gboolean
check_remote (GstNnPipeline *self, const NnpPlan *plan, GError **error)
{
  gboolean enabled;
  gint k = remote_stage (plan);
  gchar *what;

  GST_OBJECT_LOCK (self);
  enabled = self->rb->enabled;
  GST_OBJECT_UNLOCK (self);
  if (!enabled || k < 0)
    return TRUE;
  what = g_strdup_printf ("stage %d on %s", k, plan->stages[k].device);
  remote_error (what, error);
  g_free (what);
  return FALSE;
}

/* rebalance=true set while the stages run: with a remote stage an element
 * error (as at start), and the monitor leaves the plan alone. */
static void
refuse_remote_playing (GstNnPipeline *self)
{
  GstNnPipelineRebalance *rb = self->rb;
  NnpPlan *plan;
  GError *err = NULL;
  gboolean running;

  GST_OBJECT_LOCK (self);
  running = GST_STATE (self) >= GST_STATE_PAUSED;
  GST_OBJECT_UNLOCK (self);
  if (!running)
    return; /* the next build says it (at start) */
  g_mutex_lock (&rb->lock);
  plan = rb->plan ? nnp_plan_copy (rb->plan) : NULL;
  g_mutex_unlock (&rb->lock);
  if (!check_remote (self, plan, &err)) {
    g_mutex_lock (&rb->lock);
    rb->refused = TRUE;
    g_mutex_unlock (&rb->lock);
    GST_ELEMENT_ERROR (self, RESOURCE, SETTINGS, ("%s", err->message), (NULL));
    g_error_free (err);
  }
  g_clear_pointer (&plan, nnp_plan_free);
}

gboolean
gst_nn_pipeline_rebalance_built (GstNnPipeline *self, GError **error)
{
  GstNnPipelineRebalance *rb = self->rb;

  if (!check_remote (self, self->plan, error)) {
    /* (a plan= file's remote stage; devices= was refused at start) */
    gst_nn_pipeline_teardown_locked (self);
    return FALSE;
  }
  g_mutex_lock (&rb->lock);
  g_clear_pointer (&rb->plan, nnp_plan_free);
  g_clear_pointer (&rb->graph, nnp_graph_unref);
  g_clear_pointer (&rb->model, nnp_model_unref);
  if (self->plan && self->graph) {
    rb->plan = nnp_plan_copy (self->plan);
    rb->graph = nnp_graph_ref (self->graph);
    rb->model = nnp_model_ref (self->model);
  }
  rb->gen++;
  g_mutex_unlock (&rb->lock);
  apply_slowdown (self, self->stage_elems);
  return TRUE;
}

/* ------------------------------------------------------------------------ */
/* the monitor */

/* The stages' busy time and frames now (stats_lock for the list, the
 * elements' own locks for the values).  FALSE when there are none. */
static gboolean
sample_read (GstNnPipeline *self, NnpRebalanceSample *s)
{
  GstElement *refs[MAX_STAGES];

  g_mutex_lock (&self->rb->lock);
  s->gen = self->rb->gen;
  g_mutex_unlock (&self->rb->lock);
  g_mutex_lock (&self->stats_lock);
  s->n = (gint) MIN (self->stats_stages->len, MAX_STAGES);
  for (gint k = 0; k < s->n; k++)
    refs[k] = gst_object_ref (g_ptr_array_index (self->stats_stages, k));
  g_mutex_unlock (&self->stats_lock);
  for (gint k = 0; k < s->n; k++) {
    g_object_get (refs[k], "busy-time", &s->busy_ns[k], "frames", &s->frames[k],
        NULL);
    gst_object_unref (refs[k]);
  }
  return s->n > 0;
}

/* One window's end: the policy (nnp_rebalance_monitor_tick(), libnnpipe)
 * on the running plan, when a switch can be asked for; a plan it returns
 * becomes the pending switch. */
static void
monitor_tick (GstNnPipeline *self, NnpRebalanceMonitor *m,
    const NnpRebalanceSample *now)
{
  GstNnPipelineRebalance *rb = self->rb;
  NnpModel *model = NULL;
  NnpPlan *plan = NULL, *best;
  NnpRebalance r;
  GError *err = NULL;
  gdouble thr;
  guint sustain;

  g_mutex_lock (&rb->lock);
  if (rb->plan && rb->gen == now->gen && rb->pending == NULL && !rb->refused) {
    plan = nnp_plan_copy (rb->plan);
    model = nnp_model_ref (rb->model);
  }
  g_mutex_unlock (&rb->lock);
  GST_OBJECT_LOCK (self);
  thr = rb->threshold;
  sustain = rb->sustain;
  GST_OBJECT_UNLOCK (self);

  best =
      nnp_rebalance_monitor_tick (m, now, model, plan, thr, sustain, &r, &err);
  g_clear_pointer (&plan, nnp_plan_free);
  g_clear_pointer (&model, nnp_model_unref);
  if (err) {
    /* the planner failed on these measurements (remote stages were
     * refused at start): said once, the plan stays */
    GST_ELEMENT_WARNING (self, RESOURCE, SETTINGS, ("%s", err->message),
        ("rebalance=true: this plan stays"));
    g_clear_error (&err);
    g_mutex_lock (&rb->lock);
    rb->refused = TRUE;
    g_mutex_unlock (&rb->lock);
  }
  if (best == NULL)
    return;
  g_mutex_lock (&rb->lock);
  if (rb->gen == now->gen && rb->pending == NULL) {
    rb->pending = g_steal_pointer (&best);
    rb->pending_why = r;
  }
  g_mutex_unlock (&rb->lock);
  g_clear_pointer (&best, nnp_plan_free);
  GST_INFO_OBJECT (self, "re-balancing at the next frame: expected gain x%.3f",
      r.gain);
}

static gpointer
monitor_thread (gpointer user_data)
{
  GstNnPipeline *self = GST_NN_PIPELINE (user_data);
  GstNnPipelineRebalance *rb = self->rb;
  NnpRebalanceMonitor *m = nnp_rebalance_monitor_new ();
  NnpRebalanceSample now;
  gint64 period, next;

  GST_OBJECT_LOCK (self);
  period = (gint64) rb->interval * 1000;
  GST_OBJECT_UNLOCK (self);

  g_mutex_lock (&rb->lock);
  next = g_get_monotonic_time () + period;
  while (!rb->stop) {
    gboolean enabled;

    if (g_cond_wait_until (&rb->cond, &rb->lock, next))
      continue; /* stop (or spurious) */
    next = g_get_monotonic_time () + period;
    g_mutex_unlock (&rb->lock);

    GST_OBJECT_LOCK (self);
    enabled = rb->enabled;
    GST_OBJECT_UNLOCK (self);
    if (enabled && sample_read (self, &now))
      monitor_tick (self, m, &now);
    else
      nnp_rebalance_monitor_tick (m, NULL, NULL, NULL, 0, 0, NULL, NULL);
    g_mutex_lock (&rb->lock);
  }
  g_mutex_unlock (&rb->lock);
  nnp_rebalance_monitor_free (m);
  return NULL;
}

void
gst_nn_pipeline_rebalance_start (GstNnPipeline *self)
{
  GstNnPipelineRebalance *rb = self->rb;

  g_mutex_lock (&rb->lock);
  if (rb->thread == NULL) {
    rb->stop = FALSE;
    /* no ref: stop() joins it, and PLAYING -> PAUSED and finalize call it */
    rb->thread = g_thread_new ("nnpipeline-rebal", monitor_thread, self);
  }
  g_mutex_unlock (&rb->lock);
}

void
gst_nn_pipeline_rebalance_stop (GstNnPipeline *self)
{
  GstNnPipelineRebalance *rb = self->rb;
  GThread *thread;

  g_mutex_lock (&rb->lock);
  thread = g_steal_pointer (&rb->thread);
  rb->stop = TRUE;
  g_cond_broadcast (&rb->cond);
  g_mutex_unlock (&rb->lock);
  if (thread)
    g_thread_join (thread);
}

/* READY -> PAUSED and PAUSED -> READY: nothing carried over. */
void
gst_nn_pipeline_rebalance_reset (GstNnPipeline *self)
{
  GstNnPipelineRebalance *rb = self->rb;

  g_mutex_lock (&rb->lock);
  g_clear_pointer (&rb->pending, nnp_plan_free);
  rb->in = rb->out = 0;
  rb->count = 0;
  rb->refused = FALSE;
  g_mutex_unlock (&rb->lock);
}

/* ------------------------------------------------------------------------ */
/* the switch, in the streaming thread at a frame boundary */

static void
array_append_double (GValue *array, gdouble d)
{
  GValue v = G_VALUE_INIT;

  g_value_init (&v, G_TYPE_DOUBLE);
  g_value_set_double (&v, d);
  gst_value_array_append_and_take_value (array, &v);
}

static void
array_append_int (GValue *array, gint i)
{
  GValue v = G_VALUE_INIT;

  g_value_init (&v, G_TYPE_INT);
  g_value_set_int (&v, i);
  gst_value_array_append_and_take_value (array, &v);
}

/* The nnpipeline-rebalance message: what changed and why. */
static void
post_rebalance (GstNnPipeline *self, const NnpPlan *old_plan,
    const NnpGraph *old_graph, const NnpPlan *new_plan,
    const NnpGraph *new_graph, const NnpRebalance *r, gdouble pause_ms,
    guint count)
{
  GValue measured = G_VALUE_INIT, predicted = G_VALUE_INIT;
  GValue factor = G_VALUE_INIT, expected = G_VALUE_INIT;
  GValue old_nodes = G_VALUE_INIT, new_nodes = G_VALUE_INIT;
  gchar *old_cuts = nnp_plan_cuts_string (old_plan, old_graph);
  gchar *new_cuts = nnp_plan_cuts_string (new_plan, new_graph);
  GstStructure *s;
  gint slowest = 0;

  g_value_init (&measured, GST_TYPE_ARRAY);
  g_value_init (&predicted, GST_TYPE_ARRAY);
  g_value_init (&factor, GST_TYPE_ARRAY);
  g_value_init (&expected, GST_TYPE_ARRAY);
  g_value_init (&old_nodes, GST_TYPE_ARRAY);
  g_value_init (&new_nodes, GST_TYPE_ARRAY);
  for (gint k = 0; k < r->n_stages; k++) {
    array_append_double (&measured, r->measured_ms[k]);
    array_append_double (&predicted, r->predicted_ms[k]);
    array_append_double (&factor, r->factor[k]);
    array_append_double (&expected, r->new_ms[k]);
    array_append_int (&old_nodes, old_plan->stages[k].n_nodes);
    array_append_int (&new_nodes, new_plan->stages[k].n_nodes);
    if (r->measured_ms[k] > r->measured_ms[slowest])
      slowest = k;
  }
  s = gst_structure_new ("nnpipeline-rebalance", "count", G_TYPE_UINT, count,
      "reason", G_TYPE_STRING,
      "measured bottleneck over the best plan for the measured costs by more than rebalance-threshold",
      "old-cuts", G_TYPE_STRING, old_cuts, "new-cuts", G_TYPE_STRING, new_cuts,
      "bottleneck-stage", G_TYPE_INT, slowest, "measured-bottleneck-ms",
      G_TYPE_DOUBLE, r->measured_bottleneck_ms, "expected-bottleneck-ms",
      G_TYPE_DOUBLE, r->best_bottleneck_ms, "expected-gain", G_TYPE_DOUBLE,
      r->gain, "pause-ms", G_TYPE_DOUBLE, pause_ms, NULL);
  gst_structure_take_value (s, "measured-ms", &measured);
  gst_structure_take_value (s, "predicted-ms", &predicted);
  gst_structure_take_value (s, "factor", &factor);
  gst_structure_take_value (s, "expected-ms", &expected);
  gst_structure_take_value (s, "old-nodes", &old_nodes);
  gst_structure_take_value (s, "new-nodes", &new_nodes);
  GST_INFO_OBJECT (self, "%" GST_PTR_FORMAT, s);
  g_free (old_cuts);
  g_free (new_cuts);
  gst_element_post_message (GST_ELEMENT (self),
      gst_message_new_element (GST_OBJECT (self), s));
}

/* Where frames go into the stages: the sink ghost pad, or with request
 * pads the streams' mux (the chain of stages they share). */
static GstPad *
stages_in (GstNnPipeline *self)
{
  return self->streams ? gst_nn_streams_chain_in (self->streams)
                       : self->sinkpad;
}

/* TRUE when the switch must be given up: the pad is flushing (a state
 * change going down, a flushing seek) or the element is no longer going
 * to PLAYING (a paused sink would hold the frames in flight: no drain). */
static gboolean
switch_cancelled (GstNnPipeline *self)
{
  gboolean playing;

  GST_OBJECT_LOCK (self);
  playing = GST_STATE_TARGET (self) == GST_STATE_PLAYING;
  GST_OBJECT_UNLOCK (self);
  return !playing || GST_PAD_IS_FLUSHING (stages_in (self));
}

/* The frames in flight out, build_lock, swap.  Called from the sink probe
 * with no lock of ours held (with request pads the mux's in_lock: the
 * other streams wait); the buffer waiting there goes into the new
 * stages. */
static void
do_switch (GstNnPipeline *self)
{
  GstNnPipelineRebalance *rb = self->rb;
  NnpPlan *plan, *old_plan = NULL;
  NnpGraph *old_graph = NULL, *new_graph = NULL;
  NnpRebalance why;
  GstNnTensorsInfo info;
  GstCaps *caps;
  GError *err = NULL;
  gint64 t0 = g_get_monotonic_time (), deadline = t0 + DRAIN_TIMEOUT;
  gboolean ok;
  guint count;

  g_mutex_lock (&rb->lock);
  plan = g_steal_pointer (&rb->pending);
  why = rb->pending_why;
  while (plan && rb->out < rb->in) {
    if (switch_cancelled (self) || g_get_monotonic_time () > deadline) {
      GST_WARNING_OBJECT (self,
          "re-balancing given up: %" G_GUINT64_FORMAT
          " frames still in the stages",
          rb->in - rb->out);
      g_clear_pointer (&plan, nnp_plan_free);
      break;
    }
    g_cond_wait_until (&rb->cond, &rb->lock,
        g_get_monotonic_time () + 20 * G_TIME_SPAN_MILLISECOND);
  }
  g_mutex_unlock (&rb->lock);
  if (plan == NULL)
    return;

  /* a state change going down holds build_lock once it flushed the pads */
  while (!g_mutex_trylock (&self->build_lock)) {
    if (switch_cancelled (self)) {
      nnp_plan_free (plan);
      return;
    }
    g_usleep (1000);
  }
  /* with request pads: the chain's caps (the mux pushed them) */
  caps = gst_pad_get_current_caps (stages_in (self));
  if (self->plan == NULL || caps == NULL
      || !gst_nn_tensors_info_from_caps (&info, caps, &err)) {
    g_mutex_unlock (&self->build_lock);
    g_clear_error (&err);
    gst_clear_caps (&caps);
    nnp_plan_free (plan);
    return;
  }
  gst_caps_unref (caps);

  g_mutex_lock (&rb->lock);
  old_plan = rb->plan ? nnp_plan_copy (rb->plan) : NULL;
  old_graph = rb->graph ? nnp_graph_ref (rb->graph) : NULL;
  g_mutex_unlock (&rb->lock);

  gst_nn_pipeline_teardown_locked (self);
  self->next_plan = plan; /* taken by the build */
  ok = gst_nn_pipeline_build_locked (self, &info, TRUE, &err);
  g_clear_pointer (&self->next_plan,
      nnp_plan_free); /* the build failed early */
  if (ok)
    ok = gst_nn_pipeline_rebalance_built (self, &err);

  g_mutex_lock (&rb->lock);
  count = ++rb->count;
  new_graph = rb->graph ? nnp_graph_ref (rb->graph) : NULL;
  g_mutex_unlock (&rb->lock);
  g_mutex_unlock (&self->build_lock);

  if (!ok)
    goto build_failed;
  if (old_plan && old_graph && new_graph && self->plan)
    post_rebalance (self, old_plan, old_graph, self->plan, new_graph, &why,
        (g_get_monotonic_time () - t0) / 1000.0, count);
  g_clear_pointer (&old_plan, nnp_plan_free);
  g_clear_pointer (&old_graph, nnp_graph_unref);
  g_clear_pointer (&new_graph, nnp_graph_unref);
  return;

  /* ERRORS */
build_failed : {
  GST_ELEMENT_ERROR (self, RESOURCE, SETTINGS,
      ("re-balancing: the new stages failed: %s", err->message), (NULL));
  g_clear_error (&err);
  g_clear_pointer (&old_plan, nnp_plan_free);
  g_clear_pointer (&old_graph, nnp_graph_unref);
  g_clear_pointer (&new_graph, nnp_graph_unref);
}
}

static guint
probe_buffers (GstPadProbeInfo *info)
{
  if (info->type & GST_PAD_PROBE_TYPE_BUFFER_LIST)
    return gst_buffer_list_length (GST_PAD_PROBE_INFO_BUFFER_LIST (info));
  return 1;
}

/* On the sink ghost pad (or the streams' mux src pad): a pending switch
 * happens here, before the buffer goes in; every buffer is counted in. */
static GstPadProbeReturn
gst_nn_pipeline_rebalance_sink_probe (GstPad *pad, GstPadProbeInfo *info,
    gpointer user_data)
{
  GstNnPipeline *self = GST_NN_PIPELINE (user_data);
  GstNnPipelineRebalance *rb = self->rb;
  gboolean pending;

  if (info->type & GST_PAD_PROBE_TYPE_EVENT_FLUSH) {
    /* a flushing seek: the frames in flight were dropped */
    if (GST_EVENT_TYPE (GST_PAD_PROBE_INFO_EVENT (info))
        == GST_EVENT_FLUSH_STOP) {
      g_mutex_lock (&rb->lock);
      rb->in = rb->out = 0;
      g_mutex_unlock (&rb->lock);
    }
    return GST_PAD_PROBE_OK;
  }
  g_mutex_lock (&rb->lock);
  pending = rb->pending != NULL;
  g_mutex_unlock (&rb->lock);
  if (pending)
    do_switch (self);
  g_mutex_lock (&rb->lock);
  rb->in += probe_buffers (info);
  g_mutex_unlock (&rb->lock);
  return GST_PAD_PROBE_OK;
}

/* On the src ghost pad (or the streams' demux sink pad): buffers out (the
 * drain's condition). */
static GstPadProbeReturn
gst_nn_pipeline_rebalance_src_probe (GstPad *pad, GstPadProbeInfo *info,
    gpointer user_data)
{
  GstNnPipeline *self = GST_NN_PIPELINE (user_data);
  GstNnPipelineRebalance *rb = self->rb;

  g_mutex_lock (&rb->lock);
  rb->out += probe_buffers (info);
  g_cond_broadcast (&rb->cond);
  g_mutex_unlock (&rb->lock);
  return GST_PAD_PROBE_OK;
}

/* ------------------------------------------------------------------------ */

void
gst_nn_pipeline_rebalance_init (GstNnPipeline *self)
{
  GstNnPipelineRebalance *rb = g_new0 (GstNnPipelineRebalance, 1);

  g_mutex_init (&rb->lock);
  g_cond_init (&rb->cond);
  rb->enabled = DEFAULT_REBALANCE;
  rb->threshold = DEFAULT_REBALANCE_THRESHOLD;
  rb->interval = DEFAULT_REBALANCE_INTERVAL;
  rb->sustain = DEFAULT_REBALANCE_SUSTAIN;
  rb->debug_slowdown = g_strdup (DEFAULT_DEBUG_SLOWDOWN);
  self->rb = rb;
  gst_nn_pipeline_rebalance_watch (self, self->sinkpad, self->srcpad);
}

void
gst_nn_pipeline_rebalance_watch (GstNnPipeline *self, GstPad *in, GstPad *out)
{
  gst_pad_add_probe (in,
      GST_PAD_PROBE_TYPE_BUFFER | GST_PAD_PROBE_TYPE_BUFFER_LIST
          | GST_PAD_PROBE_TYPE_EVENT_FLUSH,
      gst_nn_pipeline_rebalance_sink_probe, self, NULL);
  gst_pad_add_probe (out,
      GST_PAD_PROBE_TYPE_BUFFER | GST_PAD_PROBE_TYPE_BUFFER_LIST,
      gst_nn_pipeline_rebalance_src_probe, self, NULL);
}

void
gst_nn_pipeline_rebalance_finalize (GstNnPipeline *self)
{
  GstNnPipelineRebalance *rb = self->rb;

  gst_nn_pipeline_rebalance_stop (self);
  gst_nn_pipeline_rebalance_reset (self);
  g_clear_pointer (&rb->plan, nnp_plan_free);
  g_clear_pointer (&rb->graph, nnp_graph_unref);
  g_clear_pointer (&rb->model, nnp_model_unref);
  g_free (rb->debug_slowdown);
  g_mutex_clear (&rb->lock);
  g_cond_clear (&rb->cond);
  g_free (rb);
  self->rb = NULL;
}
