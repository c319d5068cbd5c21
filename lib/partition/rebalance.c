/* nnpipe partitioner: re-balancing a plan from measured stage times
 * (include/nnpipe/rebalance.h). */
#include <math.h>
#include <string.h>

#include <nnpipe/rebalance.h>

#include "partition/partition.h"
#include <nnpipe/device.h>
#include <nnpipe/specialize.h>
#include "graph/graph-edit.h"

/* The scaled node costs handed to nnp_plan_make() through its prepare
 * hook: for every device of the request, the node costs of that device
 * times the factor of the stage each node runs in now. */
typedef struct {
  const int *stage_of;  /* node index -> stage of the running plan */
  const double *factor; /* per stage */
  int n_nodes;
} Scale;

static gboolean
scale_costs (NnpCostModel *cm, NnpGraph *graph, const NnpDeviceSpec *devs, int n_devs,
             gpointer user_data, GError **error)
{
  const Scale *sc = user_data;
  g_autofree double *ms = g_new0 (double, MAX (sc->n_nodes, 1));

  for (int d = 0; d < n_devs; d++) {
    gboolean seen = FALSE;

    /* a device listed twice (cpu:1,cpu:1) has one cost table: scale it once */
    for (int e = 0; e < d && !seen; e++)
      seen = g_strcmp0 (devs[e].device, devs[d].device) == 0 && devs[e].threads == devs[d].threads;
    if (seen)
      continue;
    if (!nnp_cost_model_prepare (cm, &devs[d], error))
      return FALSE;
    for (int i = 0; i < sc->n_nodes; i++)
      ms[i] = nnp_cost_model_node_ms (cm, &devs[d], i) * sc->factor[sc->stage_of[i]];
    if (!nnp_cost_model_set_node_costs (cm, &devs[d], ms, sc->n_nodes, error))
      return FALSE;
  }
  return TRUE;
}

/* "cpu:1,cpu:2*2": the plan's devices as a request's device list. */
static char *
plan_devices (const NnpPlan *plan)
{
  GString *s = g_string_new (NULL);

  for (int k = 0; k < plan->n_stages; k++) {
    const NnpPlanStage *st = &plan->stages[k];

    g_string_append_printf (s, "%s%s", k ? "," : "", st->device);
    if (nnp_device_spec_is_host (st->device) && !strchr (st->device, ':'))
      g_string_append_printf (s, ":%d", MAX (st->threads, 1));
    if (st->replicas > 1)
      g_string_append_printf (s, "*%d", st->replicas);
  }
  return g_string_free (s, FALSE);
}

static gboolean
same_nodes (const NnpPlan *a, const NnpPlan *b)
{
  if (a->n_stages != b->n_stages)
    return FALSE;
  for (int k = 0; k < a->n_stages; k++) {
    if (a->stages[k].n_nodes != b->stages[k].n_nodes)
      return FALSE;
    for (int i = 0; i < a->stages[k].n_nodes; i++)
      if (strcmp (a->stages[k].nodes[i], b->stages[k].nodes[i]) != 0)
        return FALSE;
  }
  return TRUE;
}

NnpPlan *
nnp_plan_rebalance (NnpModel *model, const NnpPlan *plan, const double *measured_ms, int n,
                    NnpCostMode cost, NnpRebalance *out, GError **error)
{
  NnpSpecializeFlags flags;
  g_autofree NnpInputShape *shapes = NULL;
  g_autofree char *key = NULL, *devices = NULL;
  g_autofree int *stage_of = NULL;
  double factor[NNP_PLAN_MAX_STAGES];
  NnpRebalance r = { 0 };
  NnpPlanRequest req = { 0 };
  NnpGraph *graph = NULL, *new_graph = NULL;
  NnpCostModel *cm = NULL;
  NnpPlan *best = NULL;
  Scale sc;
  int n_shapes = 0, n_nodes;

  g_return_val_if_fail (model != NULL && plan != NULL && out != NULL, NULL);
  if (n != plan->n_stages || n < 1 || n > NNP_PLAN_MAX_STAGES || measured_ms == NULL) {
    g_set_error (error, NNP_ERROR, NNP_ERROR_PLAN,
                 "re-balancing: %d stage times for a plan of %d stages", n, plan->n_stages);
    return NULL;
  }
  for (int k = 0; k < n; k++) {
    if (!(measured_ms[k] > 0) || !isfinite (measured_ms[k])) {
      g_set_error (error, NNP_ERROR, NNP_ERROR_PLAN,
                   "re-balancing: stage %d: %g ms is not a measured time", k, measured_ms[k]);
      return NULL;
    }
    if (nnp_device_spec_remote_address (plan->stages[k].device)) {
      g_set_error (error, NNP_ERROR, NNP_ERROR_PLAN,
                   "re-balancing: stage %d runs on %s: remote stages are not re-balanced", k,
                   plan->stages[k].device);
      return NULL;
    }
  }

  flags = plan->no_fusion ? NNP_SPECIALIZE_NO_FUSION : NNP_SPECIALIZE_DEFAULT;
  shapes = nnp_plan_get_input_shapes (plan, &n_shapes);
  graph = nnp_model_specialize (model, shapes, n_shapes, flags, error);
  if (graph == NULL)
    return NULL;
  n_nodes = (int) graph->nodes->len;
  stage_of = g_new0 (int, MAX (n_nodes, 1));
  for (int i = 0; i < n_nodes; i++)
    stage_of[i] = -1;
  for (int k = 0; k < n; k++)
    for (int i = 0; i < plan->stages[k].n_nodes; i++) {
      const NnpNode *node = nnp_graph_find_node (graph, plan->stages[k].nodes[i]);

      if (node == NULL) {
        g_set_error (error, NNP_ERROR, NNP_ERROR_PLAN,
                     "re-balancing: stage %d: node '%s' is not in the model", k,
                     plan->stages[k].nodes[i]);
        goto out;
      }
      stage_of[node->index] = k;
    }
  for (int i = 0; i < n_nodes; i++)
    if (stage_of[i] < 0) {
      g_set_error (error, NNP_ERROR, NNP_ERROR_PLAN, "re-balancing: node '%s' is in no stage",
                   nnp_graph_node (graph, i)->name);
      goto out;
    }

  /* the stages' predicted times from the unscaled node costs */
  key = nnp_shapes_key (shapes, n_shapes, flags);
  cm = nnp_cost_model_new (graph, nnp_model_get_digest (model), key, cost);
  r.n_stages = n;
  for (int k = 0; k < n; k++) {
    const NnpPlanStage *st = &plan->stages[k];
    NnpDeviceSpec dev = { st->device, MAX (st->threads, 1), MAX (st->replicas, 1) };
    double sum = 0;

    if (!nnp_cost_model_prepare (cm, &dev, error))
      goto out;
    for (int i = 0; i < n_nodes; i++)
      if (stage_of[i] == k)
        sum += nnp_cost_model_node_ms (cm, &dev, i);
    r.measured_ms[k] = measured_ms[k];
    r.predicted_ms[k] = sum / MAX (st->replicas, 1);
    factor[k] = r.predicted_ms[k] > 0 && isfinite (r.predicted_ms[k])
                    ? measured_ms[k] / r.predicted_ms[k]
                    : 1.0;
    r.factor[k] = factor[k];
    r.measured_bottleneck_ms = MAX (r.measured_bottleneck_ms, measured_ms[k]);
  }

  /* the same planner on the scaled costs, the same stages and devices */
  devices = plan_devices (plan);
  sc.stage_of = stage_of;
  sc.factor = factor;
  sc.n_nodes = n_nodes;
  req.model_path = plan->model;
  req.n_stages = n;
  req.devices = devices;
  req.cost = cost;
  req.flags = flags;
  best = nnp_partition_make (model, shapes, n_shapes, &req, scale_costs, &sc, &new_graph, error);
  if (best == NULL)
    goto out;
  if (best->n_stages != n) {
    g_set_error (error, NNP_ERROR, NNP_ERROR_PLAN, "re-balancing: the planner made %d stages of %d",
                 best->n_stages, n);
    g_clear_pointer (&best, nnp_plan_free);
    goto out;
  }
  for (int k = 0; k < n; k++) {
    NnpPlanStage *st = &best->stages[k];
    const NnpPlanStage *old = &plan->stages[k];

    /* the stage keeps its cores (what was measured is the stage there) */
    g_free (st->cpus);
    st->cpus = old->n_cpus ? g_memdup2 (old->cpus, sizeof (int) * old->n_cpus) : NULL;
    st->n_cpus = old->n_cpus;
    r.new_ms[k] = st->compute_ms >= 0 ? st->compute_ms : st->predicted_ms;
    r.best_bottleneck_ms = MAX (r.best_bottleneck_ms, r.new_ms[k]);
  }
  r.gain = r.best_bottleneck_ms > 0 ? r.measured_bottleneck_ms / r.best_bottleneck_ms : 1.0;
  r.changed = !same_nodes (plan, best);
  *out = r;

out:
  if (new_graph)
    nnp_graph_unref (new_graph);
  nnp_cost_model_free (cm);
  nnp_graph_unref (graph);
  return best;
}

char *
nnp_plan_cuts_string (const NnpPlan *plan, const NnpGraph *graph)
{
  GString *s = g_string_new (NULL);

  for (int k = 1; k < plan->n_stages; k++) {
    const NnpPlanStage *st = &plan->stages[k];
    const NnpNode *node = st->n_nodes ? nnp_graph_find_node (graph, st->nodes[0]) : NULL;

    g_string_append_printf (s, "%s%s@%d", k > 1 ? "," : "", st->n_nodes ? st->nodes[0] : "",
                            node ? node->index : -1);
  }
  return g_string_free (s, FALSE);
}
