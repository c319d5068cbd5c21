/* libnnpipe internal: the control-flow ops If, Loop and Scan
 * (lib/ops/ops-control.c), run by lib/backends/cpu/cpu-control.c.
 *
 * A subgraph attribute (NnpAttr.g) lists its own inputs first (NnpAttr.i of
 * them), then the outer-scope values its nodes read; the loader appended
 * those to the node's inputs, found again by name.  Shapes are static: a
 * subgraph is specialised for the shapes of what flows in, once at infer
 * (output shapes) and once by the kernel's prepare (the executor). */
#pragma once

#include <nnpipe/graph.h>

G_BEGIN_DECLS

#define NNP_SCAN_MAX_IO 16

typedef struct {
  /* If: -1 condition known at run time, else the constant branch (1 then) */
  int cond_const;
  /* Loop: N loop-carried values, K scan outputs; trip count / initial
   * condition when constant (-1 / -1 otherwise) */
  int n_state, n_scan;
  int64_t trip;
  int cond_init;
  int64_t iterations; /* Loop with scan outputs: exact count; Scan: sequence length */
  gboolean unrolled;  /* Loop: the body is specialised per iteration (its shapes need the
                       * iteration number as a constant); trip iterations at most */
  /* Scan: M scan inputs; axes and directions (normalised) */
  int n_scan_in;
  int in_axis[NNP_SCAN_MAX_IO], in_reverse[NNP_SCAN_MAX_IO];
  int out_axis[NNP_SCAN_MAX_IO], out_reverse[NNP_SCAN_MAX_IO];
} NnpControlParams;

/* Specialise `sub` (a subgraph attribute of node, with n_formal own inputs)
 * for formal inputs of the given dtypes and shapes (consts[k] non-NULL: a
 * constant value instead) and the outer values the node reads.  New graph
 * or NULL with the error naming the node and subgraph. */
NnpGraph *nnp_op_subgraph_specialize (const NnpGraph *parent, const NnpNode *node,
                                      const NnpAttr *sub, const NnpDType *dtypes,
                                      const NnpShape *shapes, NnpTensor *const *consts,
                                      GError **error);

/* Specialise graph g for its inputs `names` at `shapes` (n of them; the
 * others static): new graph or NULL with the error.  The ops sit below the
 * specialisation layer that shape-infers them, so it lends this function:
 * nnp_graph_specialize() installs it (lib/specialize/specialize.c) before any
 * shape inference runs, and nnp_op_subgraph_specialize() calls it. */
typedef NnpGraph *(*NnpSubgraphSpecializeFunc) (const NnpGraph *g, const char *const *names,
                                                const NnpShape *shapes, int n, GError **error);
void nnp_op_set_subgraph_specializer (NnpSubgraphSpecializeFunc func);

/* Loop bodies that need the iteration number as a constant are specialised
 * once per iteration, up to this many. */
#define NNP_LOOP_MAX_UNROLL 1024

G_END_DECLS
