/* nnpipe: specialisation, a model made executable for concrete input shapes
 * (lib/specialize/). */
#pragma once

#include <glib.h>
#include <nnpipe/graph.h>
#include <nnpipe/model.h>

G_BEGIN_DECLS

/* The concrete shape of one graph input. */
typedef struct {
  const char *name;
  NnpShape shape;
} NnpInputShape;

typedef enum {
  NNP_SPECIALIZE_DEFAULT = 0,
  NNP_SPECIALIZE_NO_FUSION = 1 << 0, /* keep BatchNormalization and activations as nodes */
  /* a node whose output shape needs input values that are not constants
   * (NonMaxSuppression, NonZero, TopK's K, Range's limit... computed by the
   * network) is not refused: it and every node after it form the graph's
   * data-dependent tail, specialised at run time by its stage (stage.h,
   * nnp_stage_run_alloc(); docs/conformance.md "Shapes that depend on data") */
  NNP_SPECIALIZE_DYNAMIC_TAIL = 1 << 1,
} NnpSpecializeFlags;

/* Make an executable graph for concrete input shapes: infer every shape,
 * fold constants (Constant nodes, shape arithmetic), remove dead nodes and,
 * unless NO_FUSION, fold BatchNormalization into Conv and fuse activations.
 * Inputs not named in `shapes` must have static declared shapes.  Returns a
 * new graph (caller owns the reference) whose values all have static shapes
 * (but, with NNP_SPECIALIZE_DYNAMIC_TAIL, the graph outputs its data-dependent
 * tail makes: their shape is unknown, rank -1, until a stage runs).
 * Error messages start with the model name, as the loader's do. */
NnpGraph *nnp_model_specialize (NnpModel *model, const NnpInputShape *shapes, int n_shapes,
                                NnpSpecializeFlags flags, GError **error);

/* The one key of a set of input shapes (+ specialisation flags), used for
 * every cache keyed by shapes (profiles, plans, specialised graphs):
 * "x=1x3x640x640,y=1x4" in the given order (nnp_shape_to_string() of each),
 * "static" for none, "-nofusion" appended with NNP_SPECIALIZE_NO_FUSION.
 * New string (g_free). */
char *nnp_shapes_key (const NnpInputShape *shapes, int n_shapes, NnpSpecializeFlags flags);

/* The same on any graph (used by tests that build graphs by hand). */
NnpGraph *nnp_graph_specialize (const NnpGraph *graph, const NnpInputShape *shapes, int n_shapes,
                                NnpSpecializeFlags flags, GError **error);

G_END_DECLS
