/* The search over replica counts (issue 13 item 2): nnp_plan_new_auto()
 * over every grouping of neighbouring identical devices of the list into
 * replicated stages, keeping the best predicted bottleneck.  Above plan-build.c
 * (it calls the planner), below make.c (nnp_plan_make() calls it). */
#include <nnpipe/plan.h>
#include <nnpipe/log.h>

#include "partition/partition.h"

#include <string.h>

#define CAT "nnp-partition"
/* groupings tried: every composition of a list this long at most */
#define MAX_GROUPED_DEVICES 12

static gboolean
same_device (const NnpDeviceSpec *a, const NnpDeviceSpec *b)
{
  return g_strcmp0 (a->device, b->device) == 0 && a->threads == b->threads
      && MAX (a->replicas, 1) == 1 && MAX (b->replicas, 1) == 1;
}

/* The grouping of mask (bit i set: item i+1 starts a new group) as a
 * device list; NULL when a group mixes devices or is too large. */
static NnpDeviceSpec *
grouping (const NnpDeviceSpec *devices, int n, guint mask, int max_replicas, int *n_groups,
          int *replicated)
{
  NnpDeviceSpec *g = g_new0 (NnpDeviceSpec, n);
  int ng = 0, start = 0;

  *replicated = 0;
  for (int i = 1; i <= n; i++) {
    int size;

    if (i < n && !(mask & (1u << (i - 1)))) {
      if (!same_device (&devices[start], &devices[i]) || i - start + 1 > max_replicas) {
        g_free (g);
        return NULL;
      }
      continue;
    }
    size = i - start;
    g[ng] = devices[start];
    g[ng].replicas = size > 1 ? size : MAX (devices[start].replicas, 1);
    if (size > 1)
      (*replicated)++;
    ng++;
    start = i;
  }
  *n_groups = ng;
  return g;
}

NnpPlan *
nnp_plan_new_auto_replicated (const char *model_path, const char *digest,
                              const NnpInputShape *shapes, int n_shapes, NnpGraph *graph,
                              const NnpSplitOptions *options, NnpCostModel *cm, GError **error)
{
  NnpSplitOptions plain = *options;
  NnpDeviceSpec cpu1 = { (char *) "cpu", 1, 1 };
  const NnpDeviceSpec *devices = options->n_devices > 0 ? options->devices : &cpu1;
  int n = MAX (options->n_devices, 1);
  NnpPlan *best;

  plain.max_replicas = 0;
  if (options->max_replicas <= 1 || options->n_stages > 0)
    return nnp_plan_new_auto (model_path, digest, shapes, n_shapes, graph, &plain, cm, error);
  /* without replicas first: the others must beat it by 5 % (as more stages
   * must in nnp_plan_new_auto) */
  best = nnp_plan_new_auto (model_path, digest, shapes, n_shapes, graph, &plain, cm, error);
  if (n > MAX_GROUPED_DEVICES || n < 2)
    return best;
  for (guint mask = 0; mask < (1u << (n - 1)); mask++) {
    int ng = 0, replicated = 0;
    g_autofree NnpDeviceSpec *g = grouping (devices, n, mask, options->max_replicas, &ng,
                                            &replicated);
    NnpSplitOptions opts = plain;
    NnpPlan *plan;
    GError *err = NULL;

    if (g == NULL || replicated == 0)
      continue;
    opts.devices = g;
    opts.n_devices = ng;
    opts.n_stages = ng;
    plan = nnp_plan_new_auto (model_path, digest, shapes, n_shapes, graph, &opts, cm, &err);
    if (plan == NULL) {
      NNP_DEBUG (CAT, "replicas, %d groups (mask %#x): %s", ng, mask, err->message);
      g_error_free (err);
      continue;
    }
    NNP_INFO (CAT, "replicas, %d stages (mask %#x): predicted bottleneck %.3f ms", ng, mask,
              plan->predicted_bottleneck_ms);
    if (best == NULL
        || plan->predicted_bottleneck_ms < best->predicted_bottleneck_ms * 0.95) {
      if (best == NULL)
        g_clear_error (error);
      g_clear_pointer (&best, nnp_plan_free);
      best = plan;
    } else {
      nnp_plan_free (plan);
    }
  }
  if (best)
    NNP_INFO (CAT, "auto with replicas: %d stages, predicted bottleneck %.3f ms",
              best->n_stages, best->predicted_bottleneck_ms);
  return best;
}
