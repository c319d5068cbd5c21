/* libnnpipe: the data-dependent tail of a specialisation.
 *
 * A node whose output shape needs the values of an input that is not a
 * constant (NonMaxSuppression over the network's boxes, NonZero of a
 * computed mask, TopK with a computed K, Range with a computed limit, a Loop
 * with a computed trip count: its inference fails with the note of
 * lib/ops/ops.h) cannot be planned before the run.  With
 * NNP_SPECIALIZE_DYNAMIC_TAIL, nnp_graph_specialize() does not refuse it:
 * that node and every node that reads what it makes form the tail; the rest
 * (the head) is specialised, planned and run as usual.  The tail is kept as
 * node names of the source graph (graph->tail); at run time the stage
 * (lib/exec/stage-tail.c) binds the values the head produced as constants
 * and specialises the tail, which then computes everything at
 * specialisation (folding) and gives the outputs their shapes. */
#include "graph/graph-edit.h"
#include "specialize/tail.h"

#include <string.h>

gboolean
nnp_tail_reads_tail (const NnpGraph *graph, const NnpNode *node, const gboolean *tail)
{
  for (int k = 0; k < node->n_inputs; k++) {
    NnpValue *v = nnp_node_input (graph, node, k);
    if (v && v->constant == NULL && v->producer >= 0 && tail[v->producer])
      return TRUE;
  }
  return FALSE;
}

void
nnp_graph_cut_tail (NnpGraph *graph, const NnpGraph *source, const gboolean *tail, gboolean *remove,
                    const NnpNode *first, const GError *why)
{
  NnpGraphTail *t = g_new0 (NnpGraphTail, 1);
  GPtrArray *names = g_ptr_array_new ();

  t->consts =
      g_hash_table_new_full (g_str_hash, g_str_equal, g_free, (GDestroyNotify) nnp_tensor_unref);

  for (guint i = 0; i < graph->nodes->len; i++) {
    NnpNode *node = nnp_graph_node (graph, i);

    if (!tail[i])
      continue;
    remove[i] = TRUE;
    /* nodes a pass inserted (16-bit casts) are not in the source: the
     * tail's own specialisation inserts them again */
    if (nnp_graph_find_node (source, node->name))
      g_ptr_array_add (names, g_strdup (node->name));
    for (int k = 0; k < node->n_inputs; k++) {
      NnpValue *v = nnp_node_input (graph, node, k);
      if (v && v->constant == NULL && (v->producer < 0 || !tail[v->producer]))
        v->is_output = TRUE;     /* the head hands it over */
      else if (v && v->constant) /* it may go with its folded node */
        g_hash_table_replace (t->consts, g_strdup (v->name), nnp_tensor_ref (v->constant));
    }
    for (int k = 0; k < node->n_outputs; k++) {
      NnpValue *v = nnp_node_output (graph, node, k);
      if (v && v->is_output)
        v->shape.rank = -1; /* known when the tail has run */
    }
  }
  g_ptr_array_add (names, NULL);
  t->source = nnp_graph_ref ((NnpGraph *) source);
  t->nodes = (char **) g_ptr_array_free (names, FALSE);
  t->first = g_strdup_printf ("node '%s' (%s)", first->name, first->op_type);
  t->why = g_strdup (why ? why->message : "");
  nnp_graph_tail_free (graph->tail);
  graph->tail = t;
}

gboolean
nnp_tail_is_output (const NnpGraph *graph, const NnpValue *v)
{
  if (graph->tail == NULL || v->producer >= 0 || v->is_input || v->constant)
    return FALSE;
  for (guint i = 0; i < graph->outputs->len; i++)
    if (g_array_index (graph->outputs, int, i) == v->id)
      return TRUE;
  return FALSE;
}

gboolean
nnp_graph_refuse_tail (const NnpGraph *graph, const char *model_name, GError **error)
{
  g_autoptr (GString) names = g_string_new (NULL);

  if (graph->tail == NULL)
    return TRUE;
  for (guint i = 0; i < graph->outputs->len; i++) {
    const NnpValue *v = nnp_graph_value (graph, g_array_index (graph->outputs, int, i));
    if (nnp_tail_is_output (graph, v))
      g_string_append_printf (names, "%s'%s'", names->len ? ", " : "", v->name);
  }
  g_set_error (
      error, NNP_ERROR, NNP_ERROR_UNSUPPORTED,
      "%s: output %s has a shape that depends on the data (computed at run time after %s): plan stages and the elements need fixed output dimensions "
      "(other/tensors caps); run the model with `nnpipe run` or the library (nnp_stage_run_alloc)",
      model_name, names->str, graph->tail->first);
  return FALSE;
}
