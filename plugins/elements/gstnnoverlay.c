/* GStreamer nnpipe plugin: nnoverlay
 *
 * This library is free software; you can redistribute it and/or
 * modify it under the terms of the GNU Library General Public
 * License as published by the Free Software Foundation; either
 * version 2.1 of the License, or (at your option) any later version.
 */

/**
 * SECTION:element-nnoverlay
 * @title: nnoverlay
 * @short_description: draw regions of interest and their text on frames
 *
 * nnoverlay draws, in place, every #GstVideoRegionOfInterestMeta of a frame:
 * the region's outline (the rotated box from its "nnpipe/text" structure
 * when there is one, else its rectangle) in #GstNnOverlay:color, and its
 * text ("nnpipe/text" text, or "nnpipe/class" label) above it, white on
 * black, with Pango in #GstNnOverlay:font-desc.  Text is UTF-8: the
 * recogniser's CJK characters are drawn with whatever font fontconfig finds
 * for them (tools/setup.sh installs fonts-wqy-microhei).
 *
 * The results travel with the frames themselves (nndbdecode, nnctcdecode
 * and nnclassdecode push the original frames with their metas), so there is
 * nothing to match by timestamp.
 *
 * ## Example launch lines
 * |[
 * ... ! nnctcdecode keys=.cache/models/ppocr_keys_v1.txt location=- ! nnoverlay ! videoconvert ! \
 *     pngenc ! filesink location=ocr.png
 * ]| writes the annotated frame (pipelines/ocr.sh).
 */

#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "gstnnoverlay.h"
#include "gstnnresults.h"

#include <math.h>
#include <pango/pangocairo.h>

GST_DEBUG_CATEGORY_STATIC (gst_nn_overlay_debug);
#define GST_CAT_DEFAULT gst_nn_overlay_debug

#define DEFAULT_COLOR 0xff00ff00
#define DEFAULT_THICKNESS 2
#define DEFAULT_FONT_DESC "Sans 14"
#define DEFAULT_DRAW_TEXT TRUE

enum
{
  PROP_0,
  PROP_COLOR,
  PROP_THICKNESS,
  PROP_FONT_DESC,
  PROP_DRAW_TEXT,
};

#define VIDEO_FORMATS \
  "{ RGB, BGR, RGBA, BGRA, RGBx, BGRx, xRGB, xBGR, ARGB, ABGR }"

struct _GstNnOverlay
{
  GstVideoFilter parent;

  /* properties (object lock) */
  guint color;
  gint thickness;
  gchar *font_desc;
  gboolean draw_text;

  /* streaming thread only */
  PangoFontMap *font_map; /* owned */
  PangoLayout *layout;    /* owned, from a context of font_map */
  gchar *layout_font;     /* font_desc the layout was set up with */
};

G_DEFINE_TYPE (GstNnOverlay, gst_nn_overlay, GST_TYPE_VIDEO_FILTER);
GST_ELEMENT_REGISTER_DEFINE (nnoverlay, "nnoverlay", GST_RANK_NONE,
    GST_TYPE_NN_OVERLAY);

typedef struct
{
  guint8 *data;
  gint stride, pstride, width, height;
  gint off_r, off_g, off_b, off_a; /* off_a < 0: no alpha */
} Canvas;

static inline void
put_pixel (const Canvas *cv, gint x, gint y, guint argb)
{
  guint8 *p;

  if (x < 0 || y < 0 || x >= cv->width || y >= cv->height)
    return;
  p = cv->data + (gsize) y * cv->stride + (gsize) x * cv->pstride;
  p[cv->off_r] = (argb >> 16) & 0xff;
  p[cv->off_g] = (argb >> 8) & 0xff;
  p[cv->off_b] = argb & 0xff;
  if (cv->off_a >= 0)
    p[cv->off_a] = argb >> 24;
}

static void
fill_rect (const Canvas *cv, gint x, gint y, gint w, gint h, guint argb)
{
  for (gint j = MAX (y, 0); j < MIN (y + h, cv->height); j++)
    for (gint i = MAX (x, 0); i < MIN (x + w, cv->width); i++)
      put_pixel (cv, i, j, argb);
}

static void
draw_line (const Canvas *cv, gdouble x0, gdouble y0, gdouble x1, gdouble y1,
    gint thickness, guint argb)
{
  gdouble dx = x1 - x0, dy = y1 - y0;
  gint n = (gint) ceil (MAX (fabs (dx), fabs (dy))) + 1;
  gint h = thickness / 2;

  for (gint i = 0; i <= n; i++) {
    gint x = (gint) floor (x0 + dx * i / n);
    gint y = (gint) floor (y0 + dy * i / n);

    fill_rect (cv, x - h, y - h, thickness, thickness, argb);
  }
}

/* Blend an ARGB32 (premultiplied) Cairo surface onto the frame at x, y. */
static void
blend_surface (const Canvas *cv, cairo_surface_t *surface, gint x, gint y)
{
  const guint8 *src = cairo_image_surface_get_data (surface);
  gint sstride = cairo_image_surface_get_stride (surface);
  gint w = cairo_image_surface_get_width (surface);
  gint h = cairo_image_surface_get_height (surface);

  for (gint j = MAX (0, -y); j < h && y + j < cv->height; j++) {
    const guint32 *row = (const guint32 *) (src + (gsize) j * sstride);

    for (gint i = MAX (0, -x); i < w && x + i < cv->width; i++) {
      guint32 s = row[i];
      guint a = s >> 24;
      guint8 *p = cv->data + (gsize) (y + j) * cv->stride
          + (gsize) (x + i) * cv->pstride;

      if (a == 0)
        continue;
      /* premultiplied: out = src + dst * (255 - a) / 255 */
      p[cv->off_r] = ((s >> 16) & 0xff) + p[cv->off_r] * (255 - a) / 255;
      p[cv->off_g] = ((s >> 8) & 0xff) + p[cv->off_g] * (255 - a) / 255;
      p[cv->off_b] = (s & 0xff) + p[cv->off_b] * (255 - a) / 255;
      if (cv->off_a >= 0)
        p[cv->off_a] = a + p[cv->off_a] * (255 - a) / 255;
    }
  }
}

/* Draw @text (UTF-8) white on a black box whose bottom-left corner is
 * (x, bottom), kept on the frame. */
static void
draw_text (const Canvas *cv, PangoLayout *layout, gint x, gint bottom,
    const gchar *text)
{
  PangoRectangle ink, logical;
  cairo_surface_t *surface;
  cairo_t *cr;
  gint pad = 2, w, h;
  gchar *valid = g_utf8_make_valid (text, -1);

  pango_layout_set_text (layout, valid, -1);
  g_free (valid);
  pango_layout_get_pixel_extents (layout, &ink, &logical);
  w = logical.width + 2 * pad;
  h = logical.height + 2 * pad;
  if (w <= 2 * pad || h <= 2 * pad)
    return;
  surface = cairo_image_surface_create (CAIRO_FORMAT_ARGB32, w, h);
  cr = cairo_create (surface);
  cairo_set_source_rgb (cr, 0, 0, 0);
  cairo_paint (cr);
  cairo_set_source_rgb (cr, 1, 1, 1);
  cairo_move_to (cr, pad - logical.x, pad - logical.y);
  pango_cairo_update_layout (cr, layout);
  pango_cairo_show_layout (cr, layout);
  cairo_destroy (cr);
  cairo_surface_flush (surface);

  /* keep the label on the frame */
  x = CLAMP (x, 0, MAX (cv->width - w, 0));
  blend_surface (cv, surface, x,
      CLAMP (bottom - h, 0, MAX (cv->height - h, 0)));
  cairo_surface_destroy (surface);
}

static gchar *
roi_label (GstVideoRegionOfInterestMeta *roi)
{
  GstStructure *s =
      gst_video_region_of_interest_meta_get_param (roi, GST_NN_TEXT_PARAM_NAME);
  const gchar *t;

  if (s && (t = gst_structure_get_string (s, "text")))
    return g_strdup (t);
  s = gst_video_region_of_interest_meta_get_param (roi,
      GST_NN_CLASS_PARAM_NAME);
  if (s && (t = gst_structure_get_string (s, "label"))) {
    gdouble score = 0;

    gst_structure_get_double (s, "score", &score);
    return g_strdup_printf ("%s %.2f", t, score);
  }
  /* a detection: "label score", and "#track" once nntrack followed it */
  s = gst_video_region_of_interest_meta_get_param (roi,
      GST_NN_DETECTION_PARAM_NAME);
  if (s && (t = gst_structure_get_string (s, "label"))) {
    gdouble score = 0;
    gint track;

    gst_structure_get_double (s, "confidence", &score);
    if (gst_structure_get_int (s, "object_id", &track))
      return g_strdup_printf ("%s %.2f #%d", t, score, track);
    return g_strdup_printf ("%s %.2f", t, score);
  }
  return NULL;
}

/* (Re)make the layout the labels are drawn with; @font NULL keeps the
 * font it has. */
static void
prepare_layout (GstNnOverlay *self, const gchar *font)
{
  PangoFontDescription *desc;

  if (self->font_map == NULL)
    self->font_map = pango_cairo_font_map_new ();
  if (self->layout == NULL) {
    PangoContext *ctx = pango_font_map_create_context (self->font_map);

    self->layout = pango_layout_new (ctx);
    g_object_unref (ctx);
  }
  if (font == NULL && self->layout_font != NULL)
    return;
  if (font != NULL) {
    g_free (self->layout_font);
    self->layout_font = g_strdup (font);
  }
  desc = pango_font_description_from_string (
      self->layout_font ? self->layout_font : DEFAULT_FONT_DESC);
  pango_layout_set_font_description (self->layout, desc);
  pango_font_description_free (desc);
  GST_DEBUG_OBJECT (self, "labels in font '%s'", self->layout_font);
}

static void
clear_layout (GstNnOverlay *self)
{
  g_clear_object (&self->layout);
  g_clear_object (&self->font_map);
  g_clear_pointer (&self->layout_font, g_free);
}

static gboolean
gst_nn_overlay_stop (GstBaseTransform *trans)
{
  clear_layout (GST_NN_OVERLAY (trans));
  return TRUE;
}

static void
gst_nn_overlay_finalize (GObject *object)
{
  GstNnOverlay *self = GST_NN_OVERLAY (object);

  clear_layout (self);
  g_free (self->font_desc);
  G_OBJECT_CLASS (gst_nn_overlay_parent_class)->finalize (object);
}

static GstFlowReturn
gst_nn_overlay_transform_frame_ip (GstVideoFilter *filter, GstVideoFrame *frame)
{
  GstNnOverlay *self = GST_NN_OVERLAY (filter);
  Canvas cv;
  gpointer state = NULL;
  GstMeta *m;
  guint color;
  gint thickness;
  gboolean with_text;
  gchar *font = NULL;

  GST_OBJECT_LOCK (self);
  color = self->color;
  thickness = self->thickness;
  with_text = self->draw_text;
  if (with_text && g_strcmp0 (self->font_desc, self->layout_font) != 0)
    font = g_strdup (self->font_desc);
  GST_OBJECT_UNLOCK (self);

  if (with_text && (self->layout == NULL || font != NULL))
    prepare_layout (self, font);
  g_free (font);

  cv.data = GST_VIDEO_FRAME_PLANE_DATA (frame, 0);
  cv.stride = GST_VIDEO_FRAME_PLANE_STRIDE (frame, 0);
  cv.pstride = GST_VIDEO_FRAME_COMP_PSTRIDE (frame, 0);
  cv.width = GST_VIDEO_FRAME_WIDTH (frame);
  cv.height = GST_VIDEO_FRAME_HEIGHT (frame);
  cv.off_r = GST_VIDEO_FRAME_COMP_POFFSET (frame, GST_VIDEO_COMP_R);
  cv.off_g = GST_VIDEO_FRAME_COMP_POFFSET (frame, GST_VIDEO_COMP_G);
  cv.off_b = GST_VIDEO_FRAME_COMP_POFFSET (frame, GST_VIDEO_COMP_B);
  cv.off_a = GST_VIDEO_INFO_HAS_ALPHA (&frame->info)
      ? (gint) GST_VIDEO_FRAME_COMP_POFFSET (frame, GST_VIDEO_COMP_A)
      : -1;

  while ((m = gst_buffer_iterate_meta_filtered (frame->buffer, &state,
              GST_VIDEO_REGION_OF_INTEREST_META_API_TYPE))) {
    GstVideoRegionOfInterestMeta *roi = (GstVideoRegionOfInterestMeta *) m;
    NnQuad q;
    gchar *label;
    gdouble x0, y0;

    gst_nn_roi_get_quad (roi, &q);
    for (gint i = 0; i < 4; i++)
      draw_line (&cv, q.p[i].x, q.p[i].y, q.p[(i + 1) % 4].x,
          q.p[(i + 1) % 4].y, thickness, color);
    if (!with_text || (label = roi_label (roi)) == NULL)
      continue;
    nn_quad_bounds (&q, &x0, &y0, NULL, NULL);
    draw_text (&cv, self->layout, (gint) x0, (gint) y0 - thickness, label);
    g_free (label);
  }
  return GST_FLOW_OK;
}

static void
gst_nn_overlay_set_property (GObject *object, guint prop_id,
    const GValue *value, GParamSpec *pspec)
{
  GstNnOverlay *self = GST_NN_OVERLAY (object);

  GST_OBJECT_LOCK (self);
  switch (prop_id) {
    case PROP_COLOR:
      self->color = g_value_get_uint (value);
      break;
    case PROP_THICKNESS:
      self->thickness = g_value_get_int (value);
      break;
    case PROP_FONT_DESC:
      g_free (self->font_desc);
      self->font_desc = g_value_dup_string (value);
      break;
    case PROP_DRAW_TEXT:
      self->draw_text = g_value_get_boolean (value);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
  GST_OBJECT_UNLOCK (self);
}

static void
gst_nn_overlay_get_property (GObject *object, guint prop_id, GValue *value,
    GParamSpec *pspec)
{
  GstNnOverlay *self = GST_NN_OVERLAY (object);

  GST_OBJECT_LOCK (self);
  switch (prop_id) {
    case PROP_COLOR:
      g_value_set_uint (value, self->color);
      break;
    case PROP_THICKNESS:
      g_value_set_int (value, self->thickness);
      break;
    case PROP_FONT_DESC:
      g_value_set_string (value, self->font_desc);
      break;
    case PROP_DRAW_TEXT:
      g_value_set_boolean (value, self->draw_text);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
  GST_OBJECT_UNLOCK (self);
}

static void
gst_nn_overlay_class_init (GstNnOverlayClass *klass)
{
  GObjectClass *gobject_class = G_OBJECT_CLASS (klass);
  GstElementClass *element_class = GST_ELEMENT_CLASS (klass);
  GstVideoFilterClass *filter_class = GST_VIDEO_FILTER_CLASS (klass);
  const GParamFlags flags =
      G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_PLAYING;
  GstCaps *caps;

  GST_DEBUG_CATEGORY_INIT (gst_nn_overlay_debug, "nnoverlay", 0,
      "nnpipe result overlay");

  gobject_class->set_property = gst_nn_overlay_set_property;
  gobject_class->get_property = gst_nn_overlay_get_property;
  gobject_class->finalize = gst_nn_overlay_finalize;

  g_object_class_install_property (gobject_class, PROP_COLOR,
      g_param_spec_uint ("color", "Color",
          "Colour of the region outlines, as 0xAARRGGBB", 0, G_MAXUINT32,
          DEFAULT_COLOR, flags));
  g_object_class_install_property (gobject_class, PROP_THICKNESS,
      g_param_spec_int ("thickness", "Thickness",
          "Width of the region outlines in pixels", 1, 64, DEFAULT_THICKNESS,
          flags));
  g_object_class_install_property (gobject_class, PROP_FONT_DESC,
      g_param_spec_string ("font-desc", "Font description",
          "Pango font description of the labels (as textoverlay's), e.g. \"Sans Bold 18\"",
          DEFAULT_FONT_DESC, flags));
  g_object_class_install_property (gobject_class, PROP_DRAW_TEXT,
      g_param_spec_boolean ("draw-text", "Draw text",
          "Draw each region's text or label", DEFAULT_DRAW_TEXT, flags));

  caps = gst_caps_from_string (GST_VIDEO_CAPS_MAKE (VIDEO_FORMATS));
  gst_element_class_add_pad_template (element_class,
      gst_pad_template_new ("sink", GST_PAD_SINK, GST_PAD_ALWAYS, caps));
  gst_element_class_add_pad_template (element_class,
      gst_pad_template_new ("src", GST_PAD_SRC, GST_PAD_ALWAYS, caps));
  gst_caps_unref (caps);
  gst_element_class_set_static_metadata (element_class, "Result overlay",
      "Filter/Editor/Video",
      "Draws regions of interest and their text or labels onto video frames",
      "nnpipe developers");

  GST_BASE_TRANSFORM_CLASS (klass)->stop =
      GST_DEBUG_FUNCPTR (gst_nn_overlay_stop);
  filter_class->transform_frame_ip =
      GST_DEBUG_FUNCPTR (gst_nn_overlay_transform_frame_ip);
}

static void
gst_nn_overlay_init (GstNnOverlay *self)
{
  self->color = DEFAULT_COLOR;
  self->thickness = DEFAULT_THICKNESS;
  self->font_desc = g_strdup (DEFAULT_FONT_DESC);
  self->draw_text = DEFAULT_DRAW_TEXT;
}
