/* nnpipe: NnpPart's insides, shared by lib/exec/part.c (the part, its
 * specialisations and stages) and lib/exec/part-nodes.c (a node list as a
 * plan).  Not public: include/nnpipe/part.h is the API. */
#ifndef NNP_PART_PRIVATE_H
#define NNP_PART_PRIVATE_H

#include <nnpipe/part.h>
#include <nnpipe/specialize.h>

struct _NnpPartSpec {
  gint ref_count;
  char *key;                   /* nnp_shapes_key() */
  NnpGraph *graph;             /* owned ref: the specialised model */
  NnpPlan *plan;               /* owned: the part as a resolved plan, NULL = whole model */
  int k;                       /* the part's stage in plan */
  GPtrArray *inputs, *outputs; /* const NnpValue * of graph */
  NnpStage *stage;             /* owned, made by nnp_part_prepare() */
  gboolean fell_back;
};

struct _NnpPart {
  GMutex lock;
  NnpModel *model;  /* owned ref */
  char *model_name; /* file name, for messages */
  char *name;       /* "stage 1 of plan.json" */
  NnpPlan *plan;    /* owned copy or NULL */
  int stage;
  char *nodes;    /* or NULL */
  char *device;   /* device spec the stages run on */
  NnpDevice *dev; /* owned ref: device opened by nnp_part_open(), or NULL */
  int threads;
  int *cpus; /* owned or NULL (the plan stage's) */
  int n_cpus;
  gboolean fallback;
  NnpSpecializeFlags flags;
  gboolean first; /* inputs are the model's */
  int cache_size;
  GPtrArray *cache; /* NnpPartSpec (ref), most recently used first */
  guint n_specialized, n_built;
  /* the memo of nnp_part_answer(): the last question and its answer */
  char *memo_question;    /* owned or NULL */
  NnpPartSpec *memo_spec; /* owned ref, or NULL with memo_error */
  GError *memo_error;     /* owned or NULL */
};

/* The plan of part's node list (part->nodes) at graph's shapes: [the nodes
 * before it], the part, [the rest], the part's stage index in *k.  NULL
 * with error naming the node list when it is not a convex set of nodes.
 * lib/exec/part-nodes.c. */
NnpPlan *nnp_part_nodes_plan (NnpPart *part, NnpGraph *graph, const NnpInputShape *shapes,
                              int n_shapes, int *k, GError **error);

int nnp_part_get_cache_size (NnpPart *part);
/* Specialisations made since the part was created (cache misses). */
guint nnp_part_get_n_specialized (NnpPart *part);
/* The same by key (nnp_shapes_key()). */
NnpPartSpec *nnp_part_reshape_key (NnpPart *part, const char *key, GError **error);
NnpGraph *nnp_part_spec_get_graph (NnpPartSpec *spec);
/* The part's nodes (names, borrowed; topological order); n_nodes may be NULL.
 * NULL for the whole model. */
const char *const *nnp_part_spec_get_nodes (NnpPartSpec *spec, int *n_nodes);
NnpPartSpec *nnp_part_spec_ref (NnpPartSpec *spec);

/* The part's boundary at this specialisation (values of the graph,
 * static shapes; borrowed): a plan stage's inputs/outputs in plan order,
 * the model's real inputs and outputs for the whole model. */
int nnp_part_spec_get_n_inputs (NnpPartSpec *spec);
const NnpValue *nnp_part_spec_get_input (NnpPartSpec *spec, int i);

#endif /* NNP_PART_PRIVATE_H */
