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
 * text ("nnpipe/text" text, or "nnpipe/class" label) above it in a built-in
 * 5x7 pixel font scaled by #GstNnOverlay:font-scale, white on black.
 * Characters outside printable ASCII are drawn as hollow boxes.
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
#include "nnfont.h"

#include <math.h>

GST_DEBUG_CATEGORY_STATIC (gst_nn_overlay_debug);
#define GST_CAT_DEFAULT gst_nn_overlay_debug

#define DEFAULT_COLOR 0xff00ff00
#define DEFAULT_THICKNESS 2
#define DEFAULT_FONT_SCALE 2
#define DEFAULT_DRAW_TEXT TRUE

enum
{
  PROP_0,
  PROP_COLOR,
  PROP_THICKNESS,
  PROP_FONT_SCALE,
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
  gint font_scale;
  gboolean draw_text;
};

G_DEFINE_TYPE (GstNnOverlay, gst_nn_overlay, GST_TYPE_VIDEO_FILTER);
GST_ELEMENT_REGISTER_DEFINE (nnoverlay, "nnoverlay", GST_RANK_NONE,
    GST_TYPE_NN_OVERLAY);

typedef struct
{
  guint8 *data;
  gint stride, pstride, width, height;
  gint off_r, off_g, off_b, off_a;      /* off_a < 0: no alpha */
} Canvas;

static inline void
put_pixel (const Canvas * cv, gint x, gint y, guint argb)
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
fill_rect (const Canvas * cv, gint x, gint y, gint w, gint h, guint argb)
{
  for (gint j = MAX (y, 0); j < MIN (y + h, cv->height); j++)
    for (gint i = MAX (x, 0); i < MIN (x + w, cv->width); i++)
      put_pixel (cv, i, j, argb);
}

static void
draw_line (const Canvas * cv, gdouble x0, gdouble y0, gdouble x1, gdouble y1,
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

static void
draw_glyph (const Canvas * cv, gint x, gint y, gint scale, gunichar c,
    guint argb)
{
  const guint8 *g = nn_font_glyph (c);

  if (g == NULL) {
    /* no glyph: a hollow box */
    fill_rect (cv, x, y, NN_FONT_COLS * scale, scale, argb);
    fill_rect (cv, x, y + (NN_FONT_ROWS - 1) * scale, NN_FONT_COLS * scale,
        scale, argb);
    fill_rect (cv, x, y, scale, NN_FONT_ROWS * scale, argb);
    fill_rect (cv, x + (NN_FONT_COLS - 1) * scale, y, scale,
        NN_FONT_ROWS * scale, argb);
    return;
  }
  for (gint col = 0; col < NN_FONT_COLS; col++)
    for (gint row = 0; row < NN_FONT_ROWS; row++)
      if (g[col] & (1 << row))
        fill_rect (cv, x + col * scale, y + row * scale, scale, scale, argb);
}

static void
draw_text (const Canvas * cv, gint x, gint y, gint scale, const gchar * text)
{
  glong n = g_utf8_strlen (text, -1);
  gint w = (gint) n * NN_FONT_CELL_W * scale + scale;
  gint h = NN_FONT_CELL_H * scale + scale;
  const gchar *p = text;

  /* keep the label on the frame */
  x = CLAMP (x, 0, MAX (cv->width - w, 0));
  y = CLAMP (y, 0, MAX (cv->height - h, 0));
  fill_rect (cv, x, y, w, h, 0xff000000);
  for (gint i = 0; *p; i++, p = g_utf8_next_char (p))
    draw_glyph (cv, x + scale + i * NN_FONT_CELL_W * scale, y + scale, scale,
        g_utf8_get_char (p), 0xffffffff);
}

static gchar *
roi_label (GstVideoRegionOfInterestMeta * roi)
{
  GstStructure *s = gst_video_region_of_interest_meta_get_param (roi,
      GST_NN_TEXT_PARAM_NAME);
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
  return NULL;
}

static GstFlowReturn
gst_nn_overlay_transform_frame_ip (GstVideoFilter * filter,
    GstVideoFrame * frame)
{
  GstNnOverlay *self = GST_NN_OVERLAY (filter);
  Canvas cv;
  gpointer state = NULL;
  GstMeta *m;
  guint color;
  gint thickness, scale;
  gboolean with_text;

  GST_OBJECT_LOCK (self);
  color = self->color;
  thickness = self->thickness;
  scale = self->font_scale;
  with_text = self->draw_text;
  GST_OBJECT_UNLOCK (self);

  cv.data = GST_VIDEO_FRAME_PLANE_DATA (frame, 0);
  cv.stride = GST_VIDEO_FRAME_PLANE_STRIDE (frame, 0);
  cv.pstride = GST_VIDEO_FRAME_COMP_PSTRIDE (frame, 0);
  cv.width = GST_VIDEO_FRAME_WIDTH (frame);
  cv.height = GST_VIDEO_FRAME_HEIGHT (frame);
  cv.off_r = GST_VIDEO_FRAME_COMP_POFFSET (frame, GST_VIDEO_COMP_R);
  cv.off_g = GST_VIDEO_FRAME_COMP_POFFSET (frame, GST_VIDEO_COMP_G);
  cv.off_b = GST_VIDEO_FRAME_COMP_POFFSET (frame, GST_VIDEO_COMP_B);
  cv.off_a = GST_VIDEO_INFO_HAS_ALPHA (&frame->info) ?
      (gint) GST_VIDEO_FRAME_COMP_POFFSET (frame, GST_VIDEO_COMP_A) : -1;

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
    draw_text (&cv, (gint) x0, (gint) y0 - (NN_FONT_CELL_H + 1) * scale -
        thickness, scale, label);
    g_free (label);
  }
  return GST_FLOW_OK;
}

static void
gst_nn_overlay_set_property (GObject * object, guint prop_id,
    const GValue * value, GParamSpec * pspec)
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
    case PROP_FONT_SCALE:
      self->font_scale = g_value_get_int (value);
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
gst_nn_overlay_get_property (GObject * object, guint prop_id, GValue * value,
    GParamSpec * pspec)
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
    case PROP_FONT_SCALE:
      g_value_set_int (value, self->font_scale);
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
gst_nn_overlay_class_init (GstNnOverlayClass * klass)
{
  GObjectClass *gobject_class = G_OBJECT_CLASS (klass);
  GstElementClass *element_class = GST_ELEMENT_CLASS (klass);
  GstVideoFilterClass *filter_class = GST_VIDEO_FILTER_CLASS (klass);
  const GParamFlags flags = G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
      GST_PARAM_MUTABLE_PLAYING;
  GstCaps *caps;

  GST_DEBUG_CATEGORY_INIT (gst_nn_overlay_debug, "nnoverlay", 0,
      "nnpipe result overlay");

  gobject_class->set_property = gst_nn_overlay_set_property;
  gobject_class->get_property = gst_nn_overlay_get_property;

  g_object_class_install_property (gobject_class, PROP_COLOR,
      g_param_spec_uint ("color", "Color",
          "Colour of the region outlines, as 0xAARRGGBB", 0, G_MAXUINT32,
          DEFAULT_COLOR, flags));
  g_object_class_install_property (gobject_class, PROP_THICKNESS,
      g_param_spec_int ("thickness", "Thickness",
          "Width of the region outlines in pixels", 1, 64, DEFAULT_THICKNESS,
          flags));
  g_object_class_install_property (gobject_class, PROP_FONT_SCALE,
      g_param_spec_int ("font-scale", "Font scale",
          "Size of a font pixel in frame pixels (glyphs are 5x7)", 1, 32,
          DEFAULT_FONT_SCALE, flags));
  g_object_class_install_property (gobject_class, PROP_DRAW_TEXT,
      g_param_spec_boolean ("draw-text", "Draw text",
          "Draw each region's text or label", DEFAULT_DRAW_TEXT, flags));

  caps = gst_caps_from_string (GST_VIDEO_CAPS_MAKE (VIDEO_FORMATS));
  gst_element_class_add_pad_template (element_class,
      gst_pad_template_new ("sink", GST_PAD_SINK, GST_PAD_ALWAYS, caps));
  gst_element_class_add_pad_template (element_class,
      gst_pad_template_new ("src", GST_PAD_SRC, GST_PAD_ALWAYS, caps));
  gst_caps_unref (caps);
  gst_element_class_set_static_metadata (element_class,
      "Result overlay", "Filter/Editor/Video",
      "Draws regions of interest and their text or labels onto video frames",
      "nnpipe developers");

  filter_class->transform_frame_ip =
      GST_DEBUG_FUNCPTR (gst_nn_overlay_transform_frame_ip);
}

static void
gst_nn_overlay_init (GstNnOverlay * self)
{
  self->color = DEFAULT_COLOR;
  self->thickness = DEFAULT_THICKNESS;
  self->font_scale = DEFAULT_FONT_SCALE;
  self->draw_text = DEFAULT_DRAW_TEXT;
}
