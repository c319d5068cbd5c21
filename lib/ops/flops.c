/* libnnpipe: FLOP estimates per node, from inferred shapes only (no params,
 * so it works on any graph whose shapes are known).
 *
 * Conv / ConvTranspose / Gemm / MatMul: 2 * multiply-adds.  Pooling: output
 * elements x window.  Shape and data-movement ops: 0.  Everything else:
 * about one operation per output element (a few for the transcendental and
 * normalising ones).  Good enough for the partitioner's cost model. */
#include "ops/ops.h"

static double
numel (const NnpValue *v)
{
  int64_t n;

  if (v == NULL)
    return 0.;
  n = nnp_shape_numel (&v->shape);
  return n < 0 ? 0. : (double) n;
}

/* Product of the kernel_shape attribute (1 when absent). */
static double
window (const NnpNode *node)
{
  int n = 0;
  const int64_t *k = nnp_node_attr_ints (node, "kernel_shape", &n);
  double w = 1.;

  for (int i = 0; i < n; i++)
    w *= (double) MAX (k[i], 1);
  return w;
}

double
nnp_node_flops (const NnpGraph *graph, const NnpNode *node)
{
  const NnpValue *in0, *in1, *out;
  double y;

  g_return_val_if_fail (graph != NULL && node != NULL, 0.);
  in0 = nnp_node_input (graph, node, 0);
  in1 = nnp_node_input (graph, node, 1);
  out = nnp_node_output (graph, node, 0);
  y = numel (out);

  switch (node->op) {
    case NNP_OP_CONV: {
      /* each output element: (C / group) * kvol MACs = W's numel / M */
      double m = (in1 && in1->shape.rank >= 1) ? (double) in1->shape.dims[0] : 0.;
      return m > 0. ? 2. * y * numel (in1) / m : 0.;
    }
    case NNP_OP_QLINEAR_CONV:
      /* integer convolutions: 2 * multiply-adds too (W is input 3 here) */
      in1 = nnp_node_input (graph, node, 3);
      /* fall through */
    case NNP_OP_CONV_INTEGER:
    case NNP_OP_CONV_INTEGER_TO_FLOAT: {
      double m = (in1 && in1->shape.rank >= 1) ? (double) in1->shape.dims[0] : 0.;
      return m > 0. ? 2. * y * numel (in1) / m : 0.;
    }
    case NNP_OP_MAT_MUL_INTEGER:
    case NNP_OP_QLINEAR_MAT_MUL:
    case NNP_OP_MAT_MUL_INTEGER_TO_FLOAT:
      return in0 && in0->shape.rank >= 1 ? 2. * y * (double) in0->shape.dims[in0->shape.rank - 1]
                                         : 0.;
    case NNP_OP_CONV_TRANSPOSE:
      /* each input element: (M / group) * kvol MACs = W's numel / C */
      if (in1 && in1->shape.rank >= 1 && in1->shape.dims[0] > 0)
        return 2. * numel (in0) * numel (in1) / (double) in1->shape.dims[0];
      return 0.;
    case NNP_OP_MAT_MUL:
    case NNP_OP_GEMM: {
      /* output elements x K */
      double k = 0.;
      if (in0 && in0->shape.rank >= 1) {
        gboolean ta = node->op == NNP_OP_GEMM && nnp_node_attr_int (node, "transA", 0);
        int r = in0->shape.rank;
        k = (double) (ta && r >= 2 ? in0->shape.dims[r - 2] : in0->shape.dims[r - 1]);
      }
      return 2. * y * k + (node->op == NNP_OP_GEMM ? y : 0.);
    }
    case NNP_OP_MAX_POOL:
    case NNP_OP_AVERAGE_POOL: return y * window (node);
    case NNP_OP_GLOBAL_AVERAGE_POOL:
    case NNP_OP_GLOBAL_MAX_POOL:
    case NNP_OP_REDUCE_MEAN:
    case NNP_OP_REDUCE_SUM:
    case NNP_OP_REDUCE_MAX:
    case NNP_OP_REDUCE_MIN:
    case NNP_OP_ARG_MAX: return numel (in0);
    case NNP_OP_BATCH_NORMALIZATION: return 2. * y;
    case NNP_OP_SOFTMAX:
    case NNP_OP_LOG_SOFTMAX: return 5. * y;
    case NNP_OP_SIGMOID:
    case NNP_OP_TANH:
    case NNP_OP_EXP:
    case NNP_OP_LOG:
    case NNP_OP_ERF:
    case NNP_OP_POW:
    case NNP_OP_HARD_SWISH:
    case NNP_OP_HARD_SIGMOID: return 4. * y;
    case NNP_OP_RESIZE: return 4. * y;
    case NNP_OP_MAX:
    case NNP_OP_MIN:
    case NNP_OP_SUM: return y * MAX (node->n_inputs - 1, 1);
    case NNP_OP_CONSTANT:
    case NNP_OP_IDENTITY:
    case NNP_OP_DROPOUT:
    case NNP_OP_SHAPE:
    case NNP_OP_RESHAPE:
    case NNP_OP_FLATTEN:
    case NNP_OP_SQUEEZE:
    case NNP_OP_UNSQUEEZE:
    case NNP_OP_TRANSPOSE:
    case NNP_OP_CONCAT:
    case NNP_OP_SPLIT:
    case NNP_OP_SLICE:
    case NNP_OP_GATHER:
    case NNP_OP_EXPAND:
    case NNP_OP_CONSTANT_OF_SHAPE:
    case NNP_OP_RANGE:
    case NNP_OP_PAD:
    case NNP_OP_CAST:
    case NNP_OP_UNKNOWN: return 0.;
    default:
      /* elementwise and the rest: one op per output element, plus the fused activation */
      return y;
  }
}

double
nnp_node_io_bytes (const NnpGraph *graph, const NnpNode *node)
{
  double bytes = 0.;

  for (int q = 0; q < node->n_inputs; q++) {
    const NnpValue *v = nnp_node_input (graph, node, q);
    bytes += numel (v) * (v ? nnp_dtype_size (v->dtype) : 0);
  }
  for (int q = 0; q < node->n_outputs; q++) {
    const NnpValue *v = nnp_node_output (graph, node, q);
    bytes += numel (v) * (v ? nnp_dtype_size (v->dtype) : 0);
  }
  return bytes;
}
