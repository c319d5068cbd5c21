/* nnpipe partitioner: the switch policy of a running plan
 * (include/nnpipe/rebalance.h, NnpRebalanceMonitor). */
#include <nnpipe/log.h>
#include <nnpipe/rebalance.h>

#define CAT "nnp-partition"

/* a window counts when every stage finished at least this many frames in it */
#define MIN_WINDOW_FRAMES 2

struct _NnpRebalanceMonitor {
  NnpRebalanceSample last; /* the start of the window in progress */
  gboolean have_last;
  gboolean settling;         /* the stages are new: their first window is not used */
  NnpRebalanceSample streak; /* the start of the windows over threshold */
  unsigned over;             /* how many in a row */
};

NnpRebalanceMonitor *
nnp_rebalance_monitor_new (void)
{
  return g_new0 (NnpRebalanceMonitor, 1);
}

void
nnp_rebalance_monitor_free (NnpRebalanceMonitor *monitor)
{
  g_free (monitor);
}

/* Measured ms per frame of each stage between samples a and b; FALSE when
 * the stages changed in between or a stage finished too few frames. */
static gboolean
span_ms (const NnpRebalanceSample *a, const NnpRebalanceSample *b, double *ms)
{
  if (a->gen != b->gen || a->n != b->n || b->n <= 0)
    return FALSE;
  for (int k = 0; k < b->n; k++) {
    guint64 df = b->frames[k] - MIN (b->frames[k], a->frames[k]);
    guint64 db = b->busy_ns[k] - MIN (b->busy_ns[k], a->busy_ns[k]);

    if (df < MIN_WINDOW_FRAMES || db == 0)
      return FALSE;
    ms[k] = db / 1e6 / df;
  }
  return TRUE;
}

/* True when no split of these stages can beat the measured bottleneck by
 * the threshold: stages alike (device, threads, one replica) share the
 * measured total at best evenly.  Saves a planner run per window. */
static gboolean
cannot_gain (const NnpPlan *plan, const double *ms, int n, double thr)
{
  double sum = 0, worst = 0;

  for (int k = 0; k < n; k++) {
    const NnpPlanStage *st = &plan->stages[k];

    if (g_strcmp0 (st->device, plan->stages[0].device) != 0
        || st->threads != plan->stages[0].threads || st->replicas > 1)
      return FALSE;
    sum += ms[k];
    worst = MAX (worst, ms[k]);
  }
  return worst <= thr * sum / n;
}

/* The planner on these measurements: the better plan when its gain is over
 * the threshold and it moves nodes, else NULL (+ error when it failed). */
static NnpPlan *
better_plan (NnpModel *model, const NnpPlan *plan, const double *ms, int n, double thr,
             NnpRebalance *r, GError **error)
{
  NnpPlan *best;

  if (model == NULL || plan == NULL || plan->n_stages != n || n < 2
      || cannot_gain (plan, ms, n, thr))
    return NULL;
  best = nnp_plan_rebalance (model, plan, ms, n, NNP_COST_AUTO, r, error);
  if (best == NULL)
    return NULL;
  NNP_DEBUG (CAT, "measured bottleneck %.2f ms, best plan %.2f ms (x%.3f), %s",
             r->measured_bottleneck_ms, r->best_bottleneck_ms, r->gain,
             r->changed ? "other cuts" : "same cuts");
  if (!r->changed || !(r->gain > thr))
    g_clear_pointer (&best, nnp_plan_free);
  return best;
}

NnpPlan *
nnp_rebalance_monitor_tick (NnpRebalanceMonitor *m, const NnpRebalanceSample *now, NnpModel *model,
                            const NnpPlan *plan, double threshold, unsigned sustain,
                            NnpRebalance *why, GError **error)
{
  double ms[NNP_PLAN_MAX_STAGES];
  NnpRebalance r;
  NnpPlan *best;

  g_return_val_if_fail (m != NULL, NULL);

  if (now == NULL || now->n <= 0 || now->n > NNP_PLAN_MAX_STAGES) {
    m->have_last = FALSE;
    return NULL;
  }
  if (!m->have_last || m->last.gen != now->gen || m->last.n != now->n) {
    m->last = *now; /* new stages: start over */
    m->have_last = TRUE;
    m->settling = TRUE;
    m->over = 0;
    return NULL;
  }
  if (!span_ms (&m->last, now, ms))
    return NULL; /* too few frames yet: the window grows */
  if (m->settling) {
    m->settling = FALSE;
    m->last = *now;
    return NULL;
  }

  best = better_plan (model, plan, ms, now->n, threshold, &r, error);
  if (best) {
    if (m->over++ == 0)
      m->streak = m->last;
  } else {
    m->over = 0;
  }
  g_clear_pointer (&best, nnp_plan_free);
  m->last = *now;
  if (m->over < sustain || (error && *error))
    return NULL;

  m->over = 0;
  if (!span_ms (&m->streak, now, ms))
    return NULL;
  best = better_plan (model, plan, ms, now->n, threshold, &r, error);
  if (best && why)
    *why = r;
  return best;
}
