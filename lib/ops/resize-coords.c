/* libnnpipe: Resize's coordinate mapping, shared by every backend.
 *
 * Given NnpResizeParams (parsed by nnp_op_resize_infer), these map an output
 * coordinate to the input (every coordinate_transformation_mode), round it
 * for nearest mode, or turn it into the taps (indices and weights) of linear
 * and cubic interpolation.  The CPU kernel and the OpenCL backend build their
 * per-axis tables from them, so both compute the same thing. */
#include "ops/nn-params.h"

#include <math.h>

/* Input coordinate of output coordinate x on axis k; *outside for a
 * tf_crop_and_resize coordinate outside the input. */
double
nnp_resize_map_coord (const NnpResizeParams *p, int k, int64_t x, gboolean *outside)
{
  double scale = p->scale[k], in = (double) p->in[k];
  double len = scale * in; /* output length as the reference sees it */
  double xf = (double) x, r;

  *outside = FALSE;
  switch (p->coord) {
    case NNP_RESIZE_HALF_PIXEL: return (xf + 0.5) / scale - 0.5;
    case NNP_RESIZE_HALF_PIXEL_SYMMETRIC: {
      double adjustment = (double) p->out[k] / len;
      double offset = in / 2.0 * (1.0 - adjustment);
      return offset + (xf + 0.5) / scale - 0.5;
    }
    case NNP_RESIZE_PYTORCH_HALF_PIXEL: return p->out[k] > 1 ? (xf + 0.5) / scale - 0.5 : -0.5;
    case NNP_RESIZE_ALIGN_CORNERS: return len == 1.0 ? 0.0 : xf * (in - 1.0) / (len - 1.0);
    case NNP_RESIZE_ASYMMETRIC: return xf / scale;
    case NNP_RESIZE_TF_HALF_PIXEL_FOR_NN: return (xf + 0.5) / scale;
    case NNP_RESIZE_TF_CROP_AND_RESIZE: {
      double extent = p->roi_end[k] - p->roi_start[k];
      if (len == 1.0)
        r = extent * (in - 1.0) / 2.0;
      else
        r = xf * extent * (in - 1.0) / (len - 1.0);
      r += p->roi_start[k] * (in - 1.0);
      *outside = r < 0.0 || r > in - 1.0;
      return r;
    }
  }
  return xf;
}

/* xo limited to [-4, in + 4] (NaN to -4) before it is converted to an
 * integer: every index is clamped into the input, and beyond that all taps
 * read the same edge pixel (weights summing to 1, or all 0 with
 * exclude_outside), so the result does not change. */
static double
clamp_coord (const NnpResizeParams *p, int k, double xo)
{
  double hi = (double) p->in[k] + 4.0;
  return xo >= -4.0 ? (xo <= hi ? xo : hi) : -4.0;
}

int64_t
nnp_resize_nearest_index (const NnpResizeParams *p, int k, double xo)
{
  double fl, ratio;
  int64_t i;

  xo = clamp_coord (p, k, xo);
  fl = floor (xo);
  ratio = xo - fl;

  if (ratio == 0.0) {
    i = (int64_t) fl;
  } else {
    switch (p->nearest) {
      case NNP_RESIZE_ROUND_PREFER_FLOOR: i = (int64_t) fl + (ratio > 0.5); break;
      case NNP_RESIZE_ROUND_PREFER_CEIL: i = (int64_t) fl + (ratio >= 0.5); break;
      case NNP_RESIZE_FLOOR: i = (int64_t) fl; break;
      case NNP_RESIZE_CEIL:
      default: i = (int64_t) fl + 1; break;
    }
  }
  return CLAMP (i, 0, p->in[k] - 1);
}

/* Taps of output coordinate x on axis k (indices clamped into the input). */
void
nnp_resize_interp_taps (const NnpResizeParams *p, int k, double xo, int taps, int64_t *idx,
                        float *w)
{
  double fl, t, c[4];
  int64_t base;
  double sum = 0.0;

  xo = clamp_coord (p, k, xo);
  fl = floor (xo);
  t = xo - fl;
  base = (int64_t) fl;

  if (t == 0.0) { /* prefer the pixel on the left: t in (0, 1] */
    base--;
    t = 1.0;
  }
  if (taps == 2) {
    c[0] = 1.0 - t;
    c[1] = t;
  } else {
    double a = p->cubic_a, u = 1.0 - t;
    c[0] = ((a * (t + 1) - 5 * a) * (t + 1) + 8 * a) * (t + 1) - 4 * a;
    c[1] = ((a + 2) * t - (a + 3)) * t * t + 1;
    c[2] = ((a + 2) * u - (a + 3)) * u * u + 1;
    c[3] = ((a * (u + 1) - 5 * a) * (u + 1) + 8 * a) * (u + 1) - 4 * a;
    base--;
  }
  for (int i = 0; i < taps; i++) {
    int64_t j = base + i;
    if (p->exclude_outside && (j < 0 || j >= p->in[k]))
      c[i] = 0.0;
    sum += c[i];
  }
  for (int i = 0; i < taps; i++) {
    int64_t j = base + i;
    idx[i] = CLAMP (j, 0, p->in[k] - 1);
    w[i] = (float) (p->exclude_outside && sum != 0.0 ? c[i] / sum : c[i]);
  }
}
