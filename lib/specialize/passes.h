/* libnnpipe internal: graph passes run by nnp_graph_specialize(). */
#pragma once

#include <nnpipe/graph.h>

G_BEGIN_DECLS

/* Fusion pass on a specialised graph (static shapes, constants folded),
 * repeated until nothing changes:
 *   1. BatchNormalization, and Mul / Add / Sub / Div by a scalar or
 *      per-channel constant, folded into a preceding Conv / ConvTranspose
 *      (new constant weight and bias values; the folded node is removed);
 *   2. HardSwish written out as x * Clip(x + 3, 0, 6) / 6 and activations
 *      (Relu, Clip, LeakyRelu, HardSigmoid, HardSwish, Sigmoid) fused into a
 *      producing Conv / ConvTranspose / Gemm / MatMul, or Add / Sub / Mul /
 *      Div of two computed tensors (node->act);
 *   3. a scalar Mul / Add / Sub / Div after a fused HardSwish folded into the
 *      activation (NNP_ACT_HARD_SWISH_AFFINE);
 *   4. a constant-zero Pad of the spatial dims only, read only by a Conv
 *      (auto_pad NOTSET), folded into the Conv's pads.
 * Nodes whose inputs or act changed are appended to `changed` (NnpNode*,
 * owned by the graph: the caller re-infers them).  Value ids and node
 * indices change (nnp_graph_remove_nodes()).  Returns the number of fusions. */
int nnp_graph_fuse (NnpGraph *graph, GPtrArray *changed);

/* Transpose(p) ... Transpose(inverse of p) around a chain of layout-agnostic
 * nodes (elementwise unary and binary ops with constant or equally
 * transposed operands, Concat, Pad) folded away (transpose-fold.c): the
 * chain runs in the first Transpose's input layout, with constants
 * transposed, Concat axes and Pad pads remapped; the chain's nodes are
 * re-inferred here.  Returns the number of folds, -1 on error (set). */
int nnp_graph_fold_transposes (NnpGraph *graph, GError **error);

/* A new constant value holding t (reference taken), named after `base`
 * (made unique) (fuse.c). */
NnpValue *nnp_graph_new_constant (NnpGraph *graph, const char *base, NnpTensor *t);

/* The 16-bit float pass (lib/specialize/half.c), before shape inference: float16
 * and bfloat16 constants become float32 (converted once per model, in the
 * derived-data cache), 16-bit graph inputs and Cast outputs get a Cast to
 * float32 for the ops that read them, 16-bit graph outputs are cast back.
 * Nodes are appended: sort the graph again.  Returns the number of changes. */
int nnp_graph_lower_half (NnpGraph *graph);
/* The quantisation pass (quant-fuse.c), run before nnp_graph_fuse():
 * QDQ-wrapped Conv / MatMul / Gemm become QLinearConv / QLinearMatMul, and
 * ConvInteger / MatMulInteger -> Cast -> Mul [-> Add] the fused
 * NnpConvIntegerToFloat / NnpMatMulIntegerToFloat.  Same contract as
 * nnp_graph_fuse(); returns the number of rewritten nodes. */
int nnp_graph_fuse_quant (NnpGraph *graph, GPtrArray *changed);
/* TRUE for a DequantizeLinear feeding a Conv / MatMul / Gemm whose result
 * is quantised again (a QDQ pattern): specialisation keeps it (does not fold
 * its constant weights to float) for the pass. */
gboolean nnp_graph_quant_keep_dq (const NnpGraph *graph, const NnpNode *node);

G_END_DECLS
