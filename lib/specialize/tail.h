/* libnnpipe internal: the data-dependent tail of a specialisation
 * (lib/specialize/tail.c), cut by nnp_graph_specialize() with
 * NNP_SPECIALIZE_DYNAMIC_TAIL. */
#pragma once

#include <nnpipe/graph.h>

G_BEGIN_DECLS

/* During inference: TRUE when node reads a value made by a node flagged in
 * `tail` (indexed by node index): it belongs to the tail too. */
gboolean nnp_tail_reads_tail (const NnpGraph *graph, const NnpNode *node, const gboolean *tail);

/* After inference of graph (a copy of source being specialised): attach the
 * tail made of the nodes flagged in `tail` (graph->tail, lib/graph/graph-edit.h),
 * flag them in `remove`, flag is_output the head values the tail reads (so
 * that they stay, are not fused away and leave the head stage) and give the
 * graph outputs the tail makes an unknown shape.  `first` is the node where
 * the tail starts, `why` its inference error. */
void nnp_graph_cut_tail (NnpGraph *graph, const NnpGraph *source, const gboolean *tail,
                         gboolean *remove, const NnpNode *first, const GError *why);

/* TRUE for a graph output of graph that its tail makes (no static shape
 * until run time). */
gboolean nnp_tail_is_output (const NnpGraph *graph, const NnpValue *v);

/* TRUE when graph has no data-dependent tail; else FALSE and an
 * NNP_ERROR_UNSUPPORTED naming the outputs the tail makes and its first
 * node, for what needs fixed output shapes (plans, the elements). */
gboolean nnp_graph_refuse_tail (const NnpGraph *graph, const char *model_name, GError **error);

G_END_DECLS
