/* GStreamer nnpipe plugin: nnmask
 *
 * This library is free software; you can redistribute it and/or
 * modify it under the terms of the GNU Library General Public
 * License as published by the Free Software Foundation; either
 * version 2.1 of the License, or (at your option) any later version.
 */

/**
 * SECTION:element-nnmask
 * @title: nnmask
 * @short_description: apply a segmentation mask to the original frame
 *
 * nnmask takes a segmentation model's 1-channel mask (ISNet's salient
 * object, any model's foreground probability: a float32 tensor 1x1xHxW,
 * HxW or 1xHxWx1, output #GstNnMask:tensor of the model) with the original frame (nnconvert keep-frame=true
 * upstream) and pushes that frame with its background changed.  The mask
 * is scaled back onto the frame through nnconvert's transform meta
 * (letterbox undone, bilinear); each pixel's alpha is the mask's
 * probability (#GstNnMask:soft) or 0 / 1 at #GstNnMask:threshold
 * (#GstNnMask:sigmoid when the model gives logits).  #GstNnMask:mode:
 *
 * - "blur": the background blurred (three box-blur passes of
 *   #GstNnMask:blur-radius, by default a 50th of the frame's shorter side);
 * - "color": the background replaced by #GstNnMask:color;
 * - "alpha": the alpha written into the frame's alpha channel (RGBA, BGRA,
 *   ARGB, ABGR frames), for compositor to lay the object over another
 *   stream.
 *
 * Packed RGB-family frames; the algorithm is plugins/post/nnmask.c.
 *
 * ## Example launch lines
 * |[
 * gst-launch-1.0 filesrc location=person.jpg ! decodebin ! videoconvert ! \
 *     video/x-raw,format=RGB ! nnconvert width=1024 height=1024 \
 *       mean=0.5 std=1.0 keep-frame=true ! \
 *     nnstage model=isnet.onnx ! nnmask mode=blur ! videoconvert ! \
 *     pngenc ! filesink location=portrait.png
 * ]| blurs the background behind the salient object.
 */

#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "gstnnmask.h"
#include "nnmask.h"

#include <string.h>

GST_DEBUG_CATEGORY_STATIC (gst_nn_mask_debug);
#define GST_CAT_DEFAULT gst_nn_mask_debug

typedef enum
{
  MODE_BLUR,
  MODE_COLOR,
  MODE_ALPHA,
} Mode;

#define DEFAULT_MODE MODE_BLUR
#define DEFAULT_THRESHOLD 0.5
#define DEFAULT_COLOR 0xff00b140

enum
{
  PROP_0,
  PROP_MODE,
  PROP_THRESHOLD,
  PROP_SOFT,
  PROP_SIGMOID,
  PROP_BLUR_RADIUS,
  PROP_COLOR,
  PROP_TENSOR,
};

struct _GstNnMask
{
  GstNnDecoder parent;

  /* properties (object lock) */
  Mode mode;
  gdouble threshold;
  gboolean soft, sigmoid;
  gint blur_radius;
  guint color;
  guint tensor; /* which of the model's outputs is the mask */

  /* negotiated: the map */
  gint map_w, map_h, index;
};

G_DEFINE_TYPE (GstNnMask, gst_nn_mask, GST_TYPE_NN_DECODER);
GST_ELEMENT_REGISTER_DEFINE (nnmask, "nnmask", GST_RANK_NONE, GST_TYPE_NN_MASK);

GType
gst_nn_mask_mode_get_type (void)
{
  static GType type = 0;
  static const GEnumValue values[] = {
    { MODE_BLUR, "Background blurred", "blur" },
    { MODE_COLOR, "Background replaced by a colour", "color" },
    { MODE_ALPHA, "The mask into the frame's alpha channel", "alpha" },
    { 0, NULL, NULL },
  };

  if (g_once_init_enter (&type)) {
    GType t = g_enum_register_static ("GstNnMaskMode", values);

    g_once_init_leave (&type, t);
  }
  return type;
}

static gboolean
gst_nn_mask_set_info (GstNnDecoder *decoder, const GstNnTensorsInfo *info)
{
  GstNnMask *self = GST_NN_MASK (decoder);
  const NnpShape *s;
  guint index;
  gboolean ok;

  GST_OBJECT_LOCK (self);
  index = self->tensor;
  GST_OBJECT_UNLOCK (self);
  if (index >= info->n_tensors)
    goto bad;
  s = &info->tensors[index].shape;
  ok = info->tensors[index].dtype == NNP_DTYPE_FLOAT32 && s->rank >= 2;
  /* 1 x H x W x 1 (NHWC), else ... x H x W with leading 1s */
  if (ok && s->rank == 4 && s->dims[0] == 1 && s->dims[3] == 1 && s->dims[1] > 1
      && s->dims[2] > 1) {
    self->map_h = (gint) s->dims[1];
    self->map_w = (gint) s->dims[2];
  } else {
    for (gint i = 0; ok && i < s->rank - 2; i++)
      ok = s->dims[i] == 1;
    if (!ok)
      goto bad;
    self->map_h = (gint) s->dims[s->rank - 2];
    self->map_w = (gint) s->dims[s->rank - 1];
  }
  self->index = (gint) index;
  GST_DEBUG_OBJECT (self, "mask %dx%d (tensor %u)", self->map_w, self->map_h,
      index);
  return TRUE;

bad : {
  gchar *got = gst_nn_tensors_info_to_string (info);

  GST_ELEMENT_ERROR (self, CORE, NEGOTIATION, (NULL),
      ("expected tensor %u to be a float32 mask 1x1xHxW, HxW or 1xHxWx1, got %s",
          index, got));
  g_free (got);
  return FALSE;
}
}

static GstFlowReturn
gst_nn_mask_decode (GstNnDecoder *decoder, GstNnDecoderFrame *f)
{
  GstNnMask *self = GST_NN_MASK (decoder);
  GstNnFrameMapping fm;
  NnMaskMapping m;
  GstVideoFrame vf;
  const GstVideoFormatInfo *fi = f->info.finfo;
  NnPlane plane;
  guint8 *alpha;
  Mode mode;
  gdouble threshold;
  gboolean soft, sigmoid;
  gint radius, w = GST_VIDEO_INFO_WIDTH (&f->info);
  gint h = GST_VIDEO_INFO_HEIGHT (&f->info);
  guint color;

  if (!GST_VIDEO_FORMAT_INFO_IS_RGB (fi)
      || GST_VIDEO_INFO_N_PLANES (&f->info) != 1
      || GST_VIDEO_FORMAT_INFO_BITS (fi) != 8)
    goto bad_format;
  GST_OBJECT_LOCK (self);
  mode = self->mode;
  threshold = self->threshold;
  soft = self->soft;
  sigmoid = self->sigmoid;
  radius = self->blur_radius;
  color = self->color;
  GST_OBJECT_UNLOCK (self);
  if (mode == MODE_ALPHA && !GST_VIDEO_FORMAT_INFO_HAS_ALPHA (fi))
    goto no_alpha;

  gst_nn_frame_mapping_init (&fm, f, self->map_w, self->map_h);
  m.scale_x = fm.scale_x;
  m.scale_y = fm.scale_y;
  m.offset_x = fm.offset_x;
  m.offset_y = fm.offset_y;
  alpha = g_malloc ((gsize) w * h);
  nn_mask_alpha ((const gfloat *) f->data[self->index], self->map_w,
      self->map_h, self->map_w, &m, w, h, sigmoid, soft, threshold, alpha);

  if (!gst_video_frame_map (&vf, &f->info, f->frame, GST_MAP_READWRITE)) {
    g_free (alpha);
    GST_ELEMENT_ERROR (self, STREAM, FAILED, (NULL),
        ("could not map the frame for writing"));
    return GST_FLOW_ERROR;
  }
  memset (&plane, 0, sizeof (plane));
  plane.data = GST_VIDEO_FRAME_PLANE_DATA (&vf, 0);
  plane.stride = GST_VIDEO_FRAME_PLANE_STRIDE (&vf, 0);
  plane.pstride = GST_VIDEO_FRAME_COMP_PSTRIDE (&vf, 0);
  plane.width = w;
  plane.height = h;
  if (mode == MODE_ALPHA) {
    nn_mask_set_alpha (&plane, GST_VIDEO_FORMAT_INFO_POFFSET (fi, 3), alpha);
  } else if (mode == MODE_COLOR) {
    guint8 px[4] = { 0xff, 0xff, 0xff, 0xff };

    px[GST_VIDEO_FORMAT_INFO_POFFSET (fi, 0)] = (color >> 16) & 0xff;
    px[GST_VIDEO_FORMAT_INFO_POFFSET (fi, 1)] = (color >> 8) & 0xff;
    px[GST_VIDEO_FORMAT_INFO_POFFSET (fi, 2)] = color & 0xff;
    nn_mask_blend (&plane, alpha, NULL, px);
  } else {
    NnPlane bg = plane;

    bg.stride = w * plane.pstride;
    bg.data = g_malloc ((gsize) bg.stride * h);
    for (gint y = 0; y < h; y++)
      memcpy (bg.data + (gsize) y * bg.stride,
          plane.data + (gsize) y * plane.stride, bg.stride);
    nn_plane_blur (&bg, 0, 0, w, h,
        radius > 0 ? radius : MAX (MIN (w, h) / 50, 3));
    nn_mask_blend (&plane, alpha, &bg, NULL);
    g_free (bg.data);
  }
  gst_video_frame_unmap (&vf);
  g_free (alpha);
  return GST_FLOW_OK;

  /* ERRORS */
bad_format:
  GST_ELEMENT_ERROR (self, STREAM, FORMAT, (NULL),
      ("frames in %s: nnmask works on packed 8-bit RGB formats (RGB, BGR, RGBA, ...): convert before nnconvert",
          gst_video_format_to_string (GST_VIDEO_INFO_FORMAT (&f->info))));
  return GST_FLOW_ERROR;
no_alpha:
  GST_ELEMENT_ERROR (self, STREAM, FORMAT, (NULL),
      ("mode=alpha needs frames with an alpha channel (RGBA, BGRA, ARGB, ABGR), got %s",
          gst_video_format_to_string (GST_VIDEO_INFO_FORMAT (&f->info))));
  return GST_FLOW_ERROR;
}

static void
gst_nn_mask_set_property (GObject *object, guint prop_id, const GValue *value,
    GParamSpec *pspec)
{
  GstNnMask *self = GST_NN_MASK (object);

  GST_OBJECT_LOCK (self);
  switch (prop_id) {
    case PROP_MODE:
      self->mode = (Mode) g_value_get_enum (value);
      break;
    case PROP_THRESHOLD:
      self->threshold = g_value_get_double (value);
      break;
    case PROP_SOFT:
      self->soft = g_value_get_boolean (value);
      break;
    case PROP_SIGMOID:
      self->sigmoid = g_value_get_boolean (value);
      break;
    case PROP_BLUR_RADIUS:
      self->blur_radius = g_value_get_int (value);
      break;
    case PROP_COLOR:
      self->color = g_value_get_uint (value);
      break;
    case PROP_TENSOR:
      self->tensor = g_value_get_uint (value);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
  GST_OBJECT_UNLOCK (self);
}

static void
gst_nn_mask_get_property (GObject *object, guint prop_id, GValue *value,
    GParamSpec *pspec)
{
  GstNnMask *self = GST_NN_MASK (object);

  GST_OBJECT_LOCK (self);
  switch (prop_id) {
    case PROP_MODE:
      g_value_set_enum (value, self->mode);
      break;
    case PROP_THRESHOLD:
      g_value_set_double (value, self->threshold);
      break;
    case PROP_SOFT:
      g_value_set_boolean (value, self->soft);
      break;
    case PROP_SIGMOID:
      g_value_set_boolean (value, self->sigmoid);
      break;
    case PROP_BLUR_RADIUS:
      g_value_set_int (value, self->blur_radius);
      break;
    case PROP_COLOR:
      g_value_set_uint (value, self->color);
      break;
    case PROP_TENSOR:
      g_value_set_uint (value, self->tensor);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
  GST_OBJECT_UNLOCK (self);
}

static void
gst_nn_mask_class_init (GstNnMaskClass *klass)
{
  GObjectClass *gobject_class = G_OBJECT_CLASS (klass);
  GstElementClass *element_class = GST_ELEMENT_CLASS (klass);
  GstNnDecoderClass *decoder_class = GST_NN_DECODER_CLASS (klass);
  const GParamFlags flags =
      G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_PLAYING;

  GST_DEBUG_CATEGORY_INIT (gst_nn_mask_debug, "nnmask", 0,
      "nnpipe segmentation mask");

  gobject_class->set_property = gst_nn_mask_set_property;
  gobject_class->get_property = gst_nn_mask_get_property;

  g_object_class_install_property (gobject_class, PROP_MODE,
      g_param_spec_enum ("mode", "Mode", "What happens to the background",
          GST_TYPE_NN_MASK_MODE, DEFAULT_MODE, flags));
  g_object_class_install_property (gobject_class, PROP_THRESHOLD,
      g_param_spec_double ("threshold", "Threshold",
          "Least probability of the foreground (when not soft)", 0.0, 1.0,
          DEFAULT_THRESHOLD, flags));
  g_object_class_install_property (gobject_class, PROP_SOFT,
      g_param_spec_boolean ("soft", "Soft",
          "Alpha = the mask's probability (else 0 or 1 at the threshold)",
          FALSE, flags));
  g_object_class_install_property (gobject_class, PROP_SIGMOID,
      g_param_spec_boolean ("sigmoid", "Sigmoid",
          "The mask holds logits (apply the logistic function)", FALSE, flags));
  g_object_class_install_property (gobject_class, PROP_BLUR_RADIUS,
      g_param_spec_int ("blur-radius", "Blur radius",
          "mode=blur: box-blur radius in pixels (0: a 50th of the shorter side)",
          0, 1024, 0, flags));
  g_object_class_install_property (gobject_class, PROP_COLOR,
      g_param_spec_uint ("color", "Color",
          "mode=color: the background colour as 0xAARRGGBB", 0, G_MAXUINT32,
          DEFAULT_COLOR, flags));
  g_object_class_install_property (gobject_class, PROP_TENSOR,
      g_param_spec_uint ("tensor", "Tensor",
          "Which of the model's output tensors is the mask (ISNet: 0)", 0, 15,
          0,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS
              | GST_PARAM_MUTABLE_READY));
  gst_type_mark_as_plugin_api (GST_TYPE_NN_MASK_MODE, 0);

  gst_element_class_set_static_metadata (element_class, "Segmentation mask",
      "Filter/Effect/Video/Tensor",
      "Applies a segmentation model's mask to the original frame: background blurred, replaced by a colour, or as the alpha channel",
      "nnpipe developers");

  decoder_class->set_info = GST_DEBUG_FUNCPTR (gst_nn_mask_set_info);
  decoder_class->decode = GST_DEBUG_FUNCPTR (gst_nn_mask_decode);
}

static void
gst_nn_mask_init (GstNnMask *self)
{
  self->mode = DEFAULT_MODE;
  self->threshold = DEFAULT_THRESHOLD;
  self->color = DEFAULT_COLOR;
}
