/* libnnpipe: shape inference of the quantisation ops: QuantizeLinear,
 * DequantizeLinear (per tensor, per axis, blocked), DynamicQuantizeLinear,
 * ConvInteger, MatMulInteger, QLinearConv, QLinearMatMul and the fused
 * NnpConvIntegerToFloat / NnpMatMulIntegerToFloat of the quantisation pass
 * (lib/specialize/quant-fuse.c).  Parameters go to the structs of quant-params.h. */
#include "ops/ops.h"
#include "ops/quant-params.h"

#include <string.h>

/* ---------------------------------------------------------------- helpers */

static gboolean
is_q8 (NnpDType t)
{
  return t == NNP_DTYPE_UINT8 || t == NNP_DTYPE_INT8;
}

static gboolean
is_quant_type (NnpDType t)
{
  return is_q8 (t) || t == NNP_DTYPE_UINT16 || t == NNP_DTYPE_INT16;
}

static gboolean
need_dtype (const NnpNode *node, const NnpValue *v, int k, const char *what, gboolean ok,
            const char *allowed, GError **error)
{
  if (ok)
    return TRUE;
  nnp_node_set_error (error, NNP_ERROR_UNSUPPORTED, node,
                      "input %d (%s) has dtype %s, supported: %s", k, what,
                      nnp_dtype_name (v->dtype), allowed);
  return FALSE;
}

/* A scale / zero point: one element (per tensor) or `n` elements (per
 * channel, any shape: the quantisation pass hands over broadcast operands
 * such as [1, M, 1, 1]; n <= 0: per tensor only).  Sets *count. */
static gboolean
check_vec (const NnpNode *node, const NnpValue *v, int k, const char *what, int64_t n,
           int64_t *count, GError **error)
{
  int64_t numel = nnp_shape_numel (&v->shape);

  if (numel == 1 && v->shape.rank <= 1) {
    *count = 1;
    return TRUE;
  }
  if (n > 0 && numel == n) {
    *count = n;
    return TRUE;
  }
  {
    char *s = nnp_shape_to_string (&v->shape);
    if (n > 0)
      nnp_node_set_error (error, NNP_ERROR_INVALID, node,
                          "input %d (%s) has shape %s, expected a scalar or %" G_GINT64_FORMAT
                          " values",
                          k, what, s, n);
    else
      nnp_node_set_error (error, NNP_ERROR_INVALID, node,
                          "input %d (%s) has shape %s, expected a scalar", k, what, s);
    g_free (s);
  }
  return FALSE;
}

/* ---------------------------------------------------------------- Quantize / Dequantize */

static gboolean
quant_linear_infer (NnpGraph *graph, NnpNode *node, gboolean quantize, GError **error)
{
  NnpValue *x = nnp_node_input (graph, node, 0);
  NnpValue *s = nnp_node_input (graph, node, 1);
  NnpValue *zp = nnp_node_input (graph, node, 2);
  NnpQuantLinearParams p;
  int64_t block = nnp_node_attr_int (node, "block_size", 0);
  int rank = x->shape.rank, axis = 0;
  NnpDType y_dtype;

  memset (&p, 0, sizeof (p));
  p.x_dtype = x->dtype;
  p.has_zp = zp != NULL;
  if (quantize) {
    int64_t out_attr = nnp_node_attr_int (node, "output_dtype", 0);
    if (!need_dtype (node, x, 0, "x", x->dtype == NNP_DTYPE_FLOAT32 || x->dtype == NNP_DTYPE_INT32,
                     "float32, int32", error))
      return FALSE;
    y_dtype = zp ? zp->dtype : out_attr ? (NnpDType) out_attr : NNP_DTYPE_UINT8;
    if (zp && out_attr && out_attr != zp->dtype) {
      nnp_node_set_error (error, NNP_ERROR_INVALID, node,
                          "output_dtype %" G_GINT64_FORMAT " differs from the zero point's %s",
                          out_attr, nnp_dtype_name (zp->dtype));
      return FALSE;
    }
    if (!is_quant_type (y_dtype)) {
      nnp_node_set_error (error, NNP_ERROR_UNSUPPORTED, node,
                          "output type %s: supported are uint8, int8, uint16, int16",
                          nnp_dtype_name (y_dtype));
      return FALSE;
    }
  } else {
    if (!need_dtype (node, x, 0, "x", is_quant_type (x->dtype) || x->dtype == NNP_DTYPE_INT32,
                     "uint8, int8, uint16, int16, int32", error))
      return FALSE;
    if (zp && zp->dtype != x->dtype) {
      nnp_node_set_error (error, NNP_ERROR_INVALID, node, "zero point has dtype %s, x has %s",
                          nnp_dtype_name (zp->dtype), nnp_dtype_name (x->dtype));
      return FALSE;
    }
    y_dtype = NNP_DTYPE_FLOAT32;
  }
  if (!need_dtype (node, s, 1, "scale", s->dtype == NNP_DTYPE_FLOAT32, "float32", error))
    return FALSE;
  if (zp && !nnp_shape_equal (&zp->shape, &s->shape)) {
    nnp_node_set_error (error, NNP_ERROR_INVALID, node,
                        "zero point and scale have different shapes");
    return FALSE;
  }
  p.y_dtype = y_dtype;
  p.block = 1;
  if (nnp_shape_numel (&s->shape) == 1 && s->shape.rank <= 1 && block <= 0) {
    /* per tensor */
    p.outer = MAX (nnp_shape_numel (&x->shape), 0);
    p.axis_dim = p.inner = 1;
  } else {
    if (rank == 0 || !nnp_normalize_axis (nnp_node_attr_int (node, "axis", 1), rank, &axis)) {
      nnp_node_set_error (error, NNP_ERROR_INVALID, node,
                          "axis %" G_GINT64_FORMAT " is out of range for %d dims",
                          nnp_node_attr_int (node, "axis", 1), rank);
      return FALSE;
    }
    p.outer = p.inner = 1;
    for (int d = 0; d < axis; d++)
      p.outer *= x->shape.dims[d];
    for (int d = axis + 1; d < rank; d++)
      p.inner *= x->shape.dims[d];
    p.axis_dim = x->shape.dims[axis];
    if (block > 0) {
      int64_t nb = (p.axis_dim + block - 1) / block;
      gboolean ok = s->shape.rank == rank;
      for (int d = 0; ok && d < rank; d++)
        ok = s->shape.dims[d] == (d == axis ? nb : x->shape.dims[d]);
      if (!ok) {
        nnp_node_set_error (error, NNP_ERROR_INVALID, node,
                            "block_size %" G_GINT64_FORMAT
                            ": the scale must have x's shape with %" G_GINT64_FORMAT
                            " blocks on axis %d",
                            block, nb, axis);
        return FALSE;
      }
      p.block = block;
      p.scale_os = nb * p.inner;
      p.scale_as = p.inner;
      p.scale_is = 1;
    } else {
      if (s->shape.rank != 1 || s->shape.dims[0] != p.axis_dim) {
        char *ss = nnp_shape_to_string (&s->shape);
        nnp_node_set_error (error, NNP_ERROR_INVALID, node,
                            "scale has shape %s, expected a scalar or %" G_GINT64_FORMAT
                            " values (axis %d)",
                            ss, p.axis_dim, axis);
        g_free (ss);
        return FALSE;
      }
      p.scale_as = 1;
    }
  }
  *NNP_NODE_NEW_PARAMS (node, NnpQuantLinearParams) = p;
  nnp_op_set_output (graph, node, 0, y_dtype, &x->shape);
  return TRUE;
}

gboolean
nnp_op_quantize_linear_infer (NnpGraph *graph, NnpNode *node, GError **error)
{
  return quant_linear_infer (graph, node, TRUE, error);
}

gboolean
nnp_op_dequantize_linear_infer (NnpGraph *graph, NnpNode *node, GError **error)
{
  return quant_linear_infer (graph, node, FALSE, error);
}

gboolean
nnp_op_dynamic_quantize_linear_infer (NnpGraph *graph, NnpNode *node, GError **error)
{
  NnpValue *x = nnp_node_input (graph, node, 0);
  NnpShape scalar = { 0 };

  if (!need_dtype (node, x, 0, "x", x->dtype == NNP_DTYPE_FLOAT32, "float32", error))
    return FALSE;
  nnp_op_set_output (graph, node, 0, NNP_DTYPE_UINT8, &x->shape);
  nnp_op_set_output (graph, node, 1, NNP_DTYPE_FLOAT32, &scalar);
  nnp_op_set_output (graph, node, 2, NNP_DTYPE_UINT8, &scalar);
  return TRUE;
}

/* ---------------------------------------------------------------- integer conv / matmul */

/* Operand roles of each op (input indices). */
static void
operands_of (NnpOpType op, NnpQOperands *q)
{
  memset (q, 0, sizeof (*q));
  q->x_scale = q->w_scale = q->y_scale = q->y_zp = q->scale = q->bias = -1;
  switch (op) {
    case NNP_OP_QLINEAR_CONV:
    case NNP_OP_QLINEAR_MAT_MUL:
      q->out = NNP_QOUT_QUANT;
      q->x = 0;
      q->x_scale = 1;
      q->x_zp = 2;
      q->w = 3;
      q->w_scale = 4;
      q->w_zp = 5;
      q->y_scale = 6;
      q->y_zp = 7;
      q->bias = 8; /* QLinearMatMul: ours only (a QDQ Gemm's bias) */
      break;
    case NNP_OP_CONV_INTEGER_TO_FLOAT:
    case NNP_OP_MAT_MUL_INTEGER_TO_FLOAT:
      q->out = NNP_QOUT_FLOAT;
      q->scale = 4;
      q->bias = 5;
      /* fall through */
    default:
      if (q->out != NNP_QOUT_FLOAT)
        q->out = NNP_QOUT_INT32;
      q->x = 0;
      q->w = 1;
      q->x_zp = 2;
      q->w_zp = 3;
      break;
  }
}

/* Check the operands other than x and w against `channels` output channels
 * (and m rows for a per-row x zero point, 0: per tensor only); drop absent
 * ones to -1. */
static gboolean
check_operands (NnpGraph *graph, NnpNode *node, NnpQOperands *q, int64_t channels, int64_t m,
                GError **error)
{
  NnpValue *x = nnp_node_input (graph, node, q->x);
  NnpValue *w = nnp_node_input (graph, node, q->w);
  int *idx[] = { &q->x_zp,    &q->w_zp, &q->x_scale, &q->w_scale,
                 &q->y_scale, &q->y_zp, &q->scale,   &q->bias };
  int64_t *cnt[] = { &q->x_zp_n, &q->w_zp_n, NULL,        &q->w_scale_n,
                     NULL,       NULL,       &q->scale_n, &q->bias_n };
  const char *names[] = { "x zero point", "w zero point", "x scale", "w scale",
                          "y scale",      "y zero point", "scale",   "bias" };
  int64_t per[] = { m, channels, 0, channels, 0, 0, channels, channels };

  if (!need_dtype (node, x, q->x, "x", is_q8 (x->dtype), "uint8, int8", error)
      || !need_dtype (node, w, q->w, "w", is_q8 (w->dtype), "uint8, int8", error))
    return FALSE;
  q->x_dtype = x->dtype;
  q->w_dtype = w->dtype;
  q->x_zp_n = q->w_zp_n = q->w_scale_n = q->scale_n = q->bias_n = 1;
  for (guint i = 0; i < G_N_ELEMENTS (idx); i++) {
    NnpValue *v = *idx[i] >= 0 ? nnp_node_input (graph, node, *idx[i]) : NULL;
    int64_t count = 1;
    gboolean ok;

    if (v == NULL) {
      *idx[i] = -1;
      continue;
    }
    if (!check_vec (node, v, *idx[i], names[i], per[i], &count, error))
      return FALSE;
    if (cnt[i])
      *cnt[i] = count;
    if (idx[i] == &q->x_zp)
      ok = v->dtype == x->dtype;
    else if (idx[i] == &q->w_zp)
      ok = v->dtype == w->dtype;
    else if (idx[i] == &q->y_zp)
      ok = is_q8 (v->dtype);
    else if (idx[i] == &q->bias)
      ok = v->dtype == (q->out == NNP_QOUT_FLOAT ? NNP_DTYPE_FLOAT32 : NNP_DTYPE_INT32);
    else
      ok = v->dtype == NNP_DTYPE_FLOAT32;
    if (!ok) {
      nnp_node_set_error (error, NNP_ERROR_UNSUPPORTED, node, "input %d (%s) has dtype %s", *idx[i],
                          names[i], nnp_dtype_name (v->dtype));
      return FALSE;
    }
  }
  if (q->out == NNP_QOUT_QUANT && (q->x_scale < 0 || q->w_scale < 0 || q->y_scale < 0)) {
    nnp_node_set_error (error, NNP_ERROR_INVALID, node, "a scale input is omitted");
    return FALSE;
  }
  if (q->out == NNP_QOUT_FLOAT && q->scale < 0) {
    nnp_node_set_error (error, NNP_ERROR_INVALID, node, "input 4 (scale) is required");
    return FALSE;
  }
  q->y_dtype = q->out == NNP_QOUT_INT32   ? NNP_DTYPE_INT32
               : q->out == NNP_QOUT_FLOAT ? NNP_DTYPE_FLOAT32
               : q->y_zp >= 0             ? nnp_node_input (graph, node, q->y_zp)->dtype
                                          : NNP_DTYPE_UINT8;
  return TRUE;
}

static gboolean
qconv_infer (NnpGraph *graph, NnpNode *node, GError **error)
{
  NnpQConvParams p;
  NnpShape out;

  operands_of (node->op, &p.q);
  if (!nnp_op_conv_geometry (node, nnp_node_input (graph, node, p.q.x),
                             nnp_node_input (graph, node, p.q.w), NULL, &p.conv, error))
    return FALSE;
  if (!check_operands (graph, node, &p.q, p.conv.out_channels, 0, error))
    return FALSE;
  p.conv.has_bias = p.q.bias >= 0;
  if (!nnp_op_conv_output_shape (node, &p.conv, &out, error))
    return FALSE;
  *NNP_NODE_NEW_PARAMS (node, NnpQConvParams) = p;
  nnp_op_set_output (graph, node, 0, p.q.y_dtype, &out);
  return TRUE;
}

static gboolean
qmatmul_infer (NnpGraph *graph, NnpNode *node, GError **error)
{
  NnpQMatMulParams p;
  NnpShape out;

  operands_of (node->op, &p.q);
  if (!nnp_op_mat_mul_geometry (node, nnp_node_input (graph, node, p.q.x),
                                nnp_node_input (graph, node, p.q.w), &p.mm, &out, error))
    return FALSE;
  /* a per-row zero point of A only makes sense when the rows are the rows
   * of every batch: allow it for a 2-D A */
  if (!check_operands (graph, node, &p.q, p.mm.n,
                       nnp_node_input (graph, node, p.q.x)->shape.rank == 2 ? p.mm.m : 0, error))
    return FALSE;
  *NNP_NODE_NEW_PARAMS (node, NnpQMatMulParams) = p;
  nnp_op_set_output (graph, node, 0, p.q.y_dtype, &out);
  return TRUE;
}

gboolean
nnp_op_conv_integer_infer (NnpGraph *graph, NnpNode *node, GError **error)
{
  return qconv_infer (graph, node, error);
}

gboolean
nnp_op_qlinear_conv_infer (NnpGraph *graph, NnpNode *node, GError **error)
{
  return qconv_infer (graph, node, error);
}

gboolean
nnp_op_conv_integer_to_float_infer (NnpGraph *graph, NnpNode *node, GError **error)
{
  return qconv_infer (graph, node, error);
}

gboolean
nnp_op_mat_mul_integer_infer (NnpGraph *graph, NnpNode *node, GError **error)
{
  return qmatmul_infer (graph, node, error);
}

gboolean
nnp_op_qlinear_mat_mul_infer (NnpGraph *graph, NnpNode *node, GError **error)
{
  return qmatmul_infer (graph, node, error);
}

gboolean
nnp_op_mat_mul_integer_to_float_infer (NnpGraph *graph, NnpNode *node, GError **error)
{
  return qmatmul_infer (graph, node, error);
}
