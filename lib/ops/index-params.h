/* libnnpipe internal: parsed parameters of the indexing ops of
 * lib/ops/ops-index.c (GatherElements, ScatterElements, Scatter, GatherND,
 * ScatterND, Trilu, CumSum, Hardmax, EyeLike, OneHot, DepthToSpace,
 * SpaceToDepth, Tile, ReverseSequence, Size, CastLike), read by
 * lib/backends/cpu/cpu-index.c.
 *
 * Plain data (nnp_graph_copy() duplicates params with a byte copy). */
#pragma once

#include <nnpipe/tensor.h>

G_BEGIN_DECLS

typedef enum {
  NNP_REDUCTION_NONE,
  NNP_REDUCTION_ADD,
  NNP_REDUCTION_MUL,
  NNP_REDUCTION_MAX,
  NNP_REDUCTION_MIN,
} NnpReduction;

typedef struct {
  NnpDType dtype; /* data (input 0) element type */
  NnpDType to;    /* output element type when it differs (EyeLike, OneHot, CastLike) */
  int esize;      /* bytes per data element */
  int axis;       /* normalised axis (GatherElements, Scatter*, CumSum, Hardmax, OneHot,
                   * ReverseSequence: time axis) */
  int axis2;      /* ReverseSequence: batch axis */
  NnpShape in;    /* data shape */
  NnpShape idx;   /* indices / updates shape (Gather/Scatter*), output shape otherwise */
  NnpReduction reduction;
  int64_t k;      /* DepthToSpace/SpaceToDepth block size; GatherND batch_dims; EyeLike k;
                   * OneHot depth */
  gboolean flag;  /* Trilu upper; CumSum exclusive; DepthToSpace CRD mode;
                   * Hardmax coerced to 2-D (opset < 13) */
  gboolean flag2; /* CumSum reverse */
} NnpIndexParams;

G_END_DECLS
