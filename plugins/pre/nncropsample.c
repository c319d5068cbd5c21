/* nnpipe plugin: nncrop's sampler (see nncropsample.h). */
#include "nncropsample.h"

#include <math.h>

/* per-box widths keep boxes up to this aspect ratio unsqueezed */
#define UNSQUEEZED_ASPECT 4

/* The interpolation kernels, at distance d (pixels) from a sample. */
static inline gfloat
kernel_cubic (gfloat d)
{
  /* Keys' cubic convolution, a = -0.5 (Catmull-Rom) */
  d = fabsf (d);
  if (d < 1.0f)
    return (1.5f * d - 2.5f) * d * d + 1.0f;
  if (d < 2.0f)
    return ((-0.5f * d + 2.5f) * d - 4.0f) * d + 2.0f;
  return 0.0f;
}

static inline gfloat
kernel_lanczos3 (gfloat d)
{
  if (d == 0.0f)
    return 1.0f;
  if (fabsf (d) >= 3.0f)
    return 0.0f;
  return (gfloat) (3.0 * sin (G_PI * d) * sin (G_PI * d / 3.0)
      / (G_PI * G_PI * d * d));
}

/* The 3 channels at (x, y), interpolated between pixel centres by the
 * filter, edges replicated. */
static inline void
image_sample (const NnImage *img, NnCropFilter filter, gfloat x, gfloat y,
    gfloat *v)
{
  gfloat fx = x - 0.5f, fy = y - 0.5f;
  gint x0 = (gint) floorf (fx), y0 = (gint) floorf (fy);
  gfloat ax = fx - x0, ay = fy - y0;
  gfloat wx[6], wy[6], sum_x = 0, sum_y = 0;
  gint xs[6], ys[6], taps, first;

  switch (filter) {
    case NN_CROP_FILTER_BICUBIC:
      taps = 4;
      first = -1;
      break;
    case NN_CROP_FILTER_LANCZOS:
      taps = 6;
      first = -2;
      break;
    default:
      taps = 2;
      first = 0;
      break;
  }
  for (gint i = 0; i < taps; i++) {
    gint o = first + i;

    xs[i] = CLAMP (x0 + o, 0, img->width - 1) * img->pstride;
    ys[i] = CLAMP (y0 + o, 0, img->height - 1);
    if (filter == NN_CROP_FILTER_BICUBIC) {
      wx[i] = kernel_cubic (ax - o);
      wy[i] = kernel_cubic (ay - o);
    } else if (filter == NN_CROP_FILTER_LANCZOS) {
      wx[i] = kernel_lanczos3 (ax - o);
      wy[i] = kernel_lanczos3 (ay - o);
    } else {
      wx[i] = o == 0 ? 1.0f - ax : ax;
      wy[i] = o == 0 ? 1.0f - ay : ay;
    }
    sum_x += wx[i];
    sum_y += wy[i];
  }
  for (gint c = 0; c < 3; c++) {
    gfloat acc = 0;

    for (gint j = 0; j < taps; j++) {
      const guint8 *row = img->data + (gsize) ys[j] * img->stride + img->off[c];
      gfloat r = 0;

      for (gint i = 0; i < taps; i++)
        r += wx[i] * row[xs[i]];
      acc += wy[j] * r;
    }
    /* the weights sum to 1 up to rounding; the sharper kernels overshoot */
    v[c] = CLAMP (acc / (sum_x * sum_y), 0.0f, 255.0f);
  }
}

void
nn_crop_box_geometry (const NnCropParams *p, const NnQuad *quad_in,
    NnQuad *quad, gdouble *cw, gdouble *chh)
{
  *quad = *quad_in;
  nn_quad_size (quad, cw, chh);
  if (p->rotate_tall && *cw > 0 && *chh / *cw >= 1.5) {
    /* turn counter-clockwise: the right edge becomes the top */
    NnQuad r = { { quad->p[1], quad->p[2], quad->p[3], quad->p[0] } };
    gdouble t = *cw;

    *quad = r;
    *cw = *chh;
    *chh = t;
  }
  if (p->margin > 0
      && hypot (quad->p[3].x - quad->p[0].x, quad->p[3].y - quad->p[0].y) > 0) {
    /* grow above and below (across the reading direction) only: a
     * horizontal margin would take in neighbouring icons and borders */
    gdouble l =
        hypot (quad->p[3].x - quad->p[0].x, quad->p[3].y - quad->p[0].y);
    gdouble d = p->margin * *chh;
    gdouble ux = (quad->p[3].x - quad->p[0].x) / l;
    gdouble uy = (quad->p[3].y - quad->p[0].y) / l;

    quad->p[0].x -= ux * d;
    quad->p[0].y -= uy * d;
    quad->p[1].x -= ux * d;
    quad->p[1].y -= uy * d;
    quad->p[2].x += ux * d;
    quad->p[2].y += uy * d;
    quad->p[3].x += ux * d;
    quad->p[3].y += uy * d;
    *chh += 2 * d;
  }
  *cw = MAX (*cw, 1.0);
  *chh = MAX (*chh, 1.0);
}

/* With a width per box: the box's width at the tensor height, narrowed by
 * width-scale, but not below the lesser of its own width and
 * UNSQUEEZED_ASPECT times the height (short boxes keep their shape). */
static gdouble
box_width (const NnCropParams *p, gdouble cw, gdouble chh)
{
  gdouble natural = ceil (p->height * cw / chh);

  return MAX (ceil (natural * p->width_scale),
      MIN (natural, UNSQUEEZED_ASPECT * p->height));
}

gint
nn_crop_tensor_width (const NnCropParams *p, const NnQuad *quad_in)
{
  NnQuad quad;
  gdouble cw, chh, want;
  gint m = p->width_multiple, w;

  if (p->width > 0)
    return p->width;
  nn_crop_box_geometry (p, quad_in, &quad, &cw, &chh);
  want = box_width (p, cw, chh);
  if (want >= p->max_width)
    return p->max_width;
  w = ((gint) want + m - 1) / m * m;
  w = MAX (w, m);
  return MIN (w, p->max_width);
}

gint
nn_crop_sample (const NnCropParams *p, const NnImage *img,
    const NnQuad *quad_in, gint W, gfloat *out)
{
  NnQuad quad;
  gdouble cw, chh, ex_x, ex_y, ey_x, ey_y;
  gint H = p->height, rw, k;
  NnCropFilter filter;
  gsize plane = (gsize) W * H;

  nn_crop_box_geometry (p, quad_in, &quad, &cw, &chh);
  {
    gdouble lx = hypot (quad.p[1].x - quad.p[0].x, quad.p[1].y - quad.p[0].y);
    gdouble ly = hypot (quad.p[3].x - quad.p[0].x, quad.p[3].y - quad.p[0].y);

    ex_x = lx > 0 ? (quad.p[1].x - quad.p[0].x) / lx : 1;
    ex_y = lx > 0 ? (quad.p[1].y - quad.p[0].y) / lx : 0;
    ey_x = ly > 0 ? (quad.p[3].x - quad.p[0].x) / ly : -ex_y;
    ey_y = ly > 0 ? (quad.p[3].y - quad.p[0].y) / ly : ex_x;
  }
  rw =
      p->width > 0 ? (gint) ceil (H * cw / chh) : (gint) box_width (p, cw, chh);
  rw = CLAMP (rw, 1, W);
  /* area averaging: k x k samples per output pixel when shrinking */
  k = (gint) ceil (MAX (chh / H, cw / rw));
  k = CLAMP (k, 1, 4);
  /* the filter enlarges a line lower than the tensor; a line shrunk to
   * it is averaged (and interpolated bilinearly) */
  filter = chh < H ? p->filter : NN_CROP_FILTER_BILINEAR;

  for (gint v = 0; v < H; v++) {
    for (gint u = 0; u < W; u++) {
      gsize o = (gsize) v * W + u;

      if (u >= rw) {
        out[o] = out[o + plane] = out[o + 2 * plane] = 0.0f;
        continue;
      }
      {
        gfloat acc[3] = { 0, 0, 0 }, smp[3];

        for (gint j = 0; j < k; j++) {
          gdouble t = (v + (j + 0.5) / k) * chh / H;

          for (gint i = 0; i < k; i++) {
            gdouble s = (u + (i + 0.5) / k) * cw / rw;
            gfloat x = (gfloat) (quad.p[0].x + s * ex_x + t * ey_x);
            gfloat y = (gfloat) (quad.p[0].y + s * ex_y + t * ey_y);

            image_sample (img, filter, x, y, smp);
            for (gint c = 0; c < 3; c++)
              acc[c] += smp[c];
          }
        }
        for (gint c = 0; c < 3; c++)
          out[o + c * plane] = acc[c] / (k * k) * p->mul[c] + p->add[c];
      }
    }
  }
  return rw;
}
