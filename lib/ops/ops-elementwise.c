/* Shape inference for the elementwise ops: STUB, to be implemented. */
#include "ops/ops.h"

gboolean
nnp_op_add_infer (NnpGraph *graph, NnpNode *node, GError **error)
{
  (void) graph;
  nnp_node_set_error (error, NNP_ERROR_UNSUPPORTED, node, "not implemented yet");
  return FALSE;
}

gboolean
nnp_op_sub_infer (NnpGraph *graph, NnpNode *node, GError **error)
{
  (void) graph;
  nnp_node_set_error (error, NNP_ERROR_UNSUPPORTED, node, "not implemented yet");
  return FALSE;
}

gboolean
nnp_op_mul_infer (NnpGraph *graph, NnpNode *node, GError **error)
{
  (void) graph;
  nnp_node_set_error (error, NNP_ERROR_UNSUPPORTED, node, "not implemented yet");
  return FALSE;
}

gboolean
nnp_op_div_infer (NnpGraph *graph, NnpNode *node, GError **error)
{
  (void) graph;
  nnp_node_set_error (error, NNP_ERROR_UNSUPPORTED, node, "not implemented yet");
  return FALSE;
}

gboolean
nnp_op_pow_infer (NnpGraph *graph, NnpNode *node, GError **error)
{
  (void) graph;
  nnp_node_set_error (error, NNP_ERROR_UNSUPPORTED, node, "not implemented yet");
  return FALSE;
}

gboolean
nnp_op_max_infer (NnpGraph *graph, NnpNode *node, GError **error)
{
  (void) graph;
  nnp_node_set_error (error, NNP_ERROR_UNSUPPORTED, node, "not implemented yet");
  return FALSE;
}

gboolean
nnp_op_min_infer (NnpGraph *graph, NnpNode *node, GError **error)
{
  (void) graph;
  nnp_node_set_error (error, NNP_ERROR_UNSUPPORTED, node, "not implemented yet");
  return FALSE;
}

gboolean
nnp_op_sum_infer (NnpGraph *graph, NnpNode *node, GError **error)
{
  (void) graph;
  nnp_node_set_error (error, NNP_ERROR_UNSUPPORTED, node, "not implemented yet");
  return FALSE;
}

gboolean
nnp_op_equal_infer (NnpGraph *graph, NnpNode *node, GError **error)
{
  (void) graph;
  nnp_node_set_error (error, NNP_ERROR_UNSUPPORTED, node, "not implemented yet");
  return FALSE;
}

gboolean
nnp_op_less_infer (NnpGraph *graph, NnpNode *node, GError **error)
{
  (void) graph;
  nnp_node_set_error (error, NNP_ERROR_UNSUPPORTED, node, "not implemented yet");
  return FALSE;
}

gboolean
nnp_op_greater_infer (NnpGraph *graph, NnpNode *node, GError **error)
{
  (void) graph;
  nnp_node_set_error (error, NNP_ERROR_UNSUPPORTED, node, "not implemented yet");
  return FALSE;
}

gboolean
nnp_op_where_infer (NnpGraph *graph, NnpNode *node, GError **error)
{
  (void) graph;
  nnp_node_set_error (error, NNP_ERROR_UNSUPPORTED, node, "not implemented yet");
  return FALSE;
}

gboolean
nnp_op_relu_infer (NnpGraph *graph, NnpNode *node, GError **error)
{
  (void) graph;
  nnp_node_set_error (error, NNP_ERROR_UNSUPPORTED, node, "not implemented yet");
  return FALSE;
}

gboolean
nnp_op_leaky_relu_infer (NnpGraph *graph, NnpNode *node, GError **error)
{
  (void) graph;
  nnp_node_set_error (error, NNP_ERROR_UNSUPPORTED, node, "not implemented yet");
  return FALSE;
}

gboolean
nnp_op_clip_infer (NnpGraph *graph, NnpNode *node, GError **error)
{
  (void) graph;
  nnp_node_set_error (error, NNP_ERROR_UNSUPPORTED, node, "not implemented yet");
  return FALSE;
}

gboolean
nnp_op_hard_sigmoid_infer (NnpGraph *graph, NnpNode *node, GError **error)
{
  (void) graph;
  nnp_node_set_error (error, NNP_ERROR_UNSUPPORTED, node, "not implemented yet");
  return FALSE;
}

gboolean
nnp_op_hard_swish_infer (NnpGraph *graph, NnpNode *node, GError **error)
{
  (void) graph;
  nnp_node_set_error (error, NNP_ERROR_UNSUPPORTED, node, "not implemented yet");
  return FALSE;
}

gboolean
nnp_op_sigmoid_infer (NnpGraph *graph, NnpNode *node, GError **error)
{
  (void) graph;
  nnp_node_set_error (error, NNP_ERROR_UNSUPPORTED, node, "not implemented yet");
  return FALSE;
}

gboolean
nnp_op_tanh_infer (NnpGraph *graph, NnpNode *node, GError **error)
{
  (void) graph;
  nnp_node_set_error (error, NNP_ERROR_UNSUPPORTED, node, "not implemented yet");
  return FALSE;
}

gboolean
nnp_op_exp_infer (NnpGraph *graph, NnpNode *node, GError **error)
{
  (void) graph;
  nnp_node_set_error (error, NNP_ERROR_UNSUPPORTED, node, "not implemented yet");
  return FALSE;
}

gboolean
nnp_op_log_infer (NnpGraph *graph, NnpNode *node, GError **error)
{
  (void) graph;
  nnp_node_set_error (error, NNP_ERROR_UNSUPPORTED, node, "not implemented yet");
  return FALSE;
}

gboolean
nnp_op_erf_infer (NnpGraph *graph, NnpNode *node, GError **error)
{
  (void) graph;
  nnp_node_set_error (error, NNP_ERROR_UNSUPPORTED, node, "not implemented yet");
  return FALSE;
}

gboolean
nnp_op_sqrt_infer (NnpGraph *graph, NnpNode *node, GError **error)
{
  (void) graph;
  nnp_node_set_error (error, NNP_ERROR_UNSUPPORTED, node, "not implemented yet");
  return FALSE;
}

gboolean
nnp_op_reciprocal_infer (NnpGraph *graph, NnpNode *node, GError **error)
{
  (void) graph;
  nnp_node_set_error (error, NNP_ERROR_UNSUPPORTED, node, "not implemented yet");
  return FALSE;
}

gboolean
nnp_op_neg_infer (NnpGraph *graph, NnpNode *node, GError **error)
{
  (void) graph;
  nnp_node_set_error (error, NNP_ERROR_UNSUPPORTED, node, "not implemented yet");
  return FALSE;
}

gboolean
nnp_op_abs_infer (NnpGraph *graph, NnpNode *node, GError **error)
{
  (void) graph;
  nnp_node_set_error (error, NNP_ERROR_UNSUPPORTED, node, "not implemented yet");
  return FALSE;
}

gboolean
nnp_op_floor_infer (NnpGraph *graph, NnpNode *node, GError **error)
{
  (void) graph;
  nnp_node_set_error (error, NNP_ERROR_UNSUPPORTED, node, "not implemented yet");
  return FALSE;
}

gboolean
nnp_op_ceil_infer (NnpGraph *graph, NnpNode *node, GError **error)
{
  (void) graph;
  nnp_node_set_error (error, NNP_ERROR_UNSUPPORTED, node, "not implemented yet");
  return FALSE;
}

gboolean
nnp_op_cast_infer (NnpGraph *graph, NnpNode *node, GError **error)
{
  (void) graph;
  nnp_node_set_error (error, NNP_ERROR_UNSUPPORTED, node, "not implemented yet");
  return FALSE;
}

