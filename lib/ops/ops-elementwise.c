/* libnnpipe: shape inference for the elementwise ops (Add, Sub, Mul, Div,
 * Pow, Max, Min, Sum, Equal, Less, Greater, Where, the activations, the
 * unary math ops, Clip and Cast).
 *
 * Broadcasting ops get their whole iteration planned here (NnpBroadcast in
 * elementwise-params.h): merged dims, per-input strides and the loop kind,
 * so the kernels only walk rows. */
#include "ops/ops.h"
#include "tensor-private.h"
#include "ops/elementwise-params.h"

#include <nnpipe/log.h>

#include <float.h>
#include <string.h>

/* ---------------------------------------------------------------- dtype sets */

static gboolean
is_float (NnpDType t)
{
  return t == NNP_DTYPE_FLOAT32 || t == NNP_DTYPE_FLOAT64;
}

/* float32/64 and every integer type (not bool, not float16) */
static gboolean
is_numeric (NnpDType t)
{
  switch (t) {
    case NNP_DTYPE_FLOAT32:
    case NNP_DTYPE_FLOAT64:
    case NNP_DTYPE_INT8:
    case NNP_DTYPE_UINT8:
    case NNP_DTYPE_INT16:
    case NNP_DTYPE_UINT16:
    case NNP_DTYPE_INT32:
    case NNP_DTYPE_INT64:
    case NNP_DTYPE_UINT32:
    case NNP_DTYPE_UINT64: return TRUE;
    default: return FALSE;
  }
}

static gboolean
is_signed_numeric (NnpDType t)
{
  return is_float (t) || t == NNP_DTYPE_INT8 || t == NNP_DTYPE_INT16 || t == NNP_DTYPE_INT32
         || t == NNP_DTYPE_INT64;
}

/* What Cast converts from and to. */
static gboolean
is_castable (NnpDType t)
{
  return is_numeric (t) || t == NNP_DTYPE_BOOL || nnp_dtype_is_half (t);
}

static gboolean
check_dtype (const NnpGraph *graph, const NnpNode *node, int k, gboolean (*ok) (NnpDType),
             GError **error)
{
  NnpValue *v = nnp_node_input (graph, node, k);

  if (!ok (v->dtype)) {
    nnp_node_set_error (error, NNP_ERROR_UNSUPPORTED, node,
                        "input %d ('%s') has dtype %s, which is not supported", k, v->name,
                        nnp_dtype_name (v->dtype));
    return FALSE;
  }
  return TRUE;
}

static void
set_output (NnpGraph *graph, NnpNode *node, NnpDType dtype, const NnpShape *shape)
{
  NnpValue *v = nnp_node_output (graph, node, 0);

  if (v == NULL)
    return;
  v->dtype = dtype;
  v->shape = *shape;
}

/* ---------------------------------------------------------------- broadcast plan */

static void
plan_broadcast (NnpBroadcast *bc, const NnpShape *const *shapes, int n, const NnpShape *out)
{
  int64_t strides[NNP_ELTWISE_MAX_INPUTS][NNP_MAX_RANK];
  int64_t dims[NNP_MAX_RANK];
  int rank = out->rank, r = 0, m = 0;
  gboolean any_bcast = FALSE, per_row = FALSE, repeat_row = FALSE, other = FALSE;

  memset (bc, 0, sizeof (*bc));
  bc->n_inputs = n;
  bc->numel = nnp_shape_numel (out);

  if (bc->numel <= 1) {
    /* empty, or one element: a flat loop (every input has numel elements).
     * Checked before the strides: with an empty output an input may hold
     * dims whose product overflows (found by fuzz-onnx-run) */
    bc->kind = NNP_BCAST_SAME;
    bc->rank = 1;
    bc->dims[0] = bc->numel;
    for (int i = 0; i < n; i++)
      bc->strides[i][0] = 1;
    return;
  }
  /* element strides of every input seen from the output (0 = broadcast),
   * dropping output dims of size 1 */
  for (int d = 0; d < rank; d++) {
    if (out->dims[d] == 1)
      continue;
    dims[r] = out->dims[d];
    for (int i = 0; i < n; i++) {
      const NnpShape *s = shapes[i];
      int k = d - (rank - s->rank);
      int64_t st = 0;
      if (k >= 0 && s->dims[k] != 1) {
        st = 1;
        for (int j = k + 1; j < s->rank; j++)
          st *= s->dims[j];
      }
      strides[i][r] = st;
    }
    r++;
  }
  /* merge dim k into the previous one when every input is contiguous across */
  for (int k = 0; k < r; k++) {
    gboolean merge = m > 0;
    for (int i = 0; merge && i < n; i++)
      merge = bc->strides[i][m - 1] == strides[i][k] * dims[k];
    if (merge) {
      bc->dims[m - 1] *= dims[k];
      for (int i = 0; i < n; i++)
        bc->strides[i][m - 1] = strides[i][k];
    } else {
      bc->dims[m] = dims[k];
      for (int i = 0; i < n; i++)
        bc->strides[i][m] = strides[i][k];
      m++;
    }
  }
  bc->rank = m;

  /* classify */
  for (int i = 0; i < n; i++) {
    gboolean whole = TRUE, zero = TRUE, outer_zero = TRUE;
    for (int d = 0; d < m; d++) {
      int64_t want = 1;
      for (int j = d + 1; j < m; j++)
        want *= bc->dims[j];
      if (bc->strides[i][d] != want)
        whole = FALSE;
      if (bc->strides[i][d] != 0)
        zero = FALSE;
      if (d < m - 1 && bc->strides[i][d] != 0)
        outer_zero = FALSE;
    }
    if (whole)
      continue;
    any_bcast = TRUE;
    if (zero)
      continue; /* one element: fine for every kind */
    if (bc->strides[i][m - 1] == 0)
      per_row = TRUE; /* one element per row */
    else if (outer_zero)
      repeat_row = TRUE; /* one row, repeated */
    else
      other = TRUE;
  }
  if (!any_bcast)
    bc->kind = NNP_BCAST_SAME;
  else if (m == 1)
    bc->kind = NNP_BCAST_SCALAR;
  else if (other || (per_row && repeat_row))
    bc->kind = NNP_BCAST_GENERAL;
  else if (per_row)
    bc->kind = NNP_BCAST_CHANNEL;
  else if (repeat_row)
    bc->kind = NNP_BCAST_INNER;
  else
    bc->kind = NNP_BCAST_SCALAR;
  if (bc->kind == NNP_BCAST_SAME) {
    /* a flat loop: present it as one dim */
    bc->rank = 1;
    bc->dims[0] = bc->numel;
    for (int i = 0; i < n; i++)
      bc->strides[i][0] = 1;
  } else if (bc->kind == NNP_BCAST_SCALAR && m > 1) {
    bc->rank = 1;
    bc->dims[0] = bc->numel;
    for (int i = 0; i < n; i++) {
      gboolean zero = TRUE;
      for (int d = 0; d < m; d++)
        zero = zero && bc->strides[i][d] == 0;
      bc->strides[i][0] = zero ? 0 : 1;
    }
    for (int d = 1; d < NNP_MAX_RANK; d++)
      for (int i = 0; i < n; i++)
        bc->strides[i][d] = 0;
  }
}

/* Legacy (opset < 7) broadcast=1 with an axis: B's dims line up with A's
 * starting at axis; rewrite B's shape as the numpy equivalent. */
static gboolean
legacy_shape (const NnpGraph *graph, const NnpNode *node, const NnpShape *a, const NnpShape *b,
              NnpShape *out, GError **error)
{
  const NnpAttr *axis_attr = nnp_node_get_attr (node, "axis");
  int axis;

  *out = *b;
  if (graph->opset >= 7 || nnp_node_attr_int (node, "broadcast", 0) == 0 || axis_attr == NULL)
    return TRUE;
  if (!nnp_normalize_axis (axis_attr->i, a->rank, &axis) || axis + b->rank > a->rank) {
    nnp_node_set_error (error, NNP_ERROR_INVALID, node,
                        "broadcast axis %" G_GINT64_FORMAT " does not fit", axis_attr->i);
    return FALSE;
  }
  out->rank = a->rank - axis;
  for (int k = b->rank; k < out->rank; k++)
    out->dims[k] = 1;
  return TRUE;
}

gboolean
nnp_op_plan_broadcast (const NnpGraph *graph, const NnpNode *node, int n, NnpBroadcast *bc,
                       NnpShape *out, GError **error)
{
  const NnpShape *shapes[NNP_ELTWISE_MAX_INPUTS];
  NnpShape legacy;

  g_return_val_if_fail (n >= 1 && n <= NNP_ELTWISE_MAX_INPUTS, FALSE);

  for (int i = 0; i < n; i++) {
    NnpValue *v = nnp_node_input (graph, node, i);
    if (v == NULL) {
      nnp_node_set_error (error, NNP_ERROR_INVALID, node, "input %d is missing", i);
      return FALSE;
    }
    shapes[i] = &v->shape;
  }
  if (n == 2) {
    if (!legacy_shape (graph, node, shapes[0], shapes[1], &legacy, error))
      return FALSE;
    shapes[1] = &legacy;
  }
  return nnp_op_plan_broadcast_shapes (node, shapes, n, bc, out, error);
}

gboolean
nnp_op_plan_broadcast_shapes (const NnpNode *node, const NnpShape *const *shapes, int n,
                              NnpBroadcast *bc, NnpShape *out, GError **error)
{
  if (!nnp_broadcast_shapes (shapes, n, out) || nnp_shape_numel (out) < 0) {
    GString *s = g_string_new (NULL);
    for (int i = 0; i < n; i++) {
      g_autofree char *t = nnp_shape_to_string (shapes[i]);
      g_string_append_printf (s, "%s%s", i ? ", " : "", t);
    }
    nnp_node_set_error (error, NNP_ERROR_INVALID, node, "cannot broadcast shapes %s", s->str);
    g_string_free (s, TRUE);
    return FALSE;
  }
  plan_broadcast (bc, shapes, n, out);
  {
    static const char *const kinds[] = { "general", "same", "scalar", "channel", "inner" };
    int64_t rows = bc->numel / MAX (bc->dims[bc->rank - 1], 1);
    NNP_TRACE ("nnp-graph",
               "node '%s' (%s): broadcast %s, %" G_GINT64_FORMAT " rows of %" G_GINT64_FORMAT,
               node->name, node->op_type, kinds[bc->kind], rows, bc->dims[bc->rank - 1]);
  }
  return TRUE;
}

/* Plan the broadcast of inputs [0, n) into node->params (NnpBinaryParams)
 * and set the output.  dtype checks are the caller's. */
static NnpBinaryParams *
infer_broadcast (NnpGraph *graph, NnpNode *node, int n, NnpDType out_dtype, GError **error)
{
  NnpBroadcast bc;
  NnpShape out;
  NnpBinaryParams *p;

  if (!nnp_op_plan_broadcast (graph, node, n, &bc, &out, error))
    return NULL;
  p = NNP_NODE_NEW_PARAMS (node, NnpBinaryParams);
  p->bc = bc;
  p->dtype = nnp_node_input (graph, node, 0)->dtype;
  p->dtype_b = n > 1 ? nnp_node_input (graph, node, 1)->dtype : p->dtype;
  set_output (graph, node, out_dtype, &out);
  return p;
}

/* All inputs numeric (per `ok`) and of the same dtype. */
static gboolean
check_same_dtype (const NnpGraph *graph, const NnpNode *node, gboolean (*ok) (NnpDType),
                  GError **error)
{
  NnpValue *x0 = nnp_node_input (graph, node, 0);

  for (int i = 0; i < node->n_inputs; i++) {
    NnpValue *v = nnp_node_input (graph, node, i);
    if (v == NULL)
      continue;
    if (v->dtype != x0->dtype) {
      nnp_node_set_error (error, NNP_ERROR_INVALID, node, "input %d is %s, input 0 is %s", i,
                          nnp_dtype_name (v->dtype), nnp_dtype_name (x0->dtype));
      return FALSE;
    }
  }
  return check_dtype (graph, node, 0, ok, error);
}

static gboolean
infer_arith (NnpGraph *graph, NnpNode *node, GError **error)
{
  if (!check_same_dtype (graph, node, is_numeric, error))
    return FALSE;
  return infer_broadcast (graph, node, node->n_inputs, nnp_node_input (graph, node, 0)->dtype,
                          error)
         != NULL;
}

gboolean
nnp_op_add_infer (NnpGraph *graph, NnpNode *node, GError **error)
{
  return infer_arith (graph, node, error);
}

gboolean
nnp_op_sub_infer (NnpGraph *graph, NnpNode *node, GError **error)
{
  return infer_arith (graph, node, error);
}

gboolean
nnp_op_mul_infer (NnpGraph *graph, NnpNode *node, GError **error)
{
  return infer_arith (graph, node, error);
}

gboolean
nnp_op_div_infer (NnpGraph *graph, NnpNode *node, GError **error)
{
  return infer_arith (graph, node, error);
}

gboolean
nnp_op_max_infer (NnpGraph *graph, NnpNode *node, GError **error)
{
  return infer_arith (graph, node, error);
}

gboolean
nnp_op_min_infer (NnpGraph *graph, NnpNode *node, GError **error)
{
  return infer_arith (graph, node, error);
}

gboolean
nnp_op_sum_infer (NnpGraph *graph, NnpNode *node, GError **error)
{
  return infer_arith (graph, node, error);
}

static gboolean
is_pow_base (NnpDType t)
{
  return t == NNP_DTYPE_FLOAT32 || t == NNP_DTYPE_FLOAT64 || t == NNP_DTYPE_INT32
         || t == NNP_DTYPE_INT64;
}

gboolean
nnp_op_pow_infer (NnpGraph *graph, NnpNode *node, GError **error)
{
  if (!check_dtype (graph, node, 0, is_pow_base, error)
      || !check_dtype (graph, node, 1, is_numeric, error))
    return FALSE;
  return infer_broadcast (graph, node, 2, nnp_node_input (graph, node, 0)->dtype, error) != NULL;
}

/* ---------------------------------------------------------------- comparisons, Where */

static gboolean
is_numeric_or_bool (NnpDType t)
{
  return is_numeric (t) || t == NNP_DTYPE_BOOL;
}

gboolean
nnp_op_equal_infer (NnpGraph *graph, NnpNode *node, GError **error)
{
  if (!check_same_dtype (graph, node, is_numeric_or_bool, error))
    return FALSE;
  return infer_broadcast (graph, node, 2, NNP_DTYPE_BOOL, error) != NULL;
}

gboolean
nnp_op_less_infer (NnpGraph *graph, NnpNode *node, GError **error)
{
  if (!check_same_dtype (graph, node, is_numeric, error))
    return FALSE;
  return infer_broadcast (graph, node, 2, NNP_DTYPE_BOOL, error) != NULL;
}

gboolean
nnp_op_greater_infer (NnpGraph *graph, NnpNode *node, GError **error)
{
  if (!check_same_dtype (graph, node, is_numeric, error))
    return FALSE;
  return infer_broadcast (graph, node, 2, NNP_DTYPE_BOOL, error) != NULL;
}

static gboolean
has_size_1_2_4_8 (NnpDType t)
{
  gsize s = nnp_dtype_size (t);
  return s == 1 || s == 2 || s == 4 || s == 8;
}

gboolean
nnp_op_where_infer (NnpGraph *graph, NnpNode *node, GError **error)
{
  NnpValue *c = nnp_node_input (graph, node, 0);
  NnpValue *x = nnp_node_input (graph, node, 1);
  NnpValue *y = nnp_node_input (graph, node, 2);
  NnpBinaryParams *p;

  if (c->dtype != NNP_DTYPE_BOOL) {
    nnp_node_set_error (error, NNP_ERROR_INVALID, node, "condition ('%s') must be bool, got %s",
                        c->name, nnp_dtype_name (c->dtype));
    return FALSE;
  }
  if (x->dtype != y->dtype) {
    nnp_node_set_error (error, NNP_ERROR_INVALID, node, "X is %s but Y is %s",
                        nnp_dtype_name (x->dtype), nnp_dtype_name (y->dtype));
    return FALSE;
  }
  if (!check_dtype (graph, node, 1, has_size_1_2_4_8, error))
    return FALSE;
  p = infer_broadcast (graph, node, 3, x->dtype, error);
  if (p == NULL)
    return FALSE;
  p->dtype = x->dtype;
  p->dtype_b = x->dtype;
  return TRUE;
}

/* ---------------------------------------------------------------- unary ops */

static NnpUnaryParams *
infer_unary (NnpGraph *graph, NnpNode *node, gboolean (*ok) (NnpDType), GError **error)
{
  NnpValue *x = nnp_node_input (graph, node, 0);
  NnpUnaryParams *p;

  if (!check_dtype (graph, node, 0, ok, error))
    return NULL;
  p = NNP_NODE_NEW_PARAMS (node, NnpUnaryParams);
  p->dtype = x->dtype;
  p->to = x->dtype;
  p->min_input = -1;
  p->max_input = -1;
  set_output (graph, node, x->dtype, &x->shape);
  return p;
}

gboolean
nnp_op_relu_infer (NnpGraph *graph, NnpNode *node, GError **error)
{
  return infer_unary (graph, node, is_signed_numeric, error) != NULL;
}

gboolean
nnp_op_leaky_relu_infer (NnpGraph *graph, NnpNode *node, GError **error)
{
  NnpUnaryParams *p = infer_unary (graph, node, is_float, error);

  if (p == NULL)
    return FALSE;
  p->alpha = nnp_node_attr_float (node, "alpha", 0.01f);
  return TRUE;
}

gboolean
nnp_op_hard_sigmoid_infer (NnpGraph *graph, NnpNode *node, GError **error)
{
  NnpUnaryParams *p = infer_unary (graph, node, is_float, error);

  if (p == NULL)
    return FALSE;
  p->alpha = nnp_node_attr_float (node, "alpha", 0.2f);
  p->beta = nnp_node_attr_float (node, "beta", 0.5f);
  return TRUE;
}

gboolean
nnp_op_hard_swish_infer (NnpGraph *graph, NnpNode *node, GError **error)
{
  return infer_unary (graph, node, is_float, error) != NULL;
}

gboolean
nnp_op_sigmoid_infer (NnpGraph *graph, NnpNode *node, GError **error)
{
  return infer_unary (graph, node, is_float, error) != NULL;
}

gboolean
nnp_op_tanh_infer (NnpGraph *graph, NnpNode *node, GError **error)
{
  return infer_unary (graph, node, is_float, error) != NULL;
}

gboolean
nnp_op_exp_infer (NnpGraph *graph, NnpNode *node, GError **error)
{
  return infer_unary (graph, node, is_float, error) != NULL;
}

gboolean
nnp_op_log_infer (NnpGraph *graph, NnpNode *node, GError **error)
{
  return infer_unary (graph, node, is_float, error) != NULL;
}

gboolean
nnp_op_erf_infer (NnpGraph *graph, NnpNode *node, GError **error)
{
  return infer_unary (graph, node, is_float, error) != NULL;
}

gboolean
nnp_op_sqrt_infer (NnpGraph *graph, NnpNode *node, GError **error)
{
  return infer_unary (graph, node, is_float, error) != NULL;
}

gboolean
nnp_op_reciprocal_infer (NnpGraph *graph, NnpNode *node, GError **error)
{
  return infer_unary (graph, node, is_float, error) != NULL;
}

gboolean
nnp_op_neg_infer (NnpGraph *graph, NnpNode *node, GError **error)
{
  return infer_unary (graph, node, is_signed_numeric, error) != NULL;
}

gboolean
nnp_op_abs_infer (NnpGraph *graph, NnpNode *node, GError **error)
{
  return infer_unary (graph, node, is_numeric, error) != NULL;
}

gboolean
nnp_op_floor_infer (NnpGraph *graph, NnpNode *node, GError **error)
{
  return infer_unary (graph, node, is_float, error) != NULL;
}

gboolean
nnp_op_ceil_infer (NnpGraph *graph, NnpNode *node, GError **error)
{
  return infer_unary (graph, node, is_float, error) != NULL;
}

/* ---------------------------------------------------------------- Clip */

/* One Clip bound from input k (opset >= 11): constant -> raw bytes in
 * params, else read at run time. */
static gboolean
clip_bound (const NnpGraph *graph, const NnpNode *node, int k, gboolean *has, int *input,
            guint8 *value, GError **error)
{
  NnpValue *x = nnp_node_input (graph, node, 0);
  NnpValue *v = nnp_node_input (graph, node, k);

  if (v == NULL)
    return TRUE;
  if (v->dtype != x->dtype) {
    nnp_node_set_error (error, NNP_ERROR_INVALID, node, "input %d ('%s') is %s, input 0 is %s", k,
                        v->name, nnp_dtype_name (v->dtype), nnp_dtype_name (x->dtype));
    return FALSE;
  }
  if (nnp_shape_numel (&v->shape) != 1) {
    g_autofree char *s = nnp_shape_to_string (&v->shape);
    nnp_node_set_error (error, NNP_ERROR_INVALID, node,
                        "input %d ('%s') must be a scalar, has shape %s", k, v->name, s);
    return FALSE;
  }
  *has = TRUE;
  if (v->constant != NULL)
    memcpy (value, v->constant->data, nnp_dtype_size (v->dtype));
  else
    *input = k;
  return TRUE;
}

gboolean
nnp_op_clip_infer (NnpGraph *graph, NnpNode *node, GError **error)
{
  NnpUnaryParams *p;

  if (graph->opset < 11 && node->n_inputs > 1 && node->inputs[1] >= 0) {
    nnp_node_set_error (error, NNP_ERROR_INVALID, node,
                        "has %d inputs; before opset 11 Clip takes min/max as attributes",
                        node->n_inputs);
    return FALSE;
  }
  p = infer_unary (graph, node, is_numeric, error);
  if (p == NULL)
    return FALSE;
  if (graph->opset < 11) {
    const NnpAttr *lo = nnp_node_get_attr (node, "min");
    const NnpAttr *hi = nnp_node_get_attr (node, "max");
    if (p->dtype != NNP_DTYPE_FLOAT32) {
      nnp_node_set_error (error, NNP_ERROR_UNSUPPORTED, node,
                          "dtype %s is not supported before opset 11", nnp_dtype_name (p->dtype));
      return FALSE;
    }
    if (lo != NULL) {
      float f = nnp_node_attr_float (node, "min", -FLT_MAX);
      p->has_min = TRUE;
      memcpy (p->min_value, &f, sizeof (f));
    }
    if (hi != NULL) {
      float f = nnp_node_attr_float (node, "max", FLT_MAX);
      p->has_max = TRUE;
      memcpy (p->max_value, &f, sizeof (f));
    }
    return TRUE;
  }
  return clip_bound (graph, node, 1, &p->has_min, &p->min_input, p->min_value, error)
         && clip_bound (graph, node, 2, &p->has_max, &p->max_input, p->max_value, error);
}

/* ---------------------------------------------------------------- Cast */

gboolean
nnp_op_cast_infer (NnpGraph *graph, NnpNode *node, GError **error)
{
  NnpValue *x = nnp_node_input (graph, node, 0);
  const NnpAttr *to_attr = nnp_node_get_attr (node, "to");
  NnpUnaryParams *p;
  NnpDType to;

  if (to_attr != NULL && to_attr->type == NNP_ATTR_STRING && graph->opset < 6) {
    /* Cast 1: 'to' names the type */
    static const char *const names[] = { "",        "FLOAT",  "UINT8",  "INT8",   "UINT16",
                                         "INT16",   "INT32",  "INT64",  "STRING", "BOOL",
                                         "FLOAT16", "DOUBLE", "UINT32", "UINT64" };
    to = NNP_DTYPE_UNDEFINED;
    for (guint i = 1; i < G_N_ELEMENTS (names); i++)
      if (g_ascii_strcasecmp (to_attr->s, names[i]) == 0)
        to = (NnpDType) i;
    if (to == NNP_DTYPE_UNDEFINED) {
      nnp_node_set_error (error, NNP_ERROR_UNSUPPORTED, node, "cast to '%s' is not supported",
                          to_attr->s);
      return FALSE;
    }
  } else if (to_attr == NULL || to_attr->type != NNP_ATTR_INT) {
    nnp_node_set_error (error, NNP_ERROR_INVALID, node, "has no integer 'to' attribute");
    return FALSE;
  } else {
    to = (NnpDType) to_attr->i;
  }
  if (!is_castable (to)) {
    nnp_node_set_error (error, NNP_ERROR_UNSUPPORTED, node, "cast to %s (%d) is not supported",
                        nnp_dtype_name (to), (int) to);
    return FALSE;
  }
  p = infer_unary (graph, node, is_castable, error);
  if (p == NULL)
    return FALSE;
  p->to = to;
  set_output (graph, node, to, &x->shape);
  return TRUE;
}
