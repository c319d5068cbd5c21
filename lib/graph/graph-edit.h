/* libnnpipe internal: building and changing graphs (lib/graph/graph.c).
 *
 * include/nnpipe/graph.h is the IR as users read it (the structs, lookups,
 * a node's inputs and outputs); what makes and edits a graph (the loader,
 * specialisation, the kernels' attribute reads, the tests) is here. */
#pragma once

#include <nnpipe/graph.h>

G_BEGIN_DECLS

/* Table lookup by ONNX op type; NNP_OP_UNKNOWN if absent. */
NnpOpType nnp_op_from_onnx (const char *op_type);
NnpGraph *nnp_graph_new (const char *name, int opset);
/* Node of that name, NULL when absent (a user names nodes through
 * nnp_graph_select_nodes()). */
NnpNode *nnp_graph_find_node (const NnpGraph *graph, const char *name);
/* Deep copy (constants are shared by reference: they are immutable; so is the
 * cache of weight-derived data, lib/graph/derived.h). */
NnpGraph *nnp_graph_copy (const NnpGraph *graph);
/* Value of that name, created (dtype UNDEFINED, rank -1) when absent. */
NnpValue *nnp_graph_ensure_value (NnpGraph *graph, const char *name);
/* Append a node (takes copies of the strings; inputs/outputs are value ids).
 * A NULL or empty name gets "<op_type>_<n>"; a duplicate name gets a suffix. */
NnpNode *nnp_graph_add_node (NnpGraph *graph, const char *name, const char *op_type,
                             const char *domain, int n_inputs, const int *inputs, int n_outputs,
                             const int *outputs);
/* Add an attribute to a node; the graph takes ownership of attr's contents. */
void nnp_node_take_attr (NnpNode *node, NnpAttr *attr);
/* Set value->producer for every node output, reject a value produced twice,
 * put nodes in topological order (stable: keeps model order where it can)
 * and renumber node->index.  Fails with NNP_ERROR_INVALID naming a node on a
 * cycle or a node input that nothing produces. */
gboolean nnp_graph_sort (NnpGraph *graph, GError **error);
/* Recompute consumers of every value (call after changing node inputs). */
void nnp_graph_update_uses (NnpGraph *graph);
/* Remove nodes flagged in `remove` (indexed by node index; length nodes->len),
 * then drop values no longer referenced by any node, graph input or output,
 * renumber, and update uses.  Value ids change: do not keep old ids. */
void nnp_graph_remove_nodes (NnpGraph *graph, const gboolean *remove);
int64_t nnp_node_attr_int (const NnpNode *node, const char *name, int64_t dflt);
float nnp_node_attr_float (const NnpNode *node, const char *name, float dflt);
/* Returns the string, or dflt when absent. */
const char *nnp_node_attr_string (const NnpNode *node, const char *name, const char *dflt);
/* Returns the ints and sets *n, or NULL and *n = 0 when absent. */
const int64_t *nnp_node_attr_ints (const NnpNode *node, const char *name, int *n);
/* Returns the ints and sets *n, or NULL and *n = 0 when absent. */
const float *nnp_node_attr_floats (const NnpNode *node, const char *name, int *n);
/* Set an error on a node: "node 'NAME' (OpType): <message>". */
void nnp_node_set_error (GError **error, NnpErrorCode code, const NnpNode *node, const char *format,
                         ...) G_GNUC_PRINTF (4, 5);

/* The data-dependent tail of a specialised graph (graph->tail, made by
 * lib/specialize/tail.c, run by lib/exec/stage-tail.c): nodes of the source
 * graph whose output shapes need values known only at run time, and every
 * node after them.  The specialised graph holds the static head; its values
 * that the tail reads are flagged is_output, the graph outputs the tail
 * makes keep their ids with non-static shapes.  Owned by the graph. */
typedef struct _NnpGraphTail {
  NnpGraph *source; /* owned ref: the graph before specialisation */
  char **nodes;     /* names of the tail's nodes in source, NULL-terminated */
  char *first;      /* "node 'nms' (NonMaxSuppression)": where the tail starts */
  char *why;        /* the specialisation's message there (needs which input) */
  /* values the tail reads that the specialisation computed (folded) and
   * removed from the graph: name -> NnpTensor* (owned refs) */
  GHashTable *consts;
} NnpGraphTail;
void nnp_graph_tail_free (NnpGraphTail *tail);

/* ONNX op type string ("Conv") for an op; "Unknown" for NNP_OP_UNKNOWN. */
const char *nnp_op_name (NnpOpType op);

G_END_DECLS
