/* nnpipe: the graph IR.
 *
 * An NnpGraph owns its nodes and values.  Values are named edges (graph
 * inputs, weights, intermediates, outputs); nodes reference values by id
 * (index into graph->values).  After nnp_graph_sort() the nodes array is in
 * topological order and node->index is the position in it.
 *
 * Graphs are refcounted.  A graph returned by nnp_model_get_graph() is the
 * model's immutable original (symbolic shapes, Constant nodes still there);
 * nnp_model_specialize() returns a new graph with concrete shapes, constants
 * folded and fusions applied, which stages then execute.  Do not modify a
 * graph shared with a stage. */
#pragma once

#include <glib.h>
#include <nnpipe/error.h>
#include <nnpipe/tensor.h>

G_BEGIN_DECLS

typedef enum {
#define NNP_OP(ID, id, onnx, ...) NNP_OP_##ID,
#include <nnpipe/op-list.h>
#undef NNP_OP
  NNP_OP_COUNT,
  NNP_OP_UNKNOWN = NNP_OP_COUNT, /* ONNX op type not in op-list.h */
} NnpOpType;


/* Numbered as ONNX AttributeProto.AttributeType. */
typedef enum {
  NNP_ATTR_UNDEFINED = 0,
  NNP_ATTR_FLOAT = 1,
  NNP_ATTR_INT = 2,
  NNP_ATTR_STRING = 3,
  NNP_ATTR_TENSOR = 4,
  NNP_ATTR_GRAPH = 5, /* a subgraph (If, Loop, Scan): `g` */
  NNP_ATTR_FLOATS = 6,
  NNP_ATTR_INTS = 7,
  NNP_ATTR_STRINGS = 8,
} NnpAttrType;

typedef struct {
  char *name;
  NnpAttrType type;
  float f;        /* FLOAT */
  int64_t i;      /* INT */
  char *s;        /* STRING (NUL-terminated copy) */
  NnpTensor *t;   /* TENSOR (owned ref) */
  int n;          /* element count of FLOATS / INTS / STRINGS */
  float *floats;  /* FLOATS (owned) */
  int64_t *ints;  /* INTS (owned) */
  char **strings; /* STRINGS (owned, NULL-terminated vector) */
  /* GRAPH: the subgraph (owned ref, immutable, shared by copies; NULL for a
   * `graphs` list, which no op uses).  Its inputs are its own (`i` of them)
   * followed by the outer-scope values its nodes read, which the loader also
   * appends to the node's inputs (by name). */
  struct _NnpGraph *g;
} NnpAttr;

/* Activation fused into a producing node by the fusion pass (Conv, ConvTranspose,
 * Gemm, MatMul, Add).  Applied to the node's output after everything else:
 *   RELU: max(x,0)   CLIP: min(max(x,alpha),beta)   LEAKY_RELU: x<0 ? alpha*x : x
 *   HARD_SIGMOID: clip(alpha*x+beta,0,1)   HARD_SWISH: x*clip(x/6+0.5,0,1)
 *   SIGMOID: 1/(1+exp(-x))
 *   HARD_SWISH_AFFINE: alpha*hardswish(x)+beta (a HardSwish followed by a scalar Mul/Add)
 *   SILU: x*sigmoid(x) (Sigmoid and Mul, as PyTorch exports SiLU / Swish)
 *   GELU: x*(1+erf(x/sqrt(2)))/2 (Div, Erf, Add, Mul, Mul, as PyTorch exports GELU) */
typedef enum {
  NNP_ACT_NONE = 0,
  NNP_ACT_RELU,
  NNP_ACT_CLIP,
  NNP_ACT_LEAKY_RELU,
  NNP_ACT_HARD_SIGMOID,
  NNP_ACT_HARD_SWISH,
  NNP_ACT_SIGMOID,
  NNP_ACT_HARD_SWISH_AFFINE,
  NNP_ACT_SILU,
  NNP_ACT_GELU,
} NnpActivation;

typedef struct _NnpGraph NnpGraph;
typedef struct _NnpNode NnpNode;
typedef struct _NnpValue NnpValue;

struct _NnpNode {
  char *name;    /* unique in the graph; the loader names unnamed nodes "<OpType>_<n>" */
  char *op_type; /* ONNX op type as written in the model */
  char *domain;  /* "" for the default domain */
  NnpOpType op;  /* NNP_OP_UNKNOWN when op_type is not in op-list.h */
  int index;     /* position in graph->nodes */

  int n_inputs;
  int *inputs; /* value ids; -1 marks an omitted optional input ("" in ONNX) */
  int n_outputs;
  int *outputs; /* value ids; -1 marks an omitted optional output */

  int n_attrs;
  NnpAttr *attrs; /* owned */

  /* Op-specific parsed attributes, filled by the op's infer function
   * (nnp_op_<id>_infer) and read by kernels.  A plain struct freed with
   * g_free(); NULL for ops that need none. */
  gpointer params;
  gsize params_size; /* size of the params block (nnp_graph_copy duplicates it) */

  NnpActivation act; /* fused activation, NNP_ACT_NONE by default */
  float act_alpha, act_beta;
};

struct _NnpValue {
  char *name;          /* unique in the graph */
  int id;              /* index in graph->values */
  NnpDType dtype;      /* UNDEFINED until known */
  NnpShape shape;      /* rank -1 until known */
  char **dim_names;    /* graph inputs/outputs only: dim_param per dim ("" entries for
                        * fixed dims), NULL-terminated vector of length shape.rank, or NULL */
  NnpTensor *constant; /* owned ref: weights, Constant outputs, folded values; else NULL */
  int producer;        /* producing node index, -1 for graph inputs and constants */
  int n_consumers;     /* filled by nnp_graph_update_uses() */
  int *consumers;      /* node indices, ascending, a node listed once per use */
  gboolean is_input;   /* a graph input (not an initializer) */
  gboolean is_output;  /* a graph output */
};

struct _NnpGraph {
  char *name;
  int opset;         /* default-domain opset version */
  GPtrArray *nodes;  /* NnpNode*, owned */
  GPtrArray *values; /* NnpValue*, owned */
  GArray *inputs;    /* int value ids of graph inputs, in model order */
  GArray *outputs;   /* int value ids of graph outputs, in model order */

  /*< private >*/
  gint ref_count;
  GHashTable *by_name;      /* char* name -> NnpValue* */
  GHashTable *node_by_name; /* char* name -> NnpNode* */
  gpointer derived; /* NnpDerivedCache*, owned ref or NULL; shared with copies (derived.h) */
  struct _NnpGraphTail *tail; /* owned or NULL: the data-dependent tail a
                              * specialisation cut off (lib/graph/graph-edit.h) */
};

NnpGraph *nnp_graph_ref (NnpGraph *graph);
void nnp_graph_unref (NnpGraph *graph);

/* Value of that name, NULL when absent. */
NnpValue *nnp_graph_find_value (const NnpGraph *graph, const char *name);
/* A node list as parts name their nodes (nnstage nodes=, a remote part): "a,b,c" or
 * "first..last", each item a node name or a topological index ("12"; blanks around an
 * item are ignored).  Marks sel[] (graph->nodes->len entries, not cleared first) for
 * each node, with first..last every node between them in topological order.  FALSE with
 * NNP_ERROR_PLAN naming the problem: an empty item, an index out of range, last before
 * first, or the unknown names (up to 8 of them).  sel NULL: only checks that each name
 * is a node of graph, an index being taken as it is (it counts the nodes of a specialised
 * graph, which graph may not be yet). */
gboolean nnp_graph_select_nodes (const NnpGraph *graph, const char *nodes, gboolean *sel,
                                 GError **error);
static inline NnpValue *
nnp_graph_value (const NnpGraph *graph, int id)
{
  return id < 0 ? NULL : (NnpValue *) g_ptr_array_index (graph->values, id);
}
static inline NnpNode *
nnp_graph_node (const NnpGraph *graph, int index)
{
  return (NnpNode *) g_ptr_array_index (graph->nodes, index);
}


/* Input k of a node as a value; NULL when k is out of range or omitted. */
NnpValue *nnp_node_input (const NnpGraph *graph, const NnpNode *node, int k);
NnpValue *nnp_node_output (const NnpGraph *graph, const NnpNode *node, int k);

/* Attribute lookup (NULL when absent). */
const NnpAttr *nnp_node_get_attr (const NnpNode *node, const char *name);


G_DEFINE_AUTOPTR_CLEANUP_FUNC (NnpGraph, nnp_graph_unref)

G_END_DECLS
