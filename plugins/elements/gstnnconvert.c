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
 * @short_description: convert video frames into normalised float tensors
 *
 * nnconvert turns raw video frames into the input tensor of a vision
 * network: an `other/tensors` stream with one float32 (or float16) tensor
 * per buffer, laid out as NCHW (1 x C x H x W, the default) or NHWC.  Each
 * 8-bit sample `x` of channel `c` becomes
 *
 *   `(x / 255 - mean[c]) / std[c]`
 *
 * The tensor has the channels downstream asks for (a model's input): colour
 * input gives three channels in RGB (or, with channel-order=bgr, BGR)
 * order, or four with alpha last (RGBA / BGRA; a frame without alpha reads
 * 255, opaque); GRAY8 gives one channel (put videoconvert in front to make
 * gray from colour, or colour from gray).  Padding bytes are ignored.  The
 * element type is float32 unless downstream asks for `types=float16`
 * (rounded to nearest even).
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
 * |[
 * gst-launch-1.0 -q filesrc location=photo.jpg ! decodebin ! videoconvert ! \
 *     videoscale ! video/x-raw,width=320,height=320 ! \
 *     nnconvert layout=nhwc std=0.00392156862745098 ! \
 *     nnstage model=.cache/models/mlsd_320x320_tiny.onnx ! ...
 * ]| feeds M-LSD its 1x320x320x4 RGBA input, values 0..255 (std 1/255; the
 * model scales them itself): the model's caps ask for four channels,
 * nnconvert negotiates RGBA from videoconvert.  Where downstream takes
 * several, nnconvert picks the frames' natural form (float32; 3 channels of
 * colour, 1 of GRAY8).
 */

#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "gstnnconvert-private.h"
#include "gstnnsourcemeta.h"
#include "gstnnmeta.h"
#include "gstnnframemeta.h"
#include "gstnntensorcaps.h"

#include <string.h>

GST_DEBUG_CATEGORY_STATIC (gst_nn_convert_debug);
#define GST_CAT_DEFAULT gst_nn_convert_debug

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
  PROP_REGION_X,
  PROP_REGION_Y,
  PROP_REGION_WIDTH,
  PROP_REGION_HEIGHT,
  PROP_SOURCE_ID,
};

#define VIDEO_FORMATS_COLOR \
  "RGB, BGR, RGBA, BGRA, RGBx, BGRx, xRGB, xBGR, ARGB, ABGR"
#define VIDEO_FORMATS "{ " VIDEO_FORMATS_COLOR ", GRAY8 }"

static GstStaticPadTemplate sink_template =
    GST_STATIC_PAD_TEMPLATE ("sink", GST_PAD_SINK, GST_PAD_ALWAYS,
        GST_STATIC_CAPS (GST_VIDEO_CAPS_MAKE (VIDEO_FORMATS)));

static GstStaticPadTemplate src_template = GST_STATIC_PAD_TEMPLATE ("src",
    GST_PAD_SRC, GST_PAD_ALWAYS,
    GST_STATIC_CAPS (
        "other/tensors, format = (string) static, num_tensors = (int) 1, types = (string) { float32, float16 }, framerate = (fraction) [ 0/1, MAX ]"));

struct _GstNnConvert
{
  GstBaseTransform parent;

  /* properties (object lock) */
  GstNnConvertSettings settings;
  gchar *mean_str, *std_str;
  gboolean keep_frame; /* attach a GstNnFrameMeta (object lock) */
  gchar *source_id;    /* GstNnSourceMeta's source-id (object lock) */
  guint64 frames_seen; /* frames received since start (streaming) */

  /* negotiated state (streaming thread) */
  GstVideoInfo vinfo;
  GstNnConvertSettings active; /* settings the state below was built from */
  GstNnConvertGeometry geom;
  gint region[4]; /* the frame's region converted, pixels: x, y, w, h */
  gint channels;
  NnpDType dtype;         /* of the tensor: float32 or float16 */
  NnFrameConverter *conv; /* owned; the per-frame conversion */
  gsize out_size;         /* bytes of the output tensor; 0 before set_caps */
};

G_DEFINE_TYPE (GstNnConvert, gst_nn_convert, GST_TYPE_BASE_TRANSFORM);
GST_ELEMENT_REGISTER_DEFINE (nnconvert, "nnconvert", GST_RANK_NONE,
    GST_TYPE_NN_CONVERT);

GType
gst_nn_convert_layout_get_type (void)
{
  static GType type = 0;
  static const GEnumValue values[] = {
    { GST_NN_CONVERT_LAYOUT_NCHW, "Planar: 1 x channels x height x width",
        "nchw" },
    { GST_NN_CONVERT_LAYOUT_NHWC, "Interleaved: 1 x height x width x channels",
        "nhwc" },
    { 0, NULL, NULL }
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
  static const GEnumValue values[] = { { GST_NN_CONVERT_CHANNEL_ORDER_RGB,
                                           "Red, green, blue", "rgb" },
    { GST_NN_CONVERT_CHANNEL_ORDER_BGR, "Blue, green, red", "bgr" },
    { 0, NULL, NULL } };

  if (g_once_init_enter (&type)) {
    GType t = g_enum_register_static ("GstNnConvertChannelOrder", values);
    g_once_init_leave (&type, t);
  }
  return type;
}

static void
gst_nn_convert_get_settings (GstNnConvert *self, GstNnConvertSettings *st)
{
  GST_OBJECT_LOCK (self);
  *st = self->settings;
  GST_OBJECT_UNLOCK (self);
}

static GstCaps *
gst_nn_convert_transform_caps (GstBaseTransform *trans,
    GstPadDirection direction, GstCaps *caps, GstCaps *filter)
{
  GstNnConvert *self = GST_NN_CONVERT (trans);
  GstNnConvertSettings st;
  GstCaps *ret = gst_caps_new_empty ();

  gst_nn_convert_get_settings (self, &st);

  for (guint i = 0; i < gst_caps_get_size (caps); i++) {
    const GstStructure *s = gst_caps_get_structure (caps, i);
    GstCaps *tmp = gst_caps_new_empty ();

    if (direction == GST_PAD_SINK)
      gst_nn_convert_caps_from_video (&st, s, tmp);
    else
      gst_nn_convert_caps_from_tensors (&st, s, tmp);
    ret = gst_caps_merge (ret, tmp);
  }

  if (filter) {
    GstCaps *tmp =
        gst_caps_intersect_full (filter, ret, GST_CAPS_INTERSECT_FIRST);

    gst_caps_unref (ret);
    ret = tmp;
  }

  GST_DEBUG_OBJECT (self, "%s: %" GST_PTR_FORMAT " -> %" GST_PTR_FORMAT,
      direction == GST_PAD_SINK ? "sink->src" : "src->sink", caps, ret);
  return ret;
}

/* The candidate of @othercaps (tensor caps) in the natural form of the
 * video frames of @caps: one float32 tensor of 3 channels (colour) or 1
 * (GRAY8) in the element's layout.  NULL when @othercaps has none. */
static GstCaps *
gst_nn_convert_natural_tensors (GstNnConvert *self, GstCaps *caps,
    GstCaps *othercaps)
{
  GstNnConvertLayout layout;
  GstVideoInfo vinfo;
  gint want_c;

  if (!gst_video_info_from_caps (&vinfo, caps))
    return NULL;
  want_c = GST_VIDEO_INFO_FORMAT (&vinfo) == GST_VIDEO_FORMAT_GRAY8 ? 1 : 3;
  GST_OBJECT_LOCK (self);
  layout = self->settings.layout;
  GST_OBJECT_UNLOCK (self);
  for (guint i = 0; i < gst_caps_get_size (othercaps); i++) {
    const GstStructure *s = gst_caps_get_structure (othercaps, i);
    GstNnTensorsInfo info;
    NnpShape sh;

    if (!gst_nn_tensors_info_from_structure (&info, s, NULL)
        || info.n_tensors != 1 || info.tensors[0].dtype != NNP_DTYPE_FLOAT32
        || !gst_nn_shape_fit_rank (&info.tensors[0].shape, 4, &sh))
      continue;
    if ((layout == GST_NN_CONVERT_LAYOUT_NCHW ? sh.dims[1] : sh.dims[3])
        == want_c)
      return gst_caps_new_full (gst_structure_copy (s), NULL);
  }
  return NULL;
}

static GstCaps *
gst_nn_convert_fixate_caps (GstBaseTransform *trans, GstPadDirection direction,
    GstCaps *caps, GstCaps *othercaps)
{
  GstNnConvert *self = GST_NN_CONVERT (trans);
  GstCaps *ret;

  if (direction == GST_PAD_SINK) {
    GstCaps *natural = gst_nn_convert_natural_tensors (self, caps, othercaps);

    /* the first candidate downstream takes, unless it also takes the
     * natural form of the frames: float32, 3 channels of a colour format, 1
     * of GRAY8.  4 channels or float16 only when downstream asks for them
     * (a later stage's candidates may come first in its answer) */
    if (natural) {
      gst_caps_unref (othercaps);
      othercaps = natural;
    }
    ret = gst_nn_tensors_caps_fixate (othercaps);
  } else {
    ret = gst_caps_fixate (othercaps);
  }

  GST_DEBUG_OBJECT (trans, "fixated to %" GST_PTR_FORMAT, ret);
  return ret;
}

static gboolean
gst_nn_convert_get_unit_size (GstBaseTransform *trans, GstCaps *caps,
    gsize *size)
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
 * input buffer's size (video buffers may carry padding).  GstBaseTransform
 * asks this for every output buffer with the pads' current caps, which
 * set_caps has seen: the answer is the size it kept.  Parsing the caps here
 * again per buffer was work for nothing, and it read the source pad's caps
 * after the last lock of the pad that orders them against the application
 * thread clearing the pad's sticky events while the pipeline stops: only
 * GStreamer's reference count (an atomic in uninstrumented libgstreamer)
 * kept that read safe, so ThreadSanitizer reported it now and then
 * (issue 19, plugin-torture's test_eos_while_stopping). */
static gboolean
gst_nn_convert_transform_size (GstBaseTransform *trans,
    GstPadDirection direction, GstCaps *caps, gsize size, GstCaps *othercaps,
    gsize *othersize)
{
  GstNnConvert *self = GST_NN_CONVERT (trans);

  if (direction == GST_PAD_SINK && self->out_size > 0) {
    *othersize = self->out_size;
    return TRUE;
  }
  return gst_nn_convert_get_unit_size (trans, othercaps, othersize);
}

static gboolean
gst_nn_convert_set_caps (GstBaseTransform *trans, GstCaps *incaps,
    GstCaps *outcaps)
{
  GstNnConvert *self = GST_NN_CONVERT (trans);
  GstNnTensorsInfo tinfo;
  GstVideoFormat fmt;
  NnFrameConvertInfo ci = { 0 };
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
  gst_nn_convert_compute_geometry (&self->active, in_w, in_h, &self->geom);
  gst_nn_convert_region (&self->active, in_w, in_h, self->region);

  fmt = GST_VIDEO_INFO_FORMAT (&self->vinfo);
  if (tinfo.n_tensors != 1)
    goto wrong_caps;
  /* the channels and the element type downstream asked for */
  {
    NnpShape got;

    if (!gst_nn_shape_fit_rank (&tinfo.tensors[0].shape, 4, &got))
      goto wrong_caps;
    self->channels = self->active.layout == GST_NN_CONVERT_LAYOUT_NCHW
        ? (gint) got.dims[1]
        : (gint) got.dims[3];
  }
  self->dtype = tinfo.tensors[0].dtype;
  if (fmt == GST_VIDEO_FORMAT_GRAY8
          ? self->channels != 1
          : self->channels != 3 && self->channels != 4)
    goto wrong_caps;
  gst_nn_convert_layout_shape (self->active.layout, self->channels,
      self->geom.out_h, self->geom.out_w, &want);
  if (!gst_nn_convert_dtype_supported (self->dtype)
      || !gst_nn_shape_is_compatible (&tinfo.tensors[0].shape, &want))
    goto wrong_caps;
  if ((self->active.mean_n > 1 && self->active.mean_n < self->channels)
      || (self->active.std_n > 1 && self->active.std_n < self->channels))
    goto too_few_values;

  ci.in_w = self->region[2];
  ci.in_h = self->region[3];
  ci.pstride = GST_VIDEO_INFO_COMP_PSTRIDE (&self->vinfo, 0);
  ci.channels = self->channels;
  ci.dtype = self->dtype;
  if (self->channels == 1) {
    ci.chan_offset[0] = GST_VIDEO_INFO_COMP_POFFSET (&self->vinfo, 0);
  } else {
    for (gint c = 0; c < 3; c++) {
      gint comp = self->active.channel_order == GST_NN_CONVERT_CHANNEL_ORDER_RGB
          ? c
          : 2 - c;

      /* R, G, B are components 0, 1, 2 in every RGB-family format */
      ci.chan_offset[c] = GST_VIDEO_INFO_COMP_POFFSET (&self->vinfo, comp);
    }
    /* alpha is component 3 where the format has it */
    if (self->channels == 4)
      ci.chan_offset[3] = GST_VIDEO_INFO_HAS_ALPHA (&self->vinfo)
          ? (gint) GST_VIDEO_INFO_COMP_POFFSET (&self->vinfo, 3)
          : NN_FRAME_CONVERT_OPAQUE;
  }
  memcpy (ci.mean, self->active.mean, sizeof (ci.mean));
  memcpy (ci.std, self->active.std, sizeof (ci.std));
  ci.out_w = self->geom.out_w;
  ci.out_h = self->geom.out_h;
  ci.content_w = self->geom.content_w;
  ci.content_h = self->geom.content_h;
  ci.nchw = self->active.layout == GST_NN_CONVERT_LAYOUT_NCHW;
  ci.pad_value = self->active.pad_value;

  g_clear_pointer (&self->conv, nn_frame_converter_free);
  self->out_size = 0;
  self->conv = nn_frame_converter_new (&ci);
  if (self->conv == NULL)
    goto no_converter;
  self->out_size = gst_nn_tensors_info_get_size (&tinfo);

  GST_INFO_OBJECT (self,
      "%dx%d %s -> %dx%d (content %dx%d), %d channels %s, %s", in_w, in_h,
      gst_video_format_to_string (fmt), self->geom.out_w, self->geom.out_h,
      self->geom.content_w, self->geom.content_h, self->channels,
      nnp_dtype_name (self->dtype),
      nn_frame_converter_resizes (self->conv) ? "bilinear resize"
                                              : "no resize");
  return TRUE;

  /* ERRORS */
wrong_caps : {
  gchar *got = gst_nn_tensors_info_to_string (&tinfo);

  GST_ERROR_OBJECT (self,
      "output caps %s do not match the conversion of %s %dx%d frames into %dx%d (1 channel from GRAY8, 3 or 4 from colour; float32 or float16)",
      got, gst_video_format_to_string (fmt), in_w, in_h, self->geom.out_w,
      self->geom.out_h);
  g_free (got);
  return FALSE;
}
too_few_values : {
  GST_ELEMENT_ERROR (self, CORE, NEGOTIATION, (NULL),
      ("the tensor has %d channels, mean has %d values and std %d: give one value for all channels or one per channel",
          self->channels, self->active.mean_n, self->active.std_n));
  return FALSE;
}
no_converter : {
  GST_ELEMENT_ERROR (self, CORE, NEGOTIATION, (NULL),
      ("no conversion of %dx%d frames into %dx%d (content %dx%d)", in_w, in_h,
          self->geom.out_w, self->geom.out_h, self->geom.content_w,
          self->geom.content_h));
  return FALSE;
}
}

static GstFlowReturn
gst_nn_convert_transform (GstBaseTransform *trans, GstBuffer *inbuf,
    GstBuffer *outbuf)
{
  GstNnConvert *self = GST_NN_CONVERT (trans);
  GstVideoFrame frame;
  GstMapInfo map;
  GstNnTransformMeta *meta;
  GstNnSource src;
  gchar *source_id;
  gboolean keep;
  gsize need = (gsize) self->geom.out_w * self->geom.out_h * self->channels
      * nnp_dtype_size (self->dtype);

  if (self->conv == NULL) {
    GST_ELEMENT_ERROR (self, CORE, NEGOTIATION, (NULL),
        ("a buffer before the caps"));
    return GST_FLOW_NOT_NEGOTIATED;
  }
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

  nn_frame_converter_run (self->conv,
      (const guint8 *) GST_VIDEO_FRAME_PLANE_DATA (&frame, 0)
          + (gsize) self->region[1] * GST_VIDEO_FRAME_PLANE_STRIDE (&frame, 0)
          + (gsize) self->region[0] * GST_VIDEO_FRAME_COMP_PSTRIDE (&frame, 0),
      GST_VIDEO_FRAME_PLANE_STRIDE (&frame, 0), map.data);

  gst_buffer_unmap (outbuf, &map);
  gst_video_frame_unmap (&frame);

  meta = gst_buffer_add_nn_transform_meta (outbuf,
      GST_VIDEO_INFO_WIDTH (&self->vinfo),
      GST_VIDEO_INFO_HEIGHT (&self->vinfo));
  meta->tensor_width = self->geom.out_w;
  meta->tensor_height = self->geom.out_h;
  meta->content_width = self->geom.content_w;
  meta->content_height = self->geom.content_h;
  /* the region's pixels scaled into the content area */
  meta->scale_x = (gdouble) self->geom.content_w / self->region[2];
  meta->scale_y = (gdouble) self->geom.content_h / self->region[3];
  meta->offset_x = -self->region[0] * meta->scale_x;
  meta->offset_y = -self->region[1] * meta->scale_y;

  /* where and when (gstnnsourcemeta.h), on the tensor and the frame */
  GST_OBJECT_LOCK (self);
  keep = self->keep_frame;
  src.source_id = source_id = g_strdup (self->source_id);
  GST_OBJECT_UNLOCK (self);
  src.frame = self->frames_seen++;
  src.unix_us = gst_nn_source_wallclock (GST_ELEMENT (self), &trans->segment,
      inbuf, &src.time_source);
  gst_nn_source_meta_add (outbuf, &src);
  if (keep) {
    GstBuffer *kept = gst_buffer_copy (inbuf); /* shares the memory */

    gst_nn_source_meta_add (kept, &src);
    gst_buffer_add_nn_frame_meta (outbuf, kept, &self->vinfo);
    gst_buffer_unref (kept);
  }
  g_free (source_id);

  return GST_FLOW_OK;
}

static gboolean
gst_nn_convert_transform_meta (GstBaseTransform *trans, GstBuffer *outbuf,
    GstMeta *meta, GstBuffer *inbuf)
{
  /* we attach a fresh transform meta describing this conversion */
  if (meta->info->api == GST_NN_TRANSFORM_META_API_TYPE
      || meta->info->api == GST_NN_FRAME_META_API_TYPE
      || gst_nn_source_meta_is (meta))
    return FALSE;
  /* video-specific metas (tags "video", "size", ...) do not apply to
   * tensors: the parent drops every tagged meta */
  return GST_BASE_TRANSFORM_CLASS (gst_nn_convert_parent_class)
      ->transform_meta (trans, outbuf, meta, inbuf);
}

static gboolean
gst_nn_convert_stop (GstBaseTransform *trans)
{
  GstNnConvert *self = GST_NN_CONVERT (trans);

  g_clear_pointer (&self->conv, nn_frame_converter_free);
  self->out_size = 0;
  self->frames_seen = 0;
  return TRUE;
}

static void
gst_nn_convert_set_property (GObject *object, guint prop_id,
    const GValue *value, GParamSpec *pspec)
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
    case PROP_STD: {
      const gchar *str = g_value_get_string (value);
      gboolean is_std = prop_id == PROP_STD;
      gdouble vals[MAX_CHANNELS];
      gint n;

      if (str == NULL)
        str = is_std ? DEFAULT_STD : DEFAULT_MEAN;
      if (!gst_nn_convert_parse_channel_values (str, vals, &n, is_std)) {
        GST_OBJECT_UNLOCK (self);
        g_warning (
            "nnconvert: invalid %s \"%s\": want one value, or three or four separated by commas%s",
            is_std ? "std" : "mean", str, is_std ? ", none zero" : "");
        return;
      }
      memcpy (is_std ? self->settings.std : self->settings.mean, vals,
          sizeof (vals));
      if (is_std)
        self->settings.std_n = n;
      else
        self->settings.mean_n = n;
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
    case PROP_REGION_X:
    case PROP_REGION_Y:
    case PROP_REGION_WIDTH:
    case PROP_REGION_HEIGHT:
      self->settings.region[prop_id - PROP_REGION_X] =
          g_value_get_double (value);
      break;
    case PROP_KEEP_FRAME:
      self->keep_frame = g_value_get_boolean (value);
      reconfigure = FALSE;
      break;
    case PROP_SOURCE_ID:
      g_free (self->source_id);
      self->source_id = g_value_dup_string (value);
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
gst_nn_convert_get_property (GObject *object, guint prop_id, GValue *value,
    GParamSpec *pspec)
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
    case PROP_REGION_X:
    case PROP_REGION_Y:
    case PROP_REGION_WIDTH:
    case PROP_REGION_HEIGHT:
      g_value_set_double (value,
          self->settings.region[prop_id - PROP_REGION_X]);
      break;
    case PROP_KEEP_FRAME:
      g_value_set_boolean (value, self->keep_frame);
      break;
    case PROP_SOURCE_ID:
      g_value_set_string (value, self->source_id);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
  GST_OBJECT_UNLOCK (self);
}

static void
gst_nn_convert_finalize (GObject *object)
{
  GstNnConvert *self = GST_NN_CONVERT (object);

  nn_frame_converter_free (self->conv);
  g_free (self->mean_str);
  g_free (self->std_str);
  g_free (self->source_id);

  G_OBJECT_CLASS (gst_nn_convert_parent_class)->finalize (object);
}

static void
gst_nn_convert_class_init (GstNnConvertClass *klass)
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
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS
              | GST_PARAM_MUTABLE_PLAYING));

  /**
   * GstNnConvert:channel-order:
   *
   * Order of the colour channels in the output tensor.
   */
  g_object_class_install_property (gobject_class, PROP_CHANNEL_ORDER,
      g_param_spec_enum ("channel-order", "Channel order",
          "Order of the colour channels in the output tensor",
          GST_TYPE_NN_CONVERT_CHANNEL_ORDER, DEFAULT_CHANNEL_ORDER,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS
              | GST_PARAM_MUTABLE_PLAYING));

  /**
   * GstNnConvert:mean:
   *
   * Per-channel mean subtracted from x/255, in output channel order: one
   * value for all channels, or one per channel (three or four) separated by
   * commas.
   */
  g_object_class_install_property (gobject_class, PROP_MEAN,
      g_param_spec_string ("mean", "Mean",
          "Per-channel mean subtracted from x/255, in output channel order (one value, or one per channel separated by commas, e.g. 0.485,0.456,0.406)",
          DEFAULT_MEAN,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS
              | GST_PARAM_MUTABLE_PLAYING));

  /**
   * GstNnConvert:std:
   *
   * Per-channel standard deviation dividing (x/255 - mean).
   */
  g_object_class_install_property (gobject_class, PROP_STD,
      g_param_spec_string ("std", "Standard deviation",
          "Per-channel divisor of (x/255 - mean), in output channel order (one value, or one per channel separated by commas, e.g. 0.229,0.224,0.225)",
          DEFAULT_STD,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS
              | GST_PARAM_MUTABLE_PLAYING));

  /**
   * GstNnConvert:width:
   *
   * Target width; 0 keeps the input width (or, with keep-aspect-ratio and
   * a height, follows the aspect ratio).
   */
  g_object_class_install_property (gobject_class, PROP_WIDTH,
      g_param_spec_int ("width", "Width",
          "Target width (0 = the input's, or from the aspect ratio)", 0,
          MAX_SIZE, DEFAULT_WIDTH,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS
              | GST_PARAM_MUTABLE_PLAYING));

  /**
   * GstNnConvert:height:
   *
   * Target height; 0 keeps the input height (or, with keep-aspect-ratio
   * and a width, follows the aspect ratio).
   */
  g_object_class_install_property (gobject_class, PROP_HEIGHT,
      g_param_spec_int ("height", "Height",
          "Target height (0 = the input's, or from the aspect ratio)", 0,
          MAX_SIZE, DEFAULT_HEIGHT,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS
              | GST_PARAM_MUTABLE_PLAYING));

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
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS
              | GST_PARAM_MUTABLE_PLAYING));

  /**
   * GstNnConvert:multiple-of:
   *
   * Round the output width and height to a multiple of this: up (padding)
   * with keep-aspect-ratio, to the nearest multiple (stretching) without.
   */
  g_object_class_install_property (gobject_class, PROP_MULTIPLE_OF,
      g_param_spec_uint ("multiple-of", "Multiple of",
          "Round the output size to a multiple of this (up and padded with keep-aspect-ratio, else to the nearest by stretching)",
          1, 4096, DEFAULT_MULTIPLE_OF,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS
              | GST_PARAM_MUTABLE_PLAYING));

  /**
   * GstNnConvert:pad-value:
   *
   * Value written into the padding, in output (normalised) units.
   */
  g_object_class_install_property (gobject_class, PROP_PAD_VALUE,
      g_param_spec_float ("pad-value", "Pad value",
          "Value of padded tensor elements (after normalisation)", -G_MAXFLOAT,
          G_MAXFLOAT, DEFAULT_PAD_VALUE,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS
              | GST_PARAM_MUTABLE_PLAYING));

  /**
   * GstNnConvert:max-upscale:
   *
   * With keep-aspect-ratio: the largest factor the frame is scaled up by to
   * fit the target size (0: no bound; 1: never scaled up, only down).
   * Frames larger than the target are still scaled down to fit.
   */
  g_object_class_install_property (gobject_class, PROP_MAX_UPSCALE,
      g_param_spec_double ("max-upscale", "Max upscale",
          "With keep-aspect-ratio, scale frames up by at most this factor to fit (0 = no bound, 1 = only scale down)",
          0.0, 64.0, DEFAULT_MAX_UPSCALE,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS
              | GST_PARAM_MUTABLE_PLAYING));

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
          "With keep-aspect-ratio, pad to the full target size (else only to multiple-of)",
          DEFAULT_PAD_TO_SIZE,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS
              | GST_PARAM_MUTABLE_PLAYING));

  /**
   * GstNnConvert:keep-frame:
   *
   * Attach a #GstNnFrameMeta holding the input frame to every tensor, so
   * nndbdecode, nnctcdecode and nnclassdecode can push the original frame
   * with the results.
   */
  g_object_class_install_property (gobject_class, PROP_KEEP_FRAME,
      g_param_spec_boolean ("keep-frame", "Keep frame",
          "Attach the input frame to each tensor (GstNnFrameMeta) for the post-processing elements",
          FALSE,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS
              | GST_PARAM_MUTABLE_PLAYING));

  /**
   * GstNnConvert:region-x:
   *
   * With #GstNnConvert:region-y, #GstNnConvert:region-width and
   * #GstNnConvert:region-height: the part of the frame converted, as
   * fractions of its width and height (default all of it).  The transform
   * meta maps the tensor back onto the whole frame, so decoders put their
   * results where they are: a detector run on tiles of a large frame
   * (pipelines/faces.sh) finds smaller objects.
   */
  {
    static const gchar *names[4] = { "region-x", "region-y", "region-width",
      "region-height" };
    static const gchar *blurbs[4] = {
      "Left edge of the frame's region converted, a fraction of the width",
      "Top edge of the frame's region converted, a fraction of the height",
      "Width of the region converted, a fraction of the frame's width",
      "Height of the region converted, a fraction of the frame's height",
    };

    for (gint i = 0; i < 4; i++)
      g_object_class_install_property (gobject_class, PROP_REGION_X + i,
          g_param_spec_double (names[i], names[i], blurbs[i],
              i < 2 ? 0.0 : 0.0001, 1.0, i < 2 ? 0.0 : 1.0,
              G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS
                  | GST_PARAM_MUTABLE_READY));
  }

  /**
   * GstNnConvert:source-id:
   *
   * The camera or stream the frames come from ("cam0", a URI): with the
   * frame's number and wall-clock time it goes on every tensor and kept
   * frame (GstNnSourceMeta, gstnnsourcemeta.h) and into every result
   * (nnmetapublish's JSON, nnpipeline-stats).
   */
  g_object_class_install_property (gobject_class, PROP_SOURCE_ID,
      g_param_spec_string ("source-id", "Source id",
          "Where the frames come from (a camera's name or URI), put on every tensor and kept frame with the frame's number and time",
          NULL,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS
              | GST_PARAM_MUTABLE_PLAYING));

  gst_element_class_add_static_pad_template (element_class, &sink_template);
  gst_element_class_add_static_pad_template (element_class, &src_template);
  gst_element_class_set_static_metadata (element_class,
      "Video to tensor converter", "Filter/Converter/Video/Tensor",
      "Converts video frames into normalised float32 tensors (NCHW or NHWC), optionally resized",
      "nnpipe developers");

  trans_class->transform_caps =
      GST_DEBUG_FUNCPTR (gst_nn_convert_transform_caps);
  trans_class->fixate_caps = GST_DEBUG_FUNCPTR (gst_nn_convert_fixate_caps);
  trans_class->get_unit_size = GST_DEBUG_FUNCPTR (gst_nn_convert_get_unit_size);
  trans_class->transform_size =
      GST_DEBUG_FUNCPTR (gst_nn_convert_transform_size);
  trans_class->set_caps = GST_DEBUG_FUNCPTR (gst_nn_convert_set_caps);
  trans_class->transform = GST_DEBUG_FUNCPTR (gst_nn_convert_transform);
  trans_class->transform_meta =
      GST_DEBUG_FUNCPTR (gst_nn_convert_transform_meta);
  trans_class->stop = GST_DEBUG_FUNCPTR (gst_nn_convert_stop);
  trans_class->passthrough_on_same_caps = FALSE;

  gst_type_mark_as_plugin_api (GST_TYPE_NN_CONVERT_LAYOUT, 0);
  gst_type_mark_as_plugin_api (GST_TYPE_NN_CONVERT_CHANNEL_ORDER, 0);
}

static void
gst_nn_convert_init (GstNnConvert *self)
{
  self->settings.layout = DEFAULT_LAYOUT;
  self->settings.channel_order = DEFAULT_CHANNEL_ORDER;
  gst_nn_convert_parse_channel_values (DEFAULT_MEAN, self->settings.mean,
      &self->settings.mean_n, FALSE);
  gst_nn_convert_parse_channel_values (DEFAULT_STD, self->settings.std,
      &self->settings.std_n, TRUE);
  self->mean_str = g_strdup (DEFAULT_MEAN);
  self->std_str = g_strdup (DEFAULT_STD);
  self->settings.width = DEFAULT_WIDTH;
  self->settings.height = DEFAULT_HEIGHT;
  self->settings.keep_aspect = DEFAULT_KEEP_ASPECT_RATIO;
  self->settings.multiple_of = DEFAULT_MULTIPLE_OF;
  self->settings.pad_value = DEFAULT_PAD_VALUE;
  self->settings.max_upscale = DEFAULT_MAX_UPSCALE;
  self->settings.pad_to_size = DEFAULT_PAD_TO_SIZE;
  self->settings.region[2] = self->settings.region[3] = 1.0;
}
