/* libnnpipe internal: device-neutral op definitions.
 *
 * Everything op-specific that is not a kernel lives with the op, once:
 * arity (op-list.h), attribute parsing and shape/dtype inference (one
 * nnp_op_<id>_infer per op, in lib/ops/ops-*.c).
 *
 * Infer contract: called in topological order on a graph whose node inputs
 * already have dtype and static shape (and `constant` set where known).  It
 * must
 *   - validate inputs (count, dtype, rank) and attributes, failing with
 *     nnp_node_set_error(): NNP_ERROR_INVALID for inconsistent models,
 *     NNP_ERROR_UNSUPPORTED for valid ONNX we do not implement (a dtype, an
 *     attribute value, a data-dependent output shape);
 *   - set dtype and shape of every (non-omitted) output value;
 *   - parse attributes (and constant inputs such as Reshape's shape) into a
 *     g_malloc'ed plain struct stored in node->params (replacing any old one),
 *     so kernels never look up attributes at run time.
 * It may be called again on the same node (re-specialisation): free/replace
 * node->params. */
#pragma once

#include <nnpipe/graph.h>
#include <nnpipe/error.h>
#include <nnpipe/ops.h>

#include "graph/graph-edit.h"

G_BEGIN_DECLS

typedef gboolean (*NnpInferFunc) (NnpGraph *graph, NnpNode *node, GError **error);

typedef struct {
  const char *onnx_name;
  int min_inputs, max_inputs;
  int min_outputs, max_outputs;
  NnpInferFunc infer;
} NnpOpDef;

#define NNP_OP(ID, id, onnx, ...) \
  gboolean nnp_op_##id##_infer (NnpGraph *graph, NnpNode *node, GError **error);
#include <nnpipe/op-list.h>
#undef NNP_OP

/* Definition of an op; NULL for NNP_OP_UNKNOWN. */
const NnpOpDef *nnp_op_def (NnpOpType op);

/* Checks arity against the table, then calls the op's infer function. */
gboolean nnp_op_infer (NnpGraph *graph, NnpNode *node, GError **error);

/* numpy-style broadcast of n shapes into out; FALSE if incompatible. */
gboolean nnp_broadcast_shapes (const NnpShape *const *shapes, int n, NnpShape *out);

/* Replace node->params with a zeroed block of `size` bytes and return it. */
gpointer nnp_node_new_params (NnpNode *node, gsize size);
#define NNP_NODE_NEW_PARAMS(node, Type) ((Type *) nnp_node_new_params ((node), sizeof (Type)))

/* Read a constant int64/int32 tensor into a newly allocated int64 array
 * (for shape-like inputs: Reshape shape, Slice starts, axes...).  Returns
 * FALSE (error set, naming the node and input index) when the input is not
 * a constant or not an integer tensor. */
gboolean nnp_node_const_ints (const NnpGraph *graph, const NnpNode *node, int input, int64_t **ints,
                              int *n, GError **error);

/* Every infer error caused by an input whose *values* are needed and not
 * known (an output shape that depends on data: "input 0 ('boxes') must be a
 * constant (data-dependent shapes are not supported)") contains this text,
 * so the specialiser can tell such a node from a broken one and cut a
 * data-dependent tail there (lib/specialize/tail.c). */
#define NNP_DATA_DEPENDENT_NOTE "data-dependent shapes are not supported"
/* TRUE when error is such an error (NNP_ERROR_UNSUPPORTED with the note). */
gboolean nnp_error_is_data_dependent (const GError *error);

/* Normalise an axis in [-rank, rank) to [0, rank); FALSE when out of range. */
gboolean nnp_normalize_axis (int64_t axis, int rank, int *out);

/* Helpers of the shape ops (ops-shape.c), shared with ops-make.c. */
/* Set dtype and shape of output k (nothing when it is omitted). */
void nnp_op_set_output (NnpGraph *graph, NnpNode *node, int k, NnpDType dtype,
                        const NnpShape *shape);
/* Replace a value's constant; takes the reference `t`. */
void nnp_op_set_constant (NnpValue *v, NnpTensor *t);
/* A new 1-D tensor of n elements copied from data (NULL on failure). */
NnpTensor *nnp_op_new_1d (NnpDType dtype, int n, const void *data, gsize esize);
/* Shape-like int list to an NnpShape: every entry >= 0, rank <= NNP_MAX_RANK;
 * FALSE with the node's error naming `what` otherwise. */
gboolean nnp_op_ints_to_shape (const NnpNode *node, const char *what, const int64_t *v, int n,
                               NnpShape *shape, GError **error);

/* Bytes a node reads and writes (every input and output tensor once), from
 * inferred shapes (flops.c): the streaming term of the backends' cost
 * estimates. */
double nnp_node_io_bytes (const NnpGraph *graph, const NnpNode *node);

G_END_DECLS
