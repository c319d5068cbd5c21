/* libnnpipe internal: graph passes run by nnp_graph_specialize(). */
#pragma once

#include <nnpipe/graph.h>

G_BEGIN_DECLS

/* Fusion pass on a specialised graph (static shapes, constants folded):
 *   1. BatchNormalization folded into a preceding Conv / ConvTranspose
 *      (new constant weight and bias values; the BN node is removed);
 *   2. an activation (Relu, Clip, LeakyRelu, HardSigmoid, HardSwish,
 *      Sigmoid) fused into a producing Conv / ConvTranspose / Gemm / MatMul
 *      (node->act; the activation node is removed).
 * Nodes whose inputs or act changed are appended to `changed` (NnpNode*,
 * owned by the graph: the caller re-infers them).  Value ids and node
 * indices change (nnp_graph_remove_nodes()).  Returns the number of fusions. */
int nnp_graph_fuse (NnpGraph *graph, GPtrArray *changed);

G_END_DECLS
