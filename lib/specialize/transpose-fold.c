/* libnnpipe: Transpose pairs folded away (see passes.h).
 *
 * y = Transpose(x, p), then a chain of ops that do not care about the
 * layout, then Transpose(., q) with q the inverse of p: the chain runs on x
 * directly and both Transposes go.  A value in the Transposed layout has
 * dim a where x has dim p[a], so
 *   - elementwise unary ops (Relu, Clip, Sigmoid, ...) are unchanged;
 *   - a binary elementwise op (Add, Sub, Mul, Div, Max, Min, PRelu, Pow)
 *     whose other operand is a constant gets that constant broadcast to the
 *     rank of x and transposed by q (c'[p[a]] = c[a]); an operand that is the
 *     output of another Transpose by the same p (read only here) is replaced
 *     by that Transpose's input, which goes too;
 *   - Concat: axis a becomes p[a]; its other inputs as the binary operands;
 *   - Pad (attribute or constant `pads` input, no `axes`): the begin and end
 *     pads of dim a move to dim p[a].
 * Every value of the chain must be read by the next node only (else another
 * reader would need the transposed layout); anything else stops the chain
 * and nothing is changed.  Transpose(p) directly followed by its inverse is
 * folded too, when the second one's output is not a graph output. */
#include <nnpipe/graph.h>
#include <nnpipe/log.h>

#include "graph/graph-edit.h"
#include "ops/ops.h"
#include "specialize/passes.h"

#include <string.h>

#define MAX_CHAIN 64

typedef struct {
  int rank;
  int p[NNP_MAX_RANK]; /* perm of the first Transpose */
  int q[NNP_MAX_RANK]; /* its inverse */
} Perm;

/* The node's perm (default: reversed dims) for an input of rank `rank`. */
static gboolean
transpose_perm (const NnpNode *node, int rank, int *perm)
{
  int n = 0;
  const int64_t *ints = nnp_node_attr_ints (node, "perm", &n);
  gboolean seen[NNP_MAX_RANK] = { FALSE };

  if (rank <= 0 || rank > NNP_MAX_RANK)
    return FALSE;
  if (ints == NULL) {
    for (int i = 0; i < rank; i++)
      perm[i] = rank - 1 - i;
    return TRUE;
  }
  if (n != rank)
    return FALSE;
  for (int i = 0; i < rank; i++) {
    if (ints[i] < 0 || ints[i] >= rank || seen[ints[i]])
      return FALSE;
    seen[ints[i]] = TRUE;
    perm[i] = (int) ints[i];
  }
  return TRUE;
}

/* The one node reading v (v is not a graph output), or NULL. */
static NnpNode *
sole_consumer (NnpGraph *graph, const NnpValue *v)
{
  if (v == NULL || v->is_output || v->n_consumers != 1 || v->constant != NULL)
    return NULL;
  return nnp_graph_node (graph, v->consumers[0]);
}

/* v is Transpose(z, perm == P.p), read by one node only: returns the Transpose. */
static NnpNode *
same_transpose (NnpGraph *graph, const NnpValue *v, const Perm *P)
{
  NnpNode *t;
  NnpValue *z;
  int perm[NNP_MAX_RANK];

  if (v == NULL || v->producer < 0 || v->is_output || v->n_consumers != 1)
    return NULL;
  t = nnp_graph_node (graph, v->producer);
  if (t->op != NNP_OP_TRANSPOSE || t->n_inputs != 1)
    return NULL;
  z = nnp_node_input (graph, t, 0);
  if (z == NULL || z->shape.rank != P->rank || !transpose_perm (t, P->rank, perm)
      || memcmp (perm, P->p, sizeof (int) * P->rank) != 0)
    return NULL;
  return t;
}

static gboolean
is_unary (NnpOpType op)
{
  switch (op) {
    case NNP_OP_RELU:
    case NNP_OP_LEAKY_RELU:
    case NNP_OP_CLIP:
    case NNP_OP_HARD_SIGMOID:
    case NNP_OP_HARD_SWISH:
    case NNP_OP_SIGMOID:
    case NNP_OP_TANH:
    case NNP_OP_EXP:
    case NNP_OP_SQRT:
    case NNP_OP_NEG:
    case NNP_OP_ABS:
    case NNP_OP_CAST:
    case NNP_OP_IDENTITY:
    case NNP_OP_ELU:
    case NNP_OP_SELU:
    case NNP_OP_CELU:
    case NNP_OP_GELU:
    case NNP_OP_THRESHOLDED_RELU: return TRUE;
    default: return FALSE;
  }
}

static gboolean
is_binary (NnpOpType op)
{
  switch (op) {
    case NNP_OP_ADD:
    case NNP_OP_SUB:
    case NNP_OP_MUL:
    case NNP_OP_DIV:
    case NNP_OP_PRELU:
    case NNP_OP_MAX:
    case NNP_OP_MIN: return TRUE;
    default: return FALSE;
  }
}

/* A constant operand of rank <= P->rank (it broadcasts from the right). */
static gboolean
const_operand_ok (const NnpValue *v, const Perm *P)
{
  return v->constant != NULL && v->shape.rank >= 0 && v->shape.rank <= P->rank
         && nnp_dtype_size (v->constant->dtype) > 0;
}

/* What happens to input k of a chain node. */
typedef enum {
  IN_KEEP,      /* unchanged */
  IN_CHAIN,     /* the chain's value: becomes the previous x-layout value */
  IN_CONST,     /* constant: transposed copy */
  IN_TRANSPOSE, /* Transpose(z, p): becomes z, the Transpose goes */
} InputKind;

typedef struct {
  NnpNode *node;
  InputKind kind[64];
} Link;

/* Classify the inputs of a data node reading the chain value `cur`; FALSE
 * when the node cannot be run in the other layout. */
static gboolean
link_inputs (NnpGraph *graph, NnpNode *node, const NnpValue *cur, const Perm *P, Link *link)
{
  int n_data = 0;

  if (node->n_inputs > 64 || node->n_outputs != 1 || node->act != NNP_ACT_NONE)
    return FALSE;
  link->node = node;
  for (int k = 0; k < node->n_inputs; k++) {
    NnpValue *v = nnp_node_input (graph, node, k);
    gboolean data_slot = is_binary (node->op) || node->op == NNP_OP_CONCAT || k == 0;

    link->kind[k] = IN_KEEP;
    if (v == NULL)
      continue;
    if (v == cur) {
      if (!data_slot)
        return FALSE;
      link->kind[k] = IN_CHAIN;
      n_data++;
    } else if (data_slot) {
      if (const_operand_ok (v, P) && (node->op != NNP_OP_CONCAT || v->shape.rank == P->rank))
        link->kind[k] = IN_CONST;
      else if (same_transpose (graph, v, P))
        link->kind[k] = IN_TRANSPOSE;
      else
        return FALSE;
    }
  }
  return n_data > 0;
}

static gboolean
pad_ok (NnpGraph *graph, const NnpNode *node, const Perm *P)
{
  NnpValue *pads;
  int n = 0;

  if (node->n_inputs > 3 && node->inputs[3] >= 0)
    return FALSE; /* axes */
  if (node->n_inputs < 2 || node->inputs[1] < 0)
    return nnp_node_attr_ints (node, "pads", &n) != NULL && n == 2 * P->rank;
  pads = nnp_node_input (graph, node, 1);
  return pads && pads->constant && pads->constant->dtype == NNP_DTYPE_INT64
         && nnp_tensor_numel (pads->constant) == 2 * P->rank;
}

/* c broadcast to rank P->rank, transposed by q (out[p[a]] = c[a]). */
static NnpTensor *
transpose_const (const NnpTensor *c, const Perm *P)
{
  const int n = P->rank, lead = n - c->shape.rank;
  gsize es = nnp_dtype_size (c->dtype);
  int64_t b[NNP_MAX_RANK], sb[NNP_MAX_RANK], idx[NNP_MAX_RANK] = { 0 };
  NnpShape shape = { .rank = n };
  NnpTensor *t;
  int64_t numel, s = 1;

  for (int a = n - 1; a >= 0; a--) {
    b[a] = a < lead ? 1 : c->shape.dims[a - lead];
    sb[a] = s;
    s *= b[a];
  }
  for (int j = 0; j < n; j++)
    shape.dims[j] = b[P->q[j]];
  t = nnp_tensor_new (c->dtype, &shape, NULL);
  if (t == NULL)
    return NULL;
  numel = nnp_tensor_numel (t);
  /* walk t in order; idx[j] is the index along t's dim j = c's dim q[j] */
  for (int64_t o = 0; o < numel; o++) {
    int64_t src = 0;
    for (int j = 0; j < n; j++)
      src += idx[j] * sb[P->q[j]];
    memcpy ((guint8 *) t->data + o * es, (const guint8 *) c->data + src * es, es);
    for (int j = n - 1; j >= 0; j--) {
      if (++idx[j] < shape.dims[j])
        break;
      idx[j] = 0;
    }
  }
  return t;
}

static void
remap_pads (const int64_t *in, int64_t *out, const Perm *P)
{
  for (int a = 0; a < P->rank; a++) {
    out[P->p[a]] = in[a];
    out[P->rank + P->p[a]] = in[P->rank + a];
  }
}

static NnpAttr *
find_attr (NnpNode *node, const char *name)
{
  for (int i = 0; i < node->n_attrs; i++)
    if (g_strcmp0 (node->attrs[i].name, name) == 0)
      return &node->attrs[i];
  return NULL;
}

/* Rewrite input k of a chain node (see InputKind); the Transposes that go
 * are flagged in `remove`. */
static gboolean
rewrite_input (NnpGraph *graph, NnpNode *node, int k, InputKind kind, int x_id, const Perm *P,
               gboolean *remove)
{
  NnpValue *v = nnp_node_input (graph, node, k);

  switch (kind) {
    case IN_KEEP: return TRUE;
    case IN_CHAIN: node->inputs[k] = x_id; return TRUE;
    case IN_TRANSPOSE: {
      NnpNode *t = nnp_graph_node (graph, v->producer);
      node->inputs[k] = t->inputs[0];
      remove[t->index] = TRUE;
      return TRUE;
    }
    case IN_CONST: {
      NnpTensor *t = transpose_const (v->constant, P);
      g_autofree char *base = NULL;
      if (t == NULL)
        return FALSE;
      base = g_strdup_printf ("%s.untransposed", v->name);
      node->inputs[k] = nnp_graph_new_constant (graph, base, t)->id;
      return TRUE;
    }
  }
  return FALSE;
}

/* Rewrite one foldable chain starting at Transpose t1; returns FALSE with
 * nothing changed when it does not fold, or on error (set). */
static gboolean
fold_one (NnpGraph *graph, NnpNode *t1, gboolean *remove, gboolean *failed, GError **error)
{
  NnpValue *x = nnp_node_input (graph, t1, 0), *cur = nnp_node_output (graph, t1, 0);
  Link chain[MAX_CHAIN];
  int n_chain = 0, perm2[NNP_MAX_RANK];
  NnpNode *t2 = NULL;
  Perm P;
  int x_id;

  if (x == NULL || cur == NULL || x->constant || t1->n_outputs != 1 || x->shape.rank < 1)
    return FALSE;
  P.rank = x->shape.rank;
  if (!transpose_perm (t1, P.rank, P.p))
    return FALSE;
  for (int a = 0; a < P.rank; a++)
    P.q[P.p[a]] = a;

  /* walk the chain to the inverse Transpose */
  for (;;) {
    NnpNode *next = sole_consumer (graph, cur);
    if (next == NULL || remove[next->index])
      return FALSE;
    if (next->op == NNP_OP_TRANSPOSE) {
      if (!transpose_perm (next, P.rank, perm2))
        return FALSE;
      for (int a = 0; a < P.rank; a++)
        if (perm2[a] != P.q[a])
          return FALSE;
      t2 = next;
      break;
    }
    if (n_chain == MAX_CHAIN
        || !(is_unary (next->op) || is_binary (next->op) || next->op == NNP_OP_CONCAT
             || next->op == NNP_OP_PAD))
      return FALSE;
    if (next->op == NNP_OP_PAD && !pad_ok (graph, next, &P))
      return FALSE;
    if (!link_inputs (graph, next, cur, &P, &chain[n_chain]))
      return FALSE;
    n_chain++;
    cur = nnp_node_output (graph, next, 0);
    if (cur == NULL || cur->shape.rank != P.rank)
      return FALSE;
  }
  if (n_chain == 0 && nnp_node_output (graph, t2, 0)->is_output)
    return FALSE;

  /* rewrite */
  x_id = x->id;
  for (int i = 0; i < n_chain; i++) {
    NnpNode *node = chain[i].node;
    NnpValue *out = nnp_node_output (graph, node, 0);

    for (int k = 0; k < node->n_inputs; k++)
      if (!rewrite_input (graph, node, k, chain[i].kind[k], x_id, &P, remove))
        goto fail;
    if (node->op == NNP_OP_CONCAT) {
      NnpAttr *axis = find_attr (node, "axis");
      int64_t a;
      if (axis == NULL || axis->type != NNP_ATTR_INT)
        goto fail;
      a = axis->i < 0 ? axis->i + P.rank : axis->i;
      axis->i = P.p[a];
    } else if (node->op == NNP_OP_PAD) {
      int64_t pads[2 * NNP_MAX_RANK];
      if (node->n_inputs < 2 || node->inputs[1] < 0) {
        NnpAttr *attr = find_attr (node, "pads");
        remap_pads (attr->ints, pads, &P);
        memcpy (attr->ints, pads, sizeof (int64_t) * 2 * P.rank);
      } else {
        NnpValue *pv = nnp_node_input (graph, node, 1);
        NnpTensor *t = nnp_tensor_new (NNP_DTYPE_INT64, &pv->constant->shape, NULL);
        g_autofree char *base = g_strdup_printf ("%s.untransposed", pv->name);
        if (t == NULL)
          goto fail;
        remap_pads (pv->constant->data, t->data, &P);
        node->inputs[1] = nnp_graph_new_constant (graph, base, t)->id;
      }
    }
    if (i == n_chain - 1) {
      /* the last node writes the second Transpose's output */
      NnpValue *y = nnp_node_output (graph, t2, 0);
      node->outputs[0] = y->id;
      y->producer = node->index;
      out->producer = -1;
    } else {
      NnpShape s = out->shape;
      for (int a = 0; a < P.rank; a++)
        out->shape.dims[P.p[a]] = s.dims[a];
    }
    x_id = node->outputs[0];
  }
  if (n_chain == 0) {
    /* Transpose(p) then its inverse: readers of the result read x */
    NnpValue *y = nnp_node_output (graph, t2, 0);
    for (guint i = 0; i < graph->nodes->len; i++) {
      NnpNode *node = nnp_graph_node (graph, i);
      for (int k = 0; k < node->n_inputs; k++)
        if (node->inputs[k] == y->id)
          node->inputs[k] = x->id;
    }
  }
  remove[t1->index] = TRUE;
  remove[t2->index] = TRUE;
  for (int i = 0; i < n_chain; i++)
    if (!nnp_op_infer (graph, chain[i].node, error))
      goto fail;
  NNP_DEBUG ("nnp-graph", "folded Transpose '%s' ... '%s' around %d node(s)", t1->name, t2->name,
             n_chain);
  return TRUE;

fail:
  *failed = TRUE;
  if (error && *error == NULL)
    g_set_error (error, NNP_ERROR, NNP_ERROR_INVALID, "folding the Transposes around '%s' failed",
                 t1->name);
  return FALSE;
}

int
nnp_graph_fold_transposes (NnpGraph *graph, GError **error)
{
  int n_folded = 0;
  gboolean again = TRUE;

  g_return_val_if_fail (graph != NULL, -1);
  while (again) {
    g_autofree gboolean *remove = g_new0 (gboolean, MAX (graph->nodes->len, 1));
    gboolean failed = FALSE;

    /* one fold per round: the uses it changed are recounted by remove_nodes */
    again = FALSE;
    for (guint i = 0; i < graph->nodes->len && !again; i++) {
      NnpNode *node = nnp_graph_node (graph, i);
      if (node->op == NNP_OP_TRANSPOSE && fold_one (graph, node, remove, &failed, error))
        again = TRUE;
      if (failed)
        return -1;
    }
    if (again) {
      nnp_graph_remove_nodes (graph, remove);
      n_folded++;
    }
  }
  return n_folded;
}
