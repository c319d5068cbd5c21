/* Tests of the output elements at the end of an OCR pipeline: nnoverlay
 * (boxes and labels drawn on the frame) and nnmetapublish (results as JSON
 * Lines, text, errors), on synthetic frames and regions.  The decoders:
 * test-post.c. */
#include "test-common.h"
#include "test-post-common.h"

#include <cjson/cJSON.h>
#include <glib/gstdio.h>
#include <pango/pangocairo.h>
#include <string.h>

/* ------------------------------------------------------------ nnoverlay */

GST_START_TEST (test_overlay_draws)
{
  GstHarness *h = gst_harness_new ("nnoverlay");
  GstVideoInfo info;
  GstBuffer *frame = make_rgb_frame (&info, 64, 64, 255), *out;
  GstMapInfo map;
  const guint8 *p;
  gint stride = GST_VIDEO_INFO_PLANE_STRIDE (&info, 0);

  add_text_roi (frame, 0, 10, 30, 40, 20);
  gst_harness_set_src_caps_str (h, "video/x-raw,format=RGB,width=64,height=64,framerate=0/1");
  out = gst_harness_push_and_pull (h, frame);
  gst_buffer_map (out, &map, GST_MAP_READ);
  /* the left edge is green, the inside stays white */
  p = map.data + 40 * stride + 10 * 3;
  fail_unless (p[0] == 0 && p[1] == 255 && p[2] == 0);
  p = map.data + 40 * stride + 30 * 3;
  fail_unless (p[0] == 255 && p[1] == 255 && p[2] == 255);
  gst_buffer_unmap (out, &map);
  gst_buffer_unref (out);
  gst_harness_teardown (h);
}

GST_END_TEST;

/* Label pixels of a text ROI at (20, 60) 160x30 on a grey 200x100 RGB
 * frame: the frame nnoverlay gives back (owned), and how many pixels above
 * the box are bright (text) and dark (the label's background). */
static GstBuffer *
overlay_label (const gchar *props, const gchar *text, guint *bright, guint *dark)
{
  gchar *launch = g_strdup_printf ("nnoverlay %s", props);
  GstHarness *h = gst_harness_new_parse (launch);
  GstVideoInfo info;
  GstBuffer *frame = make_rgb_frame (&info, 200, 100, 128), *out;
  GstVideoRegionOfInterestMeta *roi;
  GstMapInfo map;
  gint stride = GST_VIDEO_INFO_PLANE_STRIDE (&info, 0);

  add_text_roi (frame, 0, 20, 60, 160, 30);
  roi = roi_by_id (frame, 0);
  gst_structure_set (gst_video_region_of_interest_meta_get_param (roi, "nnpipe/text"), "text",
                     G_TYPE_STRING, text, "score", G_TYPE_DOUBLE, 0.9, NULL);
  gst_harness_set_src_caps_str (h, "video/x-raw,format=RGB,width=200,height=100,framerate=0/1");
  out = gst_harness_push_and_pull (h, frame);
  *bright = *dark = 0;
  gst_buffer_map (out, &map, GST_MAP_READ);
  for (gint y = 0; y < 58; y++)
    for (gint x = 0; x < 200; x++) {
      const guint8 *p = map.data + y * stride + x * 3;

      *bright += p[0] > 200 && p[1] > 200 && p[2] > 200;
      *dark += p[0] < 40 && p[1] < 40 && p[2] < 40;
    }
  gst_buffer_unmap (out, &map);
  gst_harness_teardown (h);
  g_free (launch);
  return out;
}

static gboolean
buffers_equal (GstBuffer *a, GstBuffer *b)
{
  GstMapInfo ma, mb;
  gboolean eq;

  gst_buffer_map (a, &ma, GST_MAP_READ);
  gst_buffer_map (b, &mb, GST_MAP_READ);
  eq = ma.size == mb.size && memcmp (ma.data, mb.data, ma.size) == 0;
  gst_buffer_unmap (a, &ma);
  gst_buffer_unmap (b, &mb);
  return eq;
}

GST_START_TEST (test_overlay_text)
{
  GstBuffer *none, *hello, *world;
  guint bright, dark;

  /* no text: nothing above the box changes */
  none = overlay_label ("draw-text=false", "Hello", &bright, &dark);
  fail_unless_equals_int (bright, 0);
  fail_unless_equals_int (dark, 0);
  /* the text: white glyphs on a black label above the box */
  hello = overlay_label ("font-desc=\"Sans 14\"", "Hello", &bright, &dark);
  fail_unless (bright > 30, "%u bright pixels", bright);
  fail_unless (dark > 100, "%u dark pixels", dark);
  fail_unless (!buffers_equal (none, hello));
  /* another string draws other pixels; a bigger font more of them */
  world = overlay_label ("font-desc=\"Sans 14\"", "World", &bright, &dark);
  fail_unless (!buffers_equal (hello, world));
  gst_buffer_unref (world);
  world = overlay_label ("font-desc=\"Sans 24\"", "Hello", &bright, &dark);
  {
    guint b14, d14;
    GstBuffer *again = overlay_label ("font-desc=\"Sans 14\"", "Hello", &b14, &d14);

    fail_unless (bright > b14 && dark > d14, "Sans 24 %u/%u, Sans 14 %u/%u", bright, dark, b14,
                 d14);
    /* the same input draws the same pixels */
    fail_unless (buffers_equal (hello, again));
    gst_buffer_unref (again);
  }
  gst_buffer_unref (world);
  gst_buffer_unref (hello);
  gst_buffer_unref (none);
}

GST_END_TEST;

GST_START_TEST (test_overlay_cjk)
{
  const gchar *cjk = "\xe4\xb8\xad\xe6\x96\x87\xe8\xaf\x86\xe5\x88\xab"; /* 中文识别 */
  PangoFontMap *fm = pango_cairo_font_map_new ();
  PangoContext *ctx = pango_font_map_create_context (fm);
  PangoLayout *layout = pango_layout_new (ctx);
  PangoFontDescription *desc = pango_font_description_from_string ("Sans 14");
  GstBuffer *a, *b;
  guint bright, dark;

  /* a font on this machine has the glyphs (no hollow "tofu" boxes) */
  pango_layout_set_font_description (layout, desc);
  pango_layout_set_text (layout, cjk, -1);
  fail_unless (pango_layout_get_unknown_glyphs_count (layout) == 0,
               "no font has glyphs for CJK text: install fonts-wqy-microhei");
  pango_font_description_free (desc);
  g_object_unref (layout);
  g_object_unref (ctx);
  g_object_unref (fm);

  /* nnoverlay draws them, other characters differently */
  a = overlay_label ("", cjk, &bright, &dark);
  fail_unless (bright > 30 && dark > 100, "%u bright, %u dark", bright, dark);
  b = overlay_label ("", "\xe6\x96\x87\xe5\xad\x97\xe8\xaf\x86\xe5\x88\xab", &bright, &dark);
  fail_unless (!buffers_equal (a, b));
  gst_buffer_unref (a);
  gst_buffer_unref (b);
}

GST_END_TEST;

/* ------------------------------------------------------------ nnmetapublish */

GST_START_TEST (test_metapublish_json)
{
  gchar *path = g_build_filename (g_get_tmp_dir (), "nnp-test-XXXXXX.jsonl", NULL);
  gchar *launch, *contents = NULL, **lines;
  gint fd = g_mkstemp (path);
  GstHarness *h;
  GstVideoInfo info;
  GstBuffer *frame;
  GstVideoRegionOfInterestMeta *roi;
  cJSON *o, *l, *box;

  fail_unless (fd >= 0);
  g_close (fd, NULL);
  launch = g_strdup_printf ("nnmetapublish location=%s", path);
  h = gst_harness_new_parse (launch);
  gst_harness_set_src_caps_str (h, "video/x-raw,format=RGB,width=64,height=48,framerate=0/1");

  /* frame 0: two lines, the second turned by the classifier */
  frame = make_rgb_frame (&info, 64, 48, 0);
  GST_BUFFER_PTS (frame) = 40 * GST_MSECOND;
  add_text_roi (frame, 0, 2, 3, 40, 10);
  add_text_roi (frame, 1, 2, 20, 40, 10);
  gst_structure_set (
      gst_video_region_of_interest_meta_get_param (roi_by_id (frame, 0), "nnpipe/text"), "text",
      G_TYPE_STRING, "Hello \"you\"", "score", G_TYPE_DOUBLE, 0.75, NULL);
  roi = roi_by_id (frame, 1);
  gst_structure_set (gst_video_region_of_interest_meta_get_param (roi, "nnpipe/text"), "text",
                     G_TYPE_STRING, "\xe4\xb8\xad", "score", G_TYPE_DOUBLE, 0.5, NULL);
  gst_video_region_of_interest_meta_add_param (
      roi, gst_structure_new ("nnpipe/class", "label", G_TYPE_STRING, "180", "class-id", G_TYPE_INT,
                              1, "score", G_TYPE_DOUBLE, 0.875, NULL));
  gst_buffer_unref (gst_harness_push_and_pull (h, frame));
  /* frame 1: nothing found, no PTS */
  frame = make_rgb_frame (&info, 64, 48, 0);
  gst_buffer_unref (gst_harness_push_and_pull (h, frame));
  /* frame 2: a whole-frame class */
  frame = make_rgb_frame (&info, 64, 48, 0);
  GST_BUFFER_PTS (frame) = 120 * GST_MSECOND;
  roi = gst_buffer_add_video_region_of_interest_meta (frame, "class", 0, 0, 64, 48);
  gst_video_region_of_interest_meta_add_param (
      roi, gst_structure_new ("nnpipe/class", "label", G_TYPE_STRING, "0", "class-id", G_TYPE_INT,
                              0, "score", G_TYPE_DOUBLE, 0.5, NULL));
  gst_buffer_unref (gst_harness_push_and_pull (h, frame));
  gst_harness_teardown (h);

  /* one JSON object per frame */
  fail_unless (g_file_get_contents (path, &contents, NULL, NULL));
  lines = g_strsplit (contents, "\n", -1);
  fail_unless_equals_int (g_strv_length (lines), 4);
  fail_unless_equals_string (lines[3], "");

  o = cJSON_Parse (lines[0]);
  fail_unless (o != NULL, "not JSON: %s", lines[0]);
  fail_unless_equals_int (cJSON_GetObjectItem (o, "frame")->valueint, 0);
  fail_unless (cJSON_GetObjectItem (o, "pts")->valuedouble == 40e6);
  fail_unless_equals_int (cJSON_GetObjectItem (o, "width")->valueint, 64);
  fail_unless_equals_int (cJSON_GetObjectItem (o, "height")->valueint, 48);
  fail_unless_equals_int (cJSON_GetArraySize (cJSON_GetObjectItem (o, "lines")), 2);
  l = cJSON_GetArrayItem (cJSON_GetObjectItem (o, "lines"), 0);
  fail_unless_equals_string (cJSON_GetObjectItem (l, "text")->valuestring, "Hello \"you\"");
  fail_unless (cJSON_GetObjectItem (l, "score")->valuedouble == 0.75);
  fail_unless (cJSON_GetObjectItem (l, "angle") == NULL);
  box = cJSON_GetObjectItem (l, "box");
  fail_unless_equals_int (cJSON_GetArraySize (box), 4);
  /* corners: top-left, top-right, bottom-right, bottom-left */
  fail_unless (cJSON_GetArrayItem (cJSON_GetArrayItem (box, 2), 0)->valuedouble == 42);
  fail_unless (cJSON_GetArrayItem (cJSON_GetArrayItem (box, 2), 1)->valuedouble == 13);
  l = cJSON_GetArrayItem (cJSON_GetObjectItem (o, "lines"), 1);
  fail_unless_equals_string (cJSON_GetObjectItem (l, "text")->valuestring, "\xe4\xb8\xad");
  fail_unless (cJSON_GetObjectItem (l, "angle")->valuedouble == 180);
  cJSON_Delete (o);

  o = cJSON_Parse (lines[1]);
  fail_unless (o != NULL);
  fail_unless_equals_int (cJSON_GetObjectItem (o, "frame")->valueint, 1);
  fail_unless (cJSON_IsNull (cJSON_GetObjectItem (o, "pts")));
  fail_unless_equals_int (cJSON_GetArraySize (cJSON_GetObjectItem (o, "lines")), 0);
  cJSON_Delete (o);

  o = cJSON_Parse (lines[2]);
  fail_unless (o != NULL);
  fail_unless_equals_int (cJSON_GetObjectItem (o, "frame")->valueint, 2);
  l = cJSON_GetArrayItem (cJSON_GetObjectItem (o, "classes"), 0);
  fail_unless_equals_string (cJSON_GetObjectItem (l, "label")->valuestring, "0");
  fail_unless_equals_int (cJSON_GetObjectItem (l, "class_id")->valueint, 0);
  cJSON_Delete (o);

  g_strfreev (lines);
  g_free (contents);
  g_unlink (path);
  g_free (path);
  g_free (launch);
}

GST_END_TEST;

GST_START_TEST (test_metapublish_text_and_errors)
{
  gchar *path = g_build_filename (g_get_tmp_dir (), "nnp-test-XXXXXX.txt", NULL);
  gchar *launch, *contents = NULL;
  gint fd = g_mkstemp (path);
  GstHarness *h;
  GstVideoInfo info;
  GstBuffer *frame;
  GstElement *e;
  GstStateChangeReturn ret;

  fail_unless (fd >= 0);
  g_close (fd, NULL);
  launch = g_strdup_printf ("nnmetapublish file-format=text location=%s", path);
  h = gst_harness_new_parse (launch);
  gst_harness_set_src_caps_str (h, "video/x-raw,format=RGB,width=64,height=48,framerate=0/1");
  for (gint i = 0; i < 3; i++) {
    frame = make_rgb_frame (&info, 64, 48, 0);
    GST_BUFFER_PTS (frame) = i * 500 * GST_MSECOND;
    if (i != 1) {
      add_text_roi (frame, 0, 2, 3, 40, 10);
      gst_structure_set (
          gst_video_region_of_interest_meta_get_param (roi_by_id (frame, 0), "nnpipe/text"), "text",
          G_TYPE_STRING, i ? "two" : "one", "score", G_TYPE_DOUBLE, 0.5, NULL);
    }
    gst_buffer_unref (gst_harness_push_and_pull (h, frame));
  }
  gst_harness_teardown (h);
  fail_unless (g_file_get_contents (path, &contents, NULL, NULL));
  fail_unless_equals_string (contents,
                             "0\t0.000\tone\t0.5000\t2.0,3.0 42.0,3.0 42.0,13.0 2.0,13.0\n"
                             "2\t1.000\ttwo\t0.5000\t2.0,3.0 42.0,3.0 42.0,13.0 2.0,13.0\n");
  g_free (contents);
  g_unlink (path);
  g_free (path);
  g_free (launch);

  /* a file that cannot be written fails the start, naming it */
  e = gst_element_factory_make ("nnmetapublish", NULL);
  g_object_set (e, "location", "/nonexistent-dir/x.jsonl", NULL);
  ret = gst_element_set_state (e, GST_STATE_PAUSED);
  fail_unless_equals_int (ret, GST_STATE_CHANGE_FAILURE);
  gst_element_set_state (e, GST_STATE_NULL);
  gst_object_unref (e);
}

GST_END_TEST;

static Suite *
post_output_suite (void)
{
  TCase *tc;
  Suite *s = nnp_test_suite_new ("post-output", 0, &tc);

  tcase_add_test (tc, test_overlay_draws);
  tcase_add_test (tc, test_overlay_text);
  tcase_add_test (tc, test_overlay_cjk);
  tcase_add_test (tc, test_metapublish_json);
  tcase_add_test (tc, test_metapublish_text_and_errors);
  return s;
}

GST_CHECK_MAIN (post_output);
