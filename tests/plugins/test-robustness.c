/* Robustness of the stream-handling elements in whole pipelines:
 *
 * - nnpipeline forwards EOS that arrives before any caps or buffer (a
 *   model with dynamic input sizes has no stages then);
 * - flushing seeks on running nnpipeline / nnstage pipelines keep the
 *   frames flowing and the pipeline reaches EOS;
 * - stopping (NULL) mid-stream, with buffers in nnpipeline's queues,
 *   then running again from the start;
 * - a caps change mid-stream through nnpipeline.
 *
 * Self-contained (no test-common helpers): models from
 * NNP_TEST_MODELS_DIR (make-dag-models.py).  The frame counters are
 * refcounted and held by the sink's handoff, and every test stops its
 * pipeline before asserting (under CK_FORK=no a failed assertion leaves
 * the test function while streaming threads may still run). */
#include <gst/check/gstcheck.h>
#include <gst/app/gstappsink.h>
#include <gst/app/gstappsrc.h>

#include <glib/gstdio.h>

#include <string.h>
#include <unistd.h>

#define TIMEOUT_S 30

static gchar *
model_path (const gchar *name)
{
  const gchar *dir = g_getenv ("NNP_TEST_MODELS_DIR");

  fail_unless (dir != NULL, "NNP_TEST_MODELS_DIR is not set");
  return g_build_filename (dir, name, NULL);
}

static GstElement *
launch (const gchar *fmt, ...)
{
  GError *err = NULL;
  GstElement *p;
  gchar *desc;
  va_list ap;

  va_start (ap, fmt);
  desc = g_strdup_vprintf (fmt, ap);
  va_end (ap);
  p = gst_parse_launch (desc, &err);
  fail_unless (p != NULL && err == NULL, "%s: %s", desc, err ? err->message : "?");
  g_free (desc);
  return p;
}

/* Wait for EOS (TRUE) or an error (fails) for up to TIMEOUT_S. */
static gboolean
wait_eos (GstElement *p)
{
  GstBus *bus = gst_element_get_bus (p);
  GstMessage *msg =
      gst_bus_timed_pop_filtered (bus, TIMEOUT_S * GST_SECOND, GST_MESSAGE_EOS | GST_MESSAGE_ERROR);
  gboolean eos = FALSE;

  if (msg && GST_MESSAGE_TYPE (msg) == GST_MESSAGE_ERROR) {
    GError *err = NULL;
    gchar *dbg = NULL;

    gst_message_parse_error (msg, &err, &dbg);
    /* stop first: nothing may keep running into the test's state */
    gst_element_set_state (p, GST_STATE_NULL);
    fail ("error from %s: %s (%s)", GST_OBJECT_NAME (msg->src), err->message, dbg ? dbg : "");
  }
  eos = msg != NULL;
  if (msg)
    gst_message_unref (msg);
  gst_object_unref (bus);
  return eos;
}

static void
set_state_sync (GstElement *p, GstState state)
{
  GstStateChangeReturn ret = gst_element_set_state (p, state);

  if (ret == GST_STATE_CHANGE_ASYNC)
    ret = gst_element_get_state (p, NULL, NULL, TIMEOUT_S * GST_SECOND);
  fail_unless (ret != GST_STATE_CHANGE_FAILURE, "state change to %s failed",
               gst_element_state_get_name (state));
  fail_unless (ret != GST_STATE_CHANGE_ASYNC, "state change to %s timed out",
               gst_element_state_get_name (state));
}

/* ------------------------------------------------------------------------ */

/* Frames counted at the sink (fakesink handoff).  Refcounted and held by
 * the handoff connection too: under CK_FORK=no a failed assertion jumps
 * out of the test while the sink may still be calling the handoff, so the
 * counter must not live on the test's stack (and the tests stop the
 * pipeline before asserting). */
typedef struct {
  gint ref_count;
  GMutex lock;
  GCond cond;
  guint frames;
  guint sleep_us; /* a slow sink: the queues fill up */
} Counter;

static Counter *
counter_new (guint sleep_us)
{
  Counter *c = g_new0 (Counter, 1);

  c->ref_count = 1;
  g_mutex_init (&c->lock);
  g_cond_init (&c->cond);
  c->sleep_us = sleep_us;
  return c;
}

static Counter *
counter_ref (Counter *c)
{
  g_atomic_int_inc (&c->ref_count);
  return c;
}

static void
counter_unref (Counter *c)
{
  if (!g_atomic_int_dec_and_test (&c->ref_count))
    return;
  g_mutex_clear (&c->lock);
  g_cond_clear (&c->cond);
  g_free (c);
}

static void
counter_unref_closure (gpointer data, GClosure *closure)
{
  counter_unref (data);
}

static void
set_frames (Counter *c, guint n, guint sleep_us)
{
  g_mutex_lock (&c->lock);
  c->frames = n;
  c->sleep_us = sleep_us;
  g_mutex_unlock (&c->lock);
}

static void
on_handoff (GstElement *sink, GstBuffer *buf, GstPad *pad, gpointer data)
{
  Counter *c = data;
  guint sleep_us;

  g_mutex_lock (&c->lock);
  sleep_us = c->sleep_us;
  g_mutex_unlock (&c->lock);
  if (sleep_us)
    g_usleep (sleep_us);
  g_mutex_lock (&c->lock);
  c->frames++;
  g_cond_broadcast (&c->cond);
  g_mutex_unlock (&c->lock);
}

/* Wait until the sink has seen at least n frames (FALSE on timeout). */
static gboolean
wait_frames (Counter *c, guint n)
{
  gint64 end = g_get_monotonic_time () + TIMEOUT_S * G_TIME_SPAN_SECOND;
  gboolean ok = TRUE;

  g_mutex_lock (&c->lock);
  while (c->frames < n && ok)
    ok = g_cond_wait_until (&c->cond, &c->lock, end);
  ok = c->frames >= n;
  g_mutex_unlock (&c->lock);
  return ok;
}

static guint
get_frames (Counter *c)
{
  guint n;

  g_mutex_lock (&c->lock);
  n = c->frames;
  g_mutex_unlock (&c->lock);
  return n;
}

static GstElement *
counting_pipeline (const gchar *middle, Counter *c, guint num_buffers)
{
  GstElement *p, *sink;

  p = launch (
      "videotestsrc num-buffers=%u ! video/x-raw,width=32,height=32,framerate=30/1 ! nnconvert ! %s ! fakesink name=sink sync=false signal-handoffs=true",
      num_buffers, middle);
  sink = gst_bin_get_by_name (GST_BIN (p), "sink");
  g_signal_connect_data (sink, "handoff", G_CALLBACK (on_handoff), counter_ref (c),
                         counter_unref_closure, 0);
  gst_object_unref (sink);
  return p;
}

/* ------------------------------------------------------------------------ */

/* EOS before any caps or buffer: the model's input sizes are dynamic, so
 * nnpipeline has no stages yet; EOS must still come out. */
GST_START_TEST (test_pipeline_eos_no_frames)
{
  gchar *model = model_path ("residual.onnx");
  gchar *empty = NULL;
  gint fd = g_file_open_tmp ("nnp-robustness-XXXXXX", &empty, NULL);
  GstElement *p;

  /* an empty file: filesrc sends EOS before any caps reach nnpipeline */
  fail_unless (fd >= 0);
  close (fd);
  p = launch (
      "filesrc location=%s ! other/tensors,format=static,num_tensors=1,types=float32,dimensions=8:8:3:1,framerate=0/1 ! "
      "nnpipeline model=%s stages=2 ! fakesink",
      empty, model);
  fail_if (gst_element_set_state (p, GST_STATE_PLAYING) == GST_STATE_CHANGE_FAILURE);
  fail_unless (wait_eos (p), "no EOS within %d s", TIMEOUT_S);
  set_state_sync (p, GST_STATE_NULL);
  gst_object_unref (p);
  g_unlink (empty);
  g_free (empty);
  g_free (model);
}

GST_END_TEST;

/* Same with a static-shape chain of nnstage: EOS through an unbuilt
 * nnstage (basetransform) as a reference that the whole thing works. */
GST_START_TEST (test_stage_eos_no_frames)
{
  gchar *model = model_path ("residual.onnx");
  GstElement *p = launch (
      "appsrc name=src format=time caps=\"other/tensors,format=static,num_tensors=1,types=float32,dimensions=8:8:3:1,"
      "framerate=0/1\" ! nnstage model=%s ! fakesink",
      model);
  GstElement *src = gst_bin_get_by_name (GST_BIN (p), "src");

  /* no data yet: the state change completes asynchronously */
  fail_if (gst_element_set_state (p, GST_STATE_PLAYING) == GST_STATE_CHANGE_FAILURE);
  gst_app_src_end_of_stream (GST_APP_SRC (src));
  fail_unless (wait_eos (p), "no EOS within %d s", TIMEOUT_S);
  set_state_sync (p, GST_STATE_NULL);
  gst_object_unref (src);
  gst_object_unref (p);
  g_free (model);
}

GST_END_TEST;

/* Flushing seeks back to the start while frames flow, then EOS. */
static void
check_flush_seeks (const gchar *middle)
{
  Counter *c = counter_new (2000);
  GstElement *p = counting_pipeline (middle, c, 60);
  const gchar *problem = NULL;
  gint at = -1;

  set_state_sync (p, GST_STATE_PLAYING);
  for (gint i = 0; i < 4 && problem == NULL; i++) {
    at = i;
    if (!wait_frames (c, get_frames (c) + 3))
      problem = "frames stopped before seek";
    else if (!gst_element_seek_simple (
                 p, GST_FORMAT_TIME, GST_SEEK_FLAG_FLUSH | (i % 2 ? GST_SEEK_FLAG_ACCURATE : 0), 0))
      problem = "seek refused";
    else if (!wait_frames (c, get_frames (c) + 3))
      problem = "no frames after seek";
  }
  if (problem == NULL && !wait_eos (p))
    problem = "no EOS after the seeks";
  /* stop before asserting */
  set_state_sync (p, GST_STATE_NULL);
  gst_object_unref (p);
  counter_unref (c);
  fail_unless (problem == NULL, "%s: %s (%d)", middle, problem, at);
}

GST_START_TEST (test_flush_seek)
{
  gchar *model = model_path ("residual.onnx");
  gchar *a = g_strdup_printf ("nnpipeline model=%s stages=3 queue-size=2", model);
  gchar *b = g_strdup_printf ("nnstage model=%s threads=2", model);

  check_flush_seeks (a);
  check_flush_seeks (b);
  g_free (a);
  g_free (b);
  g_free (model);
}

GST_END_TEST;

/* NULL while buffers wait in nnpipeline's queues (slow sink), then the same
 * pipeline again from the start, to EOS. */
GST_START_TEST (test_stop_midstream)
{
  gchar *model = model_path ("residual.onnx");
  gchar *mid = g_strdup_printf ("nnpipeline model=%s stages=3 queue-size=3", model);
  Counter *c = counter_new (20000);
  GstElement *p = counting_pipeline (mid, c, 40);
  gint stalled = -1;
  gboolean eos;
  guint frames;

  for (gint round = 0; round < 3; round++) {
    set_frames (c, 0, 20000);
    set_state_sync (p, GST_STATE_PLAYING);
    if (!wait_frames (c, 2) && stalled < 0)
      stalled = round;
    set_state_sync (p, round == 1 ? GST_STATE_READY : GST_STATE_NULL);
  }
  set_frames (c, 0, 0);
  set_state_sync (p, GST_STATE_PLAYING);
  eos = wait_eos (p);
  frames = get_frames (c);
  /* stop before asserting */
  set_state_sync (p, GST_STATE_NULL);
  gst_object_unref (p);
  counter_unref (c);
  g_free (mid);
  g_free (model);
  fail_unless (stalled < 0, "round %d: no frames", stalled);
  fail_unless (eos, "no EOS after restarting");
  fail_unless_equals_int (frames, 40);
}

GST_END_TEST;

/* Frame sizes change mid-stream: every frame comes out, at its size. */
GST_START_TEST (test_caps_change)
{
  gchar *model = model_path ("residual.onnx");
  GstElement *p = launch (
      "appsrc name=src format=time ! nnpipeline model=%s stages=2 ! appsink name=sink sync=false",
      model);
  GstElement *src = gst_bin_get_by_name (GST_BIN (p), "src");
  GstElement *sink = gst_bin_get_by_name (GST_BIN (p), "sink");
  const gint sizes[] = { 8, 16, 8, 12 };

  fail_if (gst_element_set_state (p, GST_STATE_PLAYING) == GST_STATE_CHANGE_FAILURE);
  for (guint s = 0; s < G_N_ELEMENTS (sizes); s++) {
    gint n = sizes[s];
    gchar *str = g_strdup_printf (
        "other/tensors,format=static,num_tensors=1,types=float32,dimensions=%d:%d:3:1,framerate=0/1",
        n, n);
    GstCaps *caps = gst_caps_from_string (str);

    gst_app_src_set_caps (GST_APP_SRC (src), caps);
    gst_caps_unref (caps);
    g_free (str);
    for (gint f = 0; f < 3; f++) {
      gsize bytes = (gsize) 3 * n * n * sizeof (gfloat);
      GstBuffer *buf = gst_buffer_new_allocate (NULL, bytes, NULL);

      gst_buffer_memset (buf, 0, 0, bytes);
      GST_BUFFER_PTS (buf) = (s * 3 + f) * GST_MSECOND;
      fail_unless_equals_int (gst_app_src_push_buffer (GST_APP_SRC (src), buf), GST_FLOW_OK);
    }
  }
  gst_app_src_end_of_stream (GST_APP_SRC (src));
  for (guint s = 0; s < G_N_ELEMENTS (sizes); s++) {
    for (gint f = 0; f < 3; f++) {
      GstSample *smp = gst_app_sink_try_pull_sample (GST_APP_SINK (sink), TIMEOUT_S * GST_SECOND);
      GstBuffer *buf;

      fail_unless (smp != NULL, "size %d frame %d: nothing out", sizes[s], f);
      buf = gst_sample_get_buffer (smp);
      fail_unless_equals_uint64 (GST_BUFFER_PTS (buf), (s * 3 + f) * GST_MSECOND);
      /* residual: 8 channels out */
      fail_unless_equals_int (gst_buffer_get_size (buf),
                              8 * sizes[s] * sizes[s] * (gint) sizeof (gfloat));
      gst_sample_unref (smp);
    }
  }
  fail_unless (wait_eos (p));
  set_state_sync (p, GST_STATE_NULL);
  gst_object_unref (src);
  gst_object_unref (sink);
  gst_object_unref (p);
  g_free (model);
}

GST_END_TEST;

static Suite *
robustness_suite (void)
{
  Suite *s = suite_create ("robustness");
  TCase *tc = tcase_create ("general");

  tcase_set_timeout (tc, 240);
  suite_add_tcase (s, tc);
  tcase_add_test (tc, test_pipeline_eos_no_frames);
  tcase_add_test (tc, test_stage_eos_no_frames);
  tcase_add_test (tc, test_flush_seek);
  tcase_add_test (tc, test_stop_midstream);
  tcase_add_test (tc, test_caps_change);
  return s;
}

GST_CHECK_MAIN (robustness);
