/* libnnpipe: the quantisation pass (see passes.h): quantised graphs run as
 * integer kernels.
 *
 * QDQ form (QuantizeLinear / DequantizeLinear around float ops, as ONNX
 * Runtime's and other quantisers write it):
 *   Q (Conv (DQ (xq), DQ (wq) [, DQ (bq int32)]) [-> Relu])   -> QLinearConv
 *   Q (MatMul (DQ (aq), DQ (bq)) [-> Relu])                  -> QLinearMatMul
 *   Q (Gemm (DQ (aq), DQ (bq) [, DQ (cq int32)]) [-> Relu])  -> QLinearMatMul
 *     (transA 0, alpha 1, beta 1; a transposed B becomes a new constant,
 *     C is the int32 bias of our QLinearMatMul's 9th input)
 * with x / y quantised per tensor (one 8-bit type), weights per tensor or
 * per output channel (8-bit).  A Relu before the Q clamps the quantised result at
 * y's zero point (node->act = RELU on a QLinear* node).  The result is what
 * ONNX Runtime computes for these patterns (it rewrites them the same way).
 *
 * Dynamic form (ONNX Runtime's dynamic quantisation):
 *   ConvInteger / MatMulInteger -> Cast (float) -> Mul (scale) [-> Add (bias)]
 *     -> NnpConvIntegerToFloat / NnpMatMulIntegerToFloat
 * with the scale per tensor or per output channel and a constant bias per
 * output channel: the same float operations in the same order, so the
 * result is identical to the unfused graph.  Activations after it are
 * fused by the fusion pass like after a Conv.
 *
 * DequantizeLinear nodes left without consumers are removed. */
#include <nnpipe/graph.h>
#include <nnpipe/log.h>

#include "graph/graph-edit.h"
#include "specialize/passes.h"

#include <string.h>

static gboolean
single_use (const NnpValue *v)
{
  return v && v->n_consumers == 1 && !v->is_output && v->constant == NULL;
}

static NnpNode *
producer_op (const NnpGraph *graph, const NnpValue *v, NnpOpType op, const gboolean *remove)
{
  NnpNode *n;

  if (v == NULL || v->producer < 0)
    return NULL;
  n = nnp_graph_node (graph, v->producer);
  return n->op == op && !remove[n->index] ? n : NULL;
}

/* The only consumer of v, when it has op `op`. */
static NnpNode *
sole_consumer (const NnpGraph *graph, const NnpValue *v, NnpOpType op, const gboolean *remove)
{
  NnpNode *n;

  if (!single_use (v))
    return NULL;
  n = nnp_graph_node (graph, v->consumers[0]);
  return n->op == op && !remove[n->index] && n->n_outputs == 1 ? n : NULL;
}

static gboolean
is_q8 (NnpDType t)
{
  return t == NNP_DTYPE_UINT8 || t == NNP_DTYPE_INT8;
}

static void
retype (NnpNode *node, NnpOpType op, const char *op_type)
{
  g_free (node->op_type);
  node->op_type = g_strdup (op_type);
  node->op = op;
}

static void
set_inputs (NnpNode *node, const int *ids, int n)
{
  g_free (node->inputs);
  node->inputs = g_memdup2 (ids, n * sizeof (int));
  node->n_inputs = n;
}

static int
zero_point_id (NnpGraph *graph, const NnpNode *q, int input, NnpDType dtype)
{
  NnpValue *zp = nnp_node_input (graph, q, input);
  NnpShape scalar = { 0 };

  if (zp)
    return zp->id;
  return nnp_graph_new_constant (graph, "nnp_zero_point", nnp_tensor_new (dtype, &scalar, NULL))
      ->id;
}

/* ---------------------------------------------------------------- QDQ */

/* A (De)QuantizeLinear node's quantisation: per tensor, or per axis `axis`
 * of its input with `n` entries.  8-bit data (or int32 for a bias). */
static gboolean
qparams_ok (const NnpGraph *graph, const NnpNode *n, int want_axis, int64_t channels)
{
  NnpValue *x = nnp_node_input (graph, n, 0), *s = nnp_node_input (graph, n, 1);
  int64_t numel = s ? nnp_shape_numel (&s->shape) : -1;
  int axis;

  if (s == NULL || nnp_node_attr_int (n, "block_size", 0) > 0)
    return FALSE;
  if (numel == 1 && s->shape.rank <= 1)
    return TRUE;
  axis = (int) nnp_node_attr_int (n, "axis", 1);
  if (axis < 0)
    axis += x->shape.rank;
  if (want_axis < 0)
    return FALSE;
  return axis == want_axis && numel == channels && s->shape.rank == 1;
}

/* A zero point that is absent or all zeros (a bias's). */
static gboolean
zero_zp (const NnpGraph *graph, const NnpNode *dq)
{
  NnpValue *zp = nnp_node_input (graph, dq, 2);

  if (zp == NULL)
    return TRUE;
  if (zp->constant == NULL || zp->constant->dtype != NNP_DTYPE_INT32)
    return FALSE;
  for (int64_t i = 0; i < nnp_tensor_numel (zp->constant); i++)
    if (((const gint32 *) zp->constant->data)[i] != 0)
      return FALSE;
  return TRUE;
}

/* The transpose of a constant 2-D 8-bit tensor (a new tensor). */
static NnpTensor *
transpose_u8 (const NnpTensor *t)
{
  int64_t r = t->shape.dims[0], c = t->shape.dims[1];
  int64_t dims[2] = { c, r };
  NnpShape s;
  NnpTensor *o;

  nnp_shape_set (&s, 2, dims);
  o = nnp_tensor_new (t->dtype, &s, NULL);
  for (int64_t i = 0; i < r; i++)
    for (int64_t j = 0; j < c; j++)
      ((guint8 *) o->data)[j * r + i] = ((const guint8 *) t->data)[i * c + j];
  return o;
}

static gboolean
fuse_qdq (NnpGraph *graph, NnpNode *q, gboolean *remove, GPtrArray *changed)
{
  NnpValue *y = nnp_node_input (graph, q, 0), *yq = nnp_node_output (graph, q, 0);
  NnpNode *op, *relu = NULL, *dqx, *dqw, *dqb = NULL;
  NnpValue *bias_in = NULL, *wq;
  int ids[9], n_ids;
  int64_t channels;
  int w_axis;

  if (q->op != NNP_OP_QUANTIZE_LINEAR || yq == NULL || !is_q8 (yq->dtype)
      || y->dtype != NNP_DTYPE_FLOAT32 || !qparams_ok (graph, q, -1, 0) || !single_use (y)
      || y->producer < 0)
    return FALSE;
  op = nnp_graph_node (graph, y->producer);
  if (op->op == NNP_OP_RELU && !remove[op->index]) {
    NnpValue *y2 = nnp_node_input (graph, op, 0);
    relu = op;
    if (!single_use (y2) || y2->producer < 0)
      return FALSE;
    op = nnp_graph_node (graph, y2->producer);
  }
  if (remove[op->index] || op->act != NNP_ACT_NONE || op->n_outputs != 1)
    return FALSE;
  if (op->op != NNP_OP_CONV && op->op != NNP_OP_MAT_MUL && op->op != NNP_OP_GEMM)
    return FALSE;

  dqx = producer_op (graph, nnp_node_input (graph, op, 0), NNP_OP_DEQUANTIZE_LINEAR, remove);
  dqw = producer_op (graph, nnp_node_input (graph, op, 1), NNP_OP_DEQUANTIZE_LINEAR, remove);
  /* x and y of one type, as ONNX Runtime's kernels (and its own rewrite) want */
  if (dqx == NULL || dqw == NULL || !qparams_ok (graph, dqx, -1, 0)
      || nnp_node_input (graph, dqx, 0)->dtype != yq->dtype
      || !is_q8 (nnp_node_input (graph, dqw, 0)->dtype))
    return FALSE;
  wq = nnp_node_input (graph, dqw, 0);
  if (op->n_inputs > 2 && op->inputs[2] >= 0) {
    bias_in = nnp_node_input (graph, op, 2);
    dqb = producer_op (graph, bias_in, NNP_OP_DEQUANTIZE_LINEAR, remove);
    if (dqb == NULL || nnp_node_input (graph, dqb, 0)->dtype != NNP_DTYPE_INT32
        || !zero_zp (graph, dqb))
      return FALSE;
  }

  if (op->op == NNP_OP_CONV) {
    channels = wq->shape.rank >= 1 ? wq->shape.dims[0] : 0;
    w_axis = 0;
  } else {
    gboolean trans_b = op->op == NNP_OP_GEMM && nnp_node_attr_int (op, "transB", 0) != 0;
    if (op->op == NNP_OP_GEMM
        && (nnp_node_attr_int (op, "transA", 0) != 0
            || nnp_node_attr_float (op, "alpha", 1.f) != 1.f
            || (dqb && nnp_node_attr_float (op, "beta", 1.f) != 1.f) || wq->constant == NULL
            || wq->shape.rank != 2))
      return FALSE;
    if (wq->shape.rank < 1)
      return FALSE;
    channels = trans_b ? wq->shape.dims[0] : wq->shape.dims[wq->shape.rank - 1];
    w_axis = trans_b ? 0 : wq->shape.rank - 1;
    /* per-channel B only for a 2-D B (the kernel's per-column zero point) */
    if (wq->shape.rank != 2 && !qparams_ok (graph, dqw, -1, 0))
      return FALSE;
    if (dqb) {
      NnpValue *bq = nnp_node_input (graph, dqb, 0);
      if (nnp_shape_numel (&bq->shape) != channels || bq->shape.rank != 1)
        return FALSE;
    }
  }
  if (!qparams_ok (graph, dqw, w_axis, channels) || (dqb && !qparams_ok (graph, dqb, 0, channels)))
    return FALSE;

  /* x, x scale, x zp, w, w scale, w zp, y scale, y zp [, bias] */
  ids[0] = dqx->inputs[0];
  ids[1] = dqx->inputs[1];
  ids[2] = zero_point_id (graph, dqx, 2, nnp_node_input (graph, dqx, 0)->dtype);
  ids[3] = wq->id;
  ids[4] = dqw->inputs[1];
  ids[5] = zero_point_id (graph, dqw, 2, wq->dtype);
  ids[6] = q->inputs[1];
  ids[7] = zero_point_id (graph, q, 2, yq->dtype);
  n_ids = 8;
  if (dqb)
    ids[n_ids++] = dqb->inputs[0];
  if (op->op == NNP_OP_GEMM && nnp_node_attr_int (op, "transB", 0) != 0)
    ids[3] = nnp_graph_new_constant (graph, wq->name, transpose_u8 (wq->constant))->id;

  NNP_DEBUG ("nnp-graph", "QDQ %s '%s'%s -> %s", op->op_type, op->name, relu ? " + Relu" : "",
             op->op == NNP_OP_CONV ? "QLinearConv" : "QLinearMatMul");
  if (op->op == NNP_OP_CONV)
    retype (op, NNP_OP_QLINEAR_CONV, "QLinearConv");
  else
    retype (op, NNP_OP_QLINEAR_MAT_MUL, "QLinearMatMul");
  set_inputs (op, ids, n_ids);
  op->act = relu ? NNP_ACT_RELU : NNP_ACT_NONE;
  op->outputs[0] = yq->id;
  yq->producer = op->index;
  remove[q->index] = TRUE;
  if (relu)
    remove[relu->index] = TRUE;
  if (!g_ptr_array_find (changed, op, NULL))
    g_ptr_array_add (changed, op);
  return TRUE;
}

/* ---------------------------------------------------------------- dynamic */

/* v broadcast against `out` is one value, or one per entry of out's dim
 * `axis` (channels entries); sets *count. */
static gboolean
channel_operand (const NnpValue *v, const NnpShape *out, int axis, int64_t *count)
{
  int off = out->rank - v->shape.rank;

  if (v->dtype != NNP_DTYPE_FLOAT32 || off < 0)
    return FALSE;
  *count = nnp_shape_numel (&v->shape);
  if (*count == 1)
    return TRUE;
  for (int d = 0; d < v->shape.rank; d++)
    if (v->shape.dims[d] != (d + off == axis ? out->dims[axis] : 1))
      return FALSE;
  return TRUE;
}

/* The other operand of a binary node, given one. */
static NnpValue *
other_operand (const NnpGraph *graph, const NnpNode *n, const NnpValue *one)
{
  if (n->n_inputs != 2)
    return NULL;
  return n->inputs[0] == one->id   ? nnp_node_input (graph, n, 1)
         : n->inputs[1] == one->id ? nnp_node_input (graph, n, 0)
                                   : NULL;
}

static gboolean
fuse_dynamic (NnpGraph *graph, NnpNode *node, gboolean *remove, GPtrArray *changed)
{
  gboolean conv = node->op == NNP_OP_CONV_INTEGER;
  NnpValue *acc, *f, *scaled, *scale, *bias = NULL, *out;
  NnpNode *cast, *mul, *add;
  int ids[6];
  int axis;
  int64_t count;

  if ((!conv && node->op != NNP_OP_MAT_MUL_INTEGER) || node->n_outputs != 1)
    return FALSE;
  acc = nnp_node_output (graph, node, 0);
  cast = sole_consumer (graph, acc, NNP_OP_CAST, remove);
  if (cast == NULL || nnp_node_output (graph, cast, 0)->dtype != NNP_DTYPE_FLOAT32)
    return FALSE;
  f = nnp_node_output (graph, cast, 0);
  mul = sole_consumer (graph, f, NNP_OP_MUL, remove);
  if (mul == NULL || (scale = other_operand (graph, mul, f)) == NULL)
    return FALSE;
  scaled = nnp_node_output (graph, mul, 0);
  axis = conv ? 1 : acc->shape.rank - 1;
  if (acc->shape.rank < 1 || !nnp_shape_equal (&scaled->shape, &acc->shape)
      || !channel_operand (scale, &acc->shape, axis, &count))
    return FALSE;
  out = scaled;
  add = sole_consumer (graph, scaled, NNP_OP_ADD, remove);
  if (add) {
    bias = other_operand (graph, add, scaled);
    if (bias && bias->constant && channel_operand (bias, &acc->shape, axis, &count)
        && nnp_shape_equal (&nnp_node_output (graph, add, 0)->shape, &acc->shape))
      out = nnp_node_output (graph, add, 0);
    else
      bias = NULL, add = NULL;
  }

  ids[0] = node->inputs[0];
  ids[1] = node->inputs[1];
  ids[2] = node->n_inputs > 2 ? node->inputs[2] : -1;
  ids[3] = node->n_inputs > 3 ? node->inputs[3] : -1;
  ids[4] = scale->id;
  ids[5] = bias ? bias->id : -1;
  NNP_DEBUG ("nnp-graph", "%s '%s' + Cast + Mul%s -> %s", node->op_type, node->name,
             add ? " + Add" : "", conv ? "NnpConvIntegerToFloat" : "NnpMatMulIntegerToFloat");
  if (conv)
    retype (node, NNP_OP_CONV_INTEGER_TO_FLOAT, "NnpConvIntegerToFloat");
  else
    retype (node, NNP_OP_MAT_MUL_INTEGER_TO_FLOAT, "NnpMatMulIntegerToFloat");
  set_inputs (node, ids, bias ? 6 : 5);
  node->outputs[0] = out->id;
  out->producer = node->index;
  remove[cast->index] = TRUE;
  remove[mul->index] = TRUE;
  if (add)
    remove[add->index] = TRUE;
  if (!g_ptr_array_find (changed, node, NULL))
    g_ptr_array_add (changed, node);
  return TRUE;
}

/* ---------------------------------------------------------------- the pass */

gboolean
nnp_graph_quant_keep_dq (const NnpGraph *graph, const NnpNode *node)
{
  const NnpValue *out;

  if (node->op != NNP_OP_DEQUANTIZE_LINEAR || node->n_outputs != 1)
    return FALSE;
  out = nnp_node_output (graph, node, 0);
  if (out == NULL)
    return FALSE;
  for (int c = 0; c < out->n_consumers; c++) {
    const NnpNode *user = nnp_graph_node (graph, out->consumers[c]);
    const NnpValue *y;
    const NnpNode *next;
    if (user->op != NNP_OP_CONV && user->op != NNP_OP_MAT_MUL && user->op != NNP_OP_GEMM)
      continue;
    /* the op's result must go to a QuantizeLinear (through a Relu or not) */
    y = nnp_node_output (graph, user, 0);
    if (y == NULL || y->n_consumers != 1 || y->is_output)
      continue;
    next = nnp_graph_node (graph, y->consumers[0]);
    if (next->op == NNP_OP_RELU) {
      y = nnp_node_output (graph, next, 0);
      if (y == NULL || y->n_consumers != 1 || y->is_output)
        continue;
      next = nnp_graph_node (graph, y->consumers[0]);
    }
    if (next->op == NNP_OP_QUANTIZE_LINEAR)
      return TRUE;
  }
  return FALSE;
}

int
nnp_graph_fuse_quant (NnpGraph *graph, GPtrArray *changed)
{
  g_autofree gboolean *remove = g_new0 (gboolean, MAX (graph->nodes->len, 1));
  int n = 0, n_dead = 0;
  GError *error = NULL;

  g_return_val_if_fail (graph != NULL && changed != NULL, 0);
  for (guint i = 0; i < graph->nodes->len; i++) {
    NnpNode *node = nnp_graph_node (graph, i);
    if (!remove[i]
        && (fuse_qdq (graph, node, remove, changed) || fuse_dynamic (graph, node, remove, changed)))
      n++;
  }
  if (n == 0)
    return 0;
  nnp_graph_remove_nodes (graph, remove);
  /* DequantizeLinear nodes that fed only what was fused */
  g_free (remove);
  remove = g_new0 (gboolean, MAX (graph->nodes->len, 1));
  for (guint i = 0; i < graph->nodes->len; i++) {
    NnpNode *node = nnp_graph_node (graph, i);
    NnpValue *out = nnp_node_output (graph, node, 0);
    if (node->op == NNP_OP_DEQUANTIZE_LINEAR && out && out->n_consumers == 0 && !out->is_output) {
      remove[i] = TRUE;
      n_dead++;
    }
  }
  if (n_dead > 0)
    nnp_graph_remove_nodes (graph, remove);
  /* a fused node now reads the scale computed by a later node (the Mul of
   * the two scales): restore the topological order */
  if (!nnp_graph_sort (graph, &error)) {
    NNP_WARNING ("nnp-graph", "quantisation pass: %s", error->message);
    g_clear_error (&error);
  }
  NNP_DEBUG ("nnp-graph", "quantisation pass: %d integer nodes, %d DequantizeLinear removed", n,
             n_dead);
  return n;
}
