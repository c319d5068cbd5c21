/* libnnpipe: running the data-dependent tail of a specialised graph.
 *
 * The tail (lib/specialize/tail.c) is a set of nodes of the source graph.
 * nnp_stage_tail_new() copies them once into a template graph whose inputs
 * are the values they read from the head (the "cuts").  Each run binds the
 * cuts' values as constants on a copy of the template and specialises it
 * with NNP_SPECIALIZE_DYNAMIC_TAIL: shape inference now has every value it
 * needs, so the data-dependent nodes (NonMaxSuppression, NonZero, ...) are
 * computed at specialisation, and so is nearly everything after them
 * (folding runs each node whose inputs are constants on the host backend).
 * What is left (a node too large to fold) runs here on the host backend,
 * node by node; a tail of that specialisation (a node needing what such a
 * node made) runs the same way, recursively.
 *
 * The specialisation depends on the cuts' values, not only their shapes, so
 * it is redone on every run (no cache: a tail should be small, NMS and the
 * gathers after it).  Each run's copy gets a derived-data cache of its
 * own, dropped with it, so per-run tensors never enter the model's cache. */
#include <nnpipe/log.h>
#include <nnpipe/specialize.h>
#include <nnpipe/device.h>

#include "backend.h"
#include "exec/stage-tail.h"
#include "graph/derived.h"
#include "graph/graph-edit.h"
#include "specialize/tail.h"

#include <string.h>

/* A tail inside a tail inside ... (each level runs at least one node). */
#define MAX_DEPTH 64

struct _NnpStageTail {
  NnpGraph *tmpl; /* owned: the tail's nodes; cuts are values without producer */
  char **cuts;    /* NULL-terminated */
  char **outs;    /* NULL-terminated */
  char *where;    /* "data-dependent tail from node 'nms' (NonMaxSuppression)" */
};

void
nnp_stage_tail_free (NnpStageTail *tail)
{
  if (tail == NULL)
    return;
  if (tail->tmpl)
    nnp_graph_unref (tail->tmpl);
  g_strfreev (tail->cuts);
  g_strfreev (tail->outs);
  g_free (tail->where);
  g_free (tail);
}

NnpStageTail *
nnp_stage_tail_new (const NnpGraph *graph, const char *const *outs, int n_outs, GError **error)
{
  const NnpGraphTail *gt = graph->tail;
  NnpStageTail *tail;
  NnpGraph *g;
  g_autofree gboolean *keep = NULL, *remove = NULL, *made = NULL, *is_cut = NULL;
  GPtrArray *cuts = g_ptr_array_new ();

  g_return_val_if_fail (gt != NULL, NULL);
  tail = g_new0 (NnpStageTail, 1);
  tail->where = g_strdup_printf ("data-dependent tail from %s", gt->first);
  tail->outs = g_new0 (char *, n_outs + 1);
  for (int i = 0; i < n_outs; i++)
    tail->outs[i] = g_strdup (outs[i]);

  g = tail->tmpl = nnp_graph_copy (gt->source);
  keep = g_new0 (gboolean, MAX (g->nodes->len, 1));
  remove = g_new0 (gboolean, MAX (g->nodes->len, 1));
  made = g_new0 (gboolean, MAX (g->values->len, 1));
  is_cut = g_new0 (gboolean, MAX (g->values->len, 1));
  for (int i = 0; gt->nodes[i]; i++) {
    NnpNode *node = nnp_graph_find_node (g, gt->nodes[i]);
    if (node)
      keep[node->index] = TRUE;
  }
  for (guint i = 0; i < g->nodes->len; i++) {
    NnpNode *node = nnp_graph_node (g, i);
    remove[i] = !keep[i];
    for (int k = 0; keep[i] && k < node->n_outputs; k++)
      if (node->outputs[k] >= 0)
        made[node->outputs[k]] = TRUE;
  }
  for (guint i = 0; i < g->nodes->len; i++) {
    NnpNode *node = nnp_graph_node (g, i);
    for (int k = 0; keep[i] && k < node->n_inputs; k++) {
      NnpValue *v = nnp_node_input (g, node, k);
      if (v && v->constant == NULL && !made[v->id] && !is_cut[v->id]) {
        is_cut[v->id] = TRUE;
        g_ptr_array_add (cuts, g_strdup (v->name));
      }
    }
  }
  g_ptr_array_add (cuts, NULL);
  tail->cuts = (char **) g_ptr_array_free (cuts, FALSE);

  g_array_set_size (g->inputs, 0);
  g_array_set_size (g->outputs, 0);
  for (int i = 0; i < n_outs; i++) {
    NnpValue *v = nnp_graph_find_value (g, outs[i]);
    if (v == NULL || !made[v->id]) {
      g_set_error (error, NNP_ERROR, NNP_ERROR_INVALID, "%s: it does not make output '%s'",
                   tail->where, outs[i]);
      nnp_stage_tail_free (tail);
      return NULL;
    }
    g_array_append_val (g->outputs, v->id);
  }
  for (guint id = 0; id < g->values->len; id++) {
    NnpValue *v = nnp_graph_value (g, id);
    v->is_input = FALSE;
    v->is_output = FALSE;
  }
  for (guint i = 0; i < g->outputs->len; i++)
    nnp_graph_value (g, g_array_index (g->outputs, int, i))->is_output = TRUE;
  nnp_graph_remove_nodes (g, remove);
  return tail;
}

const char *const *
nnp_stage_tail_get_cuts (NnpStageTail *tail)
{
  return (const char *const *) tail->cuts;
}

static NnpTensor *
lookup (const NnpGraph *g, GHashTable *made, const NnpValue *v)
{
  if (v->constant)
    return v->constant;
  return g_hash_table_lookup (made, v->name);
}

static gboolean run_specialised (const NnpGraph *sg, GHashTable *made, int depth, GError **error);

/* Bind cuts, specialise, run; the tail's outputs go into `made` by name. */
static gboolean
run_level (NnpStageTail *tail, NnpTensor *const *cuts, GHashTable *made, int depth, GError **error)
{
  g_autoptr (NnpGraph) g = NULL;
  g_autoptr (NnpGraph) sg = NULL;
  GError *err = NULL;

  if (depth > MAX_DEPTH) {
    g_set_error (error, NNP_ERROR, NNP_ERROR_UNSUPPORTED, "%s: more than %d nested tails",
                 tail->where, MAX_DEPTH);
    return FALSE;
  }
  g = nnp_graph_copy (tail->tmpl);
  /* a cache of its own: these constants live one run */
  nnp_derived_cache_unref (g->derived);
  g->derived = NULL;
  for (int k = 0; tail->cuts[k]; k++) {
    NnpValue *v = nnp_graph_find_value (g, tail->cuts[k]);
    v->constant = nnp_tensor_ref (cuts[k]);
    v->dtype = cuts[k]->dtype;
    v->shape = cuts[k]->shape;
  }
  sg = nnp_graph_specialize (g, NULL, 0, NNP_SPECIALIZE_DYNAMIC_TAIL, &err);
  /* with every value it reads bound, a node that still needs values (a Loop
   * whose carried value changes shape) cannot be done: no smaller tail */
  if (sg && sg->tail && g_strv_length (sg->tail->nodes) >= tail->tmpl->nodes->len) {
    g_set_error (error, NNP_ERROR, NNP_ERROR_UNSUPPORTED, "%s: %s", tail->where, sg->tail->why);
    return FALSE;
  }
  if (sg == NULL || !run_specialised (sg, made, depth, &err)) {
    g_propagate_prefixed_error (error, err, "%s: ", tail->where);
    return FALSE;
  }
  for (int i = 0; tail->outs[i]; i++) {
    const NnpValue *v = nnp_graph_find_value (sg, tail->outs[i]);
    if (v && v->constant)
      g_hash_table_replace (made, g_strdup (v->name), nnp_tensor_ref (v->constant));
  }
  NNP_DEBUG ("nnp-exec", "%s: ran (%u nodes left after specialisation)", tail->where,
             sg->nodes->len);
  return TRUE;
}

/* sg's own tail: its cuts come from `made` or sg's constants. */
static gboolean
run_inner_tail (const NnpGraph *sg, GHashTable *made, int depth, GError **error)
{
  g_autoptr (GPtrArray) names = g_ptr_array_new ();
  g_autoptr (GPtrArray) cuts = g_ptr_array_new ();
  NnpStageTail *inner;
  gboolean ok;

  for (guint i = 0; i < sg->outputs->len; i++) {
    const NnpValue *v = nnp_graph_value (sg, g_array_index (sg->outputs, int, i));
    if (nnp_tail_is_output (sg, v))
      g_ptr_array_add (names, v->name);
  }
  inner = nnp_stage_tail_new (sg, (const char *const *) names->pdata, names->len, error);
  if (inner == NULL)
    return FALSE;
  for (int k = 0; inner->cuts[k]; k++) {
    const NnpValue *v = nnp_graph_find_value (sg, inner->cuts[k]);
    NnpTensor *t = g_hash_table_lookup (sg->tail->consts, inner->cuts[k]);

    if (t == NULL && v)
      t = lookup (sg, made, v);
    if (t == NULL) {
      g_set_error (error, NNP_ERROR, NNP_ERROR_INVALID, "%s: value '%s' is not known", inner->where,
                   inner->cuts[k]);
      nnp_stage_tail_free (inner);
      return FALSE;
    }
    g_ptr_array_add (cuts, t);
  }
  ok = run_level (inner, (NnpTensor *const *) cuts->pdata, made, depth + 1, error);
  nnp_stage_tail_free (inner);
  return ok;
}

/* Run every node of sg on the host backend (its inputs are constants or in
 * `made`), then its tail; what it makes goes into `made` by name. */
static gboolean
run_specialised (const NnpGraph *sg, GHashTable *made, int depth, GError **error)
{
  const NnpBackend *host = nnp_backend_host ();

  for (guint i = 0; i < sg->nodes->len; i++) {
    const NnpNode *node = nnp_graph_node (sg, i);
    g_autofree NnpTensor **in = g_new0 (NnpTensor *, MAX (node->n_inputs, 1));
    g_autofree NnpTensor **out = g_new0 (NnpTensor *, MAX (node->n_outputs, 1));
    g_autofree char *why = NULL;

    if (host == NULL || !host->supports_node (NULL, sg, node, &why)) {
      nnp_node_set_error (error, NNP_ERROR_UNSUPPORTED, node, "no host kernel: %s",
                          why ? why : "none");
      return FALSE;
    }
    for (int k = 0; k < node->n_inputs; k++) {
      NnpValue *v = nnp_node_input (sg, node, k);
      in[k] = v ? lookup (sg, made, v) : NULL;
      if (v && in[k] == NULL) {
        nnp_node_set_error (error, NNP_ERROR_INVALID, node, "input '%s' is not known", v->name);
        return FALSE;
      }
    }
    for (int k = 0; k < node->n_outputs; k++) {
      NnpValue *v = nnp_node_output (sg, node, k);
      if (v == NULL)
        continue;
      if ((out[k] = nnp_tensor_new (v->dtype, &v->shape, error)) == NULL)
        return FALSE;
      g_hash_table_replace (made, g_strdup (v->name), out[k]); /* owns it */
    }
    if (!host->run_node (sg, node, in, out, error))
      return FALSE;
  }
  return sg->tail == NULL || run_inner_tail (sg, made, depth, error);
}

gboolean
nnp_stage_tail_run (NnpStageTail *tail, NnpTensor *const *cuts, NnpTensor **outputs, GError **error)
{
  g_autoptr (GHashTable) made =
      g_hash_table_new_full (g_str_hash, g_str_equal, g_free, (GDestroyNotify) nnp_tensor_unref);

  if (!run_level (tail, cuts, made, 1, error))
    return FALSE;
  for (int i = 0; tail->outs[i]; i++) {
    NnpTensor *t = g_hash_table_lookup (made, tail->outs[i]);
    if (t == NULL) {
      g_set_error (error, NNP_ERROR, NNP_ERROR_INVALID, "%s: output '%s' was not made", tail->where,
                   tail->outs[i]);
      for (int j = 0; j < i; j++)
        g_clear_pointer (&outputs[j], nnp_tensor_unref);
      return FALSE;
    }
    outputs[i] = nnp_tensor_ref (t);
  }
  return TRUE;
}
