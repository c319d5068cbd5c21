/* libnnpipe: plans made, not read: from cut indices or names, or by
 * searching the split with the lowest predicted bottleneck
 * (nnp_plan_new_auto); the predicted costs of a plan (nnp_plan_predict);
 * the stage-load list of a request. */
#include <nnpipe/plan.h>
#include <nnpipe/log.h>
#include <nnpipe/device.h>
#include <nnpipe/specialize.h>

#include "partition/partition.h"
#include "graph/graph-edit.h"

#include <math.h>
#include <string.h>

#define CAT "nnp-partition"

double *
nnp_stage_load_parse (const char *text, int *n, GError **error)
{
  g_auto (GStrv) items = NULL;
  double *load;
  guint count;

  g_return_val_if_fail (text != NULL && n != NULL, NULL);
  items = g_strsplit (text, ",", -1);
  count = g_strv_length (items);
  load = g_new0 (double, MAX (count, 1));
  for (guint i = 0; i < count; i++) {
    const char *item = g_strstrip (items[i]);
    char *end = NULL;
    double v = g_ascii_strtod (item, &end);

    if (*item == '\0' || end == NULL || *end != '\0' || !(v >= 0 && v <= 1000)) {
      g_set_error (
          error, NNP_ERROR, NNP_ERROR_PLAN,
          "invalid stage-load item '%s' in \"%s\": want a comma-separated list of numbers >= 0 (fractions of the model's time)",
          item, text);
      g_free (load);
      return NULL;
    }
    load[i] = v;
  }
  if (count == 0) {
    g_set_error (error, NNP_ERROR, NNP_ERROR_PLAN, "empty stage-load list");
    g_free (load);
    return NULL;
  }
  *n = (int) count;
  return load;
}

/* ------------------------------------------------------------ costs of a plan */

static const NnpDeviceSpec *
device_of (const NnpDeviceSpec *devices, int n_devices, int k)
{
  return &devices[MIN (k, n_devices - 1)];
}

typedef struct {
  NnpSplitProblem p;
  double *node_ms, *value_bytes, *node_mem;
  NnpXferCost *out, *in;
  NnpXferCost graph_in, graph_out;
} Problem;

static void
problem_clear (Problem *pb)
{
  g_free (pb->node_ms);
  g_free (pb->value_bytes);
  g_free (pb->node_mem);
  g_free (pb->out);
  g_free (pb->in);
}

static void
problem_init (Problem *pb, const NnpGraph *graph, NnpCostModel *cm, const NnpDeviceSpec *devs,
              int n_stages)
{
  int n = graph->nodes->len;
  guint nv = graph->values->len;

  memset (pb, 0, sizeof (*pb));
  pb->node_ms = g_new (double, (gsize) n_stages *MAX (n, 1));
  pb->value_bytes = g_new0 (double, MAX (nv, 1));
  pb->node_mem = g_new0 (double, MAX (n, 1));
  pb->out = g_new0 (NnpXferCost, MAX (n_stages, 1));
  pb->in = g_new0 (NnpXferCost, MAX (n_stages, 1));
  for (int k = 0; k < n_stages; k++)
    for (int i = 0; i < n; i++)
      pb->node_ms[(gsize) k * n + i] = cm ? nnp_cost_model_node_ms (cm, &devs[k], i) : 1.0;
  for (guint id = 0; id < nv; id++) {
    const NnpValue *v = nnp_graph_value (graph, id);
    int64_t e = nnp_shape_numel (&v->shape);
    pb->value_bytes[id] = e > 0 ? (double) e * nnp_dtype_size (v->dtype) : 0.0;
  }
  for (int i = 0; i < n; i++) {
    const NnpNode *node = nnp_graph_node (graph, i);
    for (int q = 0; q < node->n_inputs; q++) {
      NnpValue *v = nnp_node_input (graph, node, q);
      if (v && v->constant)
        pb->node_mem[i] += v->constant->nbytes;
    }
    for (int q = 0; q < node->n_outputs; q++)
      if (node->outputs[q] >= 0)
        pb->node_mem[i] += pb->value_bytes[node->outputs[q]];
  }
  for (int k = 0; cm && k + 1 < n_stages; k++)
    nnp_cost_model_xfer_params (cm, &devs[k], &devs[k + 1], &pb->out[k], &pb->in[k]);
  if (cm) {
    NnpXferCost unused;
    nnp_cost_model_graph_xfer_params (cm, &devs[0], &pb->graph_in, &unused);
    nnp_cost_model_graph_xfer_params (cm, &devs[n_stages - 1], &unused, &pb->graph_out);
  }
  nnp_split_scale_replicas (devs, n_stages, n, pb->node_ms, pb->out, pb->in, &pb->graph_in,
                            &pb->graph_out);
  pb->p.n_stages = n_stages;
  pb->p.n_nodes = n;
  pb->p.node_ms = pb->node_ms;
  pb->p.value_bytes = pb->value_bytes;
  pb->p.node_mem = pb->node_mem;
  pb->p.xfer_out = pb->out;
  pb->p.xfer_in = pb->in; /* cpu -> cpu: the receiver pays nothing */
  pb->p.xfer_graph_in = &pb->graph_in;
  pb->p.xfer_graph_out = &pb->graph_out;
}

void
nnp_plan_predict (NnpPlan *plan, const NnpGraph *graph, NnpCostModel *cm)
{
  int n = graph->nodes->len, ns;
  g_autofree int *stage_of = NULL;
  g_autofree NnpDeviceSpec *devs = NULL;
  g_autofree double *comp = NULL, *xfer = NULL, *total = NULL;
  Problem pb;
  gboolean profiled = TRUE;

  g_return_if_fail (plan != NULL && graph != NULL && cm != NULL);
  if (!nnp_plan_check_stage_of (plan, graph, &stage_of, NULL))
    return;
  ns = plan->n_stages;
  devs = g_new0 (NnpDeviceSpec, ns);
  for (int k = 0; k < ns; k++) {
    devs[k].device = plan->stages[k].device;
    devs[k].threads = plan->stages[k].threads;
    devs[k].replicas = plan->stages[k].replicas;
    profiled &= strcmp (nnp_cost_model_source (cm, &devs[k]), "profile") == 0;
  }
  problem_init (&pb, graph, cm, devs, ns);
  comp = g_new (double, ns);
  xfer = g_new (double, ns);
  total = g_new (double, ns);
  plan->predicted_bottleneck_ms =
      nnp_split_evaluate (graph, &pb.p, stage_of, comp, xfer, total, &plan->bottleneck_stage);
  for (int k = 0; k < ns; k++) {
    NnpPlanStage *s = &plan->stages[k];
    double b = 0;
    int count = 0;
    s->compute_ms = comp[k];
    s->transfer_ms = xfer[k];
    s->predicted_ms = total[k];
    if (k + 1 < ns)
      for (guint id = 0; id < graph->values->len; id++)
        if (nnp_split_value_crosses (graph, nnp_graph_value (graph, id), stage_of, k)) {
          b += pb.value_bytes[id];
          count++;
        }
    s->out_bytes = (gint64) b;
    s->cut_ms =
        k + 1 < ns ? nnp_cost_model_transfer_ms (cm, &devs[k], &devs[k + 1], count, b) : -1.0;
  }
  g_free (plan->cost);
  plan->cost = g_strdup (profiled ? "profile" : "estimate");
  (void) n;
  problem_clear (&pb);
}

/* ------------------------------------------------------------ construction */

static NnpPlan *
plan_from_stage_of (const char *model_path, const char *digest, const NnpInputShape *shapes,
                    int n_shapes, NnpGraph *graph, const int *stage_of, int ns,
                    const NnpDeviceSpec *devices, int n_devices, const char *method,
                    NnpCostModel *cm, GError **error)
{
  NnpPlan *plan = nnp_plan_new (model_path, digest);
  int n = graph->nodes->len;
  g_autofree const char **names = g_new (const char *, MAX (n, 1));
  static const NnpDeviceSpec cpu1 = { (char *) "cpu", 1 };

  for (int i = 0; i < n_shapes; i++)
    nnp_plan_set_shape (plan, shapes[i].name, &shapes[i].shape);
  plan->method = g_strdup (method);
  for (int k = 0; k < ns; k++) {
    const NnpDeviceSpec *d = devices && n_devices > 0 ? device_of (devices, n_devices, k) : &cpu1;
    int m = 0;
    for (int i = 0; i < n; i++)
      if (stage_of[i] == k)
        names[m++] = nnp_graph_node (graph, i)->name;
    nnp_plan_add_stage (plan, d->device, d->threads, names, m)->replicas = MAX (d->replicas, 1);
  }
  if (!nnp_plan_resolve (plan, graph, error)) {
    nnp_plan_free (plan);
    return NULL;
  }
  if (cm)
    nnp_plan_predict (plan, graph, cm);
  return plan;
}

NnpPlan *
nnp_plan_new_from_cuts (const char *model_path, const char *digest, const NnpInputShape *shapes,
                        int n_shapes, NnpGraph *graph, const int *cuts, int n_cuts,
                        const NnpDeviceSpec *devices, int n_devices, NnpCostModel *cm,
                        GError **error)
{
  int n = graph->nodes->len;
  g_autofree int *stage_of = g_new (int, MAX (n, 1));

  g_return_val_if_fail (graph != NULL && n_cuts >= 0, NULL);
  for (int c = 0; c < n_cuts; c++) {
    int lo = c > 0 ? cuts[c - 1] : 0;
    if (cuts[c] <= lo || cuts[c] >= n) {
      g_set_error (error, NNP_ERROR, NNP_ERROR_PLAN,
                   "cut %d: index %d must be in %d..%d (increasing, inside the %d nodes)", c,
                   cuts[c], lo + 1, n - 1, n);
      return NULL;
    }
  }
  for (int i = 0, k = 0; i < n; i++) {
    while (k < n_cuts && i >= cuts[k])
      k++;
    stage_of[i] = k;
  }
  NNP_DEBUG (CAT, "manual split at %d cuts of %d nodes", n_cuts, n);
  return plan_from_stage_of (model_path, digest, shapes, n_shapes, graph, stage_of, n_cuts + 1,
                             devices, n_devices, "manual", cm, error);
}

NnpPlan *
nnp_plan_new_from_cut_names (const char *model_path, const char *digest,
                             const NnpInputShape *shapes, int n_shapes, NnpGraph *graph,
                             const char *const *names, int n_names, const NnpDeviceSpec *devices,
                             int n_devices, NnpCostModel *cm, GError **error)
{
  g_autofree int *cuts = g_new (int, MAX (n_names, 1));

  for (int i = 0; i < n_names; i++) {
    NnpNode *node = nnp_graph_find_node (graph, names[i]);
    if (node == NULL) {
      g_set_error (error, NNP_ERROR, NNP_ERROR_PLAN, "cut %d: unknown node '%s'", i, names[i]);
      return NULL;
    }
    cuts[i] = node->index;
  }
  return nnp_plan_new_from_cuts (model_path, digest, shapes, n_shapes, graph, cuts, n_names,
                                 devices, n_devices, cm, error);
}

NnpPlan *
nnp_plan_new_auto (const char *model_path, const char *digest, const NnpInputShape *shapes,
                   int n_shapes, NnpGraph *graph, const NnpSplitOptions *options, NnpCostModel *cm,
                   GError **error)
{
  int n = graph->nodes->len, kmin, kmax, best_k = -1;
  g_autofree int *stage_of = g_new (int, MAX (n, 1));
  g_autofree int *best = g_new (int, MAX (n, 1));
  g_autofree double *bott = NULL;
  const char *best_method = NULL;
  NnpDeviceSpec cpu1 = { (char *) "cpu", 1 };
  const NnpDeviceSpec *devices;
  int n_devices;
  double best_b = INFINITY;

  g_return_val_if_fail (graph != NULL && options != NULL && cm != NULL, NULL);
  devices = options->n_devices > 0 ? options->devices : &cpu1;
  n_devices = MAX (options->n_devices, 1);
  if (options->n_stages > 0) {
    kmin = kmax = options->n_stages;
  } else {
    kmin = 1;
    kmax = n_devices > 1 ? n_devices : 8;
  }
  kmax = MIN (kmax, n);
  if (kmin > n) {
    g_set_error (error, NNP_ERROR, NNP_ERROR_PLAN, "cannot split %d nodes into %d non-empty stages",
                 n, kmin);
    return NULL;
  }
  /* a node no listed device can run: say which and why, before any search */
  for (int j = 0; j < n_devices; j++)
    if (!nnp_cost_model_prepare (cm, &devices[j], error))
      return NULL;
  for (int i = 0; i < n; i++) {
    gboolean somewhere = FALSE;
    for (int j = 0; j < MIN (n_devices, kmax) && !somewhere; j++)
      somewhere = isfinite (nnp_cost_model_node_ms (cm, &devices[j], i));
    if (!somewhere) {
      const NnpNode *node = nnp_graph_node (graph, i);
      GString *why = g_string_new (NULL);
      for (int j = 0; j < MIN (n_devices, kmax); j++) {
        const char *w = nnp_cost_model_why (cm, &devices[j], i);
        g_string_append_printf (why, "%s%s: %s", j ? "; " : "", devices[j].device,
                                w ? w : "not supported");
      }
      g_set_error (error, NNP_ERROR, NNP_ERROR_PLAN,
                   "node '%s' (%s) cannot run on any of the devices (%s)", node->name,
                   node->op_type, why->str);
      g_string_free (why, TRUE);
      return NULL;
    }
  }
  bott = g_new (double, kmax + 1);
  for (int k = kmin; k <= kmax; k++) {
    g_autofree NnpDeviceSpec *devs = g_new0 (NnpDeviceSpec, k);
    const char *method = NULL;
    Problem pb;
    GError *err = NULL;
    gboolean ok;
    double *load = NULL;

    for (int j = 0; j < k; j++) {
      devs[j] = *device_of (devices, n_devices, j);
      if (!nnp_cost_model_prepare (cm, &devs[j], error))
        return NULL;
    }
    problem_init (&pb, graph, cm, devs, k);
    pb.p.mem_limit = (double) options->memory_limit;
    pb.p.max_ideals = options->max_ideals;
    if (options->stage_load && options->n_stage_load > 0) {
      load = g_new0 (double, k);
      for (int j = 0; j < MIN (k, options->n_stage_load); j++) {
        double whole = 0.0;
        for (int i = 0; i < n; i++) {
          double ms = pb.node_ms[(gsize) j * n + i];
          whole += isfinite (ms) ? ms : 0.0;
        }
        load[j] = MAX (options->stage_load[j], 0.0) * whole;
        NNP_INFO (CAT, "%d stages: stage %d carries a load of %.3f ms (%.2f of %.3f ms)", k, j,
                  load[j], options->stage_load[j], whole);
      }
      pb.p.stage_load_ms = load;
    }
    ok = nnp_split_solve (graph, &pb.p, stage_of, &bott[k], &method, &err);
    problem_clear (&pb);
    g_clear_pointer (&load, g_free);
    if (!ok) {
      if (kmin == kmax) {
        if (n_devices > 1 && strstr (err->message, "op support")) {
          GString *list = g_string_new (NULL);
          for (int j = 0; j < k; j++)
            g_string_append_printf (list, "%s%s", j ? "," : "", devs[j].device);
          g_prefix_error (&err, "stage devices %s (in this order): ", list->str);
          g_string_free (list, TRUE);
        }
        g_propagate_error (error, err);
        return NULL;
      }
      NNP_DEBUG (CAT, "%d stages: %s", k, err->message);
      g_error_free (err);
      bott[k] = INFINITY;
      continue;
    }
    NNP_INFO (CAT, "%d stages: predicted bottleneck %.3f ms (%s)", k, bott[k], method);
    /* auto: fewest stages within 5% of the best seen so far */
    if (bott[k] < best_b * (kmin == kmax ? 1.0 : 0.95)) {
      best_b = bott[k];
      best_k = k;
      best_method = method;
      memcpy (best, stage_of, sizeof (int) * n);
    }
  }
  if (best_k < 0) {
    g_set_error (error, NNP_ERROR, NNP_ERROR_PLAN, "no feasible split into %d..%d stages", kmin,
                 kmax);
    return NULL;
  }
  if (kmin != kmax)
    NNP_INFO (CAT, "auto: chose %d stages (bottleneck %.3f ms)", best_k, best_b);
  return plan_from_stage_of (model_path, digest, shapes, n_shapes, graph, best, best_k, devices,
                             n_devices, best_method, cm, error);
}
