/* libnnpipe: shape inference for the signal ops HannWindow, HammingWindow,
 * BlackmanWindow (size a constant) and DFT (opset 17 `axis` attribute,
 * opset 20 `axis` input; dft_length a constant; inverse, onesided).
 * Kernels: lib/backends/cpu/cpu-signal.c.  Parameters: NnpIndexParams
 * (in: input shape, idx: output shape, axis, k: DFT length, flag: inverse /
 * periodic, flag2: onesided, to: output dtype). */
#include "ops/ops.h"
#include "ops/index-params.h"

static gboolean
window_infer (NnpGraph *graph, NnpNode *node, GError **error)
{
  NnpDType to = (NnpDType) nnp_node_attr_int (node, "output_datatype", NNP_DTYPE_FLOAT32);
  g_autofree int64_t *size = NULL;
  NnpIndexParams *p;
  NnpShape out = { .rank = 1 };
  int n;

  if (to != NNP_DTYPE_FLOAT32 && to != NNP_DTYPE_FLOAT64) {
    nnp_node_set_error (error, NNP_ERROR_UNSUPPORTED, node, "output_datatype %s is not supported",
                        nnp_dtype_name (to));
    return FALSE;
  }
  if (!nnp_node_const_ints (graph, node, 0, &size, &n, error))
    return FALSE;
  if (n != 1 || size[0] < 0 || size[0] > G_MAXINT32) {
    nnp_node_set_error (error, NNP_ERROR_INVALID, node, "size must be one value in 0..2^31");
    return FALSE;
  }
  p = NNP_NODE_NEW_PARAMS (node, NnpIndexParams);
  p->to = to;
  p->k = size[0];
  p->flag = nnp_node_attr_int (node, "periodic", 1) != 0;
  out.dims[0] = size[0];
  nnp_op_set_output (graph, node, 0, to, &out);
  return TRUE;
}

gboolean
nnp_op_hann_window_infer (NnpGraph *graph, NnpNode *node, GError **error)
{
  return window_infer (graph, node, error);
}

gboolean
nnp_op_hamming_window_infer (NnpGraph *graph, NnpNode *node, GError **error)
{
  return window_infer (graph, node, error);
}

gboolean
nnp_op_blackman_window_infer (NnpGraph *graph, NnpNode *node, GError **error)
{
  return window_infer (graph, node, error);
}

gboolean
nnp_op_dft_infer (NnpGraph *graph, NnpNode *node, GError **error)
{
  NnpValue *x = nnp_node_input (graph, node, 0);
  int rank = x->shape.rank;
  int64_t axis = nnp_node_attr_int (node, "axis", graph->opset >= 20 ? -2 : 1), len;
  NnpIndexParams *p;
  NnpShape out;
  int a;

  if (x->dtype != NNP_DTYPE_FLOAT32 && x->dtype != NNP_DTYPE_FLOAT64) {
    nnp_node_set_error (error, NNP_ERROR_UNSUPPORTED, node, "input 0 has dtype %s",
                        nnp_dtype_name (x->dtype));
    return FALSE;
  }
  if (rank < 3 || (x->shape.dims[rank - 1] != 1 && x->shape.dims[rank - 1] != 2)) {
    nnp_node_set_error (error, NNP_ERROR_INVALID, node,
                        "input must be [batch, signal..., 1 or 2], has rank %d", rank);
    return FALSE;
  }
  if (graph->opset >= 20 && nnp_node_input (graph, node, 2)) {
    g_autofree int64_t *av = NULL;
    int n;
    if (!nnp_node_const_ints (graph, node, 2, &av, &n, error))
      return FALSE;
    axis = n == 1 ? av[0] : axis;
  }
  if (!nnp_normalize_axis (axis, rank, &a) || a == 0 || a == rank - 1) {
    nnp_node_set_error (error, NNP_ERROR_INVALID, node,
                        "axis %" G_GINT64_FORMAT " is not a signal dim", axis);
    return FALSE;
  }
  len = x->shape.dims[a];
  if (nnp_node_input (graph, node, 1)) {
    g_autofree int64_t *lv = NULL;
    int n;
    if (!nnp_node_const_ints (graph, node, 1, &lv, &n, error))
      return FALSE;
    if (n != 1 || lv[0] < 1 || lv[0] > G_MAXINT32) {
      nnp_node_set_error (error, NNP_ERROR_INVALID, node, "dft_length must be one value >= 1");
      return FALSE;
    }
    len = lv[0];
  }
  p = NNP_NODE_NEW_PARAMS (node, NnpIndexParams);
  p->dtype = p->to = x->dtype;
  p->in = x->shape;
  p->axis = a;
  p->k = len;
  p->flag = nnp_node_attr_int (node, "inverse", 0) != 0;
  p->flag2 = nnp_node_attr_int (node, "onesided", 0) != 0;
  out = x->shape;
  out.dims[a] = p->flag2 ? len / 2 + 1 : len;
  out.dims[rank - 1] = 2;
  p->idx = out;
  nnp_op_set_output (graph, node, 0, x->dtype, &out);
  return TRUE;
}
