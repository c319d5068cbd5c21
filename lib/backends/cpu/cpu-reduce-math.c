/* CPU kernels: ReduceL1, ReduceL2, ReduceLogSum, ReduceLogSumExp,
 * ReduceProd, ReduceSumSquare (lib/ops/ops-reduce.c).
 *
 * The input is walked once in memory order over the merged kept/reduced
 * groups of NnpReduceParams (as cpu-reduce.c); every output accumulates in
 * double in the scratch area, then is finished (sqrt, log) and stored in
 * the output's dtype.  ReduceLogSumExp first finds each output's maximum
 * (one more walk) so that exp never overflows. */
#include "backends/cpu/cpu.h"
#include "ops/nn-params.h"

#include <math.h>
#include <string.h>

static gsize
reduce_workspace (const NnpGraph *graph, const NnpNode *node)
{
  NnpValue *y = nnp_node_output (graph, node, 0);

  /* two doubles per output: accumulator and (LogSumExp) maximum */
  return 2 * sizeof (double) * (gsize) MAX (nnp_shape_numel (&y->shape), 1);
}

static double
load (const void *x, NnpDType dtype, int64_t i)
{
  switch (dtype) {
    case NNP_DTYPE_FLOAT32: return ((const float *) x)[i];
    case NNP_DTYPE_INT32: return ((const gint32 *) x)[i];
    case NNP_DTYPE_INT64: return (double) ((const gint64 *) x)[i];
    default: return 0;
  }
}

/* Walk every input element: acc[out] = f(acc[out], x, max[out]). */
static void
walk (const NnpReduceParams *p, const void *x, NnpOpType op, double *acc, const double *mx,
      gboolean find_max)
{
  int64_t ys[NNP_MAX_RANK], idx[NNP_MAX_RANK] = { 0 };
  int64_t sy = 1, total = 1, yo = 0;
  const int r = p->rank;

  for (int k = r - 1; k >= 0; k--) {
    ys[k] = p->reduced[k] ? 0 : sy;
    sy *= p->reduced[k] ? 1 : p->dims[k];
    total *= p->dims[k];
  }
  for (int64_t i = 0; i < total; i++) {
    double v = load (x, p->dtype, i);
    double *a = &acc[yo];

    if (find_max) {
      if (v > *a || isnan (v))
        *a = v;
    } else {
      switch (op) {
        case NNP_OP_REDUCE_L1: *a += fabs (v); break;
        case NNP_OP_REDUCE_L2:
        case NNP_OP_REDUCE_SUM_SQUARE: *a += v * v; break;
        case NNP_OP_REDUCE_LOG_SUM: *a += v; break;
        case NNP_OP_REDUCE_LOG_SUM_EXP: *a += isinf (mx[yo]) ? exp (v) : exp (v - mx[yo]); break;
        case NNP_OP_REDUCE_PROD: *a *= v; break;
        default: break;
      }
    }
    for (int k = r - 1; k >= 0; k--) {
      yo += ys[k];
      if (++idx[k] < p->dims[k])
        break;
      yo -= ys[k] * p->dims[k];
      idx[k] = 0;
    }
  }
}

static gboolean
reduce_math_run (const NnpCpuCall *call, GError **error)
{
  const NnpReduceParams *p = call->node->params;
  const NnpOpType op = call->node->op;
  NnpTensor *x = call->inputs[0], *y = call->outputs[0];
  int64_t n_out = nnp_tensor_numel (y);
  double *acc = call->scratch, *mx = acc + MAX (n_out, 1);

  (void) error;
  if (p->identity) {
    /* nothing reduced: still the element function (|x|, x^2, log x ...) */
    for (int64_t i = 0; i < n_out; i++) {
      double v = load (x->data, p->dtype, i);
      acc[i] = op == NNP_OP_REDUCE_L1            ? fabs (v)
               : op == NNP_OP_REDUCE_SUM_SQUARE  ? v * v
               : op == NNP_OP_REDUCE_L2          ? fabs (v)
               : op == NNP_OP_REDUCE_LOG_SUM     ? log (v)
               : op == NNP_OP_REDUCE_LOG_SUM_EXP ? v
                                                 : v;
    }
  } else {
    for (int64_t i = 0; i < n_out; i++) {
      acc[i] = op == NNP_OP_REDUCE_PROD ? 1.0 : 0.0;
      mx[i] = -INFINITY;
    }
    if (op == NNP_OP_REDUCE_LOG_SUM_EXP && nnp_tensor_numel (x) > 0)
      walk (p, x->data, op, mx, NULL, TRUE);
    if (nnp_tensor_numel (x) > 0)
      walk (p, x->data, op, acc, mx, FALSE);
    for (int64_t i = 0; i < n_out; i++) {
      switch (op) {
        case NNP_OP_REDUCE_L2: acc[i] = sqrt (acc[i]); break;
        case NNP_OP_REDUCE_LOG_SUM: acc[i] = log (acc[i]); break;
        case NNP_OP_REDUCE_LOG_SUM_EXP:
          acc[i] = isinf (mx[i]) ? log (acc[i]) : log (acc[i]) + mx[i];
          break;
        default: break;
      }
    }
  }
  for (int64_t i = 0; i < n_out; i++) {
    switch (p->dtype) {
      case NNP_DTYPE_FLOAT32: ((float *) y->data)[i] = (float) acc[i]; break;
      case NNP_DTYPE_INT32: ((gint32 *) y->data)[i] = (gint32) (gint64) acc[i]; break;
      case NNP_DTYPE_INT64: ((gint64 *) y->data)[i] = (gint64) acc[i]; break;
      default: break;
    }
  }
  return TRUE;
}

#define REDUCE_KERNEL(id) \
  const NnpCpuKernel nnp_cpu_##id = { .run = reduce_math_run, .workspace = reduce_workspace };
REDUCE_KERNEL (reduce_l1)
REDUCE_KERNEL (reduce_l2)
REDUCE_KERNEL (reduce_log_sum)
REDUCE_KERNEL (reduce_log_sum_exp)
REDUCE_KERNEL (reduce_prod)
REDUCE_KERNEL (reduce_sum_square)
