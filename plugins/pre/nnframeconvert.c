/* nnpipe plugin: the per-frame conversion of nnconvert without GStreamer
 * (nnframeconvert.h): normalisation tables, bilinear resize tables, the
 * direct and the resizing kernels, the padding fill. */
#include "nnframeconvert.h"

#include <string.h>

struct _NnFrameConverter
{
  NnFrameConvertInfo info;
  gfloat lut[NN_FRAME_CONVERT_MAX_CHANNELS]
            [256]; /* exact per-sample normalisation */
  gfloat mul[NN_FRAME_CONVERT_MAX_CHANNELS],
      add[NN_FRAME_CONVERT_MAX_CHANNELS]; /* the same as v * mul + add */
  gboolean resize;
  gint *x_off0, *x_off1; /* byte offsets of the two source pixels */
  gfloat *x_frac;
  gint *y_row0, *y_row1;
  gfloat *y_frac;
  gfloat *hrows[2]; /* horizontally resized rows, planar */
  gint hrow_src[2]; /* which source row each holds, -1 none */
  gfloat *scratch;  /* float16 output: the float32 tensor first */
};

/* Bilinear source positions with half-pixel centres:
 * src = (dst + 0.5) * in / out - 0.5, clamped to the frame. */
static void
make_axis_table (gint in, gint out, gint step, gint *off0, gint *off1,
    gfloat *frac)
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

NnFrameConverter *
nn_frame_converter_new (const NnFrameConvertInfo *info)
{
  NnFrameConverter *conv;

  g_return_val_if_fail (info != NULL && info->channels >= 1
          && info->channels <= NN_FRAME_CONVERT_MAX_CHANNELS
          && info->content_w <= info->out_w && info->content_h <= info->out_h
          && (info->dtype == NNP_DTYPE_UNDEFINED
              || info->dtype == NNP_DTYPE_FLOAT32
              || info->dtype == NNP_DTYPE_FLOAT16),
      NULL);
  conv = g_new0 (NnFrameConverter, 1);
  conv->info = *info;
  if (info->dtype == NNP_DTYPE_FLOAT16)
    conv->scratch =
        g_new (gfloat, (gsize) info->out_w * info->out_h * info->channels);
  for (gint c = 0; c < info->channels; c++) {
    gdouble mean = info->mean[c], std = info->std[c];

    for (gint v = 0; v < 256; v++)
      conv->lut[c][v] = (gfloat) (((gdouble) v / 255.0 - mean) / std);
    conv->mul[c] = (gfloat) (1.0 / (255.0 * std));
    conv->add[c] = (gfloat) (-mean / std);
  }

  conv->resize = info->content_w != info->in_w || info->content_h != info->in_h;
  if (conv->resize) {
    gint cw = info->content_w, ch = info->content_h;

    conv->x_off0 = g_new (gint, cw);
    conv->x_off1 = g_new (gint, cw);
    conv->x_frac = g_new (gfloat, cw);
    conv->y_row0 = g_new (gint, ch);
    conv->y_row1 = g_new (gint, ch);
    conv->y_frac = g_new (gfloat, ch);
    make_axis_table (info->in_w, cw, info->pstride, conv->x_off0, conv->x_off1,
        conv->x_frac);
    make_axis_table (info->in_h, ch, 1, conv->y_row0, conv->y_row1,
        conv->y_frac);
    conv->hrows[0] = g_new (gfloat, (gsize) cw * info->channels);
    conv->hrows[1] = g_new (gfloat, (gsize) cw * info->channels);
  }
  conv->hrow_src[0] = conv->hrow_src[1] = -1;
  return conv;
}

void
nn_frame_converter_free (NnFrameConverter *conv)
{
  if (conv == NULL)
    return;
  g_free (conv->x_off0);
  g_free (conv->x_off1);
  g_free (conv->x_frac);
  g_free (conv->y_row0);
  g_free (conv->y_row1);
  g_free (conv->y_frac);
  g_free (conv->hrows[0]);
  g_free (conv->hrows[1]);
  g_free (conv->scratch);
  g_free (conv);
}

gboolean
nn_frame_converter_resizes (const NnFrameConverter *conv)
{
  g_return_val_if_fail (conv != NULL, FALSE);
  return conv->resize;
}

/* Pointer to the output element of channel c, row y, column 0, and the
 * step between columns. */
static inline gfloat *
out_ptr (const NnFrameConverter *conv, gfloat *out, gint c, gint y, gint *step)
{
  gint W = conv->info.out_w, H = conv->info.out_h, C = conv->info.channels;

  if (conv->info.nchw) {
    *step = 1;
    return out + ((gsize) c * H + y) * W;
  } else {
    *step = C;
    return out + (gsize) y * W * C + c;
  }
}

static void
convert_direct (NnFrameConverter *conv, const guint8 *base, gint stride,
    gfloat *out)
{
  gint W = conv->info.content_w, H = conv->info.content_h;
  gint C = conv->info.channels, ps = conv->info.pstride;

  for (gint y = 0; y < H; y++) {
    const guint8 *row = base + (gsize) y * stride;

    for (gint c = 0; c < C; c++) {
      const gfloat *lut = conv->lut[c];
      const guint8 *p = row + conv->info.chan_offset[c];
      gint step;
      gfloat *o = out_ptr (conv, out, c, y, &step);

      if (conv->info.chan_offset[c] == NN_FRAME_CONVERT_OPAQUE) {
        for (gint x = 0; x < W; x++, o += step)
          *o = lut[255];
        continue;
      }
      for (gint x = 0; x < W; x++, p += ps, o += step)
        *o = lut[*p];
    }
  }
}

/* Horizontally resample source row `y` into a planar float row. */
static void
resize_row (NnFrameConverter *conv, const guint8 *row, gfloat *dst)
{
  gint cw = conv->info.content_w;

  for (gint c = 0; c < conv->info.channels; c++) {
    const guint8 *src = row + conv->info.chan_offset[c];
    gfloat *d = dst + (gsize) c * cw;

    if (conv->info.chan_offset[c] == NN_FRAME_CONVERT_OPAQUE) {
      for (gint x = 0; x < cw; x++)
        d[x] = 255.0f;
      continue;
    }
    for (gint x = 0; x < cw; x++) {
      gfloat p0 = src[conv->x_off0[x]], p1 = src[conv->x_off1[x]];

      d[x] = p0 + (p1 - p0) * conv->x_frac[x];
    }
  }
}

/* Make hrows[0] hold source row r0 and hrows[1] row r1. */
static void
ensure_rows (NnFrameConverter *conv, const guint8 *base, gint stride, gint r0,
    gint r1)
{
  if (conv->hrow_src[0] != r0) {
    if (conv->hrow_src[1] == r0) {
      gfloat *t = conv->hrows[0];

      conv->hrows[0] = conv->hrows[1];
      conv->hrows[1] = t;
      conv->hrow_src[0] = r0;
      conv->hrow_src[1] = -1;
    } else {
      resize_row (conv, base + (gsize) r0 * stride, conv->hrows[0]);
      conv->hrow_src[0] = r0;
    }
  }
  if (conv->hrow_src[1] != r1) {
    if (r1 == r0) {
      memcpy (conv->hrows[1], conv->hrows[0],
          sizeof (gfloat) * conv->info.content_w * conv->info.channels);
    } else {
      resize_row (conv, base + (gsize) r1 * stride, conv->hrows[1]);
    }
    conv->hrow_src[1] = r1;
  }
}

static void
convert_resize (NnFrameConverter *conv, const guint8 *base, gint stride,
    gfloat *out)
{
  gint cw = conv->info.content_w, ch = conv->info.content_h;

  conv->hrow_src[0] = conv->hrow_src[1] = -1;
  for (gint y = 0; y < ch; y++) {
    gfloat fy = conv->y_frac[y];

    ensure_rows (conv, base, stride, conv->y_row0[y], conv->y_row1[y]);
    for (gint c = 0; c < conv->info.channels; c++) {
      const gfloat *r0 = conv->hrows[0] + (gsize) c * cw;
      const gfloat *r1 = conv->hrows[1] + (gsize) c * cw;
      gfloat mul = conv->mul[c], add = conv->add[c];
      gint step;
      gfloat *o = out_ptr (conv, out, c, y, &step);

      for (gint x = 0; x < cw; x++, o += step) {
        gfloat v = r0[x] + (r1[x] - r0[x]) * fy;

        *o = v * mul + add;
      }
    }
  }
}

/* Fill everything right of and below the content area. */
static void
fill_padding (const NnFrameConverter *conv, gfloat *out)
{
  gint W = conv->info.out_w, H = conv->info.out_h;
  gint cw = conv->info.content_w, ch = conv->info.content_h;
  gfloat pad = conv->info.pad_value;

  if (cw >= W && ch >= H)
    return;
  for (gint c = 0; c < conv->info.channels; c++) {
    for (gint y = 0; y < H; y++) {
      gint step;
      gfloat *o = out_ptr (conv, out, c, y, &step);
      gint x0 = y < ch ? cw : 0;

      o += (gsize) x0 * step;
      for (gint x = x0; x < W; x++, o += step)
        *o = pad;
    }
  }
}

void
nn_frame_converter_run (NnFrameConverter *conv, const guint8 *base, gint stride,
    gpointer out)
{
  gfloat *f;

  g_return_if_fail (conv != NULL && base != NULL && out != NULL);
  f = conv->scratch ? conv->scratch : (gfloat *) out;
  if (conv->resize)
    convert_resize (conv, base, stride, f);
  else
    convert_direct (conv, base, stride, f);
  fill_padding (conv, f);
  if (conv->scratch)
    nnp_f32_to_half (NNP_DTYPE_FLOAT16, f, out,
        (gsize) conv->info.out_w * conv->info.out_h * conv->info.channels);
}
