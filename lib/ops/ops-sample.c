/* libnnpipe: shape inference for GridSample (opsets 16 and 20, 4-D),
 * RoiAlign (opsets 10 and 16) and MaxUnpool (sample-params.h). */
#include "ops/ops.h"
#include "ops/sample-params.h"

#include <string.h>

static gboolean
check_float (const NnpNode *node, const NnpValue *v, int k, GError **error)
{
  if (v->dtype != NNP_DTYPE_FLOAT32 && v->dtype != NNP_DTYPE_FLOAT64) {
    nnp_node_set_error (error, NNP_ERROR_UNSUPPORTED, node,
                        "input %d ('%s') has dtype %s, which is not supported", k, v->name,
                        nnp_dtype_name (v->dtype));
    return FALSE;
  }
  return TRUE;
}

gboolean
nnp_op_grid_sample_infer (NnpGraph *graph, NnpNode *node, GError **error)
{
  NnpValue *x = nnp_node_input (graph, node, 0), *g = nnp_node_input (graph, node, 1);
  const char *mode =
      nnp_node_attr_string (node, "mode", graph->opset >= 20 ? "linear" : "bilinear");
  const char *pad = nnp_node_attr_string (node, "padding_mode", "zeros");
  NnpSampleParams *p;
  NnpShape out;

  if (!check_float (node, x, 0, error) || !check_float (node, g, 1, error))
    return FALSE;
  if (x->shape.rank != 4 || g->shape.rank != 4 || g->shape.dims[0] != x->shape.dims[0]
      || g->shape.dims[3] != 2 || g->dtype != x->dtype) {
    nnp_node_set_error (error, x->shape.rank != 4 ? NNP_ERROR_UNSUPPORTED : NNP_ERROR_INVALID, node,
                        "needs X [N, C, H, W] and grid [N, H_out, W_out, 2] of X's dtype");
    return FALSE;
  }
  p = NNP_NODE_NEW_PARAMS (node, NnpSampleParams);
  if (strcmp (mode, "bilinear") == 0 || strcmp (mode, "linear") == 0)
    p->mode = NNP_SAMPLE_LINEAR;
  else if (strcmp (mode, "nearest") == 0)
    p->mode = NNP_SAMPLE_NEAREST;
  else if (strcmp (mode, "bicubic") == 0 || strcmp (mode, "cubic") == 0)
    p->mode = NNP_SAMPLE_CUBIC;
  else {
    nnp_node_set_error (error, NNP_ERROR_INVALID, node, "unknown mode '%s'", mode);
    return FALSE;
  }
  if (strcmp (pad, "zeros") == 0)
    p->padding = NNP_SAMPLE_PAD_ZEROS;
  else if (strcmp (pad, "border") == 0)
    p->padding = NNP_SAMPLE_PAD_BORDER;
  else if (strcmp (pad, "reflection") == 0)
    p->padding = NNP_SAMPLE_PAD_REFLECTION;
  else {
    nnp_node_set_error (error, NNP_ERROR_INVALID, node, "unknown padding_mode '%s'", pad);
    return FALSE;
  }
  p->dtype = x->dtype;
  p->align_corners = nnp_node_attr_int (node, "align_corners", 0) != 0;
  p->in = x->shape;
  out = x->shape;
  out.dims[2] = g->shape.dims[1];
  out.dims[3] = g->shape.dims[2];
  p->out = out;
  nnp_op_set_output (graph, node, 0, x->dtype, &out);
  return TRUE;
}

gboolean
nnp_op_roi_align_infer (NnpGraph *graph, NnpNode *node, GError **error)
{
  NnpValue *x = nnp_node_input (graph, node, 0), *r = nnp_node_input (graph, node, 1);
  NnpValue *b = nnp_node_input (graph, node, 2);
  const char *mode = nnp_node_attr_string (node, "mode", "avg");
  const char *ct = nnp_node_attr_string (node, "coordinate_transformation_mode",
                                         graph->opset >= 16 ? "half_pixel" : "output_half_pixel");
  int64_t oh = nnp_node_attr_int (node, "output_height", 1);
  int64_t ow = nnp_node_attr_int (node, "output_width", 1);
  NnpSampleParams *p;
  NnpShape out = { .rank = 4 };

  if (!check_float (node, x, 0, error))
    return FALSE;
  if (x->shape.rank != 4 || r->dtype != x->dtype || r->shape.rank != 2 || r->shape.dims[1] != 4
      || (b->dtype != NNP_DTYPE_INT64 && b->dtype != NNP_DTYPE_INT32) || b->shape.rank != 1
      || b->shape.dims[0] != r->shape.dims[0] || oh < 1 || ow < 1) {
    nnp_node_set_error (error, NNP_ERROR_INVALID, node,
                        "needs X [N, C, H, W], rois [R, 4] of X's dtype, batch_indices [R]");
    return FALSE;
  }
  p = NNP_NODE_NEW_PARAMS (node, NnpSampleParams);
  if (strcmp (mode, "avg") == 0)
    p->mode = NNP_SAMPLE_LINEAR;
  else if (strcmp (mode, "max") == 0)
    p->mode = NNP_SAMPLE_NEAREST;
  else {
    nnp_node_set_error (error, NNP_ERROR_INVALID, node, "unknown mode '%s'", mode);
    return FALSE;
  }
  if (strcmp (ct, "half_pixel") != 0 && strcmp (ct, "output_half_pixel") != 0) {
    nnp_node_set_error (error, NNP_ERROR_INVALID, node,
                        "unknown coordinate_transformation_mode '%s'", ct);
    return FALSE;
  }
  p->dtype = x->dtype;
  p->align_corners = strcmp (ct, "half_pixel") == 0;
  p->spatial_scale = nnp_node_attr_float (node, "spatial_scale", 1.0f);
  p->sampling_ratio = nnp_node_attr_int (node, "sampling_ratio", 0);
  p->in = x->shape;
  out.dims[0] = r->shape.dims[0];
  out.dims[1] = x->shape.dims[1];
  out.dims[2] = oh;
  out.dims[3] = ow;
  p->out = out;
  nnp_op_set_output (graph, node, 0, x->dtype, &out);
  return TRUE;
}

gboolean
nnp_op_max_unpool_infer (NnpGraph *graph, NnpNode *node, GError **error)
{
  NnpValue *x = nnp_node_input (graph, node, 0), *ind = nnp_node_input (graph, node, 1);
  int n_k = 0, n_s = 0, n_p = 0, sp = x->shape.rank - 2;
  const int64_t *k = nnp_node_attr_ints (node, "kernel_shape", &n_k);
  const int64_t *s = nnp_node_attr_ints (node, "strides", &n_s);
  const int64_t *pads = nnp_node_attr_ints (node, "pads", &n_p);
  NnpSampleParams *p;
  NnpShape out = x->shape, unpooled;

  if (!check_float (node, x, 0, error))
    return FALSE;
  if (sp < 1 || ind->dtype != NNP_DTYPE_INT64 || !nnp_shape_equal (&ind->shape, &x->shape)
      || n_k != sp || (s && n_s != sp) || (pads && n_p != 2 * sp)) {
    nnp_node_set_error (
        error, NNP_ERROR_INVALID, node,
        "needs X and int64 indices of one shape and kernel_shape/strides/pads for its %d spatial dims",
        sp);
    return FALSE;
  }
  for (int d = 0; d < sp; d++)
    out.dims[2 + d] =
        (x->shape.dims[2 + d] - 1) * (s ? s[d] : 1) - (pads ? pads[d] + pads[sp + d] : 0) + k[d];
  unpooled = out;
  if (nnp_node_input (graph, node, 2)) {
    g_autofree int64_t *os = NULL;
    int n;
    if (!nnp_node_const_ints (graph, node, 2, &os, &n, error)
        || !nnp_op_ints_to_shape (node, "output_shape", os, n, &out, error))
      return FALSE;
    if (out.rank != x->shape.rank) {
      nnp_node_set_error (error, NNP_ERROR_INVALID, node, "output_shape has rank %d", out.rank);
      return FALSE;
    }
  }
  p = NNP_NODE_NEW_PARAMS (node, NnpSampleParams);
  p->dtype = x->dtype;
  p->in = x->shape;
  p->out = out;
  p->unpooled = unpooled;
  nnp_op_set_output (graph, node, 0, x->dtype, &out);
  return TRUE;
}
