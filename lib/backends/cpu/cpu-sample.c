/* CPU kernels of GridSample, RoiAlign and MaxUnpool (lib/ops/ops-sample.c).
 * GridSample and RoiAlign follow ONNX Runtime's CPU kernels step by step
 * (denormalisation, reflection, the cubic coefficients with A = -0.75,
 * RoiAlign's sampling grid and its max mode over weighted corners), in
 * double. */
#include "backends/cpu/cpu.h"
#include "ops/sample-params.h"

#include <math.h>
#include <string.h>

static inline double
ld (const NnpTensor *t, int64_t i)
{
  return t->dtype == NNP_DTYPE_FLOAT64 ? ((const double *) t->data)[i]
                                       : ((const float *) t->data)[i];
}

static inline void
st (NnpTensor *t, int64_t i, double v)
{
  if (t->dtype == NNP_DTYPE_FLOAT64)
    ((double *) t->data)[i] = v;
  else
    ((float *) t->data)[i] = (float) v;
}

/* ---------------------------------------------------------------- GridSample */

static double
reflect (double x, double lo, double hi)
{
  double range = hi - lo, d, r;
  int n;

  if (range <= 0)
    return lo;
  if (x < lo) {
    d = lo - x;
    n = (int) (d / range);
    r = d - n * range;
    return n % 2 == 0 ? lo + r : hi - r;
  }
  if (x > hi) {
    d = x - hi;
    n = (int) (d / range);
    r = d - n * range;
    return n % 2 == 0 ? hi - r : lo + r;
  }
  return x;
}

typedef struct {
  const NnpSampleParams *p;
  const NnpTensor *x;
  int64_t plane;    /* element offset of the (n, c) plane */
  double border[4]; /* x_min, y_min, x_max, y_max */
} Gs;

static double
pixel (const Gs *g, int64_t r, int64_t c)
{
  const int64_t H = g->p->in.dims[2], W = g->p->in.dims[3];

  switch (g->p->padding) {
    case NNP_SAMPLE_PAD_ZEROS:
      if (c < 0 || c >= W || r < 0 || r >= H)
        return 0;
      break;
    case NNP_SAMPLE_PAD_BORDER:
      c = CLAMP (c, 0, W - 1);
      r = CLAMP (r, 0, H - 1);
      break;
    default:
      c = (int64_t) reflect ((double) c, g->border[0], g->border[2]);
      r = (int64_t) reflect ((double) r, g->border[1], g->border[3]);
      c = CLAMP (c, 0, W - 1);
      r = CLAMP (r, 0, H - 1);
      break;
  }
  return ld (g->x, g->plane + r * W + c);
}

static void
cubic_coeffs (double x, double *c)
{
  const double a = -0.75;

  x = fabs (x);
  c[0] = ((a * (x + 1) - 5 * a) * (x + 1) + 8 * a) * (x + 1) - 4 * a;
  c[1] = ((a + 2) * x - (a + 3)) * x * x + 1;
  c[2] = ((a + 2) * (1 - x) - (a + 3)) * (1 - x) * (1 - x) + 1;
  c[3] = ((a * (2 - x) - 5 * a) * (2 - x) + 8 * a) * (2 - x) - 4 * a;
}

static double
denormalize (double v, int64_t len, gboolean align)
{
  return align ? (v + 1) / 2 * (double) (len - 1) : ((v + 1) * (double) len - 1) / 2;
}

static gboolean
grid_sample_run (const NnpCpuCall *call, GError **error)
{
  const NnpSampleParams *p = call->node->params;
  const NnpTensor *grid = call->inputs[1];
  NnpTensor *y = call->outputs[0];
  const int64_t N = p->in.dims[0], C = p->in.dims[1], H = p->in.dims[2], W = p->in.dims[3];
  const int64_t Ho = p->out.dims[2], Wo = p->out.dims[3];
  Gs g = { p, call->inputs[0], 0, { -0.5, -0.5, W - 0.5, H - 0.5 } };

  (void) error;
  if (p->align_corners) {
    g.border[0] = g.border[1] = 0;
    g.border[2] = (double) (W - 1);
    g.border[3] = (double) (H - 1);
  }
  for (int64_t n = 0; n < N; n++)
    for (int64_t c = 0; c < C; c++) {
      g.plane = (n * C + c) * H * W;
      for (int64_t oy = 0; oy < Ho; oy++)
        for (int64_t ox = 0; ox < Wo; ox++) {
          int64_t gi = ((n * Ho + oy) * Wo + ox) * 2;
          double x = denormalize (ld (grid, gi), W, p->align_corners);
          double yy = denormalize (ld (grid, gi + 1), H, p->align_corners), v;

          if (p->mode == NNP_SAMPLE_NEAREST) {
            x = nearbyint (x);
            yy = nearbyint (yy);
          }
          if (x < g.border[0] || x > g.border[2] || yy < g.border[1] || yy > g.border[3]) {
            if (p->padding == NNP_SAMPLE_PAD_BORDER) {
              x = CLAMP (x, 0, (double) (W - 1));
              yy = CLAMP (yy, 0, (double) (H - 1));
            } else if (p->padding == NNP_SAMPLE_PAD_REFLECTION) {
              x = reflect (x, g.border[0], g.border[2]);
              yy = reflect (yy, g.border[1], g.border[3]);
            }
          }
          if (p->mode == NNP_SAMPLE_NEAREST) {
            v = pixel (&g, (int64_t) yy, (int64_t) x);
          } else if (p->mode == NNP_SAMPLE_LINEAR) {
            int64_t x1 = (int64_t) floor (x), y1 = (int64_t) floor (yy);
            double dx1 = x - (double) x1, dy1 = yy - (double) y1;
            double dx2 = 1 - dx1, dy2 = 1 - dy1;
            v = dy2 * (dx2 * pixel (&g, y1, x1) + dx1 * pixel (&g, y1, x1 + 1))
                + dy1 * (dx2 * pixel (&g, y1 + 1, x1) + dx1 * pixel (&g, y1 + 1, x1 + 1));
          } else {
            int64_t x0 = (int64_t) floor (x) - 1, y0 = (int64_t) floor (yy) - 1;
            double cx[4], cy[4], row[4];
            cubic_coeffs (x - (double) x0 - 1, cx);
            cubic_coeffs (yy - (double) y0 - 1, cy);
            for (int h = 0; h < 4; h++) {
              row[h] = 0;
              for (int w = 0; w < 4; w++)
                row[h] += cx[w] * pixel (&g, y0 + h, x0 + w);
            }
            v = cy[0] * row[0] + cy[1] * row[1] + cy[2] * row[2] + cy[3] * row[3];
          }
          st (y, ((n * C + c) * Ho + oy) * Wo + ox, v);
        }
    }
  return TRUE;
}

const NnpCpuKernel nnp_cpu_grid_sample = { .run = grid_sample_run };

/* ---------------------------------------------------------------- RoiAlign */

static gboolean
roi_align_run (const NnpCpuCall *call, GError **error)
{
  const NnpSampleParams *p = call->node->params;
  const NnpTensor *x = call->inputs[0], *rois = call->inputs[1], *bi = call->inputs[2];
  NnpTensor *y = call->outputs[0];
  const int64_t N = p->in.dims[0], C = p->in.dims[1], H = p->in.dims[2], W = p->in.dims[3];
  const int64_t R = p->out.dims[0], PH = p->out.dims[2], PW = p->out.dims[3];
  const double off = p->align_corners ? 0.5 : 0.0;

  for (int64_t r = 0; r < R; r++) {
    int64_t b = bi->dtype == NNP_DTYPE_INT64 ? ((const int64_t *) bi->data)[r]
                                             : ((const int32_t *) bi->data)[r];
    double sw = ld (rois, r * 4) * p->spatial_scale - off;
    double sh = ld (rois, r * 4 + 1) * p->spatial_scale - off;
    double ew = ld (rois, r * 4 + 2) * p->spatial_scale - off;
    double eh = ld (rois, r * 4 + 3) * p->spatial_scale - off;
    double rw = ew - sw, rh = eh - sh, bw, bh;
    int64_t gh, gw, count;

    if (b < 0 || b >= N) {
      nnp_node_set_error (error, NNP_ERROR_INVALID, call->node,
                          "batch index %" G_GINT64_FORMAT " is out of range", b);
      return FALSE;
    }
    if (!p->align_corners) {
      rw = MAX (rw, 1.0);
      rh = MAX (rh, 1.0);
    }
    bh = rh / (double) PH;
    bw = rw / (double) PW;
    gh = p->sampling_ratio > 0 ? p->sampling_ratio : (int64_t) ceil (rh / (double) PH);
    gw = p->sampling_ratio > 0 ? p->sampling_ratio : (int64_t) ceil (rw / (double) PW);
    count = MAX (gh * gw, 1);
    for (int64_t c = 0; c < C; c++) {
      int64_t plane = (b * C + c) * H * W;
      for (int64_t ph = 0; ph < PH; ph++)
        for (int64_t pw = 0; pw < PW; pw++) {
          double acc = 0;
          gboolean any = FALSE;
          for (int64_t iy = 0; iy < gh; iy++) {
            double yy = sh + (double) ph * bh + ((double) iy + 0.5) * bh / (double) gh;
            for (int64_t ix = 0; ix < gw; ix++) {
              double xx = sw + (double) pw * bw + ((double) ix + 0.5) * bw / (double) gw;
              double w[4] = { 0, 0, 0, 0 }, v[4] = { 0, 0, 0, 0 }, val;
              if (!(yy < -1.0 || yy > (double) H || xx < -1.0 || xx > (double) W)) {
                double ty = MAX (yy, 0.0), tx = MAX (xx, 0.0), ly, lx;
                int64_t yl = (int64_t) ty, xl = (int64_t) tx, yh, xh;
                if (yl >= H - 1) {
                  yh = yl = H - 1;
                  ty = (double) yl;
                } else {
                  yh = yl + 1;
                }
                if (xl >= W - 1) {
                  xh = xl = W - 1;
                  tx = (double) xl;
                } else {
                  xh = xl + 1;
                }
                ly = ty - (double) yl;
                lx = tx - (double) xl;
                w[0] = (1 - ly) * (1 - lx);
                w[1] = (1 - ly) * lx;
                w[2] = ly * (1 - lx);
                w[3] = ly * lx;
                v[0] = ld (x, plane + yl * W + xl);
                v[1] = ld (x, plane + yl * W + xh);
                v[2] = ld (x, plane + yh * W + xl);
                v[3] = ld (x, plane + yh * W + xh);
              }
              if (p->mode == NNP_SAMPLE_LINEAR) {
                acc += w[0] * v[0] + w[1] * v[1] + w[2] * v[2] + w[3] * v[3];
              } else {
                val = MAX (MAX (w[0] * v[0], w[1] * v[1]), MAX (w[2] * v[2], w[3] * v[3]));
                acc = any ? MAX (acc, val) : val;
                any = TRUE;
              }
            }
          }
          st (y, ((r * C + c) * PH + ph) * PW + pw,
              p->mode == NNP_SAMPLE_LINEAR ? acc / (double) count : acc);
        }
    }
  }
  return TRUE;
}

const NnpCpuKernel nnp_cpu_roi_align = { .run = roi_align_run };

/* ---------------------------------------------------------------- MaxUnpool */

/* Indices count in the unpooled shape (from kernel, strides, pads); with an
 * output_shape input each lands at the same coordinates of the output (as
 * ONNX Runtime), dropped when outside it. */
static gboolean
max_unpool_run (const NnpCpuCall *call, GError **error)
{
  const NnpSampleParams *p = call->node->params;
  const NnpTensor *x = call->inputs[0], *ind = call->inputs[1];
  NnpTensor *y = call->outputs[0];
  int64_t n = nnp_tensor_numel (x), total = nnp_shape_numel (&p->unpooled);

  if (y->nbytes)
    memset (y->data, 0, y->nbytes);
  for (int64_t i = 0; i < n; i++) {
    int64_t k = ((const int64_t *) ind->data)[i], rest, dst = 0, stride = 1;
    gboolean inside = TRUE;
    if (k < 0 || k >= total) {
      nnp_node_set_error (error, NNP_ERROR_INVALID, call->node,
                          "index %" G_GINT64_FORMAT " is outside the output's %" G_GINT64_FORMAT
                          " elements",
                          k, total);
      return FALSE;
    }
    rest = k;
    for (int d = p->out.rank - 1; d >= 0; d--) {
      int64_t c = rest % p->unpooled.dims[d];
      rest /= p->unpooled.dims[d];
      inside = inside && c < p->out.dims[d];
      dst += c * stride;
      stride *= p->out.dims[d];
    }
    if (inside)
      st (y, dst, ld (x, i));
  }
  return TRUE;
}

const NnpCpuKernel nnp_cpu_max_unpool = { .run = max_unpool_run };
