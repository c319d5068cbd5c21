/* Live cameras through one nnpipeline (issue 22):
 *
 * - batching with post-processing after the batch: 4 streams of the
 *   PaddleOCR detector (a clock drawn on each frame, at another place per
 *   stream) through `nnpipeline batch-size=4 ! nndbdecode ! nnmetapublish`:
 *   each stream's JSON equals its own run through a whole-model nnstage,
 *   for full batches, batches leaving at the timeout (one slow stream) and
 *   a stream ending early (the frame metas that nndbdecode needs survive
 *   every path; test-streams.c checks each kind of meta on synthetic
 *   frames). */
#include "test-common.h"

#include <gst/app/gstappsink.h>
#include <glib/gstdio.h>
#include <math.h>
#include <string.h>

#define DET_STREAMS 4
#define DET_FRAMES 10

/* A scratch folder of this process (removed by rm_tree ()). */
static gchar *
scratch_dir (void)
{
  gchar *tmpl = g_build_filename (g_get_tmp_dir (), "nnp-live-XXXXXX", NULL);

  fail_unless (g_mkdtemp (tmpl) != NULL, "mkdtemp: %s", g_strerror (errno));
  return tmpl;
}

static void
rm_tree (const gchar *dir)
{
  GDir *d = g_dir_open (dir, 0, NULL);
  const gchar *name;

  if (d == NULL)
    return;
  while ((name = g_dir_read_name (d))) {
    gchar *path = g_build_filename (dir, name, NULL);

    g_unlink (path);
    g_free (path);
  }
  g_dir_close (d);
  g_rmdir (dir);
}

/* The source end of stream i: frames - 1 frames of a white 320x96 picture
 * with the running time drawn at a place of its own, as tensors with the
 * frame meta (keep-frame=true), the detector's normalisation. */
static gchar *
det_source (guint i, guint frames)
{
  return g_strdup_printf (
      "videotestsrc num-buffers=%u pattern=white ! video/x-raw,format=RGB,width=320,height=96,framerate=30/1 ! "
      "timeoverlay font-desc=\"Sans 20\" halignment=left valignment=top xpad=%u ypad=%u ! nnconvert mean=0.485,0.456,0.406 std=0.229,0.224,0.225 "
      "channel-order=bgr keep-frame=true",
      frames, 8 + 40 * i, 4 + 16 * i);
}

/* The sink end: boxes of the detector's map, one JSON object per frame. */
static gchar *
det_sink (const gchar *json)
{
  return g_strdup_printf ("nndbdecode ! nnmetapublish location=\"%s\" ! fakesink", json);
}

static gchar *
read_file (const gchar *path)
{
  gchar *text = NULL;

  fail_unless (g_file_get_contents (path, &text, NULL, NULL), "cannot read %s", path);
  return text;
}

/* line without its "time" and "unix_ms" (when the run saw it).  g_free(). */
static gchar *
without_time (const gchar *line)
{
  GString *out = g_string_new (line);
  const gchar *keys[] = { "\"time\":", "\"unix_ms\":" };

  for (guint k = 0; k < G_N_ELEMENTS (keys); k++) {
    gchar *p = strstr (out->str, keys[k]), *end;

    if (p == NULL)
      continue;
    end = strchr (p, ',');
    fail_unless (end != NULL, "%s", line);
    g_string_erase (out, p - out->str, end + 1 - p);
  }
  return g_string_free (out, FALSE);
}

/* Fails unless got's lines are the first n lines of ref (but for when the
 * frames were taken). */
static void
assert_json_prefix (const gchar *ref_path, const gchar *got_path, guint n, const gchar *what)
{
  gchar *ref = read_file (ref_path), *got = read_file (got_path);
  gchar **rl = g_strsplit (ref, "\n", -1), **gl = g_strsplit (got, "\n", -1);

  fail_unless (g_strv_length (gl) == n + 1, "%s: %u lines, expected %u", what,
               g_strv_length (gl) - 1, n);
  for (guint k = 0; k < n; k++) {
    fail_unless (rl[k] != NULL, "%s: the reference has no line %u", what, k);
    gchar *g = without_time (gl[k]), *r = without_time (rl[k]);

    fail_unless (strstr (gl[k], "\"box\"") != NULL, "%s line %u: no box (%s)", what, k, gl[k]);
    fail_unless (strstr (gl[k], "\"unix_ms\"") != NULL, "%s line %u: no time (%s)", what, k, gl[k]);
    fail_unless_equals_string (g, r);
    g_free (g);
    g_free (r);
  }
  g_strfreev (rl);
  g_strfreev (gl);
  g_free (ref);
  g_free (got);
}

/* Buffers the first stage of the nnpipeline `p` in pipe ran. */
static guint64
stage0_buffers (GstElement *pipe)
{
  GstElement *p = gst_bin_get_by_name (GST_BIN (pipe), "p");
  GstElement *s = gst_bin_get_by_name (GST_BIN (p), "stage0");
  guint64 frames = 0;

  fail_unless (s != NULL, "no stage0 in nnpipeline");
  g_object_get (s, "frames", &frames, NULL);
  gst_object_unref (s);
  gst_object_unref (p);
  return frames;
}

/* The 4 streams through one batching nnpipeline, post-processing after it:
 * frames[i] frames of stream i, `slow_us` per frame on stream 3 (0: none);
 * each stream's JSON the first frames[i] lines of its reference.  Returns
 * the buffers the first stage ran. */
static guint64
run_det_batched (const gchar *model, const gchar *dir, gchar **refs, const guint *frames,
                 guint64 timeout, guint slow_us, const gchar *what)
{
  GString *desc = g_string_new (NULL);
  GstElement *pipe;
  guint64 ran;
  gchar *json[DET_STREAMS];

  g_string_printf (
      desc,
      "nnpipeline name=p model=\"%s\" stages=2 devices=cpu:1,cpu:1 batch-size=4 batch-timeout=%" G_GUINT64_FORMAT
      " stats-interval=0 ",
      model, timeout);
  for (guint i = 0; i < DET_STREAMS; i++) {
    gchar *src = det_source (i, frames[i]), *sink;
    gchar *slow =
        i == 3 && slow_us ? g_strdup_printf ("identity sleep-time=%u ! ", slow_us) : g_strdup ("");

    json[i] = g_strdup_printf ("%s/%s-%u.jsonl", dir, what, i);
    sink = det_sink (json[i]);
    g_string_append_printf (desc, " %s ! %sp.sink_%u  p.src_%u ! %s", src, slow, i, i, sink);
    g_free (slow);
    g_free (src);
    g_free (sink);
  }
  pipe = nnp_test_launch_to_eos (desc->str, 120 * GST_SECOND);
  ran = stage0_buffers (pipe);
  nnp_test_launch_stop (pipe);
  for (guint i = 0; i < DET_STREAMS; i++) {
    gchar *name = g_strdup_printf ("%s, stream %u", what, i);

    assert_json_prefix (refs[i], json[i], frames[i], name);
    g_free (name);
    g_free (json[i]);
  }
  g_string_free (desc, TRUE);
  return ran;
}

GST_START_TEST (test_batch_post_processing)
{
  gchar *model = nnp_test_ocr_model ("ch_PP-OCRv4_det_infer.onnx");
  gchar *dir = scratch_dir ();
  gchar *refs[DET_STREAMS];
  guint full[DET_STREAMS] = { DET_FRAMES, DET_FRAMES, DET_FRAMES, DET_FRAMES };
  guint early[DET_STREAMS] = { DET_FRAMES, 3, DET_FRAMES, DET_FRAMES };
  guint64 ran;

  /* each stream alone through a whole-model nnstage */
  for (guint i = 0; i < DET_STREAMS; i++) {
    gchar *src = det_source (i, DET_FRAMES), *sink, *desc;

    refs[i] = g_strdup_printf ("%s/ref-%u.jsonl", dir, i);
    sink = det_sink (refs[i]);
    desc = g_strdup_printf ("%s ! nnstage model=\"%s\" ! %s", src, model, sink);
    nnp_test_launch_stop (nnp_test_launch_to_eos (desc, 120 * GST_SECOND));
    g_free (desc);
    g_free (src);
    g_free (sink);
  }

  /* full batches: a long timeout, every stream has a frame in each */
  ran = run_det_batched (model, dir, refs, full, 30 * GST_SECOND, 0, "full");
  fail_unless (ran <= DET_STREAMS * DET_FRAMES / 2,
               "%" G_GUINT64_FORMAT " buffers for %u frames: no batches", ran,
               DET_STREAMS * DET_FRAMES);
  /* a stream ending after 3 frames: the batches go on without it */
  run_det_batched (model, dir, refs, early, 30 * GST_SECOND, 0, "early");
  /* stream 3 takes 60 ms per frame, the batch waits 5 ms: batches leave
   * at the timeout without it */
  run_det_batched (model, dir, refs, full, 5 * GST_MSECOND, 60000, "timeout");

  for (guint i = 0; i < DET_STREAMS; i++)
    g_free (refs[i]);
  rm_tree (dir);
  g_free (dir);
  g_free (model);
}

GST_END_TEST;

/* ------------------------------------------------------------------ */
/* The drop policy of live input */

/* What one run of a live pipeline saw: frames into the element under test
 * (out of nnconvert "conv") and out of it (at fakesink "sink"), and the
 * lag at the sink: the clock's running time when a frame arrives less the
 * frame's running time, of each frame after the first `settle` of the run
 * (g_array_unref (lags) when done). */
typedef struct {
  GstElement *pipe;
  GstClockTime settle;
  gint frames_in, frames_out; /* atomic */
  GArray *lags;               /* GstClockTimeDiff, under lock */
  gboolean live;              /* the pipeline's LATENCY answer, while */
  GstClockTime min_latency;   /* PLAYING (live runs) */
  GMutex lock;
} LiveRun;

static gint
cmp_diff (gconstpointer a, gconstpointer b)
{
  GstClockTimeDiff x = *(const GstClockTimeDiff *) a, y = *(const GstClockTimeDiff *) b;

  return x < y ? -1 : x > y;
}

/* The lag below which a fraction q of the frames after settling arrived
 * (q = 1: the largest); sorts r->lags. */
static GstClockTimeDiff
lag_quantile (LiveRun *r, gdouble q)
{
  guint i;

  fail_unless (r->lags->len > 0, "no frame after settling");
  g_array_sort (r->lags, cmp_diff);
  i = MIN ((guint) (q * r->lags->len), r->lags->len - 1);
  return g_array_index (r->lags, GstClockTimeDiff, i);
}

static GstPadProbeReturn
count_in_probe (GstPad *pad, GstPadProbeInfo *info, gpointer user_data)
{
  LiveRun *r = user_data;

  g_atomic_int_inc (&r->frames_in);
  return GST_PAD_PROBE_OK;
}

static GstPadProbeReturn
lag_probe (GstPad *pad, GstPadProbeInfo *info, gpointer user_data)
{
  LiveRun *r = user_data;
  GstBuffer *buf = GST_PAD_PROBE_INFO_BUFFER (info);
  GstEvent *ev = gst_pad_get_sticky_event (pad, GST_EVENT_SEGMENT, 0);
  GstClock *clock = gst_element_get_clock (r->pipe);

  g_atomic_int_inc (&r->frames_out);
  if (ev && clock && GST_BUFFER_PTS_IS_VALID (buf)) {
    const GstSegment *seg;
    GstClockTime rt, now;

    gst_event_parse_segment (ev, &seg);
    rt = gst_segment_to_running_time (seg, GST_FORMAT_TIME, GST_BUFFER_PTS (buf));
    now = gst_clock_get_time (clock) - gst_element_get_base_time (r->pipe);
    g_mutex_lock (&r->lock);
    if (GST_CLOCK_TIME_IS_VALID (rt) && rt >= r->settle) {
      GstClockTimeDiff lag = GST_CLOCK_DIFF (rt, now);

      g_array_append_val (r->lags, lag);
    }
    g_mutex_unlock (&r->lock);
  }
  if (ev)
    gst_event_unref (ev);
  if (clock)
    gst_object_unref (clock);
  return GST_PAD_PROBE_OK;
}

/* Run desc (with "conv" and "sink") PLAYING for `seconds` (live: then EOS
 * is sent) or to its EOS; returns the pipeline (stopped, to read the
 * elements' counters; the caller unrefs it). */
static GstElement *
run_live (LiveRun *r, const gchar *desc, guint seconds, gboolean live)
{
  GError *err = NULL;
  GstElement *pipe = gst_parse_launch (desc, &err);
  GstElement *conv, *sink;
  GstPad *pad;
  GstBus *bus;
  GstMessage *msg;

  fail_unless (pipe != NULL, "%s: %s", desc, err ? err->message : "?");
  memset (r, 0, sizeof (*r));
  g_mutex_init (&r->lock);
  r->pipe = pipe;
  r->settle = 1500 * GST_MSECOND;
  r->lags = g_array_new (FALSE, FALSE, sizeof (GstClockTimeDiff));
  conv = gst_bin_get_by_name (GST_BIN (pipe), "conv");
  sink = gst_bin_get_by_name (GST_BIN (pipe), "sink");
  pad = gst_element_get_static_pad (conv, "src");
  gst_pad_add_probe (pad, GST_PAD_PROBE_TYPE_BUFFER, count_in_probe, r, NULL);
  gst_object_unref (pad);
  pad = gst_element_get_static_pad (sink, "sink");
  gst_pad_add_probe (pad, GST_PAD_PROBE_TYPE_BUFFER, lag_probe, r, NULL);
  gst_object_unref (pad);
  gst_object_unref (conv);
  gst_object_unref (sink);

  bus = gst_element_get_bus (pipe);
  fail_unless (gst_element_set_state (pipe, GST_STATE_PLAYING) != GST_STATE_CHANGE_FAILURE);
  if (live) {
    msg = gst_bus_timed_pop_filtered (bus, seconds * GST_SECOND, GST_MESSAGE_ERROR);
    fail_unless (msg == NULL, "%s: error", desc);
    {
      GstQuery *q = gst_query_new_latency ();

      fail_unless (gst_element_query (pipe, q), "%s: no LATENCY answer", desc);
      gst_query_parse_latency (q, &r->live, &r->min_latency, NULL);
      gst_query_unref (q);
    }
    /* videotestsrc ends its stream on an EOS event */
    fail_unless (gst_element_send_event (pipe, gst_event_new_eos ()));
  }
  msg = gst_bus_timed_pop_filtered (bus, 120 * GST_SECOND, GST_MESSAGE_EOS | GST_MESSAGE_ERROR);
  fail_unless (msg != NULL, "%s: no EOS", desc);
  if (GST_MESSAGE_TYPE (msg) == GST_MESSAGE_ERROR) {
    gchar *dbg = NULL;

    gst_message_parse_error (msg, &err, &dbg);
    fail ("%s: %s (%s)", desc, err->message, dbg);
  }
  gst_message_unref (msg);
  gst_object_unref (bus);
  gst_element_set_state (pipe, GST_STATE_NULL);
  g_mutex_clear (&r->lock);
  return pipe;
}

/* A 120 fps source of 160x160 frames into the detector (one thread) made
 * 10 times slower by debug-slowdown (well under 120 fps: 26 ms a frame on
 * the Zen 5 CI machine, 3 frame times; slowed 2 times it had come down to
 * 5 ms as the kernels got faster, and kept up); `element` is the part
 * under test ("st": an nnstage or nnpipeline); its results as JSON Lines
 * to json. */
static gchar *
live_desc (const gchar *model, gboolean live, const gchar *element, const gchar *json)
{
  return g_strdup_printf (
      "videotestsrc %s ! video/x-raw,format=RGB,width=160,height=160,framerate=120/1 ! "
      "nnconvert name=conv keep-frame=true source-id=cam7 ! %s model=\"%s\" ! nndbdecode ! nnmetapublish location=\"%s\" ! fakesink name=sink sync=true",
      live ? "is-live=true" : "num-buffers=40", element, model, json);
}

/* The JSON of a run: one object per frame out, the source's frame numbers
 * in order with a gap per frame dropped (frames_in in all), the source id
 * and a wall-clock time between t0 and t1 (unix ms). */
static void
check_json_frames (const gchar *path, gint frames_in, gint frames_out, gint64 t0, gint64 t1)
{
  gchar *text = read_file (path);
  gchar **lines = g_strsplit (text, "\n", -1);
  gint64 prev = -1;
  guint n = 0;

  for (guint k = 0; lines[k] && *lines[k]; k++, n++) {
    gint64 frame = -1, ms = -1;
    const gchar *p = strstr (lines[k], "\"frame\":"), *q = strstr (lines[k], "\"unix_ms\":");

    fail_unless (p != NULL && q != NULL, "line %u: %s", k, lines[k]);
    frame = g_ascii_strtoll (p + 8, NULL, 10);
    ms = g_ascii_strtoll (q + 10, NULL, 10);
    fail_unless (frame > prev, "line %u: frame %" G_GINT64_FORMAT " after %" G_GINT64_FORMAT, k,
                 frame, prev);
    fail_unless (frame < frames_in, "line %u: frame %" G_GINT64_FORMAT " of %d", k, frame,
                 frames_in);
    fail_unless (strstr (lines[k], "\"source_id\":\"cam7\"") != NULL, "line %u: %s", k, lines[k]);
    fail_unless (strstr (lines[k], "\"time\":\"20") != NULL, "line %u: %s", k, lines[k]);
    fail_unless (ms >= t0 - 1000 && ms <= t1 + 1000,
                 "line %u: unix_ms %" G_GINT64_FORMAT " not in [%" G_GINT64_FORMAT
                 ", %" G_GINT64_FORMAT "]",
                 k, ms, t0, t1);
    prev = frame;
  }
  fail_unless_equals_int (n, frames_out);
  g_strfreev (lines);
  g_free (text);
}

static const gchar *const slow_elements[] = {
  "nnstage name=st threads=1 debug-slowdown=9",
  /* one frame between the stages: each waiting frame adds a stage time */
  "nnpipeline name=st stages=2 devices=cpu:1,cpu:1 queue-size=1 debug-slowdown=9,9",
};

/* Live input into a model slower than the source: the lag at the sink
 * stays under a second (it grows by most of a second per second when every
 * frame runs), every frame is either out or counted as dropped, and the
 * JSON keeps the source's frame numbers (a gap per frame dropped); a file
 * through the same element: every frame comes out, none dropped. */
GST_START_TEST (test_live_drop)
{
  gchar *model = nnp_test_ocr_model ("ch_PP-OCRv4_det_infer.onnx");
  gchar *dir = scratch_dir ();
  gchar *json = g_build_filename (dir, "live.jsonl", NULL);

  for (guint k = 0; k < G_N_ELEMENTS (slow_elements); k++) {
    gchar *desc = live_desc (model, TRUE, slow_elements[k], json);
    gint64 t0 = g_get_real_time () / 1000, t1;
    LiveRun r;
    GstElement *pipe = run_live (&r, desc, 6, TRUE), *st;
    GstClockTimeDiff p90, max;
    guint64 dropped = 0;

    t1 = g_get_real_time () / 1000;
    st = gst_bin_get_by_name (GST_BIN (pipe), "st");
    g_object_get (st, "dropped", &dropped, NULL);
    p90 = lag_quantile (&r, 0.9);
    max = lag_quantile (&r, 1.0);
    GST_INFO ("%s: %d in, %d out, %" G_GUINT64_FORMAT " dropped, lag p90 %" GST_STIME_FORMAT
              " max %" GST_STIME_FORMAT,
              slow_elements[k], r.frames_in, r.frames_out, dropped, GST_STIME_ARGS (p90),
              GST_STIME_ARGS (max));
    fail_unless (dropped > 0, "%s: no frame dropped", slow_elements[k]);
    fail_unless (r.frames_out > 0, "%s: no frame out", slow_elements[k]);
    fail_unless_equals_int (r.frames_in, r.frames_out + (gint) dropped);
    /* the latency it may add (max-lateness, 200 ms) is in its answer */
    fail_unless (r.live && r.min_latency >= 200 * GST_MSECOND, "%s: latency %" GST_TIME_FORMAT,
                 slow_elements[k], GST_TIME_ARGS (r.min_latency));
    /* every frame run grows it by more than a frame time: seconds after
     * 6 s with drop=off (a scheduler hiccup on a loaded machine may add to
     * one frame's, not to 9 in 10) */
    fail_unless (p90 > 0 && p90 < GST_SECOND, "%s: lag %" GST_STIME_FORMAT, slow_elements[k],
                 GST_STIME_ARGS (p90));
    fail_unless (max < 2 * GST_SECOND, "%s: lag %" GST_STIME_FORMAT, slow_elements[k],
                 GST_STIME_ARGS (max));
    g_array_unref (r.lags);
    check_json_frames (json, r.frames_in, r.frames_out, t0, t1);
    gst_object_unref (st);
    gst_object_unref (pipe);
    g_free (desc);

    /* a file: every frame */
    desc = live_desc (model, FALSE, slow_elements[k], json);
    pipe = run_live (&r, desc, 0, FALSE);
    st = gst_bin_get_by_name (GST_BIN (pipe), "st");
    g_object_get (st, "dropped", &dropped, NULL);
    fail_unless_equals_int (r.frames_in, 40);
    fail_unless_equals_int (r.frames_out, 40);
    fail_unless_equals_uint64 (dropped, 0);
    g_array_unref (r.lags);
    gst_object_unref (st);
    gst_object_unref (pipe);
    g_free (desc);
  }
  rm_tree (dir);
  g_free (dir);
  g_free (json);
  g_free (model);
}

GST_END_TEST;

/* QoS events honoured: with lateness alone switched off (max-lateness=-1),
 * a sink that reports its late frames upstream (qos=true) makes the slowed
 * stage (10 times, as in live_desc: slower than 120 frames/s by a margin)
 * drop the frames it predicts late; without those events it drops none. */
GST_START_TEST (test_qos)
{
  gchar *model = nnp_test_ocr_model ("ch_PP-OCRv4_det_infer.onnx");

  for (guint qos = 0; qos < 2; qos++) {
    gchar *desc = g_strdup_printf (
        "videotestsrc is-live=true ! video/x-raw,format=RGB,width=160,height=160,framerate=120/1 ! "
        "nnconvert name=conv ! nnstage name=st model=\"%s\" threads=1 debug-slowdown=9 drop=on max-lateness=-1 ! "
        "fakesink name=sink sync=true qos=%s max-lateness=0",
        model, qos ? "true" : "false");
    LiveRun r;
    GstElement *pipe = run_live (&r, desc, 4, TRUE), *st;
    guint64 dropped = 0;

    st = gst_bin_get_by_name (GST_BIN (pipe), "st");
    g_object_get (st, "dropped", &dropped, NULL);
    GST_INFO ("qos=%u: %d in, %d out, %" G_GUINT64_FORMAT " dropped", qos, r.frames_in,
              r.frames_out, dropped);
    if (qos)
      fail_unless (dropped > 0, "QoS events from the sink dropped nothing");
    else
      fail_unless_equals_uint64 (dropped, 0);
    fail_unless_equals_int (r.frames_in, r.frames_out + (gint) dropped);
    g_array_unref (r.lags);
    gst_object_unref (st);
    gst_object_unref (pipe);
    g_free (desc);
  }
  g_free (model);
}

GST_END_TEST;

/* ------------------------------------------------------------------ */
/* Where and when: per-stream statistics, source ids */

static GstPadProbeReturn
count_probe (GstPad *pad, GstPadProbeInfo *info, gpointer user_data)
{
  g_atomic_int_inc ((gint *) user_data);
  return GST_PAD_PROBE_OK;
}

/* Two live streams (frames of their own numbers) through one slowed
 * nnpipeline: the final nnpipeline-stats has a structure per stream whose
 * frames in, out and dropped add up to what its source sent and its sink
 * got, with its source id, fps and latency; the decoder's messages after it
 * name the source, the frame and the time.  The frames are 640x640 so that
 * the detector, slowed 2x, is slower than 2 x 60 frames/s on any CPU (at
 * 160x160 a fast idle machine kept up and dropped nothing). */
GST_START_TEST (test_stream_stats)
{
  gchar *model = nnp_test_ocr_model ("ch_PP-OCRv4_det_infer.onnx");
  GString *desc = g_string_new (NULL);
  GstElement *pipe;
  GstBus *bus;
  GstMessage *msg;
  const GstStructure *final = NULL;
  gint out[2] = { 0, 0 }, boxes_msgs = 0;
  const guint n = 90;

  g_string_printf (
      desc, "nnpipeline name=p model=\"%s\" stages=2 debug-slowdown=1,1 stats-interval=500", model);
  for (guint i = 0; i < 2; i++)
    g_string_append_printf (
        desc,
        " videotestsrc is-live=true num-buffers=%u pattern=%u ! video/x-raw,format=RGB,width=640,height=640,framerate=60/1 ! "
        "nnconvert keep-frame=true source-id=cam%u ! p.sink_%u p.src_%u ! nndbdecode ! fakesink name=sink%u",
        n, i, i, i, i, i);
  pipe = gst_parse_launch (desc->str, NULL);
  fail_unless (pipe != NULL);
  for (guint i = 0; i < 2; i++) {
    gchar *name = g_strdup_printf ("sink%u", i);
    GstElement *sink = gst_bin_get_by_name (GST_BIN (pipe), name);
    GstPad *pad = gst_element_get_static_pad (sink, "sink");

    gst_pad_add_probe (pad, GST_PAD_PROBE_TYPE_BUFFER, count_probe, &out[i], NULL);
    gst_object_unref (pad);
    gst_object_unref (sink);
    g_free (name);
  }
  bus = gst_element_get_bus (pipe);
  fail_unless (gst_element_set_state (pipe, GST_STATE_PLAYING) != GST_STATE_CHANGE_FAILURE);
  while ((msg = gst_bus_timed_pop_filtered (
              bus, 120 * GST_SECOND, GST_MESSAGE_EOS | GST_MESSAGE_ERROR | GST_MESSAGE_ELEMENT))) {
    const GstStructure *st = gst_message_get_structure (msg);
    gboolean is_final = FALSE;

    fail_unless (GST_MESSAGE_TYPE (msg) != GST_MESSAGE_ERROR, "error");
    if (GST_MESSAGE_TYPE (msg) == GST_MESSAGE_EOS) {
      gst_message_unref (msg);
      break;
    }
    if (gst_structure_has_name (st, "nnpipeline-stats")
        && gst_structure_get_boolean (st, "final", &is_final) && is_final) {
      final = gst_structure_copy (st);
    } else if (gst_structure_has_name (st, "nnpipe-text-boxes")) {
      const gchar *id = gst_structure_get_string (st, "source-id");
      gint64 ms = 0;
      guint64 frame = G_MAXUINT64;

      fail_unless (id && g_str_has_prefix (id, "cam"), "%" GST_PTR_FORMAT, st);
      fail_unless (gst_structure_get_int64 (st, "unix-ms", &ms) && ms > 0);
      fail_unless (gst_structure_get_uint64 (st, "frame", &frame) && frame < n);
      fail_unless (gst_structure_get_string (st, "time") != NULL);
      boxes_msgs++;
    }
    gst_message_unref (msg);
  }
  gst_element_set_state (pipe, GST_STATE_NULL);
  fail_unless (final != NULL, "no final nnpipeline-stats");
  fail_unless_equals_int (boxes_msgs, out[0] + out[1]);
  {
    const GValue *streams = gst_structure_get_value (final, "streams");
    guint64 total_dropped = 0, dropped_all = 0;

    fail_unless (streams != NULL && gst_value_array_get_size (streams) == 2, "%" GST_PTR_FORMAT,
                 final);
    for (guint i = 0; i < 2; i++) {
      const GstStructure *ss = gst_value_get_structure (gst_value_array_get_value (streams, i));
      guint index = 99;
      guint64 fin = 0, fout = 0, dropped = 0;
      gdouble fps = 0, lat = 0;
      gchar *want = g_strdup_printf ("cam%u", i);

      fail_unless (gst_structure_get_uint (ss, "index", &index) && index == i);
      fail_unless (gst_structure_get_uint64 (ss, "frames-in", &fin));
      fail_unless (gst_structure_get_uint64 (ss, "frames-out", &fout));
      fail_unless (gst_structure_get_uint64 (ss, "dropped", &dropped));
      fail_unless (gst_structure_get_double (ss, "fps", &fps) && fps > 0);
      fail_unless (gst_structure_get_double (ss, "latency-ms", &lat) && lat > 0);
      fail_unless_equals_string (gst_structure_get_string (ss, "source-id"), want);
      /* each frame of its source is out or counted as dropped */
      fail_unless_equals_uint64 (fout, (guint64) out[i]);
      fail_unless_equals_uint64 (fin, fout);
      fail_unless_equals_uint64 (fin + dropped, n);
      total_dropped += dropped;
      g_free (want);
    }
    fail_unless (total_dropped > 0, "nothing dropped: the stages were not slower");
    fail_unless (gst_structure_get_uint64 (final, "dropped", &dropped_all));
    fail_unless_equals_uint64 (dropped_all, total_dropped);
  }
  gst_structure_free ((GstStructure *) final);
  gst_object_unref (bus);
  gst_object_unref (pipe);
  g_string_free (desc, TRUE);
  g_free (model);
}

GST_END_TEST;

/* ------------------------------------------------------------------ */
/* Cameras come and go: request and release pads while PLAYING */

/* One camera: a live source of 16x16 frames moving by its own speed (each
 * frame differs, deterministically) into nnpipeline p's sink_N, src_N into
 * an appsink keeping every output. */
typedef struct {
  guint index, frames;
  GstElement *src, *caps, *conv, *sink;
  GstPad *sinkpad; /* p's sink_N (ref) */
  gint out;        /* frames at the appsink (atomic) */
  gint eos;        /* EOS reached the appsink (atomic) */
} Camera;

static GstPadProbeReturn
eos_probe (GstPad *pad, GstPadProbeInfo *info, gpointer user_data)
{
  if (GST_EVENT_TYPE (GST_PAD_PROBE_INFO_EVENT (info)) == GST_EVENT_EOS)
    g_atomic_int_set ((gint *) user_data, 1);
  return GST_PAD_PROBE_OK;
}

static gchar *
camera_source_desc (guint index, guint frames, gboolean live)
{
  return g_strdup_printf (
      "videotestsrc is-live=%s num-buffers=%u pattern=smpte horizontal-speed=%u ! video/x-raw,format=RGB,width=16,height=16,framerate=30/1 ! nnconvert",
      live ? "true" : "false", frames, index + 1);
}

static void
camera_add (GstElement *pipe, GstElement *p, Camera *c, guint index, guint frames)
{
  gchar *name, *desc = camera_source_desc (index, frames, TRUE);
  GstElement *bin = gst_parse_bin_from_description (desc, TRUE, NULL);
  GstPad *src_pad, *ghost_src;

  fail_unless (bin != NULL, "%s", desc);
  g_free (desc);
  memset (c, 0, sizeof (*c));
  c->index = index;
  c->frames = frames;
  c->src = bin;
  c->sink = gst_element_factory_make ("appsink", NULL);
  /* async=false: a sink added to a PLAYING pipeline must not make it
   * wait for a preroll that its live source never gives */
  g_object_set (c->sink, "sync", FALSE, "async", FALSE, "wait-on-eos", FALSE, NULL);
  gst_bin_add_many (GST_BIN (pipe), c->src, c->sink, NULL);
  name = g_strdup_printf ("sink_%u", index);
  c->sinkpad = gst_element_request_pad_simple (p, name);
  fail_unless (c->sinkpad != NULL, "no %s", name);
  g_free (name);
  ghost_src = gst_element_get_static_pad (c->src, "src");
  fail_unless_equals_int (gst_pad_link (ghost_src, c->sinkpad), GST_PAD_LINK_OK);
  gst_object_unref (ghost_src);
  name = g_strdup_printf ("src_%u", index);
  src_pad = gst_element_get_static_pad (p, name);
  fail_unless (src_pad != NULL, "no %s", name);
  g_free (name);
  {
    GstPad *sp = gst_element_get_static_pad (c->sink, "sink");

    fail_unless_equals_int (gst_pad_link (src_pad, sp), GST_PAD_LINK_OK);
    gst_pad_add_probe (sp, GST_PAD_PROBE_TYPE_BUFFER, count_probe, &c->out, NULL);
    gst_pad_add_probe (sp, GST_PAD_PROBE_TYPE_EVENT_DOWNSTREAM, eos_probe, &c->eos, NULL);
    gst_object_unref (sp);
  }
  gst_object_unref (src_pad);
  /* downstream first: nothing flows into a sink not yet started */
  fail_unless (gst_element_sync_state_with_parent (c->sink));
  fail_unless (gst_element_sync_state_with_parent (c->src));
}

/* Every output of the appsink (pulled, in order); the appsink has EOS. */
static GPtrArray *
camera_outputs (Camera *c)
{
  GPtrArray *out = g_ptr_array_new_with_free_func ((GDestroyNotify) gst_buffer_unref);
  GstSample *sample;

  while ((sample = gst_app_sink_try_pull_sample (GST_APP_SINK (c->sink), 0))) {
    g_ptr_array_add (out, gst_buffer_ref (gst_sample_get_buffer (sample)));
    gst_sample_unref (sample);
  }
  return out;
}

/* Camera index's frames through a whole-model nnstage, not live. */
static GPtrArray *
camera_reference (const gchar *model, guint index, guint frames)
{
  gchar *src = camera_source_desc (index, frames, FALSE);
  gchar *desc = g_strdup_printf (
      "%s ! nnstage model=\"%s\" ! appsink name=out sync=false wait-on-eos=false", src, model);
  GstElement *pipe = nnp_test_launch_to_eos (desc, 60 * GST_SECOND);
  GstElement *sink = gst_bin_get_by_name (GST_BIN (pipe), "out");
  Camera c = { 0 };
  GPtrArray *out;

  c.sink = sink;
  out = camera_outputs (&c);
  gst_object_unref (sink);
  nnp_test_launch_stop (pipe);
  g_free (desc);
  g_free (src);
  return out;
}

static void
assert_outputs (GPtrArray *ref, GPtrArray *got, guint n, guint index)
{
  fail_unless (got->len == n, "camera %u: %u frames out, expected %u", index, got->len, n);
  for (guint i = 0; i < n; i++) {
    GstMapInfo a, b;
    GstBuffer *r = g_ptr_array_index (ref, i), *g = g_ptr_array_index (got, i);

    fail_unless (gst_buffer_map (r, &a, GST_MAP_READ) && gst_buffer_map (g, &b, GST_MAP_READ));
    fail_unless (a.size == b.size, "camera %u frame %u: size", index, i);
    for (gsize k = 0; k < a.size / sizeof (gfloat); k++) {
      gfloat x = ((const gfloat *) a.data)[k], y = ((const gfloat *) b.data)[k];

      fail_unless (fabsf (x - y) <= 1e-5f * MAX (1.0f, fabsf (x)),
                   "camera %u frame %u value %" G_GSIZE_FORMAT ": %g instead of %g", index, i, k, y,
                   x);
    }
    gst_buffer_unmap (r, &a);
    gst_buffer_unmap (g, &b);
  }
}

/* Wait (at most 60 s) until c gave at least n frames. */
static void
wait_out (GstBus *bus, Camera *c, gint n)
{
  gint64 deadline = g_get_monotonic_time () + 60 * G_USEC_PER_SEC;

  while (g_atomic_int_get (&c->out) < n) {
    GstMessage *m = gst_bus_timed_pop_filtered (bus, 20 * GST_MSECOND, GST_MESSAGE_ERROR);

    fail_unless (m == NULL, "error while waiting for camera %u", c->index);
    fail_unless (g_get_monotonic_time () < deadline, "camera %u: %d frames, waited for %d",
                 c->index, g_atomic_int_get (&c->out), n);
  }
}

/* Two cameras running; a third added while PLAYING gets the right outputs
 * from its first frame; the second ends (EOS) and its pads are released
 * while the others run on: every camera's outputs are its own whole-model
 * outputs, frame for frame, none lost, and the final statistics count
 * every frame. */
GST_START_TEST (test_pads_while_playing)
{
  gchar *model = nnp_test_model_path ("residual.onnx");
  GstElement *pipe = gst_pipeline_new (NULL);
  GstElement *p = nnp_test_make ("nnpipeline", "model", model, "stages", "2", "drop", 2 /* off */,
                                 "stats-interval", 0, NULL);
  Camera cams[3];
  const guint frames[3] = { 60, 60, 30 };
  GPtrArray *outs[3];
  GstBus *bus = gst_element_get_bus (pipe);
  GstMessage *m;
  guint64 total = 0;
  gint kept1;

  gst_bin_add (GST_BIN (pipe), p);
  camera_add (pipe, p, &cams[0], 0, frames[0]);
  camera_add (pipe, p, &cams[1], 1, frames[1]);
  fail_unless (gst_element_set_state (pipe, GST_STATE_PLAYING) != GST_STATE_CHANGE_FAILURE);
  wait_out (bus, &cams[0], 10);

  /* a camera comes */
  camera_add (pipe, p, &cams[2], 2, frames[2]);
  wait_out (bus, &cams[2], 5);

  /* a camera goes: its source ends, its EOS comes out, its pads go */
  wait_out (bus, &cams[1], 20);
  fail_unless (gst_element_send_event (cams[1].src, gst_event_new_eos ()));
  {
    gint64 deadline = g_get_monotonic_time () + 60 * G_USEC_PER_SEC;

    while (!g_atomic_int_get (&cams[1].eos)) {
      fail_unless (g_get_monotonic_time () < deadline, "camera 1: no EOS");
      g_usleep (10 * 1000);
    }
  }
  outs[1] = camera_outputs (&cams[1]);
  kept1 = (gint) outs[1]->len;
  gst_element_set_state (cams[1].src, GST_STATE_NULL);
  gst_element_set_state (cams[1].sink, GST_STATE_NULL);
  gst_element_release_request_pad (p, cams[1].sinkpad);
  gst_object_unref (cams[1].sinkpad);
  gst_bin_remove_many (GST_BIN (pipe), cams[1].src, cams[1].sink, NULL);
  fail_unless (gst_element_get_static_pad (p, "src_1") == NULL, "src_1 still there");

  /* the others run to their end; the final statistics (posted before the
   * last EOS) count every frame of every camera, the one that left too */
  while ((m = gst_bus_timed_pop_filtered (
              bus, 30 * GST_SECOND, GST_MESSAGE_EOS | GST_MESSAGE_ERROR | GST_MESSAGE_ELEMENT))) {
    const GstStructure *s = gst_message_get_structure (m);
    gboolean final = FALSE, eos = GST_MESSAGE_TYPE (m) == GST_MESSAGE_EOS;

    fail_unless (GST_MESSAGE_TYPE (m) != GST_MESSAGE_ERROR, "error");
    if (!eos && gst_structure_has_name (s, "nnpipeline-stats")
        && gst_structure_get_boolean (s, "final", &final) && final)
      fail_unless (gst_structure_get_uint64 (s, "frames-out", &total));
    gst_message_unref (m);
    if (eos)
      break;
  }
  fail_unless (m != NULL, "no EOS (camera 0: %d frames%s, camera 2: %d frames%s)",
               g_atomic_int_get (&cams[0].out), g_atomic_int_get (&cams[0].eos) ? ", EOS" : "",
               g_atomic_int_get (&cams[2].out), g_atomic_int_get (&cams[2].eos) ? ", EOS" : "");
  outs[0] = camera_outputs (&cams[0]);
  outs[2] = camera_outputs (&cams[2]);
  gst_element_set_state (pipe, GST_STATE_NULL);

  for (guint i = 0; i < 3; i++) {
    guint n = i == 1 ? (guint) kept1 : frames[i];
    GPtrArray *ref = camera_reference (model, i, frames[i]);

    assert_outputs (ref, outs[i], n, i);
    g_ptr_array_unref (ref);
    g_ptr_array_unref (outs[i]);
  }
  fail_unless (kept1 >= 20 && kept1 < (gint) frames[1], "camera 1 gave %d frames", kept1);
  fail_unless_equals_uint64 (total, frames[0] + frames[2] + (guint) kept1);
  gst_object_unref (cams[0].sinkpad);
  gst_object_unref (cams[2].sinkpad);
  gst_object_unref (bus);
  gst_object_unref (pipe);
  g_free (model);
}

GST_END_TEST;

static Suite *
live_suite (void)
{
  TCase *tc;
  Suite *s = nnp_test_suite_new ("nnpipeline-live", 300, &tc);

  tcase_add_test (tc, test_batch_post_processing);
  tcase_add_test (tc, test_live_drop);
  tcase_add_test (tc, test_qos);
  tcase_add_test (tc, test_stream_stats);
  tcase_add_test (tc, test_pads_while_playing);
  return s;
}

GST_CHECK_MAIN (live);
