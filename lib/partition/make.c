/* libnnpipe: nnp_partition_make(), what nnp_plan_make() (the one planning
 * call of `nnpipe split` and nnpipeline, lib/pipeline/plan-make.c: it adds
 * the remote servers' costs) and re-balancing run.  Every policy between
 * "what the user asked" and a resolved, predicted plan lives here, once:
 *
 *   - a plan file: loaded (its model path relative to the file), its digest
 *     checked against the model, its shapes replaced by the negotiated ones;
 *   - default devices: "cpu:1" for every stage; stages=auto without a device
 *     list tries up to one single-thread stage per core (at least 2);
 *   - OpenCL fallback: a device this machine cannot open becomes "cpu:1"
 *     (device list items and plan-file stages alike), with a notice;
 *   - cuts: node indices, node names or both, checked against n_stages;
 *   - the planner: cuts -> nnp_plan_new_from_cuts / _cut_names, else
 *     nnp_plan_new_auto with stage_load, memory limit and ideal cap (through
 *     nnp_plan_new_auto_replicated: max_replicas);
 *   - pinning of the stages the plan does not pin to consecutive cores. */
#include <nnpipe/plan.h>
#include <nnpipe/model.h>
#include <nnpipe/device.h>
#include <nnpipe/specialize.h>

#include "backends/device-list.h"
#include "partition/partition.h"
#include "graph/graph-edit.h"
#include "specialize/tail.h"

#include <string.h>

/* The fallback policy (nnp_fallback_applies() of part.h, shared with
 * NnpPart), for one device of a list item or a plan stage: TRUE when the
 * device must be replaced by the CPU (a notice is sent). */
static gboolean
falls_back (const NnpPlanRequest *req, const char *device, int stage)
{
  g_autoptr (GError) err = NULL;
  g_autofree char *msg = NULL;

  if (!req->fallback || nnp_device_spec_is_host (device) || nnp_device_open_planned (device, &err)
      || !nnp_fallback_applies (device, req->fallback, err))
    return FALSE;
  if (stage >= 0)
    msg = g_strdup_printf ("device '%s' is not available, running stage %d on the CPU instead: %s",
                           device, stage, err->message);
  else
    msg =
        g_strdup_printf ("device '%s' is not available, planning its stage on the CPU instead: %s",
                         device, err->message);
  if (req->notice)
    req->notice (stage, msg, req->notice_data);
  return TRUE;
}

/* The device list of a request, defaults and fallback applied. */
static NnpDeviceSpec *
request_devices (const NnpPlanRequest *req, int n_cuts, int *n_specs, GError **error)
{
  g_auto (GStrv) items = NULL;
  GString *list = g_string_new (NULL);
  NnpDeviceSpec *specs;

  if (req->devices == NULL || *req->devices == '\0') {
    /* one single-thread CPU stage per stage (auto: per core) */
    int n = req->n_stages > 0 ? req->n_stages
            : n_cuts > 0      ? n_cuts + 1
                              : MAX ((int) g_get_num_processors (), 2);
    for (int i = 0; i < MIN (n, NNP_PLAN_MAX_STAGES); i++)
      g_string_append_printf (list, "%scpu:1", i ? "," : "");
  } else {
    items = g_strsplit (req->devices, ",", -1);
    for (int i = 0; items[i]; i++) {
      const char *item = g_strstrip (items[i]);
      g_autofree char *device = NULL, *base = NULL;
      int replicas = 1;

      /* a malformed item is left for nnp_device_specs_parse() to name; a
       * replicated one ("opencl*2") falls back with its replicas */
      if (nnp_device_item_split_replicas (item, &base, &replicas, NULL)
          && nnp_device_spec_parse (base, &device, NULL, NULL) && falls_back (req, device, -1))
        item = replicas > 1 ? "cpu:1*" : "cpu:1";
      g_string_append_printf (list, "%s%s", i ? "," : "", item);
      if (g_str_equal (item, "cpu:1*"))
        g_string_append_printf (list, "%d", replicas);
    }
  }
  specs = nnp_device_specs_parse (list->str, n_specs, error);
  g_string_free (list, TRUE);
  return specs;
}

/* Cuts: TRUE + the node indices when every item is an index in range, else
 * the names (an index naming the node at that index unless a node has that
 * name).  *n = the number of cuts.  Names point into parts or graph. */
static gboolean
classify_cuts (const NnpGraph *graph, char **parts, int *ints, const char **names, int *n)
{
  gboolean all_ints = TRUE;

  *n = 0;
  for (int i = 0; parts[i]; i++) {
    const char *p = g_strstrip (parts[i]);
    char *end = NULL;
    gint64 v;

    if (*p == '\0')
      continue;
    v = g_ascii_strtoll (p, &end, 10);
    if (end != p && *end == '\0' && v >= 0 && v < (gint64) graph->nodes->len) {
      ints[*n] = (int) v;
      names[*n] =
          nnp_graph_find_node ((NnpGraph *) graph, p) ? p : nnp_graph_node (graph, (int) v)->name;
    } else {
      all_ints = FALSE;
      names[*n] = p;
    }
    (*n)++;
  }
  return all_ints;
}

static int
count_cuts (const char *cuts)
{
  g_auto (GStrv) parts = NULL;
  int n = 0;

  if (cuts == NULL || *cuts == '\0')
    return 0;
  parts = g_strsplit (cuts, ",", -1);
  for (int i = 0; parts[i]; i++)
    n += *g_strstrip (parts[i]) != '\0';
  return n;
}

static void
pin_stages (NnpPlan *plan)
{
  int n_cores = MAX ((int) g_get_num_processors (), 1), next = 0;

  for (int k = 0; k < plan->n_stages; k++) {
    NnpPlanStage *st = &plan->stages[k];

    if (st->n_cpus > 0) {
      next = st->cpus[st->n_cpus - 1] + 1;
      continue;
    }
    /* a replicated stage: each replica on cores of its own (nnpipeline
     * gives replica r cpus [r * threads, (r + 1) * threads)) */
    st->n_cpus = MAX (st->threads, 1) * MAX (st->replicas, 1);
    st->cpus = g_new0 (int, st->n_cpus);
    for (int t = 0; t < st->n_cpus; t++)
      st->cpus[t] = (next++) % n_cores;
  }
}

/* A plan file, checked against the model, at these shapes. */
static NnpPlan *
plan_from_file (NnpModel *model, const NnpInputShape *shapes, int n_shapes,
                const NnpPlanRequest *req, NnpGraph **graph_out, GError **error)
{
  g_autoptr (NnpPlan) plan = NULL;
  g_autofree NnpInputShape *ps = NULL;
  g_autofree char *key = NULL;
  NnpGraph *graph;
  NnpCostModel *cm;
  int n_ps = 0;

  plan = nnp_plan_load (req->plan_path, error);
  if (plan == NULL || !nnp_plan_check_model (plan, model, req->plan_path, error))
    return NULL;
  /* the stages start at the shapes negotiated */
  for (int i = 0; i < n_shapes; i++)
    nnp_plan_set_shape (plan, shapes[i].name, &shapes[i].shape);
  for (int k = 0; k < plan->n_stages; k++) {
    NnpPlanStage *st = &plan->stages[k];
    if (falls_back (req, st->device, k)) {
      g_free (st->device);
      st->device = g_strdup ("cpu");
      st->threads = 1;
    }
  }
  ps = nnp_plan_get_input_shapes (plan, &n_ps);
  key = nnp_shapes_key (ps, n_ps,
                        plan->no_fusion ? NNP_SPECIALIZE_NO_FUSION : NNP_SPECIALIZE_DEFAULT);
  graph = nnp_model_specialize (
      model, ps, n_ps, plan->no_fusion ? NNP_SPECIALIZE_NO_FUSION : NNP_SPECIALIZE_DEFAULT, error);
  if (graph == NULL)
    return NULL;
  if (!nnp_plan_resolve (plan, graph, error)) {
    nnp_graph_unref (graph);
    return NULL;
  }
  if (plan->predicted_bottleneck_ms < 0) {
    cm = nnp_cost_model_new (graph, nnp_model_get_digest (model), key, req->cost);
    nnp_plan_predict (plan, graph, cm);
    nnp_cost_model_free (cm);
  }
  *graph_out = graph;
  return g_steal_pointer (&plan);
}

/* A new split of the model at these shapes. */
static NnpPlan *
plan_split (NnpModel *model, const NnpInputShape *shapes, int n_shapes, const NnpPlanRequest *req,
            NnpPlanPrepareFunc prepare, gpointer prepare_data, NnpGraph **graph_out, GError **error)
{
  const char *path = req->model_path ? req->model_path : nnp_model_get_name (model);
  const char *digest = nnp_model_get_digest (model);
  int n_cuts = count_cuts (req->cuts), n_specs = 0, n_load = 0;
  g_autofree char *key = NULL;
  g_autofree double *load = NULL;
  NnpDeviceSpec *specs = NULL;
  NnpCostModel *cm = NULL;
  NnpGraph *graph = NULL;
  NnpPlan *plan = NULL;

  if (req->n_stages < 0 || req->n_stages > NNP_PLAN_MAX_STAGES) {
    g_set_error (error, NNP_ERROR, NNP_ERROR_PLAN, "%d stages asked, 1 to %d (or auto) possible",
                 req->n_stages, NNP_PLAN_MAX_STAGES);
    return NULL;
  }
  if (n_cuts > 0 && req->n_stages > 0 && n_cuts + 1 != req->n_stages) {
    g_set_error (error, NNP_ERROR, NNP_ERROR_PLAN, "cuts \"%s\" make %d stages, stages=%d",
                 req->cuts, n_cuts + 1, req->n_stages);
    return NULL;
  }
  if (req->stage_load && *req->stage_load
      && !(load = nnp_stage_load_parse (req->stage_load, &n_load, error)))
    return NULL;
  if (!(specs = request_devices (req, n_cuts, &n_specs, error)))
    return NULL;
  /* a data-dependent output is refused by name (the tail flag) */
  graph = nnp_model_specialize (model, shapes, n_shapes, req->flags | NNP_SPECIALIZE_DYNAMIC_TAIL,
                                error);
  if (graph == NULL)
    goto out;
  if (!nnp_graph_refuse_tail (graph, nnp_model_get_name (model), error))
    goto out;
  key = nnp_shapes_key (shapes, n_shapes, req->flags);
  cm = nnp_cost_model_new (graph, digest, key, req->cost);
  if (prepare && !prepare (cm, graph, specs, n_specs, prepare_data, error))
    goto out;
  for (int i = 0; i < n_specs; i++)
    if (!nnp_cost_model_prepare (cm, &specs[i], error))
      goto out;
  if (n_cuts > 0) {
    g_auto (GStrv) parts = g_strsplit (req->cuts, ",", -1);
    g_autofree int *ints = g_new0 (int, n_cuts);
    g_autofree const char **names = g_new0 (const char *, n_cuts);
    int n = 0;

    if (classify_cuts (graph, parts, ints, names, &n))
      plan = nnp_plan_new_from_cuts (path, digest, shapes, n_shapes, graph, ints, n, specs, n_specs,
                                     cm, error);
    else
      plan = nnp_plan_new_from_cut_names (path, digest, shapes, n_shapes, graph, names, n, specs,
                                          n_specs, cm, error);
  } else {
    NnpSplitOptions o = { 0 };

    o.devices = specs;
    o.n_devices = n_specs;
    o.n_stages = req->n_stages;
    o.memory_limit = req->memory_limit;
    o.max_ideals = req->max_ideals;
    o.max_replicas = req->max_replicas;
    /* by measured throughput, unless only estimates were asked for (or
     * NNP_PLAN_MEASURE=0) */
    o.measure_whole =
        req->cost != NNP_COST_ESTIMATE && g_strcmp0 (g_getenv ("NNP_PLAN_MEASURE"), "0") != 0;
    o.stage_load = load;
    o.n_stage_load = n_load;
    /* nnp_plan_new_auto(), and with max_replicas replicated stages too */
    plan = nnp_plan_new_auto_replicated (path, digest, shapes, n_shapes, graph, &o, cm, error);
  }
  if (plan)
    plan->no_fusion = (req->flags & NNP_SPECIALIZE_NO_FUSION) != 0;
out:
  nnp_cost_model_free (cm);
  nnp_device_specs_free (specs, n_specs);
  if (plan)
    *graph_out = graph;
  else if (graph)
    nnp_graph_unref (graph);
  return plan;
}

NnpPlan *
nnp_partition_make (NnpModel *model, const NnpInputShape *shapes, int n_shapes,
                    const NnpPlanRequest *req, NnpPlanPrepareFunc prepare, gpointer prepare_data,
                    NnpGraph **graph_out, GError **error)
{
  NnpGraph *graph = NULL;
  NnpPlan *plan;

  g_return_val_if_fail (model != NULL && req != NULL, NULL);
  if (req->plan_path && *req->plan_path)
    plan = plan_from_file (model, shapes, n_shapes, req, &graph, error);
  else
    plan = plan_split (model, shapes, n_shapes, req, prepare, prepare_data, &graph, error);
  if (plan == NULL)
    return NULL;
  if (plan->n_stages < 1 || plan->n_stages > NNP_PLAN_MAX_STAGES) {
    g_set_error (error, NNP_ERROR, NNP_ERROR_PLAN, "the plan has %d stages, 1 to %d possible",
                 plan->n_stages, NNP_PLAN_MAX_STAGES);
    nnp_plan_free (plan);
    nnp_graph_unref (graph);
    return NULL;
  }
  if (req->pin)
    pin_stages (plan);
  if (graph_out)
    *graph_out = graph;
  else
    nnp_graph_unref (graph);
  return plan;
}
