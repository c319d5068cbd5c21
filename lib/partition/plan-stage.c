/* libnnpipe: the executable stage k of a plan (nnp_plan_stage_new, _on:
 * the plan resolved on a copy, its node and boundary names turned into
 * graph ids for nnp_stage_new). */
#include <nnpipe/plan.h>
#include <nnpipe/stage.h>
#include "partition/partition.h"
#include "graph/graph-edit.h"


/* Ids of the named values (all known: the plan is resolved); newly allocated. */
static int *
value_ids_of (const NnpGraph *graph, char **names, int n)
{
  int *ids = g_new (int, MAX (n, 1));

  for (int i = 0; i < n; i++)
    ids[i] = nnp_graph_find_value (graph, names[i])->id;
  return ids;
}

NnpStage *
nnp_plan_stage_new (const NnpPlan *plan, int k, NnpGraph *graph, GError **error)
{
  return nnp_plan_stage_new_on (plan, k, graph, NULL, error);
}

NnpStage *
nnp_plan_stage_new_on (const NnpPlan *plan, int k, NnpGraph *graph, const char *device,
                       GError **error)
{
  const NnpPlanStage *s;
  g_autofree int *nodes = NULL, *in = NULL, *out = NULL;
  NnpStageOptions opts = { 0 };
  NnpPlan *resolved = NULL;
  NnpStage *stage;

  g_return_val_if_fail (plan != NULL && graph != NULL, NULL);
  if (k < 0 || k >= plan->n_stages) {
    g_set_error (error, NNP_ERROR, NNP_ERROR_PLAN, "plan has no stage %d (it has %d)", k,
                 plan->n_stages);
    return NULL;
  }
  /* validate the whole plan; derive missing boundaries on a copy */
  resolved = nnp_plan_copy (plan);
  if (resolved == NULL || !nnp_plan_resolve (resolved, graph, error)) {
    if (resolved == NULL)
      g_set_error (error, NNP_ERROR, NNP_ERROR_PLAN, "plan cannot be copied");
    nnp_plan_free (resolved);
    return NULL;
  }
  s = &resolved->stages[k];
  nodes = g_new (int, MAX (s->n_nodes, 1));
  for (int i = 0; i < s->n_nodes; i++)
    nodes[i] = nnp_graph_find_node (graph, s->nodes[i])->index;
  in = value_ids_of (graph, s->inputs, s->n_inputs);
  out = value_ids_of (graph, s->outputs, s->n_outputs);
  opts.device = device ? device : s->device;
  opts.threads = s->threads;
  opts.cpus = s->cpus;
  opts.n_cpus = s->n_cpus;
  opts.inputs = in;
  opts.n_inputs = s->n_inputs;
  opts.outputs = out;
  opts.n_outputs = s->n_outputs;
  stage = nnp_stage_new (graph, nodes, s->n_nodes, &opts, error);
  if (stage == NULL && error && *error)
    g_prefix_error (error, "stage %d: ", k);
  nnp_plan_free (resolved);
  return stage;
}
