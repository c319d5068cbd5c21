/* libnnpipe: shape inference for the normalisation and loss ops
 * (norm-params.h): LayerNormalization, InstanceNormalization,
 * GroupNormalization, MeanVarianceNormalization, LRN, LpNormalization,
 * NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss (inference). */
#include "ops/ops.h"
#include "ops/norm-params.h"

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

static NnpNormParams *
new_params (NnpNode *node, const NnpValue *x)
{
  NnpNormParams *p = NNP_NODE_NEW_PARAMS (node, NnpNormParams);

  p->dtype = x->dtype;
  p->in = x->shape;
  return p;
}

/* Inputs 1.. of x's dtype. */
static gboolean
check_same (const NnpGraph *graph, const NnpNode *node, int from, int to, GError **error)
{
  NnpValue *x = nnp_node_input (graph, node, 0);

  for (int k = from; k < to; k++) {
    NnpValue *v = nnp_node_input (graph, node, k);
    if (v && v->dtype != x->dtype) {
      nnp_node_set_error (error, NNP_ERROR_INVALID, node, "input %d is %s, input 0 is %s", k,
                          nnp_dtype_name (v->dtype), nnp_dtype_name (x->dtype));
      return FALSE;
    }
  }
  return TRUE;
}

/* Strides of v broadcast (numpy, right-aligned) over dims [axis, rank) of x. */
static gboolean
norm_strides (const NnpNode *node, const NnpValue *v, const NnpShape *x, int axis, int64_t *strides,
              GError **error)
{
  int n = x->rank - axis;
  int64_t acc = 1;

  memset (strides, 0, sizeof (int64_t) * NNP_MAX_RANK);
  if (v == NULL)
    return TRUE;
  if (v->shape.rank > n) {
    nnp_node_set_error (error, NNP_ERROR_INVALID, node,
                        "'%s' has rank %d, more than the %d normalised dims", v->name,
                        v->shape.rank, n);
    return FALSE;
  }
  for (int k = v->shape.rank - 1; k >= 0; k--) {
    int d = axis + n - v->shape.rank + k;
    int64_t s = v->shape.dims[k];
    if (s != 1 && s != x->dims[d]) {
      nnp_node_set_error (error, NNP_ERROR_INVALID, node,
                          "'%s' does not broadcast to the normalised dims", v->name);
      return FALSE;
    }
    strides[d] = s == 1 ? 0 : acc;
    acc *= s;
  }
  return TRUE;
}

gboolean
nnp_op_layer_normalization_infer (NnpGraph *graph, NnpNode *node, GError **error)
{
  NnpValue *x = nnp_node_input (graph, node, 0);
  NnpNormParams *p;
  NnpShape red;
  int axis;

  if (!check_float (node, x, 0, error) || !check_same (graph, node, 1, 3, error))
    return FALSE;
  if (!nnp_normalize_axis (nnp_node_attr_int (node, "axis", -1), x->shape.rank, &axis)) {
    nnp_node_set_error (error, NNP_ERROR_INVALID, node, "axis is out of range for rank %d",
                        x->shape.rank);
    return FALSE;
  }
  p = new_params (node, x);
  p->axis = axis;
  p->epsilon = nnp_node_attr_float (node, "epsilon", 1e-5f);
  if (!norm_strides (node, nnp_node_input (graph, node, 1), &x->shape, axis, p->scale_strides,
                     error)
      || !norm_strides (node, nnp_node_input (graph, node, 2), &x->shape, axis, p->bias_strides,
                        error))
    return FALSE;
  red = x->shape;
  for (int d = axis; d < red.rank; d++)
    red.dims[d] = 1;
  nnp_op_set_output (graph, node, 0, x->dtype, &x->shape);
  /* Mean and InvStdDev: stash_type float32 (the default) */
  nnp_op_set_output (graph, node, 1, NNP_DTYPE_FLOAT32, &red);
  nnp_op_set_output (graph, node, 2, NNP_DTYPE_FLOAT32, &red);
  return TRUE;
}

/* x [N, C, ...]; inputs 1, 2 of `count` elements each. */
static NnpNormParams *
channel_norm (NnpGraph *graph, NnpNode *node, int64_t count, GError **error)
{
  NnpValue *x = nnp_node_input (graph, node, 0);

  if (!check_float (node, x, 0, error) || !check_same (graph, node, 1, 3, error))
    return NULL;
  if (x->shape.rank < 2) {
    nnp_node_set_error (error, NNP_ERROR_INVALID, node, "input has rank %d, expected >= 2",
                        x->shape.rank);
    return NULL;
  }
  if (count < 0)
    count = x->shape.dims[1];
  for (int k = 1; k < 3; k++) {
    NnpValue *v = nnp_node_input (graph, node, k);
    if (v == NULL || nnp_shape_numel (&v->shape) != count) {
      nnp_node_set_error (error, NNP_ERROR_INVALID, node,
                          "input %d must have %" G_GINT64_FORMAT " elements", k, count);
      return NULL;
    }
  }
  nnp_op_set_output (graph, node, 0, x->dtype, &x->shape);
  return new_params (node, x);
}

gboolean
nnp_op_instance_normalization_infer (NnpGraph *graph, NnpNode *node, GError **error)
{
  NnpNormParams *p = channel_norm (graph, node, -1, error);

  if (p == NULL)
    return FALSE;
  p->epsilon = nnp_node_attr_float (node, "epsilon", 1e-5f);
  return TRUE;
}

gboolean
nnp_op_group_normalization_infer (NnpGraph *graph, NnpNode *node, GError **error)
{
  NnpValue *x = nnp_node_input (graph, node, 0);
  NnpValue *s = nnp_node_input (graph, node, 1);
  int64_t g = nnp_node_attr_int (node, "num_groups", 0);
  gboolean per_group;
  NnpNormParams *p;

  if (x->shape.rank < 2 || g < 1 || x->shape.dims[1] % g != 0) {
    nnp_node_set_error (error, NNP_ERROR_INVALID, node,
                        "num_groups %" G_GINT64_FORMAT " does not divide the channels", g);
    return FALSE;
  }
  /* opset 18: scale and bias per group; 21: per channel */
  per_group = graph->opset < 21 && nnp_shape_numel (&s->shape) == g;
  p = channel_norm (graph, node, per_group ? g : x->shape.dims[1], error);
  if (p == NULL)
    return FALSE;
  p->epsilon = nnp_node_attr_float (node, "epsilon", 1e-5f);
  p->size = g;
  p->per_group = per_group;
  return TRUE;
}

gboolean
nnp_op_mean_variance_normalization_infer (NnpGraph *graph, NnpNode *node, GError **error)
{
  static const int64_t dflt[] = { 0, 2, 3 };
  NnpValue *x = nnp_node_input (graph, node, 0);
  const int64_t *axes;
  NnpNormParams *p;
  int n;

  if (!check_float (node, x, 0, error))
    return FALSE;
  axes = nnp_node_attr_ints (node, "axes", &n);
  if (axes == NULL) {
    axes = dflt;
    n = 3;
  }
  p = new_params (node, x);
  for (int i = 0; i < n; i++) {
    int a;
    if (!nnp_normalize_axis (axes[i], x->shape.rank, &a)) {
      nnp_node_set_error (error, NNP_ERROR_INVALID, node,
                          "axis %" G_GINT64_FORMAT " is out of range for rank %d", axes[i],
                          x->shape.rank);
      return FALSE;
    }
    p->reduced[a] = TRUE;
  }
  nnp_op_set_output (graph, node, 0, x->dtype, &x->shape);
  return TRUE;
}

gboolean
nnp_op_lrn_infer (NnpGraph *graph, NnpNode *node, GError **error)
{
  NnpValue *x = nnp_node_input (graph, node, 0);
  NnpNormParams *p;
  int64_t size = nnp_node_attr_int (node, "size", 0);

  if (!check_float (node, x, 0, error))
    return FALSE;
  if (x->shape.rank < 2 || size < 1) {
    nnp_node_set_error (error, NNP_ERROR_INVALID, node,
                        "needs rank >= 2 and a size >= 1 (got %d, %" G_GINT64_FORMAT ")",
                        x->shape.rank, size);
    return FALSE;
  }
  p = new_params (node, x);
  p->size = size;
  p->alpha = nnp_node_attr_float (node, "alpha", 1e-4f);
  p->beta = nnp_node_attr_float (node, "beta", 0.75f);
  p->epsilon = nnp_node_attr_float (node, "bias", 1.0f);
  nnp_op_set_output (graph, node, 0, x->dtype, &x->shape);
  return TRUE;
}

gboolean
nnp_op_lp_normalization_infer (NnpGraph *graph, NnpNode *node, GError **error)
{
  NnpValue *x = nnp_node_input (graph, node, 0);
  int64_t pn = nnp_node_attr_int (node, "p", 2);
  NnpNormParams *p;
  int axis;

  if (!check_float (node, x, 0, error))
    return FALSE;
  if ((pn != 1 && pn != 2)
      || !nnp_normalize_axis (nnp_node_attr_int (node, "axis", -1), x->shape.rank, &axis)) {
    nnp_node_set_error (error, NNP_ERROR_INVALID, node, "p must be 1 or 2 and axis in range");
    return FALSE;
  }
  p = new_params (node, x);
  p->axis = axis;
  p->size = pn;
  nnp_op_set_output (graph, node, 0, x->dtype, &x->shape);
  return TRUE;
}

/* ---------------------------------------------------------------- losses */

static gboolean
loss_infer (NnpGraph *graph, NnpNode *node, gboolean softmax, GError **error)
{
  NnpValue *x = nnp_node_input (graph, node, 0);
  NnpValue *t = nnp_node_input (graph, node, 1);
  NnpValue *w = nnp_node_input (graph, node, 2);
  const char *red = nnp_node_attr_string (node, "reduction", "mean");
  NnpNormParams *p;
  NnpShape scalar = { .rank = 0 };
  gboolean ok;

  if (!check_float (node, x, 0, error) || !check_same (graph, node, 2, 3, error))
    return FALSE;
  ok = x->shape.rank >= 2 && (t->dtype == NNP_DTYPE_INT32 || t->dtype == NNP_DTYPE_INT64)
       && t->shape.rank == x->shape.rank - 1 && t->shape.dims[0] == x->shape.dims[0];
  for (int d = 1; ok && d < t->shape.rank; d++)
    ok = t->shape.dims[d] == x->shape.dims[d + 1];
  if (!ok) {
    nnp_node_set_error (error, NNP_ERROR_INVALID, node,
                        "target must be int32/int64 of the input's shape without dim 1");
    return FALSE;
  }
  if (w && (w->shape.rank != 1 || w->shape.dims[0] != x->shape.dims[1])) {
    nnp_node_set_error (error, NNP_ERROR_INVALID, node, "weight must have C elements");
    return FALSE;
  }
  p = new_params (node, x);
  if (strcmp (red, "none") == 0)
    p->reduction = NNP_LOSS_NONE;
  else if (strcmp (red, "sum") == 0)
    p->reduction = NNP_LOSS_SUM;
  else if (strcmp (red, "mean") == 0)
    p->reduction = NNP_LOSS_MEAN;
  else {
    nnp_node_set_error (error, NNP_ERROR_INVALID, node, "unknown reduction '%s'", red);
    return FALSE;
  }
  p->has_ignore = nnp_node_get_attr (node, "ignore_index") != NULL;
  p->ignore_index = nnp_node_attr_int (node, "ignore_index", 0);
  nnp_op_set_output (graph, node, 0, x->dtype, p->reduction == NNP_LOSS_NONE ? &t->shape : &scalar);
  if (softmax)
    nnp_op_set_output (graph, node, 1, x->dtype, &x->shape);
  return TRUE;
}

gboolean
nnp_op_negative_log_likelihood_loss_infer (NnpGraph *graph, NnpNode *node, GError **error)
{
  return loss_infer (graph, node, FALSE, error);
}

gboolean
nnp_op_softmax_cross_entropy_loss_infer (NnpGraph *graph, NnpNode *node, GError **error)
{
  return loss_infer (graph, node, TRUE, error);
}
