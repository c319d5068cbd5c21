/* libnnpipe: shape inference for ReduceL1, ReduceL2, ReduceLogSum,
 * ReduceLogSumExp, ReduceProd, ReduceSumSquare (the common reduction
 * inference of ops-nn.c, NnpReduceParams) and ArgMin (ArgMax's, with
 * NnpArgMaxParams.min).  Kernels: lib/backends/cpu/cpu-reduce-math.c and
 * cpu-reduce.c. */
#include "ops/ops.h"
#include "ops/nn-params.h"

/* axes move from attribute to input 1 in opset 18 */
#define REDUCE(id, float_only) \
  gboolean nnp_op_##id##_infer (NnpGraph *graph, NnpNode *node, GError **error) \
  { \
    return nnp_op_reduce_infer (graph, node, graph->opset >= 18, float_only, error); \
  }

REDUCE (reduce_l1, FALSE)
REDUCE (reduce_l2, TRUE)
REDUCE (reduce_log_sum, TRUE)
REDUCE (reduce_log_sum_exp, TRUE)
REDUCE (reduce_prod, FALSE)
REDUCE (reduce_sum_square, FALSE)

gboolean
nnp_op_arg_min_infer (NnpGraph *graph, NnpNode *node, GError **error)
{
  NnpArgMaxParams *p;

  if (!nnp_op_arg_max_infer (graph, node, error))
    return FALSE;
  p = node->params;
  p->min = TRUE;
  return TRUE;
}
