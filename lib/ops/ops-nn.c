/* Shape inference for the nn ops: STUB, to be implemented. */
#include "ops/ops.h"

gboolean
nnp_op_batch_normalization_infer (NnpGraph *graph, NnpNode *node, GError **error)
{
  (void) graph;
  nnp_node_set_error (error, NNP_ERROR_UNSUPPORTED, node, "not implemented yet");
  return FALSE;
}

gboolean
nnp_op_max_pool_infer (NnpGraph *graph, NnpNode *node, GError **error)
{
  (void) graph;
  nnp_node_set_error (error, NNP_ERROR_UNSUPPORTED, node, "not implemented yet");
  return FALSE;
}

gboolean
nnp_op_average_pool_infer (NnpGraph *graph, NnpNode *node, GError **error)
{
  (void) graph;
  nnp_node_set_error (error, NNP_ERROR_UNSUPPORTED, node, "not implemented yet");
  return FALSE;
}

gboolean
nnp_op_global_average_pool_infer (NnpGraph *graph, NnpNode *node, GError **error)
{
  (void) graph;
  nnp_node_set_error (error, NNP_ERROR_UNSUPPORTED, node, "not implemented yet");
  return FALSE;
}

gboolean
nnp_op_global_max_pool_infer (NnpGraph *graph, NnpNode *node, GError **error)
{
  (void) graph;
  nnp_node_set_error (error, NNP_ERROR_UNSUPPORTED, node, "not implemented yet");
  return FALSE;
}

gboolean
nnp_op_softmax_infer (NnpGraph *graph, NnpNode *node, GError **error)
{
  (void) graph;
  nnp_node_set_error (error, NNP_ERROR_UNSUPPORTED, node, "not implemented yet");
  return FALSE;
}

gboolean
nnp_op_log_softmax_infer (NnpGraph *graph, NnpNode *node, GError **error)
{
  (void) graph;
  nnp_node_set_error (error, NNP_ERROR_UNSUPPORTED, node, "not implemented yet");
  return FALSE;
}

gboolean
nnp_op_resize_infer (NnpGraph *graph, NnpNode *node, GError **error)
{
  (void) graph;
  nnp_node_set_error (error, NNP_ERROR_UNSUPPORTED, node, "not implemented yet");
  return FALSE;
}

gboolean
nnp_op_pad_infer (NnpGraph *graph, NnpNode *node, GError **error)
{
  (void) graph;
  nnp_node_set_error (error, NNP_ERROR_UNSUPPORTED, node, "not implemented yet");
  return FALSE;
}

gboolean
nnp_op_reduce_mean_infer (NnpGraph *graph, NnpNode *node, GError **error)
{
  (void) graph;
  nnp_node_set_error (error, NNP_ERROR_UNSUPPORTED, node, "not implemented yet");
  return FALSE;
}

gboolean
nnp_op_reduce_sum_infer (NnpGraph *graph, NnpNode *node, GError **error)
{
  (void) graph;
  nnp_node_set_error (error, NNP_ERROR_UNSUPPORTED, node, "not implemented yet");
  return FALSE;
}

gboolean
nnp_op_reduce_max_infer (NnpGraph *graph, NnpNode *node, GError **error)
{
  (void) graph;
  nnp_node_set_error (error, NNP_ERROR_UNSUPPORTED, node, "not implemented yet");
  return FALSE;
}

gboolean
nnp_op_reduce_min_infer (NnpGraph *graph, NnpNode *node, GError **error)
{
  (void) graph;
  nnp_node_set_error (error, NNP_ERROR_UNSUPPORTED, node, "not implemented yet");
  return FALSE;
}

gboolean
nnp_op_arg_max_infer (NnpGraph *graph, NnpNode *node, GError **error)
{
  (void) graph;
  nnp_node_set_error (error, NNP_ERROR_UNSUPPORTED, node, "not implemented yet");
  return FALSE;
}

