/* GStreamer nnpipe plugin: nnredact
 *
 * This library is free software; you can redistribute it and/or
 * modify it under the terms of the GNU Library General Public
 * License as published by the Free Software Foundation; either
 * version 2.1 of the License, or (at your option) any later version.
 */

/**
 * SECTION:element-nnredact
 * @title: nnredact
 * @short_description: hide regions of interest in video frames
 *
 * nnredact changes the pixels inside every #GstVideoRegionOfInterestMeta
 * of the frame whose type (for nndetectdecode's detections: the label)
 * is one of #GstNnRedact:labels (all regions when empty), grown by
 * #GstNnRedact:margin of its size on each side: #GstNnRedact:mode
 * "pixelate" (blocks of #GstNnRedact:strength pixels replaced by their
 * mean), "blur" (a box blur of radius strength, three passes) or "fill"
 * (#GstNnRedact:color).  A strength of 0 scales with each region: blocks
 * of a tenth, a blur radius of a sixth of its shorter side (at least 4
 * pixels).  Pixels outside the regions are not touched.  Packed RGB
 * formats and I420 (whose chroma samples are redacted when they touch a
 * region).  The algorithm is plugins/post/nnredact.c.
 *
 * ## Example launch lines
 * |[
 * gst-launch-1.0 filesrc location=people.jpg ! decodebin ! videoconvert ! \
 *     video/x-raw,format=RGB ! nnconvert width=256 height=256 \
 *       keep-aspect-ratio=true layout=nhwc mean=0.5 std=0.5 keep-frame=true ! \
 *     nnstage model=face_detection_back_256x256_barracuda.onnx ! \
 *     nndetectdecode preset=blazeface ! nnredact mode=blur ! \
 *     videoconvert ! pngenc ! filesink location=blurred.png
 * ]| blurs every face (pipelines/faces.sh).
 */

#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "gstnnredact.h"
#include "nnredact.h"

#include <math.h>
#include <string.h>

GST_DEBUG_CATEGORY_STATIC (gst_nn_redact_debug);
#define GST_CAT_DEFAULT gst_nn_redact_debug

#define DEFAULT_MODE NN_REDACT_PIXELATE
#define DEFAULT_LABELS ""
#define DEFAULT_STRENGTH 0
#define DEFAULT_MARGIN 0.1
#define DEFAULT_COLOR 0xff000000

enum
{
  PROP_0,
  PROP_MODE,
  PROP_LABELS,
  PROP_STRENGTH,
  PROP_MARGIN,
  PROP_COLOR,
  PROP_REDACTED,
};

struct _GstNnRedact
{
  GstVideoFilter parent;

  /* properties (object lock) */
  NnRedactMode mode;
  gchar *labels_str;
  GQuark *labels; /* 0-terminated, NULL: every region */
  gint strength;
  gdouble margin;
  guint color;
  guint64 redacted; /* regions redacted since start */
};

#define FORMATS \
  "{ RGB, BGR, RGBx, BGRx, xRGB, xBGR, RGBA, BGRA, ARGB, ABGR, I420 }"

G_DEFINE_TYPE (GstNnRedact, gst_nn_redact, GST_TYPE_VIDEO_FILTER);
GST_ELEMENT_REGISTER_DEFINE (nnredact, "nnredact", GST_RANK_NONE,
    GST_TYPE_NN_REDACT);

GType
gst_nn_redact_mode_get_type (void)
{
  static GType type = 0;
  static const GEnumValue values[] = {
    { NN_REDACT_PIXELATE, "Blocks of strength pixels, each its mean",
        "pixelate" },
    { NN_REDACT_BLUR, "Box blur of radius strength, three passes", "blur" },
    { NN_REDACT_FILL, "Solid colour", "fill" },
    { 0, NULL, NULL },
  };

  if (g_once_init_enter (&type)) {
    GType t = g_enum_register_static ("GstNnRedactMode", values);

    g_once_init_leave (&type, t);
  }
  return type;
}

/* The image of a mapped frame, with the fill colour of each plane. */
static void
image_from_frame (GstVideoFrame *frame, guint argb, NnImage *img)
{
  const GstVideoFormatInfo *fi = frame->info.finfo;
  guint8 a = argb >> 24, r = (argb >> 16) & 0xff, g = (argb >> 8) & 0xff;
  guint8 b = argb & 0xff;

  memset (img, 0, sizeof (*img));
  if (GST_VIDEO_FRAME_FORMAT (frame) == GST_VIDEO_FORMAT_I420) {
    /* BT.601, limited range */
    guint8 yuv[3] = {
      (guint8) lround (16 + (65.481 * r + 128.553 * g + 24.966 * b) / 255),
      (guint8) lround (128 + (-37.797 * r - 74.203 * g + 112.0 * b) / 255),
      (guint8) lround (128 + (112.0 * r - 93.786 * g - 18.214 * b) / 255),
    };

    img->n_planes = 3;
    for (gint i = 0; i < 3; i++) {
      NnPlane *p = &img->planes[i];

      p->data = GST_VIDEO_FRAME_COMP_DATA (frame, i);
      p->stride = GST_VIDEO_FRAME_COMP_STRIDE (frame, i);
      p->pstride = 1;
      p->width = GST_VIDEO_FRAME_COMP_WIDTH (frame, i);
      p->height = GST_VIDEO_FRAME_COMP_HEIGHT (frame, i);
      p->sub_x = i ? 1 : 0;
      p->sub_y = i ? 1 : 0;
      p->fill[0] = yuv[i];
    }
    return;
  }
  img->n_planes = 1;
  img->planes[0].data = GST_VIDEO_FRAME_PLANE_DATA (frame, 0);
  img->planes[0].stride = GST_VIDEO_FRAME_PLANE_STRIDE (frame, 0);
  img->planes[0].pstride = GST_VIDEO_FRAME_COMP_PSTRIDE (frame, 0);
  img->planes[0].width = GST_VIDEO_FRAME_WIDTH (frame);
  img->planes[0].height = GST_VIDEO_FRAME_HEIGHT (frame);
  /* padding bytes (x) 255, then each component at its offset */
  memset (img->planes[0].fill, 0xff, sizeof (img->planes[0].fill));
  img->planes[0].fill[GST_VIDEO_FORMAT_INFO_POFFSET (fi, 0)] = r;
  img->planes[0].fill[GST_VIDEO_FORMAT_INFO_POFFSET (fi, 1)] = g;
  img->planes[0].fill[GST_VIDEO_FORMAT_INFO_POFFSET (fi, 2)] = b;
  if (GST_VIDEO_FORMAT_INFO_HAS_ALPHA (fi))
    img->planes[0].fill[GST_VIDEO_FORMAT_INFO_POFFSET (fi, 3)] = a;
}

static gboolean
label_wanted (const GQuark *labels, GQuark type)
{
  if (labels == NULL)
    return TRUE;
  for (const GQuark *q = labels; *q; q++)
    if (*q == type)
      return TRUE;
  return FALSE;
}

static GstFlowReturn
gst_nn_redact_transform_frame_ip (GstVideoFilter *filter, GstVideoFrame *frame)
{
  GstNnRedact *self = GST_NN_REDACT (filter);
  gpointer state = NULL;
  GstMeta *m;
  NnImage img;
  NnRedactMode mode;
  gint strength;
  gdouble margin;
  guint count = 0;

  GST_OBJECT_LOCK (self);
  mode = self->mode;
  strength = self->strength;
  margin = self->margin;
  image_from_frame (frame, self->color, &img);
  while ((m = gst_buffer_iterate_meta_filtered (frame->buffer, &state,
              GST_VIDEO_REGION_OF_INTEREST_META_API_TYPE))) {
    GstVideoRegionOfInterestMeta *roi = (GstVideoRegionOfInterestMeta *) m;
    gint dx = (gint) ceil (roi->w * margin), dy = (gint) ceil (roi->h * margin);
    gint s = strength;

    if (!label_wanted (self->labels, roi->roi_type) || roi->w == 0
        || roi->h == 0)
      continue;
    if (s <= 0)
      s = mode == NN_REDACT_BLUR ? MAX ((gint) MIN (roi->w, roi->h) / 6, 4)
                                 : MAX ((gint) MIN (roi->w, roi->h) / 10, 4);
    nn_redact_rect (&img, (gint) roi->x - dx, (gint) roi->y - dy,
        (gint) (roi->x + roi->w) + dx, (gint) (roi->y + roi->h) + dy, mode, s);
    count++;
  }
  self->redacted += count;
  GST_OBJECT_UNLOCK (self);
  GST_LOG_OBJECT (self, "%u regions redacted", count);
  return GST_FLOW_OK;
}

static gboolean
gst_nn_redact_start (GstBaseTransform *trans)
{
  GstNnRedact *self = GST_NN_REDACT (trans);

  GST_OBJECT_LOCK (self);
  self->redacted = 0;
  GST_OBJECT_UNLOCK (self);
  return TRUE;
}

static void
set_labels (GstNnRedact *self, const gchar *str)
{
  gchar **parts;
  guint n = 0;

  g_free (self->labels_str);
  g_free (self->labels);
  self->labels_str = g_strdup (str ? str : "");
  self->labels = NULL;
  parts = g_strsplit (self->labels_str, ",", -1);
  for (guint i = 0; parts[i]; i++)
    if (*g_strstrip (parts[i]))
      n++;
  if (n > 0) {
    self->labels = g_new0 (GQuark, n + 1);
    n = 0;
    for (guint i = 0; parts[i]; i++)
      if (*parts[i])
        self->labels[n++] = g_quark_from_string (parts[i]);
  }
  g_strfreev (parts);
}

static void
gst_nn_redact_set_property (GObject *object, guint prop_id, const GValue *value,
    GParamSpec *pspec)
{
  GstNnRedact *self = GST_NN_REDACT (object);

  GST_OBJECT_LOCK (self);
  switch (prop_id) {
    case PROP_MODE:
      self->mode = (NnRedactMode) g_value_get_enum (value);
      break;
    case PROP_LABELS:
      set_labels (self, g_value_get_string (value));
      break;
    case PROP_STRENGTH:
      self->strength = g_value_get_int (value);
      break;
    case PROP_MARGIN:
      self->margin = g_value_get_double (value);
      break;
    case PROP_COLOR:
      self->color = g_value_get_uint (value);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
  GST_OBJECT_UNLOCK (self);
}

static void
gst_nn_redact_get_property (GObject *object, guint prop_id, GValue *value,
    GParamSpec *pspec)
{
  GstNnRedact *self = GST_NN_REDACT (object);

  GST_OBJECT_LOCK (self);
  switch (prop_id) {
    case PROP_MODE:
      g_value_set_enum (value, self->mode);
      break;
    case PROP_LABELS:
      g_value_set_string (value, self->labels_str);
      break;
    case PROP_STRENGTH:
      g_value_set_int (value, self->strength);
      break;
    case PROP_MARGIN:
      g_value_set_double (value, self->margin);
      break;
    case PROP_COLOR:
      g_value_set_uint (value, self->color);
      break;
    case PROP_REDACTED:
      g_value_set_uint64 (value, self->redacted);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
  GST_OBJECT_UNLOCK (self);
}

static void
gst_nn_redact_finalize (GObject *object)
{
  GstNnRedact *self = GST_NN_REDACT (object);

  g_free (self->labels_str);
  g_free (self->labels);
  G_OBJECT_CLASS (gst_nn_redact_parent_class)->finalize (object);
}

static void
gst_nn_redact_class_init (GstNnRedactClass *klass)
{
  GObjectClass *gobject_class = G_OBJECT_CLASS (klass);
  GstElementClass *element_class = GST_ELEMENT_CLASS (klass);
  GstBaseTransformClass *trans_class = GST_BASE_TRANSFORM_CLASS (klass);
  GstVideoFilterClass *filter_class = GST_VIDEO_FILTER_CLASS (klass);
  const GParamFlags flags =
      G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_PLAYING;
  GstCaps *caps;

  GST_DEBUG_CATEGORY_INIT (gst_nn_redact_debug, "nnredact", 0,
      "nnpipe region redaction");

  gobject_class->set_property = gst_nn_redact_set_property;
  gobject_class->get_property = gst_nn_redact_get_property;
  gobject_class->finalize = gst_nn_redact_finalize;

  g_object_class_install_property (gobject_class, PROP_MODE,
      g_param_spec_enum ("mode", "Mode", "How the regions are hidden",
          GST_TYPE_NN_REDACT_MODE, DEFAULT_MODE, flags));
  g_object_class_install_property (gobject_class, PROP_LABELS,
      g_param_spec_string ("labels", "Labels",
          "Comma-separated region types (detection labels) to redact; empty: every region",
          DEFAULT_LABELS, flags));
  g_object_class_install_property (gobject_class, PROP_STRENGTH,
      g_param_spec_int ("strength", "Strength",
          "Pixelate block size or blur radius in pixels (0: from each region's size)",
          0, 1024, DEFAULT_STRENGTH, flags));
  g_object_class_install_property (gobject_class, PROP_MARGIN,
      g_param_spec_double ("margin", "Margin",
          "Each region grown by this fraction of its width / height on each side",
          0.0, 2.0, DEFAULT_MARGIN, flags));
  g_object_class_install_property (gobject_class, PROP_COLOR,
      g_param_spec_uint ("color", "Color",
          "Fill colour (mode=fill) as 0xAARRGGBB", 0, G_MAXUINT32,
          DEFAULT_COLOR, flags));
  g_object_class_install_property (gobject_class, PROP_REDACTED,
      g_param_spec_uint64 ("redacted", "Redacted",
          "Regions redacted since the element started", 0, G_MAXUINT64, 0,
          G_PARAM_READABLE | G_PARAM_STATIC_STRINGS));

  caps = gst_caps_from_string (GST_VIDEO_CAPS_MAKE (FORMATS));
  gst_element_class_add_pad_template (element_class,
      gst_pad_template_new ("sink", GST_PAD_SINK, GST_PAD_ALWAYS, caps));
  gst_element_class_add_pad_template (element_class,
      gst_pad_template_new ("src", GST_PAD_SRC, GST_PAD_ALWAYS, caps));
  gst_caps_unref (caps);
  gst_element_class_set_static_metadata (element_class, "Region redaction",
      "Filter/Effect/Video",
      "Pixelates, blurs or fills the regions of interest of chosen labels (faces, plates) in video frames",
      "nnpipe developers");

  trans_class->start = GST_DEBUG_FUNCPTR (gst_nn_redact_start);
  filter_class->transform_frame_ip =
      GST_DEBUG_FUNCPTR (gst_nn_redact_transform_frame_ip);
  gst_type_mark_as_plugin_api (GST_TYPE_NN_REDACT_MODE, 0);
}

static void
gst_nn_redact_init (GstNnRedact *self)
{
  self->mode = DEFAULT_MODE;
  self->labels_str = g_strdup (DEFAULT_LABELS);
  self->strength = DEFAULT_STRENGTH;
  self->margin = DEFAULT_MARGIN;
  self->color = DEFAULT_COLOR;
}
