/* nnpipe: re-balancing a running plan from measured stage times.
 *
 * A plan's split comes from node costs profiled (or estimated) before the
 * run; while it runs, the stages' measured times drift from the prediction
 * (another job on a core, a device throttling, a slowed stage).  Given the
 * measured milliseconds per frame of each stage, nnp_plan_rebalance()
 * re-estimates the node costs (each node's cost scaled by measured /
 * predicted of the stage it runs in now) and asks the same planner
 * (nnp_plan_make(), the DP of docs/partition.md) for the best plan for
 * those costs, with the same stage count, devices, threads, replicas and
 * cores.  The caller decides whether the gain is worth a switch
 * (nnpipeline's rebalance-threshold, docs/pipeline.md). */
#pragma once

#include <glib.h>
#include <nnpipe/plan.h>

G_BEGIN_DECLS

/* What nnp_plan_rebalance() found. */
typedef struct {
  int n_stages;
  double measured_ms[NNP_PLAN_MAX_STAGES];  /* the input, per stage */
  double predicted_ms[NNP_PLAN_MAX_STAGES]; /* the stage's node costs summed (per
                                             * replica group: / replicas), unscaled */
  double factor[NNP_PLAN_MAX_STAGES];       /* measured / predicted */
  double new_ms[NNP_PLAN_MAX_STAGES];       /* the new plan's stages under the scaled
                                             * costs (what they should measure) */
  double measured_bottleneck_ms;            /* max measured_ms */
  double best_bottleneck_ms;                /* max new_ms */
  double gain;                              /* measured / best bottleneck (>= 1 when
                                             * the planner found no worse split) */
  gboolean changed;                         /* the new plan's stages hold other nodes */
} NnpRebalance;

/* The best plan for `plan` (resolved, made for `model`: its shapes, stages,
 * devices) under node costs scaled by the measured stage times
 * measured_ms[0..n-1] (n == plan->n_stages, each > 0).  Costs come from
 * `cost` (NNP_COST_AUTO: the cached profile when there is one).  The new
 * plan keeps each stage's device, threads, replicas and cores.  Returns it
 * (resolved and predicted under the scaled costs) and fills *out; NULL +
 * NNP_ERROR_PLAN when the measurements do not fit the plan or the plan has
 * a remote:// stage (its costs are its server's), or the planner's error. */
NnpPlan *nnp_plan_rebalance (NnpModel *model, const NnpPlan *plan, const double *measured_ms, int n,
                             NnpCostMode cost, NnpRebalance *out, GError **error);

/* The cut points of a plan as text: the first node of each stage after the
 * first, "name@index" comma-separated (index in the plan's node order of
 * graph), e.g. "conv_41@41" (new string). */
char *nnp_plan_cuts_string (const NnpPlan *plan, const NnpGraph *graph);

/* The switch policy of a running plan (nnpipeline rebalance=true), without
 * the threads and elements around it: fed the stages' counters once per
 * measurement window, it says when to switch and to which plan.
 *
 * A window counts when every stage finished at least 2 frames in it (a
 * shorter one grows); the first window of new stages (first frames, cold
 * caches) is not used.  A switch needs `sustain` windows in a row whose
 * best plan (nnp_plan_rebalance()) moves nodes and beats the measured
 * bottleneck by more than `threshold`; the plan switched to is then the
 * one for the whole streak's measurements (less noise than one window).
 * Stages alike (one device, threads, one replica) whose measured times are
 * within the threshold of even cannot gain: the planner is not run.  Not
 * thread-safe: one caller (a monitor thread). */
typedef struct _NnpRebalanceMonitor NnpRebalanceMonitor;

/* The stages' counters at one time: cumulative busy time (ns) and frames
 * finished of each of n stages; gen is the caller's generation of the
 * stages, changed whenever they are rebuilt (a switch). */
typedef struct {
  unsigned gen;
  int n;
  guint64 busy_ns[NNP_PLAN_MAX_STAGES];
  guint64 frames[NNP_PLAN_MAX_STAGES];
} NnpRebalanceSample;

NnpRebalanceMonitor *nnp_rebalance_monitor_new (void);
void nnp_rebalance_monitor_free (NnpRebalanceMonitor *monitor);

/* One window's end: `now` (NULL: no sample, start over).  `model` and
 * `plan` are the running plan's (NULL: no switch can be asked for now,
 * e.g. one is pending: the window counts as no better plan).  Returns the
 * plan to switch to (caller owns it; *why says what was found) or NULL;
 * NULL + error when the planner failed on the measurements (the caller
 * should stop asking for this plan). */
NnpPlan *nnp_rebalance_monitor_tick (NnpRebalanceMonitor *monitor, const NnpRebalanceSample *now,
                                     NnpModel *model, const NnpPlan *plan, double threshold,
                                     unsigned sustain, NnpRebalance *why, GError **error);

G_END_DECLS
