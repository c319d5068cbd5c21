/* libnnpipe: the op table (generated from op-list.h) and helpers shared by
 * the ops' infer functions.  The op names (nnp_op_name, nnp_op_from_onnx)
 * live with the graph IR in lib/graph/graph.c: the graph layer does not call
 * into lib/ops (tools/check-layers.py). */
#include "ops/ops.h"

#include <string.h>

static const NnpOpDef op_defs[] = {
#define NNP_OP(ID, id, onnx, min_in, max_in, min_out, max_out) \
  [NNP_OP_##ID] = { onnx, min_in, max_in, min_out, max_out, nnp_op_##id##_infer },
#include <nnpipe/op-list.h>
#undef NNP_OP
};
G_STATIC_ASSERT (G_N_ELEMENTS (op_defs) == NNP_OP_COUNT);

const NnpOpDef *
nnp_op_def (NnpOpType op)
{
  if ((int) op < 0 || op >= NNP_OP_COUNT)
    return NULL;
  return &op_defs[op];
}

gboolean
nnp_op_infer (NnpGraph *graph, NnpNode *node, GError **error)
{
  const NnpOpDef *def = nnp_op_def (node->op);
  int n_in = node->n_inputs, n_out = node->n_outputs;

  if (def == NULL) {
    nnp_node_set_error (error, NNP_ERROR_UNSUPPORTED, node, "unsupported op '%s'", node->op_type);
    return FALSE;
  }
  /* trailing omitted inputs do not count */
  while (n_in > 0 && node->inputs[n_in - 1] < 0)
    n_in--;
  if (n_in < def->min_inputs || n_in > def->max_inputs) {
    nnp_node_set_error (error, NNP_ERROR_INVALID, node, "has %d inputs, expected %d to %d", n_in,
                        def->min_inputs, def->max_inputs);
    return FALSE;
  }
  if (n_out < def->min_outputs || n_out > def->max_outputs) {
    nnp_node_set_error (error, NNP_ERROR_INVALID, node, "has %d outputs, expected %d to %d", n_out,
                        def->min_outputs, def->max_outputs);
    return FALSE;
  }
  for (int k = 0; k < n_in; k++) {
    NnpValue *v = nnp_node_input (graph, node, k);
    if (v == NULL && k < def->min_inputs) {
      /* an empty name in a required position (ops read it unchecked) */
      nnp_node_set_error (error, NNP_ERROR_INVALID, node, "input %d is required but omitted", k);
      return FALSE;
    }
    if (v == NULL)
      continue;
    if (v->dtype == NNP_DTYPE_UNDEFINED || !nnp_shape_is_static (&v->shape)) {
      nnp_node_set_error (error, NNP_ERROR_INVALID, node,
                          "input %d ('%s') has no known type or shape", k, v->name);
      return FALSE;
    }
  }
  return def->infer (graph, node, error);
}

gboolean
nnp_broadcast_shapes (const NnpShape *const *shapes, int n, NnpShape *out)
{
  int rank = 0;

  for (int i = 0; i < n; i++)
    rank = MAX (rank, shapes[i]->rank);
  memset (out, 0, sizeof (*out));
  out->rank = rank;
  for (int d = 0; d < rank; d++) {
    int64_t dim = 1;
    for (int i = 0; i < n; i++) {
      int off = d - (rank - shapes[i]->rank);
      int64_t s;
      if (off < 0)
        continue;
      s = shapes[i]->dims[off];
      if (s == 1)
        continue;
      if (dim != 1 && dim != s)
        return FALSE;
      dim = s;
    }
    /* a 0-sized dim broadcasts against 1 only */
    for (int i = 0; i < n; i++) {
      int off = d - (rank - shapes[i]->rank);
      if (off >= 0 && shapes[i]->dims[off] == 0)
        dim = 0;
    }
    out->dims[d] = dim;
  }
  return TRUE;
}

gpointer
nnp_node_new_params (NnpNode *node, gsize size)
{
  g_free (node->params);
  node->params = g_malloc0 (size);
  node->params_size = size;
  return node->params;
}

gboolean
nnp_error_is_data_dependent (const GError *error)
{
  return error != NULL && g_error_matches (error, NNP_ERROR, NNP_ERROR_UNSUPPORTED)
         && strstr (error->message, NNP_DATA_DEPENDENT_NOTE) != NULL;
}

gboolean
nnp_node_const_ints (const NnpGraph *graph, const NnpNode *node, int input, int64_t **ints, int *n,
                     GError **error)
{
  NnpValue *v = nnp_node_input (graph, node, input);
  NnpTensor *t;
  int64_t count;

  *ints = NULL;
  *n = 0;
  if (v == NULL || v->constant == NULL) {
    nnp_node_set_error (
        error, NNP_ERROR_UNSUPPORTED, node,
        "input %d%s%s%s must be a constant (data-dependent shapes are not supported)", input,
        v ? " ('" : "", v ? v->name : "", v ? "')" : "");
    return FALSE;
  }
  t = v->constant;
  count = nnp_tensor_numel (t);
  if (count < 0 || count > G_MAXINT) {
    nnp_node_set_error (error, NNP_ERROR_INVALID, node, "input %d is too large", input);
    return FALSE;
  }
  if (t->dtype == NNP_DTYPE_INT64) {
    *ints = g_new (int64_t, MAX (count, 1));
    memcpy (*ints, t->data, count * sizeof (int64_t));
  } else if (t->dtype == NNP_DTYPE_INT32) {
    const int32_t *src = t->data;
    *ints = g_new (int64_t, MAX (count, 1));
    for (int64_t i = 0; i < count; i++)
      (*ints)[i] = src[i];
  } else {
    nnp_node_set_error (error, NNP_ERROR_INVALID, node,
                        "input %d ('%s') must be int64 or int32, got %s", input, v->name,
                        nnp_dtype_name (t->dtype));
    return FALSE;
  }
  *n = (int) count;
  return TRUE;
}

gboolean
nnp_normalize_axis (int64_t axis, int rank, int *out)
{
  if (axis < -rank || axis >= rank)
    return FALSE;
  *out = (int) (axis < 0 ? axis + rank : axis);
  return TRUE;
}
