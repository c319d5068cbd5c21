/* libnnpipe internal: parsed parameters of Conv, ConvTranspose, MatMul and
 * Gemm, filled by nnp_op_<id>_infer (lib/ops/ops-conv.c) into node->params
 * and read by the CPU kernels (lib/backends/cpu/cpu-conv.c, cpu-matmul.c).
 *
 * Every struct is plain data (no pointers): nnp_graph_copy() duplicates
 * params with a byte copy. */
#pragma once

#include <nnpipe/graph.h>

G_BEGIN_DECLS

/* Spatial dims are always stored as 3 (D, H, W): a 2-D conv has D = 1, a
 * 1-D conv D = H = 1, with kernel 1, stride 1, dilation 1 and no padding on
 * the added dims. */
#define NNP_CONV_SPATIAL 3

typedef enum {
  NNP_CONV_ALGO_GEMM = 0,  /* 1x1, stride 1, no padding: W x X directly */
  NNP_CONV_ALGO_IM2COL,    /* general: im2col (packed on the fly) + GEMM */
  NNP_CONV_ALGO_DEPTHWISE, /* 2-D, one input channel per group: direct */
  NNP_CONV_ALGO_DIRECT,    /* 1-D/2-D: indirect GEMM on a padded, stride-phase-split copy of X */
} NnpConvAlgo;

/* Conv and ConvTranspose.
 *
 * Conv:          X [N, C, D, H, W], W [M, C/group, kD, kH, kW], B [M]
 *   out[o] = sum_k in[o * stride - pad_begin + k * dilation] * w[k]
 * ConvTranspose: X [N, C, D, H, W], W [C, M/group, kD, kH, kW], B [M]
 *   out[i * stride - pad_begin + k * dilation] += in[i] * w[k]
 * In both, in_* describe X, out_* the output; C = in_channels, M = out_channels. */
typedef struct {
  int n_spatial;    /* 1, 2 or 3 as in the model */
  NnpConvAlgo algo; /* Conv only */
  gboolean has_bias;
  int64_t batch;
  int64_t in_channels, out_channels, group;
  int64_t in_dims[NNP_CONV_SPATIAL];
  int64_t out_dims[NNP_CONV_SPATIAL];
  int64_t kernel[NNP_CONV_SPATIAL];
  int64_t strides[NNP_CONV_SPATIAL];
  int64_t dilations[NNP_CONV_SPATIAL];
  int64_t pads_begin[NNP_CONV_SPATIAL]; /* may be negative for ConvTranspose with
                                           * an output_shape larger than natural */
  int64_t pads_end[NNP_CONV_SPATIAL];
  int64_t output_padding[NNP_CONV_SPATIAL]; /* ConvTranspose */
} NnpConvParams;

/* MatMul (numpy semantics).  A 1-D A is [1, K] and a 1-D B [K, 1] (the added
 * dim is not in the output).  The output is batch x M x N, batch dims
 * broadcast; a_batch_strides / b_batch_strides give each operand's offset
 * in elements per batch index (0 for broadcast dims). */
typedef struct {
  int64_t m, n, k;
  int64_t n_batch; /* product of batch_dims (1 for none) */
  int batch_rank;
  int64_t batch_dims[NNP_MAX_RANK];
  int64_t a_batch_strides[NNP_MAX_RANK];
  int64_t b_batch_strides[NNP_MAX_RANK];
  gboolean fold_batch; /* B is not batched and A has no broadcast:
                                           * run as one (n_batch * m) x n GEMM */
} NnpMatMulParams;

/* Gemm: Y = alpha * A' x B' + beta * C, A' = transA ? A^T : A (M x K),
 * B' = transB ? B^T : B (K x N), C broadcast to M x N (element (i, j) at
 * i * c_rs + j * c_cs). */
typedef struct {
  int64_t m, n, k;
  gboolean trans_a, trans_b;
  float alpha, beta;
  gboolean has_c;
  int64_t c_rs, c_cs;
} NnpGemmParams;

/* Conv's attributes and output geometry for X and W of any dtype (no dtype
 * check; `b` may be NULL): the parsing Conv and the integer convolutions
 * (ops-quant.c) share.  p->algo is left 0. */
gboolean nnp_op_conv_geometry (const NnpNode *node, const NnpValue *x, const NnpValue *w,
                               const NnpValue *b, NnpConvParams *p, GError **error);
/* MatMul's broadcast geometry and output shape for A and B of any dtype. */
gboolean nnp_op_mat_mul_geometry (const NnpNode *node, const NnpValue *a, const NnpValue *b,
                                  NnpMatMulParams *p, NnpShape *out, GError **error);

G_END_DECLS
