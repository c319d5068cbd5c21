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
 * A zero Pad of the spatial dims before a Conv: into the Conv's pads.
 *
 * Activation after Conv / ConvTranspose / Gemm / MatMul, or after an Add /
 * Sub / Mul / Div of two computed tensors (residual Add + Relu): node->act;
 * SiLU written out (t -> Sigmoid -> Mul(t, .)) and GELU written out (t / sqrt 2
 * -> Erf -> + 1 -> t * . -> * 0.5) the same way, GELU also into the bias Add
 * after a MatMul. */
#include <nnpipe/graph.h>
#include <nnpipe/log.h>

#include "graph/derived.h"
#include "specialize/passes.h"
#include "graph/graph-edit.h"

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

/* Folded weights and bias of conv_channel_affine(): a value of the
 * derived-data cache (derived.h), or owned by the caller when the weights
 * are not stable sources. */
typedef struct {
  NnpTensor *w, *b;
} Affine;

static void
affine_free (gpointer data)
{
  Affine *a = data;

  nnp_tensor_unref (a->w);
  nnp_tensor_unref (a->b);
  g_free (a);
}

typedef struct {
  NnpOpType op;
  const NnpShape *wshape;
  const float *w, *b, *s, *t;
  int64_t c_out, per, c_in, cog, cig;
} AffineJob;

static gpointer
affine_make (gpointer data)
{
  const AffineJob *j = data;
  NnpShape bshape = { .rank = 1, .dims = { j->c_out } };
  NnpTensor *nw = nnp_tensor_new (NNP_DTYPE_FLOAT32, j->wshape, NULL);
  NnpTensor *nb = nnp_tensor_new (NNP_DTYPE_FLOAT32, &bshape, NULL);
  float *dw, *db;
  Affine *a;

  if (nw == NULL || nb == NULL) {
    nnp_tensor_unref (nw);
    nnp_tensor_unref (nb);
    return NULL;
  }
  dw = nw->data;
  db = nb->data;
  if (j->op == NNP_OP_CONV) {
    for (int64_t c = 0; c < j->c_out; c++)
      for (int64_t i = 0; i < j->per; i++)
        dw[c * j->per + i] = j->w[c * j->per + i] * j->s[c];
  } else {
    for (int64_t ci = 0; ci < j->c_in; ci++)
      for (int64_t q = 0; q < j->cog; q++) {
        int64_t oc = (ci / j->cig) * j->cog + q;
        int64_t base = (ci * j->cog + q) * j->per;
        for (int64_t i = 0; i < j->per; i++)
          dw[base + i] = j->w[base + i] * j->s[oc];
      }
  }
  for (int64_t c = 0; c < j->c_out; c++)
    db[c] = (j->b ? j->b[c] : 0.f) * j->s[c] + j->t[c];
  a = g_new (Affine, 1);
  a->w = nw;
  a->b = nb;
  return a;
}

/* Make `conv` (Conv / ConvTranspose with constant W, optional constant B)
 * compute s[c] * y + t[c] per output channel c instead of y: new constant
 * weight and bias values.  FALSE (graph unchanged) when the weights are not
 * foldable.  The new weights depend on W, B, s and t only: they are made
 * once per model and shared by its specialisations (derived.h). */
static gboolean
conv_channel_affine (NnpGraph *graph, NnpNode *conv, int64_t c_out, const float *s, const float *t)
{
  NnpValue *wv = nnp_node_input (graph, conv, 1);
  NnpValue *bv = nnp_node_input (graph, conv, 2);
  NnpDerivedCache *cache = nnp_graph_get_derived (graph);
  AffineJob job = { 0 };
  NnpTensor *sources[2];
  g_autofree guint8 *params = NULL;
  gsize params_size;
  Affine *a;
  NnpTensor *nw, *nb;
  g_autofree char *wname = NULL, *bname = NULL;

  if (wv == NULL || wv->shape.rank < 2 || !(job.w = const_floats (wv, -1)))
    return FALSE;
  if (bv && !(job.b = const_floats (bv, c_out)))
    return FALSE;
  job.op = conv->op;
  job.wshape = &wv->shape;
  job.s = s;
  job.t = t;
  job.c_out = c_out;
  job.per = 1;
  for (int d = 2; d < wv->shape.rank; d++)
    job.per *= wv->shape.dims[d];
  if (conv->op == NNP_OP_CONV) {
    if (wv->shape.dims[0] != c_out)
      return FALSE;
    job.per *= wv->shape.dims[1];
  } else {
    int64_t group = nnp_node_attr_int (conv, "group", 1);
    job.c_in = wv->shape.dims[0];
    job.cog = wv->shape.dims[1];
    if (group <= 0 || job.c_in % group != 0 || job.cog * group != c_out)
      return FALSE;
    job.cig = job.c_in / group;
  }

  /* key: W, B (by identity), the op, c_out, group and the exact s and t */
  sources[0] = wv->constant;
  sources[1] = bv ? bv->constant : NULL;
  params_size = 3 * sizeof (int64_t) + 2 * (gsize) c_out * sizeof (float);
  params = g_malloc (params_size);
  {
    int64_t head[3] = { conv->op, c_out, job.cig };
    memcpy (params, head, sizeof (head));
    memcpy (params + sizeof (head), s, c_out * sizeof (float));
    memcpy (params + sizeof (head) + c_out * sizeof (float), t, c_out * sizeof (float));
  }
  a = nnp_derived_get (cache, "conv-channel-affine", sources, bv ? 2 : 1, params, params_size,
                       affine_make, &job, affine_free);
  if (a) {
    nnp_derived_cache_add_stable (cache, a->w);
    nnp_derived_cache_add_stable (cache, a->b);
    nw = nnp_tensor_ref (a->w);
    nb = nnp_tensor_ref (a->b);
  } else {
    /* not from stable weights: this graph's own copy */
    if (!(a = affine_make (&job)))
      return FALSE;
    nw = g_steal_pointer (&a->w);
    nb = g_steal_pointer (&a->b);
    g_free (a);
  }

  wname = g_strdup_printf ("%s.folded_weight", conv->name);
  bname = g_strdup_printf ("%s.folded_bias", conv->name);
  wv = new_constant_value (graph, wname, nw);
  bv = new_constant_value (graph, bname, nb);
  conv->inputs[1] = wv->id;
  if (conv->n_inputs < 3) {
    conv->inputs = g_renew (int, conv->inputs, 3);
    conv->n_inputs = 3;
  }
  conv->inputs[2] = bv->id;
  return TRUE;
}

/* `node` (single output) is replaced by its producer `prod`, which now
 * writes node's output; x (prod's output, read only by node) goes away. */
static void
absorb (NnpGraph *graph, NnpNode *prod, NnpNode *node, NnpValue *x, gboolean *remove,
        GPtrArray *changed)
{
  NnpValue *out = nnp_node_output (graph, node, 0);

  prod->outputs[0] = out->id;
  out->producer = prod->index;
  x->n_consumers = 0;
  x->producer = -1;
  remove[node->index] = TRUE;
  if (!g_ptr_array_find (changed, prod, NULL))
    g_ptr_array_add (changed, prod);
}

/* x is produced by a Conv / ConvTranspose without activation, read only by
 * `node`; returns the producer. */
static NnpNode *
conv_producer (NnpGraph *graph, const NnpValue *x, const gboolean *remove)
{
  NnpNode *conv;

  if (x == NULL || x->producer < 0 || !single_use (x) || x->dtype != NNP_DTYPE_FLOAT32
      || x->shape.rank < 2)
    return NULL;
  conv = nnp_graph_node (graph, x->producer);
  if (remove[conv->index] || conv->act != NNP_ACT_NONE || conv->n_outputs != 1
      || (conv->op != NNP_OP_CONV && conv->op != NNP_OP_CONV_TRANSPOSE))
    return NULL;
  return conv;
}

static gboolean
fold_bn (NnpGraph *graph, NnpNode *bn, gboolean *remove, GPtrArray *changed)
{
  NnpValue *x = nnp_node_input (graph, bn, 0);
  NnpNode *conv;
  const float *scale, *bias, *mean, *var;
  int64_t c_out;
  float eps;
  g_autofree float *s = NULL, *t = NULL;

  if (!(conv = conv_producer (graph, x, remove)))
    return FALSE;
  if (nnp_node_attr_int (bn, "training_mode", 0) != 0)
    return FALSE;
  for (int k = 1; k < bn->n_outputs; k++) {
    NnpValue *o = nnp_node_output (graph, bn, k);
    if (o && (o->n_consumers > 0 || o->is_output))
      return FALSE;
  }
  c_out = x->shape.dims[1];
  if (!(scale = const_floats (nnp_node_input (graph, bn, 1), c_out))
      || !(bias = const_floats (nnp_node_input (graph, bn, 2), c_out))
      || !(mean = const_floats (nnp_node_input (graph, bn, 3), c_out))
      || !(var = const_floats (nnp_node_input (graph, bn, 4), c_out)))
    return FALSE;
  eps = nnp_node_attr_float (bn, "epsilon", 1e-5f);

  s = g_new (float, MAX (c_out, 1));
  t = g_new (float, MAX (c_out, 1));
  for (int64_t c = 0; c < c_out; c++) {
    s[c] = scale[c] / sqrtf (var[c] + eps);
    t[c] = bias[c] - mean[c] * s[c];
  }
  if (!conv_channel_affine (graph, conv, c_out, s, t))
    return FALSE;
  absorb (graph, conv, bn, x, remove, changed);
  NNP_DEBUG ("nnp-graph", "fused BatchNormalization '%s' into %s '%s'", bn->name, conv->op_type,
             conv->name);
  return TRUE;
}

/* A float constant that broadcasts against an output of shape `out` without
 * changing it and is uniform except along axis 1: one value (*per_channel
 * FALSE) or c = out->dims[1] values. */
static const float *
channel_const (const NnpValue *v, const NnpShape *out, gboolean *per_channel)
{
  const float *f = const_floats (v, -1);
  int64_t n;
  int r;

  if (f == NULL || v->shape.rank > out->rank)
    return NULL;
  n = nnp_tensor_numel (v->constant);
  *per_channel = FALSE;
  if (n == 1)
    return f;
  r = v->shape.rank;
  if (out->rank < 2 || n != out->dims[1] || r < out->rank - 1)
    return NULL;
  /* v's axis (k - (out->rank - r)) lines up with out's axis k */
  for (int k = out->rank - r; k < out->rank; k++) {
    int64_t d = v->shape.dims[k - (out->rank - r)];
    if (k != 1 && d != 1)
      return NULL;
  }
  *per_channel = TRUE;
  return f;
}

/* The operands of a two-input, one-output node: x the data, c the other
 * (x comes first when the second input is a constant). */
static gboolean
binary_operands (NnpGraph *graph, const NnpNode *node, NnpValue **x, NnpValue **c, NnpValue **out,
                 gboolean *x_first)
{
  NnpValue *a, *b;

  if (node->n_inputs != 2 || node->n_outputs != 1)
    return FALSE;
  a = nnp_node_input (graph, node, 0);
  b = nnp_node_input (graph, node, 1);
  *out = nnp_node_output (graph, node, 0);
  if (a == NULL || b == NULL || *out == NULL)
    return FALSE;
  *x_first = b->constant != NULL;
  *x = *x_first ? a : b;
  *c = *x_first ? b : a;
  return TRUE;
}

/* Mul / Add / Sub / Div of a Conv / ConvTranspose output by a scalar or
 * per-channel constant: folded into the weights and bias. */
static gboolean
fold_affine (NnpGraph *graph, NnpNode *node, gboolean *remove, GPtrArray *changed)
{
  NnpValue *x, *c, *out;
  NnpNode *conv;
  const float *f;
  gboolean per_channel, x_first;
  int64_t c_out;
  g_autofree float *s = NULL, *t = NULL;

  if (node->act != NNP_ACT_NONE || !binary_operands (graph, node, &x, &c, &out, &x_first))
    return FALSE;
  if (!(conv = conv_producer (graph, x, remove)))
    return FALSE;
  if (out->dtype != NNP_DTYPE_FLOAT32 || !nnp_shape_equal (&out->shape, &x->shape))
    return FALSE;
  if (!(f = channel_const (c, &x->shape, &per_channel)))
    return FALSE;
  c_out = x->shape.dims[1];
  s = g_new (float, MAX (c_out, 1));
  t = g_new (float, MAX (c_out, 1));
  for (int64_t i = 0; i < c_out; i++) {
    float v = f[per_channel ? i : 0];
    switch (node->op) {
      case NNP_OP_MUL:
        s[i] = v;
        t[i] = 0.f;
        break;
      case NNP_OP_ADD:
        s[i] = 1.f;
        t[i] = v;
        break;
      case NNP_OP_SUB:
        s[i] = x_first ? 1.f : -1.f;
        t[i] = x_first ? -v : v;
        break;
      case NNP_OP_DIV:
        if (!x_first || v == 0.f)
          return FALSE;
        s[i] = 1.f / v;
        t[i] = 0.f;
        break;
      default: return FALSE;
    }
  }
  if (!conv_channel_affine (graph, conv, c_out, s, t))
    return FALSE;
  absorb (graph, conv, node, x, remove, changed);
  NNP_DEBUG ("nnp-graph", "folded %s '%s' into %s '%s'", node->op_type, node->name, conv->op_type,
             conv->name);
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
    case NNP_OP_RELU: *act = NNP_ACT_RELU; return TRUE;
    case NNP_OP_SIGMOID: *act = NNP_ACT_SIGMOID; return TRUE;
    case NNP_OP_HARD_SWISH: *act = NNP_ACT_HARD_SWISH; return TRUE;
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
    default: return FALSE;
  }
}

/* Add / Sub / Mul / Div of two computed float tensors (a residual Add): the
 * binary kernels apply node->act in their store loop.  Binary ops with a
 * constant operand are left to the affine and HardSwish patterns. */
static gboolean
tensor_binary (const NnpGraph *graph, const NnpNode *node)
{
  NnpValue *a, *b;

  if (node->op != NNP_OP_ADD && node->op != NNP_OP_SUB && node->op != NNP_OP_MUL
      && node->op != NNP_OP_DIV)
    return FALSE;
  if (node->n_inputs != 2)
    return FALSE;
  a = nnp_node_input (graph, node, 0);
  b = nnp_node_input (graph, node, 1);
  return a && b && a->constant == NULL && b->constant == NULL && a->dtype == NNP_DTYPE_FLOAT32
         && b->dtype == NNP_DTYPE_FLOAT32;
}

/* Whether `prod` (not removed) can take a fused activation: one output, none
 * fused yet, an op whose kernels apply node->act. */
static gboolean
act_target (const NnpGraph *graph, const NnpNode *prod, const gboolean *remove)
{
  if (remove[prod->index] || prod->act != NNP_ACT_NONE || prod->n_outputs != 1)
    return FALSE;
  return prod->op == NNP_OP_CONV || prod->op == NNP_OP_CONV_TRANSPOSE || prod->op == NNP_OP_GEMM
         || prod->op == NNP_OP_MAT_MUL || prod->op == NNP_OP_CONV_INTEGER_TO_FLOAT
         || prod->op == NNP_OP_MAT_MUL_INTEGER_TO_FLOAT || tensor_binary (graph, prod);
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
  if (!act_target (graph, prod, remove))
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

/* SiLU / Swish written out, as PyTorch exports it:
 *   t -> Sigmoid -> s;  Mul(t, s) or Mul(s, t)
 * where t is read by these two nodes only and s by the Mul only, t produced
 * by a node that takes an activation (act_target): the producer gets act
 * SILU and writes the Mul's output.  `node` is the Mul. */
static gboolean
fuse_silu (NnpGraph *graph, NnpNode *node, gboolean *remove, GPtrArray *changed)
{
  NnpValue *out = nnp_node_output (graph, node, 0);

  if (node->op != NNP_OP_MUL || node->n_inputs != 2 || node->n_outputs != 1 || out == NULL
      || out->dtype != NNP_DTYPE_FLOAT32)
    return FALSE;
  for (int order = 0; order < 2; order++) {
    NnpValue *t = nnp_node_input (graph, node, order);
    NnpValue *s = nnp_node_input (graph, node, 1 - order);
    NnpNode *sig, *prod;

    if (t == NULL || s == NULL || !single_use (s) || s->producer < 0 || t->producer < 0
        || t->constant || t->is_output || t->n_consumers != 2 || t->dtype != NNP_DTYPE_FLOAT32
        || !nnp_shape_equal (&t->shape, &out->shape))
      continue;
    sig = nnp_graph_node (graph, s->producer);
    if (remove[sig->index] || sig->op != NNP_OP_SIGMOID || nnp_node_input (graph, sig, 0) != t)
      continue;
    prod = nnp_graph_node (graph, t->producer);
    if (!act_target (graph, prod, remove))
      continue;

    prod->act = NNP_ACT_SILU;
    prod->act_alpha = 0.f;
    prod->act_beta = 0.f;
    remove[sig->index] = TRUE;
    s->n_consumers = 0;
    t->n_consumers = 1;
    absorb (graph, prod, node, t, remove, changed);
    NNP_DEBUG ("nnp-graph", "fused SiLU (Sigmoid '%s', Mul '%s') into %s '%s'", sig->name,
               node->name, prod->op_type, prod->name);
    return TRUE;
  }
  return FALSE;
}

/* A scalar float constant (one element, any rank up to `rank`). */
static gboolean
scalar_const (const NnpValue *v, int rank, float *out)
{
  const float *f = const_floats (v, 1);

  if (f == NULL || v->shape.rank > rank)
    return FALSE;
  *out = f[0];
  return TRUE;
}

static gboolean
act_producer_op (NnpOpType op)
{
  return op == NNP_OP_CONV || op == NNP_OP_CONV_TRANSPOSE || op == NNP_OP_GEMM
         || op == NNP_OP_MAT_MUL;
}

/* The non-constant operand of a binary node whose other operand is the
 * scalar `want` (within 1e-6 relative); NULL if not that shape. */
static NnpValue *
operand_with_scalar (NnpGraph *graph, const NnpNode *node, float want, gboolean commutes)
{
  NnpValue *a = nnp_node_input (graph, node, 0), *b = nnp_node_input (graph, node, 1);
  float v;

  if (node->n_inputs != 2 || a == NULL || b == NULL)
    return NULL;
  if (b->constant && scalar_const (b, a->shape.rank, &v) && fabsf (v - want) <= 1e-6f * want)
    return a;
  if (commutes && a->constant && scalar_const (a, b->shape.rank, &v)
      && fabsf (v - want) <= 1e-6f * want)
    return b;
  return NULL;
}

/* The two-input Mul that produces m, read once (by a pattern's last
 * node), or NULL. */
static NnpNode *
pattern_mul (NnpGraph *graph, const NnpValue *m, const gboolean *remove)
{
  NnpNode *mul;

  if (m == NULL || !single_use (m) || m->producer < 0)
    return NULL;
  mul = nnp_graph_node (graph, m->producer);
  return remove[mul->index] || mul->op != NNP_OP_MUL || mul->n_inputs != 2 ? NULL : mul;
}

/* A written-out activation ending in `last` becomes prod's act: prod
 * writes last's output, t (prod's output, whose other readers the caller
 * removed) goes away. */
static void
take_pattern (NnpGraph *graph, NnpNode *prod, NnpActivation act, NnpNode *last, NnpValue *t,
              gboolean *remove, GPtrArray *changed, const char *what)
{
  prod->act = act;
  prod->act_alpha = 0.f;
  prod->act_beta = 0.f;
  t->n_consumers = 1;
  absorb (graph, prod, last, t, remove, changed);
  NNP_DEBUG ("nnp-graph", "fused %s pattern ending in '%s' into %s '%s'", what, last->name,
             prod->op_type, prod->name);
}

/* HardSwish written out, as exported by Paddle:
 *   t -> Add(t, 3) -> Clip(0, 6) -> Mul(t, .) -> Div(., 6)   (or Mul(., 1/6))
 * with t produced by a Conv / ConvTranspose / Gemm / MatMul without
 * activation: the producer gets act HARD_SWISH.  `last` is the Div / Mul. */
static gboolean
fuse_hard_swish (NnpGraph *graph, NnpNode *last, gboolean *remove, GPtrArray *changed)
{
  NnpValue *m, *out = nnp_node_output (graph, last, 0);
  NnpNode *mul, *clip, *add, *prod;
  NnpActivation act;
  float lo, hi;

  if (last->n_outputs != 1 || out == NULL || out->dtype != NNP_DTYPE_FLOAT32)
    return FALSE;
  if (last->op == NNP_OP_DIV)
    m = operand_with_scalar (graph, last, 6.f, FALSE);
  else if (last->op == NNP_OP_MUL)
    m = operand_with_scalar (graph, last, 1.f / 6.f, TRUE);
  else
    return FALSE;
  if ((mul = pattern_mul (graph, m, remove)) == NULL)
    return FALSE;
  for (int order = 0; order < 2; order++) {
    NnpValue *t = nnp_node_input (graph, mul, order);
    NnpValue *cl = nnp_node_input (graph, mul, 1 - order);
    NnpValue *av;

    if (t == NULL || cl == NULL || !single_use (cl) || cl->producer < 0 || t->producer < 0
        || t->constant || t->is_output || t->n_consumers != 2)
      continue;
    clip = nnp_graph_node (graph, cl->producer);
    if (remove[clip->index] || clip->op != NNP_OP_CLIP
        || !activation_of (graph, clip, &act, &lo, &hi) || lo != 0.f || hi != 6.f)
      continue;
    av = nnp_node_input (graph, clip, 0);
    if (av == NULL || !single_use (av) || av->producer < 0)
      continue;
    add = nnp_graph_node (graph, av->producer);
    if (remove[add->index] || add->op != NNP_OP_ADD
        || operand_with_scalar (graph, add, 3.f, TRUE) != t)
      continue;
    prod = nnp_graph_node (graph, t->producer);
    if (remove[prod->index] || prod->act != NNP_ACT_NONE || prod->n_outputs != 1
        || !act_producer_op (prod->op) || t->dtype != NNP_DTYPE_FLOAT32
        || !nnp_shape_equal (&t->shape, &out->shape))
      continue;

    remove[add->index] = remove[clip->index] = remove[mul->index] = TRUE;
    av->n_consumers = cl->n_consumers = 0;
    take_pattern (graph, prod, NNP_ACT_HARD_SWISH, last, t, remove, changed, "HardSwish");
    m->n_consumers = 0;
    return TRUE;
  }
  return FALSE;
}

/* An Add / Sub / Mul / Div of a computed float tensor and a constant (a
 * MatMul's bias Add) that can take GELU: its binary kernel applies
 * node->act; not after a Conv, whose constant affine fold_affine takes. */
static gboolean
const_binary_target (NnpGraph *graph, const NnpNode *prod, const gboolean *remove)
{
  NnpValue *a, *b, *x;

  if (remove[prod->index] || prod->act != NNP_ACT_NONE || prod->n_outputs != 1
      || prod->n_inputs != 2
      || (prod->op != NNP_OP_ADD && prod->op != NNP_OP_SUB && prod->op != NNP_OP_MUL
          && prod->op != NNP_OP_DIV))
    return FALSE;
  a = nnp_node_input (graph, prod, 0);
  b = nnp_node_input (graph, prod, 1);
  if (a == NULL || b == NULL || (a->constant == NULL) == (b->constant == NULL)
      || a->dtype != NNP_DTYPE_FLOAT32 || b->dtype != NNP_DTYPE_FLOAT32)
    return FALSE;
  x = a->constant ? b : a;
  return x->producer < 0
         || (nnp_graph_node (graph, x->producer)->op != NNP_OP_CONV
             && nnp_graph_node (graph, x->producer)->op != NNP_OP_CONV_TRANSPOSE);
}

/* GELU written out, as PyTorch exports it:
 *   t -> Div(t, sqrt 2) (or Mul(t, 1 / sqrt 2)) -> Erf -> Add(., 1)
 *     -> Mul(t, .) -> Mul(., 0.5)
 * with t read by the Div and the Mul only, produced by a node that takes
 * an activation (act_target, or a MatMul's bias Add: const_binary_target):
 * the producer gets act GELU and writes the last Mul's output. */
static gboolean
fuse_gelu (NnpGraph *graph, NnpNode *last, gboolean *remove, GPtrArray *changed)
{
  NnpValue *out = nnp_node_output (graph, last, 0), *m;
  NnpNode *mul;

  if (last->op != NNP_OP_MUL || last->n_outputs != 1 || out == NULL
      || out->dtype != NNP_DTYPE_FLOAT32)
    return FALSE;
  m = operand_with_scalar (graph, last, 0.5f, TRUE);
  if ((mul = pattern_mul (graph, m, remove)) == NULL)
    return FALSE;
  for (int order = 0; order < 2; order++) {
    NnpValue *t = nnp_node_input (graph, mul, order), *e1 = nnp_node_input (graph, mul, 1 - order);
    NnpValue *e, *d;
    NnpNode *add, *erf, *scale, *prod;

    if (t == NULL || e1 == NULL || !single_use (e1) || e1->producer < 0 || t->producer < 0
        || t->constant || t->is_output || t->n_consumers != 2 || t->dtype != NNP_DTYPE_FLOAT32
        || !nnp_shape_equal (&t->shape, &out->shape))
      continue;
    add = nnp_graph_node (graph, e1->producer);
    if (remove[add->index] || add->op != NNP_OP_ADD
        || (e = operand_with_scalar (graph, add, 1.f, TRUE)) == NULL || !single_use (e)
        || e->producer < 0)
      continue;
    erf = nnp_graph_node (graph, e->producer);
    if (remove[erf->index] || erf->op != NNP_OP_ERF || (d = nnp_node_input (graph, erf, 0)) == NULL
        || !single_use (d) || d->producer < 0)
      continue;
    scale = nnp_graph_node (graph, d->producer);
    if (remove[scale->index]
        || !(
            (scale->op == NNP_OP_DIV && operand_with_scalar (graph, scale, 1.41421356f, FALSE) == t)
            || (scale->op == NNP_OP_MUL
                && operand_with_scalar (graph, scale, 0.70710678f, TRUE) == t)))
      continue;
    prod = nnp_graph_node (graph, t->producer);
    if (!act_target (graph, prod, remove) && !const_binary_target (graph, prod, remove))
      continue;

    remove[scale->index] = remove[erf->index] = remove[add->index] = remove[mul->index] = TRUE;
    d->n_consumers = e->n_consumers = e1->n_consumers = 0;
    take_pattern (graph, prod, NNP_ACT_GELU, last, t, remove, changed, "GELU");
    m->n_consumers = 0;
    return TRUE;
  }
  return FALSE;
}

/* Mul / Add / Sub / Div by a scalar constant after a fused HardSwish:
 * act HARD_SWISH_AFFINE (alpha * hardswish + beta). */
static gboolean
fuse_post_affine (NnpGraph *graph, NnpNode *node, gboolean *remove, GPtrArray *changed)
{
  NnpValue *x, *c, *out;
  NnpNode *prod;
  gboolean x_first;
  float v, alpha, beta;

  if (!binary_operands (graph, node, &x, &c, &out, &x_first))
    return FALSE;
  if (x->producer < 0 || !single_use (x) || x->dtype != NNP_DTYPE_FLOAT32
      || out->dtype != NNP_DTYPE_FLOAT32 || !nnp_shape_equal (&out->shape, &x->shape)
      || !scalar_const (c, x->shape.rank, &v))
    return FALSE;
  prod = nnp_graph_node (graph, x->producer);
  if (remove[prod->index] || prod->n_outputs != 1 || !act_producer_op (prod->op))
    return FALSE;
  if (prod->act == NNP_ACT_HARD_SWISH) {
    alpha = 1.f;
    beta = 0.f;
  } else if (prod->act == NNP_ACT_HARD_SWISH_AFFINE) {
    alpha = prod->act_alpha;
    beta = prod->act_beta;
  } else {
    return FALSE;
  }
  switch (node->op) {
    case NNP_OP_MUL:
      alpha *= v;
      beta *= v;
      break;
    case NNP_OP_ADD: beta += v; break;
    case NNP_OP_SUB:
      if (!x_first)
        return FALSE;
      beta -= v;
      break;
    case NNP_OP_DIV:
      if (!x_first || v == 0.f)
        return FALSE;
      alpha /= v;
      beta /= v;
      break;
    default: return FALSE;
  }
  prod->act = NNP_ACT_HARD_SWISH_AFFINE;
  prod->act_alpha = alpha;
  prod->act_beta = beta;
  absorb (graph, prod, node, x, remove, changed);
  NNP_DEBUG ("nnp-graph", "folded %s '%s' into the activation of %s '%s' (alpha %g, beta %g)",
             node->op_type, node->name, prod->op_type, prod->name, alpha, beta);
  return TRUE;
}

/* Give `node` another op (same number of inputs and outputs). */
static void
retype (NnpNode *node, NnpOpType op, const char *op_type)
{
  g_free (node->op_type);
  node->op_type = g_strdup (op_type);
  node->op = op;
}

/* Squeeze-and-excitation with a residual, as exported by Paddle:
 *   m = Mul(x, s); y = Add(x, m)        (s small, broadcast over x)
 * becomes
 *   s1 = Add(s, 1); y = Mul(x, s1)
 * (the Mul node now computes s1 on the small tensor, the Add node the one
 * pass over x): one pass over x instead of two. */
static gboolean
fuse_se_residual (NnpGraph *graph, NnpNode *add, gboolean *remove, GPtrArray *changed)
{
  NnpValue *a, *b, *m, *x, *s, *out, *s1, *one;
  NnpNode *mul;
  NnpTensor *t;
  NnpShape scalar = { .rank = 0 };
  g_autofree char *name = NULL;

  if (add->op != NNP_OP_ADD || add->n_inputs != 2 || add->n_outputs != 1)
    return FALSE;
  a = nnp_node_input (graph, add, 0);
  b = nnp_node_input (graph, add, 1);
  out = nnp_node_output (graph, add, 0);
  if (a == NULL || b == NULL || out == NULL || out->dtype != NNP_DTYPE_FLOAT32)
    return FALSE;
  for (int order = 0; order < 2; order++) {
    m = order == 0 ? b : a;
    x = order == 0 ? a : b;
    if (!single_use (m) || m->producer < 0 || x->constant)
      continue;
    mul = nnp_graph_node (graph, m->producer);
    if (remove[mul->index] || mul->op != NNP_OP_MUL || mul->n_inputs != 2
        || mul->act != NNP_ACT_NONE)
      continue;
    if (nnp_node_input (graph, mul, 0) == x)
      s = nnp_node_input (graph, mul, 1);
    else if (nnp_node_input (graph, mul, 1) == x)
      s = nnp_node_input (graph, mul, 0);
    else
      continue;
    if (s == NULL || s == x || s->dtype != NNP_DTYPE_FLOAT32 || x->dtype != NNP_DTYPE_FLOAT32
        || s->shape.rank < 0 || s->shape.rank > x->shape.rank
        || !nnp_shape_equal (&x->shape, &out->shape) || !nnp_shape_equal (&m->shape, &out->shape)
        || nnp_shape_numel (&s->shape) * 4 > nnp_shape_numel (&x->shape))
      continue;

    t = nnp_tensor_new (NNP_DTYPE_FLOAT32, &scalar, NULL);
    if (t == NULL)
      return FALSE;
    ((float *) t->data)[0] = 1.f;
    one = new_constant_value (graph, "one", t);
    name = g_strdup_printf ("%s.plus_one", mul->name);
    for (int k = 1; nnp_graph_find_value (graph, name); k++) {
      g_free (name);
      name = g_strdup_printf ("%s.plus_one_%d", mul->name, k);
    }
    s1 = nnp_graph_ensure_value (graph, name);
    s1->dtype = NNP_DTYPE_FLOAT32;
    s1->shape = s->shape;
    s1->producer = mul->index;
    s1->n_consumers = 1;

    retype (mul, NNP_OP_ADD, "Add");
    mul->inputs[0] = s->id;
    mul->inputs[1] = one->id;
    mul->outputs[0] = s1->id;
    m->producer = -1;
    m->n_consumers = 0;
    retype (add, NNP_OP_MUL, "Mul");
    add->inputs[0] = x->id;
    add->inputs[1] = s1->id;
    g_ptr_array_add (changed, mul);
    g_ptr_array_add (changed, add);
    NNP_DEBUG ("nnp-graph", "rewrote %s(x, %s(x, s)) as Mul(x, s + 1) ('%s', '%s')", "Add", "Mul",
               add->name, mul->name);
    return TRUE;
  }
  return FALSE;
}

/* Pad(x) with zeros on the spatial dims only, read only by a Conv without
 * auto_pad: the pads go into the Conv's own (the 10 MB Pad before M-LSD's
 * stride-2 depthwise convolutions; the kernels pad in their own copies). */
static gboolean
fold_pad_conv (NnpGraph *graph, NnpNode *conv, gboolean *remove, GPtrArray *changed)
{
  NnpValue *v, *x;
  NnpNode *pad;
  const int64_t *pads;
  int64_t conv_pads[2 * NNP_MAX_RANK] = { 0 };
  int rank, nsp, n = 0;
  const char *mode, *auto_pad;

  if (conv->op != NNP_OP_CONV || conv->n_inputs < 2)
    return FALSE;
  v = nnp_node_input (graph, conv, 0);
  if (!single_use (v) || v->producer < 0 || v->shape.rank < 3)
    return FALSE;
  pad = nnp_graph_node (graph, v->producer);
  x = pad->n_inputs > 0 ? nnp_node_input (graph, pad, 0) : NULL;
  if (remove[pad->index] || pad->op != NNP_OP_PAD || pad->act != NNP_ACT_NONE || x == NULL
      || x->dtype != NNP_DTYPE_FLOAT32)
    return FALSE;
  rank = v->shape.rank;
  nsp = rank - 2;
  mode = nnp_node_attr_string (pad, "mode", "constant");
  auto_pad = nnp_node_attr_string (conv, "auto_pad", "NOTSET");
  if (g_strcmp0 (mode, "constant") != 0 || g_strcmp0 (auto_pad, "NOTSET") != 0)
    return FALSE;
  if (pad->n_inputs > 3 && pad->inputs[3] >= 0)
    return FALSE; /* axes */
  if (pad->n_inputs >= 2 && pad->inputs[1] >= 0) {
    NnpValue *pv = nnp_node_input (graph, pad, 1);
    NnpValue *cv =
        pad->n_inputs >= 3 && pad->inputs[2] >= 0 ? nnp_node_input (graph, pad, 2) : NULL;
    const float *value;
    if (pv == NULL || pv->constant == NULL || pv->constant->dtype != NNP_DTYPE_INT64
        || nnp_tensor_numel (pv->constant) != 2 * rank)
      return FALSE;
    if (cv && (!(value = const_floats (cv, 1)) || value[0] != 0.f))
      return FALSE;
    pads = pv->constant->data;
  } else {
    pads = nnp_node_attr_ints (pad, "pads", &n);
    if (pads == NULL || n != 2 * rank || nnp_node_attr_float (pad, "value", 0.f) != 0.f)
      return FALSE;
  }
  for (int d = 0; d < rank; d++)
    if (pads[d] < 0 || pads[rank + d] < 0 || (d < 2 && (pads[d] != 0 || pads[rank + d] != 0)))
      return FALSE;
  {
    const int64_t *cp = nnp_node_attr_ints (conv, "pads", &n);
    NnpAttr *attr = NULL;
    if (cp != NULL && n != 2 * nsp)
      return FALSE;
    for (int i = 0; i < 2 * nsp; i++)
      conv_pads[i] = (cp ? cp[i] : 0) + pads[(i < nsp ? 2 + i : rank + 2 + i - nsp)];
    for (int i = 0; i < conv->n_attrs; i++)
      if (g_strcmp0 (conv->attrs[i].name, "pads") == 0)
        attr = &conv->attrs[i];
    if (attr) {
      memcpy (attr->ints, conv_pads, sizeof (int64_t) * 2 * nsp);
    } else {
      NnpAttr a = { 0 };
      a.name = g_strdup ("pads");
      a.type = NNP_ATTR_INTS;
      a.n = 2 * nsp;
      a.ints = g_memdup2 (conv_pads, sizeof (int64_t) * 2 * nsp);
      nnp_node_take_attr (conv, &a);
    }
  }
  conv->inputs[0] = x->id;
  v->n_consumers = 0;
  remove[pad->index] = TRUE;
  if (!g_ptr_array_find (changed, conv, NULL))
    g_ptr_array_add (changed, conv);
  NNP_DEBUG ("nnp-graph", "folded Pad '%s' into Conv '%s'", pad->name, conv->name);
  return TRUE;
}

typedef gboolean (*FusePass) (NnpGraph *graph, NnpNode *node, gboolean *remove, GPtrArray *changed);

static gboolean
fold_bn_or_affine (NnpGraph *graph, NnpNode *node, gboolean *remove, GPtrArray *changed)
{
  if (node->op == NNP_OP_BATCH_NORMALIZATION)
    return fold_bn (graph, node, remove, changed);
  if (node->op == NNP_OP_MUL || node->op == NNP_OP_ADD || node->op == NNP_OP_SUB
      || node->op == NNP_OP_DIV)
    return fold_affine (graph, node, remove, changed);
  return FALSE;
}

/* One pass over the nodes (in order); removes what was fused. */
static int
run_pass (NnpGraph *graph, FusePass pass, GPtrArray *changed)
{
  g_autofree gboolean *remove = g_new0 (gboolean, MAX (graph->nodes->len, 1));
  int n = 0;

  for (guint i = 0; i < graph->nodes->len; i++) {
    NnpNode *node = nnp_graph_node (graph, i);
    if (!remove[i] && pass (graph, node, remove, changed))
      n++;
  }
  if (n > 0)
    nnp_graph_remove_nodes (graph, remove);
  return n;
}

/* An opset < 7 binary op broadcasting with an explicit axis: its second
 * operand's shape does not mean what numpy broadcasting says (the passes
 * read shapes the numpy way). */
static gboolean
has_legacy_axis (const NnpGraph *graph)
{
  if (graph->opset >= 7)
    return FALSE;
  for (guint i = 0; i < graph->nodes->len; i++) {
    const NnpNode *node = nnp_graph_node (graph, i);
    if (node->n_inputs == 2 && nnp_node_attr_int (node, "broadcast", 0) != 0
        && nnp_node_get_attr (node, "axis") != NULL)
      return TRUE;
  }
  return FALSE;
}

int
nnp_graph_fuse (NnpGraph *graph, GPtrArray *changed)
{
  int n_fused = 0;

  g_return_val_if_fail (graph != NULL && changed != NULL, 0);

  if (has_legacy_axis (graph)) {
    NNP_DEBUG ("nnp-graph", "no fusion: opset %d broadcasting with an axis", graph->opset);
    return 0;
  }

  for (int round = 0; round < 8; round++) {
    int n = 0;

    /* BatchNormalization and constant Mul/Add/Sub/Div into Conv / ConvTranspose */
    n += run_pass (graph, fold_bn_or_affine, changed);
    /* written-out HardSwish, then plain activations */
    n += run_pass (graph, fuse_hard_swish, changed);
    n += run_pass (graph, fuse_silu, changed);
    n += run_pass (graph, fuse_gelu, changed);
    n += run_pass (graph, fuse_activation, changed);
    /* scalar affine after a fused HardSwish */
    n += run_pass (graph, fuse_post_affine, changed);
    /* x + x * s -> x * (s + 1) */
    n += run_pass (graph, fuse_se_residual, changed);
    /* zero Pad of the spatial dims into the Conv reading it */
    n += run_pass (graph, fold_pad_conv, changed);
    n_fused += n;
    if (n == 0)
      break;
  }
  return n_fused;
}

NnpValue *
nnp_graph_new_constant (NnpGraph *graph, const char *base, NnpTensor *t)
{
  return new_constant_value (graph, base, t);
}
