/* The search over replica counts (issue 13 item 2): nnp_plan_new_auto()
 * over every grouping of neighbouring identical devices of the list into
 * replicated stages, keeping the best predicted bottleneck.  A list of n
 * identical CPU items (cpu:T each) also gets the whole model on one stage
 * of n x T intra-op threads (plain threading, its node times profiled at
 * that thread count), so that the choice is never a plan predicted slower
 * than it; and when the choice is one stage (plain threading or the whole
 * model replicated), options->measure_whole times both and keeps the
 * faster (measure.c).  Above plan-build.c
 * (it calls the planner), below make.c (nnp_plan_make() calls it). */
#include <nnpipe/plan.h>
#include <nnpipe/log.h>
#include <nnpipe/device.h>
#include <nnpipe/specialize.h>

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

/* Keep plan in *best when it predicts a bottleneck 5 % below *best's (the
 * margin nnp_plan_new_auto asks of more stages); a plan is NULL with err
 * set when it could not be made. */
static void
consider (NnpPlan **best, NnpPlan *plan, GError *err, const char *what, guint mask, GError **error)
{
  if (plan == NULL) {
    NNP_DEBUG (CAT, "%s (mask %#x): %s", what, mask, err->message);
    g_error_free (err);
    return;
  }
  NNP_INFO (CAT, "%s, %d stages (mask %#x): predicted bottleneck %.3f ms", what, plan->n_stages,
            mask, plan->predicted_bottleneck_ms);
  if (*best == NULL || plan->predicted_bottleneck_ms < (*best)->predicted_bottleneck_ms * 0.95) {
    if (*best == NULL)
      g_clear_error (error);
    g_clear_pointer (best, nnp_plan_free);
    *best = plan;
  } else {
    nnp_plan_free (plan);
  }
}

/* n identical unreplicated CPU items? */
static gboolean
identical_cpus (const NnpDeviceSpec *devices, int n)
{
  for (int i = 0; i < n; i++)
    if (!nnp_device_spec_is_host (devices[i].device) || !same_device (&devices[0], &devices[i]))
      return FALSE;
  return TRUE;
}

/* The whole model on one CPU stage with the threads of all n identical
 * unreplicated CPU items of the list; NULL (err set) when the list is not
 * that. */
static NnpPlan *
all_threads (const char *model_path, const char *digest, const NnpInputShape *shapes, int n_shapes,
             NnpGraph *graph, const NnpSplitOptions *plain, const NnpDeviceSpec *devices, int n,
             NnpCostModel *cm, GError **err)
{
  NnpDeviceSpec all = devices[0];
  NnpSplitOptions opts = *plain;

  if (!identical_cpus (devices, n)) {
    g_set_error (err, NNP_ERROR, NNP_ERROR_PLAN, "not a list of identical CPU items");
    return NULL;
  }
  all.threads = MAX (devices[0].threads, 1) * n;
  all.replicas = 1;
  if (!nnp_cost_model_prepare (cm, &all, err))
    return NULL;
  opts.devices = &all;
  opts.n_devices = 1;
  opts.n_stages = 1;
  return nnp_plan_new_auto (model_path, digest, shapes, n_shapes, graph, &opts, cm, err);
}

/* best is one stage on n identical CPU items (n <= max_replicas): time the
 * whole model as plain threading (one copy of n x T threads) and as n
 * replicas of T threads, about 200 ms of frames each, and keep the faster
 * as a one-stage plan.  On a failure the predicted choice stays. */
static NnpPlan *
measured_whole (NnpPlan *best, const char *model_path, const char *digest,
                const NnpInputShape *shapes, int n_shapes, NnpGraph *graph,
                const NnpSplitOptions *plain, const NnpDeviceSpec *devices, int n, NnpCostModel *cm)
{
  NnpDeviceSpec threads = devices[0], reps = devices[0];
  NnpSplitOptions opts = *plain;
  GError *err = NULL;
  double fps_t, fps_r = 0;
  int frames;
  gboolean want_reps, is_reps;
  NnpPlan *plan;

  threads.threads = MAX (devices[0].threads, 1) * n;
  threads.replicas = 1;
  reps.replicas = n;
  frames = (int) CLAMP (200.0 / MAX (best->predicted_bottleneck_ms * n, 0.01), 2, 50);
  fps_t = nnp_measure_whole_fps (graph, &threads, 1, frames * n, &err);
  if (fps_t > 0)
    fps_r = nnp_measure_whole_fps (graph, &reps, n, frames, &err);
  if (err) {
    NNP_INFO (CAT, "timing the whole model failed (%s): the predicted choice stays", err->message);
    g_error_free (err);
    return best;
  }
  NNP_INFO (CAT, "measured: %s:%d %.2f frames/s, %s:%d*%d %.2f frames/s", threads.device,
            threads.threads, fps_t, reps.device, MAX (reps.threads, 1), n, fps_r);
  want_reps = fps_r > fps_t;
  is_reps = best->stages[0].replicas > 1;
  if (want_reps ? is_reps : !is_reps && best->stages[0].threads == threads.threads)
    return best;
  opts.devices = want_reps ? &reps : &threads;
  opts.n_devices = 1;
  opts.n_stages = 1;
  plan = nnp_plan_new_auto (model_path, digest, shapes, n_shapes, graph, &opts, cm, &err);
  if (plan == NULL) {
    NNP_INFO (CAT, "the measured choice could not be planned (%s)", err->message);
    g_error_free (err);
    return best;
  }
  nnp_plan_free (best);
  return plan;
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
  {
    GError *err = NULL;
    NnpPlan *plan =
        all_threads (model_path, digest, shapes, n_shapes, graph, &plain, devices, n, cm, &err);

    consider (&best, plan, err, "intra-op threads", 0, error);
  }
  for (guint mask = 0; mask < (1u << (n - 1)); mask++) {
    int ng = 0, replicated = 0;
    g_autofree NnpDeviceSpec *g =
        grouping (devices, n, mask, options->max_replicas, &ng, &replicated);
    NnpSplitOptions opts = plain;
    NnpPlan *plan;
    GError *err = NULL;

    if (g == NULL || replicated == 0)
      continue;
    opts.devices = g;
    opts.n_devices = ng;
    opts.n_stages = ng;
    plan = nnp_plan_new_auto (model_path, digest, shapes, n_shapes, graph, &opts, cm, &err);
    consider (&best, plan, err, "replicas", mask, error);
  }
  if (best && options->measure_whole && best->n_stages == 1 && n <= options->max_replicas
      && identical_cpus (devices, n))
    best =
        measured_whole (best, model_path, digest, shapes, n_shapes, graph, &plain, devices, n, cm);
  if (best)
    NNP_INFO (CAT, "auto with replicas: %d stages, predicted bottleneck %.3f ms", best->n_stages,
              best->predicted_bottleneck_ms);
  return best;
}
