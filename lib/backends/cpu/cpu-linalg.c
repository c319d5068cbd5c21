/* CPU kernels of Einsum (a direct sum over every label's index: the
 * equations of vision models are small) and Det (Gaussian elimination with
 * partial pivoting, in double). */
#include "backends/cpu/cpu.h"
#include "ops/linalg-params.h"

#include <math.h>
#include <string.h>

static inline double
ld (const NnpTensor *t, int64_t i)
{
  switch (t->dtype) {
    case NNP_DTYPE_FLOAT64: return ((const double *) t->data)[i];
    case NNP_DTYPE_INT32: return ((const gint32 *) t->data)[i];
    case NNP_DTYPE_INT64: return (double) ((const gint64 *) t->data)[i];
    default: return ((const float *) t->data)[i];
  }
}

static inline void
st (NnpTensor *t, int64_t i, double v)
{
  switch (t->dtype) {
    case NNP_DTYPE_FLOAT64: ((double *) t->data)[i] = v; break;
    case NNP_DTYPE_INT32: ((gint32 *) t->data)[i] = (gint32) v; break;
    case NNP_DTYPE_INT64: ((gint64 *) t->data)[i] = (gint64) v; break;
    default: ((float *) t->data)[i] = (float) v; break;
  }
}

static gboolean
einsum_run (const NnpCpuCall *call, GError **error)
{
  const NnpLinalgParams *p = call->node->params;
  NnpTensor *y = call->outputs[0];
  int64_t idx[NNP_EINSUM_MAX_LABELS] = { 0 };
  int64_t strides[NNP_EINSUM_MAX_INPUTS][NNP_EINSUM_MAX_LABELS];
  int64_t ostride[NNP_EINSUM_MAX_LABELS] = { 0 };
  int used[NNP_EINSUM_MAX_LABELS], n_used = 0;

  (void) error;
  /* element stride of every label in every input (repeated labels add up:
   * a diagonal), 0 for broadcast dims */
  memset (strides, 0, sizeof (strides));
  for (int i = 0; i < p->n_inputs; i++) {
    int64_t s = 1;
    for (int d = p->rank[i] - 1; d >= 0; d--) {
      int64_t dim = call->inputs[i]->shape.dims[d];
      if (!p->bcast[i][d])
        strides[i][p->labels[i][d]] += s;
      s *= dim;
    }
  }
  {
    int64_t s = 1;
    for (int d = p->out_rank - 1; d >= 0; d--) {
      ostride[p->out_labels[d]] = s;
      s *= p->size[p->out_labels[d]];
    }
  }
  for (int l = 0; l < p->n_labels; l++)
    if (p->size[l] >= 0)
      used[n_used++] = l;
  if (y->nbytes)
    memset (y->data, 0, y->nbytes);
  for (int l = 0; l < n_used; l++)
    if (p->size[used[l]] == 0)
      return TRUE;
  for (;;) {
    double prod = 1;
    int64_t o = 0;
    for (int i = 0; i < p->n_inputs; i++) {
      int64_t off = 0;
      for (int l = 0; l < n_used; l++)
        off += idx[used[l]] * strides[i][used[l]];
      prod *= ld (call->inputs[i], off);
    }
    for (int l = 0; l < n_used; l++)
      o += idx[used[l]] * ostride[used[l]];
    st (y, o, ld (y, o) + prod);
    {
      int l = n_used - 1;
      for (; l >= 0; l--) {
        if (++idx[used[l]] < p->size[used[l]])
          break;
        idx[used[l]] = 0;
      }
      if (l < 0)
        break;
    }
  }
  return TRUE;
}

static gboolean
det_run (const NnpCpuCall *call, GError **error)
{
  const NnpLinalgParams *p = call->node->params;
  const int64_t n = p->n;
  double *a = call->scratch;

  (void) error;
  for (int64_t m = 0; m < p->count; m++) {
    double det = 1;
    for (int64_t i = 0; i < n * n; i++)
      a[i] = ld (call->inputs[0], m * n * n + i);
    for (int64_t c = 0; c < n && det != 0; c++) {
      int64_t piv = c;
      for (int64_t r = c + 1; r < n; r++)
        if (fabs (a[r * n + c]) > fabs (a[piv * n + c]))
          piv = r;
      if (a[piv * n + c] == 0) {
        det = 0;
        break;
      }
      if (piv != c) {
        for (int64_t k = 0; k < n; k++) {
          double t = a[c * n + k];
          a[c * n + k] = a[piv * n + k];
          a[piv * n + k] = t;
        }
        det = -det;
      }
      det *= a[c * n + c];
      for (int64_t r = c + 1; r < n; r++) {
        double f = a[r * n + c] / a[c * n + c];
        for (int64_t k = c; k < n; k++)
          a[r * n + k] -= f * a[c * n + k];
      }
    }
    st (call->outputs[0], m, det);
  }
  return TRUE;
}

static gsize
det_workspace (const NnpGraph *graph, const NnpNode *node)
{
  const NnpLinalgParams *p = node->params;

  (void) graph;
  return sizeof (double) * (gsize) MAX (p->n * p->n, 1);
}

const NnpCpuKernel nnp_cpu_einsum = { .run = einsum_run };
const NnpCpuKernel nnp_cpu_det = { .run = det_run, .workspace = det_workspace };
