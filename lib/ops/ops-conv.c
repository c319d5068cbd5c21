/* Shape inference for the conv ops: STUB, to be implemented. */
#include "ops/ops.h"

gboolean
nnp_op_conv_infer (NnpGraph *graph, NnpNode *node, GError **error)
{
  (void) graph;
  nnp_node_set_error (error, NNP_ERROR_UNSUPPORTED, node, "not implemented yet");
  return FALSE;
}

gboolean
nnp_op_conv_transpose_infer (NnpGraph *graph, NnpNode *node, GError **error)
{
  (void) graph;
  nnp_node_set_error (error, NNP_ERROR_UNSUPPORTED, node, "not implemented yet");
  return FALSE;
}

gboolean
nnp_op_mat_mul_infer (NnpGraph *graph, NnpNode *node, GError **error)
{
  (void) graph;
  nnp_node_set_error (error, NNP_ERROR_UNSUPPORTED, node, "not implemented yet");
  return FALSE;
}

gboolean
nnp_op_gemm_infer (NnpGraph *graph, NnpNode *node, GError **error)
{
  (void) graph;
  nnp_node_set_error (error, NNP_ERROR_UNSUPPORTED, node, "not implemented yet");
  return FALSE;
}

