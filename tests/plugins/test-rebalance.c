/* nnpipeline rebalance=true (issue 13 item 3): a balanced 2-stage split of
 * a chain of identical layers, one stage slowed while PLAYING
 * (debug-slowdown): the nnpipeline-rebalance message comes with the slowed
 * stage holding fewer nodes, and every frame leaves once, in order, equal
 * (SHA-256 of the bytes) to the whole model's output for it.  Also the
 * library call, nnp_plan_rebalance(), on made-up measurements. */
#include "test-common.h"

#include <math.h>

#include <glib/gstdio.h>
#include <gst/app/gstappsink.h>
#include <gst/app/gstappsrc.h>
#include <nnpipe/nnpipe.h>

#define C 16
#define H 32
#define W 32
#define N_FLOATS (C * H * W)
#define SEED 4000
#define MAX_FRAMES 20000
#define TAIL_FRAMES 200

/* ------------------------------------------------------------------------ */
/* the library call */

static NnpPlan *
chain_plan (const gchar *devices, NnpModel **model_out)
{
  gchar *path = nnp_test_model_path ("chain.onnx");
  NnpPlanRequest req = { 0 };
  GError *err = NULL;
  NnpModel *model = nnp_model_load (path, &err);
  NnpPlan *plan;

  fail_unless (model != NULL, "%s", err ? err->message : "");
  req.n_stages = 2;
  req.devices = devices;
  req.cost = NNP_COST_ESTIMATE;
  plan = nnp_plan_make (model, NULL, 0, &req, NULL, &err);
  fail_unless (plan != NULL, "%s", err ? err->message : "");
  g_free (path);
  *model_out = model;
  return plan;
}

GST_START_TEST (test_library)
{
  NnpModel *model;
  NnpPlan *plan = chain_plan ("cpu:1,cpu:1", &model), *best;
  NnpRebalance r;
  GError *err = NULL;
  gint half = plan->stages[0].n_nodes;
  gdouble ms[2];

  /* identical layers: the split is even */
  fail_unless_equals_int (plan->stages[0].n_nodes, plan->stages[1].n_nodes);

  /* as predicted: the same cuts, no gain */
  ms[0] = ms[1] = 1.0;
  best = nnp_plan_rebalance (model, plan, ms, 2, NNP_COST_ESTIMATE, &r, &err);
  fail_unless (best != NULL, "%s", err ? err->message : "");
  fail_if (r.changed);
  fail_unless (r.gain < 1.05, "gain %g", r.gain);
  nnp_plan_free (best);

  /* stage 1 three times its share: it gets fewer nodes, stage 0 more */
  ms[0] = 1.0;
  ms[1] = 3.0;
  best = nnp_plan_rebalance (model, plan, ms, 2, NNP_COST_ESTIMATE, &r, &err);
  fail_unless (best != NULL, "%s", err ? err->message : "");
  fail_unless (r.changed);
  fail_unless (best->stages[1].n_nodes < half && best->stages[0].n_nodes > half, "%d + %d nodes",
               best->stages[0].n_nodes, best->stages[1].n_nodes);
  fail_unless (r.factor[1] > 2.9 * r.factor[0]);
  fail_unless_equals_float (r.measured_bottleneck_ms, 3.0);
  fail_unless (r.gain > 1.3, "gain %g", r.gain);
  fail_unless (r.best_bottleneck_ms < 3.0 / 1.3);
  nnp_plan_free (best);

  /* the other way round */
  ms[0] = 3.0;
  ms[1] = 1.0;
  best = nnp_plan_rebalance (model, plan, ms, 2, NNP_COST_ESTIMATE, &r, &err);
  fail_unless (best != NULL, "%s", err ? err->message : "");
  fail_unless (best->stages[0].n_nodes < half);
  nnp_plan_free (best);

  /* measurements that do not fit the plan: an error naming the problem */
  best = nnp_plan_rebalance (model, plan, ms, 3, NNP_COST_ESTIMATE, &r, &err);
  fail_unless (best == NULL && err != NULL);
  fail_unless (strstr (err->message, "3 stage times for a plan of 2 stages"), "%s", err->message);
  g_clear_error (&err);
  ms[1] = 0.0;
  best = nnp_plan_rebalance (model, plan, ms, 2, NNP_COST_ESTIMATE, &r, &err);
  fail_unless (best == NULL && err != NULL);
  fail_unless (strstr (err->message, "stage 1: 0 ms is not a measured time"), "%s", err->message);
  g_clear_error (&err);

  nnp_plan_free (plan);
  nnp_model_unref (model);
}

GST_END_TEST;

/* The switch policy (nnp_rebalance_monitor_tick()) on made-up counters: the
 * first sample starts, the first full window settles, then `sustain`
 * windows over the threshold in a row give the plan; a window with too
 * few frames grows, new stages (gen) start over, balanced stages never
 * switch, no plan (a switch pending) never either. */
static void
advance (NnpRebalanceSample *s, gdouble ms0, gdouble ms1, guint frames)
{
  s->frames[0] += frames;
  s->frames[1] += frames;
  s->busy_ns[0] += (guint64) (ms0 * 1e6 * frames);
  s->busy_ns[1] += (guint64) (ms1 * 1e6 * frames);
}

GST_START_TEST (test_monitor)
{
  NnpModel *model;
  NnpPlan *plan = chain_plan ("cpu:1,cpu:1", &model), *best;
  NnpRebalanceMonitor *m = nnp_rebalance_monitor_new ();
  NnpRebalanceSample s = { .gen = 1, .n = 2 };
  NnpRebalance r = { 0 };
  GError *err = NULL;
  gint tick;

  /* stage 1 three times slower: start, settle, over 1, over 2 -> switch */
  for (tick = 0; tick < 4; tick++) {
    best = nnp_rebalance_monitor_tick (m, &s, model, plan, 1.15, 2, &r, &err);
    fail_unless (err == NULL);
    if (tick < 3) {
      fail_unless (best == NULL, "switch at tick %d", tick);
      advance (&s, 1.0, 3.0, 10);
    }
  }
  fail_unless (best != NULL);
  fail_unless (r.changed && r.gain > 1.15, "gain %g", r.gain);
  fail_unless (best->stages[1].n_nodes < plan->stages[1].n_nodes);
  nnp_plan_free (best);

  /* new stages: start over (start, settle, a first window over) */
  s.gen = 2;
  for (tick = 0; tick < 2; tick++) {
    fail_unless (nnp_rebalance_monitor_tick (m, &s, model, plan, 1.15, 2, &r, &err) == NULL);
    advance (&s, 1.0, 3.0, 10);
  }
  fail_unless (nnp_rebalance_monitor_tick (m, &s, model, plan, 1.15, 2, &r, &err) == NULL);
  /* a window of one frame per stage is too short: no decision, it grows */
  advance (&s, 1.0, 3.0, 1);
  fail_unless (nnp_rebalance_monitor_tick (m, &s, model, plan, 1.15, 2, &r, &err) == NULL);
  advance (&s, 1.0, 3.0, 10);
  best = nnp_rebalance_monitor_tick (m, &s, model, plan, 1.15, 2, &r, &err);
  fail_unless (best != NULL);
  nnp_plan_free (best);

  /* no plan to ask about (a switch pending): the streak breaks */
  for (tick = 0; tick < 4; tick++) {
    advance (&s, 1.0, 3.0, 10);
    fail_unless (nnp_rebalance_monitor_tick (m, &s, model, NULL, 1.15, 2, &r, &err) == NULL);
  }

  /* balanced stages: never */
  nnp_rebalance_monitor_tick (m, NULL, NULL, NULL, 0, 0, NULL, NULL);
  for (tick = 0; tick < 8; tick++) {
    fail_unless (nnp_rebalance_monitor_tick (m, &s, model, plan, 1.15, 2, &r, &err) == NULL);
    advance (&s, 1.0, 1.05, 10);
  }
  nnp_rebalance_monitor_free (m);
  nnp_plan_free (plan);
  nnp_model_unref (model);
}

GST_END_TEST;

/* A stage of 2 replicas is planned, predicted and measured as twice one
 * replica's throughput: its measured ms per frame (busy time / replicas,
 * nnreplicas) at the prediction changes nothing; twice the prediction
 * moves nodes off it. */
GST_START_TEST (test_library_replicas)
{
  NnpModel *model;
  NnpPlan *plan = chain_plan ("cpu:1,cpu:1*2", &model), *best;
  NnpRebalance r;
  GError *err = NULL;
  gint n1 = plan->stages[1].n_nodes;
  gdouble ms[2];

  fail_unless_equals_int (plan->stages[1].replicas, 2);
  /* two replicas: stage 1 holds about twice the nodes of stage 0 */
  fail_unless (n1 > plan->stages[0].n_nodes + 3, "%d + %d nodes", plan->stages[0].n_nodes, n1);
  ms[0] = plan->stages[0].predicted_ms;
  ms[1] = plan->stages[1].predicted_ms;
  best = nnp_plan_rebalance (model, plan, ms, 2, NNP_COST_ESTIMATE, &r, &err);
  fail_unless (best != NULL, "%s", err ? err->message : "");
  fail_unless (r.gain < 1.1, "gain %g", r.gain);
  fail_unless (fabs (r.factor[1] - 1.0) < 0.1, "factor %g", r.factor[1]);
  fail_unless_equals_int (best->stages[1].replicas, 2);
  nnp_plan_free (best);

  /* the replicas twice slower: nodes move to stage 0, the replicas stay */
  ms[1] *= 2.0;
  best = nnp_plan_rebalance (model, plan, ms, 2, NNP_COST_ESTIMATE, &r, &err);
  fail_unless (best != NULL, "%s", err ? err->message : "");
  fail_unless (r.changed);
  fail_unless (best->stages[1].n_nodes < n1, "%d nodes", best->stages[1].n_nodes);
  fail_unless_equals_int (best->stages[1].replicas, 2);
  fail_unless (r.gain > 1.15, "gain %g", r.gain);
  nnp_plan_free (best);

  nnp_plan_free (plan);
  nnp_model_unref (model);
}

GST_END_TEST;

/* ------------------------------------------------------------------------ */
/* the element */

typedef struct {
  GMutex lock;
  GPtrArray *sums; /* gchar*: SHA-256 of each output frame */
  GArray *pts;     /* GstClockTime of each output frame */
} Outputs;

static gchar *
buffer_sha256 (GstBuffer *buf)
{
  GstMapInfo map;
  gchar *sum;

  fail_unless (gst_buffer_map (buf, &map, GST_MAP_READ));
  sum = g_compute_checksum_for_data (G_CHECKSUM_SHA256, map.data, map.size);
  gst_buffer_unmap (buf, &map);
  return sum;
}

static GstFlowReturn
on_sample (GstAppSink *sink, gpointer user_data)
{
  Outputs *out = user_data;
  GstSample *sample = gst_app_sink_pull_sample (sink);
  GstBuffer *buf = gst_sample_get_buffer (sample);
  GstClockTime pts = GST_BUFFER_PTS (buf);

  g_mutex_lock (&out->lock);
  g_ptr_array_add (out->sums, buffer_sha256 (buf));
  g_array_append_val (out->pts, pts);
  g_mutex_unlock (&out->lock);
  gst_sample_unref (sample);
  return GST_FLOW_OK;
}

/* The node counts of an nnpipeline-rebalance message's field. */
static gint
nodes_of (const GstStructure *s, const gchar *field, guint k)
{
  const GValue *a = gst_structure_get_value (s, field);

  fail_unless (a != NULL && GST_VALUE_HOLDS_ARRAY (a), "no %s", field);
  fail_unless (k < gst_value_array_get_size (a));
  return g_value_get_int (gst_value_array_get_value (a, k));
}

/* Element messages and errors so far: errors fail the test; returns TRUE
 * when a rebalance message moved nodes off `slowed` (after the slowdown). */
static gboolean
drain_bus (GstBus *bus, gint slowed, guint *n_rebalance, gint *last_nodes)
{
  GstMessage *msg;
  gboolean moved = FALSE;

  while ((msg = gst_bus_pop_filtered (bus, GST_MESSAGE_ELEMENT | GST_MESSAGE_ERROR))) {
    if (GST_MESSAGE_TYPE (msg) == GST_MESSAGE_ERROR) {
      GError *err = NULL;

      gst_message_parse_error (msg, &err, NULL);
      fail ("error: %s", err->message);
    } else if (gst_message_has_name (msg, "nnpipeline-rebalance")) {
      const GstStructure *s = gst_message_get_structure (msg);
      gint before = nodes_of (s, "old-nodes", MAX (slowed, 0));
      gint after = nodes_of (s, "new-nodes", MAX (slowed, 0));
      gdouble gain = 0, pause = -1;

      (*n_rebalance)++;
      fail_unless (gst_structure_get_double (s, "expected-gain", &gain));
      fail_unless (gst_structure_get_double (s, "pause-ms", &pause));
      fail_unless (gain > 1.0 && pause >= 0.0, "gain %g pause %g", gain, pause);
      fail_unless (gst_structure_get_string (s, "old-cuts") != NULL);
      fail_unless (g_strcmp0 (gst_structure_get_string (s, "old-cuts"),
                              gst_structure_get_string (s, "new-cuts"))
                   != 0);
      {
        gchar *text = gst_structure_to_string (s);

        g_print ("%s\n", text);
        g_free (text);
      }
      if (slowed >= 0 && after < before)
        moved = TRUE;
      if (slowed >= 0)
        *last_nodes = after;
    }
    gst_message_unref (msg);
  }
  return moved;
}

/* out holds `total` frames, in order (PTS), each equal to the whole
 * model's output for nnp_test_random_frame (N_FLOATS, seed + i, i). */
static void
check_outputs (const gchar *path, const gchar *caps_str, Outputs *out, guint32 seed, guint total)
{
  GstHarness *ref;

  fail_unless_equals_int (out->sums->len, total);
  ref = nnp_test_harness_take (nnp_test_make ("nnstage", "model", path, NULL));
  gst_harness_set_src_caps_str (ref, caps_str);
  for (guint i = 0; i < total; i++) {
    GstBuffer *o;
    gchar *sum;

    fail_unless_equals_uint64 (g_array_index (out->pts, GstClockTime, i),
                               (guint64) i * NNP_TEST_FRAME_DURATION);
    fail_unless_equals_int (gst_harness_push (ref, nnp_test_random_frame (N_FLOATS, seed + i, i)),
                            GST_FLOW_OK);
    o = gst_harness_pull (ref);
    sum = buffer_sha256 (o);
    fail_unless_equals_string (g_ptr_array_index (out->sums, i), sum);
    g_free (sum);
    gst_buffer_unref (o);
  }
  gst_harness_teardown (ref);
}

static void
push_frame (GstElement *src, guint i)
{
  fail_unless_equals_int (
      gst_app_src_push_buffer (GST_APP_SRC (src), nnp_test_random_frame (N_FLOATS, SEED + i, i)),
      GST_FLOW_OK);
}

/* Every element in stage k of nnp (the nnstage, or each replica of a
 * replicated stage) has debug-slowdown f; returns how many there are. */
static guint
check_slowdown (GstElement *nnp, gint k, gdouble f)
{
  gchar *name = g_strdup_printf ("stage%d", k);
  GstElement *stage = gst_bin_get_by_name (GST_BIN (nnp), name);
  guint n = 0;

  fail_unless (stage != NULL, "no %s", name);
  if (GST_IS_BIN (stage)) {
    GstIterator *it = gst_bin_iterate_elements (GST_BIN (stage));
    GValue v = G_VALUE_INIT;

    while (gst_iterator_next (it, &v) == GST_ITERATOR_OK) {
      GObject *e = g_value_get_object (&v);
      gdouble got = -1;

      if (g_object_class_find_property (G_OBJECT_GET_CLASS (e), "debug-slowdown")) {
        g_object_get (e, "debug-slowdown", &got, NULL);
        fail_unless_equals_float (got, f);
        n++;
      }
      g_value_reset (&v);
    }
    g_value_unset (&v);
    gst_iterator_free (it);
  } else {
    gdouble got = -1;

    g_object_get (stage, "debug-slowdown", &got, NULL);
    fail_unless_equals_float (got, f);
    n = 1;
  }
  gst_object_unref (stage);
  g_free (name);
  return n;
}

/* A 2-stage split on `devices`, stage `slowed` made 4 times slower while
 * PLAYING (every replica of it): the switch moves nodes off it, to at most
 * max_after at the end. */
static void
run_slowdown (gint slowed, const gchar *devices, gint max_after)
{
  gchar *path = nnp_test_model_path ("chain.onnx");
  gchar *caps_str = nnp_test_tensor_caps (C, H, W);
  gchar *slow = g_strdup_printf ("%s", slowed == 0 ? "3,0" : "0,3");
  gboolean replicated = strchr (devices, '*') != NULL;
  GstElement *pipe = gst_pipeline_new (NULL);
  GstElement *src = nnp_test_make ("appsrc", "format", GST_FORMAT_TIME, "block", TRUE, "max-bytes",
                                   (guint64) (4 * N_FLOATS * sizeof (gfloat)), NULL);
  GstElement *nnp = nnp_test_make ("nnpipeline", "model", path, "stages", "2", "devices", devices,
                                   "rebalance", TRUE, "rebalance-interval", 100,
                                   "rebalance-sustain", 2, "stats-interval", 0, NULL);
  GstElement *sink = nnp_test_make ("appsink", "sync", FALSE, NULL);
  GstAppSinkCallbacks cb = { 0 };
  GstCaps *caps = gst_caps_from_string (caps_str);
  GstBus *bus;
  GstMessage *msg;
  Outputs out;
  guint n = 0, n_rebalance = 0, moved_at = 0;
  gint last_nodes = -1;
  gboolean moved = FALSE;

  cb.new_sample = on_sample;
  g_mutex_init (&out.lock);
  out.sums = g_ptr_array_new_with_free_func (g_free);
  out.pts = g_array_new (FALSE, FALSE, sizeof (GstClockTime));
  g_object_set (src, "caps", caps, NULL);
  gst_caps_unref (caps);
  gst_app_sink_set_callbacks (GST_APP_SINK (sink), &cb, &out, NULL);
  gst_bin_add_many (GST_BIN (pipe), src, nnp, sink, NULL);
  fail_unless (gst_element_link_many (src, nnp, sink, NULL));
  bus = gst_element_get_bus (pipe);
  fail_unless (gst_element_set_state (pipe, GST_STATE_PLAYING) != GST_STATE_CHANGE_FAILURE);

  /* balanced at first; a few hundred frames as they are */
  for (; n < 300; n++)
    push_frame (src, n);
  drain_bus (bus, -1, &n_rebalance, &last_nodes);
  /* one core slowed: 4 times the stage's time */
  g_object_set (nnp, "debug-slowdown", slow, NULL);
  fail_unless_equals_int (check_slowdown (nnp, slowed, 3.0), replicated ? 2 : 1);
  while (!moved && n < MAX_FRAMES) {
    for (guint j = 0; j < 50; j++, n++)
      push_frame (src, n);
    moved = drain_bus (bus, slowed, &n_rebalance, &last_nodes);
  }
  fail_unless (moved, "no nnpipeline-rebalance moving nodes off stage %d in %u frames", slowed, n);
  moved_at = n;
  /* frames through the new stages, then the end */
  for (guint j = 0; j < TAIL_FRAMES; j++, n++)
    push_frame (src, n);
  fail_unless_equals_int (gst_app_src_end_of_stream (GST_APP_SRC (src)), GST_FLOW_OK);
  msg = gst_bus_timed_pop_filtered (bus, 120 * GST_SECOND, GST_MESSAGE_EOS | GST_MESSAGE_ERROR);
  fail_unless (msg != NULL, "no EOS");
  fail_unless (GST_MESSAGE_TYPE (msg) == GST_MESSAGE_EOS);
  gst_message_unref (msg);
  drain_bus (bus, slowed, &n_rebalance, &last_nodes);
  fail_unless (last_nodes >= 0 && last_nodes <= max_after,
               "stage %d holds %d of 16 nodes at the end", slowed, last_nodes);
  /* the new stages got the slowdown too (kept across re-balancing) */
  fail_unless_equals_int (check_slowdown (nnp, slowed, 3.0), replicated ? 2 : 1);
  gst_element_set_state (pipe, GST_STATE_NULL);
  gst_object_unref (bus);
  gst_object_unref (pipe);
  g_print ("%u frames, %u re-balancings, moved at frame ~%u\n", n, n_rebalance, moved_at);

  /* every frame once, in order, bit-exact against the whole model */
  check_outputs (path, caps_str, &out, SEED, n);

  g_ptr_array_unref (out.sums);
  g_array_unref (out.pts);
  g_mutex_clear (&out.lock);
  g_free (slow);
  g_free (caps_str);
  g_free (path);
}

GST_START_TEST (test_slow_stage1)
{
  run_slowdown (1, "cpu:1,cpu:1", 7);
}

GST_END_TEST;

GST_START_TEST (test_slow_stage0)
{
  run_slowdown (0, "cpu:1,cpu:1", 7);
}

GST_END_TEST;

/* stage 1 as 2 replicas (5 + 11 nodes: twice one replica's throughput),
 * both slowed: nodes move to stage 0, the replicas stay */
GST_START_TEST (test_slow_replicas)
{
  run_slowdown (1, "cpu:1,cpu:1*2", 9);
}

GST_END_TEST;

/* rebalance=false (the default): the same slowdown moves nothing */
GST_START_TEST (test_off)
{
  gchar *path = nnp_test_model_path ("chain.onnx");
  gchar *caps_str = nnp_test_tensor_caps (C, H, W);
  GstElement *pipe = gst_pipeline_new (NULL);
  GstElement *src = nnp_test_make ("appsrc", "format", GST_FORMAT_TIME, "block", TRUE, "max-bytes",
                                   (guint64) (4 * N_FLOATS * sizeof (gfloat)), NULL);
  GstElement *nnp = nnp_test_make ("nnpipeline", "model", path, "stages", "2", "devices",
                                   "cpu:1,cpu:1", "rebalance-interval", 100, "rebalance-sustain", 1,
                                   "stats-interval", 0, "debug-slowdown", "0,3", NULL);
  GstElement *sink = nnp_test_make ("fakesink", "sync", FALSE, NULL);
  GstCaps *caps = gst_caps_from_string (caps_str);
  GstBus *bus;
  GstMessage *msg;
  guint n_rebalance = 0;
  gint last = -1;
  gboolean on = TRUE;

  g_object_get (nnp, "rebalance", &on, NULL);
  fail_if (on, "rebalance is on by default");
  g_object_set (src, "caps", caps, NULL);
  gst_caps_unref (caps);
  gst_bin_add_many (GST_BIN (pipe), src, nnp, sink, NULL);
  fail_unless (gst_element_link_many (src, nnp, sink, NULL));
  bus = gst_element_get_bus (pipe);
  fail_unless (gst_element_set_state (pipe, GST_STATE_PLAYING) != GST_STATE_CHANGE_FAILURE);
  for (guint i = 0; i < 600; i++)
    push_frame (src, i);
  gst_app_src_end_of_stream (GST_APP_SRC (src));
  msg = gst_bus_timed_pop_filtered (bus, 120 * GST_SECOND, GST_MESSAGE_EOS | GST_MESSAGE_ERROR);
  fail_unless (msg && GST_MESSAGE_TYPE (msg) == GST_MESSAGE_EOS);
  gst_message_unref (msg);
  drain_bus (bus, 1, &n_rebalance, &last);
  fail_unless_equals_int (n_rebalance, 0);
  gst_element_set_state (pipe, GST_STATE_NULL);
  gst_object_unref (bus);
  gst_object_unref (pipe);
  g_free (caps_str);
  g_free (path);
}

GST_END_TEST;

/* ------------------------------------------------------------------------ */
/* several streams through request pads (issue 13: cameras sharing the
 * stages) */

#define N_STREAMS 4
/* stream s's frame i is nnp_test_random_frame (N_FLOATS, SEED_OF (s) + i, i) */
#define SEED_OF(s) (SEED + 100000 * ((s) + 1))

/* Frames to every stream not ended, in turn (each appsrc has a thread of
 * its own that pushes into its sink_N; a full one blocks here). */
static void
push_round (GstElement **srcs, guint *sent, const gboolean *ended, guint rounds)
{
  for (guint j = 0; j < rounds; j++)
    for (guint s = 0; s < N_STREAMS; s++)
      if (!ended[s]) {
        fail_unless_equals_int (
            gst_app_src_push_buffer (
                GST_APP_SRC (srcs[s]),
                nnp_test_random_frame (N_FLOATS, SEED_OF (s) + sent[s], sent[s])),
            GST_FLOW_OK);
        sent[s]++;
      }
}

static void
end_stream (GstElement **srcs, gboolean *ended, guint s)
{
  fail_unless_equals_int (gst_app_src_end_of_stream (GST_APP_SRC (srcs[s])), GST_FLOW_OK);
  ended[s] = TRUE;
}

/* 4 streams of different content through one nnpipeline (sink_%u ->
 * src_%u), stage 1 slowed while PLAYING: the shared stages are re-balanced
 * (nnpipeline-rebalance moves nodes off stage 1) while frames of all
 * streams flow; stream 3 ends during the measurements, stream 2 as soon as
 * the switch is announced; at EOS each stream has all its frames, in
 * order, each equal to the whole model's output for it. */
GST_START_TEST (test_streams)
{
  gchar *path = nnp_test_model_path ("chain.onnx");
  gchar *caps_str = nnp_test_tensor_caps (C, H, W);
  GstElement *pipe = gst_pipeline_new (NULL);
  GstElement *nnp = nnp_test_make ("nnpipeline", "model", path, "stages", "2", "devices",
                                   "cpu:1,cpu:1", "rebalance", TRUE, "rebalance-interval", 100,
                                   "rebalance-sustain", 2, "stats-interval", 0, NULL);
  GstElement *srcs[N_STREAMS];
  GstCaps *caps = gst_caps_from_string (caps_str);
  GstAppSinkCallbacks cb = { 0 };
  Outputs out[N_STREAMS];
  guint sent[N_STREAMS] = { 0 };
  gboolean ended[N_STREAMS] = { FALSE };
  guint n_rebalance = 0;
  gint last_nodes = -1;
  gboolean moved = FALSE;
  GstBus *bus;
  GstMessage *msg;

  cb.new_sample = on_sample;
  gst_bin_add (GST_BIN (pipe), nnp);
  for (guint s = 0; s < N_STREAMS; s++) {
    GstElement *sink = nnp_test_make ("appsink", "sync", FALSE, NULL);
    gchar *sink_pad = g_strdup_printf ("sink_%u", s);
    gchar *src_pad = g_strdup_printf ("src_%u", s);

    srcs[s] = nnp_test_make ("appsrc", "format", GST_FORMAT_TIME, "block", TRUE, "max-bytes",
                             (guint64) (4 * N_FLOATS * sizeof (gfloat)), "caps", caps, NULL);
    g_mutex_init (&out[s].lock);
    out[s].sums = g_ptr_array_new_with_free_func (g_free);
    out[s].pts = g_array_new (FALSE, FALSE, sizeof (GstClockTime));
    gst_app_sink_set_callbacks (GST_APP_SINK (sink), &cb, &out[s], NULL);
    gst_bin_add_many (GST_BIN (pipe), srcs[s], sink, NULL);
    fail_unless (gst_element_link_pads (srcs[s], "src", nnp, sink_pad));
    fail_unless (gst_element_link_pads (nnp, src_pad, sink, "sink"));
    g_free (sink_pad);
    g_free (src_pad);
  }
  gst_caps_unref (caps);
  bus = gst_element_get_bus (pipe);
  fail_unless (gst_element_set_state (pipe, GST_STATE_PLAYING) != GST_STATE_CHANGE_FAILURE);

  /* balanced at first */
  push_round (srcs, sent, ended, 75);
  drain_bus (bus, -1, &n_rebalance, &last_nodes);
  g_object_set (nnp, "debug-slowdown", "0,3", NULL);
  /* stream 3 ends while the slowed windows are measured */
  push_round (srcs, sent, ended, 5);
  end_stream (srcs, ended, 3);
  while (!moved && sent[0] < MAX_FRAMES) {
    push_round (srcs, sent, ended, 10);
    moved = drain_bus (bus, 1, &n_rebalance, &last_nodes);
  }
  fail_unless (moved, "no nnpipeline-rebalance moving nodes off stage 1 in %u frames of stream 0",
               sent[0]);
  /* the message is posted after the switch: stream 2 ends next to it */
  end_stream (srcs, ended, 2);
  push_round (srcs, sent, ended, TAIL_FRAMES / 2);
  end_stream (srcs, ended, 0);
  end_stream (srcs, ended, 1);
  msg = gst_bus_timed_pop_filtered (bus, 120 * GST_SECOND, GST_MESSAGE_EOS | GST_MESSAGE_ERROR);
  fail_unless (msg != NULL, "no EOS");
  fail_unless (GST_MESSAGE_TYPE (msg) == GST_MESSAGE_EOS);
  gst_message_unref (msg);
  drain_bus (bus, 1, &n_rebalance, &last_nodes);
  fail_unless (last_nodes >= 0 && last_nodes < 8, "stage 1 holds %d of 16 nodes at the end",
               last_nodes);
  gst_element_set_state (pipe, GST_STATE_NULL);
  gst_object_unref (bus);
  gst_object_unref (pipe);
  g_print ("streams: %u / %u / %u / %u frames, %u re-balancings\n", sent[0], sent[1], sent[2],
           sent[3], n_rebalance);

  /* each stream: all its frames, in order, its own whole-model outputs */
  for (guint s = 0; s < N_STREAMS; s++) {
    check_outputs (path, caps_str, &out[s], SEED_OF (s), sent[s]);
    g_ptr_array_unref (out[s].sums);
    g_array_unref (out[s].pts);
    g_mutex_clear (&out[s].lock);
  }
  fail_unless (sent[3] < sent[2] && sent[2] < sent[0]);
  g_free (caps_str);
  g_free (path);
}

GST_END_TEST;

/* rebalance=true with remote stages is refused at start, naming the
 * property and why: devices= (no server is asked: the check comes first)
 * and a plan= file with a remote stage */
GST_START_TEST (test_remote_refused)
{
  gchar *path = nnp_test_model_path ("chain.onnx");
  GstElement *nnp = nnp_test_make ("nnpipeline", "model", path, "stages", "2", "devices",
                                   "cpu:1,remote://127.0.0.1:9", "rebalance", TRUE, NULL);
  GstBus *bus = gst_bus_new ();
  GError *err;

  gst_object_ref_sink (nnp);
  gst_element_set_bus (nnp, bus);
  fail_unless_equals_int (gst_element_set_state (nnp, GST_STATE_PAUSED), GST_STATE_CHANGE_FAILURE);
  err = nnp_test_pop_message (bus, GST_MESSAGE_ERROR, NULL, "rebalance");
  fail_unless (
      strstr (
          err->message,
          "property 'rebalance' cannot be true with remote stages (devices \"cpu:1,remote://127.0.0.1:9\")"),
      "%s", err->message);
  fail_unless (strstr (err->message, "node costs are their servers'"), "%s", err->message);
  g_error_free (err);
  gst_element_set_state (nnp, GST_STATE_NULL);

  /* a plan file with a remote stage: refused when the stages are built
   * (static shapes: at start too) */
  {
    NnpPlanRequest req = { 0 };
    NnpModel *model = nnp_model_load (path, NULL);
    NnpPlan *plan;
    gchar *dir = g_dir_make_tmp ("rebalance-XXXXXX", NULL);
    gchar *plan_path = g_build_filename (dir, "plan.json", NULL);
    GError *perr = NULL;

    fail_unless (model != NULL && dir != NULL);
    req.n_stages = 2;
    req.devices = "cpu:1,remote://127.0.0.1:9";
    req.cost = NNP_COST_ESTIMATE;
    plan = nnp_plan_make (model, NULL, 0, &req, NULL, &perr);
    fail_unless (plan != NULL, "%s", perr ? perr->message : "");
    fail_unless (nnp_plan_save (plan, plan_path, &perr), "%s", perr ? perr->message : "");
    g_object_set (nnp, "devices", NULL, "stages", NULL, "model", NULL, "plan", plan_path, NULL);
    fail_unless_equals_int (gst_element_set_state (nnp, GST_STATE_PAUSED),
                            GST_STATE_CHANGE_FAILURE);
    err = nnp_test_pop_message (bus, GST_MESSAGE_ERROR, NULL, "rebalance");
    fail_unless (
        strstr (
            err->message,
            "property 'rebalance' cannot be true with remote stages (stage 1 on remote://127.0.0.1:9)"),
        "%s", err->message);
    g_error_free (err);
    gst_element_set_state (nnp, GST_STATE_NULL);
    g_unlink (plan_path);
    g_rmdir (dir);
    g_free (plan_path);
    g_free (dir);
    nnp_plan_free (plan);
    nnp_model_unref (model);
  }
  gst_element_set_bus (nnp, NULL);
  gst_object_unref (bus);
  gst_object_unref (nnp);
  g_free (path);
}

GST_END_TEST;

static Suite *
rebalance_suite (void)
{
  TCase *tc;
  Suite *s = nnp_test_suite_new ("nnpipeline-rebalance", 240, &tc);

  tcase_add_test (tc, test_library);
  tcase_add_test (tc, test_monitor);
  tcase_add_test (tc, test_library_replicas);
  tcase_add_test (tc, test_slow_stage1);
  tcase_add_test (tc, test_slow_stage0);
  tcase_add_test (tc, test_slow_replicas);
  tcase_add_test (tc, test_off);
  tcase_add_test (tc, test_streams);
  tcase_add_test (tc, test_remote_refused);
  return s;
}

GST_CHECK_MAIN (rebalance);
