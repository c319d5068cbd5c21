/* GStreamer nnpipe plugin: nnconvert's settings -> geometry -> caps: the
 * mean/std property grammar, the output size for an input size (resize,
 * aspect ratio, multiple-of, padding) and the caps each side allows for the
 * other's (transform_caps).  The element is gstnnconvert.c, the per-frame
 * conversion plugins/pre/nnframeconvert.c. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "gstnnconvert-private.h"
#include "gstnntensorcaps.h"
#include "nnchannels.h"

#include <math.h>
#include <string.h>

/* Parse "0.485,0.456,0.406" (one value for every channel, or one per
 * channel: 3 or 4).  Commas, colons and blanks separate values. */
gboolean
gst_nn_convert_parse_channel_values (const gchar *str,
    gdouble out[MAX_CHANNELS], gint *n_out, gboolean nonzero)
{
  gdouble vals[MAX_CHANNELS];
  guint n = nn_channel_values_parse (str, vals, MAX_CHANNELS, nonzero);

  if (n != 1 && n != 3 && n != 4)
    return FALSE;
  for (gint c = 0; c < MAX_CHANNELS; c++)
    out[c] = vals[n == 1 ? 0 : MIN (c, (gint) n - 1)];
  *n_out = n;
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

static gboolean
region_is_whole (const GstNnConvertSettings *st)
{
  return st->region[0] == 0 && st->region[1] == 0 && st->region[2] >= 1
      && st->region[3] >= 1;
}

void
gst_nn_convert_region (const GstNnConvertSettings *st, gint in_w, gint in_h,
    gint r[4])
{
  r[0] = CLAMP ((gint) floor (st->region[0] * in_w), 0, in_w - 1);
  r[1] = CLAMP ((gint) floor (st->region[1] * in_h), 0, in_h - 1);
  r[2] = CLAMP ((gint) lround (st->region[2] * in_w), 1, in_w - r[0]);
  r[3] = CLAMP ((gint) lround (st->region[3] * in_h), 1, in_h - r[1]);
}

/* The output geometry for an in_w x in_h frame (of its region). */
void
gst_nn_convert_compute_geometry (const GstNnConvertSettings *st, gint in_w,
    gint in_h, GstNnConvertGeometry *g)
{
  gint tw = st->width, th = st->height;

  if (!region_is_whole (st) && in_w > 0 && in_h > 0) {
    gint r[4];

    gst_nn_convert_region (st, in_w, in_h, r);
    in_w = r[2];
    in_h = r[3];
  }

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
geometry_is_input_independent (const GstNnConvertSettings *st)
{
  return st->width > 0 && st->height > 0
      && (st->pad_to_size || !st->keep_aspect);
}

/* TRUE when output size == input size whatever the input. */
static gboolean
geometry_is_identity (const GstNnConvertSettings *st)
{
  return st->width == 0 && st->height == 0 && st->multiple_of <= 1
      && region_is_whole (st);
}

void
gst_nn_convert_layout_shape (GstNnConvertLayout layout, gint c, gint h, gint w,
    NnpShape *shape)
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

/* Which channel counts a video structure's format field allows. */
static void
structure_channels (const GstStructure *s, gboolean *has1, gboolean *has3)
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
make_tensor_structure (const GstNnConvertSettings *st, gint channels,
    NnpDType dtype, gint out_w, gint out_h, const GValue *framerate)
{
  GstStructure *s;

  s = gst_structure_new (GST_NN_TENSORS_MEDIA_TYPE, "format", G_TYPE_STRING,
      "static", "num_tensors", G_TYPE_INT, 1, "types", G_TYPE_STRING,
      nnp_dtype_name (dtype), NULL);
  if (out_w > 0 && out_h > 0) {
    NnpShape shape;
    gchar *dims;

    gst_nn_convert_layout_shape (st->layout, channels, out_h, out_w, &shape);
    dims = gst_nn_dims_to_string (&shape);
    gst_structure_set (s, "dimensions", G_TYPE_STRING, dims, NULL);
    g_free (dims);
  }
  if (framerate)
    gst_structure_set_value (s, "framerate", framerate);
  return s;
}

/* The element types nnconvert writes, the default first. */
static const NnpDType convert_dtypes[] = { NNP_DTYPE_FLOAT32,
  NNP_DTYPE_FLOAT16 };

gboolean
gst_nn_convert_dtype_supported (NnpDType dtype)
{
  for (guint d = 0; d < G_N_ELEMENTS (convert_dtypes); d++)
    if (convert_dtypes[d] == dtype)
      return TRUE;
  return FALSE;
}

/* video/x-raw -> other/tensors */
void
gst_nn_convert_caps_from_video (const GstNnConvertSettings *st,
    const GstStructure *s, GstCaps *out)
{
  gboolean has1, has3;
  gint in_w = 0, in_h = 0, out_w = 0, out_h = 0;
  const GValue *framerate = gst_structure_get_value (s, "framerate");

  structure_channels (s, &has1, &has3);

  if (geometry_is_input_independent (st)) {
    GstNnConvertGeometry g;

    /* the input size only changes the content area, not the output size */
    gst_nn_convert_compute_geometry (st, st->width, st->height, &g);
    out_w = g.out_w;
    out_h = g.out_h;
  } else if (gst_structure_get_int (s, "width", &in_w)
      && gst_structure_get_int (s, "height", &in_h) && in_w > 0 && in_h > 0) {
    GstNnConvertGeometry g;

    gst_nn_convert_compute_geometry (st, in_w, in_h, &g);
    out_w = g.out_w;
    out_h = g.out_h;
  }

  /* colour: 3 channels (the default) or 4 (with alpha, 255 where the frame
   * has none); gray: 1; float32 (the default) or float16 */
  for (guint d = 0; d < G_N_ELEMENTS (convert_dtypes); d++) {
    if (has3) {
      gst_caps_append_structure (out,
          make_tensor_structure (st, 3, convert_dtypes[d], out_w, out_h,
              framerate));
      gst_caps_append_structure (out,
          make_tensor_structure (st, 4, convert_dtypes[d], out_w, out_h,
              framerate));
    }
    if (has1)
      gst_caps_append_structure (out,
          make_tensor_structure (st, 1, convert_dtypes[d], out_w, out_h,
              framerate));
  }
}

/* color: 3 channels, RGB formats first; 4: formats with alpha first */
static void
set_formats (GstStructure *s, gint channels)
{
  if (channels >= 3) {
    GValue list = G_VALUE_INIT, v = G_VALUE_INIT;
    const gchar *fmts3[] = { "RGB", "BGR", "RGBA", "BGRA", "RGBx", "BGRx",
      "xRGB", "xBGR", "ARGB", "ABGR" };
    const gchar *fmts4[] = { "RGBA", "BGRA", "ARGB", "ABGR", "RGB", "BGR",
      "RGBx", "BGRx", "xRGB", "xBGR" };
    const gchar **fmts = channels == 4 ? fmts4 : fmts3;

    G_STATIC_ASSERT (G_N_ELEMENTS (fmts3) == G_N_ELEMENTS (fmts4));
    gst_value_list_init (&list, G_N_ELEMENTS (fmts3));
    g_value_init (&v, G_TYPE_STRING);
    for (guint i = 0; i < G_N_ELEMENTS (fmts3); i++) {
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
make_video_structure (gint channels, gint w, gint h, const GValue *framerate)
{
  GstStructure *s = gst_structure_new_empty ("video/x-raw");

  set_formats (s, channels);
  if (w > 0 && h > 0)
    gst_structure_set (s, "width", G_TYPE_INT, w, "height", G_TYPE_INT, h,
        NULL);
  else
    gst_structure_set (s, "width", GST_TYPE_INT_RANGE, 1, MAX_SIZE, "height",
        GST_TYPE_INT_RANGE, 1, MAX_SIZE, NULL);
  if (framerate)
    gst_structure_set_value (s, "framerate", framerate);
  else
    gst_structure_set (s, "framerate", GST_TYPE_FRACTION_RANGE, 0, 1, G_MAXINT,
        1, NULL);
  return s;
}

/* other/tensors -> video/x-raw */
void
gst_nn_convert_caps_from_tensors (const GstNnConvertSettings *st,
    const GstStructure *s, GstCaps *out)
{
  const GValue *framerate = gst_structure_get_value (s, "framerate");
  const GValue *num = gst_structure_get_value (s, "num_tensors");
  const GValue *types_field = gst_structure_get_value (s, "types");
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
  if (types_field != NULL) {
    gboolean any = FALSE;

    /* a fixed type or a list of them: one we write */
    for (guint d = 0; d < G_N_ELEMENTS (convert_dtypes) && !any; d++) {
      GValue v = G_VALUE_INIT;

      g_value_init (&v, G_TYPE_STRING);
      g_value_set_static_string (&v, nnp_dtype_name (convert_dtypes[d]));
      any = gst_value_can_intersect (types_field, &v);
      g_value_unset (&v);
    }
    if (!any)
      return;
  }

  if (dims == NULL) {
    /* anything, as long as it is one float32 or float16 tensor */
    gst_caps_append_structure (out, make_video_structure (3, 0, 0, framerate));
    gst_caps_append_structure (out, make_video_structure (1, 0, 0, framerate));
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
  if (c != 1 && c != 3 && c != 4)
    return;

  if (geometry_is_identity (st)) {
    gst_caps_append_structure (out, make_video_structure (c, w, h, framerate));
    return;
  }
  if (geometry_is_input_independent (st)) {
    GstNnConvertGeometry g;

    gst_nn_convert_compute_geometry (st, st->width, st->height, &g);
    if (g.out_w != w || g.out_h != h)
      return;
  }
  gst_caps_append_structure (out, make_video_structure (c, 0, 0, framerate));
}
