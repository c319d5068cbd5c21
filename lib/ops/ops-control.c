/* libnnpipe: shape inference for If, Loop (opsets 1-21) and Scan (opsets
 * 9-21) (control-params.h).
 *
 * Output shapes must not depend on data: If's branches give the same shapes
 * unless the condition is a constant; a Loop's carried values keep their
 * shapes, and a Loop with scan outputs runs a known number of times (a
 * constant trip count M and a body whose condition output is constant
 * true: the body runs only while its condition input is true, so it is
 * specialised with that input bound to true).  Anything else is refused with
 * NNP_ERROR_UNSUPPORTED naming what would have to be a constant. */
#include "ops/ops.h"
#include "ops/control-params.h"

#include <string.h>

static NnpSubgraphSpecializeFunc specializer;

void
nnp_op_set_subgraph_specializer (NnpSubgraphSpecializeFunc func)
{
  g_atomic_pointer_set (&specializer, func);
}

NnpGraph *
nnp_op_subgraph_specialize (const NnpGraph *parent, const NnpNode *node, const NnpAttr *sub,
                            const NnpDType *dtypes, const NnpShape *shapes,
                            NnpTensor *const *consts, GError **error)
{
  g_autoptr (NnpGraph) g = NULL;
  g_autofree const char **names = NULL;
  g_autofree NnpShape *in = NULL;
  NnpSubgraphSpecializeFunc func = g_atomic_pointer_get (&specializer);
  GError *local = NULL;
  NnpGraph *res;
  int n_in = 0;

  g_return_val_if_fail (sub->g != NULL, NULL);
  g_return_val_if_fail (func != NULL, NULL);
  g = nnp_graph_copy (sub->g);
  names = g_new0 (const char *, MAX (g->inputs->len, 1));
  in = g_new0 (NnpShape, MAX (g->inputs->len, 1));
  for (guint k = 0; k < g->inputs->len; k++) {
    NnpValue *v = nnp_graph_value (g, g_array_index (g->inputs, int, k));
    if (k < (guint) sub->i) {
      v->dtype = dtypes[k];
      if (consts && consts[k]) {
        v->constant = nnp_tensor_ref (consts[k]);
        v->shape = consts[k]->shape;
        continue;
      }
      names[n_in] = v->name;
      in[n_in++] = shapes[k];
    } else {
      /* an outer value: the node input of that name */
      NnpValue *pv = NULL;
      for (int j = 0; j < node->n_inputs && pv == NULL; j++) {
        NnpValue *c = nnp_node_input (parent, node, j);
        if (c && strcmp (c->name, v->name) == 0)
          pv = c;
      }
      if (pv == NULL) {
        nnp_node_set_error (error, NNP_ERROR_INVALID, node,
                            "subgraph '%s' reads '%s', which the node does not", sub->name,
                            v->name);
        return NULL;
      }
      v->dtype = pv->dtype;
      if (pv->constant) {
        v->constant = nnp_tensor_ref (pv->constant);
        v->shape = pv->shape;
        continue;
      }
      names[n_in] = v->name;
      in[n_in++] = pv->shape;
    }
  }
  res = func (g, names, in, n_in, &local);
  if (res == NULL) {
    nnp_node_set_error (error, local->code, node, "subgraph '%s': %s", sub->name, local->message);
    g_error_free (local);
  }
  return res;
}

static const NnpAttr *
subgraph (const NnpNode *node, const char *name, int n_formal, GError **error)
{
  const NnpAttr *a = nnp_node_get_attr (node, name);

  if (a == NULL || a->type != NNP_ATTR_GRAPH || a->g == NULL) {
    nnp_node_set_error (error, NNP_ERROR_INVALID, node, "has no subgraph '%s'", name);
    return NULL;
  }
  if (n_formal >= 0 && a->i != n_formal) {
    nnp_node_set_error (error, NNP_ERROR_INVALID, node,
                        "subgraph '%s' has %" G_GINT64_FORMAT " inputs, expected %d", name, a->i,
                        n_formal);
    return NULL;
  }
  return a;
}

static NnpValue *
out_value (const NnpGraph *g, int k)
{
  return nnp_graph_value (g, g_array_index (g->outputs, int, k));
}

/* constant bool/int scalar of a value: -1 when not a constant */
static int64_t
const_scalar (const NnpValue *v)
{
  if (v == NULL || v->constant == NULL || nnp_tensor_numel (v->constant) != 1)
    return -1;
  switch (v->dtype) {
    case NNP_DTYPE_BOOL: return ((const guint8 *) v->constant->data)[0] != 0;
    case NNP_DTYPE_INT64: return ((const int64_t *) v->constant->data)[0];
    case NNP_DTYPE_INT32: return ((const int32_t *) v->constant->data)[0];
    default: return -1;
  }
}

/* ---------------------------------------------------------------- If */

gboolean
nnp_op_if_infer (NnpGraph *graph, NnpNode *node, GError **error)
{
  NnpValue *cond = nnp_node_input (graph, node, 0);
  const NnpAttr *br[2];
  g_autoptr (NnpGraph) g0 = NULL;
  g_autoptr (NnpGraph) g1 = NULL;
  NnpControlParams *p;
  NnpGraph *gs[2];

  if (cond->dtype != NNP_DTYPE_BOOL || nnp_shape_numel (&cond->shape) != 1) {
    nnp_node_set_error (error, NNP_ERROR_INVALID, node, "cond must be one bool");
    return FALSE;
  }
  br[1] = subgraph (node, "then_branch", 0, error);
  br[0] = br[1] ? subgraph (node, "else_branch", 0, error) : NULL;
  if (br[0] == NULL)
    return FALSE;
  p = NNP_NODE_NEW_PARAMS (node, NnpControlParams);
  p->cond_const = (int) const_scalar (cond);
  for (int b = 0; b < 2; b++) {
    if (p->cond_const >= 0 && p->cond_const != b)
      continue;
    gs[b] = nnp_op_subgraph_specialize (graph, node, br[b], NULL, NULL, NULL, error);
    if (gs[b] == NULL)
      return FALSE;
    if (b == 0)
      g0 = gs[b];
    else
      g1 = gs[b];
    if ((int) gs[b]->outputs->len != node->n_outputs) {
      nnp_node_set_error (error, NNP_ERROR_INVALID, node, "a branch has %u outputs, the node %d",
                          gs[b]->outputs->len, node->n_outputs);
      return FALSE;
    }
  }
  for (int k = 0; k < node->n_outputs; k++) {
    NnpValue *t = g1 ? out_value (g1, k) : NULL, *e = g0 ? out_value (g0, k) : NULL;
    NnpValue *v = t ? t : e;
    if (t && e && (t->dtype != e->dtype || !nnp_shape_equal (&t->shape, &e->shape))) {
      g_autofree char *ts = nnp_shape_to_string (&t->shape);
      g_autofree char *es = nnp_shape_to_string (&e->shape);
      nnp_node_set_error (
          error, NNP_ERROR_UNSUPPORTED, node,
          "input 0 ('%s') must be a constant: the branches give output %d as %s %s and %s %s (data-dependent shapes are not supported)",
          cond->name, k, nnp_dtype_name (t->dtype), ts, nnp_dtype_name (e->dtype), es);
      return FALSE;
    }
    nnp_op_set_output (graph, node, k, v->dtype, &v->shape);
  }
  return TRUE;
}

/* ---------------------------------------------------------------- Loop */

/* The body specialised for each iteration number 0..trip-1 (a constant);
 * every one must give the outputs of the first.  *first: that graph (NULL
 * when trip is 0). */
static gboolean
loop_unrolled_shapes (const NnpGraph *graph, const NnpNode *node, const NnpAttr *body,
                      const NnpDType *dt, const NnpShape *sh, NnpTensor **consts, int64_t trip,
                      NnpGraph **first, GError **error)
{
  NnpShape scalar = { .rank = 0 };

  *first = NULL;
  for (int64_t i = 0; i < trip; i++) {
    g_autoptr (NnpTensor) it = nnp_tensor_new (NNP_DTYPE_INT64, &scalar, error);
    NnpGraph *g;
    if (it == NULL)
      return FALSE;
    ((int64_t *) it->data)[0] = i;
    consts[0] = it;
    g = nnp_op_subgraph_specialize (graph, node, body, dt, sh, consts, error);
    consts[0] = NULL;
    if (g == NULL)
      return FALSE;
    if (*first == NULL) {
      *first = g;
      continue;
    }
    for (guint k = 0; k < g->outputs->len; k++) {
      NnpValue *a = out_value (g, (int) k), *b = out_value (*first, (int) k);
      if (a->dtype != b->dtype || !nnp_shape_equal (&a->shape, &b->shape)) {
        nnp_node_set_error (error, NNP_ERROR_UNSUPPORTED, node,
                            "body output %u changes its shape at iteration %" G_GINT64_FORMAT
                            " (data-dependent shapes are not supported)",
                            k, i);
        nnp_graph_unref (g);
        g_clear_pointer (first, nnp_graph_unref);
        return FALSE;
      }
    }
    nnp_graph_unref (g);
  }
  return TRUE;
}

gboolean
nnp_op_loop_infer (NnpGraph *graph, NnpNode *node, GError **error)
{
  const NnpAttr *body = subgraph (node, "body", -1, error);
  NnpValue *m, *c;
  g_autoptr (NnpGraph) g = NULL;
  g_autofree NnpDType *dt = NULL;
  g_autofree NnpShape *sh = NULL;
  g_autofree NnpTensor **consts = NULL;
  g_autoptr (NnpTensor) t_true = NULL;
  NnpControlParams *p;
  NnpShape scalar = { .rank = 0 };
  int n_state, n_scan;
  int64_t cond_out;

  if (body == NULL)
    return FALSE;
  n_state = (int) body->i - 2;
  n_scan = node->n_outputs - n_state;
  if (n_state < 0 || n_scan < 0 || body->g->outputs->len != (guint) (1 + n_state + n_scan)
      || node->n_inputs < 2 + n_state) {
    nnp_node_set_error (error, NNP_ERROR_INVALID, node,
                        "body inputs/outputs do not match the node's (%d carried values)", n_state);
    return FALSE;
  }
  m = nnp_node_input (graph, node, 0);
  c = nnp_node_input (graph, node, 1);
  p = NNP_NODE_NEW_PARAMS (node, NnpControlParams);
  p->n_state = n_state;
  p->n_scan = n_scan;
  p->trip = m ? const_scalar (m) : -1;
  p->cond_init = c ? (int) const_scalar (c) : 1;
  if (m == NULL && c == NULL) {
    nnp_node_set_error (error, NNP_ERROR_UNSUPPORTED, node,
                        "has neither a trip count nor a condition (an endless loop)");
    return FALSE;
  }
  dt = g_new0 (NnpDType, 2 + n_state);
  sh = g_new0 (NnpShape, 2 + n_state);
  consts = g_new0 (NnpTensor *, 2 + n_state);
  dt[0] = NNP_DTYPE_INT64;
  sh[0] = scalar;
  dt[1] = NNP_DTYPE_BOOL;
  /* the body runs only while its condition input is true */
  t_true = nnp_tensor_new (NNP_DTYPE_BOOL, &scalar, error);
  if (t_true == NULL)
    return FALSE;
  ((guint8 *) t_true->data)[0] = 1;
  consts[1] = t_true;
  for (int k = 0; k < n_state; k++) {
    NnpValue *v = nnp_node_input (graph, node, 2 + k);
    if (v == NULL) {
      nnp_node_set_error (error, NNP_ERROR_INVALID, node, "loop-carried input %d is missing", k);
      return FALSE;
    }
    dt[2 + k] = v->dtype;
    sh[2 + k] = v->shape;
  }
  {
    GError *local = NULL;
    g = nnp_op_subgraph_specialize (graph, node, body, dt, sh, consts, &local);
    if (g == NULL && local->code == NNP_ERROR_UNSUPPORTED && p->trip >= 0
        && p->trip <= NNP_LOOP_MAX_UNROLL) {
      /* shapes in the body that need the iteration number: one body per
       * iteration, each checked to give the same outputs' shapes */
      g_clear_error (&local);
      p->unrolled = TRUE;
      if (!loop_unrolled_shapes (graph, node, body, dt, sh, consts, p->trip, &g, error))
        return FALSE;
      if (g == NULL) {
        /* no iteration at all: the carried values pass through */
        for (int k = 0; k < n_state; k++)
          nnp_op_set_output (graph, node, k, dt[2 + k], &sh[2 + k]);
        if (n_scan > 0) {
          nnp_node_set_error (error, NNP_ERROR_UNSUPPORTED, node,
                              "scan outputs of a loop that never runs have no known shape");
          return FALSE;
        }
        return TRUE;
      }
    } else if (g == NULL && local->code == NNP_ERROR_UNSUPPORTED && p->trip < 0 && m != NULL) {
      /* it could be unrolled if the trip count were known */
      nnp_node_set_error (
          error, NNP_ERROR_UNSUPPORTED, node,
          "input 0 ('%s') must be a constant (data-dependent shapes are not supported: the body would run once per iteration number; %s)",
          m->name, local->message);
      g_error_free (local);
      return FALSE;
    } else if (g == NULL) {
      g_propagate_error (error, local);
      return FALSE;
    }
  }
  for (int k = 0; k < n_state; k++) {
    NnpValue *o = out_value (g, 1 + k);
    if (o->dtype != dt[2 + k] || !nnp_shape_equal (&o->shape, &sh[2 + k])) {
      nnp_node_set_error (
          error, NNP_ERROR_UNSUPPORTED, node,
          "loop-carried value %d changes its type or shape in the body (data-dependent shapes are not supported)",
          k);
      return FALSE;
    }
    nnp_op_set_output (graph, node, k, o->dtype, &o->shape);
  }
  cond_out = const_scalar (out_value (g, 0));
  p->iterations = -1;
  if (n_scan > 0) {
    if (p->cond_init == 0)
      p->iterations = 0;
    else if (p->trip >= 0 && p->cond_init == 1 && (c == NULL || cond_out == 1))
      p->iterations = p->trip;
    else if (p->trip >= 0 && c != NULL && cond_out == 1 && p->cond_init < 0) {
      nnp_node_set_error (
          error, NNP_ERROR_UNSUPPORTED, node,
          "input 1 ('%s') must be a constant (the scan outputs' length depends on it; data-dependent shapes are not supported)",
          c->name);
      return FALSE;
    } else if (p->trip < 0 && m) {
      nnp_node_set_error (
          error, NNP_ERROR_UNSUPPORTED, node,
          "input 0 ('%s') must be a constant (the scan outputs' length depends on it; data-dependent shapes are not supported)",
          m->name);
      return FALSE;
    } else {
      nnp_node_set_error (
          error, NNP_ERROR_UNSUPPORTED, node,
          "the body's condition may end the loop early, so the length of its scan outputs depends on data (not supported)");
      return FALSE;
    }
    if (p->iterations > G_MAXINT32) {
      nnp_node_set_error (error, NNP_ERROR_INVALID, node,
                          "trip count %" G_GINT64_FORMAT " is too large for scan outputs",
                          p->iterations);
      return FALSE;
    }
  }
  for (int k = 0; k < n_scan; k++) {
    NnpValue *o = out_value (g, 1 + n_state + k);
    NnpShape s = { .rank = o->shape.rank + 1 };
    if (s.rank > NNP_MAX_RANK) {
      nnp_node_set_error (error, NNP_ERROR_UNSUPPORTED, node, "scan output %d has too many dims",
                          k);
      return FALSE;
    }
    s.dims[0] = p->iterations;
    memcpy (s.dims + 1, o->shape.dims, sizeof (int64_t) * o->shape.rank);
    nnp_op_set_output (graph, node, n_state + k, o->dtype, &s);
  }
  return TRUE;
}

/* ---------------------------------------------------------------- Scan */

static gboolean
axes_attr (const NnpNode *node, const char *name, int n, int *out, int rank_plus, GError **error)
{
  int count = 0;
  const int64_t *v = nnp_node_attr_ints (node, name, &count);

  for (int i = 0; i < n; i++) {
    int64_t a = v && i < count ? v[i] : 0;
    if (v && count != n) {
      nnp_node_set_error (error, NNP_ERROR_INVALID, node, "'%s' has %d values, expected %d", name,
                          count, n);
      return FALSE;
    }
    out[i] = (int) a;
    (void) rank_plus;
  }
  return TRUE;
}

gboolean
nnp_op_scan_infer (NnpGraph *graph, NnpNode *node, GError **error)
{
  const NnpAttr *body = subgraph (node, "body", -1, error);
  int64_t m = nnp_node_attr_int (node, "num_scan_inputs", 0);
  g_autoptr (NnpGraph) g = NULL;
  g_autofree NnpDType *dt = NULL;
  g_autofree NnpShape *sh = NULL;
  NnpControlParams *p;
  int n_state, n_scan_out;
  int64_t seq = -1;

  if (body == NULL)
    return FALSE;
  if (graph->opset < 9) {
    nnp_node_set_error (error, NNP_ERROR_UNSUPPORTED, node,
                        "Scan 8 (batched, with sequence_lens) is not supported");
    return FALSE;
  }
  n_state = (int) (body->i - m);
  n_scan_out = node->n_outputs - n_state;
  if (m < 1 || m > NNP_SCAN_MAX_IO || n_state < 0 || n_scan_out < 0 || n_scan_out > NNP_SCAN_MAX_IO
      || node->n_inputs < body->i || body->g->outputs->len != (guint) (n_state + n_scan_out)) {
    nnp_node_set_error (error, NNP_ERROR_INVALID, node,
                        "num_scan_inputs %" G_GINT64_FORMAT " does not fit the body", m);
    return FALSE;
  }
  p = NNP_NODE_NEW_PARAMS (node, NnpControlParams);
  p->n_state = n_state;
  p->n_scan_in = (int) m;
  p->n_scan = n_scan_out;
  if (!axes_attr (node, "scan_input_axes", (int) m, p->in_axis, 0, error)
      || !axes_attr (node, "scan_input_directions", (int) m, p->in_reverse, 0, error)
      || !axes_attr (node, "scan_output_axes", n_scan_out, p->out_axis, 1, error)
      || !axes_attr (node, "scan_output_directions", n_scan_out, p->out_reverse, 0, error))
    return FALSE;
  dt = g_new0 (NnpDType, body->i);
  sh = g_new0 (NnpShape, body->i);
  for (int k = 0; k < body->i; k++) {
    NnpValue *v = nnp_node_input (graph, node, k);
    if (v == NULL) {
      nnp_node_set_error (error, NNP_ERROR_INVALID, node, "input %d is missing", k);
      return FALSE;
    }
    dt[k] = v->dtype;
    sh[k] = v->shape;
    if (k >= n_state) {
      int j = k - n_state, a;
      if (!nnp_normalize_axis (p->in_axis[j], v->shape.rank, &a)) {
        nnp_node_set_error (error, NNP_ERROR_INVALID, node, "scan input %d axis is out of range",
                            j);
        return FALSE;
      }
      p->in_axis[j] = a;
      if (seq >= 0 && v->shape.dims[a] != seq) {
        nnp_node_set_error (error, NNP_ERROR_INVALID, node, "scan inputs have different lengths");
        return FALSE;
      }
      seq = v->shape.dims[a];
      /* the body sees one slice */
      for (int d = a; d < v->shape.rank - 1; d++)
        sh[k].dims[d] = v->shape.dims[d + 1];
      sh[k].rank--;
    }
  }
  p->iterations = seq;
  g = nnp_op_subgraph_specialize (graph, node, body, dt, sh, NULL, error);
  if (g == NULL)
    return FALSE;
  for (int k = 0; k < n_state; k++) {
    NnpValue *o = out_value (g, k);
    if (o->dtype != dt[k] || !nnp_shape_equal (&o->shape, &sh[k])) {
      nnp_node_set_error (error, NNP_ERROR_UNSUPPORTED, node,
                          "state %d changes its type or shape in the body", k);
      return FALSE;
    }
    nnp_op_set_output (graph, node, k, o->dtype, &o->shape);
  }
  for (int k = 0; k < n_scan_out; k++) {
    NnpValue *o = out_value (g, n_state + k);
    NnpShape s = { .rank = o->shape.rank + 1 };
    int a;
    if (s.rank > NNP_MAX_RANK || !nnp_normalize_axis (p->out_axis[k], s.rank, &a)) {
      nnp_node_set_error (error, NNP_ERROR_INVALID, node, "scan output %d axis is out of range", k);
      return FALSE;
    }
    p->out_axis[k] = a;
    for (int d = 0, j = 0; d < s.rank; d++)
      s.dims[d] = d == a ? seq : o->shape.dims[j++];
    nnp_op_set_output (graph, node, n_state + k, o->dtype, &s);
  }
  return TRUE;
}
