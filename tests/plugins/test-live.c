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

#include <glib/gstdio.h>
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
  return g_strdup_printf ("videotestsrc num-buffers=%u pattern=white ! "
                          "video/x-raw,format=RGB,width=320,height=96,framerate=30/1 ! "
                          "timeoverlay font-desc=\"Sans 20\" halignment=left valignment=top "
                          "xpad=%u ypad=%u ! "
                          "nnconvert mean=0.485,0.456,0.406 std=0.229,0.224,0.225 "
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

/* Fails unless got's lines are the first n lines of ref. */
static void
assert_json_prefix (const gchar *ref_path, const gchar *got_path, guint n, const gchar *what)
{
  gchar *ref = read_file (ref_path), *got = read_file (got_path);
  gchar **rl = g_strsplit (ref, "\n", -1), **gl = g_strsplit (got, "\n", -1);

  fail_unless (g_strv_length (gl) == n + 1, "%s: %u lines, expected %u", what,
               g_strv_length (gl) - 1, n);
  for (guint k = 0; k < n; k++) {
    fail_unless (rl[k] != NULL, "%s: the reference has no line %u", what, k);
    fail_unless (strstr (gl[k], "\"box\"") != NULL, "%s line %u: no box (%s)", what, k, gl[k]);
    fail_unless_equals_string (gl[k], rl[k]);
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

  g_string_printf (desc,
                   "nnpipeline name=p model=\"%s\" stages=2 devices=cpu:1,cpu:1 "
                   "batch-size=4 batch-timeout=%" G_GUINT64_FORMAT " stats-interval=0 ",
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

static Suite *
live_suite (void)
{
  TCase *tc;
  Suite *s = nnp_test_suite_new ("nnpipeline-live", 300, &tc);

  tcase_add_test (tc, test_batch_post_processing);
  return s;
}

GST_CHECK_MAIN (live);
