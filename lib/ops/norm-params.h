/* libnnpipe internal: parsed parameters of the normalisation and loss ops
 * of lib/ops/ops-norm.c (LayerNormalization, InstanceNormalization,
 * GroupNormalization, MeanVarianceNormalization, LRN, LpNormalization,
 * NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss), read by
 * lib/backends/cpu/cpu-norm.c.
 *
 * Plain data (nnp_graph_copy() duplicates params with a byte copy). */
#pragma once

#include <nnpipe/tensor.h>

G_BEGIN_DECLS

typedef enum {
  NNP_LOSS_NONE,
  NNP_LOSS_SUM,
  NNP_LOSS_MEAN,
} NnpLossReduction;

typedef struct {
  NnpDType dtype; /* FLOAT32 or FLOAT64 */
  NnpShape in;    /* input 0 */
  float epsilon;  /* LayerNorm/InstanceNorm/GroupNorm; LRN: bias */
  float alpha, beta;
  int64_t size;                   /* LRN size; LpNormalization p; GroupNormalization groups */
  int axis;                       /* LayerNorm / LpNormalization axis */
  gboolean reduced[NNP_MAX_RANK]; /* MeanVarianceNormalization: axes */
  /* LayerNorm: scale (input 1) and bias (input 2) shapes broadcast over the
   * normalised dims in[axis..]: element strides (0 = broadcast) */
  int64_t scale_strides[NNP_MAX_RANK], bias_strides[NNP_MAX_RANK];
  gboolean per_group; /* GroupNormalization 18: scale/bias per group */
  /* losses */
  NnpLossReduction reduction;
  gboolean has_ignore;
  int64_t ignore_index;
} NnpNormParams;

G_END_DECLS
