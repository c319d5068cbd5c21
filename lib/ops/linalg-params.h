/* libnnpipe internal: parsed parameters of Einsum and Det
 * (lib/ops/ops-linalg.c), read by lib/backends/cpu/cpu-linalg.c.
 * Plain data (nnp_graph_copy() duplicates params with a byte copy). */
#pragma once

#include <nnpipe/tensor.h>

G_BEGIN_DECLS

#define NNP_EINSUM_MAX_INPUTS 8
#define NNP_EINSUM_MAX_LABELS 64

/* Einsum: every distinct label (a letter, or one dim of the ellipsis) gets
 * an id; inputs and the output list the label id of each of their dims. */
typedef struct {
  NnpDType dtype;
  int n_inputs;
  int n_labels;
  int64_t size[NNP_EINSUM_MAX_LABELS]; /* dim of each label */
  int rank[NNP_EINSUM_MAX_INPUTS];
  gint8 labels[NNP_EINSUM_MAX_INPUTS][NNP_MAX_RANK];
  gboolean bcast[NNP_EINSUM_MAX_INPUTS][NNP_MAX_RANK]; /* a size-1 dim broadcast */
  int out_rank;
  gint8 out_labels[NNP_MAX_RANK];
  /* Det: matrices of n x n */
  int64_t n, count;
} NnpLinalgParams;

G_END_DECLS
