/* libnnpipe: shape inference for the math ops (math-params.h): the
 * trigonometric and hyperbolic functions, Softplus, Softsign, Elu, Selu,
 * Celu, ThresholdedRelu, Shrink, Mish, Gelu, Round, Sign, IsNaN, IsInf, Not,
 * BitwiseNot, And, Or, Xor, BitwiseAnd/Or/Xor, BitShift, Mod,
 * GreaterOrEqual, LessOrEqual, PRelu and Mean.
 *
 * Attribute defaults and dtype sets follow the ONNX operator spec (opsets
 * 7 to 21); broadcasting ops plan their iteration with
 * nnp_op_plan_broadcast() as Add does. */
#include "ops/ops.h"
#include "ops/math-params.h"

#include <string.h>

/* ---------------------------------------------------------------- dtype sets */

static gboolean
is_float (NnpDType t)
{
  return t == NNP_DTYPE_FLOAT32 || t == NNP_DTYPE_FLOAT64;
}

static gboolean
is_int (NnpDType t)
{
  switch (t) {
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
is_uint (NnpDType t)
{
  return t == NNP_DTYPE_UINT8 || t == NNP_DTYPE_UINT16 || t == NNP_DTYPE_UINT32
         || t == NNP_DTYPE_UINT64;
}

static gboolean
is_numeric (NnpDType t)
{
  return is_float (t) || is_int (t);
}

static gboolean
is_bool (NnpDType t)
{
  return t == NNP_DTYPE_BOOL;
}

static gboolean
check_input (const NnpGraph *graph, const NnpNode *node, int k, gboolean (*ok) (NnpDType),
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

/* ---------------------------------------------------------------- unary */

/* Output of input 0's shape and `out` dtype (UNDEFINED: input's dtype). */
static NnpMathParams *
unary (NnpGraph *graph, NnpNode *node, gboolean (*ok) (NnpDType), NnpDType out, GError **error)
{
  NnpValue *x = nnp_node_input (graph, node, 0);
  NnpMathParams *p;

  if (!check_input (graph, node, 0, ok, error))
    return NULL;
  p = NNP_NODE_NEW_PARAMS (node, NnpMathParams);
  p->dtype = x->dtype;
  p->out_dtype = out == NNP_DTYPE_UNDEFINED ? x->dtype : out;
  nnp_op_set_output (graph, node, 0, p->out_dtype, &x->shape);
  return p;
}

#define FLOAT_UNARY(id) \
  gboolean nnp_op_##id##_infer (NnpGraph *graph, NnpNode *node, GError **error) \
  { \
    return unary (graph, node, is_float, NNP_DTYPE_UNDEFINED, error) != NULL; \
  }

FLOAT_UNARY (cos)
FLOAT_UNARY (sin)
FLOAT_UNARY (tan)
FLOAT_UNARY (acos)
FLOAT_UNARY (asin)
FLOAT_UNARY (atan)
FLOAT_UNARY (cosh)
FLOAT_UNARY (sinh)
FLOAT_UNARY (acosh)
FLOAT_UNARY (asinh)
FLOAT_UNARY (atanh)
FLOAT_UNARY (softplus)
FLOAT_UNARY (softsign)
FLOAT_UNARY (mish)
FLOAT_UNARY (round)

/* A float unary op with attribute alpha (and beta). */
static gboolean
float_alpha (NnpGraph *graph, NnpNode *node, const char *a_name, float a_dflt, const char *b_name,
             float b_dflt, GError **error)
{
  NnpMathParams *p = unary (graph, node, is_float, NNP_DTYPE_UNDEFINED, error);

  if (p == NULL)
    return FALSE;
  p->alpha = nnp_node_attr_float (node, a_name, a_dflt);
  if (b_name)
    p->beta = nnp_node_attr_float (node, b_name, b_dflt);
  return TRUE;
}

gboolean
nnp_op_elu_infer (NnpGraph *graph, NnpNode *node, GError **error)
{
  return float_alpha (graph, node, "alpha", 1.0f, NULL, 0, error);
}

gboolean
nnp_op_selu_infer (NnpGraph *graph, NnpNode *node, GError **error)
{
  return float_alpha (graph, node, "alpha", 1.67326319217681884765625f, "gamma",
                      1.05070102214813232421875f, error);
}

gboolean
nnp_op_celu_infer (NnpGraph *graph, NnpNode *node, GError **error)
{
  return float_alpha (graph, node, "alpha", 1.0f, NULL, 0, error);
}

gboolean
nnp_op_thresholded_relu_infer (NnpGraph *graph, NnpNode *node, GError **error)
{
  return float_alpha (graph, node, "alpha", 1.0f, NULL, 0, error);
}

gboolean
nnp_op_shrink_infer (NnpGraph *graph, NnpNode *node, GError **error)
{
  NnpMathParams *p = unary (graph, node, is_numeric, NNP_DTYPE_UNDEFINED, error);

  if (p == NULL)
    return FALSE;
  p->alpha = nnp_node_attr_float (node, "lambd", 0.5f);
  p->beta = nnp_node_attr_float (node, "bias", 0.0f);
  return TRUE;
}

gboolean
nnp_op_gelu_infer (NnpGraph *graph, NnpNode *node, GError **error)
{
  const char *approx = nnp_node_attr_string (node, "approximate", "none");
  NnpMathParams *p;

  if (strcmp (approx, "none") != 0 && strcmp (approx, "tanh") != 0) {
    nnp_node_set_error (error, NNP_ERROR_INVALID, node, "approximate '%s' is not 'none' or 'tanh'",
                        approx);
    return FALSE;
  }
  p = unary (graph, node, is_float, NNP_DTYPE_UNDEFINED, error);
  if (p == NULL)
    return FALSE;
  p->flag = strcmp (approx, "tanh") == 0;
  return TRUE;
}

gboolean
nnp_op_sign_infer (NnpGraph *graph, NnpNode *node, GError **error)
{
  return unary (graph, node, is_numeric, NNP_DTYPE_UNDEFINED, error) != NULL;
}

gboolean
nnp_op_is_nan_infer (NnpGraph *graph, NnpNode *node, GError **error)
{
  return unary (graph, node, is_float, NNP_DTYPE_BOOL, error) != NULL;
}

gboolean
nnp_op_is_inf_infer (NnpGraph *graph, NnpNode *node, GError **error)
{
  NnpMathParams *p = unary (graph, node, is_float, NNP_DTYPE_BOOL, error);

  if (p == NULL)
    return FALSE;
  p->flag = (nnp_node_attr_int (node, "detect_negative", 1) != 0)
            | (nnp_node_attr_int (node, "detect_positive", 1) != 0) << 1;
  return TRUE;
}

gboolean
nnp_op_not_infer (NnpGraph *graph, NnpNode *node, GError **error)
{
  return unary (graph, node, is_bool, NNP_DTYPE_UNDEFINED, error) != NULL;
}

gboolean
nnp_op_bitwise_not_infer (NnpGraph *graph, NnpNode *node, GError **error)
{
  return unary (graph, node, is_int, NNP_DTYPE_UNDEFINED, error) != NULL;
}

/* ---------------------------------------------------------------- broadcasting */

/* Inputs [0, n_inputs) of one dtype accepted by `ok`, broadcast together. */
static NnpMathParams *
broadcasting (NnpGraph *graph, NnpNode *node, gboolean (*ok) (NnpDType), NnpDType out,
              GError **error)
{
  NnpValue *x = nnp_node_input (graph, node, 0);
  NnpMathParams *p;
  NnpBroadcast bc;
  NnpShape shape;
  int n = node->n_inputs;

  while (n > 0 && node->inputs[n - 1] < 0)
    n--;
  for (int i = 0; i < n; i++) {
    NnpValue *v = nnp_node_input (graph, node, i);
    if (v == NULL) {
      nnp_node_set_error (error, NNP_ERROR_INVALID, node, "input %d is missing", i);
      return NULL;
    }
    if (v->dtype != x->dtype) {
      nnp_node_set_error (error, NNP_ERROR_INVALID, node, "input %d is %s, input 0 is %s", i,
                          nnp_dtype_name (v->dtype), nnp_dtype_name (x->dtype));
      return NULL;
    }
  }
  if (!check_input (graph, node, 0, ok, error))
    return NULL;
  if (!nnp_op_plan_broadcast (graph, node, n, &bc, &shape, error))
    return NULL;
  p = NNP_NODE_NEW_PARAMS (node, NnpMathParams);
  p->bc = bc;
  p->dtype = x->dtype;
  p->out_dtype = out == NNP_DTYPE_UNDEFINED ? x->dtype : out;
  nnp_op_set_output (graph, node, 0, p->out_dtype, &shape);
  return p;
}

gboolean
nnp_op_and_infer (NnpGraph *graph, NnpNode *node, GError **error)
{
  return broadcasting (graph, node, is_bool, NNP_DTYPE_BOOL, error) != NULL;
}

gboolean
nnp_op_or_infer (NnpGraph *graph, NnpNode *node, GError **error)
{
  return broadcasting (graph, node, is_bool, NNP_DTYPE_BOOL, error) != NULL;
}

gboolean
nnp_op_xor_infer (NnpGraph *graph, NnpNode *node, GError **error)
{
  return broadcasting (graph, node, is_bool, NNP_DTYPE_BOOL, error) != NULL;
}

gboolean
nnp_op_bitwise_and_infer (NnpGraph *graph, NnpNode *node, GError **error)
{
  return broadcasting (graph, node, is_int, NNP_DTYPE_UNDEFINED, error) != NULL;
}

gboolean
nnp_op_bitwise_or_infer (NnpGraph *graph, NnpNode *node, GError **error)
{
  return broadcasting (graph, node, is_int, NNP_DTYPE_UNDEFINED, error) != NULL;
}

gboolean
nnp_op_bitwise_xor_infer (NnpGraph *graph, NnpNode *node, GError **error)
{
  return broadcasting (graph, node, is_int, NNP_DTYPE_UNDEFINED, error) != NULL;
}

gboolean
nnp_op_bit_shift_infer (NnpGraph *graph, NnpNode *node, GError **error)
{
  const char *dir = nnp_node_attr_string (node, "direction", "");
  NnpMathParams *p;

  if (strcmp (dir, "LEFT") != 0 && strcmp (dir, "RIGHT") != 0) {
    nnp_node_set_error (error, NNP_ERROR_INVALID, node, "direction '%s' is not 'LEFT' or 'RIGHT'",
                        dir);
    return FALSE;
  }
  p = broadcasting (graph, node, is_uint, NNP_DTYPE_UNDEFINED, error);
  if (p == NULL)
    return FALSE;
  p->flag = strcmp (dir, "LEFT") == 0;
  return TRUE;
}

gboolean
nnp_op_mod_infer (NnpGraph *graph, NnpNode *node, GError **error)
{
  NnpMathParams *p = broadcasting (graph, node, is_numeric, NNP_DTYPE_UNDEFINED, error);

  if (p == NULL)
    return FALSE;
  p->flag = nnp_node_attr_int (node, "fmod", 0) != 0;
  if (is_float (p->dtype) && !p->flag) {
    nnp_node_set_error (error, NNP_ERROR_INVALID, node,
                        "fmod must be 1 for %s inputs (the ONNX spec)", nnp_dtype_name (p->dtype));
    return FALSE;
  }
  return TRUE;
}

gboolean
nnp_op_greater_or_equal_infer (NnpGraph *graph, NnpNode *node, GError **error)
{
  return broadcasting (graph, node, is_numeric, NNP_DTYPE_BOOL, error) != NULL;
}

gboolean
nnp_op_less_or_equal_infer (NnpGraph *graph, NnpNode *node, GError **error)
{
  return broadcasting (graph, node, is_numeric, NNP_DTYPE_BOOL, error) != NULL;
}

gboolean
nnp_op_mean_infer (NnpGraph *graph, NnpNode *node, GError **error)
{
  return broadcasting (graph, node, is_float, NNP_DTYPE_UNDEFINED, error) != NULL;
}

/* PRelu: slope broadcasts to X (unidirectionally); before opset 7 a 1-D
 * slope of C elements applies per channel (axis 1). */
gboolean
nnp_op_prelu_infer (NnpGraph *graph, NnpNode *node, GError **error)
{
  NnpValue *x = nnp_node_input (graph, node, 0);
  NnpValue *s = nnp_node_input (graph, node, 1);
  NnpMathParams *p;

  if (s->dtype != x->dtype) {
    nnp_node_set_error (error, NNP_ERROR_INVALID, node, "slope is %s, X is %s",
                        nnp_dtype_name (s->dtype), nnp_dtype_name (x->dtype));
    return FALSE;
  }
  if (graph->opset < 7 && x->shape.rank >= 2 && s->shape.rank == 1
      && s->shape.dims[0] == x->shape.dims[1] && s->shape.dims[0] != 1) {
    /* PRelu 6: a 1-D slope of C values is per channel */
    NnpShape legacy = { .rank = x->shape.rank - 1 };
    const NnpShape *shapes[2] = { &x->shape, &legacy };
    NnpShape out;
    NnpBroadcast bc;

    legacy.dims[0] = s->shape.dims[0];
    for (int d = 1; d < legacy.rank; d++)
      legacy.dims[d] = 1;
    if (!check_input (graph, node, 0, is_numeric, error)
        || !nnp_op_plan_broadcast_shapes (node, shapes, 2, &bc, &out, error))
      return FALSE;
    p = NNP_NODE_NEW_PARAMS (node, NnpMathParams);
    p->bc = bc;
    p->dtype = p->out_dtype = x->dtype;
    nnp_op_set_output (graph, node, 0, x->dtype, &out);
    return TRUE;
  }
  p = broadcasting (graph, node, is_numeric, NNP_DTYPE_UNDEFINED, error);
  if (p == NULL)
    return FALSE;
  if (!nnp_shape_equal (&nnp_node_output (graph, node, 0)->shape, &x->shape)) {
    g_autofree char *xs = nnp_shape_to_string (&x->shape);
    g_autofree char *ss = nnp_shape_to_string (&s->shape);
    nnp_node_set_error (error, NNP_ERROR_INVALID, node, "slope %s does not broadcast to X %s", ss,
                        xs);
    return FALSE;
  }
  return TRUE;
}
