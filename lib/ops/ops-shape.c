/* Shape inference for the shape ops: STUB, to be implemented. */
#include "ops/ops.h"

gboolean
nnp_op_constant_infer (NnpGraph *graph, NnpNode *node, GError **error)
{
  (void) graph;
  nnp_node_set_error (error, NNP_ERROR_UNSUPPORTED, node, "not implemented yet");
  return FALSE;
}

gboolean
nnp_op_identity_infer (NnpGraph *graph, NnpNode *node, GError **error)
{
  (void) graph;
  nnp_node_set_error (error, NNP_ERROR_UNSUPPORTED, node, "not implemented yet");
  return FALSE;
}

gboolean
nnp_op_dropout_infer (NnpGraph *graph, NnpNode *node, GError **error)
{
  (void) graph;
  nnp_node_set_error (error, NNP_ERROR_UNSUPPORTED, node, "not implemented yet");
  return FALSE;
}

gboolean
nnp_op_shape_infer (NnpGraph *graph, NnpNode *node, GError **error)
{
  (void) graph;
  nnp_node_set_error (error, NNP_ERROR_UNSUPPORTED, node, "not implemented yet");
  return FALSE;
}

gboolean
nnp_op_reshape_infer (NnpGraph *graph, NnpNode *node, GError **error)
{
  (void) graph;
  nnp_node_set_error (error, NNP_ERROR_UNSUPPORTED, node, "not implemented yet");
  return FALSE;
}

gboolean
nnp_op_flatten_infer (NnpGraph *graph, NnpNode *node, GError **error)
{
  (void) graph;
  nnp_node_set_error (error, NNP_ERROR_UNSUPPORTED, node, "not implemented yet");
  return FALSE;
}

gboolean
nnp_op_squeeze_infer (NnpGraph *graph, NnpNode *node, GError **error)
{
  (void) graph;
  nnp_node_set_error (error, NNP_ERROR_UNSUPPORTED, node, "not implemented yet");
  return FALSE;
}

gboolean
nnp_op_unsqueeze_infer (NnpGraph *graph, NnpNode *node, GError **error)
{
  (void) graph;
  nnp_node_set_error (error, NNP_ERROR_UNSUPPORTED, node, "not implemented yet");
  return FALSE;
}

gboolean
nnp_op_transpose_infer (NnpGraph *graph, NnpNode *node, GError **error)
{
  (void) graph;
  nnp_node_set_error (error, NNP_ERROR_UNSUPPORTED, node, "not implemented yet");
  return FALSE;
}

gboolean
nnp_op_concat_infer (NnpGraph *graph, NnpNode *node, GError **error)
{
  (void) graph;
  nnp_node_set_error (error, NNP_ERROR_UNSUPPORTED, node, "not implemented yet");
  return FALSE;
}

gboolean
nnp_op_split_infer (NnpGraph *graph, NnpNode *node, GError **error)
{
  (void) graph;
  nnp_node_set_error (error, NNP_ERROR_UNSUPPORTED, node, "not implemented yet");
  return FALSE;
}

gboolean
nnp_op_slice_infer (NnpGraph *graph, NnpNode *node, GError **error)
{
  (void) graph;
  nnp_node_set_error (error, NNP_ERROR_UNSUPPORTED, node, "not implemented yet");
  return FALSE;
}

gboolean
nnp_op_gather_infer (NnpGraph *graph, NnpNode *node, GError **error)
{
  (void) graph;
  nnp_node_set_error (error, NNP_ERROR_UNSUPPORTED, node, "not implemented yet");
  return FALSE;
}

gboolean
nnp_op_expand_infer (NnpGraph *graph, NnpNode *node, GError **error)
{
  (void) graph;
  nnp_node_set_error (error, NNP_ERROR_UNSUPPORTED, node, "not implemented yet");
  return FALSE;
}

gboolean
nnp_op_constant_of_shape_infer (NnpGraph *graph, NnpNode *node, GError **error)
{
  (void) graph;
  nnp_node_set_error (error, NNP_ERROR_UNSUPPORTED, node, "not implemented yet");
  return FALSE;
}

gboolean
nnp_op_range_infer (NnpGraph *graph, NnpNode *node, GError **error)
{
  (void) graph;
  nnp_node_set_error (error, NNP_ERROR_UNSUPPORTED, node, "not implemented yet");
  return FALSE;
}

