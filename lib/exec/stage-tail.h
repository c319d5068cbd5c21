/* libnnpipe internal: running the data-dependent tail of a specialised graph
 * (lib/exec/stage-tail.c; the tail is cut by lib/specialize/tail.c). */
#pragma once

#include <nnpipe/graph.h>
#include <nnpipe/tensor.h>

G_BEGIN_DECLS

typedef struct _NnpStageTail NnpStageTail;

/* The tail of graph (graph->tail must be set) for the graph outputs named in
 * outs[0..n_outs) (values of graph the tail makes).  Its inputs ("cuts")
 * are values of graph: nnp_stage_tail_get_cuts(). */
NnpStageTail *nnp_stage_tail_new (const NnpGraph *graph, const char *const *outs, int n_outs,
                                  GError **error);
void nnp_stage_tail_free (NnpStageTail *tail);
/* Names of the values the tail reads (NULL-terminated, borrowed): each is a
 * value of the specialised graph, a constant there, a graph input or
 * something the head makes. */
const char *const *nnp_stage_tail_get_cuts (NnpStageTail *tail);
/* Run it: cuts[k] holds the value of cut k (host memory); outputs[i]
 * receives a new host tensor for outs[i] (the caller unrefs). */
gboolean nnp_stage_tail_run (NnpStageTail *tail, NnpTensor *const *cuts, NnpTensor **outputs,
                             GError **error);

G_END_DECLS
