/* Tests of the OCR post-processing elements (nndbdecode, nncrop,
 * nnctcdecode, nnclassdecode) on synthetic tensors, and of the plane
 * geometry behind them.  nnoverlay and nnmetapublish: test-post-output.c. */
#include "test-common.h"
#include "test-post-common.h"

#include <glib/gstdio.h>
#include <math.h>
#include <string.h>
#include <unistd.h>

/* struct layouts only: the metas are registered by the plugin */
#include "gstnnframemeta.h"
#include "gstnnmeta.h"
/* pure geometry, compiled into this test */
#include "nnctc.h"
#include "nndb.h"
#include "nnchannels.h"
#include "nnlabels.h"

#define MAP_CAPS(w, h) \
  "other/tensors,format=static,num_tensors=1,types=float32," \
  "dimensions=" #w ":" #h ":1:1,framerate=0/1"

/* ------------------------------------------------------------ helpers */

static GstHarness *
harness_with_bus (const gchar *element, GstBus **bus)
{
  GstHarness *h = gst_harness_new (element);

  *bus = gst_bus_new ();
  gst_element_set_bus (h->element, *bus);
  return h;
}

/* Ends a harness_with_bus() harness. */
static void
harness_teardown_with_bus (GstHarness *h, GstBus *bus)
{
  gst_element_set_bus (h->element, NULL);
  gst_object_unref (bus);
  gst_harness_teardown (h);
}

/* Sets caps on a harness_with_bus() harness, whose element must post an
 * error whose debug text holds every string of want (NULL-terminated);
 * ends the harness. */
static void
expect_caps_error (GstHarness *h, GstBus *bus, const gchar *caps, const gchar *const *want)
{
  gchar *dbg = NULL;
  GError *err;

  gst_harness_set_src_caps_str (h, caps);
  err = nnp_test_pop_message (bus, GST_MESSAGE_ERROR, &dbg, caps);
  for (gint i = 0; want[i]; i++)
    fail_unless (strstr (dbg, want[i]) != NULL, "%s", dbg);
  g_clear_error (&err);
  g_free (dbg);
  harness_teardown_with_bus (h, bus);
}

static gdouble
iou (gdouble ax0, gdouble ay0, gdouble ax1, gdouble ay1, gdouble bx0, gdouble by0, gdouble bx1,
     gdouble by1)
{
  gdouble ix = MAX (0, MIN (ax1, bx1) - MAX (ax0, bx0));
  gdouble iy = MAX (0, MIN (ay1, by1) - MAX (ay0, by0));
  gdouble inter = ix * iy;

  return inter / ((ax1 - ax0) * (ay1 - ay0) + (bx1 - bx0) * (by1 - by0) - inter);
}

/* ------------------------------------------------------------ geometry */

GST_START_TEST (test_geometry_min_area_rect)
{
  /* a 40 x 10 rectangle turned by 30 degrees, sampled inside */
  gdouble a = G_PI / 6, c = cos (a), s = sin (a);
  NnPoint pts[11 * 41], hull[2 * 11 * 41];
  NnQuad q;
  gdouble w, h;
  gint n = 0, nh;

  for (gint j = 0; j <= 10; j++)
    for (gint i = 0; i <= 40; i++) {
      pts[n].x = 100 + i * c - j * s;
      pts[n++].y = 50 + i * s + j * c;
    }
  nh = nn_convex_hull (pts, n, hull);
  fail_unless_equals_int (nh, 4);
  nn_min_area_rect (hull, nh, &q, &w, &h);
  fail_unless (fabs (w - 40) < 1e-6 && fabs (h - 10) < 1e-6, "%f x %f", w, h);
  /* ordered: the upper of the two leftmost corners is top-left */
  fail_unless (fabs (q.p[0].x - 100) < 1e-6 && fabs (q.p[0].y - 50) < 1e-6);
  fail_unless (fabs (q.p[1].x - (100 + 40 * c)) < 1e-6);
  fail_unless (fabs (q.p[1].y - (50 + 40 * s)) < 1e-6);
  fail_unless (fabs (q.p[3].x - (100 - 10 * s)) < 1e-6);

  /* expansion keeps centre and angle */
  nn_quad_expand (&q, 2.0);
  nn_quad_size (&q, &w, &h);
  fail_unless (fabs (w - 44) < 1e-6 && fabs (h - 14) < 1e-6);
  fail_unless (nn_quad_contains (&q, 100 + 20 * c - 5 * s, 50 + 20 * s + 5 * c));
  fail_if (nn_quad_contains (&q, 0, 0));
}

GST_END_TEST;

/* the CTC greedy decode: repeats merged, blanks split repeats, the score is
 * the mean of the kept steps */
GST_START_TEST (test_ctc_greedy)
{
  const gchar *classes[] = { "", "a", "b", " ", NULL };
  /* steps: a a blank a b b space -> "aab " ; scores 0.9 / 0.6 */
  const gint seq[7] = { 1, 1, 0, 1, 2, 2, 3 };
  gfloat scores[7 * 4];
  gdouble score;
  gchar *text;

  for (gint t = 0; t < 7; t++)
    for (gint c = 0; c < 4; c++)
      scores[t * 4 + c] = c == seq[t] ? (t == 6 ? 0.6f : 0.9f) : 0.01f;
  text = nn_ctc_greedy_decode (scores, 7, 4, 0, classes, &score);
  fail_unless_equals_string (text, "aab ");
  fail_unless (fabs (score - (0.9 * 3 + 0.6) / 4) < 1e-6, "%f", score);
  g_free (text);
  text = nn_ctc_greedy_decode (scores, 0, 4, 0, classes, &score);
  fail_unless_equals_string (text, "");
  fail_unless_equals_float (score, 0.0);
  g_free (text);
}

GST_END_TEST;

/* one labels reader: raw keys keep a space key and blank lines inside,
 * drop "\r" and the final newline; class labels are stripped, trailing
 * blank lines ignored; a comma list is a list; a missing file an error */
GST_START_TEST (test_labels_reader)
{
  gchar *path = g_strdup_printf ("%s/nnp-test-labels-%d.txt", g_get_tmp_dir (), (gint) getpid ());
  GError *err = NULL;
  gchar **l;
  guint n;

  fail_unless (g_file_set_contents (path, "a\r\n \n\nb\n", -1, NULL));
  l = nn_labels_read_file (path, NN_LABELS_RAW, &n, &err);
  fail_unless (l != NULL && err == NULL);
  fail_unless_equals_int (n, 4);
  fail_unless_equals_string (l[0], "a");
  fail_unless_equals_string (l[1], " ");
  fail_unless_equals_string (l[2], "");
  fail_unless_equals_string (l[3], "b");
  fail_unless (l[4] == NULL);
  g_strfreev (l);

  fail_unless (g_file_set_contents (path, " cat \ndog\n\n\n", -1, NULL));
  l = nn_labels_parse (path, &n, &err);
  fail_unless_equals_int (n, 2);
  fail_unless_equals_string (l[0], "cat");
  fail_unless_equals_string (l[1], "dog");
  g_strfreev (l);

  l = nn_labels_parse ("0, 180", &n, &err);
  fail_unless_equals_int (n, 2);
  fail_unless_equals_string (l[1], "180");
  g_strfreev (l);

  g_unlink (path);
  fail_unless (nn_labels_parse (path, &n, &err) == NULL);
  fail_unless (g_error_matches (err, G_FILE_ERROR, G_FILE_ERROR_NOENT));
  g_clear_error (&err);
  g_free (path);
}

GST_END_TEST;

/* one grammar for mean/std (nnconvert and nncrop): one value or one per
 * channel, separated by commas, colons or blanks; 0 refused for std */
GST_START_TEST (test_channel_values)
{
  gdouble v[3] = { 7, 7, 7 }, many[8];

  fail_unless (nn_channel_values_parse_n ("0.5", v, 3, TRUE));
  fail_unless (v[0] == 0.5 && v[1] == 0.5 && v[2] == 0.5);
  fail_unless (nn_channel_values_parse_n ("0.485, 0.456:0.406", v, 3, FALSE));
  fail_unless (v[0] == 0.485 && v[1] == 0.456 && v[2] == 0.406);
  fail_unless (!nn_channel_values_parse_n ("1,2", v, 3, FALSE));
  fail_unless (!nn_channel_values_parse_n ("1,2,3,4", v, 3, FALSE));
  fail_unless (!nn_channel_values_parse_n ("0", v, 3, TRUE));
  fail_unless (!nn_channel_values_parse_n ("1,x,3", v, 3, FALSE));
  fail_unless (!nn_channel_values_parse_n ("", v, 3, FALSE));
  fail_unless (!nn_channel_values_parse_n ("nan", v, 3, FALSE));
  fail_unless (v[0] == 0.485); /* untouched on failure */
  fail_unless_equals_int (nn_channel_values_parse ("1 2 3 4", many, 8, FALSE), 4);
  fail_unless_equals_int (nn_channel_values_parse ("1 2 3 4", many, 3, FALSE), 0);
}

GST_END_TEST;

/* PaddleOCR's DBPostProcess defaults, the region threshold of nndbdecode */
static const NnDbParams db_params = { .threshold = 0.3,
                                      .box_threshold = 0.6,
                                      .region_threshold = 0.9,
                                      .unclip_ratio = 1.5,
                                      .min_size = 3,
                                      .max_candidates = 1000 };

GST_START_TEST (test_geometry_db_decode)
{
  gfloat map[32 * 64];
  NnDbParams p = db_params;
  GArray *boxes = g_array_new (FALSE, FALSE, sizeof (NnTextBox));
  NnTextBox *b;
  gdouble d = 29.0 * 7 * 1.5 / (2 * 36);

  memset (map, 0, sizeof (map));
  for (gint y = 8; y < 16; y++)
    for (gint x = 10; x < 40; x++)
      map[y * 64 + x] = 0.9f;
  /* a speck below min-size and a faint region below box-threshold */
  map[30 * 64 + 60] = 0.9f;
  for (gint y = 20; y < 28; y++)
    for (gint x = 10; x < 40; x++)
      map[y * 64 + x] = 0.4f;
  nn_db_decode (map, 64, 32, 64, 64, 32, &p, boxes);
  fail_unless_equals_int (boxes->len, 1);
  b = &g_array_index (boxes, NnTextBox, 0);
  fail_unless (fabs (b->score - 0.9) < 1e-5);
  /* pixel centres 10.5..39.5 x 8.5..15.5, grown by area * 1.5 / perimeter */
  fail_unless (fabs (b->quad.p[0].x - (10.5 - d)) < 1e-6, "%f", b->quad.p[0].x);
  fail_unless (fabs (b->quad.p[0].y - (8.5 - d)) < 1e-6);
  fail_unless (fabs (b->quad.p[2].x - (39.5 + d)) < 1e-6);
  fail_unless (fabs (b->quad.p[2].y - (15.5 + d)) < 1e-6);

  /* content limits: nothing found in the padding */
  g_array_set_size (boxes, 0);
  nn_db_decode (map, 64, 32, 64, 8, 32, &p, boxes);
  fail_unless_equals_int (boxes->len, 0);
  g_array_unref (boxes);
}

GST_END_TEST;

/* A curved line (a photographed page's): its rectangle is mostly
 * background, its own pixels are strong; kept by the region threshold,
 * while a faint region stays dropped however its mean is taken. */
GST_START_TEST (test_geometry_db_decode_curved)
{
  enum { W = 128, H = 40 };
  gfloat *map = g_new0 (gfloat, W * H);
  NnDbParams p = db_params;
  GArray *boxes = g_array_new (FALSE, FALSE, sizeof (NnTextBox));
  NnTextBox *b;

  for (gint x = 4; x < 124; x++) {
    gint yc = 4 + (x - 64) * (x - 64) / 200;

    for (gint y = yc; y < yc + 4; y++)
      map[y * W + x] = 0.95f;
  }
  for (gint y = 32; y < 38; y++)
    for (gint x = 10; x < 40; x++)
      map[y * W + x] = 0.5f;

  nn_db_decode (map, W, H, W, W, H, &p, boxes);
  fail_unless_equals_int (boxes->len, 1);
  b = &g_array_index (boxes, NnTextBox, 0);
  /* the score is the region's, the line spans the map */
  fail_unless (fabs (b->score - 0.95) < 1e-5, "%f", b->score);
  fail_unless (b->core.p[0].x < 6 && b->core.p[2].x > 122);

  /* without the region threshold the rectangle's mean drops the line */
  p.region_threshold = 1.0;
  g_array_set_size (boxes, 0);
  nn_db_decode (map, W, H, W, W, H, &p, boxes);
  fail_unless_equals_int (boxes->len, 0);

  /* the faint region (0.5 over its pixels) stays below a region
   * threshold of 0.6 */
  p.region_threshold = 0.6;
  g_array_set_size (boxes, 0);
  nn_db_decode (map, W, H, W, W, H, &p, boxes);
  fail_unless_equals_int (boxes->len, 1);
  g_array_unref (boxes);
  g_free (map);
}

GST_END_TEST;

/* ------------------------------------------------------------ nndbdecode */

static GstBuffer *
db_map_buffer (GstBuffer *frame, const GstVideoInfo *info, gboolean boxes, GstClockTime pts)
{
  gfloat *map = g_new0 (gfloat, 64 * 128);
  GstBuffer *buf;
  GstNnTransformMeta *tm;

  if (boxes) {
    for (gint y = 10; y < 20; y++)
      for (gint x = 10; x < 50; x++)
        map[y * 128 + x] = 0.95f;
    for (gint y = 40; y < 52; y++)
      for (gint x = 60; x < 120; x++)
        map[y * 128 + x] = 0.8f;
  }
  buf = float_buffer (map, 64 * 128);
  g_free (map);
  GST_BUFFER_PTS (buf) = pts;
  GST_BUFFER_DURATION (buf) = GST_SECOND / 30;
  add_frame_meta (buf, frame, info, -1, -1, -1);
  /* the 256 x 128 frame was scaled by 0.5 into the 128 x 64 tensor */
  tm = (GstNnTransformMeta *) add_meta (buf, "GstNnTransformMeta");
  tm->source_width = 256;
  tm->source_height = 128;
  tm->tensor_width = tm->content_width = 128;
  tm->tensor_height = tm->content_height = 64;
  tm->scale_x = tm->scale_y = 0.5;
  tm->offset_x = tm->offset_y = 0;
  return buf;
}

GST_START_TEST (test_dbdecode_boxes)
{
  GstHarness *h = gst_harness_new ("nndbdecode");
  GstVideoInfo info;
  GstBuffer *frame = make_rgb_frame (&info, 256, 128, 255), *out;
  GstVideoRegionOfInterestMeta *roi;
  GstStructure *s;
  GstCaps *caps;
  gdouble score;
  /* true boxes in frame pixels */
  const gdouble tb[2][4] = { { 20, 20, 100, 40 }, { 120, 80, 240, 104 } };

  gst_harness_set_src_caps_str (h, MAP_CAPS (128, 64));
  fail_unless_equals_int (gst_harness_push (h, db_map_buffer (frame, &info, TRUE, 0)), GST_FLOW_OK);
  out = gst_harness_pull (h);
  fail_unless (out != NULL);
  caps = gst_pad_get_current_caps (h->sinkpad);
  s = gst_caps_get_structure (caps, 0);
  fail_unless (gst_structure_has_name (s, "video/x-raw"));
  fail_unless_equals_string (gst_structure_get_string (s, "format"), "RGB");
  gst_caps_unref (caps);
  /* the frame itself comes back */
  fail_unless_equals_uint64 (gst_buffer_get_size (out), GST_VIDEO_INFO_SIZE (&info));
  fail_unless_equals_uint64 (GST_BUFFER_PTS (out), 0);

  fail_unless_equals_int (count_rois (out), 2);
  for (gint i = 0; i < 2; i++) {
    roi = roi_by_id (out, i);
    fail_unless (roi != NULL);
    fail_unless_equals_string (g_quark_to_string (roi->roi_type), "text");
    /* unclip grows the box; it still overlaps the true box well */
    fail_unless (roi->x <= tb[i][0] && roi->y <= tb[i][1]);
    fail_unless (roi->x + roi->w >= tb[i][2] && roi->y + roi->h >= tb[i][3]);
    /* ... by area * 1.5 / perimeter of the map box, then doubled */
    {
      gdouble w = (tb[i][2] - tb[i][0]) / 2 - 1, hh = (tb[i][3] - tb[i][1]) / 2 - 1;
      gdouble d = 2 * w * hh * 1.5 / (2 * (w + hh)) - 1;

      fail_unless (iou (roi->x, roi->y, roi->x + roi->w, roi->y + roi->h, tb[i][0] - d,
                        tb[i][1] - d, tb[i][2] + d, tb[i][3] + d)
                   > 0.9);
    }
    s = gst_video_region_of_interest_meta_get_param (roi, "nnpipe/text");
    fail_unless (s != NULL);
    fail_unless (gst_structure_get_double (s, "box-score", &score));
    fail_unless (fabs (score - (i == 0 ? 0.95 : 0.8)) < 1e-5);
    fail_unless_equals_int (gst_value_array_get_size (gst_structure_get_value (s, "points")), 8);
  }
  gst_buffer_unref (out);
  gst_buffer_unref (frame);
  gst_harness_teardown (h);
}

GST_END_TEST;

GST_START_TEST (test_dbdecode_frames_flow)
{
  /* whole-frame-size=0: a frame without boxes keeps none (the 256 x 128
   * frame is small enough for the whole-frame box, test-ocr-steps.c) */
  GstHarness *h = gst_harness_new_parse ("nndbdecode whole-frame-size=0");
  GstVideoInfo info;
  GstBuffer *frame = make_rgb_frame (&info, 256, 128, 0);

  gst_harness_set_src_caps_str (h, MAP_CAPS (128, 64));
  for (gint i = 0; i < 5; i++)
    fail_unless_equals_int (
        gst_harness_push (h, db_map_buffer (frame, &info, i % 2 == 0, i * GST_SECOND / 30)),
        GST_FLOW_OK);
  gst_harness_push_event (h, gst_event_new_eos ());
  fail_unless_equals_int (gst_harness_buffers_received (h), 5);
  for (gint i = 0; i < 5; i++) {
    GstBuffer *out = gst_harness_pull (h);

    fail_unless_equals_uint64 (GST_BUFFER_PTS (out), i * GST_SECOND / 30);
    fail_unless_equals_int (count_rois (out), i % 2 == 0 ? 2 : 0);
    gst_buffer_unref (out);
  }
  gst_buffer_unref (frame);
  gst_harness_teardown (h);
}

GST_END_TEST;

/* the decoder base class: the location file gets one line per box (score,
 * corners); a tensor buffer that does not hold the caps' tensors is an
 * error naming both sizes, never a read past the end */
GST_START_TEST (test_dbdecode_location_and_short_buffer)
{
  gchar *path = g_strdup_printf ("%s/nnp-test-boxes-%d.txt", g_get_tmp_dir (), (gint) getpid ());
  gchar *launch = g_strdup_printf ("nndbdecode location=%s", path);
  GstHarness *h = gst_harness_new_parse (launch);
  GstVideoInfo info;
  GstBuffer *frame = make_rgb_frame (&info, 256, 128, 0), *buf;
  gchar *contents = NULL, **lines;
  GstBus *bus;
  GError *err;
  gchar *dbg = NULL;

  gst_harness_set_src_caps_str (h, MAP_CAPS (128, 64));
  fail_unless_equals_int (gst_harness_push (h, db_map_buffer (frame, &info, TRUE, 0)), GST_FLOW_OK);
  gst_buffer_unref (gst_harness_pull (h));
  gst_harness_teardown (h);
  fail_unless (g_file_get_contents (path, &contents, NULL, NULL));
  lines = g_strsplit (contents, "\n", -1);
  fail_unless_equals_int (g_strv_length (lines), 3); /* two lines + "" */
  fail_unless (g_str_has_prefix (lines[0], "0.9500\t"), "%s", lines[0]);
  fail_unless (g_str_has_prefix (lines[1], "0.8000\t"), "%s", lines[1]);
  {
    gchar **corners = g_strsplit (lines[0], " ", -1);

    fail_unless_equals_int (g_strv_length (corners), 4);
    g_strfreev (corners);
  }
  g_strfreev (lines);
  g_free (contents);
  g_unlink (path);

  h = harness_with_bus ("nndbdecode", &bus);
  gst_harness_set_src_caps_str (h, MAP_CAPS (128, 64));
  buf = db_map_buffer (frame, &info, TRUE, 0);
  gst_buffer_resize (buf, 0, 100);
  fail_unless_equals_int (gst_harness_push (h, buf), GST_FLOW_ERROR);
  err = nnp_test_pop_message (bus, GST_MESSAGE_ERROR, &dbg, "short buffer");
  fail_unless (strstr (dbg, "100 bytes") != NULL, "%s", dbg);
  fail_unless (strstr (dbg, "32768 bytes") != NULL, "%s", dbg);
  g_clear_error (&err);
  g_free (dbg);
  fail_unless_equals_int (gst_harness_buffers_received (h), 0);
  harness_teardown_with_bus (h, bus);
  gst_buffer_unref (frame);
  g_free (launch);
  g_free (path);
}

GST_END_TEST;

GST_START_TEST (test_dbdecode_wrong_caps)
{
  GstBus *bus;
  GstHarness *h = harness_with_bus ("nndbdecode", &bus);
  const gchar *want[] = { "expected", "got", "uint8", NULL };

  expect_caps_error (
      h, bus,
      "other/tensors,format=static,num_tensors=1,types=uint8,dimensions=128:64:3:1,framerate=0/1",
      want);
}

GST_END_TEST;

/* ------------------------------------------------------------ nncrop */

GST_START_TEST (test_crop_straightens)
{
  GstHarness *h = gst_harness_new ("nncrop");
  GstVideoInfo info;
  GstBuffer *frame = make_rgb_frame (&info, 200, 100, 0), *out;
  GstMapInfo map;
  const gfloat *t;
  GstNnFrameMeta *fm;
  gsize plane = 48 * 320;

  /* a fixed tensor width; the bilinear filter (the default Lanczos rings
   * near the box's edges: its values there are not exactly white) */
  g_object_set (h->element, "width", 320, "filter", 0, NULL);
  /* a white 100 x 40 rectangle at (50, 30) */
  gst_buffer_map (frame, &map, GST_MAP_WRITE);
  for (gint y = 30; y < 70; y++)
    memset (map.data + y * GST_VIDEO_INFO_PLANE_STRIDE (&info, 0) + 50 * 3, 255, 100 * 3);
  gst_buffer_unmap (frame, &map);
  add_text_roi (frame, 7, 50, 30, 100, 40);
  GST_BUFFER_PTS (frame) = 42;

  gst_harness_set_src_caps_str (h, "video/x-raw,format=RGB,width=200,height=100,framerate=0/1");
  fail_unless_equals_int (gst_harness_push (h, gst_buffer_ref (frame)), GST_FLOW_OK);
  out = gst_harness_pull (h);
  fail_unless_equals_uint64 (GST_BUFFER_PTS (out), 42);
  fail_unless_equals_uint64 (gst_buffer_get_size (out), 3 * plane * 4);
  fm = get_frame_meta (out);
  fail_unless (fm != NULL && fm->frame == frame);
  fail_unless_equals_int (fm->n_rois, 1);
  fail_unless_equals_int (fm->roi_index, 0);
  fail_unless_equals_int (fm->roi_id, 7);

  /* resized to 48 high keeps the aspect: 120 wide, then zero padding */
  gst_buffer_map (out, &map, GST_MAP_READ);
  t = (const gfloat *) map.data;
  for (gint c = 0; c < 3; c++) {
    fail_unless (fabs (t[c * plane + 24 * 320 + 60] - 1.0f) < 1e-5);
    fail_unless (fabs (t[c * plane + 2 * 320 + 2] - 1.0f) < 1e-5);
    fail_unless (t[c * plane + 24 * 320 + 119] > 0.5f);
    fail_unless_equals_float (t[c * plane + 24 * 320 + 121], 0.0f);
    fail_unless_equals_float (t[c * plane + 47 * 320 + 319], 0.0f);
  }
  gst_buffer_unmap (out, &map);
  gst_buffer_unref (out);

  /* two regions: two buffers; none: one placeholder */
  {
    GstBuffer *f2 = make_rgb_frame (&info, 200, 100, 0);
    GstBuffer *f0 = make_rgb_frame (&info, 200, 100, 0);

    add_text_roi (f2, 0, 10, 10, 60, 20);
    add_text_roi (f2, 1, 10, 50, 60, 20);
    gst_harness_push (h, f2);
    gst_harness_push (h, f0);
    fail_unless_equals_int (gst_harness_buffers_in_queue (h), 3);
    for (gint i = 0; i < 3; i++) {
      out = gst_harness_pull (h);
      fm = get_frame_meta (out);
      fail_unless_equals_int (fm->n_rois, i < 2 ? 2 : 0);
      fail_unless_equals_int (fm->roi_index, i < 2 ? i : -1);
      gst_buffer_unref (out);
    }
  }
  gst_buffer_unref (frame);
  gst_harness_teardown (h);
}

GST_END_TEST;

/* The tensor width of the last caps event the harness received. */
static gint
crop_caps_width (GstHarness *h)
{
  GstCaps *caps = gst_pad_get_current_caps (h->sinkpad);
  const gchar *dims;
  gchar *end;
  gint width;

  fail_unless (caps != NULL);
  /* NNStreamer order, innermost first: "W:48:3:1" */
  dims = gst_structure_get_string (gst_caps_get_structure (caps, 0), "dimensions");
  fail_unless (dims != NULL);
  width = (gint) g_ascii_strtoll (dims, &end, 10);
  fail_unless (g_str_has_prefix (end, ":48:3:1"));
  gst_caps_unref (caps);
  return width;
}

GST_START_TEST (test_crop_width_per_box)
{
  GstHarness *h = gst_harness_new ("nncrop");
  GstVideoInfo info;
  GstBuffer *frame = make_rgb_frame (&info, 400, 100, 0), *out;
  GstMapInfo map;
  const gfloat *t;
  gint width;

  /* defaults: a width per box at its true aspect ratio, multiple of 32 */
  g_object_get (h->element, "width", &width, NULL);
  fail_unless_equals_int (width, 0);
  gst_buffer_map (frame, &map, GST_MAP_WRITE);
  for (gint y = 30; y < 70; y++)
    memset (map.data + y * GST_VIDEO_INFO_PLANE_STRIDE (&info, 0) + 50 * 3, 255, 100 * 3);
  gst_buffer_unmap (frame, &map);
  /* 100 x 40: 120 wide at height 48 (short: kept), padded to 128 */
  add_text_roi (frame, 0, 50, 30, 100, 40);
  /* 380 x 20: 912 wide at height 48, padded to 928 (never narrowed) */
  add_text_roi (frame, 1, 10, 75, 380, 20);
  gst_harness_set_src_caps_str (h, "video/x-raw,format=RGB,width=400,height=100,framerate=0/1");
  fail_unless_equals_int (gst_harness_push (h, frame), GST_FLOW_OK);

  out = gst_harness_pull (h);
  fail_unless_equals_uint64 (gst_buffer_get_size (out), 3 * 48 * 128 * 4);
  gst_buffer_map (out, &map, GST_MAP_READ);
  t = (const gfloat *) map.data;
  fail_unless (fabs (t[24 * 128 + 60] - 1.0f) < 1e-5);
  fail_unless (t[24 * 128 + 119] > 0.5f);
  fail_unless_equals_float (t[24 * 128 + 121], 0.0f);
  gst_buffer_unmap (out, &map);
  gst_buffer_unref (out);
  out = gst_harness_pull (h);
  fail_unless_equals_uint64 (gst_buffer_get_size (out), 3 * 48 * 928 * 4);
  gst_buffer_unref (out);
  /* the caps followed the widths: the last ones say 928 */
  fail_unless_equals_int (crop_caps_width (h), 928);

  /* a frame without regions: a placeholder of the current width */
  gst_harness_push (h, make_rgb_frame (&info, 400, 100, 0));
  out = gst_harness_pull (h);
  fail_unless_equals_uint64 (gst_buffer_get_size (out), 3 * 48 * 928 * 4);
  gst_buffer_unref (out);
  fail_unless_equals_int (crop_caps_width (h), 928);
  gst_harness_teardown (h);

  /* width-scale 0.5 narrows long boxes (not below 4 x 48): 456 -> 480 */
  h = gst_harness_new ("nncrop");
  g_object_set (h->element, "width-scale", 0.5, NULL);
  gst_harness_set_src_caps_str (h, "video/x-raw,format=RGB,width=400,height=100,framerate=0/1");
  frame = make_rgb_frame (&info, 400, 100, 0);
  add_text_roi (frame, 0, 10, 75, 380, 20);
  gst_harness_push (h, frame);
  out = gst_harness_pull (h);
  fail_unless_equals_uint64 (gst_buffer_get_size (out), 3 * 48 * 480 * 4);
  gst_buffer_unref (out);
  gst_harness_teardown (h);

  /* margin 0.5: the 100 x 40 box grows to 100 x 80 (above and below
   * only), 60 wide at height 48 -> 64; the white box fills the middle
   * half, black above and below */
  h = gst_harness_new ("nncrop");
  g_object_set (h->element, "margin", 0.5, NULL);
  gst_harness_set_src_caps_str (h, "video/x-raw,format=RGB,width=400,height=100,framerate=0/1");
  frame = make_rgb_frame (&info, 400, 100, 0);
  gst_buffer_map (frame, &map, GST_MAP_WRITE);
  for (gint y = 30; y < 70; y++)
    memset (map.data + y * GST_VIDEO_INFO_PLANE_STRIDE (&info, 0) + 50 * 3, 255, 100 * 3);
  gst_buffer_unmap (frame, &map);
  add_text_roi (frame, 0, 50, 30, 100, 40);
  gst_harness_push (h, frame);
  out = gst_harness_pull (h);
  fail_unless_equals_uint64 (gst_buffer_get_size (out), 3 * 48 * 64 * 4);
  gst_buffer_map (out, &map, GST_MAP_READ);
  t = (const gfloat *) map.data;
  fail_unless (fabs (t[2 * 64 + 30] + 1.0f) < 1e-5);
  fail_unless (fabs (t[24 * 64 + 30] - 1.0f) < 1e-5);
  fail_unless (fabs (t[45 * 64 + 30] + 1.0f) < 1e-5);
  gst_buffer_unmap (out, &map);
  gst_buffer_unref (out);
  gst_harness_teardown (h);

  /* max-width squeezes, width-scale 1 keeps the aspect ratio */
  h = gst_harness_new ("nncrop");
  g_object_set (h->element, "max-width", 640, "width-scale", 1.0, NULL);
  gst_harness_set_src_caps_str (h, "video/x-raw,format=RGB,width=400,height=100,framerate=0/1");
  frame = make_rgb_frame (&info, 400, 100, 0);
  add_text_roi (frame, 0, 10, 75, 380, 20);
  add_text_roi (frame, 1, 10, 10, 200, 40);
  gst_harness_push (h, frame);
  out = gst_harness_pull (h);
  fail_unless_equals_uint64 (gst_buffer_get_size (out), 3 * 48 * 640 * 4);
  gst_buffer_unref (out);
  out = gst_harness_pull (h);
  /* 240 wide at height 48, padded to 256 */
  fail_unless_equals_uint64 (gst_buffer_get_size (out), 3 * 48 * 256 * 4);
  gst_buffer_unref (out);
  fail_unless_equals_int (crop_caps_width (h), 256);
  gst_harness_teardown (h);
}

GST_END_TEST;

/* ------------------------------------------------------------ nnctcdecode */

#define T 8
#define C 5 /* blank, a, b, c, space */

static GstBuffer *
ctc_buffer (const gint *seq, GstBuffer *frame, const GstVideoInfo *info, gint n_rois, gint index)
{
  gfloat scores[T * C];
  GstBuffer *buf;

  for (gint t = 0; t < T; t++)
    for (gint c = 0; c < C; c++)
      scores[t * C + c] = seq ? (c == seq[t] ? 0.9f : 0.025f) : 0.2f;
  buf = float_buffer (scores, T * C);
  GST_BUFFER_PTS (buf) = GST_BUFFER_PTS (frame);
  add_frame_meta (buf, frame, info, n_rois, index, index);
  return buf;
}

GST_START_TEST (test_ctcdecode)
{
  GstBus *bus;
  GstHarness *h = harness_with_bus ("nnctcdecode", &bus);
  gchar *keys = g_build_filename (g_get_tmp_dir (), "nnp-test-keys.txt", NULL);
  GstVideoInfo info;
  GstBuffer *frame = make_rgb_frame (&info, 100, 60, 0), *out;
  GstVideoRegionOfInterestMeta *roi;
  GstStructure *s;
  GstMessage *msg;
  const GValue *lines;
  gdouble score;
  /* a a(repeat) blank a b space space(repeat) c */
  const gint seq[T] = { 1, 1, 0, 1, 2, 4, 4, 3 };

  fail_unless (g_file_set_contents (keys, "a\nb\nc\n", -1, NULL));
  g_object_set (h->element, "keys", keys, NULL);
  add_text_roi (frame, 0, 0, 0, 50, 20);
  add_text_roi (frame, 1, 0, 30, 50, 20);
  GST_BUFFER_PTS (frame) = 1000;
  gst_harness_set_src_caps_str (
      h, "other/tensors,format=static,num_tensors=1,types=float32,dimensions=5:8:1,framerate=0/1");

  /* the frame waits for its second region; a blank line scores 0 */
  gst_harness_push (h, ctc_buffer (seq, frame, &info, 2, 0));
  fail_unless_equals_int (gst_harness_buffers_in_queue (h), 0);
  gst_harness_push (h, ctc_buffer (NULL, frame, &info, 2, 1));
  fail_unless_equals_int (gst_harness_buffers_in_queue (h), 1);
  out = gst_harness_pull (h);
  fail_unless_equals_uint64 (GST_BUFFER_PTS (out), 1000);
  /* the low-score line lost its region (min-score 0.5) */
  fail_unless_equals_int (count_rois (out), 1);
  roi = roi_by_id (out, 0);
  s = gst_video_region_of_interest_meta_get_param (roi, "nnpipe/text");
  fail_unless_equals_string (gst_structure_get_string (s, "text"), "aab c");
  fail_unless (gst_structure_get_double (s, "score", &score));
  fail_unless (fabs (score - 0.9) < 1e-5);
  gst_buffer_unref (out);

  msg = gst_bus_pop_filtered (bus, GST_MESSAGE_ELEMENT);
  fail_unless (msg != NULL);
  s = (GstStructure *) gst_message_get_structure (msg);
  fail_unless (gst_structure_has_name (s, "nnpipe-text"));
  lines = gst_structure_get_value (s, "lines");
  fail_unless_equals_int (gst_value_list_get_size (lines), 1);
  fail_unless_equals_string (
      gst_structure_get_string (gst_value_get_structure (gst_value_list_get_value (lines, 0)),
                                "text"),
      "aab c");
  gst_message_unref (msg);

  /* a frame without regions goes straight through */
  {
    GstBuffer *f0 = make_rgb_frame (&info, 100, 60, 0);

    GST_BUFFER_PTS (f0) = 2000;
    gst_harness_push (h, ctc_buffer (NULL, f0, &info, 0, -1));
    out = gst_harness_pull (h);
    fail_unless_equals_uint64 (GST_BUFFER_PTS (out), 2000);
    fail_unless_equals_int (count_rois (out), 0);
    gst_buffer_unref (out);
    gst_buffer_unref (f0);
  }

  gst_buffer_unref (frame);
  harness_teardown_with_bus (h, bus);
  g_unlink (keys);
  g_free (keys);
}

GST_END_TEST;

GST_START_TEST (test_ctcdecode_keys_mismatch)
{
  GstBus *bus;
  GstHarness *h = harness_with_bus ("nnctcdecode", &bus);
  gchar *keys = g_build_filename (g_get_tmp_dir (), "nnp-test-keys2.txt", NULL);
  const gchar *want[] = { "6 lines", "5 classes", NULL };

  fail_unless (g_file_set_contents (keys, "a\nb\nc\nd\ne\nf\n", -1, NULL));
  g_object_set (h->element, "keys", keys, NULL);
  expect_caps_error (
      h, bus,
      "other/tensors,format=static,num_tensors=1,types=float32,dimensions=5:8:1,framerate=0/1",
      want);
  g_unlink (keys);
  g_free (keys);
}

GST_END_TEST;

/* ------------------------------------------------------------ nnclassdecode */

GST_START_TEST (test_classdecode)
{
  GstHarness *h = gst_harness_new_parse ("nnclassdecode labels=0,180");
  GstVideoInfo info;
  GstBuffer *frame = make_rgb_frame (&info, 192, 48, 0), *buf, *out;
  const gfloat scores[2] = { 0.1f, 0.9f };
  GstVideoRegionOfInterestMeta *roi;
  GstStructure *s;
  gdouble score;

  gst_harness_set_src_caps_str (
      h,
      "other/tensors,format=static,num_tensors=1,types=float32,dimensions=(string)2:1,framerate=0/1");
  buf = float_buffer (scores, 2);
  GST_BUFFER_PTS (buf) = 5;
  add_frame_meta (buf, frame, &info, -1, -1, -1);
  fail_unless_equals_int (gst_harness_push (h, buf), GST_FLOW_OK);
  out = gst_harness_pull (h);
  fail_unless_equals_uint64 (GST_BUFFER_PTS (out), 5);
  fail_unless_equals_int (count_rois (out), 1);
  roi = roi_by_id (out, 0);
  fail_unless (roi != NULL && roi->w == 192 && roi->h == 48);
  s = gst_video_region_of_interest_meta_get_param (roi, "nnpipe/class");
  fail_unless_equals_string (gst_structure_get_string (s, "label"), "180");
  fail_unless (gst_structure_get_double (s, "score", &score));
  fail_unless (fabs (score - 0.9) < 1e-6);
  gst_buffer_unref (out);
  gst_buffer_unref (frame);
  gst_harness_teardown (h);
}

GST_END_TEST;

/* one score vector per region (nncrop's tensors): each region's class goes
 * into its own ROI, the frame comes out once, after its last region; a
 * frame without regions (placeholder) comes out too */
GST_START_TEST (test_classdecode_regions)
{
  GstHarness *h = gst_harness_new_parse ("nnclassdecode labels=0,180");
  GstVideoInfo info;
  GstBuffer *frame = make_rgb_frame (&info, 200, 100, 0), *empty, *buf, *out;
  const gfloat up[2] = { 0.97f, 0.03f }, down[2] = { 0.02f, 0.98f };
  GstStructure *s;

  add_text_roi (frame, 0, 10, 10, 80, 20);
  add_text_roi (frame, 1, 10, 50, 80, 20);
  GST_BUFFER_PTS (frame) = 7;
  gst_harness_set_src_caps_str (
      h,
      "other/tensors,format=static,num_tensors=1,types=float32,dimensions=(string)2:1,framerate=0/1");
  buf = float_buffer (up, 2);
  add_frame_meta (buf, frame, &info, 2, 0, 0);
  fail_unless_equals_int (gst_harness_push (h, buf), GST_FLOW_OK);
  fail_unless_equals_int (gst_harness_buffers_received (h), 0);
  buf = float_buffer (down, 2);
  add_frame_meta (buf, frame, &info, 2, 1, 1);
  fail_unless_equals_int (gst_harness_push (h, buf), GST_FLOW_OK);
  out = gst_harness_pull (h);
  fail_unless_equals_uint64 (GST_BUFFER_PTS (out), 7);
  fail_unless_equals_int (count_rois (out), 2);
  s = gst_video_region_of_interest_meta_get_param (roi_by_id (out, 0), "nnpipe/class");
  fail_unless (s != NULL);
  fail_unless_equals_string (gst_structure_get_string (s, "label"), "0");
  s = gst_video_region_of_interest_meta_get_param (roi_by_id (out, 1), "nnpipe/class");
  fail_unless (s != NULL);
  fail_unless_equals_string (gst_structure_get_string (s, "label"), "180");
  /* the text structure is still there for the recogniser's crop */
  fail_unless (gst_video_region_of_interest_meta_get_param (roi_by_id (out, 1), "nnpipe/text")
               != NULL);
  gst_buffer_unref (out);

  empty = make_rgb_frame (&info, 200, 100, 0);
  GST_BUFFER_PTS (empty) = 8;
  buf = float_buffer (up, 2);
  add_frame_meta (buf, empty, &info, 0, 0, -1);
  fail_unless_equals_int (gst_harness_push (h, buf), GST_FLOW_OK);
  out = gst_harness_pull (h);
  fail_unless_equals_uint64 (GST_BUFFER_PTS (out), 8);
  fail_unless_equals_int (count_rois (out), 0);
  gst_buffer_unref (out);
  fail_unless_equals_int (gst_harness_buffers_received (h), 2);
  gst_buffer_unref (frame);
  gst_buffer_unref (empty);
  gst_harness_teardown (h);
}

GST_END_TEST;

/* nncrop turns a region labelled 180 by the direction classifier: a box
 * white on its left half, black on its right reads black first; below
 * flip-threshold (or with flip-label empty) it is not turned */
static gfloat
crop_first_column (const gchar *launch, gdouble score)
{
  GstHarness *h = gst_harness_new_parse (launch);
  GstVideoInfo info;
  GstBuffer *frame = make_rgb_frame (&info, 200, 100, 0), *out;
  GstMapInfo map;
  gfloat v;

  gst_buffer_map (frame, &map, GST_MAP_WRITE);
  for (gint y = 20; y < 68; y++)
    memset (map.data + y * GST_VIDEO_INFO_PLANE_STRIDE (&info, 0) + 20 * 3, 255, 48 * 3);
  gst_buffer_unmap (frame, &map);
  add_text_roi (frame, 0, 20, 20, 96, 48);
  gst_video_region_of_interest_meta_add_param (
      roi_by_id (frame, 0),
      gst_structure_new ("nnpipe/class", "label", G_TYPE_STRING, "180", "class-id", G_TYPE_INT, 1,
                         "score", G_TYPE_DOUBLE, score, NULL));
  gst_harness_set_src_caps_str (h, "video/x-raw,format=RGB,width=200,height=100,framerate=0/1");
  fail_unless_equals_int (gst_harness_push (h, frame), GST_FLOW_OK);
  out = gst_harness_pull (h);
  fail_unless_equals_uint64 (gst_buffer_get_size (out), 3 * 48 * 96 * 4);
  gst_buffer_map (out, &map, GST_MAP_READ);
  v = ((const gfloat *) map.data)[24 * 96 + 2];
  gst_buffer_unmap (out, &map);
  gst_buffer_unref (out);
  gst_harness_teardown (h);
  return v;
}

GST_START_TEST (test_crop_flips)
{
  /* normalised: white 1, black -1 */
  fail_unless (crop_first_column ("nncrop read-both=false", 0.99) < -0.99f);
  fail_unless (crop_first_column ("nncrop read-both=false", 0.5) > 0.99f);
  fail_unless (crop_first_column ("nncrop read-both=false flip-threshold=0.4", 0.5) < -0.99f);
  fail_unless (crop_first_column ("nncrop flip-label=\"\"", 0.99) > 0.99f);
}

GST_END_TEST;

static Suite *
post_suite (void)
{
  TCase *tc;
  Suite *s = nnp_test_suite_new ("post", 0, &tc);

  tcase_add_test (tc, test_geometry_min_area_rect);
  tcase_add_test (tc, test_geometry_db_decode);
  tcase_add_test (tc, test_geometry_db_decode_curved);
  tcase_add_test (tc, test_ctc_greedy);
  tcase_add_test (tc, test_labels_reader);
  tcase_add_test (tc, test_channel_values);
  tcase_add_test (tc, test_dbdecode_boxes);
  tcase_add_test (tc, test_dbdecode_frames_flow);
  tcase_add_test (tc, test_dbdecode_wrong_caps);
  tcase_add_test (tc, test_dbdecode_location_and_short_buffer);
  tcase_add_test (tc, test_crop_straightens);
  tcase_add_test (tc, test_crop_width_per_box);
  tcase_add_test (tc, test_ctcdecode);
  tcase_add_test (tc, test_ctcdecode_keys_mismatch);
  tcase_add_test (tc, test_classdecode);
  tcase_add_test (tc, test_classdecode_regions);
  tcase_add_test (tc, test_crop_flips);
  return s;
}

GST_CHECK_MAIN (post);
