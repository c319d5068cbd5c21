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
#include <nnpipe/specialize.h>
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
void nnp_plan_free (NnpPlan *plan);
NnpPlan *nnp_plan_copy (const NnpPlan *plan);
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


/* Prepare stage k of a resolved plan on graph (the nnp_plan_specialize()
 * graph): node names and boundary lists are mapped to ids, device / threads /
 * cpus taken from the plan.  Free with nnp_stage_free(). */
NnpStage *nnp_plan_stage_new (const NnpPlan *plan, int k, NnpGraph *graph, GError **error);

/* Every stage: DIR/stage-K.onnx (DIR is created when missing). */
gboolean nnp_plan_export (const NnpPlan *plan, NnpModel *model, const NnpGraph *graph,
                          const char *dir, GError **error);

/* How a plan is costed (NnpPlanRequest, nnp_plan_rebalance()). */
typedef enum {
  NNP_COST_AUTO = 0, /* cached profile when there is one, else estimate */
  NNP_COST_ESTIMATE, /* analytical: FLOPs / GFLOP/s + bytes / bandwidth */
  NNP_COST_PROFILE,  /* measure every node (cached on disk) */
} NnpCostMode;

#define NNP_PLAN_MAX_STAGES 64


/* ------------------------------------------------------------ a planning request
 * (nnp_plan_make() of plan-make.h) */

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

/* Human-readable table of a plan (new string). */
char *nnp_plan_to_table (const NnpPlan *plan);
/* The gst-launch description of a plan saved at plan_path (NULL: "plan.json"), new
 * string: its stages "nnstage model=M plan=P stage=0 ! queue ! ...", or with as_bin
 * the one element "nnpipeline model=M plan=P". */
char *nnp_plan_to_gst_launch (const NnpPlan *plan, const char *plan_path, gboolean as_bin);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (NnpPlan, nnp_plan_free)

G_END_DECLS
