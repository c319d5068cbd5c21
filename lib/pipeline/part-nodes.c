/* nnpipe: a part given as a node list ("conv3..conv9", "12..40", names or
 * topological indices) made a plan at the shapes of a specialisation:
 * [the nodes before it], the part, [the rest] (lib/exec/part-private.h). */
#include "part-private.h"
#include <nnpipe/specialize.h>
#include "partition/partition.h"
#include "pipeline/part-private.h"
#include "graph/graph-edit.h"

#include <string.h>

/* The plan of a node list at graph's shapes.  "Before" are the nodes that
 * precede the part's first node in topological order and the part's
 * ancestors, so adjacent parts given as ranges agree on what crosses
 * between them.  The stage index of the part in *k. */
NnpPlan *
nnp_part_nodes_plan (NnpPart *part, NnpGraph *graph, const NnpInputShape *shapes, int n_shapes,
                     int *k, GError **error)
{
  guint n = graph->nodes->len;
  g_autofree gboolean *sel = g_new0 (gboolean, MAX (n, 1));
  g_autofree guint8 *down = g_new0 (guint8, MAX (n, 1)); /* fed by the part */
  g_autofree guint8 *up = g_new0 (guint8, MAX (n, 1));   /* feeds the part */
  g_autoptr (GPtrArray) before = g_ptr_array_new ();
  g_autoptr (GPtrArray) mine = g_ptr_array_new ();
  g_autoptr (GPtrArray) after = g_ptr_array_new ();
  NnpPlan *plan;
  NnpPlanStage *st;
  int first = -1;

  if (!nnp_graph_select_nodes (graph, part->nodes, sel, error))
    return NULL;
  for (guint i = 0; i < n; i++) {
    const NnpNode *node = nnp_graph_node (graph, (int) i);

    if (sel[i]) {
      if (first < 0)
        first = (int) i;
      continue;
    }
    for (int j = 0; j < node->n_inputs; j++) {
      const NnpValue *v = nnp_node_input (graph, node, j);

      if (v && v->producer >= 0 && (sel[v->producer] || down[v->producer]))
        down[i] = 1;
    }
  }
  for (int i = (int) n - 1; i >= 0; i--) {
    const NnpNode *node = nnp_graph_node (graph, i);

    if (sel[i])
      continue;
    for (int j = 0; j < node->n_outputs; j++) {
      const NnpValue *v = nnp_node_output (graph, node, j);

      for (int c = 0; v && c < v->n_consumers; c++)
        if (sel[v->consumers[c]] || up[v->consumers[c]])
          up[i] = 1;
    }
    if (up[i] && down[i]) {
      g_set_error (
          error, NNP_ERROR, NNP_ERROR_PLAN,
          "nodes \"%s\": not convex: node '%s' (%s) is outside the stage but both reads from it and feeds it",
          part->nodes, node->name, node->op_type);
      return NULL;
    }
  }
  for (guint i = 0; i < n; i++) {
    const NnpNode *node = nnp_graph_node (graph, (int) i);

    if (sel[i])
      g_ptr_array_add (mine, node->name);
    else if ((int) i < first || up[i])
      g_ptr_array_add (before, node->name);
    else
      g_ptr_array_add (after, node->name);
  }

  plan = nnp_plan_new (nnp_model_get_name (part->model), nnp_model_get_digest (part->model));
  plan->no_fusion = (part->flags & NNP_SPECIALIZE_NO_FUSION) != 0;
  for (int i = 0; i < n_shapes; i++)
    nnp_plan_set_shape (plan, shapes[i].name, &shapes[i].shape);
  if (before->len)
    nnp_plan_add_stage (plan, "cpu", 1, (const char *const *) before->pdata, (int) before->len);
  /* resolved as "cpu": the stage is prepared on the part's device */
  st = nnp_plan_add_stage (plan, "cpu", MAX (part->threads, 1), (const char *const *) mine->pdata,
                           (int) mine->len);
  if (part->n_cpus > 0) {
    st->cpus = g_memdup2 (part->cpus, part->n_cpus * sizeof (int));
    st->n_cpus = part->n_cpus;
  }
  if (after->len)
    nnp_plan_add_stage (plan, "cpu", 1, (const char *const *) after->pdata, (int) after->len);
  if (!nnp_plan_resolve (plan, graph, error)) {
    nnp_plan_free (plan);
    return NULL;
  }
  *k = before->len ? 1 : 0;
  return plan;
}
