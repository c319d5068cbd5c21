/* nnpipeline and nnstage's part properties (plan + stage, nodes):
 *
 * - every split into 2, 3 and 4 stages, automatic (stages=N) and manual
 *   (cuts evenly spaced in topological order), of three DAG-shaped models
 *   (make-dag-models.py: residual adds, U-Net Concat after Resize, two
 *   outputs) and of the three PP-OCR models at small sizes, gives the
 *   whole-model nnstage's output on every frame (bit-exact, or within 1e-6
 *   relative), as many frames out as in, in order, with the same caps;
 * - a plan file run as a chain of `nnstage plan=P stage=k` and as
 *   `nnpipeline plan=P`, and hand-made `nnstage nodes=first..last` chains;
 * - renegotiation to another size;
 * - the plan and stats messages;
 * - malformed plans and splits fail with a message naming the problem. */
#include "test-common.h"

#include <glib/gstdio.h>

#include <nnpipe/nnpipe.h>

#include <math.h>
#include <string.h>

#define FRAMES_SMALL 100
#define FRAMES_BIG 100

/* Outputs of one run: buffers in order and the output caps. */
typedef struct {
  GPtrArray *buffers;
  GstCaps *caps;
} Run;

static void
run_clear (Run *r)
{
  g_ptr_array_unref (r->buffers);
  gst_caps_unref (r->caps);
}

/* Push n frames (seeds seed..seed+n-1) through e with a harness, then EOS;
 * collect every output.  Takes ownership of e. */
static Run
run_element (GstElement *e, const gchar *caps, gsize n_floats, guint n, guint32 seed)
{
  GstHarness *h = nnp_test_harness_take (e);
  Run r;

  r.buffers = g_ptr_array_new_with_free_func ((GDestroyNotify) gst_buffer_unref);
  gst_harness_set_src_caps_str (h, caps);
  nnp_test_push_frames (h, n_floats, seed, 0, n);
  nnp_test_pull_frames (h, 0, n, r.buffers);
  nnp_test_finish_eos (h);
  r.caps = gst_pad_get_current_caps (h->sinkpad);
  fail_unless (r.caps != NULL);
  gst_harness_teardown (h);
  return r;
}

static GstElement *
make_bin (const gchar *desc)
{
  GError *err = NULL;
  GstElement *bin = gst_parse_bin_from_description (desc, TRUE, &err);

  fail_unless (bin != NULL, "%s: %s", desc, err ? err->message : "?");
  return bin;
}

/* Every frame equal (bit-exact or 1e-6 relative), in order, same caps. */
static void
assert_same_runs (const Run *ref, const Run *got, const gchar *what)
{
  fail_unless (gst_caps_is_equal (ref->caps, got->caps),
               "%s: caps %" GST_PTR_FORMAT " instead of %" GST_PTR_FORMAT, what, got->caps,
               ref->caps);
  fail_unless_equals_int (got->buffers->len, ref->buffers->len);
  for (guint i = 0; i < ref->buffers->len; i++) {
    GstBuffer *a = g_ptr_array_index (ref->buffers, i);
    GstBuffer *b = g_ptr_array_index (got->buffers, i);
    GstMapInfo ma, mb;
    const gfloat *fa, *fb;

    fail_unless_equals_uint64 (GST_BUFFER_PTS (b), GST_BUFFER_PTS (a));
    fail_unless (gst_buffer_map (a, &ma, GST_MAP_READ));
    fail_unless (gst_buffer_map (b, &mb, GST_MAP_READ));
    fail_unless_equals_int (mb.size, ma.size);
    if (memcmp (ma.data, mb.data, ma.size) != 0) {
      fa = (const gfloat *) ma.data;
      fb = (const gfloat *) mb.data;
      for (gsize k = 0; k < ma.size / sizeof (gfloat); k++) {
        gdouble d = fabs ((gdouble) fa[k] - fb[k]);
        gdouble m = MAX (fabs (fa[k]), fabs (fb[k]));

        fail_unless (d <= 1e-6 * m + 1e-30,
                     "%s: frame %u value %" G_GSIZE_FORMAT ": %.9g instead of %.9g", what, i, k,
                     fb[k], fa[k]);
      }
    }
    gst_buffer_unmap (a, &ma);
    gst_buffer_unmap (b, &mb);
  }
}

/* Nodes in the specialised graph of a 1x3xhxw-input model. */
static gint
count_nodes (const gchar *path, gint h, gint w)
{
  GError *err = NULL;
  NnpGraph *g = nnp_test_specialize (path, NULL, h, w, NULL, NULL, &err);
  gint n;

  fail_unless (g != NULL, "%s", err ? err->message : "?");
  n = (gint) g->nodes->len;
  nnp_graph_unref (g);
  return n;
}

/* "a,b" cuts splitting n nodes into k stages evenly. */
static gchar *
even_cuts (gint n, gint k)
{
  GString *s = g_string_new (NULL);

  for (gint i = 1; i < k; i++)
    g_string_append_printf (s, "%s%d", i > 1 ? "," : "", n * i / k);
  return g_string_free (s, FALSE);
}

/* The whole model vs nnpipeline with 2, 3 and 4 stages, auto and manual. */
static void
check_model_splits (const gchar *path, gint h, gint w, guint frames)
{
  gchar *caps = nnp_test_tensor_caps (3, h, w);
  gsize n_floats = 3 * (gsize) h * w;
  gint n_nodes = count_nodes (path, h, w);
  Run ref =
      run_element (nnp_test_make ("nnstage", "model", path, NULL), caps, n_floats, frames, 100);

  for (gint k = 2; k <= 4 && k <= n_nodes; k++) {
    gchar *stages = g_strdup_printf ("%d", k);
    gchar *cuts = even_cuts (n_nodes, k);
    gchar *what;
    Run got;

    what = g_strdup_printf ("%s stages=%d", path, k);
    got = run_element (
        nnp_test_make ("nnpipeline", "model", path, "stages", stages, "stats-interval", 0, NULL),
        caps, n_floats, frames, 100);
    assert_same_runs (&ref, &got, what);
    run_clear (&got);
    g_free (what);

    what = g_strdup_printf ("%s cuts=%s", path, cuts);
    got = run_element (nnp_test_make ("nnpipeline", "model", path, "cuts", cuts, "queue-size",
                                      1 + k % 3, "stats-interval", 0, NULL),
                       caps, n_floats, frames, 100);
    assert_same_runs (&ref, &got, what);
    run_clear (&got);
    g_free (what);
    g_free (stages);
    g_free (cuts);
  }
  run_clear (&ref);
  g_free (caps);
}

/* check_model_splits() on path, then g_free (path); NULL (a PP-OCR model
 * that is not there): skipped. */
static void
check_model_splits_take (gchar *path, gint h, gint w, guint frames)
{
  if (path)
    check_model_splits (path, h, w, frames);
  g_free (path);
}

GST_START_TEST (test_dag_residual)
{
  check_model_splits_take (nnp_test_model_path ("residual.onnx"), 16, 16, FRAMES_SMALL);
}

GST_END_TEST;

GST_START_TEST (test_dag_unet)
{
  check_model_splits_take (nnp_test_model_path ("unet.onnx"), 16, 24, FRAMES_SMALL);
}

GST_END_TEST;

GST_START_TEST (test_dag_two_outputs)
{
  gchar *path = nnp_test_model_path ("two-out.onnx");
  gchar *caps = nnp_test_tensor_caps (3, 16, 16);
  Run r;
  const GstStructure *s;

  check_model_splits (path, 16, 16, FRAMES_SMALL);

  /* two output tensors from outside, in the model's order */
  r = run_element (
      nnp_test_make ("nnpipeline", "model", path, "stages", "3", "stats-interval", 0, NULL), caps,
      3 * 16 * 16, 2, 1);
  s = gst_caps_get_structure (r.caps, 0);
  fail_unless_equals_string (gst_structure_get_string (s, "dimensions"), "16:16:4:1,8:8:6:1");
  fail_unless_equals_int (gst_buffer_get_size (g_ptr_array_index (r.buffers, 0)),
                          (16 * 16 * 4 + 8 * 8 * 6) * sizeof (gfloat));
  run_clear (&r);
  g_free (caps);
  g_free (path);
}

GST_END_TEST;

GST_START_TEST (test_ocr_cls)
{
  check_model_splits_take (nnp_test_ocr_model ("ch_ppocr_mobile_v2.0_cls_infer.onnx"), 48, 192,
                           FRAMES_SMALL);
}

GST_END_TEST;

GST_START_TEST (test_ocr_rec)
{
  check_model_splits_take (nnp_test_ocr_model ("ch_PP-OCRv4_rec_infer.onnx"), 48, 160, FRAMES_BIG);
}

GST_END_TEST;

GST_START_TEST (test_ocr_det)
{
  check_model_splits_take (nnp_test_ocr_model ("ch_PP-OCRv4_det_infer.onnx"), 96, 96, FRAMES_BIG);
}

GST_END_TEST;

/* Saves a plan of `path` (input "x", 1x3xhxw) cut at cuts (as
 * nnp_plan_new_from_cuts()), made with the library, on the CPU, as
 * dir/name.  Returns the file's path (g_free()); g_out gets the
 * specialised graph (nnp_graph_unref()). */
static gchar *
save_plan (const gchar *path, gint h, gint w, const int *cuts, gint n_cuts, const gchar *dir,
           const gchar *name, NnpGraph **g_out)
{
  gchar *plan_path = g_build_filename (dir, name, NULL);
  GError *err = NULL;
  NnpModel *m = NULL;
  NnpInputShape s;
  NnpPlanRequest req = { 0 };
  GString *cut_list = g_string_new (NULL);
  NnpGraph *g = nnp_test_specialize (path, "x", h, w, &s, &m, &err);
  NnpPlan *plan;

  fail_unless (g != NULL, "%s", err ? err->message : "?");
  /* the one planning call, with cuts: one single-thread CPU stage each */
  for (gint i = 0; i < n_cuts; i++)
    g_string_append_printf (cut_list, "%s%d", i ? "," : "", cuts[i]);
  req.model_path = path;
  req.cuts = cut_list->str;
  req.cost = NNP_COST_ESTIMATE;
  plan = nnp_plan_make (m, &s, 1, &req, NULL, &err);
  g_string_free (cut_list, TRUE);
  fail_unless (plan != NULL, "%s", err ? err->message : "?");
  fail_unless (nnp_plan_save (plan, plan_path, &err), "%s", err ? err->message : "?");
  nnp_plan_free (plan);
  nnp_model_unref (m);
  *g_out = g;
  return plan_path;
}

/* A plan file made with the library, run as a chain of nnstage elements
 * and by nnpipeline; hand-made nodes= ranges. */
GST_START_TEST (test_plan_file_and_nodes)
{
  gchar *path = nnp_test_model_path ("unet.onnx");
  gchar *dir = g_dir_make_tmp ("nnp-plan-XXXXXX", NULL);
  gchar *caps = nnp_test_tensor_caps (3, 16, 16);
  const int cuts[2] = { 2, 5 };
  NnpGraph *g;
  gchar *plan_path = save_plan (path, 16, 16, cuts, 2, dir, "unet.json", &g);
  gchar *desc;
  gint n;
  Run ref, got;

  n = (gint) g->nodes->len;
  fail_unless (n > 6);

  ref = run_element (nnp_test_make ("nnstage", "model", path, NULL), caps, 3 * 16 * 16, 20, 7);

  desc = g_strdup_printf (
      "nnstage plan=%s stage=0 ! queue ! nnstage plan=%s stage=1 ! queue ! nnstage plan=%s stage=2",
      plan_path, plan_path, plan_path);
  got = run_element (make_bin (desc), caps, 3 * 16 * 16, 20, 7);
  assert_same_runs (&ref, &got, desc);
  run_clear (&got);
  g_free (desc);

  got =
      run_element (nnp_test_make ("nnpipeline", "plan", plan_path, NULL), caps, 3 * 16 * 16, 20, 7);
  assert_same_runs (&ref, &got, "nnpipeline plan=");
  run_clear (&got);

  desc = g_strdup_printf (
      "nnstage model=%s nodes=0..2 ! queue ! nnstage model=%s nodes=3..%d ! nnstage model=%s nodes=%d..%d",
      path, path, n - 3, path, n - 2, n - 1);
  got = run_element (make_bin (desc), caps, 3 * 16 * 16, 20, 7);
  assert_same_runs (&ref, &got, desc);
  run_clear (&got);
  g_free (desc);

  run_clear (&ref);
  nnp_graph_unref (g);
  g_unlink (plan_path);
  g_rmdir (dir);
  g_free (plan_path);
  g_free (dir);
  g_free (caps);
  g_free (path);
}

GST_END_TEST;

/* Another input size: the stages re-specialise, outputs stay right. */
GST_START_TEST (test_renegotiate)
{
  gchar *path = nnp_test_model_path ("residual.onnx");
  gchar *caps1 = nnp_test_tensor_caps (3, 16, 16);
  gchar *caps2 = nnp_test_tensor_caps (3, 8, 24);
  GstHarness *h, *ref;

  h = nnp_test_harness_take (
      nnp_test_make ("nnpipeline", "model", path, "stages", "3", "stats-interval", 0, NULL));
  ref = nnp_test_harness_take (nnp_test_make ("nnstage", "model", path, NULL));

  for (guint round = 0; round < 3; round++) {
    const gchar *caps = round == 1 ? caps2 : caps1;
    gsize n_floats = round == 1 ? 3 * 8 * 24 : 3 * 16 * 16;

    gst_harness_set_src_caps_str (h, caps);
    gst_harness_set_src_caps_str (ref, caps);
    for (guint i = 0; i < 5; i++) {
      GstBuffer *a = gst_harness_push_and_pull (ref, nnp_test_random_frame (n_floats, i, i));
      GstBuffer *b = gst_harness_push_and_pull (h, nnp_test_random_frame (n_floats, i, i));
      GstMapInfo ma, mb;

      fail_unless (a != NULL && b != NULL);
      gst_buffer_map (a, &ma, GST_MAP_READ);
      gst_buffer_map (b, &mb, GST_MAP_READ);
      fail_unless_equals_int (ma.size, mb.size);
      fail_unless (memcmp (ma.data, mb.data, ma.size) == 0, "round %u frame %u differs", round, i);
      gst_buffer_unmap (a, &ma);
      gst_buffer_unmap (b, &mb);
      gst_buffer_unref (a);
      gst_buffer_unref (b);
    }
  }
  gst_harness_teardown (h);
  gst_harness_teardown (ref);
  g_free (caps1);
  g_free (caps2);
  g_free (path);
}

GST_END_TEST;

/* The plan and stats element messages. */
GST_START_TEST (test_messages)
{
  gchar *path = nnp_test_model_path ("residual.onnx");
  gchar *caps = nnp_test_tensor_caps (3, 16, 16);
  GstElement *e = nnp_test_make ("nnpipeline", "model", path, "stages", "2", "devices",
                                 "cpu:1,cpu:1", "stats-interval", 20, NULL);
  GstBus *bus = gst_bus_new ();
  GstHarness *h;
  GstMessage *msg;
  gboolean plan_seen = FALSE, stats_seen = FALSE, final_seen = FALSE;

  gst_element_set_bus (e, bus);
  h = nnp_test_harness_take (e);
  gst_harness_set_src_caps_str (h, caps);
  for (guint i = 0; i < 10; i++) {
    gst_buffer_unref (gst_harness_push_and_pull (h, nnp_test_random_frame (3 * 16 * 16, i, i)));
    g_usleep (5000);
  }
  fail_unless (gst_harness_push_event (h, gst_event_new_eos ()));
  {
    GstEvent *ev;

    while ((ev = gst_harness_pull_event (h)) != NULL) {
      gboolean eos = GST_EVENT_TYPE (ev) == GST_EVENT_EOS;

      gst_event_unref (ev);
      if (eos)
        break;
    }
  }

  while ((msg = gst_bus_pop_filtered (bus, GST_MESSAGE_ELEMENT)) != NULL) {
    const GstStructure *s = gst_message_get_structure (msg);
    const GValue *stages;

    if (gst_structure_has_name (s, "nnpipeline-plan")) {
      gint n = 0;

      plan_seen = TRUE;
      fail_unless (gst_structure_get_int (s, "n-stages", &n));
      fail_unless_equals_int (n, 2);
      stages = gst_structure_get_value (s, "stages");
      fail_unless_equals_int (gst_value_array_get_size (stages), 2);
      {
        const GstStructure *st = gst_value_get_structure (gst_value_array_get_value (stages, 0));
        gint nodes = 0;
        gint64 bytes = 0;

        fail_unless_equals_string (gst_structure_get_string (st, "device"), "cpu");
        fail_unless (gst_structure_get_int (st, "nodes", &nodes) && nodes > 0);
        fail_unless (gst_structure_get_int64 (st, "crossing-bytes", &bytes) && bytes > 0);
        fail_unless (gst_structure_get_string (st, "first-node") != NULL);
      }
    } else if (gst_structure_has_name (s, "nnpipeline-stats")) {
      gboolean final = FALSE;
      guint64 in = 0, out = 0;

      gst_structure_get_boolean (s, "final", &final);
      stages = gst_structure_get_value (s, "stages");
      fail_unless_equals_int (gst_value_array_get_size (stages), 2);
      fail_unless_equals_int (gst_value_array_get_size (gst_structure_get_value (s, "queues")), 1);
      if (final) {
        final_seen = TRUE;
        fail_unless (gst_structure_get_uint64 (s, "frames-in", &in));
        fail_unless (gst_structure_get_uint64 (s, "frames-out", &out));
        fail_unless_equals_uint64 (in, 10);
        fail_unless_equals_uint64 (out, 10);
      } else {
        stats_seen = TRUE;
      }
    }
    gst_message_unref (msg);
  }
  fail_unless (plan_seen, "no nnpipeline-plan message");
  fail_unless (stats_seen, "no periodic nnpipeline-stats message");
  fail_unless (final_seen, "no final nnpipeline-stats message");

  gst_harness_teardown (h);
  gst_bus_set_flushing (bus, TRUE);
  gst_object_unref (bus);
  g_free (caps);
  g_free (path);
}

GST_END_TEST;

/* Run a gst-launch description to EOS; it must not fail, and the caps on
 * nnconvert's source pad (the element named "conv") must be `want`. */
static void
launch_expect_caps (const gchar *desc, const gchar *want)
{
  GstElement *pipe = nnp_test_launch_to_eos (desc, 60 * GST_SECOND);
  gchar *dims = nnp_test_current_dims (pipe, "conv", "src");

  fail_unless_equals_string (dims, want);
  g_free (dims);
  nnp_test_launch_stop (pipe);
}

/* A sink CAPS query with 1- and 3-channel candidates must keep only the
 * 3-channel one, before any caps (no stages yet) and after a frame went
 * through (nnpipeline: the query reaches its first stage).  Takes e. */
static void
check_caps_query (GstElement *e, const gchar *what)
{
  GstHarness *h = nnp_test_harness_take (e);
  GstCaps *filter = gst_caps_from_string (
      "other/tensors,format=static,num_tensors=1,types=float32,dimensions=16:12:1:1,framerate=30/1; other/tensors,format=static,num_tensors=1,types=float32,"
      "dimensions=16:12:3:1,framerate=30/1");
  gchar *caps = nnp_test_tensor_caps (3, 12, 16);

  for (gint round = 0; round < 2; round++) {
    GstCaps *got = gst_pad_peer_query_caps (h->srcpad, filter);
    const gchar *dims;

    gchar *str = got ? gst_caps_to_string (got) : NULL;

    fail_unless (got != NULL && gst_caps_get_size (got) >= 1, "%s: %s", what, str);
    for (guint i = 0; i < gst_caps_get_size (got); i++) {
      dims = gst_structure_get_string (gst_caps_get_structure (got, i), "dimensions");
      fail_unless (g_strcmp0 (dims, "16:12:3:1") == 0, "%s (round %d): caps query answered %s",
                   what, round, str);
    }
    g_free (str);
    gst_caps_unref (got);
    if (round == 0) {
      gst_harness_set_src_caps_str (h, caps);
      gst_buffer_unref (gst_harness_push_and_pull (h, nnp_test_random_frame (3 * 12 * 16, 1, 0)));
    }
  }
  gst_caps_unref (filter);
  g_free (caps);
  gst_harness_teardown (h);
}

/* nnconvert can make 1, 3 or 4 channels; the model's (dynamic-size) input
 * has 3: nnpipeline's sink pad, and an nnstage running a plan's first
 * stage, answer caps queries with the model's inputs so upstream picks 3
 * (GRAY8 would be chosen otherwise and fail at the CAPS event). */
GST_START_TEST (test_input_channels)
{
  gchar *path = nnp_test_model_path ("unet.onnx");
  gchar *dir = g_dir_make_tmp ("nnp-chan-XXXXXX", NULL);
  const gchar *src =
      "videotestsrc num-buffers=3 ! video/x-raw,width=16,height=12 ! nnconvert name=conv";
  const int cuts[1] = { 3 };
  NnpGraph *g;
  gchar *plan_path = save_plan (path, 12, 16, cuts, 1, dir, "unet.json", &g);
  gchar *desc;

  desc = g_strdup_printf ("%s ! nnstage model=%s ! fakesink", src, path);
  launch_expect_caps (desc, "16:12:3:1");
  g_free (desc);
  desc =
      g_strdup_printf ("%s ! nnpipeline model=%s stages=2 stats-interval=0 ! fakesink", src, path);
  launch_expect_caps (desc, "16:12:3:1");
  g_free (desc);
  desc = g_strdup_printf ("%s ! nnpipeline plan=%s stats-interval=0 ! fakesink", src, plan_path);
  launch_expect_caps (desc, "16:12:3:1");
  g_free (desc);
  desc =
      g_strdup_printf ("%s ! nnstage plan=%s stage=0 ! queue ! nnstage plan=%s stage=1 ! fakesink",
                       src, plan_path, plan_path);
  launch_expect_caps (desc, "16:12:3:1");
  g_free (desc);
  desc =
      g_strdup_printf ("%s ! nnstage model=%s nodes=0..2 ! nnstage model=%s nodes=3..%u ! fakesink",
                       src, path, path, g->nodes->len - 1);
  launch_expect_caps (desc, "16:12:3:1");
  g_free (desc);

  /* the CAPS query itself, before the stages exist and after */
  check_caps_query (
      nnp_test_make ("nnpipeline", "model", path, "stages", "2", "stats-interval", 0, NULL),
      "nnpipeline stages=2");
  check_caps_query (nnp_test_make ("nnstage", "plan", plan_path, "stage", 0, NULL),
                    "nnstage plan=P stage=0");
  check_caps_query (nnp_test_make ("nnstage", "model", path, NULL), "nnstage");

  /* the text detector (dynamic sizes), where GRAY8 used to win */
  g_free (path);
  path = nnp_test_ocr_model ("ch_PP-OCRv4_det_infer.onnx");
  if (path) {
    desc = g_strdup_printf (
        "videotestsrc num-buffers=2 ! video/x-raw,width=64,height=32 ! nnconvert name=conv ! nnpipeline model=%s stages=2 stats-interval=0 ! fakesink",
        path);
    launch_expect_caps (desc, "64:32:3:1");
    g_free (desc);
  }

  nnp_graph_unref (g);
  g_unlink (plan_path);
  g_rmdir (dir);
  g_free (plan_path);
  g_free (dir);
  g_free (path);
}

GST_END_TEST;

/* ------------------------------------------------------------------------ */
/* Errors */

/* Push one frame into e; the element must post an error whose message or
 * debug text contains `expect`.  Takes ownership of e. */
static void
expect_error (GstElement *e, const gchar *expect)
{
  GstBus *bus = gst_bus_new ();
  gchar *caps = nnp_test_tensor_caps (3, 16, 16);
  GstHarness *h;
  GError *err;
  gchar *debug = NULL;
  GstStateChangeReturn ret;

  gst_element_set_bus (e, bus);
  /* errors at start (static shapes) or at the first caps */
  ret = gst_element_set_state (e, GST_STATE_PAUSED);
  if (ret != GST_STATE_CHANGE_FAILURE) {
    gst_element_set_state (e, GST_STATE_NULL);
    h = gst_harness_new_with_element (e, "sink", "src");
    gst_harness_set_src_caps_str (h, caps);
    fail_if (gst_harness_push (h, nnp_test_random_frame (3 * 16 * 16, 1, 0)) == GST_FLOW_OK
                 && gst_bus_have_pending (bus) == FALSE,
             "no error for \"%s\"", expect);
  } else {
    h = NULL;
  }

  err = nnp_test_pop_message (bus, GST_MESSAGE_ERROR, &debug, expect);
  GST_INFO ("error: %s (%s)", err->message, debug ? debug : "");
  fail_unless (strstr (err->message, expect) != NULL || (debug && strstr (debug, expect) != NULL),
               "error \"%s\" (%s) does not say \"%s\"", err->message, debug, expect);
  g_clear_error (&err);
  g_free (debug);

  if (h)
    gst_harness_teardown (h);
  else
    gst_element_set_state (e, GST_STATE_NULL);
  gst_object_unref (e);
  gst_bus_set_flushing (bus, TRUE);
  gst_object_unref (bus);
  g_free (caps);
}

/* text with every `what` replaced by `with` (new string; frees text) */
static gchar *
replace (gchar *text, const gchar *what, const gchar *with)
{
  gchar **parts = g_strsplit (text, what, -1);
  gchar *ret = g_strjoinv ((gchar *) with, parts);

  g_strfreev (parts);
  g_free (text);
  return ret;
}

static gchar *
write_plan (const gchar *dir, const gchar *name, const gchar *text)
{
  gchar *p = g_build_filename (dir, name, NULL);

  fail_unless (g_file_set_contents (p, text, -1, NULL));
  return p;
}

GST_START_TEST (test_bad_plans)
{
  gchar *path = nnp_test_model_path ("residual.onnx");
  gchar *dir = g_dir_make_tmp ("nnp-plan-XXXXXX", NULL);
  GError *err = NULL;
  NnpGraph *g = nnp_test_specialize (path, "x", 16, 16, NULL, NULL, &err);
  GString *all = g_string_new (NULL), *late = g_string_new (NULL), *early = g_string_new (NULL);
  gchar *p, *text;
  guint n;
  static const struct {
    const gchar *name, *fmt, *expect;
  } cases[] = {
    /* @MODEL@ model, @ALL@ all node names, @FIRST@ first node, @REST@ the others */
    { "garbage.json", "{ \"version\": 1, \"stages\": [ ", "plan" },
    { "unknown-node.json",
      "{\"version\":1,\"model\":\"@MODEL@\",\"shapes\":{\"x\":[1,3,16,16]},\"stages\":[{\"device\":\"cpu\",\"nodes\":[@ALL@,\"no_such_node\"]}]}",
      "no_such_node" },
    { "cycle.json",
      "{\"version\":1,\"model\":\"@MODEL@\",\"shapes\":{\"x\":[1,3,16,16]},\"stages\":[{\"device\":\"cpu\",\"nodes\":"
      "[@REST@]},{\"device\":\"cpu\",\"nodes\":[@FIRST@]}]}",
      "stage" },
    { "device.json",
      "{\"version\":1,\"model\":\"@MODEL@\",\"shapes\":{\"x\":[1,3,16,16]},\"stages\":[{\"device\":\"tpu\",\"nodes\":[@ALL@]}]}",
      "tpu" },
    { "missing-input.json",
      "{\"version\":1,\"model\":\"@MODEL@\",\"shapes\":{\"x\":[1,3,16,16]},\"stages\":[{\"device\":\"cpu\",\"nodes\":"
      "[@FIRST@]},{\"device\":\"cpu\",\"nodes\":[@REST@],\"inputs\":[]}]}",
      "input" },
  };

  fail_unless (g != NULL, "%s", err ? err->message : "?");
  for (n = 0; n < g->nodes->len; n++) {
    const gchar *name = nnp_graph_node (g, (int) n)->name;

    g_string_append_printf (all, "%s\"%s\"", n ? "," : "", name);
    if (n == 0)
      g_string_append_printf (early, "\"%s\"", name);
    else
      g_string_append_printf (late, "%s\"%s\"", n > 1 ? "," : "", name);
  }

  for (guint i = 0; i < G_N_ELEMENTS (cases); i++) {
    text = replace (g_strdup (cases[i].fmt), "@MODEL@", path);
    text = replace (text, "@ALL@", all->str);
    text = replace (text, "@FIRST@", early->str);
    text = replace (text, "@REST@", late->str);
    p = write_plan (dir, cases[i].name, text);
    GST_INFO ("%s: %s", cases[i].name, text);
    expect_error (nnp_test_make ("nnpipeline", "model", path, "plan", p, NULL), cases[i].expect);
    expect_error (nnp_test_make ("nnstage", "model", path, "plan", p, "stage", 0, NULL),
                  cases[i].expect);
    g_unlink (p);
    g_free (p);
    g_free (text);
  }

  /* hand-made splits */
  expect_error (nnp_test_make ("nnstage", "model", path, "nodes", "0,no_such_node", NULL),
                "no_such_node");
  expect_error (nnp_test_make ("nnstage", "model", path, "nodes", "0,2", NULL), "not convex");
  expect_error (nnp_test_make ("nnstage", "model", path, "nodes", "5..2", NULL), "comes after");
  expect_error (nnp_test_make ("nnpipeline", "model", path, "cuts", "3,no_such_node", NULL),
                "no_such_node");
  expect_error (nnp_test_make ("nnpipeline", "model", path, "devices", "gpu:1,cpu:1", NULL), "gpu");
  expect_error (nnp_test_make ("nnpipeline", "model", path, "cuts", "3", "stages", "3", NULL),
                "stages=3");

  g_string_free (all, TRUE);
  g_string_free (early, TRUE);
  g_string_free (late, TRUE);
  nnp_graph_unref (g);
  g_rmdir (dir);
  g_free (dir);
  g_free (path);
}

GST_END_TEST;

static Suite *
nnpipeline_suite (void)
{
  TCase *tc;
  Suite *s = nnp_test_suite_new ("nnpipeline", 0, &tc);

  tcase_add_test (tc, test_dag_residual);
  tcase_add_test (tc, test_dag_unet);
  tcase_add_test (tc, test_dag_two_outputs);
  tcase_add_test (tc, test_plan_file_and_nodes);
  tcase_add_test (tc, test_renegotiate);
  tcase_add_test (tc, test_messages);
  tcase_add_test (tc, test_input_channels);
  tcase_add_test (tc, test_bad_plans);
  tcase_add_test (tc, test_ocr_cls);
  tcase_add_test (tc, test_ocr_rec);
  tcase_add_test (tc, test_ocr_det);
  return s;
}

GST_CHECK_MAIN (nnpipeline);
