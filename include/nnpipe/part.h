/* nnpipe: a part of a model at some shapes.
 *
 * An NnpPart is what one pipeline stage runs: the whole model, stage k of a
 * plan, or a set of nodes, on one device.  Shapes arrive later and change
 * (a recogniser's width changes every frame), so the part makes, per set of
 * model input shapes, a specialisation (NnpPartSpec): the model specialised
 * for those shapes, the part's nodes and boundary on it and, when asked,
 * the prepared NnpStage.  The part keeps the cache_size most recently used
 * specialisations (LRU), keyed by nnp_shapes_key() of model.h: a shape set
 * seen again is a cache hit, not a new stage.
 *
 * Lifecycle (XNNPACK's create -> reshape -> setup -> run):
 *   part = nnp_part_new (model, &opts, &err);           // part checked at the plan's or
 *                                                       // the model's static shapes
 *   spec = nnp_part_reshape (part, shapes, n, &err);    // specialised (cached)
 *   stage = nnp_part_prepare (part, spec, NULL, &err);  // prepared once per spec
 *   nnp_stage_run (stage, inputs, outputs, &err);
 *   nnp_part_spec_unref (spec); nnp_part_free (part);
 *
 * A part whose inputs are intermediate tensors (a later plan stage, a node
 * range) cannot tell the model's input shapes from its own inputs:
 * nnp_part_find() tries candidate shape sets until the part's inputs are
 * what the caller has (see there).
 *
 * Thread safety: a part may be used from several threads (GStreamer asks
 * caps questions on any thread while the streaming thread prepares stages);
 * it locks itself.  A spec is immutable except for its stage, which the
 * part makes under its lock. */
#pragma once

#include <glib.h>
#include <nnpipe/error.h>
#include <nnpipe/graph.h>
#include <nnpipe/model.h>
#include <nnpipe/plan.h>
#include <nnpipe/stage.h>

G_BEGIN_DECLS

/* Specialisations kept by default (nnstage's shape-cache property). */
#define NNP_PART_DEFAULT_CACHE_SIZE 4

typedef struct _NnpPart NnpPart;
typedef struct _NnpPartSpec NnpPartSpec;

typedef struct {
  /* What runs.  plan: stage `stage` of this plan (copied; node names refer
   * to the graph specialised at the shapes in use, with the plan's
   * no_fusion).  nodes: node names of the specialised graph "a,b,c", or
   * "first..last" (names or topological indices, inclusive), a convex set;
   * the nodes before it (in topological order, and its ancestors) are
   * taken to run upstream, the rest downstream, so chains of ranges fit
   * together.  Neither: the whole model.  Not both. */
  const NnpPlan *plan;
  int stage;
  const char *nodes;
  /* For messages ("stage 1 of plan.json"); NULL: derived, "stage K of
   * PLAN_NAME".  plan_name: how messages call the plan ("plan.json", "the
   * pipeline's plan"); NULL: the plan file's name (nnp_part_open()), else
   * "the plan". */
  const char *name;
  const char *plan_name;
  /* Where it runs: a device spec of device.h.  NULL: the plan stage's
   * device, else "cpu".  threads <= 0 and cpus NULL: the plan stage's,
   * else 1 thread, not pinned. */
  const char *device;
  int threads;
  const int *cpus;
  int n_cpus;
  /* The CPU fallback (nnp_fallback_applies()): a device that does not
   * open (nnp_part_open()) or cannot prepare a stage (nnp_part_prepare())
   * gives way to the CPU, and the part says why. */
  gboolean fallback;
  /* Specialisation flags of a part without a plan (a plan's no_fusion
   * decides for it). */
  NnpSpecializeFlags flags;
  /* Specialisations kept; <= 0: NNP_PART_DEFAULT_CACHE_SIZE. */
  int cache_size;
} NnpPartOptions;

/* A part of model (the part keeps a ref).  Checks what it can before any
 * shapes are known: the plan stage exists, a nodes list with a plan is
 * refused, and when the plan's shapes (else the model's static input
 * shapes) give every model input a shape, the part is specialised there
 * (a bad node list or plan fails here, naming the node).  Errors:
 * NNP_ERROR_PLAN, NNP_ERROR_INVALID, messages start with the model's file
 * name. */
NnpPart *nnp_part_new (NnpModel *model, const NnpPartOptions *options, GError **error);
void nnp_part_free (NnpPart *part);

/* The part an element's properties name, in one call (nnstage's start):
 * the plan is options->plan, else the plan file plan_path (NULL or "":
 * none; a relative model path in it is relative to the file); the model
 * is model_path, else the plan's (nnp_model_load(): once per process); the
 * plan's digest is checked against the model, then nnp_part_new() makes
 * the part ("" nodes: none) and its device is opened: the plan stage's
 * device when the plan names one, else options->device, else "cpu".  A
 * device that does not open fails, or with options->fallback
 * (nnp_fallback_applies()) the part runs on the CPU and *fallback_reason
 * (may be NULL) says so: "device 'opencl:9' is not available, running on
 * the CPU instead: WHY".  Errors, naming the file or the setting:
 * NNP_ERROR_IO "could not read model \"PATH\": ..." (and a plan file that
 * cannot be read: "invalid plan \"PATH\": ..."); NNP_ERROR_PARSE,
 * _UNSUPPORTED, _INVALID "could not load model \"PATH\": ..."; NNP_ERROR_PLAN
 * "no model file given", a bad plan file, a digest mismatch, a missing
 * stage, plan and nodes both set, a node list that does not fit;
 * NNP_ERROR_DEVICE "device 'opencl:9' is not available: WHY". */
NnpPart *nnp_part_open (const char *model_path, const char *plan_path,
                        const NnpPartOptions *options, GError **fallback_reason, GError **error);

/* What an element's part properties ask for, resolved before anything
 * runs: nnp_part_open() starts with it, nnremote sends it to a server. */
typedef struct {
  NnpPlan *plan;   /* options->plan (copied) or the plan file; NULL: none */
  char *plan_name; /* how messages call the plan */
  NnpModel *model; /* a reference, or NULL when no model is needed and none named */
  char *digest;    /* the model's SHA-256 (hex), else the plan's; NULL when neither */
  char *nodes;     /* options->nodes ("" -> NULL) */
  int stage;       /* the plan's stage (checked), 0 without a plan */
} NnpPartRequest;

/* The first half of nnp_part_open(), without specialising or opening a
 * device: the plan (options->plan, else the plan file plan_path, its model
 * path relative to the file), the model (model_path, else with need_model
 * the plan's; without need_model only a model_path given is loaded: a
 * remote client may name its model by digest alone), the plan's digest
 * checked against the model, the stage against the plan, and a plan with
 * nodes refused.  FALSE with nnp_part_open()'s errors; clear req with
 * nnp_part_request_clear() (also after FALSE). */
gboolean nnp_part_request_resolve (const char *model_path, const char *plan_path,
                                   const NnpPartOptions *options, gboolean need_model,
                                   NnpPartRequest *req, GError **error);
void nnp_part_request_clear (NnpPartRequest *req);


NnpModel *nnp_part_get_model (NnpPart *part);  /* borrowed */
const char *nnp_part_get_name (NnpPart *part); /* "stage 1 of plan.json" */
/* The device spec the part's stages run on ("cpu" after nnp_part_open()'s
 * fallback) and whether the part is the whole model (no plan, no nodes). */
const char *nnp_part_get_device (NnpPart *part);
gboolean nnp_part_is_whole (NnpPart *part);
/* Whether the part's inputs are the model's inputs in model order (the
 * whole model, stage 0 of a plan, nodes with nothing before them at the
 * shapes checked by nnp_part_new()). */
gboolean nnp_part_takes_model_inputs (NnpPart *part);
/* Resize the cache (<= 0: the default); drops the least recently used
 * specialisations beyond it. */
void nnp_part_set_cache_size (NnpPart *part, int size);
/* Stages prepared since the part was created (a debugging aid, nnstage's
 * stages-built, what the tests count). */
guint nnp_part_get_n_stages_built (NnpPart *part);

/* The model's real inputs (graph inputs that are not constants), in order:
 * fills at most max of them into inputs (may be NULL) and returns how many
 * there are. */
int nnp_model_real_inputs (NnpModel *model, const NnpValue **inputs, int max);

/* The specialisation at these model input shapes (every real input, in any
 * order; see nnp_model_specialize()), from the cache or made now.  New ref
 * (nnp_part_spec_unref) or NULL: NNP_ERROR_INVALID (shape inference
 * failed, the message names the shapes), NNP_ERROR_PLAN (the part does not
 * fit the graph at those shapes: a node list that is not convex...). */
NnpPartSpec *nnp_part_reshape (NnpPart *part, const NnpInputShape *shapes, int n_shapes,
                               GError **error);

/* Whether the part's inputs at a specialisation are what the caller has
 * (inputs[0..n) are the part's input values there). */
typedef gboolean (*NnpPartInputsFunc) (const NnpValue *const *inputs, int n, gpointer user_data);

/* The specialisation whose part inputs satisfy fits, trying in order: the
 * candidates (keys of nnp_shapes_key(), NULL-terminated, may be NULL:
 * e.g. the caller's inputs as model inputs, the shapes a stage upstream
 * used), the plan's shapes, the model's static input shapes, then the
 * cached specialisations, most recent first.  sources[i] (may be NULL)
 * says where candidate i came from, for messages.  `got` describes the
 * caller's inputs for the error: NNP_ERROR_PLAN "model M, PART: input GOT
 * does not fit the stage: at model input shapes K (from S): the stage's N
 * inputs are ...; ..." or, with no candidate at all, "cannot tell the
 * model's input shapes".  New ref or NULL. */
NnpPartSpec *nnp_part_find (NnpPart *part, const char *const *candidates,
                            const char *const *sources, NnpPartInputsFunc fits, gpointer user_data,
                            const char *got, GError **error);

/* The keys of the cached specialisations, most recently used first
 * (NULL-terminated, g_strfreev): what a stage downstream can try. */
char **nnp_part_get_keys (NnpPart *part);

/* A memo of the last question asked (GStreamer asks the same caps
 * question again and again, from any thread): question is any string
 * that names what the caller asks (its input tensors, e.g. "192:48:3:1
 * (float32)"); when it is the last one asked, the answer is the last
 * answer (the same spec, a new ref, or a copy of the same error) and
 * answer() is not called; else answer (part, user_data, error), called
 * without the part's lock, makes it and it is remembered.  A spec the
 * memo holds stays valid when the cache drops it.  New ref or NULL (an
 * answer() that sets no error gives NNP_ERROR_FAILED "no answer for
 * QUESTION"). */
typedef NnpPartSpec *(*NnpPartAnswerFunc) (NnpPart *part, gpointer user_data, GError **error);
NnpPartSpec *nnp_part_answer (NnpPart *part, const char *question, NnpPartAnswerFunc answer,
                              gpointer user_data, GError **error);
/* Whether question is the one the memo answers (nnp_part_answer() would
 * not call answer()): a caller that gathers candidates at a cost (a query
 * upstream) asks this first. */
gboolean nnp_part_knows (NnpPart *part, const char *question);

void nnp_part_spec_unref (NnpPartSpec *spec);
/* The key (nnp_shapes_key()) and the specialised graph (borrowed). */
const char *nnp_part_spec_get_key (NnpPartSpec *spec);
/* The part's outputs at this specialisation (values of the graph, static
 * shapes; borrowed): a plan stage's outputs in plan order, the model's
 * outputs for the whole model. */
int nnp_part_spec_get_n_outputs (NnpPartSpec *spec);
const NnpValue *nnp_part_spec_get_output (NnpPartSpec *spec, int i);

/* The prepared stage of a specialisation of part (made on the first call
 * for spec, then the same; borrowed: valid while spec lives).  When the
 * part's device cannot prepare it and the fallback policy applies
 * (nnp_fallback_applies()), it is prepared on the CPU and *fallback_reason
 * (may be NULL; only on the call that made the stage) says so: "device
 * 'opencl' (NAME) cannot run the stage, running it on the CPU instead:
 * WHY", with the device's code.  Errors: those of nnp_stage_new(). */
NnpStage *nnp_part_prepare (NnpPart *part, NnpPartSpec *spec, GError **fallback_reason,
                            GError **error);
/* Whether spec's stage runs on the CPU instead of the part's device
 * (fallback).  FALSE before the stage is made. */
gboolean nnp_part_spec_fell_back (NnpPartSpec *spec);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (NnpPart, nnp_part_free)
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC (NnpPartRequest, nnp_part_request_clear)
G_DEFINE_AUTOPTR_CLEANUP_FUNC (NnpPartSpec, nnp_part_spec_unref)

G_END_DECLS
