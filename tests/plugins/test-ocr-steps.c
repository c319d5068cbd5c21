/* The reading steps of issue 23 on synthetic input, one by one (the same
 * steps on real images: tests/ocr-real/test-ocr-real.sh):
 *  1. nncrop's interpolation filter: bicubic and Lanczos keep an edge
 *     sharper than bilinear when a small line is enlarged;
 *  2. nndbdecode whole-frame-size: a small frame without a box becomes
 *     one box;
 *  3. nn_text_boxes_tidy(): overlapping boxes of one line and boxes
 *     reaching into the next line are cut back halfway;
 *  4. nncrop read-both + nnctcdecode: a region labelled 180 is cut both
 *     ways, the better-scored reading wins;
 *  5. nnctcdecode normalize-latin: full-width forms and CJK punctuation
 *     on Latin lines. */
#include "test-common.h"
#include "test-post-common.h"

#include <glib/gstdio.h>
#include <math.h>
#include <string.h>
#include <unistd.h>

#include "nncropicon.h"
#include "nndb.h"
#include "nntextlines.h"
#include "nntextnorm.h"

/* ------------------------------------------------------------ 1. filter */

/* The brightest sample of the middle row of nncrop's tensor (filter as
 * given) over a gap one pixel wide (column 20, white) between black on a
 * 64 x 8 frame enlarged 6 times (to the tensor height 48): how much of a
 * narrow gap between two words survives the enlargement. */
static gfloat
gap_peak (const gchar *filter)
{
  gchar *launch = g_strdup_printf ("nncrop filter=%s", filter);
  GstHarness *h = gst_harness_new_parse (launch);
  GstVideoInfo info;
  GstBuffer *frame = make_rgb_frame (&info, 64, 8, 0), *out;
  GstMapInfo map;
  const gfloat *row;
  gfloat peak = -2;

  gst_buffer_map (frame, &map, GST_MAP_WRITE);
  for (gint y = 0; y < 8; y++)
    memset (map.data + y * GST_VIDEO_INFO_PLANE_STRIDE (&info, 0) + 20 * 3, 255, 3);
  gst_buffer_unmap (frame, &map);
  add_text_roi (frame, 0, 0, 0, 64, 8);
  gst_harness_set_src_caps_str (h, "video/x-raw,format=RGB,width=64,height=8,framerate=0/1");
  fail_unless_equals_int (gst_harness_push (h, frame), GST_FLOW_OK);
  out = gst_harness_pull (h);
  /* 64 x 8 at height 48: 384 wide */
  fail_unless_equals_uint64 (gst_buffer_get_size (out), 3 * 48 * 384 * 4);
  gst_buffer_map (out, &map, GST_MAP_READ);
  row = (const gfloat *) map.data + 24 * 384;
  /* normalised: black -1, white 1; the gap is output columns 120..125 */
  fail_unless (row[60] < -0.99f && row[300] < -0.99f, "%f %f", row[60], row[300]);
  for (gint u = 100; u < 146; u++)
    peak = MAX (peak, row[u]);
  gst_buffer_unmap (out, &map);
  gst_buffer_unref (out);
  gst_harness_teardown (h);
  g_free (launch);
  return peak;
}

GST_START_TEST (test_filter_sharpness)
{
  gfloat bilinear = gap_peak ("bilinear");
  gfloat bicubic = gap_peak ("bicubic");
  gfloat lanczos = gap_peak ("lanczos");

  /* no sample falls on the gap's centre: bilinear reaches about 0.92 of
   * white (0.83 normalised), the sharper kernels more */
  fail_unless (bilinear > 0.7f && bilinear < 0.9f, "bilinear %f", bilinear);
  fail_unless (bicubic > bilinear + 0.05f, "bicubic %f, bilinear %f", bicubic, bilinear);
  fail_unless (lanczos > bilinear + 0.05f, "lanczos %f, bilinear %f", lanczos, bilinear);
}

GST_END_TEST;

/* ------------------------------------------------------- 2. whole frame */

static guint
boxes_on_empty_map (gint frame_w, gint frame_h, const gchar *launch, gdouble *box_score)
{
  GstHarness *h = gst_harness_new_parse (launch);
  GstVideoInfo info;
  GstBuffer *frame = make_rgb_frame (&info, frame_w, frame_h, 255), *buf, *out;
  gfloat *map = g_new0 (gfloat, 64 * 32);
  guint n;

  buf = float_buffer (map, 64 * 32);
  g_free (map);
  add_frame_meta (buf, frame, &info, -1, -1, -1);
  gst_harness_set_src_caps_str (
      h,
      "other/tensors,format=static,num_tensors=1,types=float32,dimensions=64:32:1:1,framerate=0/1");
  fail_unless_equals_int (gst_harness_push (h, buf), GST_FLOW_OK);
  out = gst_harness_pull (h);
  n = count_rois (out);
  if (n == 1) {
    GstVideoRegionOfInterestMeta *roi = roi_by_id (out, 0);
    GstStructure *s = gst_video_region_of_interest_meta_get_param (roi, "nnpipe/text");

    fail_unless (roi->x == 0 && roi->y == 0 && (gint) roi->w == frame_w
                 && (gint) roi->h == frame_h);
    fail_unless (gst_structure_get_double (s, "box-score", box_score));
  }
  gst_buffer_unref (out);
  gst_buffer_unref (frame);
  gst_harness_teardown (h);
  return n;
}

GST_START_TEST (test_whole_frame)
{
  gdouble score = -1;

  /* a 200 x 40 frame (short side 40 <= 160): the whole frame, score 0 */
  fail_unless_equals_int (boxes_on_empty_map (200, 40, "nndbdecode", &score), 1);
  fail_unless_equals_float (score, 0.0);
  /* a 640 x 480 frame: nothing */
  fail_unless_equals_int (boxes_on_empty_map (640, 480, "nndbdecode", &score), 0);
  /* off, or a smaller limit */
  fail_unless_equals_int (boxes_on_empty_map (200, 40, "nndbdecode whole-frame-size=0", &score), 0);
  fail_unless_equals_int (boxes_on_empty_map (200, 40, "nndbdecode whole-frame-size=30", &score),
                          0);
}

GST_END_TEST;

/* ------------------------------------------------------------- 3. tidy */

/* A box as nn_db_decode() makes it: an axis-aligned core and the same
 * grown by d on every side. */
static NnTextBox
text_box (gdouble x0, gdouble y0, gdouble x1, gdouble y1, gdouble d, gdouble score)
{
  NnTextBox b = { .score = score };

  b.core.p[0].x = b.core.p[3].x = x0;
  b.core.p[1].x = b.core.p[2].x = x1;
  b.core.p[0].y = b.core.p[1].y = y0;
  b.core.p[2].y = b.core.p[3].y = y1;
  b.quad = b.core;
  nn_quad_expand (&b.quad, d);
  return b;
}

GST_START_TEST (test_tidy)
{
  GArray *boxes = g_array_new (FALSE, FALSE, sizeof (NnTextBox));
  NnTextBox b;
  gdouble x0, y0, x1, y1;

  /* one line broken in two pieces whose grown boxes overlap (cores 6
   * apart, growth 4 each): each stops halfway, at x = 63; a third piece
   * far along the line changes nothing */
  b = text_box (10, 20, 60, 30, 4, 0.8);
  g_array_append_val (boxes, b);
  b = text_box (66, 21, 120, 31, 4, 0.6);
  g_array_append_val (boxes, b);
  b = text_box (200, 20, 260, 30, 4, 0.9);
  g_array_append_val (boxes, b);
  nn_text_boxes_tidy (boxes);
  fail_unless_equals_int (boxes->len, 3);
  nn_quad_bounds (&g_array_index (boxes, NnTextBox, 0).quad, &x0, &y0, &x1, &y1);
  fail_unless (fabs (x0 - 6) < 1e-6 && fabs (x1 - 63) < 1e-6, "%f %f", x0, x1);
  fail_unless (fabs (y0 - 16) < 1e-6 && fabs (y1 - 34) < 1e-6, "%f %f", y0, y1);
  nn_quad_bounds (&g_array_index (boxes, NnTextBox, 1).quad, &x0, &y0, &x1, &y1);
  fail_unless (fabs (x0 - 63) < 1e-6 && fabs (x1 - 124) < 1e-6, "%f %f", x0, x1);
  nn_quad_bounds (&g_array_index (boxes, NnTextBox, 2).quad, &x0, &y0, &x1, &y1);
  fail_unless (fabs (x0 - 196) < 1e-6 && fabs (x1 - 264) < 1e-6, "%f %f", x0, x1);

  /* two lines whose grown boxes reach into each other (cores 10 apart,
   * growth 8): each stops halfway, at y = 35 */
  g_array_set_size (boxes, 0);
  b = text_box (10, 20, 200, 30, 8, 0.9);
  g_array_append_val (boxes, b);
  b = text_box (10, 40, 200, 50, 8, 0.9);
  g_array_append_val (boxes, b);
  nn_text_boxes_tidy (boxes);
  fail_unless_equals_int (boxes->len, 2);
  nn_quad_bounds (&g_array_index (boxes, NnTextBox, 0).quad, &x0, &y0, &x1, &y1);
  fail_unless (fabs (y1 - 35) < 1e-6 && fabs (y0 - 12) < 1e-6, "%f %f", y0, y1);
  fail_unless (fabs (x0 - 2) < 1e-6 && fabs (x1 - 208) < 1e-6);
  nn_quad_bounds (&g_array_index (boxes, NnTextBox, 1).quad, &x0, &y0, &x1, &y1);
  fail_unless (fabs (y0 - 35) < 1e-6 && fabs (y1 - 58) < 1e-6, "%f %f", y0, y1);

  /* lines far apart, or side by side in columns: left alone */
  g_array_set_size (boxes, 0);
  b = text_box (10, 20, 100, 30, 4, 0.9);
  g_array_append_val (boxes, b);
  b = text_box (10, 60, 100, 70, 4, 0.9);
  g_array_append_val (boxes, b);
  b = text_box (140, 22, 200, 32, 4, 0.9);
  g_array_append_val (boxes, b);
  nn_text_boxes_tidy (boxes);
  fail_unless_equals_int (boxes->len, 3);
  nn_quad_bounds (&g_array_index (boxes, NnTextBox, 0).quad, &x0, &y0, &x1, &y1);
  fail_unless (fabs (y1 - 34) < 1e-6 && fabs (x1 - 104) < 1e-6);
  g_array_unref (boxes);
}

GST_END_TEST;

/* -------------------------------------------------------- 4. read both */

GST_START_TEST (test_read_both)
{
  GstHarness *h = gst_harness_new_parse ("nncrop");
  GstVideoInfo info;
  GstBuffer *frame = make_rgb_frame (&info, 200, 100, 0), *out;
  GstMapInfo map;

  /* white left half of the region: upright the first column is white,
   * turned black */
  gst_buffer_map (frame, &map, GST_MAP_WRITE);
  for (gint y = 20; y < 68; y++)
    memset (map.data + y * GST_VIDEO_INFO_PLANE_STRIDE (&info, 0) + 20 * 3, 255, 48 * 3);
  gst_buffer_unmap (frame, &map);
  add_text_roi (frame, 5, 20, 20, 96, 48);
  /* the classifier says 180, not sure (0.6) */
  gst_video_region_of_interest_meta_add_param (
      roi_by_id (frame, 5),
      gst_structure_new ("nnpipe/class", "label", G_TYPE_STRING, "180", "class-id", G_TYPE_INT, 1,
                         "score", G_TYPE_DOUBLE, 0.6, NULL));
  gst_harness_set_src_caps_str (h, "video/x-raw,format=RGB,width=200,height=100,framerate=0/1");
  fail_unless_equals_int (gst_harness_push (h, frame), GST_FLOW_OK);
  fail_unless_equals_int (gst_harness_buffers_in_queue (h), 2);
  for (gint i = 0; i < 2; i++) {
    GstNnFrameMeta *fm;
    gfloat v;

    out = gst_harness_pull (h);
    fm = get_frame_meta (out);
    fail_unless_equals_int (fm->n_rois, 2);
    fail_unless_equals_int (fm->roi_index, i);
    fail_unless_equals_int (fm->roi_id, 5);
    gst_buffer_map (out, &map, GST_MAP_READ);
    v = ((const gfloat *) map.data)[24 * 96 + 2];
    gst_buffer_unmap (out, &map);
    /* turned first, then as it is */
    fail_unless (i == 0 ? v < -0.99f : v > 0.99f, "cut %d: %f", i, v);
    gst_buffer_unref (out);
  }
  gst_harness_teardown (h);
}

GST_END_TEST;

/* nnctcdecode (its keys file holding @keys, then @options) on region 3 of
 * a frame, read n times (as nncrop read-both cuts it twice): scores[i] is
 * the steps x classes CTC tensor of reading i.  Returns the text kept in
 * the region. */
static gchar *
ctc_read_region (const gchar *keys, const gchar *options, gint steps, gint classes,
                 const gfloat *const *scores, gint n)
{
  gchar *path = g_strdup_printf ("%s/nnp-test-keys-%d.txt", g_get_tmp_dir (), (gint) getpid ());
  gchar *launch, *caps, *text;
  GstHarness *h;
  GstVideoInfo info;
  GstBuffer *frame = make_rgb_frame (&info, 100, 40, 0), *out;
  GstStructure *s;

  fail_unless (g_file_set_contents (path, keys, -1, NULL));
  launch = g_strdup_printf ("nnctcdecode keys=%s %s", path, options);
  h = gst_harness_new_parse (launch);
  add_text_roi (frame, 3, 0, 0, 100, 40);
  caps = g_strdup_printf (
      "other/tensors,format=static,num_tensors=1,types=float32,dimensions=%d:%d:1,framerate=0/1",
      classes, steps);
  gst_harness_set_src_caps_str (h, caps);
  for (gint i = 0; i < n; i++) {
    GstBuffer *buf = float_buffer (scores[i], (gsize) steps * classes);

    add_frame_meta (buf, frame, &info, n, i, 3);
    fail_unless_equals_int (gst_harness_push (h, buf), GST_FLOW_OK);
  }
  out = gst_harness_pull (h);
  s = gst_video_region_of_interest_meta_get_param (roi_by_id (out, 3), "nnpipe/text");
  text = g_strdup (gst_structure_get_string (s, "text"));
  gst_buffer_unref (out);
  gst_buffer_unref (frame);
  gst_harness_teardown (h);
  g_unlink (path);
  g_free (path);
  g_free (launch);
  g_free (caps);
  return text;
}

/* One region read twice (both cuts of nncrop read-both): a CTC tensor for
 * "a" scoring sa and one for "b" scoring sb; returns the text kept. */
static gchar *
best_reading (gfloat sa, gfloat sb)
{
  /* classes: blank, a, b; steps: the letter, then blank */
  gfloat a[6] = { 0.01f, 0.01f, 0.01f, 0.98f, 0.01f, 0.01f };
  gfloat b[6] = { 0.01f, 0.01f, 0.01f, 0.98f, 0.01f, 0.01f };
  const gfloat *scores[2] = { a, b };

  a[1] = sa;
  b[2] = sb;
  return ctc_read_region ("a\nb\n", "", 2, 3, scores, 2);
}

GST_START_TEST (test_best_reading)
{
  gchar *t;

  t = best_reading (0.9f, 0.7f);
  fail_unless_equals_string (t, "a");
  g_free (t);
  t = best_reading (0.7f, 0.9f);
  fail_unless_equals_string (t, "b");
  g_free (t);
}

GST_END_TEST;

/* ------------------------------------------------------- 5. normalise */

GST_START_TEST (test_normalize_latin)
{
  gchar *t;

  fail_unless (nn_text_is_latin ("Hello"));
  fail_unless (nn_text_is_latin ("\uff28i"));         /* full-width H */
  fail_unless (!nn_text_is_latin ("\u4e2d\u6587 A")); /* Han */
  fail_unless (!nn_text_is_latin ("\u3002"));         /* no letter */
  t = nn_text_normalize_latin (
      "\uff28\uff45\uff4c\uff4c\uff4f\uff1a a\u3001b\u3002 \u3010x\u3011\uff08y\uff09\u3000z");
  fail_unless_equals_string (t, "Hello: a,b. [x](y) z");
  g_free (t);
  /* a Chinese line keeps its punctuation */
  t = nn_text_normalize_latin ("\u4e2d\u6587\uff1a1\u3002");
  fail_unless_equals_string (t, "\u4e2d\u6587\uff1a1\u3002");
  g_free (t);
}

GST_END_TEST;

/* the element: on by default, off with normalize-latin=false */
static gchar *
ctc_read (const gchar *options)
{
  /* keys: Ａ (full-width A), 、, b; steps: Ａ, 、, b */
  gfloat sc[3 * 4] = { 0 };
  const gfloat *scores[1] = { sc };

  for (gint t = 0; t < 3; t++)
    sc[t * 4 + 1 + t] = 0.9f;
  return ctc_read_region ("\uff21\n\u3001\nb\n", options, 3, 4, scores, 1);
}

GST_START_TEST (test_ctcdecode_normalize)
{
  gchar *t = ctc_read ("");

  fail_unless_equals_string (t, "A,b");
  g_free (t);
  t = ctc_read ("normalize-latin=false");
  fail_unless_equals_string (t, "\uff21\u3001b");
  g_free (t);
}

GST_END_TEST;

/* ------------------------------------------------ 6. pieces of one line */

static NnTextPiece
piece (const gchar *text, gdouble x, gdouble y, gdouble w, gdouble h, gdouble angle)
{
  gdouble c = cos (angle), s = sin (angle);
  NnTextPiece p = { .text = text };

  /* the box (x, y, w, h) turned by angle about the origin */
  p.quad.p[0] = (NnPoint){ x * c - y * s, x * s + y * c };
  p.quad.p[1] = (NnPoint){ (x + w) * c - y * s, (x + w) * s + y * c };
  p.quad.p[2] = (NnPoint){ (x + w) * c - (y + h) * s, (x + w) * s + (y + h) * c };
  p.quad.p[3] = (NnPoint){ x * c - (y + h) * s, x * s + (y + h) * c };
  return p;
}

GST_START_TEST (test_join_lines)
{
  gint next[6];

  for (gint turn = 0; turn < 2; turn++) {
    gdouble a = turn ? 0.5 : 0.0; /* a line at 29 degrees too */
    /* given out of order: Box, a lone x, Stationery, the next line, a
     * piece too far, one too high */
    NnTextPiece p[6] = {
      piece ("Box", 410, 100, 150, 70, a),       piece ("x", 0, 105, 40, 60, a),
      piece ("Stationery", 50, 100, 350, 70, a), piece ("Customer", 50, 200, 300, 70, a),
      piece ("Far", 620, 100, 100, 70, a),  /* gap 60: 0.86 x 70 */
      piece ("Tall", 730, 60, 100, 150, a), /* 2.1 times higher */
    };

    fail_unless_equals_int (nn_text_lines_join (p, 6, 0.75, next), 1);
    fail_unless_equals_int (next[2], 0);  /* Stationery -> Box */
    fail_unless_equals_int (next[0], -1); /* Far: gap too wide */
    fail_unless_equals_int (next[1], -1); /* x: one character */
    fail_unless_equals_int (next[3], -1);
    fail_unless_equals_int (next[4], -1); /* Tall: height */
    fail_unless_equals_int (next[5], -1);
    /* a wider gap allowed: Box -> Far, and a chain of three */
    fail_unless_equals_int (nn_text_lines_join (p, 6, 1.0, next), 2);
    fail_unless_equals_int (next[2], 0);
    fail_unless_equals_int (next[0], 4);
  }
  {
    /* another angle, or a line below by more than half the height */
    NnTextPiece q[3] = {
      piece ("left", 0, 0, 100, 40, 0),
      piece ("right", 110, 0, 100, 40, 0.2),
      piece ("below", 110, 25, 100, 40, 0),
    };

    fail_unless_equals_int (nn_text_lines_join (q, 3, 0.75, next), 0);
    /* overlapping pieces join (up to half the height) */
    q[1] = piece ("right", 85, 0, 100, 40, 0);
    fail_unless_equals_int (nn_text_lines_join (q, 3, 0.75, next), 1);
    fail_unless_equals_int (next[0], 1);
  }
}

GST_END_TEST;

/* nnctcdecode joins regions of one line: classes blank, a, b, x; each
 * region's text spelled over 3 steps */
static GstBuffer *
ctc_join_frame (const gchar *options)
{
  const gchar *texts[4] = { "ab", "ba", "ab", "x" };
  /* id 3 "x" | id 0 "ab" | id 1 "ba" on one line, id 2 "ab" below */
  const gint boxes[4][4] = { { 16, 10, 44, 20 },
                             { 70, 10, 40, 20 },
                             { 16, 60, 44, 20 },
                             { 0, 10, 12, 20 } };
  gchar *path = g_strdup_printf ("%s/nnp-test-join-%d.txt", g_get_tmp_dir (), (gint) getpid ());
  gchar *launch;
  GstHarness *h;
  GstVideoInfo info;
  GstBuffer *frame = make_rgb_frame (&info, 200, 100, 0), *out;

  fail_unless (g_file_set_contents (path, "a\nb\nx\n", -1, NULL));
  launch = g_strdup_printf ("nnctcdecode keys=%s %s", path, options);
  h = gst_harness_new_parse (launch);
  for (gint i = 0; i < 4; i++)
    add_text_roi (frame, i, boxes[i][0], boxes[i][1], boxes[i][2], boxes[i][3]);
  gst_harness_set_src_caps_str (
      h, "other/tensors,format=static,num_tensors=1,types=float32,dimensions=4:3:1,framerate=0/1");
  for (gint i = 0; i < 4; i++) {
    gfloat sc[3 * 4] = { 0 };
    GstBuffer *buf;

    for (gint t = 0; t < 3; t++) {
      gchar ch = texts[i][t];

      sc[t * 4 + (ch == 'a' ? 1 : ch == 'b' ? 2 : ch == 'x' ? 3 : 0)] = 0.9f;
    }
    buf = float_buffer (sc, 12);
    add_frame_meta (buf, frame, &info, 4, i, i);
    fail_unless_equals_int (gst_harness_push (h, buf), GST_FLOW_OK);
  }
  out = gst_harness_pull (h);
  gst_buffer_unref (frame);
  gst_harness_teardown (h);
  g_unlink (path);
  g_free (path);
  g_free (launch);
  return out;
}

static const gchar *
roi_text (GstBuffer *buf, gint id)
{
  GstVideoRegionOfInterestMeta *roi = roi_by_id (buf, id);

  fail_unless (roi != NULL, "no region %d", id);
  return gst_structure_get_string (gst_video_region_of_interest_meta_get_param (roi, "nnpipe/text"),
                                   "text");
}

GST_START_TEST (test_ctcdecode_join)
{
  GstBuffer *out = ctc_join_frame ("");
  GstVideoRegionOfInterestMeta *roi;

  fail_unless_equals_int (gst_buffer_get_n_meta (out, GST_VIDEO_REGION_OF_INTEREST_META_API_TYPE),
                          3);
  fail_unless_equals_string (roi_text (out, 0), "ab ba");
  fail_unless (roi_by_id (out, 1) == NULL);
  fail_unless_equals_string (roi_text (out, 2), "ab");
  fail_unless_equals_string (roi_text (out, 3), "x");
  /* the joined region spans both pieces */
  roi = roi_by_id (out, 0);
  fail_unless_equals_int (roi->x, 16);
  fail_unless_equals_int (roi->w, 110 - 16);
  fail_unless_equals_int (roi->h, 20);
  gst_buffer_unref (out);

  /* a gap of half the height: not joined below that, -1 never */
  out = ctc_join_frame ("join-gap=0.25");
  fail_unless_equals_int (gst_buffer_get_n_meta (out, GST_VIDEO_REGION_OF_INTEREST_META_API_TYPE),
                          4);
  fail_unless_equals_string (roi_text (out, 1), "ba");
  gst_buffer_unref (out);
  out = ctc_join_frame ("join-gap=-1");
  fail_unless_equals_int (gst_buffer_get_n_meta (out, GST_VIDEO_REGION_OF_INTEREST_META_API_TYPE),
                          4);
  gst_buffer_unref (out);
}

GST_END_TEST;

/* --------------------------------------------------- 7. a leading icon */

/* A crop as nncrop makes it (mean 0.5, std 0.5: v / 127.5 - 1) of height
 * 48: light background, dark ink; marks[] are x, width, top, height of
 * ink rectangles; the line fills the first @used columns. */
static gfloat *
icon_crop (gint width, gint used, const gint (*marks)[4], gint n)
{
  gfloat *t = g_new0 (gfloat, 3 * 48 * (gsize) width);

  for (gint c = 0; c < 3; c++)
    for (gint v = 0; v < 48; v++)
      for (gint u = 0; u < used; u++) {
        guint8 level = 230;

        for (gint i = 0; i < n; i++)
          if (u >= marks[i][0] && u < marks[i][0] + marks[i][1] && v >= marks[i][2]
              && v < marks[i][2] + marks[i][3])
            level = 20;
        t[(gsize) c * 48 * width + (gsize) v * width + u] = level / 127.5f - 1.0f;
      }
  return t;
}

/* letters: bars 6 wide, 4 apart; the ink is 30 high (rows 9..38) */
static gint
add_word (gint (*marks)[4], gint n, gint x, gint letters)
{
  for (gint i = 0; i < letters; i++) {
    marks[n][0] = x + i * 10;
    marks[n][1] = 6;
    marks[n][2] = 9;
    marks[n][3] = 30;
    n++;
  }
  return n;
}

/* A crop with a first mark @first_width x @first_height whose top is
 * @top (the words' ink is rows 9..38): a solid rectangle when @filled, else
 * its outline, 3 pixels thick (a check box, a ring); @gap columns after it
 * @words words of four letters, @word_gap apart.  The column
 * nn_crop_find_icon() returns. */
static gint
find_mark (gint first_width, gint first_height, gint top, gboolean filled, gint gap, gint words,
           gint word_gap)
{
  const gfloat mul[3] = { 1 / 127.5f, 1 / 127.5f, 1 / 127.5f };
  const gfloat add[3] = { -1, -1, -1 };
  gint marks[64][4], n, x, cut;
  gfloat *t;

  if (filled) {
    marks[0][0] = 4;
    marks[0][1] = first_width;
    marks[0][2] = top;
    marks[0][3] = first_height;
    n = 1;
  } else {
    const gint sides[4][4] = {
      { 4, first_width, top, 3 },
      { 4, first_width, top + first_height - 3, 3 },
      { 4, 3, top, first_height },
      { 4 + first_width - 3, 3, top, first_height },
    };

    memcpy (marks, sides, sizeof sides);
    n = 4;
  }
  x = 4 + first_width + gap;
  for (gint w = 0; w < words; w++) {
    n = add_word (marks, n, x, 4);
    x += 36 + word_gap;
  }
  t = icon_crop (x + 40, x + 4, (const gint (*)[4]) marks, n);
  cut = nn_crop_find_icon (t, 48, x + 40, x + 4, mul, add);
  g_free (t);
  return cut;
}

/* an outlined mark centred on the words' rows */
static gint
find_icon (gint first_width, gint first_height, gint gap, gint words, gint word_gap)
{
  return find_mark (first_width, first_height, 9 + (30 - first_height) / 2, FALSE, gap, words,
                    word_gap);
}

GST_START_TEST (test_find_icon)
{
  const gfloat mul[3] = { 1 / 127.5f, 1 / 127.5f, 1 / 127.5f };
  const gfloat add[3] = { -1, -1, -1 };
  gfloat *t;

  /* set apart: a 30 x 30 icon, a gap of 24 (0.8 of the ink's height),
   * words 10 apart (0.33): the text starts in the middle of the gap */
  fail_unless_equals_int (find_icon (30, 30, 24, 3, 10), 4 + 30 + 12);
  /* two words only: a gap of 0.8 is enough, 0.6 not */
  fail_unless_equals_int (find_icon (30, 30, 24, 1, 0), 4 + 30 + 12);
  fail_unless_equals_int (find_icon (30, 30, 18, 1, 0), 0);
  /* a gap no wider than the line's own word gaps */
  fail_unless_equals_int (find_icon (30, 30, 18, 3, 18), 0);
  /* one narrow letter ("A", "1."), a wide word ("NO"), a low mark */
  fail_unless_equals_int (find_icon (16, 30, 24, 3, 10), 0);
  fail_unless_equals_int (find_icon (46, 30, 24, 3, 10), 0);
  fail_unless_equals_int (find_icon (30, 20, 24, 3, 10), 0);

  /* a widget beside its label (a radio button, a check box): a ring 36
   * high reaching 3 rows above and below the words, a gap of 16 (0.44 of
   * the ink's height, too narrow to be set apart): cut */
  fail_unless_equals_int (find_mark (36, 36, 6, FALSE, 16, 1, 0), 4 + 36 + 8);
  fail_unless_equals_int (find_mark (36, 36, 6, FALSE, 16, 3, 10), 4 + 36 + 8);
  /* not when it stands on the words' baseline (a capital letter), nor
   * when it is no taller than the words, nor with a gap under 0.4 */
  fail_unless_equals_int (find_mark (36, 36, 3, FALSE, 16, 3, 10), 0);
  fail_unless_equals_int (find_mark (30, 30, 9, FALSE, 14, 3, 10), 0);
  fail_unless_equals_int (find_mark (36, 36, 6, FALSE, 13, 3, 10), 0);

  /* a filled box (a check box drawn as a white cross on a dark square):
   * a gap of 12 (0.4) is enough; not for its outline, nor under 0.35 */
  fail_unless_equals_int (find_mark (30, 30, 9, TRUE, 12, 3, 10), 4 + 30 + 6);
  fail_unless_equals_int (find_mark (30, 30, 9, FALSE, 12, 3, 10), 0);
  fail_unless_equals_int (find_mark (30, 30, 9, TRUE, 9, 3, 10), 0);

  /* no contrast: a blank crop */
  t = icon_crop (100, 90, NULL, 0);
  fail_unless_equals_int (nn_crop_find_icon (t, 48, 100, 90, mul, add), 0);
  g_free (t);
}

GST_END_TEST;

GST_START_TEST (test_shift_left)
{
  gfloat t[3 * 2 * 5];

  for (gint i = 0; i < 30; i++)
    t[i] = (gfloat) i + 1;
  /* 2 rows of 5 columns, 4 used: columns 1..3 move to 0..2 */
  nn_crop_shift_left (t, 2, 5, 4, 1);
  for (gint c = 0; c < 3; c++)
    for (gint v = 0; v < 2; v++) {
      const gfloat *row = t + c * 10 + v * 5;
      gfloat base = c * 10 + v * 5 + 1;

      fail_unless (row[0] == base + 1 && row[1] == base + 2 && row[2] == base + 3);
      fail_unless (row[3] == 0 && row[4] == base + 4); /* padding untouched */
    }
}

GST_END_TEST;

static Suite *
ocr_steps_suite (void)
{
  TCase *tc;
  Suite *s = nnp_test_suite_new ("ocr-steps", 0, &tc);

  tcase_add_test (tc, test_filter_sharpness);
  tcase_add_test (tc, test_whole_frame);
  tcase_add_test (tc, test_tidy);
  tcase_add_test (tc, test_read_both);
  tcase_add_test (tc, test_best_reading);
  tcase_add_test (tc, test_normalize_latin);
  tcase_add_test (tc, test_ctcdecode_normalize);
  tcase_add_test (tc, test_join_lines);
  tcase_add_test (tc, test_ctcdecode_join);
  tcase_add_test (tc, test_find_icon);
  tcase_add_test (tc, test_shift_left);
  return s;
}

GST_CHECK_MAIN (ocr_steps);
