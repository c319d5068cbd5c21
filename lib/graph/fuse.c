/* libnnpipe: fusion passes (see passes.h).
 *
 * BatchNormalization after Conv / ConvTranspose:
 *   s[c] = scale[c] / sqrt(var[c] + eps)
 *   W'   = W scaled by s along the output-channel axis
 *   B'[c] = (B[c] - mean[c]) * s[c] + bn_bias[c]        (B = 0 without a conv bias)
 * Conv W is [C_out, C_in/group, k...]: output channel = axis 0.
 * ConvTranspose W is [C_in, C_out/group, k...]: output channel of W[ci, j] is
 *   (ci / (C_in/group)) * (C_out/group) + j.
 *
 * Activation after Conv / ConvTranspose / Gemm / MatMul: node->act. */
#include <nnpipe/graph.h>
#include <nnpipe/log.h>

#include "graph/passes.h"

#include <math.h>
#include <string.h>

/* The value has exactly one consumer and is not a graph output. */
static gboolean
single_use (const NnpValue *v)
{
  return v && v->n_consumers == 1 && !v->is_output && v->constant == NULL;
}

static const float *
const_floats (const NnpValue *v, int64_t n)
{
  if (v == NULL || v->constant == NULL || v->constant->dtype != NNP_DTYPE_FLOAT32)
    return NULL;
  if (n >= 0 && nnp_tensor_numel (v->constant) != n)
    return NULL;
  return v->constant->data;
}

/* A new constant value with a unique name derived from `base`. */
static NnpValue *
new_constant_value (NnpGraph *graph, const char *base, NnpTensor *t)
{
  g_autofree char *name = g_strdup (base);
  NnpValue *v;

  for (int k = 1; nnp_graph_find_value (graph, name); k++) {
    g_free (name);
    name = g_strdup_printf ("%s_%d", base, k);
  }
  v = nnp_graph_ensure_value (graph, name);
  v->dtype = t->dtype;
  v->shape = t->shape;
  v->constant = t;
  v->producer = -1;
  return v;
}

static gboolean
fold_bn (NnpGraph *graph, NnpNode *bn, gboolean *remove, GPtrArray *changed)
{
  NnpValue *x = nnp_node_input (graph, bn, 0);
  NnpNode *conv;
  NnpValue *wv, *bv, *out;
  const float *scale, *bias, *mean, *var, *w, *b = NULL;
  int64_t c_out, per, c_in = 0, group = 1, cog = 0, cig = 0;
  float eps;
  NnpTensor *nw, *nb;
  float *s;
  g_autofree char *wname = NULL, *bname = NULL;

  if (x == NULL || x->producer < 0 || !single_use (x) || x->dtype != NNP_DTYPE_FLOAT32)
    return FALSE;
  conv = nnp_graph_node (graph, x->producer);
  if (remove[conv->index] || conv->act != NNP_ACT_NONE
      || (conv->op != NNP_OP_CONV && conv->op != NNP_OP_CONV_TRANSPOSE))
    return FALSE;
  if (nnp_node_attr_int (bn, "training_mode", 0) != 0)
    return FALSE;
  for (int k = 1; k < bn->n_outputs; k++) {
    NnpValue *o = nnp_node_output (graph, bn, k);
    if (o && (o->n_consumers > 0 || o->is_output))
      return FALSE;
  }
  if (x->shape.rank < 2)
    return FALSE;
  c_out = x->shape.dims[1];
  wv = nnp_node_input (graph, conv, 1);
  bv = nnp_node_input (graph, conv, 2);
  if (wv == NULL || wv->shape.rank < 2 || !(w = const_floats (wv, -1)))
    return FALSE;
  if (bv && !(b = const_floats (bv, c_out)))
    return FALSE;
  if (!(scale = const_floats (nnp_node_input (graph, bn, 1), c_out))
      || !(bias = const_floats (nnp_node_input (graph, bn, 2), c_out))
      || !(mean = const_floats (nnp_node_input (graph, bn, 3), c_out))
      || !(var = const_floats (nnp_node_input (graph, bn, 4), c_out)))
    return FALSE;
  eps = nnp_node_attr_float (bn, "epsilon", 1e-5f);

  per = 1;
  for (int d = 2; d < wv->shape.rank; d++)
    per *= wv->shape.dims[d];
  if (conv->op == NNP_OP_CONV) {
    if (wv->shape.dims[0] != c_out)
      return FALSE;
    per *= wv->shape.dims[1];
  } else {
    group = nnp_node_attr_int (conv, "group", 1);
    c_in = wv->shape.dims[0];
    cog = wv->shape.dims[1];
    if (group <= 0 || c_in % group != 0 || cog * group != c_out)
      return FALSE;
    cig = c_in / group;
  }

  s = g_new (float, MAX (c_out, 1));
  for (int64_t c = 0; c < c_out; c++)
    s[c] = scale[c] / sqrtf (var[c] + eps);

  nw = nnp_tensor_new (NNP_DTYPE_FLOAT32, &wv->shape, NULL);
  {
    NnpShape bshape = { .rank = 1, .dims = { c_out } };
    nb = nnp_tensor_new (NNP_DTYPE_FLOAT32, &bshape, NULL);
  }
  if (nw == NULL || nb == NULL) {
    g_free (s);
    nnp_tensor_unref (nw);
    nnp_tensor_unref (nb);
    return FALSE;
  }
  {
    float *dw = nw->data, *db = nb->data;

    if (conv->op == NNP_OP_CONV) {
      for (int64_t c = 0; c < c_out; c++)
        for (int64_t i = 0; i < per; i++)
          dw[c * per + i] = w[c * per + i] * s[c];
    } else {
      for (int64_t ci = 0; ci < c_in; ci++)
        for (int64_t j = 0; j < cog; j++) {
          int64_t oc = (ci / cig) * cog + j;
          int64_t base = (ci * cog + j) * per;
          for (int64_t i = 0; i < per; i++)
            dw[base + i] = w[base + i] * s[oc];
        }
    }
    for (int64_t c = 0; c < c_out; c++)
      db[c] = ((b ? b[c] : 0.f) - mean[c]) * s[c] + bias[c];
  }
  g_free (s);

  wname = g_strdup_printf ("%s.bn_weight", conv->name);
  bname = g_strdup_printf ("%s.bn_bias", conv->name);
  wv = new_constant_value (graph, wname, nw);
  bv = new_constant_value (graph, bname, nb);
  conv->inputs[1] = wv->id;
  if (conv->n_inputs < 3) {
    conv->inputs = g_renew (int, conv->inputs, 3);
    conv->n_inputs = 3;
  }
  conv->inputs[2] = bv->id;

  /* the conv now produces the BN's output */
  out = nnp_node_output (graph, bn, 0);
  conv->outputs[0] = out->id;
  out->producer = conv->index;
  x->n_consumers = 0;
  remove[bn->index] = TRUE;
  g_ptr_array_add (changed, conv);
  NNP_DEBUG ("nnp-graph", "fused BatchNormalization '%s' into %s '%s'", bn->name,
             conv->op_type, conv->name);
  return TRUE;
}

/* The activation a node computes, if it is one we can fuse. */
static gboolean
activation_of (const NnpGraph *graph, const NnpNode *node, NnpActivation *act, float *alpha,
               float *beta)
{
  *alpha = 0.f;
  *beta = 0.f;
  switch (node->op) {
    case NNP_OP_RELU:
      *act = NNP_ACT_RELU;
      return TRUE;
    case NNP_OP_SIGMOID:
      *act = NNP_ACT_SIGMOID;
      return TRUE;
    case NNP_OP_HARD_SWISH:
      *act = NNP_ACT_HARD_SWISH;
      return TRUE;
    case NNP_OP_LEAKY_RELU:
      *act = NNP_ACT_LEAKY_RELU;
      *alpha = nnp_node_attr_float (node, "alpha", 0.01f);
      return TRUE;
    case NNP_OP_HARD_SIGMOID:
      *act = NNP_ACT_HARD_SIGMOID;
      *alpha = nnp_node_attr_float (node, "alpha", 0.2f);
      *beta = nnp_node_attr_float (node, "beta", 0.5f);
      return TRUE;
    case NNP_OP_CLIP: {
      float lo = -INFINITY, hi = INFINITY;

      if (nnp_node_get_attr (node, "min") || nnp_node_get_attr (node, "max")) {
        lo = nnp_node_attr_float (node, "min", -INFINITY);
        hi = nnp_node_attr_float (node, "max", INFINITY);
      }
      for (int k = 1; k < 3; k++) {
        NnpValue *v = nnp_node_input (graph, node, k);
        const float *f;
        if (v == NULL)
          continue;
        if (!(f = const_floats (v, 1)))
          return FALSE;
        if (k == 1)
          lo = f[0];
        else
          hi = f[0];
      }
      *act = NNP_ACT_CLIP;
      *alpha = lo;
      *beta = hi;
      return TRUE;
    }
    default:
      return FALSE;
  }
}

static gboolean
fuse_activation (NnpGraph *graph, NnpNode *node, gboolean *remove, GPtrArray *changed)
{
  NnpValue *x = nnp_node_input (graph, node, 0);
  NnpValue *out = nnp_node_output (graph, node, 0);
  NnpNode *prod;
  NnpActivation act;
  float alpha, beta;

  if (x == NULL || out == NULL || x->producer < 0 || !single_use (x)
      || x->dtype != NNP_DTYPE_FLOAT32 || out->dtype != NNP_DTYPE_FLOAT32)
    return FALSE;
  prod = nnp_graph_node (graph, x->producer);
  if (remove[prod->index] || prod->act != NNP_ACT_NONE || prod->n_outputs != 1)
    return FALSE;
  if (prod->op != NNP_OP_CONV && prod->op != NNP_OP_CONV_TRANSPOSE && prod->op != NNP_OP_GEMM
      && prod->op != NNP_OP_MAT_MUL)
    return FALSE;
  if (!activation_of (graph, node, &act, &alpha, &beta))
    return FALSE;

  prod->act = act;
  prod->act_alpha = alpha;
  prod->act_beta = beta;
  prod->outputs[0] = out->id;
  out->producer = prod->index;
  x->n_consumers = 0;
  remove[node->index] = TRUE;
  if (!g_ptr_array_find (changed, prod, NULL))
    g_ptr_array_add (changed, prod);
  NNP_DEBUG ("nnp-graph", "fused %s '%s' into %s '%s' (alpha %g, beta %g)", node->op_type,
             node->name, prod->op_type, prod->name, alpha, beta);
  return TRUE;
}

int
nnp_graph_fuse (NnpGraph *graph, GPtrArray *changed)
{
  int n_fused = 0;

  g_return_val_if_fail (graph != NULL && changed != NULL, 0);

  /* pass 1: BatchNormalization into Conv / ConvTranspose */
  {
    g_autofree gboolean *remove = g_new0 (gboolean, MAX (graph->nodes->len, 1));
    int n = 0;

    for (guint i = 0; i < graph->nodes->len; i++) {
      NnpNode *node = nnp_graph_node (graph, i);
      if (node->op == NNP_OP_BATCH_NORMALIZATION && fold_bn (graph, node, remove, changed))
        n++;
    }
    if (n > 0)
      nnp_graph_remove_nodes (graph, remove);
    n_fused += n;
  }
  /* pass 2: activations */
  {
    g_autofree gboolean *remove = g_new0 (gboolean, MAX (graph->nodes->len, 1));
    int n = 0;

    for (guint i = 0; i < graph->nodes->len; i++)
      if (fuse_activation (graph, nnp_graph_node (graph, i), remove, changed))
        n++;
    if (n > 0)
      nnp_graph_remove_nodes (graph, remove);
    n_fused += n;
  }
  return n_fused;
}
