/* libnnpipe internal: the splitting problem in plain arrays, shared by
 * split.c (solvers), plan-build.c (prediction) and the tests (synthetic
 * costs); what the plan-*.c files share. */
#pragma once

#include <nnpipe/graph.h>
#include <nnpipe/plan.h>
#include <nnpipe/device.h>
#include <nnpipe/specialize.h>
#include "backends/device-list.h"

G_BEGIN_DECLS

/* ------------------------------------------------------------ plans (internal) */

/* An empty plan (no stages).  Free with nnp_plan_free(). */
NnpPlan *nnp_plan_new (const char *model_path, const char *digest);
/* Append a stage with a copy of the node names (n_nodes of them); returns it
 * (owned by the plan, valid until the next append).  device NULL = "cpu". */
NnpPlanStage *nnp_plan_add_stage (NnpPlan *plan, const char *device, int threads,
                                  const char *const *nodes, int n_nodes);
/* Record an input shape (copied). */
void nnp_plan_set_shape (NnpPlan *plan, const char *input, const NnpShape *shape);
/* Load the plan's model (a relative path is taken relative to `base_dir` when
 * not NULL: the directory of the plan file a from_json plan came from; else
 * as it is), check the digest, and specialise it for the plan's shapes.  Returns the specialised graph (caller owns the ref) and,
 * when model_out is not NULL, the model (caller owns the ref). */
NnpGraph *nnp_plan_specialize (const NnpPlan *plan, const char *base_dir, NnpModel **model_out,
                               GError **error);
/* Check a plan against the specialised graph: every node known and in exactly
 * one stage, stages non-empty and convex, no edge from a later stage to an
 * earlier one, devices available and supporting their nodes, boundary lists
 * (when given) equal to the derived ones.  NNP_ERROR_PLAN (NNP_ERROR_DEVICE
 * for an unavailable device) naming the stage and node/value. */
gboolean nnp_plan_validate (const NnpPlan *plan, const NnpGraph *graph, GError **error);
/* Validate, then fill missing boundary lists (canonical order). */
gboolean nnp_plan_resolve (NnpPlan *plan, const NnpGraph *graph, GError **error);
/* The same on another device than the plan stage's (NULL: the plan's): the
 * plan is validated with its own devices, the stage prepared on `device`
 * (NnpPart's fallback to the CPU and a stage whose device is chosen by the
 * element, not the plan). */
NnpStage *nnp_plan_stage_new_on (const NnpPlan *plan, int k, NnpGraph *graph, const char *device,
                                 GError **error);
/* Write stage k of a resolved plan as a standalone ONNX model at `path`:
 * the stage's nodes of graph (the nnp_plan_specialize() graph of `model`),
 * fused activations written back as ONNX nodes, the constants they read as
 * initializers, the stage's boundary values as graph inputs / outputs (same
 * names and order, static shapes).  NNP_ERROR_PLAN when the plan's digest is
 * not the model's, NNP_ERROR_IO when the file cannot be written. */
gboolean nnp_plan_export_stage (const NnpPlan *plan, int k, NnpModel *model, const NnpGraph *graph,
                                const char *path, GError **error);
/* The digest check, written once: FALSE + NNP_ERROR_PLAN when the plan names
 * a digest that is not the model's (plan_name: how the message calls the
 * plan, e.g. its path; NULL = "plan"). */
gboolean nnp_plan_check_model (const NnpPlan *plan, NnpModel *model, const char *plan_name,
                               GError **error);

/* ------------------------------------------------------------ cost model */


typedef struct _NnpCostModel NnpCostModel;

/* A cost model for a specialised graph.  `digest` and `shapes_key`
 * (nnp_shapes_key() of model.h, e.g. "x=1x3x640x640") key the on-disk profile cache:
 *   $XDG_CACHE_HOME/nnpipe/profiles/<digest>-<device>-t<threads>-<shapes_key>.json
 * (NNP_PROFILE_DIR overrides the directory).  Keeps a ref to graph. */
NnpCostModel *nnp_cost_model_new (NnpGraph *graph, const char *digest, const char *shapes_key,
                                  NnpCostMode mode);
void nnp_cost_model_free (NnpCostModel *cm);
/* Milliseconds of one node on a device (profiled or estimated; +inf when the
 * device does not support the node).  May profile (and write the cache) on
 * first use of a device: errors only on a bad device. */
gboolean nnp_cost_model_prepare (NnpCostModel *cm, const NnpDeviceSpec *dev, GError **error);
double nnp_cost_model_node_ms (NnpCostModel *cm, const NnpDeviceSpec *dev, int node);
/* Milliseconds to hand a buffer of n_tensors tensors, `bytes` in all, from
 * one stage to the next (src -> dst), sender and receiver together.
 * cpu -> cpu: per-buffer overhead + bytes / measured memcpy bandwidth;
 * cpu <-> OpenCL: queue overhead + one copy per tensor (latency + bytes /
 * bandwidth, measured once per device); two stages on the same OpenCL
 * device: queue overhead only (no copy). */
double nnp_cost_model_transfer_ms (NnpCostModel *cm, const NnpDeviceSpec *src,
                                   const NnpDeviceSpec *dst, int n_tensors, double bytes);
/* "profile" when every node of the device was measured, else "estimate". */
const char *nnp_cost_model_source (NnpCostModel *cm, const NnpDeviceSpec *dev);

/* ------------------------------------------------------------ links (remote stages) */

/* The network between this host and a device on another host (a remote
 * stage): the bytes of a cut onto or off a stage on that device cross it.
 * Cost of the remote stage j (docs/partition.md, "Remote stages: the link"):
 *   compute_j + (bytes in + bytes out) / bytes_per_s + rtt / window
 * an upper bound of its period, exact for window 1. */
typedef struct {
  double bytes_per_s; /* bandwidth, each direction (> 0) */
  double rtt_ms;      /* round-trip time (>= 0) */
  int window;         /* frames in flight on the link (nnremote in-flight); >= 1 */
} NnpLink;

/* Parse "BANDWIDTH/RTT[/WINDOW]": bandwidth with tc's units (bit, kbit,
 * mbit, gbit: bits per second) or in bytes per second (B, kB, MB, GB),
 * decimal multiples ("125MB" = 125e6 B/s = "1gbit"); RTT with a unit (us,
 * ms, s); WINDOW an integer >= 1 (default 1).  Examples: "100mbit/20ms/4",
 * "1GB/0.1ms".  NNP_ERROR_PLAN naming the bad part. */
gboolean nnp_link_parse (const char *text, NnpLink *link, GError **error);
/* "100 Mbit/s, RTT 20 ms, window 4" (new string). */
char *nnp_link_to_string (const NnpLink *link);

/* Stages on `device` (the spec string as in a plan stage, e.g.
 * "remote://host:7000") are reached over `link` (copied; NULL = local
 * again): nnp_cost_model_xfer_params() and the graph transfer lines charge
 * it, so splits and predictions made with this cost model weigh the bytes
 * that cross the network. */
void nnp_cost_model_set_link (NnpCostModel *cm, const char *device, const NnpLink *link);
/* The link of a device, NULL when local (owned by cm). */
const NnpLink *nnp_cost_model_get_link (NnpCostModel *cm, const char *device);
/* Node times measured elsewhere (a remote server profiling on its own device
 * answers a cost query): ms[i] for node i of the cost model's graph (n must
 * be its node count; INFINITY = the device cannot run the node), taken as a
 * profile of dev.  NNP_ERROR_PLAN when n or a value is wrong. */
gboolean nnp_cost_model_set_node_costs (NnpCostModel *cm, const NnpDeviceSpec *dev,
                                        const double *ms, int n, GError **error);

/* ------------------------------------------------------------ splitting */

typedef struct {
  const NnpDeviceSpec *devices; /* device of stage k = devices[MIN (k, n_devices - 1)] */
  int n_devices;
  int n_stages;        /* 0 = auto: up to n_devices stages (or 8 for one device) */
  gint64 memory_limit; /* bytes per stage (weights + activations), 0 = none */
  int max_ideals;      /* ideal-lattice cap, 0 = 200000; above it: topological-order DP */
  /* Other work sharing stage k's core, as a fraction of the whole model's
   * predicted time on that stage's device: stage k carries
   * stage_load[k] * (sum of node times) on top of its nodes (e.g. {0, 0.6}:
   * the last of two stages also runs a second model taking 0.6 of this
   * one's time, so the split gives it fewer nodes).  Stages beyond
   * n_stage_load carry none; NULL = none. */
  const double *stage_load;
  int n_stage_load;
  /* With n_stages = 0 (auto), for nnp_plan_make(): also try running a stage
   * as up to this many replicas, merging neighbouring identical devices of
   * the list into one replicated stage (cpu:1,cpu:1 -> one stage cpu:1*2),
   * and keep the best predicted throughput (lib/partition/replicas-search.c).
   * 0 or 1 = never; nnp_plan_new_auto() itself ignores it. */
  int max_replicas;
  /* With max_replicas > 1 and a list of n identical CPU items: when the
   * choice is a one-stage plan, time the whole model as plain threading
   * (one copy, n x T threads) against n one-copy-each replicas, a few
   * frames each, and keep the faster (replicas-search.c). */
  gboolean measure_whole;
} NnpSplitOptions;

/* Parse a stage-load list "0,0.6" (numbers >= 0, comma-separated) for
 * NnpSplitOptions.stage_load.  Returns the array (g_free) and *n, or NULL +
 * NNP_ERROR_PLAN naming the bad item. */
double *nnp_stage_load_parse (const char *text, int *n, GError **error);

/* Fill predicted_ms / compute_ms / transfer_ms / out_bytes of every stage and
 * the bottleneck of a resolved plan. */
void nnp_plan_predict (NnpPlan *plan, const NnpGraph *graph, NnpCostModel *cm);

/* Manual splits.  `cuts` are topological node indices of the specialised
 * graph: {10, 20} = stages [0,10) [10,20) [20,n).  Devices as in
 * NnpSplitOptions.  The plan is resolved and predicted when cm != NULL. */
NnpPlan *nnp_plan_new_from_cuts (const char *model_path, const char *digest,
                                 const NnpInputShape *shapes, int n_shapes, NnpGraph *graph,
                                 const int *cuts, int n_cuts, const NnpDeviceSpec *devices,
                                 int n_devices, NnpCostModel *cm, GError **error);
/* Cuts by node names: each name starts a new stage. */
NnpPlan *nnp_plan_new_from_cut_names (const char *model_path, const char *digest,
                                      const NnpInputShape *shapes, int n_shapes, NnpGraph *graph,
                                      const char *const *names, int n_names,
                                      const NnpDeviceSpec *devices, int n_devices, NnpCostModel *cm,
                                      GError **error);
/* Automatic split minimising the bottleneck (see docs/partition.md). */
NnpPlan *nnp_plan_new_auto (const char *model_path, const char *digest, const NnpInputShape *shapes,
                            int n_shapes, NnpGraph *graph, const NnpSplitOptions *options,
                            NnpCostModel *cm, GError **error);


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
