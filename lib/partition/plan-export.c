/* libnnpipe: one plan stage -> a standalone ONNX model file.
 *
 * What is written is the stage as nnpipe runs it: the nodes of the
 * *specialised* graph (the graph plan node names refer to), with concrete
 * shapes, folded constants as initializers and every fusion kept.  Fusions
 * produce standard ops except the activation fused into a producer
 * (node->act), which is written back as the ONNX node(s) it stands for
 * (Relu, Clip, LeakyRelu, HardSigmoid, HardSwish, Sigmoid; HardSwish then a
 * scalar Mul and Add for HARD_SWISH_AFFINE; Sigmoid and Mul for SILU; Div, Erf, Add, Mul, Mul
 * for GELU), the producer writing to
 * "<output>.pre_act".  The model's inputs are the stage's input boundary
 * values, its outputs the output boundary values, under the same names, in
 * the plan's order, with static shapes.  See docs/partition.md. */
#include "onnx/wire-write.h"
#include "graph/graph-edit.h"
#include "onnx/model-private.h"
#include "partition/partition.h"

#include <nnpipe/log.h>
#include <nnpipe/plan.h>

#include <errno.h>
#include <glib/gstdio.h>
#include <math.h>
#include <string.h>

/* field numbers, as in loader.c (onnx.proto) */
enum {
  MODEL_IR_VERSION = 1,
  MODEL_PRODUCER_NAME = 2,
  MODEL_PRODUCER_VERSION = 3,
  MODEL_GRAPH = 7,
  MODEL_OPSET_IMPORT = 8
};
enum { OPSET_DOMAIN = 1, OPSET_VERSION = 2 };
enum {
  GRAPH_NODE = 1,
  GRAPH_NAME = 2,
  GRAPH_INITIALIZER = 5,
  GRAPH_DOC_STRING = 10,
  GRAPH_INPUT = 11,
  GRAPH_OUTPUT = 12
};
enum {
  NODE_INPUT = 1,
  NODE_OUTPUT = 2,
  NODE_NAME = 3,
  NODE_OP_TYPE = 4,
  NODE_ATTRIBUTE = 5,
  NODE_DOMAIN = 7
};
enum {
  ATTR_NAME = 1,
  ATTR_F = 2,
  ATTR_I = 3,
  ATTR_S = 4,
  ATTR_T = 5,
  ATTR_FLOATS = 7,
  ATTR_INTS = 8,
  ATTR_STRINGS = 9,
  ATTR_TYPE = 20
};
enum { TENSOR_DIMS = 1, TENSOR_DATA_TYPE = 2, TENSOR_NAME = 8, TENSOR_RAW_DATA = 9 };
enum { VI_NAME = 1, VI_TYPE = 2 };
enum { TYPE_TENSOR_TYPE = 1 };
enum { TT_ELEM_TYPE = 1, TT_SHAPE = 2 };
enum { SHAPE_DIM = 1 };
enum { DIM_VALUE = 1 };

/* a serialized protobuf message may not reach 2 GiB */
#define PROTOBUF_MAX_BYTES ((gsize) G_MAXINT32 - (64u << 20))

typedef struct {
  const NnpGraph *graph;
  GByteArray *g;     /* GraphProto being built */
  GHashTable *names; /* every value name used in the file (borrowed or owned strings) */
  GHashTable *inits; /* value ids already written as initializers */
  GPtrArray *owned;  /* strings owned by the writer */
} Writer;

/* TensorProto: dims, data_type, name, raw_data (little-endian, C order). */
static gboolean
put_tensor (GByteArray *buf, guint32 field, const char *name, const NnpTensor *t, GError **error)
{
  g_autoptr (GByteArray) m = g_byte_array_new ();

  if (t->dtype == NNP_DTYPE_STRING || t->dtype == NNP_DTYPE_UNDEFINED) {
    g_set_error (error, NNP_ERROR, NNP_ERROR_UNSUPPORTED,
                 "tensor '%s': dtype %s cannot be exported", name ? name : "",
                 nnp_dtype_name (t->dtype));
    return FALSE;
  }
  nnp_wire_put_packed_int64 (m, TENSOR_DIMS, t->shape.dims, t->shape.rank);
  nnp_wire_put_int (m, TENSOR_DATA_TYPE, t->dtype); /* NnpDType is numbered as ONNX */
  if (name)
    nnp_wire_put_string (m, TENSOR_NAME, name);
  nnp_wire_put_bytes (m, TENSOR_RAW_DATA, t->data, t->nbytes);
  nnp_wire_put_message (buf, field, m);
  return TRUE;
}

/* ValueInfoProto with a tensor type and a static shape. */
static gboolean
put_value_info (GByteArray *buf, guint32 field, const NnpValue *v, GError **error)
{
  g_autoptr (GByteArray) vi = g_byte_array_new ();
  g_autoptr (GByteArray) type = g_byte_array_new ();
  g_autoptr (GByteArray) tt = g_byte_array_new ();
  g_autoptr (GByteArray) shape = g_byte_array_new ();

  if (v->dtype == NNP_DTYPE_UNDEFINED || v->shape.rank < 0 || nnp_shape_numel (&v->shape) < 0) {
    g_set_error (error, NNP_ERROR, NNP_ERROR_INVALID,
                 "value '%s' has no concrete type and shape (is the graph specialised?)", v->name);
    return FALSE;
  }
  for (int d = 0; d < v->shape.rank; d++) {
    g_autoptr (GByteArray) dim = g_byte_array_new ();
    nnp_wire_put_int (dim, DIM_VALUE, v->shape.dims[d]);
    nnp_wire_put_message (shape, SHAPE_DIM, dim);
  }
  nnp_wire_put_int (tt, TT_ELEM_TYPE, v->dtype);
  nnp_wire_put_message (tt, TT_SHAPE, shape);
  nnp_wire_put_message (type, TYPE_TENSOR_TYPE, tt);
  nnp_wire_put_string (vi, VI_NAME, v->name);
  nnp_wire_put_message (vi, VI_TYPE, type);
  nnp_wire_put_message (buf, field, vi);
  return TRUE;
}

static gboolean
put_attr (GByteArray *buf, const NnpNode *node, const NnpAttr *a, GError **error)
{
  g_autoptr (GByteArray) m = g_byte_array_new ();

  nnp_wire_put_string (m, ATTR_NAME, a->name);
  switch (a->type) {
    case NNP_ATTR_FLOAT: nnp_wire_put_float (m, ATTR_F, a->f); break;
    case NNP_ATTR_INT: nnp_wire_put_int (m, ATTR_I, a->i); break;
    case NNP_ATTR_STRING: nnp_wire_put_string (m, ATTR_S, a->s); break;
    case NNP_ATTR_TENSOR:
      if (!put_tensor (m, ATTR_T, NULL, a->t, error))
        return FALSE;
      break;
    case NNP_ATTR_FLOATS: nnp_wire_put_packed_float (m, ATTR_FLOATS, a->floats, a->n); break;
    case NNP_ATTR_INTS: nnp_wire_put_packed_int64 (m, ATTR_INTS, a->ints, a->n); break;
    case NNP_ATTR_STRINGS:
      for (int i = 0; i < a->n; i++)
        nnp_wire_put_string (m, ATTR_STRINGS, a->strings[i]);
      break;
    default:
      nnp_node_set_error (error, NNP_ERROR_UNSUPPORTED, node,
                          "attribute '%s' of type %d cannot be exported", a->name, a->type);
      return FALSE;
  }
  nnp_wire_put_int (m, ATTR_TYPE, a->type);
  nnp_wire_put_message (buf, NODE_ATTRIBUTE, m);
  return TRUE;
}

/* A name not used by the graph nor by the file yet, derived from base. */
static const char *
fresh_name (Writer *w, const char *base)
{
  char *name = g_strdup (base);

  for (int k = 1; nnp_graph_find_value (w->graph, name) || g_hash_table_contains (w->names, name);
       k++) {
    g_free (name);
    name = g_strdup_printf ("%s_%d", base, k);
  }
  g_ptr_array_add (w->owned, name);
  g_hash_table_add (w->names, name);
  return name;
}

/* A scalar float32 initializer with a fresh name. */
static const char *
put_scalar (Writer *w, const char *base, float value, GError **error)
{
  NnpShape scalar = { .rank = 0 };
  g_autoptr (NnpTensor) t = nnp_tensor_new (NNP_DTYPE_FLOAT32, &scalar, error);
  const char *name;

  if (t == NULL)
    return NULL;
  ((float *) t->data)[0] = value;
  name = fresh_name (w, base);
  return put_tensor (w->g, GRAPH_INITIALIZER, name, t, error) ? name : NULL;
}

/* One NodeProto.  inputs/outputs: names ("" for omitted). */
static void
put_node (Writer *w, const char *name, const char *op_type, const char *domain,
          const char *const *inputs, int n_inputs, const char *const *outputs, int n_outputs,
          const GByteArray *attrs)
{
  g_autoptr (GByteArray) m = g_byte_array_new ();

  for (int i = 0; i < n_inputs; i++)
    nnp_wire_put_string (m, NODE_INPUT, inputs[i]);
  for (int i = 0; i < n_outputs; i++)
    nnp_wire_put_string (m, NODE_OUTPUT, outputs[i]);
  nnp_wire_put_string (m, NODE_NAME, name);
  nnp_wire_put_string (m, NODE_OP_TYPE, op_type);
  if (attrs)
    g_byte_array_append (m, attrs->data, attrs->len);
  if (domain && *domain && strcmp (domain, "ai.onnx") != 0) /* "ai.onnx" is "" */
    nnp_wire_put_string (m, NODE_DOMAIN, domain);
  nnp_wire_put_message (w->g, GRAPH_NODE, m);
}

static void
put_float_attr (GByteArray *attrs, const char *name, float f)
{
  g_autoptr (GByteArray) m = g_byte_array_new ();

  nnp_wire_put_string (m, ATTR_NAME, name);
  nnp_wire_put_float (m, ATTR_F, f);
  nnp_wire_put_int (m, ATTR_TYPE, NNP_ATTR_FLOAT);
  nnp_wire_put_message (attrs, NODE_ATTRIBUTE, m);
}

/* Clip(x, lo, hi) -> y: bounds as inputs from opset 11, attributes before. */
static gboolean
put_clip (Writer *w, const char *node, const char *x, const char *y, float lo, float hi,
          GError **error)
{
  g_autofree char *name = g_strconcat (node, ".clip", NULL);

  if (w->graph->opset < 11) {
    g_autoptr (GByteArray) attrs = g_byte_array_new ();
    put_float_attr (attrs, "min", lo);
    put_float_attr (attrs, "max", hi);
    put_node (w, name, "Clip", "", &x, 1, &y, 1, attrs);
  } else {
    g_autofree char *b0 = g_strconcat (node, ".clip_min", NULL);
    g_autofree char *b1 = g_strconcat (node, ".clip_max", NULL);
    const char *in[3] = { x, put_scalar (w, b0, lo, error), NULL };
    if (in[1] == NULL || !(in[2] = put_scalar (w, b1, hi, error)))
      return FALSE;
    put_node (w, name, "Clip", "", in, 3, &y, 1, NULL);
  }
  return TRUE;
}

/* HardSwish as ONNX (x -> y); before opset 14 written out the way Paddle
 * exports it (and our fusion pass recognises): x * Clip(x + 3, 0, 6) / 6. */
static gboolean
put_hard_swish (Writer *w, const char *node, const char *x, const char *y, GError **error)
{
  g_autofree char *n0 = g_strconcat (node, ".hard_swish", NULL);

  if (w->graph->opset >= 14) {
    put_node (w, n0, "HardSwish", "", &x, 1, &y, 1, NULL);
  } else {
    g_autofree char *b0 = g_strconcat (x, ".plus3", NULL);
    g_autofree char *b1 = g_strconcat (x, ".relu6", NULL);
    g_autofree char *b2 = g_strconcat (x, ".times_relu6", NULL);
    g_autofree char *b3 = g_strconcat (node, ".three", NULL);
    g_autofree char *b4 = g_strconcat (node, ".six", NULL);
    g_autofree char *n1 = g_strconcat (node, ".hard_swish_mul", NULL);
    g_autofree char *n2 = g_strconcat (node, ".hard_swish_div", NULL);
    const char *a = fresh_name (w, b0), *c = fresh_name (w, b1), *m = fresh_name (w, b2);
    const char *three = put_scalar (w, b3, 3.f, error);
    const char *six = three ? put_scalar (w, b4, 6.f, error) : NULL;
    const char *add_in[2] = { x, three }, *mul_in[2] = { x, c }, *div_in[2] = { m, six };

    if (six == NULL)
      return FALSE;
    put_node (w, n0, "Add", "", add_in, 2, &a, 1, NULL);
    if (!put_clip (w, node, a, c, 0.f, 6.f, error))
      return FALSE;
    put_node (w, n1, "Mul", "", mul_in, 2, &m, 1, NULL);
    put_node (w, n2, "Div", "", div_in, 2, &y, 1, NULL);
  }
  return TRUE;
}

/* GELU written out as PyTorch exports it: x / sqrt(2) -> Erf -> + 1 ->
 * x * . -> * 0.5 */
static gboolean
put_gelu (Writer *w, const NnpNode *node, const char *x, const char *y, GError **error)
{
  g_autofree char *bd = g_strconcat (y, ".gelu_div", NULL),
                  *be = g_strconcat (y, ".gelu_erf", NULL);
  g_autofree char *ba = g_strconcat (y, ".gelu_add", NULL),
                  *bm = g_strconcat (y, ".gelu_mul", NULL);
  g_autofree char *cs = g_strconcat (node->name, ".gelu_sqrt2", NULL);
  g_autofree char *co = g_strconcat (node->name, ".gelu_one", NULL);
  g_autofree char *ch = g_strconcat (node->name, ".gelu_half", NULL);
  g_autofree char *n0 = g_strconcat (node->name, ".gelu0", NULL);
  g_autofree char *n1 = g_strconcat (node->name, ".gelu1", NULL);
  g_autofree char *n2 = g_strconcat (node->name, ".gelu2", NULL);
  g_autofree char *n3 = g_strconcat (node->name, ".gelu3", NULL);
  g_autofree char *n4 = g_strconcat (node->name, ".gelu4", NULL);
  const char *d = fresh_name (w, bd), *e = fresh_name (w, be);
  const char *a = fresh_name (w, ba), *m = fresh_name (w, bm);
  const char *sqrt2 = put_scalar (w, cs, 1.41421356237309505f, error);
  const char *one = sqrt2 ? put_scalar (w, co, 1.f, error) : NULL;
  const char *half = one ? put_scalar (w, ch, 0.5f, error) : NULL;
  const char *div_in[2] = { x, sqrt2 }, *add_in[2] = { e, one };
  const char *mul_in[2] = { x, a }, *half_in[2] = { m, half };

  if (half == NULL)
    return FALSE;
  put_node (w, n0, "Div", "", div_in, 2, &d, 1, NULL);
  put_node (w, n1, "Erf", "", &d, 1, &e, 1, NULL);
  put_node (w, n2, "Add", "", add_in, 2, &a, 1, NULL);
  put_node (w, n3, "Mul", "", mul_in, 2, &m, 1, NULL);
  put_node (w, n4, "Mul", "", half_in, 2, &y, 1, NULL);
  return TRUE;
}

/* The fused activation of `node` as ONNX nodes reading x, writing y. */
static gboolean
put_activation (Writer *w, const NnpNode *node, const char *x, const char *y, GError **error)
{
  g_autoptr (GByteArray) attrs = g_byte_array_new ();
  g_autofree char *name = g_strconcat (node->name, ".act", NULL);

  switch (node->act) {
    case NNP_ACT_RELU: put_node (w, name, "Relu", "", &x, 1, &y, 1, NULL); return TRUE;
    case NNP_ACT_SIGMOID: put_node (w, name, "Sigmoid", "", &x, 1, &y, 1, NULL); return TRUE;
    case NNP_ACT_GELU: return put_gelu (w, node, x, y, error);
    case NNP_ACT_SILU: {
      g_autofree char *b0 = g_strconcat (y, ".sigmoid", NULL);
      g_autofree char *n1 = g_strconcat (node->name, ".act_mul", NULL);
      const char *s = fresh_name (w, b0), *mul_in[2] = { x, s };
      put_node (w, name, "Sigmoid", "", &x, 1, &s, 1, NULL);
      put_node (w, n1, "Mul", "", mul_in, 2, &y, 1, NULL);
      return TRUE;
    }
    case NNP_ACT_LEAKY_RELU:
      put_float_attr (attrs, "alpha", node->act_alpha);
      put_node (w, name, "LeakyRelu", "", &x, 1, &y, 1, attrs);
      return TRUE;
    case NNP_ACT_HARD_SIGMOID:
      put_float_attr (attrs, "alpha", node->act_alpha);
      put_float_attr (attrs, "beta", node->act_beta);
      put_node (w, name, "HardSigmoid", "", &x, 1, &y, 1, attrs);
      return TRUE;
    case NNP_ACT_HARD_SWISH: return put_hard_swish (w, node->name, x, y, error);
    case NNP_ACT_CLIP:
      return put_clip (w, node->name, x, y, node->act_alpha, node->act_beta, error);
    case NNP_ACT_HARD_SWISH_AFFINE: {
      g_autofree char *b0 = g_strconcat (y, ".hard_swish", NULL);
      g_autofree char *b1 = g_strconcat (y, ".scaled", NULL);
      g_autofree char *b2 = g_strconcat (node->name, ".act_alpha", NULL);
      g_autofree char *b3 = g_strconcat (node->name, ".act_beta", NULL);
      g_autofree char *n1 = g_strconcat (node->name, ".act_mul", NULL);
      g_autofree char *n2 = g_strconcat (node->name, ".act_add", NULL);
      const char *hs = fresh_name (w, b0), *sc = fresh_name (w, b1);
      const char *alpha = put_scalar (w, b2, node->act_alpha, error);
      const char *beta = alpha ? put_scalar (w, b3, node->act_beta, error) : NULL;
      const char *mul_in[2] = { hs, alpha }, *add_in[2] = { sc, beta };
      if (beta == NULL || !put_hard_swish (w, node->name, x, hs, error))
        return FALSE;
      put_node (w, n1, "Mul", "", mul_in, 2, &sc, 1, NULL);
      put_node (w, n2, "Add", "", add_in, 2, &y, 1, NULL);
      return TRUE;
    }
    default:
      nnp_node_set_error (error, NNP_ERROR_UNSUPPORTED, node,
                          "fused activation %d cannot be exported", node->act);
      return FALSE;
  }
}

/* The quantisation pass's nodes (lib/specialize/quant-fuse.c, docs/int8.md) as
 * standard ONNX, exactly:
 *   NnpConvIntegerToFloat / NnpMatMulIntegerToFloat (x, w, xz, wz, scale,
 *     bias) -> ConvInteger / MatMulInteger, Cast, Mul [, Add], activation;
 *   QLinearMatMul with our int32 bias (9 inputs) -> MatMulInteger, Add,
 *     Cast, Mul by x_scale * w_scale / y_scale, QuantizeLinear (scale 1);
 *   a QLinear* with act Relu (clamp at y's zero point) -> then Max (y, y_zp).
 * `in` / `out`: the node's value names.  FALSE with *handled unset for any
 * other node. */
static gboolean
put_quant_node (Writer *w, const NnpNode *node, const char *const *in, const char *const *out,
                const GByteArray *attrs, gboolean *handled, GError **error)
{
  gboolean to_float =
      node->op == NNP_OP_CONV_INTEGER_TO_FLOAT || node->op == NNP_OP_MAT_MUL_INTEGER_TO_FLOAT;
  gboolean qbias = node->op == NNP_OP_QLINEAR_MAT_MUL && node->n_inputs > 8 && in[8][0];
  gboolean qrelu = (node->op == NNP_OP_QLINEAR_CONV || node->op == NNP_OP_QLINEAR_MAT_MUL)
                   && node->act == NNP_ACT_RELU;
  g_autofree char *b_acc = g_strconcat (out[0], ".int32", NULL);
  g_autofree char *b_biased = g_strconcat (out[0], ".biased", NULL);
  g_autofree char *b_float = g_strconcat (out[0], ".float", NULL);
  g_autofree char *b_scaled = g_strconcat (out[0], ".scaled", NULL);
  g_autofree char *b_pre = g_strconcat (out[0], ".pre_act", NULL);
  g_autofree char *b_mult = g_strconcat (node->name, ".multiplier", NULL);
  g_autofree char *b_one = g_strconcat (node->name, ".one", NULL);
  const char *n[8];
  g_autoptr (GByteArray) cast_attrs = g_byte_array_new ();
  const char *acc, *f, *y;

  *handled = to_float || qbias || qrelu;
  if (!*handled)
    return FALSE;
  for (int i = 0; i < 8; i++) { /* node names, owned by the writer */
    char *s = g_strdup_printf ("%s.%d", node->name, i);
    g_ptr_array_add (w->owned, s);
    n[i] = s;
  }
  /* the final value before a Relu / Max, or the output itself */
  y = (to_float && node->act != NNP_ACT_NONE) || qrelu ? fresh_name (w, b_pre) : out[0];
  if (qrelu && !qbias) {
    put_node (w, node->name, node->op_type, node->domain, in, node->n_inputs, &y, 1, attrs);
  } else {
    const char *mm_in[4];
    if (to_float) {
      for (int i = 0; i < 4; i++)
        mm_in[i] = i < node->n_inputs ? in[i] : "";
    } else { /* QLinearMatMul: a, b, a zero point, b zero point */
      mm_in[0] = in[0], mm_in[1] = in[3], mm_in[2] = in[2], mm_in[3] = in[5];
    }
    acc = fresh_name (w, b_acc);
    put_node (w, n[0], node->op == NNP_OP_CONV_INTEGER_TO_FLOAT ? "ConvInteger" : "MatMulInteger",
              "", mm_in, 4, &acc, 1, node->op == NNP_OP_CONV_INTEGER_TO_FLOAT ? attrs : NULL);
    if (qbias) {
      const char *add_in[2] = { acc, in[8] };
      const char *biased = fresh_name (w, b_biased);
      put_node (w, n[1], "Add", "", add_in, 2, &biased, 1, NULL);
      acc = biased;
    }
    {
      g_autoptr (GByteArray) m = g_byte_array_new ();
      nnp_wire_put_string (m, ATTR_NAME, "to");
      nnp_wire_put_int (m, ATTR_I, NNP_DTYPE_FLOAT32);
      nnp_wire_put_int (m, ATTR_TYPE, NNP_ATTR_INT);
      nnp_wire_put_message (cast_attrs, NODE_ATTRIBUTE, m);
    }
    f = fresh_name (w, b_float);
    put_node (w, n[2], "Cast", "", &acc, 1, &f, 1, cast_attrs);
    if (to_float) {
      gboolean bias = node->n_inputs > 5 && in[5][0];
      const char *mul_in[2] = { f, in[4] };
      const char *scaled = bias ? fresh_name (w, b_scaled) : y;
      const char *add_in[2] = { scaled, bias ? in[5] : "" };
      put_node (w, n[3], "Mul", "", mul_in, 2, &scaled, 1, NULL);
      if (bias)
        put_node (w, n[4], "Add", "", add_in, 2, &y, 1, NULL);
    } else {
      /* (float) sum * (x_scale * w_scale / y_scale), rounded by a
       * QuantizeLinear of scale 1 with y's zero point: our arithmetic */
      const char *xw = fresh_name (w, b_mult), *mult = fresh_name (w, b_mult);
      const char *scaled = fresh_name (w, b_scaled);
      const char *one = put_scalar (w, b_one, 1.f, error);
      const char *xw_in[2] = { in[1], in[4] }, *div_in[2] = { xw, in[6] };
      const char *mul_in[2] = { f, mult }, *q_in[3] = { scaled, one, in[7] };
      if (one == NULL)
        return FALSE;
      put_node (w, n[3], "Mul", "", xw_in, 2, &xw, 1, NULL);
      put_node (w, n[4], "Div", "", div_in, 2, &mult, 1, NULL);
      put_node (w, n[5], "Mul", "", mul_in, 2, &scaled, 1, NULL);
      put_node (w, n[6], "QuantizeLinear", "", q_in, 3, &y, 1, NULL);
    }
  }
  if (qrelu) {
    const char *max_in[2] = { y, in[7] };
    put_node (w, n[7], "Max", "", max_in, 2, &out[0], 1, NULL);
    return TRUE;
  }
  return node->act == NNP_ACT_NONE || put_activation (w, node, y, out[0], error);
}

static gboolean
put_graph_node (Writer *w, const NnpNode *node, GError **error)
{
  g_autofree const char **in = g_new0 (const char *, MAX (node->n_inputs, 1));
  g_autofree const char **out = g_new0 (const char *, MAX (node->n_outputs, 1));
  g_autoptr (GByteArray) attrs = g_byte_array_new ();
  const char *act_out = NULL;

  for (int i = 0; i < node->n_inputs; i++) {
    const NnpValue *v = nnp_graph_value (w->graph, node->inputs[i]);
    in[i] = v ? v->name : "";
    if (v && v->constant && !g_hash_table_contains (w->inits, GINT_TO_POINTER (v->id))) {
      if (v->constant->nbytes > PROTOBUF_MAX_BYTES - w->g->len) {
        nnp_node_set_error (
            error, NNP_ERROR_UNSUPPORTED, node,
            "the stage's weights exceed protobuf's 2 GiB limit (external data is not written)");
        return FALSE;
      }
      if (!put_tensor (w->g, GRAPH_INITIALIZER, v->name, v->constant, error))
        return FALSE;
      g_hash_table_add (w->inits, GINT_TO_POINTER (v->id));
    }
  }
  for (int i = 0; i < node->n_outputs; i++) {
    const NnpValue *v = nnp_graph_value (w->graph, node->outputs[i]);
    out[i] = v ? v->name : "";
  }
  for (int i = 0; i < node->n_attrs; i++)
    if (!put_attr (attrs, node, &node->attrs[i], error))
      return FALSE;
  if (node->n_outputs == 1 && out[0][0]) {
    gboolean handled = FALSE;
    gboolean ok = put_quant_node (w, node, in, out, attrs, &handled, error);
    if (handled)
      return ok;
  }
  if (node->act != NNP_ACT_NONE) {
    g_autofree char *base = NULL;
    if (node->n_outputs != 1 || out[0][0] == '\0') {
      nnp_node_set_error (error, NNP_ERROR_UNSUPPORTED, node,
                          "a fused activation needs exactly one output");
      return FALSE;
    }
    act_out = out[0];
    base = g_strconcat (act_out, ".pre_act", NULL);
    out[0] = fresh_name (w, base);
  }
  put_node (w, node->name, node->op_type, node->domain, in, node->n_inputs, out, node->n_outputs,
            attrs);
  return act_out == NULL || put_activation (w, node, out[0], act_out, error);
}

static gint
cmp_node_index (gconstpointer a, gconstpointer b)
{
  const NnpNode *x = *(const NnpNode *const *) a, *y = *(const NnpNode *const *) b;
  return (x->index > y->index) - (x->index < y->index);
}

/* IR version for an opset (onnx/docs/Versioning.md), or the model's when higher. */
static int64_t
ir_version_for (int opset, int64_t model_ir)
{
  int64_t ir = opset <= 8    ? 3
               : opset == 9  ? 4
               : opset == 10 ? 5
               : opset == 11 ? 6
               : opset == 12 ? 7
               : opset <= 18 ? 8
                             : 9;
  return MAX (ir, model_ir);
}

static gboolean
put_model (GByteArray *out, const NnpPlan *plan, int k, NnpModel *model, const NnpGraph *graph,
           GError **error)
{
  const NnpPlanStage *s = &plan->stages[k];
  Writer w = { 0 };
  g_autoptr (GByteArray) opset = g_byte_array_new ();
  g_autoptr (GHashTable) domains = g_hash_table_new (g_str_hash, g_str_equal);
  g_autoptr (GPtrArray) nodes = g_ptr_array_new ();
  g_autofree char *gname = NULL, *doc = NULL;
  gboolean ok = FALSE;

  w.graph = graph;
  w.g = g_byte_array_new ();
  w.names = g_hash_table_new (g_str_hash, g_str_equal);
  w.inits = g_hash_table_new (NULL, NULL);
  w.owned = g_ptr_array_new_with_free_func (g_free);

  gname = g_strdup_printf ("%s_stage%d", graph->name ? graph->name : "model", k);
  nnp_wire_put_string (w.g, GRAPH_NAME, gname);
  /* ONNX wants nodes in topological order: the graph's order */
  for (int i = 0; i < s->n_nodes; i++) {
    const NnpNode *node = nnp_graph_find_node (graph, s->nodes[i]);
    if (node == NULL) {
      g_set_error (error, NNP_ERROR, NNP_ERROR_PLAN, "stage %d: no node '%s' in the graph", k,
                   s->nodes[i]);
      goto out;
    }
    g_ptr_array_add (nodes, (gpointer) node);
  }
  g_ptr_array_sort (nodes, cmp_node_index);
  for (guint i = 0; i < nodes->len; i++) {
    const NnpNode *node = g_ptr_array_index (nodes, i);
    if (node->domain && *node->domain && strcmp (node->domain, "ai.onnx") != 0)
      g_hash_table_add (domains, node->domain);
    if (!put_graph_node (&w, node, error))
      goto out;
  }
  for (int pass = 0; pass < 2; pass++) {
    char **names = pass == 0 ? s->inputs : s->outputs;
    for (int i = 0; names && names[i]; i++) {
      const NnpValue *v = nnp_graph_find_value (graph, names[i]);
      if (v == NULL) {
        g_set_error (error, NNP_ERROR, NNP_ERROR_PLAN, "stage %d: no value '%s' in the graph", k,
                     names[i]);
        goto out;
      }
      if (!put_value_info (w.g, pass == 0 ? GRAPH_INPUT : GRAPH_OUTPUT, v, error))
        goto out;
    }
  }
  doc = g_strdup_printf (
      "stage %d of %d of %s (sha256 %s), specialised graph%s, exported by nnpipe split --export", k,
      plan->n_stages, nnp_model_get_name (model), nnp_model_get_digest (model),
      plan->no_fusion ? " without fusion" : "");
  nnp_wire_put_string (w.g, GRAPH_DOC_STRING, doc);

  nnp_wire_put_int (out, MODEL_IR_VERSION,
                    ir_version_for (graph->opset, nnp_model_get_ir_version (model)));
  nnp_wire_put_string (out, MODEL_PRODUCER_NAME, "nnpipe");
  nnp_wire_put_string (out, MODEL_PRODUCER_VERSION, NNP_VERSION);
  nnp_wire_put_message (out, MODEL_GRAPH, w.g);
  nnp_wire_put_string (opset, OPSET_DOMAIN, "");
  nnp_wire_put_int (opset, OPSET_VERSION, graph->opset);
  nnp_wire_put_message (out, MODEL_OPSET_IMPORT, opset);
  {
    /* the loader keeps no version for other domains: version 1 */
    GHashTableIter it;
    gpointer key;
    g_hash_table_iter_init (&it, domains);
    while (g_hash_table_iter_next (&it, &key, NULL)) {
      g_autoptr (GByteArray) o = g_byte_array_new ();
      nnp_wire_put_string (o, OPSET_DOMAIN, key);
      nnp_wire_put_int (o, OPSET_VERSION, 1);
      nnp_wire_put_message (out, MODEL_OPSET_IMPORT, o);
    }
  }
  ok = TRUE;
out:
  g_byte_array_unref (w.g);
  g_hash_table_unref (w.names);
  g_hash_table_unref (w.inits);
  g_ptr_array_unref (w.owned);
  return ok;
}

gboolean
nnp_plan_export_stage (const NnpPlan *plan, int k, NnpModel *model, const NnpGraph *graph,
                       const char *path, GError **error)
{
  g_autoptr (GByteArray) buf = NULL;
  g_autoptr (GError) err = NULL;

  g_return_val_if_fail (plan != NULL && model != NULL && graph != NULL && path != NULL, FALSE);

  if (k < 0 || k >= plan->n_stages) {
    g_set_error (error, NNP_ERROR, NNP_ERROR_PLAN, "no stage %d (the plan has %d)", k,
                 plan->n_stages);
    return FALSE;
  }
  if (plan->digest && g_ascii_strcasecmp (plan->digest, nnp_model_get_digest (model)) != 0) {
    g_set_error (error, NNP_ERROR, NNP_ERROR_PLAN,
                 "the plan was made for another model (digest %.12s..., %s has %.12s...)",
                 plan->digest, nnp_model_get_name (model), nnp_model_get_digest (model));
    return FALSE;
  }
  if (plan->stages[k].inputs == NULL || plan->stages[k].outputs == NULL) {
    g_set_error (error, NNP_ERROR, NNP_ERROR_PLAN,
                 "stage %d: boundary lists missing (resolve the plan first)", k);
    return FALSE;
  }
  buf = g_byte_array_new ();
  if (!put_model (buf, plan, k, model, graph, error))
    return FALSE;
  if (!g_file_set_contents (path, (const char *) buf->data, buf->len, &err)) {
    g_set_error (error, NNP_ERROR, NNP_ERROR_IO, "cannot write stage %d: %s", k, err->message);
    return FALSE;
  }
  return TRUE;
}

gboolean
nnp_plan_export (const NnpPlan *plan, NnpModel *model, const NnpGraph *graph, const char *dir,
                 GError **error)
{
  g_return_val_if_fail (plan != NULL && dir != NULL, FALSE);

  if (g_mkdir_with_parents (dir, 0755) != 0) {
    int e = errno;
    g_set_error (error, NNP_ERROR, NNP_ERROR_IO, "cannot create export directory '%s': %s", dir,
                 g_strerror (e));
    return FALSE;
  }
  for (int k = 0; k < plan->n_stages; k++) {
    g_autofree char *file = g_strdup_printf ("stage-%d.onnx", k);
    g_autofree char *path = g_build_filename (dir, file, NULL);
    if (!nnp_plan_export_stage (plan, k, model, graph, path, error))
      return FALSE;
  }
  return TRUE;
}
