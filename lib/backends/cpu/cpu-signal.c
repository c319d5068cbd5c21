/* CPU kernels of the signal ops (lib/ops/ops-signal.c): the window
 * functions and DFT (a direct O(n^2) transform in double along one axis;
 * the signals of vision models are short). */
#include "backends/cpu/cpu.h"
#include "ops/index-params.h"

#include <math.h>

static void
store (NnpTensor *t, int64_t i, double v)
{
  if (t->dtype == NNP_DTYPE_FLOAT64)
    ((double *) t->data)[i] = v;
  else
    ((float *) t->data)[i] = (float) v;
}

static double
load (const NnpTensor *t, int64_t i)
{
  return t->dtype == NNP_DTYPE_FLOAT64 ? ((const double *) t->data)[i]
                                       : ((const float *) t->data)[i];
}

static gboolean
window_run (const NnpCpuCall *call, GError **error)
{
  const NnpIndexParams *p = call->node->params;
  NnpTensor *y = call->outputs[0];
  /* periodic: N = size; symmetric: N = size - 1 */
  double n = (double) (p->flag ? p->k : p->k - 1);

  (void) error;
  for (int64_t i = 0; i < p->k; i++) {
    double c1 = n > 0 ? cos (2 * G_PI * (double) i / n) : 1;
    double c2 = n > 0 ? cos (4 * G_PI * (double) i / n) : 1, v;
    switch (call->node->op) {
      case NNP_OP_HANN_WINDOW: v = 0.5 - 0.5 * c1; break;
      case NNP_OP_HAMMING_WINDOW: v = 25.0 / 46.0 - (1 - 25.0 / 46.0) * c1; break;
      default: v = 0.42 - 0.5 * c1 + 0.08 * c2; break;
    }
    store (y, i, v);
  }
  return TRUE;
}

const NnpCpuKernel nnp_cpu_hann_window = { .run = window_run };
const NnpCpuKernel nnp_cpu_hamming_window = { .run = window_run };
const NnpCpuKernel nnp_cpu_blackman_window = { .run = window_run };

static gboolean
dft_run (const NnpCpuCall *call, GError **error)
{
  const NnpIndexParams *p = call->node->params;
  const NnpTensor *x = call->inputs[0];
  NnpTensor *y = call->outputs[0];
  const int rank = p->in.rank, a = p->axis;
  const int64_t cin = p->in.dims[rank - 1], nin = p->in.dims[a], nout = p->idx.dims[a];
  const int64_t len = p->k;
  const double sign = p->flag ? 1.0 : -1.0, scale = p->flag ? 1.0 / (double) len : 1.0;
  int64_t outer = 1, inner = 1;

  (void) error;
  for (int d = 0; d < a; d++)
    outer *= p->in.dims[d];
  for (int d = a + 1; d < rank - 1; d++)
    inner *= p->in.dims[d];
  for (int64_t o = 0; o < outer; o++)
    for (int64_t i = 0; i < inner; i++)
      for (int64_t k = 0; k < nout; k++) {
        double re = 0, im = 0;
        for (int64_t t = 0; t < MIN (nin, len); t++) {
          int64_t e = ((o * nin + t) * inner + i) * cin;
          double xr = load (x, e), xi = cin == 2 ? load (x, e + 1) : 0;
          double ang = sign * 2 * G_PI * (double) ((k * t) % len) / (double) len;
          re += xr * cos (ang) - xi * sin (ang);
          im += xr * sin (ang) + xi * cos (ang);
        }
        store (y, ((o * nout + k) * inner + i) * 2, re * scale);
        store (y, ((o * nout + k) * inner + i) * 2 + 1, im * scale);
      }
  return TRUE;
}

const NnpCpuKernel nnp_cpu_dft = { .run = dft_run };
