/* Replicated stages of nnpipeline (issue 13 item 2; several streams and
 * batching: test-streams.c):
 *
 * - replicas: `devices=cpu:1,cpu:1*2` runs stage 1 on two replicas; the
 *   outputs are identical to the whole model's and in order, and both
 *   replicas did work;
 * - max-replicas=2 on a model whose bottleneck is one big Conv
 *   (benchmarks/make-bottleneck-model.py): the partitioner replicates the
 *   stage holding it (plan message), outputs still the whole model's;
 *   without max-replicas nothing is replicated;
 * - pin=true with `cpu:1*2`: each replica's thread on a core of its own
 *   (the threads' affinities in /proc), none pinned without pin;
 * - replicas with 3 streams: each stream still equals its own run. */
#include "test-streams-common.h"

#include <string.h>

/* Frames each nnstage inside the replicated stage `name` of p ran. */
static void
replica_frames (GstElement *p, const gchar *name, guint want_replicas)
{
  GstElement *rep = gst_bin_get_by_name (GST_BIN (p), name);
  GstIterator *it;
  GValue v = G_VALUE_INIT;
  guint n = 0;
  guint64 total = 0;

  fail_unless (rep != NULL && GST_IS_BIN (rep), "no replicated %s", name);
  it = gst_bin_iterate_elements (GST_BIN (rep));
  while (gst_iterator_next (it, &v) == GST_ITERATOR_OK) {
    GstElement *e = g_value_get_object (&v);
    GstElementFactory *f = gst_element_get_factory (e);

    if (f && g_strcmp0 (GST_OBJECT_NAME (f), "nnstage") == 0) {
      guint64 frames = 0;

      g_object_get (e, "frames", &frames, NULL);
      fail_unless (frames > 0, "%s: replica %s ran no frame", name, GST_OBJECT_NAME (e));
      total += frames;
      n++;
    }
    g_value_unset (&v);
  }
  gst_iterator_free (it);
  fail_unless_equals_int (n, want_replicas);
  g_object_get (rep, "frames", &total, NULL);
  fail_unless (total > 0);
  gst_object_unref (rep);
}

/* The output of h held back for a while, so that frames pile up in the
 * replicas whatever the machine's load: the dispatcher then has to use
 * every replica (with output flowing, one fast replica may be idle each
 * time a frame comes, and rightly gets them all). */
typedef struct {
  GstPad *pad;
  gulong id;
} Hold;

static GstPadProbeReturn
hold_probe (GstPad *pad, GstPadProbeInfo *info, gpointer data)
{
  return GST_PAD_PROBE_OK;
}

static gpointer
release_thread (gpointer data)
{
  Hold *hold = data;

  g_usleep (300 * 1000);
  gst_pad_remove_probe (hold->pad, hold->id);
  return NULL;
}

/* Push frames 0..n-1 of f into h with its output held for 300 ms. */
static void
push_held (GstHarness *h, Feed *f, guint n)
{
  Hold hold;
  GThread *t;

  hold.pad = h->sinkpad;
  hold.id = gst_pad_add_probe (h->sinkpad, GST_PAD_PROBE_TYPE_BLOCK | GST_PAD_PROBE_TYPE_BUFFER,
                               hold_probe, NULL, NULL);
  t = g_thread_new ("release", release_thread, &hold);
  nnp_test_push_frames (h, n_floats (f), f->seed, 0, n);
  g_thread_join (t);
}

/* Replicated stages: outputs identical to the whole model's, in order. */
static void
check_replicas (const gchar *model_name, const gchar *stages, const gchar *devices,
                const gchar *replicated, guint replicas)
{
  gchar *model = nnp_test_model_path (model_name);
  GstElement *p = nnp_test_make ("nnpipeline", "model", model, "stages", stages, "devices", devices,
                                 "stats-interval", 0, NULL);
  GstHarness *h;
  Feed f;
  GPtrArray *ref, *got;
  gchar *caps, *what = g_strdup_printf ("%s devices=%s", model_name, devices);
  guint n = 60;

  init_feeds (&f, 1, n);
  gst_object_ref_sink (p);
  h = gst_harness_new_with_element (p, "sink", "src");
  caps = nnp_test_tensor_caps (3, f.h_px, f.w_px);
  gst_harness_set_src_caps_str (h, caps);
  g_free (caps);
  ref = reference (model, &f, n);
  got = g_ptr_array_new_with_free_func ((GDestroyNotify) gst_buffer_unref);
  push_held (h, &f, n);
  nnp_test_pull_frames (h, 0, n, got);
  nnp_test_finish_eos (h);
  for (guint i = 0; i < n; i++) {
    GstBuffer *b = g_ptr_array_index (got, i);

    fail_unless_equals_uint64 (GST_BUFFER_PTS (b), i * NNP_TEST_FRAME_DURATION);
    assert_same (g_ptr_array_index (ref, i), b, what, i);
  }
  replica_frames (p, replicated, replicas);
  g_ptr_array_unref (ref);
  g_ptr_array_unref (got);
  gst_harness_teardown (h);
  gst_object_unref (p);
  g_free (model);
  g_free (what);
}

GST_START_TEST (test_replicas)
{
  check_replicas ("residual.onnx", "2", "cpu:1,cpu:1*2", "stage1", 2);
  check_replicas ("unet.onnx", "2", "cpu:1*2,cpu:1", "stage0", 2);
  check_replicas ("two-out.onnx", "1", "cpu:1*3", "stage0", 3);
}

GST_END_TEST;

/* Cores that threads of this process are pinned to alone (a thread whose
 * affinity is one core), as a bit mask. */
static guint64
single_core_threads (void)
{
  GDir *dir = g_dir_open ("/proc/self/task", 0, NULL);
  const gchar *tid;
  guint64 mask = 0;

  fail_unless (dir != NULL);
  while ((tid = g_dir_read_name (dir))) {
    gchar *path = g_strdup_printf ("/proc/self/task/%s/status", tid);
    const gchar *key = "Cpus_allowed_list:\t";
    gchar *text = NULL, *line, *end;
    gint64 core;

    if (g_file_get_contents (path, &text, NULL, NULL) && (line = strstr (text, key))) {
      core = g_ascii_strtoll (line + strlen (key), &end, 10);
      /* one core alone, not a list or range */
      if (end != line + strlen (key) && *end == '\n' && core >= 0 && core < 64)
        mask |= G_GUINT64_CONSTANT (1) << core;
    }
    g_free (text);
    g_free (path);
  }
  g_dir_close (dir);
  return mask;
}

/* A stage pins its thread only while it runs (nnp_thread_pool_enter/_leave),
 * so the cores are seen by watching the threads while frames are in flight. */
typedef struct {
  gint stop;
  guint64 mask;
} Watch;

static gpointer
watch_thread (gpointer data)
{
  Watch *w = data;

  while (!g_atomic_int_get (&w->stop)) {
    w->mask |= single_core_threads ();
    g_usleep (100);
  }
  return NULL;
}

/* pin=true: the replicas of `cpu:1*2` run on cores of their own
 * (each while it runs); the
 * outputs are still the whole model's, in order. */
GST_START_TEST (test_replicas_pinned)
{
  gchar *model = nnp_test_model_path ("residual.onnx");
  gint n_cores = MIN (g_get_num_processors (), 2);

  for (gint pin = 0; pin <= 1; pin++) {
    GstElement *p = nnp_test_make ("nnpipeline", "model", model, "stages", "1", "devices",
                                   "cpu:1*2", "pin", pin, "stats-interval", 0, NULL);
    GstHarness *h;
    Feed f;
    GPtrArray *ref, *got;
    gchar *caps;
    guint n = 20;
    guint64 mask;

    Watch w = { 0, 0 };
    GThread *watcher;

    init_feeds (&f, 1, n);
    /* frames big enough that a run lasts milliseconds */
    f.h_px = f.w_px = 160;
    gst_object_ref_sink (p);
    fail_unless_equals_uint64 (single_core_threads (), 0);
    h = gst_harness_new_with_element (p, "sink", "src");
    caps = nnp_test_tensor_caps (3, f.h_px, f.w_px);
    gst_harness_set_src_caps_str (h, caps);
    g_free (caps);
    ref = reference (model, &f, n);
    got = g_ptr_array_new_with_free_func ((GDestroyNotify) gst_buffer_unref);
    watcher = g_thread_new ("watch", watch_thread, &w);
    push_held (h, &f, n);
    nnp_test_pull_frames (h, 0, n, got);
    g_atomic_int_set (&w.stop, 1);
    g_thread_join (watcher);
    mask = w.mask;
    nnp_test_finish_eos (h);
    /* and no thread is left pinned once the frames are through */
    fail_unless_equals_uint64 (single_core_threads (), 0);
    for (guint i = 0; i < n; i++)
      assert_same (g_ptr_array_index (ref, i), g_ptr_array_index (got, i), "pinned replicas", i);
    replica_frames (p, "stage0", 2);
    /* pin: both cores of 0..1 (one on a 1-core machine); none without */
    fail_unless_equals_uint64 (mask, pin ? (G_GUINT64_CONSTANT (1) << n_cores) - 1 : 0);
    g_ptr_array_unref (ref);
    g_ptr_array_unref (got);
    gst_harness_teardown (h);
    gst_object_unref (p);
  }
  g_free (model);
}

GST_END_TEST;

/* The replicas of the stages of the nnpipeline-plan message on bus. */
static gint
plan_replicas (GstBus *bus, gint *n_stages)
{
  GstMessage *m;
  gint total = 0;

  while ((m = gst_bus_pop_filtered (bus, GST_MESSAGE_ELEMENT))) {
    const GstStructure *s = gst_message_get_structure (m);

    if (gst_structure_has_name (s, "nnpipeline-plan")) {
      const GValue *stages = gst_structure_get_value (s, "stages");

      *n_stages = (gint) gst_value_array_get_size (stages);
      for (gint k = 0; k < *n_stages; k++) {
        const GstStructure *st = gst_value_get_structure (gst_value_array_get_value (stages, k));
        gint r = 0;

        fail_unless (gst_structure_get_int (st, "replicas", &r));
        total += r;
      }
      gst_message_unref (m);
      return total;
    }
    gst_message_unref (m);
  }
  fail ("no nnpipeline-plan message");
  return 0;
}

static void
check_max_replicas (guint max_replicas, gint want_replicas)
{
  gchar *model = nnp_test_model_path ("bottleneck.onnx");
  GstElement *p;

  /* the predicted choice (a timing trial of plain threading against the
   * replicas could pick either on a loaded machine: partition-replicas
   * tests it) */
  g_setenv ("NNP_PLAN_MEASURE", "0", TRUE);
  p = nnp_test_make ("nnpipeline", "model", model, "devices", "cpu:1,cpu:1", "max-replicas",
                     max_replicas, "stats-interval", 0, NULL);
  GstBus *bus = gst_bus_new ();
  GstHarness *h;
  Feed f;
  GPtrArray *ref, *got;
  gchar *caps;
  guint n = 20;
  gint n_stages = 0, replicas;

  init_feeds (&f, 1, n);
  gst_object_ref_sink (p);
  gst_element_set_bus (p, bus);
  h = gst_harness_new_with_element (p, "sink", "src");
  caps = nnp_test_tensor_caps (3, f.h_px, f.w_px);
  gst_harness_set_src_caps_str (h, caps);
  g_free (caps);
  ref = reference (model, &f, n);
  got = g_ptr_array_new_with_free_func ((GDestroyNotify) gst_buffer_unref);
  push_held (h, &f, n);
  nnp_test_pull_frames (h, 0, n, got);
  nnp_test_finish_eos (h);
  for (guint i = 0; i < n; i++)
    assert_same (g_ptr_array_index (ref, i), g_ptr_array_index (got, i), "max-replicas", i);
  replicas = plan_replicas (bus, &n_stages);
  /* with replicas: one stage of 2 on the two cores (the big Conv cannot be
   * split); without: no stage replicated */
  fail_unless (replicas - n_stages == want_replicas - 1,
               "max-replicas=%u: %d stages, %d replicas in all", max_replicas, n_stages, replicas);
  if (want_replicas > 1)
    replica_frames (p, "stage0", want_replicas);
  no_error (bus);
  g_ptr_array_unref (ref);
  g_ptr_array_unref (got);
  gst_harness_teardown (h);
  gst_element_set_bus (p, NULL);
  gst_object_unref (bus);
  gst_object_unref (p);
  g_free (model);
}

GST_START_TEST (test_max_replicas)
{
  check_max_replicas (2, 2);
  check_max_replicas (1, 1);
}

GST_END_TEST;

/* Replicas with several streams: each stream still equals its own run. */
GST_START_TEST (test_streams_replicas)
{
  gchar *model = nnp_test_model_path ("residual.onnx");
  Feed feeds[3];
  guint expect[3] = { FRAMES, FRAMES + 5, FRAMES };
  GstBus *bus;
  GstElement *p;

  init_feeds (feeds, 3, FRAMES);
  feeds[1].n = FRAMES + 5;
  run_streams (model, "cpu:1,cpu:1*2", feeds, 3, expect, &bus, &p);
  no_error (bus);
  replica_frames (p, "stage1", 2);
  finish (p, bus, feeds, 3);
  g_free (model);
}

GST_END_TEST;

static Suite *
streams_replicas_suite (void)
{
  TCase *tc;
  Suite *s = nnp_test_suite_new ("nnpipeline-replicas", 120, &tc);

  tcase_add_test (tc, test_replicas);
  tcase_add_test (tc, test_streams_replicas);
  tcase_add_test (tc, test_replicas_pinned);
  tcase_add_test (tc, test_max_replicas);
  return s;
}

GST_CHECK_MAIN (streams_replicas);
