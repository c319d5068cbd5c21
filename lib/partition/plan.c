/* libnnpipe: stage plans (include/nnpipe/plan.h), the data: a plan and its
 * stages made and freed; a plan printed as a table or a gst-launch
 * line.  The rest of plans lives beside it: plan-json.c (JSON text),
 * plan-file.c (plan files and their model paths), plan-check.c (validation
 * against a graph), plan-stage.c (an executable stage of a plan),
 * plan-build.c (plans from cuts or by search, predicted costs). */
#include <nnpipe/plan.h>
#include <nnpipe/specialize.h>

#include "partition/partition.h"

#include <string.h>

/* ------------------------------------------------------------ data */

NnpPlan *
nnp_plan_new (const char *model_path, const char *digest)
{
  NnpPlan *plan = g_new0 (NnpPlan, 1);

  plan->model = g_strdup (model_path);
  plan->digest = g_strdup (digest);
  plan->shape_names = g_new0 (char *, 1);
  plan->predicted_bottleneck_ms = -1.0;
  plan->bottleneck_stage = -1;
  return plan;
}

static void
stage_clear (NnpPlanStage *s)
{
  g_free (s->device);
  g_free (s->cpus);
  g_strfreev (s->nodes);
  g_strfreev (s->inputs);
  g_strfreev (s->outputs);
}

void
nnp_plan_free (NnpPlan *plan)
{
  if (plan == NULL)
    return;
  for (int k = 0; k < plan->n_stages; k++)
    stage_clear (&plan->stages[k]);
  g_free (plan->stages);
  g_free (plan->model);
  g_free (plan->digest);
  g_strfreev (plan->shape_names);
  g_free (plan->shapes);
  g_free (plan->method);
  g_free (plan->cost);
  g_free (plan);
}

static char **
strv_copy_n (const char *const *v, int n)
{
  char **out = g_new0 (char *, n + 1);
  for (int i = 0; i < n; i++)
    out[i] = g_strdup (v[i]);
  return out;
}

NnpPlanStage *
nnp_plan_add_stage (NnpPlan *plan, const char *device, int threads, const char *const *nodes,
                    int n_nodes)
{
  NnpPlanStage *s;

  g_return_val_if_fail (plan != NULL && n_nodes >= 0, NULL);
  plan->stages = g_renew (NnpPlanStage, plan->stages, plan->n_stages + 1);
  s = &plan->stages[plan->n_stages++];
  memset (s, 0, sizeof (*s));
  s->device = g_strdup (device ? device : "cpu");
  s->threads = MAX (threads, 1);
  s->nodes = strv_copy_n (nodes, n_nodes);
  s->n_nodes = n_nodes;
  s->predicted_ms = s->compute_ms = s->transfer_ms = -1.0;
  s->out_bytes = -1;
  s->cut_ms = -1.0;
  s->replicas = 1;
  return s;
}

void
nnp_plan_set_shape (NnpPlan *plan, const char *input, const NnpShape *shape)
{
  g_return_if_fail (plan != NULL && input != NULL && shape != NULL);
  for (int i = 0; i < plan->n_shapes; i++) {
    if (strcmp (plan->shape_names[i], input) == 0) {
      plan->shapes[i] = *shape;
      return;
    }
  }
  plan->shape_names = g_renew (char *, plan->shape_names, plan->n_shapes + 2);
  plan->shape_names[plan->n_shapes] = g_strdup (input);
  plan->shape_names[plan->n_shapes + 1] = NULL;
  plan->shapes = g_renew (NnpShape, plan->shapes, plan->n_shapes + 1);
  plan->shapes[plan->n_shapes++] = *shape;
}

NnpInputShape *
nnp_plan_get_input_shapes (const NnpPlan *plan, int *n_shapes)
{
  NnpInputShape *s;

  g_return_val_if_fail (plan != NULL && n_shapes != NULL, NULL);
  s = g_new0 (NnpInputShape, MAX (plan->n_shapes, 1));
  for (int i = 0; i < plan->n_shapes; i++) {
    s[i].name = plan->shape_names[i];
    s[i].shape = plan->shapes[i];
  }
  *n_shapes = plan->n_shapes;
  return s;
}

/* ------------------------------------------------------------ printing */

static char *
human_bytes (gint64 b)
{
  if (b < 0)
    return g_strdup ("?");
  if (b >= 1 << 20)
    return g_strdup_printf ("%.2f MiB", b / 1048576.0);
  if (b >= 1 << 10)
    return g_strdup_printf ("%.1f KiB", b / 1024.0);
  return g_strdup_printf ("%" G_GINT64_FORMAT " B", b);
}

char *
nnp_plan_to_table (const NnpPlan *plan)
{
  GString *s = g_string_new (NULL);
  int w = 6;

  g_return_val_if_fail (plan != NULL, NULL);
  for (int k = 0; k < plan->n_stages; k++)
    w = MAX (w, (int) strlen (plan->stages[k].device ? plan->stages[k].device : "cpu"));
  g_string_append_printf (s, "plan: %s, %d stage%s, method %s, costs %s\n", plan->model,
                          plan->n_stages, plan->n_stages == 1 ? "" : "s",
                          plan->method ? plan->method : "?", plan->cost ? plan->cost : "?");
  g_string_append_printf (s, "%-5s %-*s %-7s %6s  %-48s %11s %11s %11s %12s %7s\n", "stage", w,
                          "device", "threads", "nodes", "first .. last node", "compute ms",
                          "xfer ms", "predict ms", "out bytes", "out #");
  for (int k = 0; k < plan->n_stages; k++) {
    const NnpPlanStage *st = &plan->stages[k];
    g_autofree char *range = NULL, *ob = human_bytes (k + 1 < plan->n_stages ? st->out_bytes : 0);
    /* "1 x2": one thread, two replicas */
    g_autofree char *thr = st->replicas > 1 ? g_strdup_printf ("%d x%d", st->threads, st->replicas)
                                            : g_strdup_printf ("%d", st->threads);
    const char *first = st->n_nodes > 0 ? st->nodes[0] : "-";
    const char *last = st->n_nodes > 0 ? st->nodes[st->n_nodes - 1] : "-";
    range = g_strdup_printf ("%.22s .. %.22s", first, last);
    g_string_append_printf (s, "%-5d %-*s %-7s %6d  %-48s %11.3f %11.3f %11.3f %12s %7d%s\n", k, w,
                            st->device, thr, st->n_nodes, range, st->compute_ms, st->transfer_ms,
                            st->predicted_ms, ob, k + 1 < plan->n_stages ? st->n_outputs : 0,
                            k == plan->bottleneck_stage ? "  <- bottleneck" : "");
  }
  for (int k = 0; k + 1 < plan->n_stages; k++) {
    const NnpPlanStage *st = &plan->stages[k], *nx = &plan->stages[k + 1];
    g_autofree char *ob = human_bytes (st->out_bytes);
    g_string_append_printf (s, "cut %d: stage %d (%s) -> stage %d (%s): %d tensor%s, %s", k, k,
                            st->device, k + 1, nx->device, st->n_outputs,
                            st->n_outputs == 1 ? "" : "s", ob);
    if (st->cut_ms >= 0)
      g_string_append_printf (s, ", predicted transfer %.3f ms", st->cut_ms);
    g_string_append_c (s, '\n');
  }
  if (plan->predicted_bottleneck_ms >= 0)
    g_string_append_printf (
        s, "predicted bottleneck: %.3f ms (stage %d) = %.1f frames/s\n",
        plan->predicted_bottleneck_ms, plan->bottleneck_stage,
        plan->predicted_bottleneck_ms > 0 ? 1000.0 / plan->predicted_bottleneck_ms : 0.0);
  return g_string_free (s, FALSE);
}

char *
nnp_plan_to_gst_launch (const NnpPlan *plan, const char *plan_path, gboolean as_bin)
{
  GString *s;

  g_return_val_if_fail (plan != NULL, NULL);
  if (plan_path == NULL)
    plan_path = "plan.json";
  if (as_bin)
    return g_strdup_printf ("nnpipeline model=%s plan=%s", plan->model, plan_path);
  s = g_string_new (NULL);
  for (int k = 0; k < plan->n_stages; k++) {
    if (k)
      g_string_append (s, " ! queue ! ");
    g_string_append_printf (s, "nnstage model=%s plan=%s stage=%d", plan->model, plan_path, k);
  }
  return g_string_free (s, FALSE);
}
