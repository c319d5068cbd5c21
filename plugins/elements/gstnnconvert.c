/* GStreamer nnpipe plugin: nnconvert
 *
 * This library is free software; you can redistribute it and/or
 * modify it under the terms of the GNU Library General Public
 * License as published by the Free Software Foundation; either
 * version 2.1 of the License, or (at your option) any later version.
 */

/**
 * SECTION:element-nnconvert
 * @title: nnconvert
 * @short_description: convert video frames into normalised float32 tensors
 *
 * nnconvert turns raw video frames into the input tensor of a vision
 * network: an `other/tensors` stream with one float32 tensor per buffer,
 * laid out as NCHW (1 x C x H x W, the default) or NHWC.  Each 8-bit
 * sample `x` of channel `c` becomes
 *
 *   `(x / 255 - mean[c]) / std[c]`
 *
 * Colour input gives three channels in RGB (or, with channel-order=bgr,
 * BGR) order; GRAY8 gives one channel.  Alpha and padding bytes are ignored.
 *
 * The frame can be resized on the way (bilinear, half-pixel centres as
 * OpenCV's INTER_LINEAR): #GstNnConvert:width and #GstNnConvert:height give
 * the target size (0 keeps the input's), #GstNnConvert:keep-aspect-ratio
 * scales to fit and pads right and bottom with #GstNnConvert:pad-value, and
 * #GstNnConvert:multiple-of rounds the output size to a multiple (up, with
 * padding, when keeping the aspect ratio; to the nearest multiple, by
 * stretching, otherwise).  Every output buffer carries a
 * #GstNnTransformMeta with the applied scale and offsets, so decoders can map
 * their results back onto the original frame.
 *
 * ## Example launch lines
 * |[
 * gst-launch-1.0 -q videotestsrc num-buffers=1 pattern=smpte ! \
 *     video/x-raw,format=RGB,width=192,height=48 ! \
 *     nnconvert mean=0.5 std=0.5 ! filesink location=in.f32
 * ]| writes one 1x3x48x192 float32 tensor (110592 bytes), the input of the
 * text direction classifier (how pipelines/stage.sh makes its input).
 * |[
 * gst-launch-1.0 -q filesrc location=photo.jpg ! decodebin ! videoconvert ! \
 *     video/x-raw,format=RGB ! \
 *     nnconvert mean=0.485,0.456,0.406 std=0.229,0.224,0.225 channel-order=bgr \
 *       width=960 height=960 keep-aspect-ratio=true multiple-of=32 keep-frame=true ! \
 *     nnstage model=.cache/models/ch_PP-OCRv4_det_infer.onnx ! ...
 * ]| feeds the text detector (pipelines/ocr-file.sh): ImageNet normalisation
 * in BGR order, the frame scaled to fit 960x960 keeping its aspect ratio,
 * padded right and bottom to a multiple of 32, the original frame attached
 * for the decoders.
 */

#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "gstnnconvert.h"
#include "gstnnmeta.h"
#include "gstnnframemeta.h"
#include "gstnntensorcaps.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

GST_DEBUG_CATEGORY_STATIC (gst_nn_convert_debug);
#define GST_CAT_DEFAULT gst_nn_convert_debug

#define MAX_CHANNELS 3

#define DEFAULT_LAYOUT GST_NN_CONVERT_LAYOUT_NCHW
#define DEFAULT_CHANNEL_ORDER GST_NN_CONVERT_CHANNEL_ORDER_RGB
#define DEFAULT_MEAN "0.0"
#define DEFAULT_STD "1.0"
#define DEFAULT_WIDTH 0
#define DEFAULT_HEIGHT 0
#define DEFAULT_KEEP_ASPECT_RATIO FALSE
#define DEFAULT_MULTIPLE_OF 1
#define DEFAULT_PAD_VALUE 0.0
#define DEFAULT_MAX_UPSCALE 0.0
#define DEFAULT_PAD_TO_SIZE TRUE

#define MAX_SIZE 32768

enum
{
  PROP_0,
  PROP_LAYOUT,
  PROP_CHANNEL_ORDER,
  PROP_MEAN,
  PROP_STD,
  PROP_WIDTH,
  PROP_HEIGHT,
  PROP_KEEP_ASPECT_RATIO,
  PROP_MULTIPLE_OF,
  PROP_PAD_VALUE,
  PROP_MAX_UPSCALE,
  PROP_PAD_TO_SIZE,
  PROP_KEEP_FRAME,
};

#define VIDEO_FORMATS_COLOR \
  "RGB, BGR, RGBA, BGRA, RGBx, BGRx, xRGB, xBGR, ARGB, ABGR"
#define VIDEO_FORMATS "{ " VIDEO_FORMATS_COLOR ", GRAY8 }"

static GstStaticPadTemplate sink_template = GST_STATIC_PAD_TEMPLATE ("sink",
    GST_PAD_SINK,
    GST_PAD_ALWAYS,
    GST_STATIC_CAPS (GST_VIDEO_CAPS_MAKE (VIDEO_FORMATS)));

static GstStaticPadTemplate src_template = GST_STATIC_PAD_TEMPLATE ("src",
    GST_PAD_SRC,
    GST_PAD_ALWAYS,
    GST_STATIC_CAPS ("other/tensors, format = (string) static, "
        "num_tensors = (int) 1, types = (string) float32, "
        "framerate = (fraction) [ 0/1, MAX ]"));

/* Settings, read under the object lock. */
typedef struct
{
  GstNnConvertLayout layout;
  GstNnConvertChannelOrder channel_order;
  gdouble mean[MAX_CHANNELS];
  gdouble std[MAX_CHANNELS];
  gint width, height;
  gboolean keep_aspect;
  guint multiple_of;
  gfloat pad_value;
  gdouble max_upscale;          /* 0: unbounded */
  gboolean pad_to_size;
} GstNnConvertSettings;

/* Output geometry for one input size. */
typedef struct
{
  gint out_w, out_h;            /* tensor spatial size */
  gint content_w, content_h;    /* image area inside it (top-left) */
} GstNnConvertGeometry;

struct _GstNnConvert
{
  GstBaseTransform parent;

  /* properties (object lock) */
  GstNnConvertSettings settings;
  gchar *mean_str, *std_str;
  gboolean keep_frame;          /* attach a GstNnFrameMeta (object lock) */

  /* negotiated state (streaming thread) */
  GstVideoInfo vinfo;
  GstNnConvertSettings active;  /* settings the state below was built from */
  GstNnConvertGeometry geom;
  gint channels;
  gint chan_offset[MAX_CHANNELS];       /* byte offset of channel c in a pixel */
  gint pstride;                 /* bytes per pixel */
  gfloat lut[MAX_CHANNELS][256];        /* exact per-sample normalisation */
  gfloat mul[MAX_CHANNELS], add[MAX_CHANNELS];  /* the same as v * mul + add */
  gboolean resize;
  gint *x_off0, *x_off1;        /* byte offsets of the two source pixels */
  gfloat *x_frac;
  gint *y_row0, *y_row1;
  gfloat *y_frac;
  gfloat *hrows[2];             /* horizontally resized rows, planar */
  gint hrow_src[2];             /* which source row each holds, -1 none */
};

G_DEFINE_TYPE (GstNnConvert, gst_nn_convert, GST_TYPE_BASE_TRANSFORM);
GST_ELEMENT_REGISTER_DEFINE (nnconvert, "nnconvert", GST_RANK_NONE,
    GST_TYPE_NN_CONVERT);

GType
gst_nn_convert_layout_get_type (void)
{
  static GType type = 0;
  static const GEnumValue values[] = {
    {GST_NN_CONVERT_LAYOUT_NCHW, "Planar: 1 x channels x height x width",
        "nchw"},
    {GST_NN_CONVERT_LAYOUT_NHWC, "Interleaved: 1 x height x width x channels",
        "nhwc"},
    {0, NULL, NULL}
  };

  if (g_once_init_enter (&type)) {
    GType t = g_enum_register_static ("GstNnConvertLayout", values);
    g_once_init_leave (&type, t);
  }
  return type;
}

GType
gst_nn_convert_channel_order_get_type (void)
{
  static GType type = 0;
  static const GEnumValue values[] = {
    {GST_NN_CONVERT_CHANNEL_ORDER_RGB, "Red, green, blue", "rgb"},
    {GST_NN_CONVERT_CHANNEL_ORDER_BGR, "Blue, green, red", "bgr"},
    {0, NULL, NULL}
  };

  if (g_once_init_enter (&type)) {
    GType t = g_enum_register_static ("GstNnConvertChannelOrder", values);
    g_once_init_leave (&type, t);
  }
  return type;
}

/* Parse "0.485,0.456,0.406" (or one value for every channel).  Commas,
 * colons and blanks separate values. */
static gboolean
parse_channel_values (const gchar * str, gdouble out[MAX_CHANNELS],
    gboolean nonzero)
{
  gchar **parts;
  gdouble vals[MAX_CHANNELS];
  gint n = 0;
  gboolean ok = TRUE;

  if (str == NULL)
    return FALSE;

  parts = g_strsplit_set (str, ",: \t", -1);
  for (gint i = 0; parts[i] != NULL && ok; i++) {
    gchar *end = NULL;
    gdouble v;

    if (parts[i][0] == '\0')
      continue;
    if (n == MAX_CHANNELS) {
      ok = FALSE;
      break;
    }
    v = g_ascii_strtod (parts[i], &end);
    if (end == NULL || *end != '\0' || !isfinite (v) || (nonzero && v == 0.0))
      ok = FALSE;
    else
      vals[n++] = v;
  }
  g_strfreev (parts);

  if (!ok || (n != 1 && n != MAX_CHANNELS))
    return FALSE;
  for (gint c = 0; c < MAX_CHANNELS; c++)
    out[c] = vals[n == 1 ? 0 : c];
  return TRUE;
}

static gint
round_up_to (gint v, guint m)
{
  if (m <= 1)
    return v;
  return (gint) (((gint64) v + m - 1) / m * m);
}

static gint
round_nearest_to (gint v, guint m)
{
  gint r;

  if (m <= 1)
    return v;
  r = (gint) (((gint64) v + m / 2) / m * m);
  return MAX (r, (gint) m);
}

static gint
scale_dim (gint v, gdouble s)
{
  gint r = (gint) floor (v * s + 0.5);

  return CLAMP (r, 1, MAX_SIZE);
}

/* The output geometry for an in_w x in_h frame. */
static void
compute_geometry (const GstNnConvertSettings * st, gint in_w, gint in_h,
    GstNnConvertGeometry * g)
{
  gint tw = st->width, th = st->height;

  if (st->keep_aspect) {
    gint box_w, box_h;
    gdouble s;

    if (tw == 0 && th == 0)
      s = 1.0;
    else if (tw == 0)
      s = (gdouble) th / in_h;
    else if (th == 0)
      s = (gdouble) tw / in_w;
    else
      s = MIN ((gdouble) tw / in_w, (gdouble) th / in_h);
    if (st->max_upscale > 0)
      s = MIN (s, MAX (st->max_upscale, 1.0));
    g->content_w = scale_dim (in_w, s);
    g->content_h = scale_dim (in_h, s);
    if (tw)
      g->content_w = MIN (tw, g->content_w);
    if (th)
      g->content_h = MIN (th, g->content_h);
    box_w = tw && st->pad_to_size ? tw : g->content_w;
    box_h = th && st->pad_to_size ? th : g->content_h;
    g->out_w = round_up_to (box_w, st->multiple_of);
    g->out_h = round_up_to (box_h, st->multiple_of);
  } else {
    g->out_w = round_nearest_to (tw ? tw : in_w, st->multiple_of);
    g->out_h = round_nearest_to (th ? th : in_h, st->multiple_of);
    g->content_w = g->out_w;
    g->content_h = g->out_h;
  }
}

/* TRUE when the output size does not depend on the input size. */
static gboolean
geometry_is_input_independent (const GstNnConvertSettings * st)
{
  return st->width > 0 && st->height > 0 &&
      (st->pad_to_size || !st->keep_aspect);
}

/* TRUE when output size == input size whatever the input. */
static gboolean
geometry_is_identity (const GstNnConvertSettings * st)
{
  return st->width == 0 && st->height == 0 && st->multiple_of <= 1;
}

static void
layout_shape (GstNnConvertLayout layout, gint c, gint h, gint w,
    NnpShape * shape)
{
  gint64 dims[4];

  dims[0] = 1;
  if (layout == GST_NN_CONVERT_LAYOUT_NCHW) {
    dims[1] = c;
    dims[2] = h;
    dims[3] = w;
  } else {
    dims[1] = h;
    dims[2] = w;
    dims[3] = c;
  }
  nnp_shape_set (shape, 4, dims);
}

static void
gst_nn_convert_get_settings (GstNnConvert * self, GstNnConvertSettings * st)
{
  GST_OBJECT_LOCK (self);
  *st = self->settings;
  GST_OBJECT_UNLOCK (self);
}

/* Which channel counts a video structure's format field allows. */
static void
structure_channels (const GstStructure * s, gboolean * has1, gboolean * has3)
{
  const GValue *fmt = gst_structure_get_value (s, "format");

  *has1 = *has3 = FALSE;
  if (fmt == NULL) {
    *has1 = *has3 = TRUE;
  } else if (G_VALUE_HOLDS_STRING (fmt)) {
    if (g_strcmp0 (g_value_get_string (fmt), "GRAY8") == 0)
      *has1 = TRUE;
    else
      *has3 = TRUE;
  } else if (GST_VALUE_HOLDS_LIST (fmt)) {
    for (guint i = 0; i < gst_value_list_get_size (fmt); i++) {
      const GValue *v = gst_value_list_get_value (fmt, i);

      if (!G_VALUE_HOLDS_STRING (v))
        continue;
      if (g_strcmp0 (g_value_get_string (v), "GRAY8") == 0)
        *has1 = TRUE;
      else
        *has3 = TRUE;
    }
  } else {
    *has1 = *has3 = TRUE;
  }
}

static GstStructure *
make_tensor_structure (const GstNnConvertSettings * st, gint channels,
    gint out_w, gint out_h, const GValue * framerate)
{
  GstStructure *s;

  s = gst_structure_new (GST_NN_TENSORS_MEDIA_TYPE,
      "format", G_TYPE_STRING, "static",
      "num_tensors", G_TYPE_INT, 1, "types", G_TYPE_STRING, "float32", NULL);
  if (out_w > 0 && out_h > 0) {
    NnpShape shape;
    gchar *dims;

    layout_shape (st->layout, channels, out_h, out_w, &shape);
    dims = gst_nn_dims_to_string (&shape);
    gst_structure_set (s, "dimensions", G_TYPE_STRING, dims, NULL);
    g_free (dims);
  }
  if (framerate)
    gst_structure_set_value (s, "framerate", framerate);
  return s;
}

/* video/x-raw -> other/tensors */
static void
video_to_tensors (const GstNnConvertSettings * st, const GstStructure * s,
    GstCaps * out)
{
  gboolean has1, has3;
  gint in_w = 0, in_h = 0, out_w = 0, out_h = 0;
  const GValue *framerate = gst_structure_get_value (s, "framerate");

  structure_channels (s, &has1, &has3);

  if (geometry_is_input_independent (st)) {
    GstNnConvertGeometry g;

    /* the input size only changes the content area, not the output size */
    compute_geometry (st, st->width, st->height, &g);
    out_w = g.out_w;
    out_h = g.out_h;
  } else if (gst_structure_get_int (s, "width", &in_w)
      && gst_structure_get_int (s, "height", &in_h) && in_w > 0 && in_h > 0) {
    GstNnConvertGeometry g;

    compute_geometry (st, in_w, in_h, &g);
    out_w = g.out_w;
    out_h = g.out_h;
  }

  if (has3)
    gst_caps_append_structure (out, make_tensor_structure (st, 3, out_w,
            out_h, framerate));
  if (has1)
    gst_caps_append_structure (out, make_tensor_structure (st, 1, out_w,
            out_h, framerate));
}

static void
set_formats (GstStructure * s, gboolean color)
{
  if (color) {
    GValue list = G_VALUE_INIT, v = G_VALUE_INIT;
    const gchar *fmts[] = { "RGB", "BGR", "RGBA", "BGRA", "RGBx", "BGRx",
      "xRGB", "xBGR", "ARGB", "ABGR"
    };

    gst_value_list_init (&list, G_N_ELEMENTS (fmts));
    g_value_init (&v, G_TYPE_STRING);
    for (guint i = 0; i < G_N_ELEMENTS (fmts); i++) {
      g_value_set_static_string (&v, fmts[i]);
      gst_value_list_append_value (&list, &v);
    }
    g_value_unset (&v);
    gst_structure_take_value (s, "format", &list);
  } else {
    gst_structure_set (s, "format", G_TYPE_STRING, "GRAY8", NULL);
  }
}

static GstStructure *
make_video_structure (gboolean color, gint w, gint h, const GValue * framerate)
{
  GstStructure *s = gst_structure_new_empty ("video/x-raw");

  set_formats (s, color);
  if (w > 0 && h > 0)
    gst_structure_set (s, "width", G_TYPE_INT, w, "height", G_TYPE_INT, h,
        NULL);
  else
    gst_structure_set (s, "width", GST_TYPE_INT_RANGE, 1, MAX_SIZE,
        "height", GST_TYPE_INT_RANGE, 1, MAX_SIZE, NULL);
  if (framerate)
    gst_structure_set_value (s, "framerate", framerate);
  else
    gst_structure_set (s, "framerate", GST_TYPE_FRACTION_RANGE, 0, 1,
        G_MAXINT, 1, NULL);
  return s;
}

/* other/tensors -> video/x-raw */
static void
tensors_to_video (const GstNnConvertSettings * st, const GstStructure * s,
    GstCaps * out)
{
  const GValue *framerate = gst_structure_get_value (s, "framerate");
  const GValue *num = gst_structure_get_value (s, "num_tensors");
  const gchar *types = gst_structure_get_string (s, "types");
  const gchar *dims = gst_structure_get_string (s, "dimensions");
  NnpShape shape;
  gint c, h, w;

  if (!gst_structure_has_name (s, GST_NN_TENSORS_MEDIA_TYPE))
    return;
  if (num != NULL) {
    GValue one = G_VALUE_INIT;
    gboolean ok;

    g_value_init (&one, G_TYPE_INT);
    g_value_set_int (&one, 1);
    ok = gst_value_can_intersect (num, &one);
    g_value_unset (&one);
    if (!ok)
      return;
  }
  if (gst_structure_has_field (s, "types")
      && (types == NULL || strcmp (types, "float32") != 0))
    return;

  if (dims == NULL) {
    /* anything, as long as it is one float32 tensor */
    gst_caps_append_structure (out, make_video_structure (TRUE, 0, 0,
            framerate));
    gst_caps_append_structure (out, make_video_structure (FALSE, 0, 0,
            framerate));
    return;
  }

  if (!gst_nn_dims_from_string (dims, &shape)
      || !gst_nn_shape_fit_rank (&shape, 4, &shape) || shape.dims[0] != 1)
    return;
  if (st->layout == GST_NN_CONVERT_LAYOUT_NCHW) {
    c = shape.dims[1];
    h = shape.dims[2];
    w = shape.dims[3];
  } else {
    h = shape.dims[1];
    w = shape.dims[2];
    c = shape.dims[3];
  }
  if (c != 1 && c != 3)
    return;

  if (geometry_is_identity (st)) {
    gst_caps_append_structure (out, make_video_structure (c == 3, w, h,
            framerate));
    return;
  }
  if (geometry_is_input_independent (st)) {
    GstNnConvertGeometry g;

    compute_geometry (st, st->width, st->height, &g);
    if (g.out_w != w || g.out_h != h)
      return;
  }
  gst_caps_append_structure (out, make_video_structure (c == 3, 0, 0,
          framerate));
}

static GstCaps *
gst_nn_convert_transform_caps (GstBaseTransform * trans,
    GstPadDirection direction, GstCaps * caps, GstCaps * filter)
{
  GstNnConvert *self = GST_NN_CONVERT (trans);
  GstNnConvertSettings st;
  GstCaps *ret = gst_caps_new_empty ();

  gst_nn_convert_get_settings (self, &st);

  for (guint i = 0; i < gst_caps_get_size (caps); i++) {
    const GstStructure *s = gst_caps_get_structure (caps, i);
    GstCaps *tmp = gst_caps_new_empty ();

    if (direction == GST_PAD_SINK)
      video_to_tensors (&st, s, tmp);
    else
      tensors_to_video (&st, s, tmp);
    ret = gst_caps_merge (ret, tmp);
  }

  if (filter) {
    GstCaps *tmp = gst_caps_intersect_full (filter, ret,
        GST_CAPS_INTERSECT_FIRST);

    gst_caps_unref (ret);
    ret = tmp;
  }

  GST_DEBUG_OBJECT (self, "%s: %" GST_PTR_FORMAT " -> %" GST_PTR_FORMAT,
      direction == GST_PAD_SINK ? "sink->src" : "src->sink", caps, ret);
  return ret;
}

static GstCaps *
gst_nn_convert_fixate_caps (GstBaseTransform * trans,
    GstPadDirection direction, GstCaps * caps, GstCaps * othercaps)
{
  GstCaps *ret;

  if (direction == GST_PAD_SINK)
    ret = gst_nn_tensors_caps_fixate (othercaps);
  else
    ret = gst_caps_fixate (othercaps);

  GST_DEBUG_OBJECT (trans, "fixated to %" GST_PTR_FORMAT, ret);
  return ret;
}

static gboolean
gst_nn_convert_get_unit_size (GstBaseTransform * trans, GstCaps * caps,
    gsize * size)
{
  const GstStructure *s = gst_caps_get_structure (caps, 0);

  if (gst_structure_has_name (s, "video/x-raw")) {
    GstVideoInfo info;

    if (!gst_video_info_from_caps (&info, caps))
      return FALSE;
    *size = GST_VIDEO_INFO_SIZE (&info);
    return TRUE;
  } else {
    GstNnTensorsInfo info;

    if (!gst_nn_tensors_info_from_caps (&info, caps, NULL))
      return FALSE;
    *size = gst_nn_tensors_info_get_size (&info);
    return *size > 0;
  }
}

/* The output is always one tensor of the negotiated size, whatever the
 * input buffer's size (video buffers may carry padding). */
static gboolean
gst_nn_convert_transform_size (GstBaseTransform * trans,
    GstPadDirection direction, GstCaps * caps, gsize size, GstCaps * othercaps,
    gsize * othersize)
{
  return gst_nn_convert_get_unit_size (trans, othercaps, othersize);
}

static void
free_tables (GstNnConvert * self)
{
  g_clear_pointer (&self->x_off0, g_free);
  g_clear_pointer (&self->x_off1, g_free);
  g_clear_pointer (&self->x_frac, g_free);
  g_clear_pointer (&self->y_row0, g_free);
  g_clear_pointer (&self->y_row1, g_free);
  g_clear_pointer (&self->y_frac, g_free);
  g_clear_pointer (&self->hrows[0], g_free);
  g_clear_pointer (&self->hrows[1], g_free);
}

/* Bilinear source positions with half-pixel centres:
 * src = (dst + 0.5) * in / out - 0.5, clamped to the frame. */
static void
make_axis_table (gint in, gint out, gint step, gint * off0, gint * off1,
    gfloat * frac)
{
  gdouble ratio = (gdouble) in / out;

  for (gint d = 0; d < out; d++) {
    gdouble s = (d + 0.5) * ratio - 0.5;
    gint i0;

    if (s < 0.0)
      s = 0.0;
    i0 = (gint) s;
    if (i0 >= in - 1) {
      off0[d] = off1[d] = (in - 1) * step;
      frac[d] = 0.0f;
    } else {
      off0[d] = i0 * step;
      off1[d] = (i0 + 1) * step;
      frac[d] = (gfloat) (s - i0);
    }
  }
}

static gboolean
gst_nn_convert_set_caps (GstBaseTransform * trans, GstCaps * incaps,
    GstCaps * outcaps)
{
  GstNnConvert *self = GST_NN_CONVERT (trans);
  GstNnTensorsInfo tinfo;
  GstVideoFormat fmt;
  NnpShape want;
  GError *err = NULL;
  gint in_w, in_h;

  if (!gst_video_info_from_caps (&self->vinfo, incaps)) {
    GST_ERROR_OBJECT (self, "invalid video caps %" GST_PTR_FORMAT, incaps);
    return FALSE;
  }
  if (!gst_nn_tensors_info_from_caps (&tinfo, outcaps, &err)) {
    GST_ERROR_OBJECT (self, "invalid tensor caps: %s", err->message);
    g_clear_error (&err);
    return FALSE;
  }

  gst_nn_convert_get_settings (self, &self->active);
  in_w = GST_VIDEO_INFO_WIDTH (&self->vinfo);
  in_h = GST_VIDEO_INFO_HEIGHT (&self->vinfo);
  compute_geometry (&self->active, in_w, in_h, &self->geom);

  fmt = GST_VIDEO_INFO_FORMAT (&self->vinfo);
  self->channels = fmt == GST_VIDEO_FORMAT_GRAY8 ? 1 : 3;
  self->pstride = GST_VIDEO_INFO_COMP_PSTRIDE (&self->vinfo, 0);

  layout_shape (self->active.layout, self->channels, self->geom.out_h,
      self->geom.out_w, &want);
  if (tinfo.n_tensors != 1 || tinfo.tensors[0].dtype != NNP_DTYPE_FLOAT32
      || !gst_nn_shape_is_compatible (&tinfo.tensors[0].shape, &want)) {
    gchar *got = gst_nn_tensors_info_to_string (&tinfo);
    gchar *w = gst_nn_dims_to_string (&want);

    GST_ERROR_OBJECT (self, "output caps %s do not match the conversion (%s "
        "(float32))", got, w);
    g_free (got);
    g_free (w);
    return FALSE;
  }

  if (self->channels == 1) {
    self->chan_offset[0] = GST_VIDEO_INFO_COMP_POFFSET (&self->vinfo, 0);
  } else {
    for (gint c = 0; c < 3; c++) {
      gint comp = self->active.channel_order ==
          GST_NN_CONVERT_CHANNEL_ORDER_RGB ? c : 2 - c;

      /* R, G, B are components 0, 1, 2 in every RGB-family format */
      self->chan_offset[c] = GST_VIDEO_INFO_COMP_POFFSET (&self->vinfo, comp);
    }
  }

  for (gint c = 0; c < self->channels; c++) {
    gdouble mean = self->active.mean[c], std = self->active.std[c];

    for (gint v = 0; v < 256; v++)
      self->lut[c][v] = (gfloat) (((gdouble) v / 255.0 - mean) / std);
    self->mul[c] = (gfloat) (1.0 / (255.0 * std));
    self->add[c] = (gfloat) (-mean / std);
  }

  free_tables (self);
  self->resize = self->geom.content_w != in_w || self->geom.content_h != in_h;
  if (self->resize) {
    gint cw = self->geom.content_w, ch = self->geom.content_h;

    self->x_off0 = g_new (gint, cw);
    self->x_off1 = g_new (gint, cw);
    self->x_frac = g_new (gfloat, cw);
    self->y_row0 = g_new (gint, ch);
    self->y_row1 = g_new (gint, ch);
    self->y_frac = g_new (gfloat, ch);
    make_axis_table (in_w, cw, self->pstride, self->x_off0, self->x_off1,
        self->x_frac);
    make_axis_table (in_h, ch, 1, self->y_row0, self->y_row1, self->y_frac);
    self->hrows[0] = g_new (gfloat, (gsize) cw * self->channels);
    self->hrows[1] = g_new (gfloat, (gsize) cw * self->channels);
  }

  GST_INFO_OBJECT (self, "%dx%d %s -> %dx%d (content %dx%d), %d channels, %s",
      in_w, in_h, gst_video_format_to_string (fmt), self->geom.out_w,
      self->geom.out_h, self->geom.content_w, self->geom.content_h,
      self->channels, self->resize ? "bilinear resize" : "no resize");
  return TRUE;
}

/* Pointer to the output element of channel c, row y, column 0, and the
 * step between columns. */
static inline gfloat *
out_ptr (GstNnConvert * self, gfloat * out, gint c, gint y, gint * step)
{
  gint W = self->geom.out_w, H = self->geom.out_h, C = self->channels;

  if (self->active.layout == GST_NN_CONVERT_LAYOUT_NCHW) {
    *step = 1;
    return out + ((gsize) c * H + y) * W;
  } else {
    *step = C;
    return out + (gsize) y *W * C + c;
  }
}

static void
convert_direct (GstNnConvert * self, GstVideoFrame * frame, gfloat * out)
{
  gint W = self->geom.content_w, H = self->geom.content_h;
  gint C = self->channels, ps = self->pstride;
  gint stride = GST_VIDEO_FRAME_PLANE_STRIDE (frame, 0);
  const guint8 *base = GST_VIDEO_FRAME_PLANE_DATA (frame, 0);

  for (gint y = 0; y < H; y++) {
    const guint8 *row = base + (gsize) y * stride;

    for (gint c = 0; c < C; c++) {
      const gfloat *lut = self->lut[c];
      const guint8 *p = row + self->chan_offset[c];
      gint step;
      gfloat *o = out_ptr (self, out, c, y, &step);

      for (gint x = 0; x < W; x++, p += ps, o += step)
        *o = lut[*p];
    }
  }
}

/* Horizontally resample source row `y` into a planar float row. */
static void
resize_row (GstNnConvert * self, const guint8 * row, gfloat * dst)
{
  gint cw = self->geom.content_w;

  for (gint c = 0; c < self->channels; c++) {
    const guint8 *src = row + self->chan_offset[c];
    gfloat *d = dst + (gsize) c * cw;

    for (gint x = 0; x < cw; x++) {
      gfloat p0 = src[self->x_off0[x]], p1 = src[self->x_off1[x]];

      d[x] = p0 + (p1 - p0) * self->x_frac[x];
    }
  }
}

/* Make hrows[0] hold source row r0 and hrows[1] row r1. */
static void
ensure_rows (GstNnConvert * self, const guint8 * base, gint stride, gint r0,
    gint r1)
{
  if (self->hrow_src[0] != r0) {
    if (self->hrow_src[1] == r0) {
      gfloat *t = self->hrows[0];

      self->hrows[0] = self->hrows[1];
      self->hrows[1] = t;
      self->hrow_src[0] = r0;
      self->hrow_src[1] = -1;
    } else {
      resize_row (self, base + (gsize) r0 * stride, self->hrows[0]);
      self->hrow_src[0] = r0;
    }
  }
  if (self->hrow_src[1] != r1) {
    if (r1 == r0) {
      memcpy (self->hrows[1], self->hrows[0],
          sizeof (gfloat) * self->geom.content_w * self->channels);
    } else {
      resize_row (self, base + (gsize) r1 * stride, self->hrows[1]);
    }
    self->hrow_src[1] = r1;
  }
}

static void
convert_resize (GstNnConvert * self, GstVideoFrame * frame, gfloat * out)
{
  gint cw = self->geom.content_w, ch = self->geom.content_h;
  gint stride = GST_VIDEO_FRAME_PLANE_STRIDE (frame, 0);
  const guint8 *base = GST_VIDEO_FRAME_PLANE_DATA (frame, 0);

  self->hrow_src[0] = self->hrow_src[1] = -1;
  for (gint y = 0; y < ch; y++) {
    gfloat fy = self->y_frac[y];

    ensure_rows (self, base, stride, self->y_row0[y], self->y_row1[y]);
    for (gint c = 0; c < self->channels; c++) {
      const gfloat *r0 = self->hrows[0] + (gsize) c * cw;
      const gfloat *r1 = self->hrows[1] + (gsize) c * cw;
      gfloat mul = self->mul[c], add = self->add[c];
      gint step;
      gfloat *o = out_ptr (self, out, c, y, &step);

      for (gint x = 0; x < cw; x++, o += step) {
        gfloat v = r0[x] + (r1[x] - r0[x]) * fy;

        *o = v * mul + add;
      }
    }
  }
}

/* Fill everything right of and below the content area. */
static void
fill_padding (GstNnConvert * self, gfloat * out)
{
  gint W = self->geom.out_w, H = self->geom.out_h;
  gint cw = self->geom.content_w, ch = self->geom.content_h;
  gfloat pad = self->active.pad_value;

  if (cw >= W && ch >= H)
    return;
  for (gint c = 0; c < self->channels; c++) {
    for (gint y = 0; y < H; y++) {
      gint step;
      gfloat *o = out_ptr (self, out, c, y, &step);
      gint x0 = y < ch ? cw : 0;

      o += (gsize) x0 *step;
      for (gint x = x0; x < W; x++, o += step)
        *o = pad;
    }
  }
}

static GstFlowReturn
gst_nn_convert_transform (GstBaseTransform * trans, GstBuffer * inbuf,
    GstBuffer * outbuf)
{
  GstNnConvert *self = GST_NN_CONVERT (trans);
  GstVideoFrame frame;
  GstMapInfo map;
  GstNnTransformMeta *meta;
  gsize need = (gsize) self->geom.out_w * self->geom.out_h * self->channels *
      sizeof (gfloat);

  if (!gst_video_frame_map (&frame, &self->vinfo, inbuf, GST_MAP_READ)) {
    GST_ELEMENT_ERROR (self, STREAM, FAILED, (NULL),
        ("could not map the input video frame"));
    return GST_FLOW_ERROR;
  }
  if (!gst_buffer_map (outbuf, &map, GST_MAP_WRITE)) {
    gst_video_frame_unmap (&frame);
    GST_ELEMENT_ERROR (self, STREAM, FAILED, (NULL),
        ("could not map the output buffer"));
    return GST_FLOW_ERROR;
  }
  if (map.size < need) {
    gst_buffer_unmap (outbuf, &map);
    gst_video_frame_unmap (&frame);
    GST_ELEMENT_ERROR (self, STREAM, FAILED, (NULL),
        ("output buffer has %" G_GSIZE_FORMAT " bytes, need %" G_GSIZE_FORMAT,
            map.size, need));
    return GST_FLOW_ERROR;
  }

  if (self->resize)
    convert_resize (self, &frame, (gfloat *) map.data);
  else
    convert_direct (self, &frame, (gfloat *) map.data);
  fill_padding (self, (gfloat *) map.data);

  gst_buffer_unmap (outbuf, &map);
  gst_video_frame_unmap (&frame);

  meta = gst_buffer_add_nn_transform_meta (outbuf,
      GST_VIDEO_INFO_WIDTH (&self->vinfo), GST_VIDEO_INFO_HEIGHT (&self->vinfo));
  meta->tensor_width = self->geom.out_w;
  meta->tensor_height = self->geom.out_h;
  meta->content_width = self->geom.content_w;
  meta->content_height = self->geom.content_h;
  meta->scale_x = (gdouble) self->geom.content_w /
      GST_VIDEO_INFO_WIDTH (&self->vinfo);
  meta->scale_y = (gdouble) self->geom.content_h /
      GST_VIDEO_INFO_HEIGHT (&self->vinfo);
  meta->offset_x = 0.0;
  meta->offset_y = 0.0;

  GST_OBJECT_LOCK (self);
  if (self->keep_frame)
    gst_buffer_add_nn_frame_meta (outbuf, inbuf, &self->vinfo);
  GST_OBJECT_UNLOCK (self);

  return GST_FLOW_OK;
}

static gboolean
gst_nn_convert_transform_meta (GstBaseTransform * trans, GstBuffer * outbuf,
    GstMeta * meta, GstBuffer * inbuf)
{
  /* we attach a fresh transform meta describing this conversion */
  if (meta->info->api == GST_NN_TRANSFORM_META_API_TYPE ||
      meta->info->api == GST_NN_FRAME_META_API_TYPE)
    return FALSE;
  /* video-specific metas (tags "video", "size", ...) do not apply to
   * tensors: the parent drops every tagged meta */
  return GST_BASE_TRANSFORM_CLASS (gst_nn_convert_parent_class)->transform_meta
      (trans, outbuf, meta, inbuf);
}

static gboolean
gst_nn_convert_stop (GstBaseTransform * trans)
{
  free_tables (GST_NN_CONVERT (trans));
  return TRUE;
}

static void
gst_nn_convert_set_property (GObject * object, guint prop_id,
    const GValue * value, GParamSpec * pspec)
{
  GstNnConvert *self = GST_NN_CONVERT (object);
  gboolean reconfigure = TRUE;

  GST_OBJECT_LOCK (self);
  switch (prop_id) {
    case PROP_LAYOUT:
      self->settings.layout = g_value_get_enum (value);
      break;
    case PROP_CHANNEL_ORDER:
      self->settings.channel_order = g_value_get_enum (value);
      break;
    case PROP_MEAN:
    case PROP_STD:{
      const gchar *str = g_value_get_string (value);
      gboolean is_std = prop_id == PROP_STD;
      gdouble vals[MAX_CHANNELS];

      if (str == NULL)
        str = is_std ? DEFAULT_STD : DEFAULT_MEAN;
      if (!parse_channel_values (str, vals, is_std)) {
        GST_OBJECT_UNLOCK (self);
        g_warning ("nnconvert: invalid %s \"%s\": want one value or three "
            "separated by commas%s", is_std ? "std" : "mean", str,
            is_std ? ", none zero" : "");
        return;
      }
      memcpy (is_std ? self->settings.std : self->settings.mean, vals,
          sizeof (vals));
      if (is_std) {
        g_free (self->std_str);
        self->std_str = g_strdup (str);
      } else {
        g_free (self->mean_str);
        self->mean_str = g_strdup (str);
      }
      break;
    }
    case PROP_WIDTH:
      self->settings.width = g_value_get_int (value);
      break;
    case PROP_HEIGHT:
      self->settings.height = g_value_get_int (value);
      break;
    case PROP_KEEP_ASPECT_RATIO:
      self->settings.keep_aspect = g_value_get_boolean (value);
      break;
    case PROP_MULTIPLE_OF:
      self->settings.multiple_of = g_value_get_uint (value);
      break;
    case PROP_PAD_VALUE:
      self->settings.pad_value = (gfloat) g_value_get_float (value);
      break;
    case PROP_MAX_UPSCALE:
      self->settings.max_upscale = g_value_get_double (value);
      break;
    case PROP_PAD_TO_SIZE:
      self->settings.pad_to_size = g_value_get_boolean (value);
      break;
    case PROP_KEEP_FRAME:
      self->keep_frame = g_value_get_boolean (value);
      reconfigure = FALSE;
      break;
    default:
      reconfigure = FALSE;
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
  GST_OBJECT_UNLOCK (self);

  /* every setting changes the output: renegotiate on the next buffer */
  if (reconfigure)
    gst_base_transform_reconfigure_src (GST_BASE_TRANSFORM (self));
}

static void
gst_nn_convert_get_property (GObject * object, guint prop_id, GValue * value,
    GParamSpec * pspec)
{
  GstNnConvert *self = GST_NN_CONVERT (object);

  GST_OBJECT_LOCK (self);
  switch (prop_id) {
    case PROP_LAYOUT:
      g_value_set_enum (value, self->settings.layout);
      break;
    case PROP_CHANNEL_ORDER:
      g_value_set_enum (value, self->settings.channel_order);
      break;
    case PROP_MEAN:
      g_value_set_string (value, self->mean_str);
      break;
    case PROP_STD:
      g_value_set_string (value, self->std_str);
      break;
    case PROP_WIDTH:
      g_value_set_int (value, self->settings.width);
      break;
    case PROP_HEIGHT:
      g_value_set_int (value, self->settings.height);
      break;
    case PROP_KEEP_ASPECT_RATIO:
      g_value_set_boolean (value, self->settings.keep_aspect);
      break;
    case PROP_MULTIPLE_OF:
      g_value_set_uint (value, self->settings.multiple_of);
      break;
    case PROP_PAD_VALUE:
      g_value_set_float (value, self->settings.pad_value);
      break;
    case PROP_MAX_UPSCALE:
      g_value_set_double (value, self->settings.max_upscale);
      break;
    case PROP_PAD_TO_SIZE:
      g_value_set_boolean (value, self->settings.pad_to_size);
      break;
    case PROP_KEEP_FRAME:
      g_value_set_boolean (value, self->keep_frame);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
  GST_OBJECT_UNLOCK (self);
}

static void
gst_nn_convert_finalize (GObject * object)
{
  GstNnConvert *self = GST_NN_CONVERT (object);

  free_tables (self);
  g_free (self->mean_str);
  g_free (self->std_str);

  G_OBJECT_CLASS (gst_nn_convert_parent_class)->finalize (object);
}

static void
gst_nn_convert_class_init (GstNnConvertClass * klass)
{
  GObjectClass *gobject_class = G_OBJECT_CLASS (klass);
  GstElementClass *element_class = GST_ELEMENT_CLASS (klass);
  GstBaseTransformClass *trans_class = GST_BASE_TRANSFORM_CLASS (klass);

  GST_DEBUG_CATEGORY_INIT (gst_nn_convert_debug, "nnconvert", 0,
      "nnpipe video to tensor converter");

  gobject_class->set_property = gst_nn_convert_set_property;
  gobject_class->get_property = gst_nn_convert_get_property;
  gobject_class->finalize = gst_nn_convert_finalize;

  /**
   * GstNnConvert:layout:
   *
   * Memory layout of the output tensor.
   */
  g_object_class_install_property (gobject_class, PROP_LAYOUT,
      g_param_spec_enum ("layout", "Layout",
          "Memory layout of the output tensor", GST_TYPE_NN_CONVERT_LAYOUT,
          DEFAULT_LAYOUT,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_PLAYING));

  /**
   * GstNnConvert:channel-order:
   *
   * Order of the colour channels in the output tensor.
   */
  g_object_class_install_property (gobject_class, PROP_CHANNEL_ORDER,
      g_param_spec_enum ("channel-order", "Channel order",
          "Order of the colour channels in the output tensor",
          GST_TYPE_NN_CONVERT_CHANNEL_ORDER, DEFAULT_CHANNEL_ORDER,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_PLAYING));

  /**
   * GstNnConvert:mean:
   *
   * Per-channel mean subtracted from x/255, in output channel order: one
   * value for all channels or three separated by commas.
   */
  g_object_class_install_property (gobject_class, PROP_MEAN,
      g_param_spec_string ("mean", "Mean",
          "Per-channel mean subtracted from x/255, in output channel order "
          "(one value, or three separated by commas, e.g. 0.485,0.456,0.406)",
          DEFAULT_MEAN,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_PLAYING));

  /**
   * GstNnConvert:std:
   *
   * Per-channel standard deviation dividing (x/255 - mean).
   */
  g_object_class_install_property (gobject_class, PROP_STD,
      g_param_spec_string ("std", "Standard deviation",
          "Per-channel divisor of (x/255 - mean), in output channel order "
          "(one value, or three separated by commas, e.g. 0.229,0.224,0.225)",
          DEFAULT_STD,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_PLAYING));

  /**
   * GstNnConvert:width:
   *
   * Target width; 0 keeps the input width (or, with keep-aspect-ratio and
   * a height, follows the aspect ratio).
   */
  g_object_class_install_property (gobject_class, PROP_WIDTH,
      g_param_spec_int ("width", "Width",
          "Target width (0 = the input's, or from the aspect ratio)",
          0, MAX_SIZE, DEFAULT_WIDTH,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_PLAYING));

  /**
   * GstNnConvert:height:
   *
   * Target height; 0 keeps the input height (or, with keep-aspect-ratio
   * and a width, follows the aspect ratio).
   */
  g_object_class_install_property (gobject_class, PROP_HEIGHT,
      g_param_spec_int ("height", "Height",
          "Target height (0 = the input's, or from the aspect ratio)",
          0, MAX_SIZE, DEFAULT_HEIGHT,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_PLAYING));

  /**
   * GstNnConvert:keep-aspect-ratio:
   *
   * Scale the frame to fit the target size without distortion and pad the
   * rest (right and bottom) with pad-value.
   */
  g_object_class_install_property (gobject_class, PROP_KEEP_ASPECT_RATIO,
      g_param_spec_boolean ("keep-aspect-ratio", "Keep aspect ratio",
          "Scale to fit without distortion and pad right/bottom",
          DEFAULT_KEEP_ASPECT_RATIO,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_PLAYING));

  /**
   * GstNnConvert:multiple-of:
   *
   * Round the output width and height to a multiple of this: up (padding)
   * with keep-aspect-ratio, to the nearest multiple (stretching) without.
   */
  g_object_class_install_property (gobject_class, PROP_MULTIPLE_OF,
      g_param_spec_uint ("multiple-of", "Multiple of",
          "Round the output size to a multiple of this (up and padded with "
          "keep-aspect-ratio, else to the nearest by stretching)",
          1, 4096, DEFAULT_MULTIPLE_OF,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_PLAYING));

  /**
   * GstNnConvert:pad-value:
   *
   * Value written into the padding, in output (normalised) units.
   */
  g_object_class_install_property (gobject_class, PROP_PAD_VALUE,
      g_param_spec_float ("pad-value", "Pad value",
          "Value of padded tensor elements (after normalisation)",
          -G_MAXFLOAT, G_MAXFLOAT, DEFAULT_PAD_VALUE,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_PLAYING));

  /**
   * GstNnConvert:max-upscale:
   *
   * With keep-aspect-ratio: the largest factor the frame is scaled up by to
   * fit the target size (0: no bound; 1: never scaled up, only down).
   * Frames larger than the target are still scaled down to fit.
   */
  g_object_class_install_property (gobject_class, PROP_MAX_UPSCALE,
      g_param_spec_double ("max-upscale", "Max upscale",
          "With keep-aspect-ratio, scale frames up by at most this factor "
          "to fit (0 = no bound, 1 = only scale down)",
          0.0, 64.0, DEFAULT_MAX_UPSCALE,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_PLAYING));

  /**
   * GstNnConvert:pad-to-size:
   *
   * With keep-aspect-ratio: TRUE pads the scaled frame to the full target
   * width x height (then to multiple-of); FALSE pads it only up to the next
   * multiple-of, so the tensor follows the frame's shape (a 73x28 frame
   * scaled to fit 960x960 by at most 2 gives a 160x64 tensor, not
   * 960x960).
   */
  g_object_class_install_property (gobject_class, PROP_PAD_TO_SIZE,
      g_param_spec_boolean ("pad-to-size", "Pad to size",
          "With keep-aspect-ratio, pad to the full target size (else only to "
          "multiple-of)", DEFAULT_PAD_TO_SIZE,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_PLAYING));

  /**
   * GstNnConvert:keep-frame:
   *
   * Attach a #GstNnFrameMeta holding the input frame to every tensor, so
   * nndbdecode, nnctcdecode and nnclassdecode can push the original frame
   * with the results.
   */
  g_object_class_install_property (gobject_class, PROP_KEEP_FRAME,
      g_param_spec_boolean ("keep-frame", "Keep frame",
          "Attach the input frame to each tensor (GstNnFrameMeta) for the "
          "post-processing elements", FALSE,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_PLAYING));

  gst_element_class_add_static_pad_template (element_class, &sink_template);
  gst_element_class_add_static_pad_template (element_class, &src_template);
  gst_element_class_set_static_metadata (element_class,
      "Video to tensor converter", "Filter/Converter/Video/Tensor",
      "Converts video frames into normalised float32 tensors (NCHW or NHWC), "
      "optionally resized", "nnpipe developers");

  trans_class->transform_caps =
      GST_DEBUG_FUNCPTR (gst_nn_convert_transform_caps);
  trans_class->fixate_caps = GST_DEBUG_FUNCPTR (gst_nn_convert_fixate_caps);
  trans_class->get_unit_size = GST_DEBUG_FUNCPTR (gst_nn_convert_get_unit_size);
  trans_class->transform_size =
      GST_DEBUG_FUNCPTR (gst_nn_convert_transform_size);
  trans_class->set_caps = GST_DEBUG_FUNCPTR (gst_nn_convert_set_caps);
  trans_class->transform = GST_DEBUG_FUNCPTR (gst_nn_convert_transform);
  trans_class->transform_meta = GST_DEBUG_FUNCPTR (gst_nn_convert_transform_meta);
  trans_class->stop = GST_DEBUG_FUNCPTR (gst_nn_convert_stop);
  trans_class->passthrough_on_same_caps = FALSE;

  gst_type_mark_as_plugin_api (GST_TYPE_NN_CONVERT_LAYOUT, 0);
  gst_type_mark_as_plugin_api (GST_TYPE_NN_CONVERT_CHANNEL_ORDER, 0);
}

static void
gst_nn_convert_init (GstNnConvert * self)
{
  self->settings.layout = DEFAULT_LAYOUT;
  self->settings.channel_order = DEFAULT_CHANNEL_ORDER;
  parse_channel_values (DEFAULT_MEAN, self->settings.mean, FALSE);
  parse_channel_values (DEFAULT_STD, self->settings.std, TRUE);
  self->mean_str = g_strdup (DEFAULT_MEAN);
  self->std_str = g_strdup (DEFAULT_STD);
  self->settings.width = DEFAULT_WIDTH;
  self->settings.height = DEFAULT_HEIGHT;
  self->settings.keep_aspect = DEFAULT_KEEP_ASPECT_RATIO;
  self->settings.multiple_of = DEFAULT_MULTIPLE_OF;
  self->settings.pad_value = DEFAULT_PAD_VALUE;
  self->settings.max_upscale = DEFAULT_MAX_UPSCALE;
  self->settings.pad_to_size = DEFAULT_PAD_TO_SIZE;
  self->hrow_src[0] = self->hrow_src[1] = -1;
}
