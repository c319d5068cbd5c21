/* GstHarness tests of nnconvert: pixel formats, layouts, channel order,
 * exact mean/std normalisation, resizing with kept aspect ratio and padding
 * to a multiple, and the GstNnTransformMeta it attaches; the channel count
 * and element type downstream asks for (4 channels with alpha, float16). */
#include <gst/check/gstcheck.h>
#include <gst/check/gstharness.h>
#include <gst/video/video.h>

#include <nnpipe/tensor.h>

#include <math.h>
#include <string.h>

/* only the struct layout: the meta API is registered by the plugin */
#include "gstnnmeta.h"

static const gdouble MEAN[3] = { 0.485, 0.456, 0.406 };
static const gdouble STD[3] = { 0.229, 0.224, 0.225 };

/* test pattern: component k (0 R, 1 G, 2 B, 3 alpha/gray) at (x, y) */
static guint8
pattern (gint x, gint y, gint k)
{
  switch (k) {
    case 0: return (guint8) (10 * x + 50 * y + 1);
    case 1: return (guint8) (200 - 7 * x - 3 * y);
    case 2: return (guint8) ((x * y * 13 + 77) % 256);
    default: return (guint8) (x * 31 + y * 17 + 5);
  }
}

/* A frame of `format`; RGB components from pattern(), padding bytes 0xEE. */
static GstBuffer *
make_frame (GstVideoFormat format, gint w, gint h, GstVideoInfo *info_out)
{
  GstVideoInfo info;
  GstBuffer *buf;
  GstMapInfo map;
  gint ncomp;

  gst_video_info_set_format (&info, format, w, h);
  buf = gst_buffer_new_allocate (NULL, GST_VIDEO_INFO_SIZE (&info), NULL);
  gst_buffer_map (buf, &map, GST_MAP_WRITE);
  memset (map.data, 0xEE, map.size);
  ncomp = GST_VIDEO_INFO_N_COMPONENTS (&info);
  for (gint y = 0; y < h; y++) {
    for (gint x = 0; x < w; x++) {
      for (gint k = 0; k < ncomp; k++) {
        guint8 *p = map.data + GST_VIDEO_INFO_PLANE_OFFSET (&info, 0)
                    + (gsize) y * GST_VIDEO_INFO_PLANE_STRIDE (&info, 0)
                    + (gsize) x * GST_VIDEO_INFO_COMP_PSTRIDE (&info, k)
                    + GST_VIDEO_INFO_COMP_POFFSET (&info, k);

        *p = pattern (x, y, format == GST_VIDEO_FORMAT_GRAY8 ? 3 : k);
      }
    }
  }
  gst_buffer_unmap (buf, &map);
  if (info_out)
    *info_out = info;
  return buf;
}

static GstHarness *
convert_harness (const gchar *props, const gchar *caps)
{
  gchar *desc = g_strdup_printf ("nnconvert %s", props);
  GstHarness *h = gst_harness_new_parse (desc);

  g_free (desc);
  gst_harness_set_src_caps_str (h, caps);
  return h;
}

static const gchar *
output_dims (GstHarness *h)
{
  static gchar dims[128];
  GstCaps *caps = gst_pad_get_current_caps (h->sinkpad);
  const GstStructure *s;

  fail_unless (caps != NULL);
  s = gst_caps_get_structure (caps, 0);
  fail_unless (gst_structure_has_name (s, "other/tensors"));
  fail_unless_equals_string (gst_structure_get_string (s, "types"), "float32");
  g_strlcpy (dims, gst_structure_get_string (s, "dimensions"), sizeof (dims));
  gst_caps_unref (caps);
  return dims;
}

static GstNnTransformMeta *
get_transform_meta (GstBuffer *buf)
{
  GType api = g_type_from_name ("GstNnTransformMetaAPI");

  fail_unless (api != 0, "GstNnTransformMetaAPI not registered");
  return (GstNnTransformMeta *) gst_buffer_get_meta (buf, api);
}

/* out's GstNnTransformMeta, with its content size and its scales (within
 * 1e-12) checked. */
static GstNnTransformMeta *
check_content_meta (GstBuffer *out, gint content_width, gint content_height, gdouble scale_x,
                    gdouble scale_y)
{
  GstNnTransformMeta *meta = get_transform_meta (out);

  fail_unless (meta != NULL);
  fail_unless_equals_int (meta->content_width, content_width);
  fail_unless_equals_int (meta->content_height, content_height);
  fail_unless (fabs (meta->scale_x - scale_x) < 1e-12, "scale_x %g, want %g", meta->scale_x,
               scale_x);
  fail_unless (fabs (meta->scale_y - scale_y) < 1e-12, "scale_y %g, want %g", meta->scale_y,
               scale_y);
  return meta;
}

static void
check_direct (GstVideoFormat format, gboolean nhwc, gboolean bgr)
{
  const gint W = 5, H = 3;
  gchar *props, *caps;
  GstHarness *h;
  GstBuffer *in, *out;
  GstMapInfo map;
  gint C = format == GST_VIDEO_FORMAT_GRAY8 ? 1 : 3;
  const gfloat *o;
  GstNnTransformMeta *meta;

  props =
      g_strdup_printf ("layout=%s channel-order=%s mean=0.485,0.456,0.406 std=0.229,0.224,0.225",
                       nhwc ? "nhwc" : "nchw", bgr ? "bgr" : "rgb");
  caps = g_strdup_printf ("video/x-raw,format=%s,width=%d,height=%d,framerate=30/1",
                          gst_video_format_to_string (format), W, H);
  h = convert_harness (props, caps);

  in = make_frame (format, W, H, NULL);
  GST_BUFFER_PTS (in) = 42 * GST_MSECOND;
  out = gst_harness_push_and_pull (h, in);
  fail_unless (out != NULL);
  fail_unless_equals_uint64 (GST_BUFFER_PTS (out), 42 * GST_MSECOND);

  {
    gchar *want =
        nhwc ? g_strdup_printf ("%d:%d:%d:1", C, W, H) : g_strdup_printf ("%d:%d:%d:1", W, H, C);

    fail_unless_equals_string (output_dims (h), want);
    g_free (want);
  }

  fail_unless_equals_int (gst_buffer_n_memory (out), 1);
  gst_buffer_map (out, &map, GST_MAP_READ);
  fail_unless_equals_int (map.size, W * H * C * sizeof (gfloat));
  o = (const gfloat *) map.data;
  for (gint c = 0; c < C; c++) {
    gint comp = C == 1 ? 3 : (bgr ? 2 - c : c);
    gdouble mean = C == 1 ? MEAN[0] : MEAN[c];
    gdouble std = C == 1 ? STD[0] : STD[c];

    for (gint y = 0; y < H; y++) {
      for (gint x = 0; x < W; x++) {
        gsize idx = nhwc ? ((gsize) y * W + x) * C + c : ((gsize) c * H + y) * W + x;
        gfloat want = (gfloat) (((gdouble) pattern (x, y, comp) / 255.0 - mean) / std);

        fail_unless (o[idx] == want, "%s %s %s: c%d (%d,%d) = %.9g, want %.9g",
                     gst_video_format_to_string (format), nhwc ? "nhwc" : "nchw",
                     bgr ? "bgr" : "rgb", c, x, y, o[idx], want);
      }
    }
  }
  gst_buffer_unmap (out, &map);

  meta = get_transform_meta (out);
  fail_unless (meta != NULL);
  fail_unless_equals_int (meta->source_width, W);
  fail_unless_equals_int (meta->source_height, H);
  fail_unless_equals_int (meta->tensor_width, W);
  fail_unless_equals_int (meta->content_height, H);
  fail_unless (meta->scale_x == 1.0 && meta->scale_y == 1.0);
  fail_unless (meta->offset_x == 0.0 && meta->offset_y == 0.0);

  gst_buffer_unref (out);
  gst_harness_teardown (h);
  g_free (props);
  g_free (caps);
}

GST_START_TEST (test_formats)
{
  const GstVideoFormat formats[] = {
    GST_VIDEO_FORMAT_RGB,  GST_VIDEO_FORMAT_BGR,  GST_VIDEO_FORMAT_RGBA,
    GST_VIDEO_FORMAT_BGRA, GST_VIDEO_FORMAT_RGBx, GST_VIDEO_FORMAT_BGRx,
    GST_VIDEO_FORMAT_xRGB, GST_VIDEO_FORMAT_ABGR, GST_VIDEO_FORMAT_GRAY8,
  };

  for (guint i = 0; i < G_N_ELEMENTS (formats); i++) {
    check_direct (formats[i], FALSE, FALSE);
    check_direct (formats[i], TRUE, FALSE);
    check_direct (formats[i], FALSE, TRUE);
    check_direct (formats[i], TRUE, TRUE);
  }
}

GST_END_TEST;

GST_START_TEST (test_default_normalisation)
{
  /* defaults: mean 0, std 1 -> x / 255 */
  GstHarness *h = convert_harness ("", "video/x-raw,format=GRAY8,width=4,height=2,framerate=0/1");
  GstBuffer *out = gst_harness_push_and_pull (h, make_frame (GST_VIDEO_FORMAT_GRAY8, 4, 2, NULL));
  GstMapInfo map;
  const gfloat *o;

  gst_buffer_map (out, &map, GST_MAP_READ);
  o = (const gfloat *) map.data;
  for (gint y = 0; y < 2; y++)
    for (gint x = 0; x < 4; x++)
      fail_unless (o[y * 4 + x] == (gfloat) (pattern (x, y, 3) / 255.0));
  gst_buffer_unmap (out, &map);
  gst_buffer_unref (out);
  gst_harness_teardown (h);
}

GST_END_TEST;

/* A frame of one colour. */
static GstBuffer *
make_solid (GstVideoFormat format, gint w, gint h, guint8 r, guint8 g, guint8 b)
{
  GstVideoInfo info;
  GstBuffer *buf = make_frame (format, w, h, &info);
  GstMapInfo map;
  const guint8 rgb[3] = { r, g, b };

  gst_buffer_map (buf, &map, GST_MAP_WRITE);
  for (gint y = 0; y < h; y++)
    for (gint x = 0; x < w; x++)
      for (gint k = 0; k < 3; k++)
        map.data[(gsize) y * GST_VIDEO_INFO_PLANE_STRIDE (&info, 0)
                 + (gsize) x * GST_VIDEO_INFO_COMP_PSTRIDE (&info, k)
                 + GST_VIDEO_INFO_COMP_POFFSET (&info, k)] = rgb[k];
  gst_buffer_unmap (buf, &map);
  return buf;
}

GST_START_TEST (test_resize_keep_aspect)
{
  /* 8x4 into a 6x6 box: content 6x3, padded to a multiple of 4: 8x8 */
  GstHarness *h = convert_harness (
      "width=6 height=6 keep-aspect-ratio=true multiple-of=4 pad-value=-1 mean=0.5 std=0.5",
      "video/x-raw,format=RGB,width=8,height=4,framerate=30/1");
  GstBuffer *out =
      gst_harness_push_and_pull (h, make_solid (GST_VIDEO_FORMAT_RGB, 8, 4, 255, 0, 51));
  GstNnTransformMeta *meta;
  const gfloat want[3] = { 1.0f, -1.0f, (gfloat) ((51 / 255.0 - 0.5) / 0.5) };
  GstMapInfo map;
  const gfloat *o;

  fail_unless_equals_string (output_dims (h), "8:8:3:1");
  gst_buffer_map (out, &map, GST_MAP_READ);
  fail_unless_equals_int (map.size, 8 * 8 * 3 * sizeof (gfloat));
  o = (const gfloat *) map.data;
  for (gint c = 0; c < 3; c++) {
    for (gint y = 0; y < 8; y++) {
      for (gint x = 0; x < 8; x++) {
        gfloat v = o[(c * 8 + y) * 8 + x];

        if (x < 6 && y < 3)
          fail_unless (fabsf (v - want[c]) < 1e-6f, "c%d (%d,%d) = %g want %g", c, x, y, v,
                       want[c]);
        else
          fail_unless (v == -1.0f, "padding c%d (%d,%d) = %g", c, x, y, v);
      }
    }
  }
  gst_buffer_unmap (out, &map);

  meta = check_content_meta (out, 6, 3, 0.75, 0.75);
  fail_unless_equals_int (meta->source_width, 8);
  fail_unless_equals_int (meta->source_height, 4);
  fail_unless_equals_int (meta->tensor_width, 8);
  fail_unless_equals_int (meta->tensor_height, 8);
  fail_unless (meta->offset_x == 0.0 && meta->offset_y == 0.0);

  gst_buffer_unref (out);
  gst_harness_teardown (h);
}

GST_END_TEST;

GST_START_TEST (test_resize_height_multiple)
{
  /* text recogniser input: height 48, width by aspect ratio (153.6 -> 154),
   * padded up to a multiple of 8 (160) */
  GstHarness *h = convert_harness ("height=48 keep-aspect-ratio=true multiple-of=8",
                                   "video/x-raw,format=BGRx,width=320,height=100,framerate=0/1");
  GstBuffer *out =
      gst_harness_push_and_pull (h, make_frame (GST_VIDEO_FORMAT_BGRx, 320, 100, NULL));
  GstNnTransformMeta *meta;

  fail_unless_equals_string (output_dims (h), "160:48:3:1");
  fail_unless_equals_int (gst_buffer_get_size (out), 160 * 48 * 3 * 4);
  meta = check_content_meta (out, 154, 48, 154.0 / 320, 0.48);
  fail_unless_equals_int (meta->tensor_width, 160);
  gst_buffer_unref (out);
  gst_harness_teardown (h);
}

GST_END_TEST;

GST_START_TEST (test_resize_values)
{
  /* 4x1 -> 2x1 bilinear with half-pixel centres: each output is the mean
   * of two neighbours; 3x1 -> 6x1 upscale stays within the input range */
  GstHarness *h = convert_harness ("width=2 height=1",
                                   "video/x-raw,format=GRAY8,width=4,height=1,framerate=0/1");
  GstBuffer *in = make_frame (GST_VIDEO_FORMAT_GRAY8, 4, 1, NULL);
  GstBuffer *out;
  GstMapInfo map;
  guint8 px[4];
  const gfloat *o;

  for (gint x = 0; x < 4; x++)
    px[x] = pattern (x, 0, 3);
  out = gst_harness_push_and_pull (h, in);
  fail_unless_equals_string (output_dims (h), "2:1:1:1");
  gst_buffer_map (out, &map, GST_MAP_READ);
  o = (const gfloat *) map.data;
  fail_unless (fabsf (o[0] - (px[0] + px[1]) / 2.0f / 255.0f) < 1e-6f);
  fail_unless (fabsf (o[1] - (px[2] + px[3]) / 2.0f / 255.0f) < 1e-6f);
  gst_buffer_unmap (out, &map);
  gst_buffer_unref (out);
  gst_harness_teardown (h);
}

GST_END_TEST;

GST_START_TEST (test_multiple_of_stretch)
{
  /* without keep-aspect-ratio: the nearest multiple, stretched */
  GstHarness *h = convert_harness ("multiple-of=32",
                                   "video/x-raw,format=RGB,width=100,height=50,framerate=0/1");
  GstBuffer *out = gst_harness_push_and_pull (h, make_frame (GST_VIDEO_FORMAT_RGB, 100, 50, NULL));

  fail_unless_equals_string (output_dims (h), "96:64:3:1");
  check_content_meta (out, 96, 64, 0.96, 1.28);
  gst_buffer_unref (out);
  gst_harness_teardown (h);
}

GST_END_TEST;

GST_START_TEST (test_padded_input)
{
  /* a video buffer larger than the frame (trailing padding) still gives
   * one tensor of the negotiated size */
  GstHarness *h = convert_harness ("", "video/x-raw,format=GRAY8,width=4,height=2,framerate=0/1");
  GstBuffer *in = make_frame (GST_VIDEO_FORMAT_GRAY8, 4, 2, NULL);
  GstBuffer *out;

  in = gst_buffer_append (in, gst_buffer_new_allocate (NULL, 64, NULL));
  out = gst_harness_push_and_pull (h, in);
  fail_unless (out != NULL);
  fail_unless_equals_int (gst_buffer_get_size (out), 4 * 2 * 4);
  gst_buffer_unref (out);
  gst_harness_teardown (h);
}

GST_END_TEST;

GST_START_TEST (test_region)
{
  /* the region x 0.25, y 0.5, 0.5 x 0.5 of an 8x4 frame: pixels (2..5,
   * 2..3), converted without resize (a 4x2 tensor of the pattern there);
   * the transform meta maps tensor (0, 0) back to frame (2, 2) */
  GstHarness *h = convert_harness ("region-x=0.25 region-y=0.5 region-width=0.5 region-height=0.5",
                                   "video/x-raw,format=RGB,width=8,height=4,framerate=30/1");
  GstBuffer *out = gst_harness_push_and_pull (h, make_frame (GST_VIDEO_FORMAT_RGB, 8, 4, NULL));
  GstNnTransformMeta *meta;
  GstMapInfo map;
  const gfloat *o;

  fail_unless_equals_string (output_dims (h), "4:2:3:1");
  gst_buffer_map (out, &map, GST_MAP_READ);
  o = (const gfloat *) map.data;
  for (gint c = 0; c < 3; c++)
    for (gint y = 0; y < 2; y++)
      for (gint x = 0; x < 4; x++)
        fail_unless (fabsf (o[(c * 2 + y) * 4 + x] - pattern (x + 2, y + 2, c) / 255.0f) < 1e-6f,
                     "c%d (%d,%d)", c, x, y);
  gst_buffer_unmap (out, &map);
  meta = get_transform_meta (out);
  fail_unless_equals_int (meta->source_width, 8);
  fail_unless (meta->scale_x == 1.0 && meta->scale_y == 1.0);
  fail_unless (meta->offset_x == -2.0 && meta->offset_y == -2.0);
  gst_buffer_unref (out);
  gst_harness_teardown (h);
}

GST_END_TEST;

GST_START_TEST (test_caps_query)
{
  /* upstream can ask what video a tensor shape needs */
  GstHarness *h = gst_harness_new_parse ("nnconvert");
  GstCaps *filter, *caps;

  gst_harness_set_sink_caps_str (
      h,
      "other/tensors,format=static,num_tensors=1,types=float32,dimensions=64:48:3:1,framerate=0/1");
  filter = gst_caps_from_string ("video/x-raw");
  caps = gst_pad_peer_query_caps (h->srcpad, filter);
  fail_unless (caps != NULL);
  fail_if (gst_caps_is_empty (caps));
  {
    const GstStructure *s = gst_caps_get_structure (caps, 0);
    gint w = 0, hh = 0;

    fail_unless (gst_structure_get_int (s, "width", &w));
    fail_unless (gst_structure_get_int (s, "height", &hh));
    fail_unless_equals_int (w, 64);
    fail_unless_equals_int (hh, 48);
  }
  gst_caps_unref (caps);
  gst_caps_unref (filter);
  gst_harness_teardown (h);
}

GST_END_TEST;

/* The tensor's channels come from downstream (a model's input): 4 channels
 * take alpha from the frame, or 255 where it has none; mean/std per channel. */
static void
check_four_channels (GstVideoFormat format, gboolean nhwc, gboolean bgr)
{
  const gint W = 4, H = 3, C = 4;
  const gdouble mean[4] = { 0.1, 0.2, 0.3, 0.4 }, std[4] = { 0.5, 0.6, 0.7, 0.8 };
  GstVideoInfo info;
  gchar *props, *caps, *tcaps;
  GstHarness *h;
  GstBuffer *out;
  GstMapInfo map;
  const gfloat *o;

  props = g_strdup_printf ("layout=%s channel-order=%s mean=0.1,0.2,0.3,0.4 std=0.5,0.6,0.7,0.8",
                           nhwc ? "nhwc" : "nchw", bgr ? "bgr" : "rgb");
  caps = g_strdup_printf ("video/x-raw,format=%s,width=%d,height=%d,framerate=0/1",
                          gst_video_format_to_string (format), W, H);
  tcaps =
      nhwc ? g_strdup_printf (
          "other/tensors,format=static,num_tensors=1,types=float32,dimensions=%d:%d:%d:1", C, W, H)
           : g_strdup_printf (
               "other/tensors,format=static,num_tensors=1,types=float32,dimensions=%d:%d:%d:1", W,
               H, C);
  h = convert_harness (props, caps);
  gst_harness_set_sink_caps_str (h, tcaps);
  out = gst_harness_push_and_pull (h, make_frame (format, W, H, &info));
  fail_unless (out != NULL);
  gst_buffer_map (out, &map, GST_MAP_READ);
  fail_unless_equals_int (map.size, W * H * C * sizeof (gfloat));
  o = (const gfloat *) map.data;
  for (gint c = 0; c < C; c++) {
    for (gint y = 0; y < H; y++) {
      for (gint x = 0; x < W; x++) {
        gsize idx = nhwc ? ((gsize) y * W + x) * C + c : ((gsize) c * H + y) * W + x;
        gint v = c < 3 ? pattern (x, y, bgr ? 2 - c : c)
                       : (GST_VIDEO_INFO_HAS_ALPHA (&info) ? pattern (x, y, 3) : 255);
        gfloat want = (gfloat) (((gdouble) v / 255.0 - mean[c]) / std[c]);

        fail_unless (o[idx] == want, "%s %s %s: c%d (%d,%d) = %.9g, want %.9g",
                     gst_video_format_to_string (format), nhwc ? "nhwc" : "nchw",
                     bgr ? "bgr" : "rgb", c, x, y, o[idx], want);
      }
    }
  }
  gst_buffer_unmap (out, &map);
  gst_buffer_unref (out);
  gst_harness_teardown (h);
  g_free (props);
  g_free (caps);
  g_free (tcaps);
}

GST_START_TEST (test_four_channels)
{
  const GstVideoFormat formats[] = {
    GST_VIDEO_FORMAT_RGBA, GST_VIDEO_FORMAT_BGRA, GST_VIDEO_FORMAT_ARGB,
    GST_VIDEO_FORMAT_ABGR, GST_VIDEO_FORMAT_RGB,  GST_VIDEO_FORMAT_BGRx,
  };

  for (guint i = 0; i < G_N_ELEMENTS (formats); i++) {
    check_four_channels (formats[i], FALSE, FALSE);
    check_four_channels (formats[i], TRUE, FALSE);
    check_four_channels (formats[i], TRUE, TRUE);
  }
}

GST_END_TEST;

/* The output tensor of one frame through nnconvert with these properties,
 * downstream asking for `types` (float32 or float16). */
static GstBuffer *
convert_one (const gchar *props, const gchar *types, gint out_w, gint out_h, GstBuffer *frame)
{
  gchar *tcaps =
      g_strdup_printf ("other/tensors,format=static,num_tensors=1,types=%s,dimensions=%d:%d:3:1",
                       types, out_w, out_h);
  GstHarness *h = convert_harness (props, "video/x-raw,format=RGB,width=7,height=5,framerate=0/1");
  GstBuffer *out;
  GstCaps *caps;

  gst_harness_set_sink_caps_str (h, tcaps);
  out = gst_harness_push_and_pull (h, frame);
  fail_unless (out != NULL);
  caps = gst_pad_get_current_caps (h->sinkpad);
  fail_unless_equals_string (gst_structure_get_string (gst_caps_get_structure (caps, 0), "types"),
                             types);
  gst_caps_unref (caps);
  gst_harness_teardown (h);
  g_free (tcaps);
  return out;
}

/* float16 tensors: the float32 values rounded to nearest even, with and
 * without resizing and padding */
GST_START_TEST (test_float16)
{
  const gchar *props[] = {
    "mean=0.485,0.456,0.406 std=0.229,0.224,0.225",
    "mean=0.5 std=0.25 width=12 height=12 keep-aspect-ratio=true pad-value=-3",
  };
  const gint sizes[][2] = { { 7, 5 }, { 12, 12 } };

  for (guint i = 0; i < G_N_ELEMENTS (props); i++) {
    GstBuffer *frame = make_frame (GST_VIDEO_FORMAT_RGB, 7, 5, NULL);
    GstBuffer *f32 =
        convert_one (props[i], "float32", sizes[i][0], sizes[i][1], gst_buffer_copy (frame));
    GstBuffer *f16 = convert_one (props[i], "float16", sizes[i][0], sizes[i][1], frame);
    GstMapInfo m32, m16;
    gsize n = (gsize) sizes[i][0] * sizes[i][1] * 3;

    gst_buffer_map (f32, &m32, GST_MAP_READ);
    gst_buffer_map (f16, &m16, GST_MAP_READ);
    fail_unless_equals_int (m32.size, n * 4);
    fail_unless_equals_int (m16.size, n * 2);
    for (gsize k = 0; k < n; k++) {
      guint16 want;

      nnp_f32_to_half (NNP_DTYPE_FLOAT16, (const gfloat *) m32.data + k, &want, 1);
      fail_unless_equals_int (((const guint16 *) m16.data)[k], want);
    }
    fail_unless (get_transform_meta (f16) != NULL);
    gst_buffer_unmap (f32, &m32);
    gst_buffer_unmap (f16, &m16);
    gst_buffer_unref (f32);
    gst_buffer_unref (f16);
  }
}

GST_END_TEST;

/* a 4-channel tensor asks upstream for formats with alpha first; a float16
 * one is answered as well */
GST_START_TEST (test_caps_query_channels)
{
  const gchar *cases[][2] = {
    { "float32", "64:48:4:1" },
    { "float16", "64:48:3:1" },
    { "float16", "64:48:1:1" },
  };
  const gchar *want_fmt[] = { "RGBA", "RGB", "GRAY8" };

  for (guint i = 0; i < G_N_ELEMENTS (cases); i++) {
    GstHarness *h = gst_harness_new_parse ("nnconvert");
    GstCaps *filter = gst_caps_from_string ("video/x-raw"), *caps;
    gchar *tcaps = g_strdup_printf (
        "other/tensors,format=static,num_tensors=1,types=%s,dimensions=%s,framerate=0/1",
        cases[i][0], cases[i][1]);
    const GValue *fmt;

    gst_harness_set_sink_caps_str (h, tcaps);
    caps = gst_pad_peer_query_caps (h->srcpad, filter);
    fail_if (gst_caps_is_empty (caps), "%s %s: no video caps", cases[i][0], cases[i][1]);
    fmt = gst_structure_get_value (gst_caps_get_structure (caps, 0), "format");
    fail_unless_equals_string (G_VALUE_HOLDS_STRING (fmt)
                                   ? g_value_get_string (fmt)
                                   : g_value_get_string (gst_value_list_get_value (fmt, 0)),
                               want_fmt[i]);
    gst_caps_unref (caps);
    gst_caps_unref (filter);
    gst_harness_teardown (h);
    g_free (tcaps);
  }
}

GST_END_TEST;

/* three means for four channels: an error naming both counts */
GST_START_TEST (test_too_few_values)
{
  GstHarness *h = convert_harness ("mean=0.1,0.2,0.3 std=0.5",
                                   "video/x-raw,format=RGBA,width=4,height=2,framerate=0/1");
  GstBus *bus = gst_bus_new ();
  GstMessage *msg;
  GError *err = NULL;
  gchar *dbg = NULL;

  gst_element_set_bus (h->element, bus);
  gst_harness_set_sink_caps_str (
      h, "other/tensors,format=static,num_tensors=1,types=float32,dimensions=4:2:4:1");
  fail_if (gst_harness_push (h, make_frame (GST_VIDEO_FORMAT_RGBA, 4, 2, NULL)) == GST_FLOW_OK);
  msg = gst_bus_pop_filtered (bus, GST_MESSAGE_ERROR);
  fail_unless (msg != NULL);
  gst_message_parse_error (msg, &err, &dbg);
  fail_unless (strstr (dbg, "4 channels, mean has 3 values") != NULL, "%s", dbg);
  g_clear_error (&err);
  g_free (dbg);
  gst_message_unref (msg);
  gst_element_set_bus (h->element, NULL);
  gst_object_unref (bus);
  gst_harness_teardown (h);
}

GST_END_TEST;

static Suite *
nnconvert_suite (void)
{
  Suite *s = suite_create ("nnconvert");
  TCase *tc = tcase_create ("general");

  suite_add_tcase (s, tc);
  tcase_add_test (tc, test_formats);
  tcase_add_test (tc, test_default_normalisation);
  tcase_add_test (tc, test_resize_keep_aspect);
  tcase_add_test (tc, test_resize_height_multiple);
  tcase_add_test (tc, test_resize_values);
  tcase_add_test (tc, test_multiple_of_stretch);
  tcase_add_test (tc, test_padded_input);
  tcase_add_test (tc, test_caps_query);
  tcase_add_test (tc, test_four_channels);
  tcase_add_test (tc, test_float16);
  tcase_add_test (tc, test_caps_query_channels);
  tcase_add_test (tc, test_too_few_values);
  tcase_add_test (tc, test_region);
  return s;
}

GST_CHECK_MAIN (nnconvert);
