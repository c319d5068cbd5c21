/* Replicated stages: a stage run as K copies that take frames in turn
 * (issue 13 item 2).  Throughput model: each replica runs the stage's
 * nodes for every K-th frame, so per frame the stage costs 1/K of one
 * replica (compute and its transfers); the splitting solvers see the scaled
 * costs and balance the stages accordingly.  The search over replica counts
 * merges neighbouring identical devices of the list into one replicated
 * stage and keeps the grouping with the best predicted bottleneck. */
#include <nnpipe/plan.h>
#include <nnpipe/log.h>

#include "partition/partition.h"

#include <math.h>
#include <string.h>

#define CAT "nnp-partition"
#define MAX_REPLICAS 64
/* groupings tried: every composition of a list this long at most */
#define MAX_GROUPED_DEVICES 12

gboolean
nnp_device_item_split_replicas (const char *item, char **device, int *replicas, GError **error)
{
  const char *star;
  char *end = NULL;
  gint64 k;

  g_return_val_if_fail (item != NULL && device != NULL && replicas != NULL, FALSE);
  star = strrchr (item, '*');
  if (star == NULL) {
    *device = g_strstrip (g_strdup (item));
    *replicas = 1;
    return TRUE;
  }
  k = g_ascii_strtoll (star + 1, &end, 10);
  while (end && g_ascii_isspace (*end))
    end++;
  if (end == star + 1 || end == NULL || *end != '\0' || k < 1 || k > MAX_REPLICAS) {
    g_set_error (error, NNP_ERROR, NNP_ERROR_PLAN,
                 "invalid replicas in '%s': expected DEVICE*K with K from 1 to %d", item,
                 MAX_REPLICAS);
    return FALSE;
  }
  *device = g_strstrip (g_strndup (item, star - item));
  *replicas = (int) k;
  return TRUE;
}

static void
scale_xfer (NnpXferCost *x, double f)
{
  x->overhead_ms *= f;
  x->per_tensor_ms *= f;
  x->ms_per_byte *= f;
}

void
nnp_split_scale_replicas (const NnpDeviceSpec *devs, int n_stages, int n_nodes, double *node_ms,
                          NnpXferCost *out, NnpXferCost *in, NnpXferCost *graph_in,
                          NnpXferCost *graph_out)
{
  for (int k = 0; k < n_stages; k++) {
    double f;

    if (devs[k].replicas <= 1)
      continue;
    f = 1.0 / devs[k].replicas;
    for (int i = 0; i < n_nodes; i++)
      node_ms[(gsize) k * n_nodes + i] *= f;
    if (k + 1 < n_stages)
      scale_xfer (&out[k], f);
    if (k > 0)
      scale_xfer (&in[k - 1], f);
    if (k == 0)
      scale_xfer (graph_in, f);
    if (k + 1 == n_stages)
      scale_xfer (graph_out, f);
  }
}

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

  g_return_val_if_fail (options->max_replicas > 1, NULL);
  plain.max_replicas = 0;
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
