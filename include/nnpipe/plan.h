/* nnpipe: stage plans = how a model is split into pipeline stages.
 *
 * A plan names a model (path + SHA-256 digest), the concrete input shapes,
 * and an ordered list of stages.  Stage k is a set of nodes of the
 * *specialised* graph (nnp_plan_specialize(): the model specialised for the
 * plan's shapes, with fusion unless plan->no_fusion), a device and thread
 * settings.  Stages run in order as a linear pipeline:
 *
 *     graph inputs -> stage 0 -> queue -> stage 1 -> ... -> stage n-1 -> graph outputs
 *
 * Convexity: every stage is a convex node set and every edge goes from a
 * stage to itself or a later one (equivalently: the union of stages 0..k is
 * a down-set of the DAG for every k).
 *
 * Boundaries.  The buffer between stage k and k+1 ("cut k") carries the set
 *   C_k = { non-constant values v : v is a graph input or is produced in stages 0..k,
 *                                   and v is read in stages k+1.. or is a graph output }
 * Stage k's inputs are C_{k-1} (C_{-1} = all non-constant graph inputs) and its
 * outputs are C_k (C_{n-1} = the non-constant graph outputs).  A value produced
 * early and read late therefore crosses every cut in between: the stages in
 * between list it as both input and output and forward (copy) it.
 *
 * Canonical order of a boundary list (the tensor order inside a buffer):
 *   1. graph inputs, in graph input order;
 *   2. graph outputs, in graph output order;
 *   3. the other values by producer node index (topological), then output slot.
 * Plans made by the library always use it.  A hand-written plan may use any
 * order as long as stage k's outputs equal stage k+1's inputs element for
 * element; the first stage's inputs and the last stage's outputs must be in
 * canonical order (so the pipeline looks like the whole model from outside).
 *
 * JSON form (nnp_plan_to_json):
 *   { "version": 1, "model": "det.onnx", "digest": "<sha256 hex>",
 *     "fusion": true, "shapes": { "x": [1,3,640,640] },
 *     "method": "ideals", "cost": "profile",
 *     "predicted_bottleneck_ms": 120.5, "bottleneck_stage": 1,
 *     "stages": [ { "device": "cpu", "threads": 1, "cpus": [0],
 *                   "nodes": ["conv_1", ...], "inputs": ["x"], "outputs": ["t7"],
 *                   "predicted_ms": 118.2, "compute_ms": 117.9, "transfer_ms": 0.3,
 *                   "cut_ms": 0.2 },
 *                 { "device": "opencl", "nodes": [...] }, ... ] }
 * "device" is a spec of device.h ("cpu", "opencl", "opencl:N", "opencl:NAME").
 * "inputs"/"outputs" may be omitted (derived by nnp_plan_resolve()); the
 * predictions, "method", "cost" and "cpus" are optional. */
#pragma once

#include <glib.h>
#include <nnpipe/device.h>
#include <nnpipe/error.h>
#include <nnpipe/graph.h>
#include <nnpipe/model.h>
#include <nnpipe/stage.h>

G_BEGIN_DECLS

/* One stage of a plan.  All strings and vectors are owned by the plan. */
typedef struct {
  char *device; /* "cpu", "opencl", "opencl:N", "opencl:NAME" */
  int threads;  /* >= 1 */
  int *cpus;    /* optional pinning (NULL when n_cpus == 0) */
  int n_cpus;
  char **nodes; /* node names of the specialised graph, topological order, NULL-terminated */
  int n_nodes;
  char **inputs; /* boundary value names (see above), NULL-terminated; NULL = not given */
  int n_inputs;
  char **outputs; /* NULL-terminated; NULL = not given */
  int n_outputs;
  double predicted_ms; /* compute + transfer; < 0 when unknown */
  double compute_ms;   /* < 0 when unknown */
  double transfer_ms;  /* < 0 when unknown */
  gint64 out_bytes;    /* bytes of the outputs (what crosses cut k); -1 when unknown */
  double cut_ms;       /* predicted transfer ms of cut k (this stage -> the next, what
                        * the sender and the receiver pay for it); < 0 when unknown
                        * or for the last stage */
  int replicas;        /* copies of the stage taking frames in turn (JSON "replicas",
                        * 1..64; 0 is read as 1); predicted_ms, compute_ms and
                        * transfer_ms are then per frame of the K together */
} NnpPlanStage;

typedef struct {
  char *model;        /* model path for this process (see nnp_plan_save/load) */
  char *digest;       /* hex SHA-256 of the model bytes, or NULL (not checked) */
  gboolean no_fusion; /* node names refer to a graph specialised with NO_FUSION */
  int n_shapes;
  char **shape_names; /* n_shapes names (NULL-terminated) */
  NnpShape *shapes;   /* n_shapes shapes */
  char *method;       /* "manual", "ideals", "topo", or NULL */
  char *cost;         /* "profile", "estimate", or NULL */
  int n_stages;
  NnpPlanStage *stages;
  double predicted_bottleneck_ms; /* < 0 when unknown */
  int bottleneck_stage;           /* -1 when unknown */
} NnpPlan;

/* An empty plan (no stages).  Free with nnp_plan_free(). */
NnpPlan *nnp_plan_new (const char *model_path, const char *digest);
void nnp_plan_free (NnpPlan *plan);
NnpPlan *nnp_plan_copy (const NnpPlan *plan);
/* Append a stage with a copy of the node names (n_nodes of them); returns it
 * (owned by the plan, valid until the next append).  device NULL = "cpu". */
NnpPlanStage *nnp_plan_add_stage (NnpPlan *plan, const char *device, int threads,
                                  const char *const *nodes, int n_nodes);
/* Record an input shape (copied). */
void nnp_plan_set_shape (NnpPlan *plan, const char *input, const NnpShape *shape);
/* The plan's shapes as NnpInputShape (pointers into the plan; g_free() the array). */
NnpInputShape *nnp_plan_get_input_shapes (const NnpPlan *plan, int *n_shapes);

/* JSON.  to_json returns a new string (g_free).  from_json: NNP_ERROR_PLAN
 * with a message naming the offending field / stage. */
char *nnp_plan_to_json (const NnpPlan *plan);
NnpPlan *nnp_plan_from_json (const char *json, gssize length, GError **error);
/* Model paths, one rule: in a plan *file*, a relative "model" is relative to
 * the plan file's directory (absolute paths are kept as they are).  In memory,
 * plan->model is a path for this process (absolute or relative to the current
 * directory).  nnp_plan_save() writes a relative plan->model relative to the
 * file's directory; nnp_plan_load() resolves it against the file's directory,
 * so the loaded plan->model opens from the current directory.  to_json /
 * from_json keep the path as it is. */
gboolean nnp_plan_save (const NnpPlan *plan, const char *path, GError **error);
NnpPlan *nnp_plan_load (const char *path, GError **error);

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

/* Prepare stage k of a resolved plan on graph (the nnp_plan_specialize()
 * graph): node names and boundary lists are mapped to ids, device / threads /
 * cpus taken from the plan.  Free with nnp_stage_free(). */
NnpStage *nnp_plan_stage_new (const NnpPlan *plan, int k, NnpGraph *graph, GError **error);
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
/* Every stage: DIR/stage-K.onnx (DIR is created when missing). */
gboolean nnp_plan_export (const NnpPlan *plan, NnpModel *model, const NnpGraph *graph,
                          const char *dir, GError **error);

/* ------------------------------------------------------------ cost model */

typedef enum {
  NNP_COST_AUTO = 0, /* cached profile when there is one, else estimate */
  NNP_COST_ESTIMATE, /* analytical: FLOPs / GFLOP/s + bytes / bandwidth */
  NNP_COST_PROFILE,  /* measure every node (cached on disk) */
} NnpCostMode;

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

/* ------------------------------------------------------------ one planning call */

#define NNP_PLAN_MAX_STAGES 64

/* A notice of nnp_plan_make(): `stage` is the stage index (plan file) or -1
 * (an item of the device list), `message` says what and why. */
typedef void (*NnpPlanNoticeFunc) (int stage, const char *message, gpointer user_data);

/* Remote stages of a split (devices "remote://HOST:PORT", docs/remote.md):
 * nnp_plan_make() asks each server for its node costs at the split's shapes
 * and measures the link to it (nnp_remote_probe() of remote.h), so the
 * split weighs what the server's device costs and the bytes that cross the
 * network.  The first host of "remote://a:7000|b:7000" is asked. */
typedef struct {
  const char *token; /* the servers' shared secret, or NULL */
  const char *link;  /* nnp_link_parse() text ("100mbit/20ms/4") replacing the
                      * measured link, and the link of a server that cannot be
                      * reached; NULL = measured (none for such a server) */
  int window;        /* frames in flight on a link (nnremote in-flight); <= 0: 4 */
  /* A server that answers but refuses (another model, a bad token, node
   * costs that name none of the graph's nodes): with strict, the planning
   * fails with its reason (NNP_ERROR_DEVICE); without, the stage is planned
   * with this host's CPU costs and a notice says why.  A server that cannot
   * be reached (not running yet) is planned that way either way, with a
   * notice. */
  gboolean strict;
  /* Called for each server that answered: "remote://H:P: link 9.7 Mbit/s,
   * RTT 0.03 ms, window 4 (measured), node costs from the server" (stage
   * -1), or NULL. */
  NnpPlanNoticeFunc answered;
  gpointer answered_data;
} NnpPlanRemote;

/* What to plan: everything `nnpipe split` and nnpipeline accept. */
typedef struct {
  const char *model_path; /* path written into the plan; NULL = nnp_model_get_name() */
  const char *plan_path;  /* load this plan file instead of splitting (its model path
                            * relative to the file, digest checked, its shapes replaced
                            * by `shapes` when given); n_stages, devices, cuts,
                            * stage_load, cost, memory_limit, max_ideals, flags unused */
  int n_stages;           /* 0 = auto */
  const char *devices;    /* nnp_device_specs_parse() list; NULL or "" = "cpu:1" for
                            * every stage (auto: up to one per core, at least 2) */
  const char *cuts;       /* manual split where stages start: "10,20" (node indices),
                            * "conv_3,conv_9" (names) or both (an index names the node
                            * at that index unless a node has that name); NULL = auto */
  const char *stage_load; /* nnp_stage_load_parse() list for the auto split, or NULL */
  gboolean pin;           /* stages the plan does not pin: consecutive cores */
  gboolean fallback;      /* an OpenCL device this machine cannot open -> "cpu:1" */
  NnpCostMode cost;
  gint64 memory_limit;      /* bytes per stage, 0 = none (auto split) */
  int max_ideals;           /* 0 = default (auto split) */
  int max_replicas;         /* NnpSplitOptions.max_replicas (auto split), 0 = none */
  NnpSpecializeFlags flags; /* NO_FUSION: plan on the unfused graph */
  /* What the planning changed of what was asked, or NULL: an OpenCL device
   * that fallback replaces by the CPU, a remote device planned without its
   * server's costs (NnpPlanRemote). */
  NnpPlanNoticeFunc notice;
  gpointer notice_data;
  NnpPlanRemote remote; /* remote stages of a split (automatic or cut) */
} NnpPlanRequest;

/* The one planning call of the CLI and nnpipeline: from a plan file or by
 * splitting `model` specialised for `shapes` (n_shapes = 0: the plan file's
 * shapes or the model's static ones) as `req` asks.  The plan is resolved
 * and predicted.  *graph_out (when not NULL) gets the specialised graph the
 * plan refers to (caller owns the ref).  NULL + NNP_ERROR_PLAN (request,
 * plan file, digest), NNP_ERROR_DEVICE (a device is missing without
 * fallback) or the loader's / specialiser's error. */
NnpPlan *nnp_plan_make (NnpModel *model, const NnpInputShape *shapes, int n_shapes,
                        const NnpPlanRequest *req, NnpGraph **graph_out, GError **error);

/* The digest check, written once: FALSE + NNP_ERROR_PLAN when the plan names
 * a digest that is not the model's (plan_name: how the message calls the
 * plan, e.g. its path; NULL = "plan"). */
gboolean nnp_plan_check_model (const NnpPlan *plan, NnpModel *model, const char *plan_name,
                               GError **error);

/* Human-readable table of a plan (new string). */
char *nnp_plan_to_table (const NnpPlan *plan);
/* gst-launch descriptions: "nnstage model=M plan=P stage=0 ! queue ! ..." and
 * "nnpipeline model=M plan=P" (new strings). */
char *nnp_plan_to_gst_launch (const NnpPlan *plan, const char *plan_path);
char *nnp_plan_to_gst_launch_bin (const NnpPlan *plan, const char *plan_path);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (NnpPlan, nnp_plan_free)

G_END_DECLS
