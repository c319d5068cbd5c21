/* libnnpipe internal: the splitting problem in plain arrays, shared by
 * split.c (solvers), plan-build.c (prediction) and the tests (synthetic
 * costs); what the plan-*.c files share. */
#pragma once

#include <nnpipe/graph.h>
#include <nnpipe/plan.h>

G_BEGIN_DECLS

/* Transfer cost of a buffer: overhead_ms + per_tensor_ms * n + bytes * ms_per_byte. */
typedef struct {
  double overhead_ms;
  double per_tensor_ms;
  double ms_per_byte;
} NnpXferCost;

typedef struct {
  int n_stages;
  int n_nodes;           /* graph->nodes->len */
  const double *node_ms; /* [k * n_nodes + i]: node i on stage k's device; INFINITY = unsupported */
  const double *value_bytes; /* [graph->values->len]: bytes of each value (constants ignored) */
  const double *node_mem;    /* [n_nodes] bytes a node adds to its stage, or NULL */
  double mem_limit;          /* per stage, 0 = none */
  /* per cut k (between stage k and k+1, n_stages - 1 of them): what the
   * sender (out) and the receiver (in) pay for the buffer C_k */
  const NnpXferCost *xfer_out;
  const NnpXferCost *xfer_in;
  /* what stage 0 pays to receive the graph inputs (C_{-1}) and the last
   * stage to deliver the graph outputs (C_{n-1}); NULL = nothing (CPU) */
  const NnpXferCost *xfer_graph_in;
  const NnpXferCost *xfer_graph_out;
  int max_ideals; /* 0 = 200000 */
  /* [n_stages]: other work on each stage's core per frame (ms, in the units
   * of node_ms), added to the stage's cost; NULL = none */
  const double *stage_load_ms;
} NnpSplitProblem;

/* Values crossing cut k for an assignment of nodes to stages: is `v` in C_k?
 * (non-constant, available in stages <= k, needed after k). */
gboolean nnp_split_value_crosses (const NnpGraph *graph, const NnpValue *v, const int *stage_of,
                                  int k);

/* Stage times of an assignment: compute, transfer (in + out), total; returns
 * the bottleneck (max total), *bottleneck_stage set when not NULL. */
double nnp_split_evaluate (const NnpGraph *graph, const NnpSplitProblem *p, const int *stage_of,
                           double *compute_ms, double *transfer_ms, double *total_ms,
                           int *bottleneck_stage);

/* Optimal stage_of (length n_nodes) minimising the bottleneck with exactly
 * p->n_stages non-empty stages.  *method = "ideals" or "topo".  FALSE with
 * NNP_ERROR_PLAN when no split is possible (too few nodes, op support,
 * memory). */
gboolean nnp_split_solve (const NnpGraph *graph, const NnpSplitProblem *p, int *stage_of,
                          double *bottleneck, const char **method, GError **error);
/* The two solvers (exposed for tests).  ideals: FALSE without error when
 * the lattice exceeds the cap. */
gboolean nnp_split_solve_ideals (const NnpGraph *graph, const NnpSplitProblem *p, int *stage_of,
                                 double *bottleneck, gboolean *too_many, GError **error);
gboolean nnp_split_solve_topo (const NnpGraph *graph, const NnpSplitProblem *p, int *stage_of,
                               double *bottleneck, GError **error);

/* cost.c: the transfer lines of a cut src -> dst: what the sending stage
 * pays (*out) and what the receiving stage pays (*in); their sum is
 * nnp_cost_model_transfer_ms(). */
void nnp_cost_model_xfer_params (NnpCostModel *cm, const NnpDeviceSpec *src,
                                 const NnpDeviceSpec *dst, NnpXferCost *out, NnpXferCost *in);
/* cost.c: what a first stage on dev pays for the graph inputs (*in) and a
 * last stage on dev for the graph outputs (*out): zero on the CPU, uploads /
 * downloads on an OpenCL device. */
void nnp_cost_model_graph_xfer_params (NnpCostModel *cm, const NnpDeviceSpec *dev, NnpXferCost *in,
                                       NnpXferCost *out);
/* link.c: add what a link costs to the lines of a cut: `off` = the link of
 * the sending stage's device (its bytes leave over it: *out), `onto` = the
 * receiving stage's (bytes arrive over it, once RTT / window per frame:
 * *in); NULL = local. */
void nnp_link_charge (const NnpLink *onto, const NnpLink *off, NnpXferCost *out, NnpXferCost *in);
/* cost.c: why node `node` cannot run on dev (owned by the model), NULL when it can. */
const char *nnp_cost_model_why (NnpCostModel *cm, const NnpDeviceSpec *dev, int node);

/* replicas.c: a stage of K replicas takes frames in turn, so per frame it
 * costs 1/K of one replica: scale node_ms[k * n + i], what stage k pays at
 * its cuts (out[k], in[k - 1]) and at the graph's ends by 1/devs[k].replicas. */
void nnp_split_scale_replicas (const NnpDeviceSpec *devs, int n_stages, int n_nodes,
                               double *node_ms, NnpXferCost *out, NnpXferCost *in,
                               NnpXferCost *graph_in, NnpXferCost *graph_out);
/* replicas-search.c: nnp_plan_new_auto(), and with options->max_replicas > 1
 * and n_stages = 0 also over every grouping of neighbouring identical
 * devices into replicated stages; the best predicted bottleneck (a
 * replicated plan must be 5 % better). */
NnpPlan *nnp_plan_new_auto_replicated (const char *model_path, const char *digest,
                                       const NnpInputShape *shapes, int n_shapes, NnpGraph *graph,
                                       const NnpSplitOptions *options, NnpCostModel *cm,
                                       GError **error);
/* measure.c: frames per second of the whole graph as `copies` stages on
 * dev, each on a thread of its own running `frames` frames (after a
 * warm-up run), all at once.  0 with error when a stage fails. */
double nnp_measure_whole_fps (NnpGraph *graph, const NnpDeviceSpec *dev, int copies, int frames,
                              GError **error);

/* plan-check.c: everything nnp_plan_validate() checks; on success the stage
 * of every node in *stage_of_out (newly allocated, graph->nodes->len), when
 * not NULL. */
gboolean nnp_plan_check_stage_of (const NnpPlan *plan, const NnpGraph *graph, int **stage_of_out,
                                  GError **error);

/* make.c: called by nnp_partition_make() with the cost model of a split
 * before it asks the devices for their costs: a caller fills in costs it
 * knows better (nnp_plan_make(): the node costs and links of remote devices,
 * asked of their servers; re-balancing: measured stage times).  FALSE +
 * error stops the planning. */
typedef gboolean (*NnpPlanPrepareFunc) (NnpCostModel *cm, NnpGraph *graph,
                                        const NnpDeviceSpec *devices, int n_devices,
                                        gpointer user_data, GError **error);

/* make.c: nnp_plan_make() without the remote probe: the plan-file and
 * split policies of the request (req->remote unused), `prepare` (or NULL)
 * called on a split's cost model. */
NnpPlan *nnp_partition_make (NnpModel *model, const NnpInputShape *shapes, int n_shapes,
                             const NnpPlanRequest *req, NnpPlanPrepareFunc prepare,
                             gpointer prepare_data, NnpGraph **graph_out, GError **error);

G_END_DECLS
