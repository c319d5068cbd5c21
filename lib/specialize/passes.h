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
 *      producing Conv / ConvTranspose / Gemm / MatMul (node->act);
 *   3. a scalar Mul / Add / Sub / Div after a fused HardSwish folded into the
 *      activation (NNP_ACT_HARD_SWISH_AFFINE).
 * Nodes whose inputs or act changed are appended to `changed` (NnpNode*,
 * owned by the graph: the caller re-infers them).  Value ids and node
 * indices change (nnp_graph_remove_nodes()).  Returns the number of fusions. */
int nnp_graph_fuse (NnpGraph *graph, GPtrArray *changed);

G_END_DECLS
