/* Several streams through one nnpipeline (request pads sink_%u / src_%u,
 * issue 13 item 1) and batching (replicated stages: test-streams-replicas.c):
 *
 * - 4 streams of different content (their own seeds, timestamps and
 *   segments), pushed from 4 threads at once into one nnpipeline of 2
 *   stages: each stream's outputs equal its own run through a whole-model
 *   nnstage, frame for frame, in order, with its own PTS, caps, segment and
 *   EOS, counted per stream at EOS;
 * - a stream that ends early leaves the others running to the end;
 * - a stream that errors (a frame of the wrong size; caps the model cannot
 *   take) ends alone with a warning naming it, the others run to the end;
 * - a model whose inputs have another size on one stream: both streams'
 *   outputs right (the stages re-specialise between frames);
 * - batching (batch-size, batch-timeout) on models with a dynamic batch
 *   dim: 4 streams batched, each output bit for bit its own single-frame
 *   run (Conv, pooling, Gemm, Softmax, two outputs of different ranks),
 *   the stages ran fewer buffers than frames; streams ending early or one
 *   slow stream: the others go on, counts at EOS; streams of two sizes go
 *   in separate batches; a flush takes a waiting frame out of its batch; a
 *   model with a fixed batch dim fails the start naming its input. */
#include "test-streams-common.h"

#include <string.h>

/* frames-out of the final nnpipeline-stats message on bus (posted before the
 * last stream's EOS left). */
static guint64
final_frames (GstBus *bus)
{
  GstMessage *m;

  while ((m = gst_bus_pop_filtered (bus, GST_MESSAGE_ELEMENT))) {
    const GstStructure *s = gst_message_get_structure (m);
    gboolean final = FALSE;
    guint64 out = 0;

    if (gst_structure_has_name (s, "nnpipeline-stats")
        && gst_structure_get_boolean (s, "final", &final) && final) {
      fail_unless (gst_structure_get_uint64 (s, "frames-out", &out));
      gst_message_unref (m);
      return out;
    }
    gst_message_unref (m);
  }
  fail ("no final nnpipeline-stats message");
  return 0;
}

GST_START_TEST (test_four_streams)
{
  gchar *model = nnp_test_model_path ("residual.onnx");
  Feed feeds[N_STREAMS];
  guint expect[N_STREAMS];
  GstBus *bus;
  GstElement *p;

  init_feeds (feeds, N_STREAMS, FRAMES);
  for (guint i = 0; i < N_STREAMS; i++) {
    /* different lengths too */
    feeds[i].n = FRAMES + 3 * i;
    feeds[i].metas = TRUE;
    expect[i] = feeds[i].n;
  }
  run_streams (model, NULL, feeds, N_STREAMS, expect, &bus, &p);
  /* the stages' statistics cover every stream */
  fail_unless_equals_uint64 (final_frames (bus), 4 * FRAMES + 3 * 6);
  no_error (bus);
  finish (p, bus, feeds, N_STREAMS);
  g_free (model);
}

GST_END_TEST;

GST_START_TEST (test_stream_ends_early)
{
  gchar *model = nnp_test_model_path ("unet.onnx");
  Feed feeds[3];
  guint expect[3] = { FRAMES, 2, FRAMES };
  GstBus *bus;
  GstElement *p;

  init_feeds (feeds, 3, FRAMES);
  feeds[1].n = 2;
  run_streams (model, NULL, feeds, 3, expect, &bus, &p);
  no_error (bus);
  finish (p, bus, feeds, 3);
  g_free (model);
}

GST_END_TEST;

GST_START_TEST (test_stream_errors)
{
  gchar *model = nnp_test_model_path ("residual.onnx");
  Feed feeds[3];
  guint expect[3] = { FRAMES, 5, FRAMES };
  GstBus *bus;
  GstElement *p;
  GError *err;

  init_feeds (feeds, 3, FRAMES);
  feeds[1].bad_frame = 5;
  run_streams (model, NULL, feeds, 3, expect, &bus, &p);
  fail_unless_equals_int (feeds[1].last, GST_FLOW_ERROR);
  err = nnp_test_pop_message (bus, GST_MESSAGE_WARNING, NULL, "bad frame");
  fail_unless (strstr (err->message,
                       "stream 1 (pad sink_1) stopped: a frame of 3068 bytes, its caps say 3072")
                   != NULL,
               "%s", err->message);
  g_error_free (err);
  no_error (bus);
  finish (p, bus, feeds, 3);
  g_free (model);
}

GST_END_TEST;

/* A stream whose caps the model cannot take (1 channel) is refused alone. */
GST_START_TEST (test_stream_bad_caps)
{
  gchar *model = nnp_test_model_path ("residual.onnx");
  Feed feeds[2];
  guint expect[2] = { FRAMES, FRAMES };
  GstBus *bus;
  GstElement *p = make_pipeline (model, NULL, &bus);
  GstHarness *bad;
  GError *err;
  GstEvent *ev;
  gchar *caps = nnp_test_tensor_caps (1, 16, 16);

  init_feeds (feeds, 2, FRAMES);
  feeds[1].index = 2;
  start_feed (p, &feeds[0]);
  bad = gst_harness_new_with_element (p, "sink_1", "src_1");
  fail_unless (gst_harness_push_event (bad, gst_event_new_stream_start ("bad")));
  /* refused (a sticky event: the push may still say it was stored) */
  gst_harness_push_event (bad, gst_event_new_caps (gst_caps_from_string (caps)));
  g_free (caps);
  {
    GstSegment segment;

    gst_segment_init (&segment, GST_FORMAT_TIME);
    fail_unless (gst_harness_push_event (bad, gst_event_new_segment (&segment)));
  }
  err = nnp_test_pop_message (bus, GST_MESSAGE_WARNING, NULL, "bad caps");
  fail_unless (strstr (err->message, "stream 1 (pad sink_1) stopped:") != NULL
                   && strstr (err->message, "input 'x'") != NULL,
               "%s", err->message);
  g_error_free (err);
  fail_unless_equals_int (gst_harness_push (bad, nnp_test_random_buffer (16 * 16, 1)),
                          GST_FLOW_NOT_NEGOTIATED);
  /* its EOS came out */
  for (gboolean eos = FALSE; !eos;) {
    ev = gst_harness_pull_event (bad);
    fail_unless (ev != NULL, "no EOS on src_1");
    eos = GST_EVENT_TYPE (ev) == GST_EVENT_EOS;
    gst_event_unref (ev);
  }
  start_feed (p, &feeds[1]);
  feed_and_check (model, feeds, 2, expect);
  no_error (bus);
  gst_harness_teardown (bad);
  finish (p, bus, feeds, 2);
  g_free (model);
}

GST_END_TEST;

/* Streams of different sizes share the stages. */
GST_START_TEST (test_streams_sizes)
{
  gchar *model = nnp_test_model_path ("unet.onnx");
  Feed feeds[2];
  guint expect[2] = { FRAMES, FRAMES };
  GstBus *bus;
  GstElement *p;

  init_feeds (feeds, 2, FRAMES);
  feeds[1].h_px = 8;
  feeds[1].w_px = 24;
  run_streams (model, NULL, feeds, 2, expect, &bus, &p);
  no_error (bus);
  finish (p, bus, feeds, 2);
  g_free (model);
}

GST_END_TEST;


/* Buffers stage k of p ran (a batch counts once). */
static guint64
stage_buffers (GstElement *p, const gchar *stage)
{
  GstElement *e = gst_bin_get_by_name (GST_BIN (p), stage);
  guint64 frames = 0;

  fail_unless (e != NULL, "no %s", stage);
  g_object_get (e, "frames", &frames, NULL);
  gst_object_unref (e);
  return frames;
}

/* Feeds through one nnpipeline with batch-size/batch-timeout; each stream's
 * outputs bit for bit its own whole-model run, counted at EOS; returns the
 * buffers stage0 ran. */
static guint64
run_batched (const gchar *model_name, const gchar *stages, guint batch, guint64 timeout,
             Feed *feeds, guint n, const guint *expect)
{
  gchar *model = nnp_test_model_path (model_name);
  GstBus *bus;
  GstElement *p = make_pipeline (model, NULL, &bus);
  guint64 total = 0, ran;

  g_object_set (p, "stages", stages, "batch-size", batch, "batch-timeout", timeout, NULL);
  for (guint i = 0; i < n; i++) {
    /* every frame's metas come out on it, on every path of a batch */
    feeds[i].metas = TRUE;
    start_feed (p, &feeds[i]);
    total += expect[i];
  }
  bit_exact = TRUE;
  feed_and_check (model, feeds, n, expect);
  bit_exact = FALSE;
  /* the statistics count frames, not batches */
  fail_unless_equals_uint64 (final_frames (bus), total);
  no_error (bus);
  ran = stage_buffers (p, "stage0");
  fail_unless (ran <= total, "%" G_GUINT64_FORMAT " buffers for %" G_GUINT64_FORMAT " frames", ran,
               total);
  finish (p, bus, feeds, n);
  g_free (model);
  return ran;
}

GST_START_TEST (test_batch_four_streams)
{
  const gchar *models[] = { "residual-batch.onnx", "mlp-batch.onnx" };
  const gchar *stages[] = { "2", "1" };

  for (guint m = 0; m < G_N_ELEMENTS (models); m++) {
    Feed feeds[N_STREAMS];
    guint expect[N_STREAMS];
    guint64 ran;

    init_feeds (feeds, N_STREAMS, FRAMES);
    for (guint i = 0; i < N_STREAMS; i++)
      expect[i] = FRAMES;
    /* caps may leave out the outer 1: the batch is on the model's dim 0 */
    feeds[1].short_caps = TRUE;
    /* a long timeout: batches leave when every stream has a frame in */
    ran = run_batched (models[m], stages[m], 4, 10 * GST_SECOND, feeds, N_STREAMS, expect);
    /* 4 threads push at once: most batches hold several frames */
    fail_unless (ran <= N_STREAMS * FRAMES / 2, "%s: %" G_GUINT64_FORMAT " batches for %u frames",
                 models[m], ran, N_STREAMS * FRAMES);
  }
}

GST_END_TEST;

/* Streams ending early (with a long timeout: the batch stops waiting for
 * an ended stream) and a slow stream (a short timeout: the others do not
 * wait for it long): all to the end, counted at EOS. */
GST_START_TEST (test_batch_ends_and_slow)
{
  Feed feeds[N_STREAMS];
  guint expect[N_STREAMS] = { FRAMES, 3, FRAMES, 12 };
  guint slow[N_STREAMS] = { FRAMES, FRAMES, 8, FRAMES };
  gint64 t0;

  init_feeds (feeds, N_STREAMS, FRAMES);
  feeds[1].n = 3;
  feeds[3].n = 12;
  run_batched ("residual-batch.onnx", "2", 4, 10 * GST_SECOND, feeds, N_STREAMS, expect);

  init_feeds (feeds, N_STREAMS, FRAMES);
  feeds[2].n = 8;
  feeds[2].delay_us = 200 * 1000;
  t0 = g_get_monotonic_time ();
  run_batched ("residual-batch.onnx", "2", 4, 5 * GST_MSECOND, feeds, N_STREAMS, slow);
  /* 1.6 s for the slow stream's 8 frames; the others did not take a
   * 200 ms step per frame (30 frames: 6 s) */
  fail_unless (g_get_monotonic_time () - t0 < 5 * G_USEC_PER_SEC,
               "the slow stream stalled the others");
}

GST_END_TEST;

/* Two sizes: frames of equal caps only share a batch. */
GST_START_TEST (test_batch_sizes)
{
  Feed feeds[N_STREAMS];
  guint expect[N_STREAMS] = { FRAMES, FRAMES, FRAMES, FRAMES };

  init_feeds (feeds, N_STREAMS, FRAMES);
  feeds[1].h_px = 24;
  feeds[3].h_px = 24;
  run_batched ("residual-batch.onnx", "2", 4, 20 * GST_MSECOND, feeds, N_STREAMS, expect);
}

GST_END_TEST;

typedef struct {
  Feed *f;
  GstFlowReturn ret;
  gint done;
} PushOne;

static gpointer
push_one_thread (gpointer data)
{
  PushOne *po = data;
  GstBuffer *b = nnp_test_random_frame (n_floats (po->f), 999, 0);

  GST_BUFFER_PTS (b) = stream_pts (po->f->index, 0);
  po->ret = gst_harness_push (po->f->h, b);
  g_atomic_int_set (&po->done, 1);
  return NULL;
}

/* A frame waiting for its batch (stream 1 sends nothing yet, the timeout is
 * long) leaves it on a flush of its stream (FLUSHING) and never comes out;
 * both streams then run to the end. */
GST_START_TEST (test_batch_flush)
{
  gchar *model = nnp_test_model_path ("residual-batch.onnx");
  Feed feeds[2];
  guint expect[2] = { FRAMES, FRAMES };
  GstBus *bus;
  GstElement *p = make_pipeline (model, NULL, &bus);
  PushOne po = { &feeds[0], GST_FLOW_OK, 0 };
  GstSegment segment;
  GThread *t;

  g_object_set (p, "batch-size", 2, "batch-timeout", 30 * GST_SECOND, NULL);
  init_feeds (feeds, 2, FRAMES);
  feeds[0].metas = feeds[1].metas = TRUE;
  start_feed (p, &feeds[0]);
  start_feed (p, &feeds[1]);
  t = g_thread_new ("push-one", push_one_thread, &po);
  g_usleep (300 * 1000);
  fail_unless (!g_atomic_int_get (&po.done), "the frame did not wait for its batch");
  fail_unless (gst_harness_push_event (feeds[0].h, gst_event_new_flush_start ()));
  g_thread_join (t);
  fail_unless_equals_int (po.ret, GST_FLOW_FLUSHING);
  fail_unless (gst_harness_push_event (feeds[0].h, gst_event_new_flush_stop (FALSE)));
  gst_segment_init (&segment, GST_FORMAT_TIME);
  segment.base = 0;
  fail_unless (gst_harness_push_event (feeds[0].h, gst_event_new_segment (&segment)));
  bit_exact = TRUE;
  feed_and_check (model, feeds, 2, expect);
  bit_exact = FALSE;
  fail_unless_equals_uint64 (final_frames (bus), 2 * FRAMES);
  no_error (bus);
  finish (p, bus, feeds, 2);
  g_free (model);
}

GST_END_TEST;

/* batch-size > 1 on a fixed batch dim: the start fails naming the input. */
GST_START_TEST (test_batch_fixed_dim)
{
  gchar *model = nnp_test_model_path ("residual.onnx");
  GstBus *bus;
  GstElement *p = make_pipeline (model, NULL, &bus);
  GstPad *pad = gst_element_request_pad_simple (p, "sink_%u");
  GError *err;

  g_object_set (p, "batch-size", 4, NULL);
  fail_unless (pad != NULL);
  fail_unless_equals_int (gst_element_set_state (p, GST_STATE_PAUSED), GST_STATE_CHANGE_FAILURE);
  err = nnp_test_pop_message (bus, GST_MESSAGE_ERROR, NULL, "fixed dim");
  fail_unless (strstr (err->message, "batch-size=4") != NULL
                   && strstr (err->message, "input 'x'") != NULL
                   && strstr (err->message, "fixed (1x3x?x?)") != NULL,
               "%s", err->message);
  g_error_free (err);
  gst_element_set_state (p, GST_STATE_NULL);
  gst_element_release_request_pad (p, pad);
  gst_object_unref (pad);
  gst_element_set_bus (p, NULL);
  gst_object_unref (bus);
  gst_object_unref (p);
  g_free (model);
}

GST_END_TEST;

static Suite *
streams_suite (void)
{
  TCase *tc;
  Suite *s = nnp_test_suite_new ("nnpipeline-streams", 120, &tc);

  tcase_add_test (tc, test_four_streams);
  tcase_add_test (tc, test_stream_ends_early);
  tcase_add_test (tc, test_stream_errors);
  tcase_add_test (tc, test_stream_bad_caps);
  tcase_add_test (tc, test_streams_sizes);
  tcase_add_test (tc, test_batch_four_streams);
  tcase_add_test (tc, test_batch_ends_and_slow);
  tcase_add_test (tc, test_batch_sizes);
  tcase_add_test (tc, test_batch_fixed_dim);
  tcase_add_test (tc, test_batch_flush);
  return s;
}

GST_CHECK_MAIN (streams);
