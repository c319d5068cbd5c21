/* The detection elements on constructed tensors and frames (issue 21):
 * nndetectdecode (BlazeFace's four tensors -> boxes on the original frame
 * through nnconvert's transform meta; YOLO v8 with labels; merge; a
 * skipped frame; bad caps), nntrack (ids across frames, predicted boxes on
 * skipped frames), nnredact (pixels inside each box changed, outside not;
 * RGB and I420; labels), nnmask (background colour, blur, alpha; a mode
 * the frame cannot take) and nnmetapublish results=objects. */
#include "test-common.h"
#include "test-post-common.h"

#include <cjson/cJSON.h>
#include <glib/gstdio.h>
#include <unistd.h>
#include <math.h>
#include <string.h>

/* struct layouts only: the metas are registered by the plugin */
#include "gstnnframemeta.h"
#include "gstnnmeta.h"

/* The tensors of @frame as nnconvert keep-frame=true leaves them: frame
 * meta, and a transform meta of a frame scaled by @scale into the top-left
 * of a @tw x @th tensor. */
static void
add_convert_metas (GstBuffer *buf, GstBuffer *frame, const GstVideoInfo *info, gint tw, gint th,
                   gdouble scale)
{
  GstNnFrameMeta *fm = (GstNnFrameMeta *) add_meta (buf, "GstNnFrameMeta");
  GstNnTransformMeta *tm = (GstNnTransformMeta *) add_meta (buf, "GstNnTransformMeta");

  fm->frame = gst_buffer_ref (frame);
  fm->info = *info;
  fm->n_rois = fm->roi_index = fm->roi_id = -1;
  tm->source_width = GST_VIDEO_INFO_WIDTH (info);
  tm->source_height = GST_VIDEO_INFO_HEIGHT (info);
  tm->tensor_width = tw;
  tm->tensor_height = th;
  tm->content_width = (gint) lround (tm->source_width * scale);
  tm->content_height = (gint) lround (tm->source_height * scale);
  tm->scale_x = tm->scale_y = scale;
  tm->offset_x = tm->offset_y = 0;
}

static guint
count_detections (GstBuffer *buf)
{
  gpointer state = NULL;
  GstMeta *m;
  guint n = 0;

  while ((m = gst_buffer_iterate_meta_filtered (buf, &state,
                                                GST_VIDEO_REGION_OF_INTEREST_META_API_TYPE)))
    if (gst_video_region_of_interest_meta_get_param ((GstVideoRegionOfInterestMeta *) m,
                                                     "detection"))
      n++;
  return n;
}

/* The n-th detection's structure and box in frame pixels. */
static GstStructure *
detection (GstBuffer *buf, guint n, gint w, gint h, gdouble box[4])
{
  gpointer state = NULL;
  GstMeta *m;

  while ((m = gst_buffer_iterate_meta_filtered (buf, &state,
                                                GST_VIDEO_REGION_OF_INTEREST_META_API_TYPE))) {
    GstStructure *s = gst_video_region_of_interest_meta_get_param (
        (GstVideoRegionOfInterestMeta *) m, "detection");
    gdouble v[4];

    if (s == NULL || n-- > 0)
      continue;
    fail_unless (gst_structure_get_double (s, "x_min", &v[0])
                 && gst_structure_get_double (s, "y_min", &v[1])
                 && gst_structure_get_double (s, "x_max", &v[2])
                 && gst_structure_get_double (s, "y_max", &v[3]));
    box[0] = v[0] * w;
    box[1] = v[1] * h;
    box[2] = v[2] * w;
    box[3] = v[3] * h;
    return s;
  }
  return NULL;
}

#define BLAZEFACE_CAPS \
  "other/tensors,format=static,num_tensors=4,types=\"float32,float32,float32,float32\"," \
  "dimensions=\"1:512:1,1:384:1,16:512:1,16:384:1\",framerate=0/1"

/* A memory holding a copy of @n bytes at @src. */
static GstMemory *
wrap (const void *src, gsize n)
{
  gpointer p = g_memdup2 (src, n);

  return gst_memory_new_wrapped (0, p, n, 0, n, p, g_free);
}

/* BlazeFace back (256x256, anchors of strides 16, 32) output with one face
 * on anchor @a: box (dx, dy, w, h) in input pixels, keypoint 0 at +(kx, ky);
 * every other anchor scores -20 (logit). */
static GstBuffer *
blazeface_tensors (guint a, gfloat score, gfloat dx, gfloat dy, gfloat w, gfloat h)
{
  gfloat *s = g_new (gfloat, 896), *b = g_new0 (gfloat, 896 * 16);
  GstBuffer *buf = gst_buffer_new ();

  for (gint i = 0; i < 896; i++)
    s[i] = -20.0f;
  s[a] = score;
  b[a * 16 + 0] = dx;
  b[a * 16 + 1] = dy;
  b[a * 16 + 2] = w;
  b[a * 16 + 3] = h;
  b[a * 16 + 4] = 2.0f; /* keypoint 0: 2 px right of the anchor centre */
  b[a * 16 + 5] = 0.0f;
  gst_buffer_append_memory (buf, wrap (s, 512 * 4));
  gst_buffer_append_memory (buf, wrap (s + 512, 384 * 4));
  gst_buffer_append_memory (buf, wrap (b, 512 * 64));
  gst_buffer_append_memory (buf, wrap (b + 512 * 16, 384 * 64));
  g_free (s);
  g_free (b);
  return buf;
}

GST_START_TEST (test_decode_blazeface_to_frame)
{
  GstHarness *h = gst_harness_new_parse ("nndetectdecode preset=blazeface");
  GstVideoInfo info;
  GstBuffer *frame = make_rgb_frame (&info, 1024, 512, 40), *in, *out;
  GstStructure *s;
  gdouble box[4];
  const GValue *kp;
  gint label_id;

  gst_harness_set_src_caps_str (h, BLAZEFACE_CAPS);
  /* anchor 100 of the 16x16 grid (2 per cell): cell 50 = row 3, column 2,
   * centre (2.5, 3.5) x 16 = (40, 56) input pixels; a 40 x 30 face moved
   * by (+8, -4): input box (28, 37)-(68, 67); the frame (1024 x 512) was
   * scaled by 0.25 into the 256 x 256 tensor, so the frame box is
   * (112, 148)-(272, 268) */
  in = blazeface_tensors (100, 3.0f, 8.0f, -4.0f, 40.0f, 30.0f);
  add_convert_metas (in, frame, &info, 256, 256, 0.25);
  out = gst_harness_push_and_pull (h, in);
  fail_unless (out != NULL);
  fail_unless_equals_int (count_detections (out), 1);
  s = detection (out, 0, 1024, 512, box);
  fail_unless (fabs (box[0] - 112) < 0.01 && fabs (box[1] - 148) < 0.01, "%f %f", box[0], box[1]);
  fail_unless (fabs (box[2] - 272) < 0.01 && fabs (box[3] - 268) < 0.01, "%f %f", box[2], box[3]);
  fail_unless_equals_string (gst_structure_get_string (s, "label"), "face");
  fail_unless (gst_structure_get_int (s, "label_id", &label_id) && label_id == 0);
  {
    gdouble c;

    fail_unless (gst_structure_get_double (s, "confidence", &c));
    fail_unless (fabs (c - 1.0 / (1.0 + exp (-3.0))) < 1e-5);
  }
  /* 6 keypoints; the first at input (42, 56) -> frame (168, 224) */
  kp = gst_structure_get_value (s, "keypoints");
  fail_unless (kp != NULL && gst_value_array_get_size (kp) == 12);
  fail_unless (fabs (g_value_get_double (gst_value_array_get_value (kp, 0)) * 1024 - 168) < 0.01);
  fail_unless (fabs (g_value_get_double (gst_value_array_get_value (kp, 1)) * 512 - 224) < 0.01);
  /* the ROI's rectangle is the box, the type its label */
  {
    GstVideoRegionOfInterestMeta *roi = gst_buffer_get_video_region_of_interest_meta (out);

    fail_unless_equals_string (g_quark_to_string (roi->roi_type), "face");
    fail_unless_equals_int (roi->x, 112);
    fail_unless_equals_int (roi->w, 160);
  }
  gst_buffer_unref (out);

  /* under the threshold: the frame leaves without a box */
  in = blazeface_tensors (100, -1.0f, 8.0f, -4.0f, 40.0f, 30.0f);
  add_convert_metas (in, frame, &info, 256, 256, 0.25);
  out = gst_harness_push_and_pull (h, in);
  fail_unless_equals_int (count_detections (out), 0);
  gst_buffer_unref (out);

  gst_buffer_unref (frame);
  gst_harness_teardown (h);
}

GST_END_TEST;

GST_START_TEST (test_decode_skipped_and_merge)
{
  GstHarness *h = gst_harness_new_parse ("nndetectdecode preset=blazeface merge=true");
  GstVideoInfo info;
  GstBuffer *frame = make_rgb_frame (&info, 256, 256, 40), *in, *out;
  const GstMetaInfo *skipped = gst_meta_get_info ("GstNnSkippedMeta");
  GstStructure *s;
  gdouble box[4], c;

  fail_unless (skipped != NULL, "GstNnSkippedMeta not registered");
  gst_harness_set_src_caps_str (h, BLAZEFACE_CAPS);
  /* a frame that already has the same face (another model's, lower score)
   * and another one: merged into one weighted box, the other kept */
  frame = gst_buffer_make_writable (frame);
  {
    GstVideoRegionOfInterestMeta *r =
        gst_buffer_add_video_region_of_interest_meta (frame, "face", 20, 40, 40, 30);

    gst_video_region_of_interest_meta_add_param (
        r, gst_structure_new ("detection", "label", G_TYPE_STRING, "face", "label_id", G_TYPE_INT,
                              0, "confidence", G_TYPE_DOUBLE, 0.6, "x_min", G_TYPE_DOUBLE,
                              20 / 256.0, "y_min", G_TYPE_DOUBLE, 40 / 256.0, "x_max",
                              G_TYPE_DOUBLE, 60 / 256.0, "y_max", G_TYPE_DOUBLE, 70 / 256.0, NULL));
    r = gst_buffer_add_video_region_of_interest_meta (frame, "face", 150, 150, 50, 50);
    gst_video_region_of_interest_meta_add_param (
        r,
        gst_structure_new ("detection", "label", G_TYPE_STRING, "face", "label_id", G_TYPE_INT, 0,
                           "confidence", G_TYPE_DOUBLE, 0.7, "x_min", G_TYPE_DOUBLE, 150 / 256.0,
                           "y_min", G_TYPE_DOUBLE, 150 / 256.0, "x_max", G_TYPE_DOUBLE, 200 / 256.0,
                           "y_max", G_TYPE_DOUBLE, 200 / 256.0, NULL));
  }
  /* this model: (28, 37)-(68, 67) at score sigmoid(3) = 0.953 */
  in = blazeface_tensors (100, 3.0f, 8.0f, -4.0f, 40.0f, 30.0f);
  add_convert_metas (in, frame, &info, 256, 256, 1.0);
  out = gst_harness_push_and_pull (h, in);
  fail_unless_equals_int (count_detections (out), 2);
  s = detection (out, 0, 256, 256, box);
  fail_unless (gst_structure_get_double (s, "confidence", &c));
  if (c < 0.8)
    s = detection (out, 1, 256, 256, box);
  fail_unless (gst_structure_get_double (s, "confidence", &c) && c > 0.9);
  /* the score-weighted mean of x0: (0.953 * 28 + 0.6 * 20) / 1.553 */
  fail_unless (fabs (box[0] - (0.9526 * 28 + 0.6 * 20) / 1.5526) < 0.05, "%f", box[0]);
  gst_buffer_unref (out);

  /* a skipped frame (inference-interval): no decode, the meta goes on */
  in = gst_buffer_new ();
  GST_BUFFER_FLAG_SET (in, GST_BUFFER_FLAG_GAP);
  add_convert_metas (in, frame, &info, 256, 256, 1.0);
  gst_buffer_add_custom_meta (in, "GstNnSkippedMeta");
  out = gst_harness_push_and_pull (h, in);
  fail_unless (out != NULL);
  fail_unless (gst_buffer_get_custom_meta (out, "GstNnSkippedMeta") != NULL);
  /* the frame as it came: its two boxes, nothing decoded or merged */
  fail_unless_equals_int (count_detections (out), 2);
  gst_buffer_unref (out);

  gst_buffer_unref (frame);
  gst_harness_teardown (h);
}

GST_END_TEST;

GST_START_TEST (test_decode_yolov8_labels)
{
  GstHarness *h = gst_harness_new_parse (
      "nndetectdecode layout=yolov8 labels=person,car,dog threshold=0.3 iou-threshold=0.5");
  GstVideoInfo info;
  GstBuffer *frame = make_rgb_frame (&info, 640, 640, 10), *in, *out;
  /* [1, 4 + 3, N = 4], channel-major: two overlapping dogs, a car */
  gfloat t[7][4] = {
    { 100, 104, 300, 500 },     { 100, 100, 300, 50 },      { 40, 40, 60, 20 },
    { 40, 40, 60, 20 },         { 0.1f, 0.1f, 0.1f, 0.1f }, { 0.1f, 0.1f, 0.9f, 0.2f },
    { 0.8f, 0.7f, 0.1f, 0.1f },
  };
  GstStructure *s;
  gdouble box[4];

  gst_harness_set_src_caps_str (
      h, "other/tensors,format=static,num_tensors=1,types=float32,dimensions=4:7:1,framerate=0/1");
  in = gst_buffer_new_memdup (t, sizeof (t));
  add_convert_metas (in, frame, &info, 640, 640, 1.0);
  out = gst_harness_push_and_pull (h, in);
  fail_unless_equals_int (count_detections (out), 2);
  s = detection (out, 0, 640, 640, box);
  fail_unless_equals_string (gst_structure_get_string (s, "label"), "car");
  fail_unless (fabs (box[0] - 270) < 0.01 && fabs (box[3] - 330) < 0.01);
  s = detection (out, 1, 640, 640, box);
  fail_unless_equals_string (gst_structure_get_string (s, "label"), "dog");
  /* the second dog (IoU 0.82 with the first) was suppressed */
  fail_unless (fabs (box[0] - 80) < 0.01 && fabs (box[1] - 80) < 0.01);
  gst_buffer_unref (out);
  gst_buffer_unref (frame);
  gst_harness_teardown (h);
}

GST_END_TEST;

GST_START_TEST (test_decode_bad_caps_and_settings)
{
  GstBus *bus = gst_bus_new ();
  GstHarness *h = gst_harness_new_parse ("nndetectdecode layout=yolov5");
  gchar *dbg = NULL;
  GError *err;

  /* a YOLO v5 row needs 5 + classes values */
  gst_element_set_bus (h->element, bus);
  gst_harness_set_src_caps_str (
      h,
      "other/tensors,format=static,num_tensors=1,types=float32,dimensions=4:100:1,framerate=0/1");
  err = nnp_test_pop_message (bus, GST_MESSAGE_ERROR, &dbg, "yolov5 caps");
  fail_unless (strstr (dbg, "layout yolov5") && strstr (dbg, "[1,N,5+C]"), "%s", dbg);
  g_clear_error (&err);
  g_free (dbg);
  gst_element_set_bus (h->element, NULL);
  gst_harness_teardown (h);

  /* a bad list value is named at the first frame */
  gst_object_unref (bus);
  bus = gst_bus_new ();
  h = gst_harness_new_parse ("nndetectdecode anchor-strides=8,x");
  gst_element_set_bus (h->element, bus);
  gst_harness_set_src_caps_str (h, BLAZEFACE_CAPS);
  {
    GstVideoInfo info;
    GstBuffer *frame = make_rgb_frame (&info, 64, 64, 0);
    GstBuffer *in = blazeface_tensors (0, 0.0f, 0, 0, 1, 1);

    add_convert_metas (in, frame, &info, 128, 128, 2.0);
    fail_unless_equals_int (gst_harness_push (h, in), GST_FLOW_ERROR);
    gst_buffer_unref (frame);
  }
  err = nnp_test_pop_message (bus, GST_MESSAGE_ERROR, &dbg, "bad anchor-strides");
  fail_unless (strstr (dbg, "\"8,x\"") && strstr (dbg, "anchor-strides"), "%s", dbg);
  g_clear_error (&err);
  g_free (dbg);
  gst_element_set_bus (h->element, NULL);
  gst_harness_teardown (h);
  gst_object_unref (bus);
}

GST_END_TEST;

/* ------------------------------------------------------------- nntrack */

static void
add_detection (GstBuffer *frame, gint x, gint y, gint w, gint h, gdouble score, gint fw, gint fh)
{
  GstVideoRegionOfInterestMeta *r =
      gst_buffer_add_video_region_of_interest_meta (frame, "face", x, y, w, h);

  gst_video_region_of_interest_meta_add_param (
      r, gst_structure_new ("detection", "label", G_TYPE_STRING, "face", "label_id", G_TYPE_INT, 0,
                            "confidence", G_TYPE_DOUBLE, score, "x_min", G_TYPE_DOUBLE,
                            (gdouble) x / fw, "y_min", G_TYPE_DOUBLE, (gdouble) y / fh, "x_max",
                            G_TYPE_DOUBLE, (gdouble) (x + w) / fw, "y_max", G_TYPE_DOUBLE,
                            (gdouble) (y + h) / fh, NULL));
}

static gint
object_id_at (GstBuffer *buf, gint cx, gint fw, gint fh)
{
  for (guint i = 0;; i++) {
    gdouble box[4];
    GstStructure *s = detection (buf, i, fw, fh, box);
    gint id = -1;

    if (s == NULL)
      return -1;
    if (box[0] <= cx && cx <= box[2]) {
      fail_unless (gst_structure_get_int (s, "object_id", &id), "no object_id");
      return id;
    }
  }
}

GST_START_TEST (test_track_ids_and_prediction)
{
  GstHarness *h = gst_harness_new ("nntrack");
  GstVideoInfo info;
  GstBuffer *base = make_rgb_frame (&info, 320, 240, 0);
  gint id_a = -1, id_b = -1;

  gst_harness_set_src_caps_str (h, "video/x-raw,format=RGB,width=320,height=240,framerate=30/1");
  /* two faces moving 4 px a frame towards each other; frames 6, 7 skipped
   * by the model: the tracker adds their predicted boxes */
  for (gint f = 0; f < 12; f++) {
    GstBuffer *in = gst_buffer_copy (base), *out;
    gint ax = 20 + 4 * f, bx = 250 - 4 * f;

    if (f == 6 || f == 7)
      gst_buffer_add_custom_meta (in, "GstNnSkippedMeta");
    else {
      add_detection (in, ax, 100, 40, 40, 0.9, 320, 240);
      add_detection (in, bx, 110, 40, 40, 0.8, 320, 240);
    }
    out = gst_harness_push_and_pull (h, in);
    fail_unless_equals_int (count_detections (out), 2);
    if (f == 0) {
      id_a = object_id_at (out, ax + 20, 320, 240);
      id_b = object_id_at (out, bx + 20, 320, 240);
      fail_unless (id_a > 0 && id_b > 0 && id_a != id_b);
    } else {
      /* the predicted boxes are where the faces went (within 3 px) */
      fail_unless_equals_int (object_id_at (out, ax + 20, 320, 240), id_a);
      fail_unless_equals_int (object_id_at (out, bx + 20, 320, 240), id_b);
    }
    if (f == 7) {
      gdouble box[4];

      for (guint i = 0; i < 2; i++) {
        GstStructure *s = detection (out, i, 320, 240, box);
        gint id;

        gst_structure_get_int (s, "object_id", &id);
        fail_unless (fabs (box[0] - (id == id_a ? ax : bx)) < 3.0, "frame 7: %f", box[0]);
      }
    }
    gst_buffer_unref (out);
  }
  gst_buffer_unref (base);
  gst_harness_teardown (h);
}

GST_END_TEST;

/* ------------------------------------------------------------- nnredact */

static GstBuffer *
noise_frame (GstVideoInfo *info, GstVideoFormat fmt, gint w, gint h)
{
  GstBuffer *buf;
  GstMapInfo map;
  GRand *r = g_rand_new_with_seed (42);

  gst_video_info_set_format (info, fmt, w, h);
  buf = gst_buffer_new_allocate (NULL, info->size, NULL);
  gst_buffer_map (buf, &map, GST_MAP_WRITE);
  for (gsize i = 0; i < map.size; i++)
    map.data[i] = (guint8) g_rand_int_range (r, 0, 256);
  gst_buffer_unmap (buf, &map);
  g_rand_free (r);
  return buf;
}

/* Pixel (x, y) of plane p changed between a and b. */
static gboolean
changed (GstVideoFrame *a, GstVideoFrame *b, gint p, gint x, gint y)
{
  gint ps = GST_VIDEO_FRAME_COMP_PSTRIDE (a, p);
  const guint8 *pa = (guint8 *) GST_VIDEO_FRAME_PLANE_DATA (a, p)
                     + y * GST_VIDEO_FRAME_PLANE_STRIDE (a, p) + x * ps;
  const guint8 *pb = (guint8 *) GST_VIDEO_FRAME_PLANE_DATA (b, p)
                     + y * GST_VIDEO_FRAME_PLANE_STRIDE (b, p) + x * ps;

  return memcmp (pa, pb, ps) != 0;
}

static void
check_redaction (const gchar *launch, GstVideoFormat fmt, gboolean car_redacted)
{
  GstHarness *h = gst_harness_new_parse (launch);
  GstVideoInfo info;
  GstBuffer *in = noise_frame (&info, fmt, 160, 120), *out;
  GstVideoFrame fa, fb;
  /* boxes on even pixels: I420's chroma samples stay inside */
  gint boxes[2][4] = { { 20, 30, 60, 80 }, { 100, 10, 140, 50 } };
  guint inside = 0, inside_changed = 0;
  gchar *caps = g_strdup_printf ("video/x-raw,format=%s,width=160,height=120,framerate=0/1",
                                 gst_video_format_to_string (fmt));

  gst_harness_set_src_caps_str (h, caps);
  g_free (caps);
  out = gst_buffer_copy (in);
  add_detection (out, 20, 30, 40, 50, 0.9, 160, 120);
  {
    GstVideoRegionOfInterestMeta *r =
        gst_buffer_add_video_region_of_interest_meta (out, "car", 100, 10, 40, 40);
    (void) r;
  }
  out = gst_harness_push_and_pull (h, out);
  fail_unless (gst_video_frame_map (&fa, &info, in, GST_MAP_READ));
  fail_unless (gst_video_frame_map (&fb, &info, out, GST_MAP_READ));
  for (gint p = 0; p < (gint) GST_VIDEO_INFO_N_PLANES (&info); p++) {
    gint sub = p ? 1 : 0;

    for (gint y = 0; y < GST_VIDEO_FRAME_COMP_HEIGHT (&fa, p); y++)
      for (gint x = 0; x < GST_VIDEO_FRAME_COMP_WIDTH (&fa, p); x++) {
        gint fx = x << sub, fy = y << sub;
        gboolean in_face =
            fx >= boxes[0][0] && fx < boxes[0][2] && fy >= boxes[0][1] && fy < boxes[0][3];
        gboolean in_car =
            fx >= boxes[1][0] && fx < boxes[1][2] && fy >= boxes[1][1] && fy < boxes[1][3];
        gboolean ch = changed (&fa, &fb, p, x, y);

        if (in_face || (in_car && car_redacted)) {
          inside++;
          inside_changed += ch;
        } else {
          fail_if (ch, "%s plane %d pixel (%d, %d) outside the boxes changed", launch, p, x, y);
        }
      }
  }
  /* noise: a mean or a blur leaves almost no pixel as it was */
  fail_unless (inside_changed >= inside * 95 / 100, "%s: %u of %u changed", launch, inside_changed,
               inside);
  gst_video_frame_unmap (&fa);
  gst_video_frame_unmap (&fb);
  gst_buffer_unref (in);
  gst_buffer_unref (out);
  gst_harness_teardown (h);
}

GST_START_TEST (test_redact_inside_only)
{
  static const gchar *modes[] = { "pixelate", "blur", "fill" };
  static const GstVideoFormat fmts[] = { GST_VIDEO_FORMAT_RGB, GST_VIDEO_FORMAT_BGR,
                                         GST_VIDEO_FORMAT_RGBx, GST_VIDEO_FORMAT_I420 };

  for (guint m = 0; m < G_N_ELEMENTS (modes); m++)
    for (guint f = 0; f < G_N_ELEMENTS (fmts); f++) {
      gchar *all = g_strdup_printf ("nnredact mode=%s margin=0", modes[m]);
      gchar *faces = g_strdup_printf ("nnredact mode=%s margin=0 labels=face", modes[m]);

      check_redaction (all, fmts[f], TRUE);
      check_redaction (faces, fmts[f], FALSE);
      g_free (all);
      g_free (faces);
    }
}

GST_END_TEST;

/* --------------------------------------------------------------- nnmask */

/* A 1x1x2x4 mask over a 16x8 frame (nnconvert scale 0.25): foreground the
 * left half; the frame's pixels of @value. */
static GstBuffer *
mask_tensors (GstBuffer *frame, const GstVideoInfo *info)
{
  gfloat map[8] = { 1, 1, 0, 0, 1, 1, 0, 0 };
  GstBuffer *in = gst_buffer_new_memdup (map, sizeof (map));

  add_convert_metas (in, frame, info, 4, 2, 0.25);
  return in;
}

static void
check_mask_mode (const gchar *launch, GstVideoFormat fmt, const guint8 *want_bg)
{
  GstHarness *h = gst_harness_new_parse (launch);
  GstVideoInfo info;
  GstBuffer *frame = noise_frame (&info, fmt, 16, 8), *out;
  GstVideoFrame fa, fb;
  gint ps;

  gst_harness_set_src_caps_str (
      h,
      "other/tensors,format=static,num_tensors=1,types=float32,dimensions=4:2:1:1,framerate=0/1");
  out = gst_harness_push_and_pull (h, mask_tensors (frame, &info));
  fail_unless (gst_video_frame_map (&fa, &info, frame, GST_MAP_READ));
  fail_unless (gst_video_frame_map (&fb, &info, out, GST_MAP_READ));
  ps = GST_VIDEO_FRAME_COMP_PSTRIDE (&fa, 0);
  for (gint y = 0; y < 8; y++)
    for (gint x = 0; x < 16; x++) {
      const guint8 *a = (guint8 *) GST_VIDEO_FRAME_PLANE_DATA (&fa, 0)
                        + y * GST_VIDEO_FRAME_PLANE_STRIDE (&fa, 0) + x * ps;
      const guint8 *b = (guint8 *) GST_VIDEO_FRAME_PLANE_DATA (&fb, 0)
                        + y * GST_VIDEO_FRAME_PLANE_STRIDE (&fb, 0) + x * ps;

      if (x < 8) {
        /* the foreground (alpha mode: its alpha byte 255) */
        if (want_bg && want_bg[0] == 'A') {
          fail_unless_equals_int (b[GST_VIDEO_FRAME_COMP_POFFSET (&fa, 3)], 255);
        } else {
          fail_unless (memcmp (a, b, ps) == 0, "%s: foreground (%d, %d) changed", launch, x, y);
        }
      } else if (want_bg && want_bg[0] == 'A') {
        fail_unless_equals_int (b[GST_VIDEO_FRAME_COMP_POFFSET (&fa, 3)], 0);
      } else if (want_bg) {
        for (gint c = 0; c < 3; c++)
          fail_unless_equals_int (b[GST_VIDEO_FRAME_COMP_POFFSET (&fa, c)], want_bg[c]);
      }
    }
  gst_video_frame_unmap (&fa);
  gst_video_frame_unmap (&fb);
  gst_buffer_unref (frame);
  gst_buffer_unref (out);
  gst_harness_teardown (h);
}

GST_START_TEST (test_mask_modes)
{
  static const guint8 red[3] = { 255, 0, 0 };
  static const guint8 alpha[1] = { 'A' };

  check_mask_mode ("nnmask mode=color color=0xffff0000", GST_VIDEO_FORMAT_RGB, red);
  check_mask_mode ("nnmask mode=color color=0xffff0000", GST_VIDEO_FORMAT_BGRx, red);
  check_mask_mode ("nnmask mode=blur", GST_VIDEO_FORMAT_RGB, NULL);
  check_mask_mode ("nnmask mode=alpha", GST_VIDEO_FORMAT_RGBA, alpha);
}

GST_END_TEST;

GST_START_TEST (test_mask_errors)
{
  GstBus *bus = gst_bus_new ();
  GstHarness *h = gst_harness_new_parse ("nnmask mode=alpha");
  GstVideoInfo info;
  GstBuffer *frame = noise_frame (&info, GST_VIDEO_FORMAT_RGB, 16, 8);
  gchar *dbg = NULL;
  GError *err;

  gst_element_set_bus (h->element, bus);
  gst_harness_set_src_caps_str (
      h,
      "other/tensors,format=static,num_tensors=1,types=float32,dimensions=4:2:1:1,framerate=0/1");
  fail_unless_equals_int (gst_harness_push (h, mask_tensors (frame, &info)), GST_FLOW_ERROR);
  err = nnp_test_pop_message (bus, GST_MESSAGE_ERROR, &dbg, "alpha on RGB");
  fail_unless (strstr (dbg, "alpha channel") && strstr (dbg, "RGB"), "%s", dbg);
  g_clear_error (&err);
  g_free (dbg);
  gst_element_set_bus (h->element, NULL);
  gst_harness_teardown (h);
  gst_buffer_unref (frame);
  gst_object_unref (bus);
}

GST_END_TEST;

/* ------------------------------------------------------ nnmetapublish */

GST_START_TEST (test_publish_objects)
{
  gchar *path = g_strdup_printf ("%s/nnp-detect-%d.jsonl", g_get_tmp_dir (), (gint) getpid ());
  gchar *launch = g_strdup_printf ("nnmetapublish results=objects location=%s", path);
  GstHarness *h = gst_harness_new_parse (launch);
  GstVideoInfo info;
  GstBuffer *frame = make_rgb_frame (&info, 200, 100, 0), *out;
  gchar *text = NULL;
  cJSON *o, *obj, *box;

  gst_harness_set_src_caps_str (h, "video/x-raw,format=RGB,width=200,height=100,framerate=0/1");
  frame = gst_buffer_make_writable (frame);
  GST_BUFFER_PTS (frame) = 5 * GST_SECOND;
  add_detection (frame, 20, 10, 50, 40, 0.87654, 200, 100);
  {
    gpointer state = NULL;
    GstVideoRegionOfInterestMeta *r =
        (GstVideoRegionOfInterestMeta *) gst_buffer_iterate_meta_filtered (
            frame, &state, GST_VIDEO_REGION_OF_INTEREST_META_API_TYPE);
    GstStructure *s = gst_video_region_of_interest_meta_get_param (r, "detection");

    gst_structure_set (s, "object_id", G_TYPE_INT, 7, NULL);
  }
  out = gst_harness_push_and_pull (h, frame);
  gst_buffer_unref (out);
  gst_harness_teardown (h);

  fail_unless (g_file_get_contents (path, &text, NULL, NULL));
  o = cJSON_Parse (text);
  fail_unless (o != NULL, "%s", text);
  /* exactly frame, pts, width, height, objects */
  fail_unless_equals_int (cJSON_GetArraySize (o), 5);
  fail_unless_equals_int (cJSON_GetObjectItem (o, "frame")->valuedouble, 0);
  fail_unless (cJSON_GetObjectItem (o, "pts")->valuedouble == 5e9);
  fail_unless_equals_int (cJSON_GetObjectItem (o, "width")->valuedouble, 200);
  obj = cJSON_GetArrayItem (cJSON_GetObjectItem (o, "objects"), 0);
  fail_unless_equals_int (cJSON_GetArraySize (obj), 4);
  fail_unless_equals_string (cJSON_GetObjectItem (obj, "label")->valuestring, "face");
  fail_unless (fabs (cJSON_GetObjectItem (obj, "score")->valuedouble - 0.8765) < 1e-9);
  fail_unless_equals_int (cJSON_GetObjectItem (obj, "track")->valuedouble, 7);
  box = cJSON_GetObjectItem (obj, "box");
  fail_unless (cJSON_GetArrayItem (box, 0)->valuedouble == 20.0);
  fail_unless (cJSON_GetArrayItem (box, 3)->valuedouble == 50.0);
  cJSON_Delete (o);
  g_free (text);
  g_unlink (path);
  g_free (path);
  g_free (launch);
}

GST_END_TEST;

static Suite *
detect_suite (void)
{
  Suite *s = suite_create ("detect-elements");
  TCase *tc = tcase_create ("general");

  suite_add_tcase (s, tc);
  tcase_add_test (tc, test_decode_blazeface_to_frame);
  tcase_add_test (tc, test_decode_skipped_and_merge);
  tcase_add_test (tc, test_decode_yolov8_labels);
  tcase_add_test (tc, test_decode_bad_caps_and_settings);
  tcase_add_test (tc, test_track_ids_and_prediction);
  tcase_add_test (tc, test_redact_inside_only);
  tcase_add_test (tc, test_publish_objects);
  tcase_add_test (tc, test_mask_modes);
  tcase_add_test (tc, test_mask_errors);
  return s;
}

GST_CHECK_MAIN (detect);
