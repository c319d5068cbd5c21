/* libnnpipe internal: numbers shared by the OpenCL host code and the
 * kernels.  Written in the common subset of C99 and OpenCL C 1.2: the
 * ocl-*.c files include it, and the embedding step (embed-cl.py) puts it in
 * the prelude of every program, so host and kernels cannot disagree.  The
 * fused-activation codes are NnpActivation itself (include/nnpipe/graph.h),
 * copied into the prelude by the same step.
 *
 * Classic include guard (not #pragma once): this text is also compiled as
 * part of an OpenCL program source. */
#ifndef NNP_OCL_CODES_H
#define NNP_OCL_CODES_H

/* Largest rank of the broadcast, copy, reduce, resize and batch tables. */
#define NNP_OCL_MAX_RANK 8

/* Tiled conv_gemm / gemm_tiled: NNP_OCL_TILE x NNP_OCL_TILE outputs per
 * work-group of NNP_OCL_TILE_LOCAL x NNP_OCL_TILE_LOCAL items. */
#define NNP_OCL_TILE 32
#define NNP_OCL_TILE_LOCAL 8

/* unary_f32 `op` (kernels/elementwise.cl) */
enum {
  NNP_OCL_UN_COPY = 0,
  NNP_OCL_UN_RELU,
  NNP_OCL_UN_LEAKY_RELU,
  NNP_OCL_UN_CLIP,
  NNP_OCL_UN_HARD_SIGMOID,
  NNP_OCL_UN_HARD_SWISH,
  NNP_OCL_UN_SIGMOID,
  NNP_OCL_UN_TANH,
  NNP_OCL_UN_EXP,
  NNP_OCL_UN_LOG,
  NNP_OCL_UN_ERF,
  NNP_OCL_UN_SQRT,
  NNP_OCL_UN_RECIPROCAL,
  NNP_OCL_UN_NEG,
  NNP_OCL_UN_ABS,
  NNP_OCL_UN_FLOOR,
  NNP_OCL_UN_CEIL
};

/* binary_f32 / compare_f32 `op` (kernels/elementwise.cl) */
enum {
  NNP_OCL_BIN_ADD = 0,
  NNP_OCL_BIN_SUB,
  NNP_OCL_BIN_MUL,
  NNP_OCL_BIN_DIV,
  NNP_OCL_BIN_POW,
  NNP_OCL_BIN_MAX,
  NNP_OCL_BIN_MIN,
  NNP_OCL_BIN_FIRST, /* a (broadcast copy) */
  NNP_OCL_BIN_EQUAL,
  NNP_OCL_BIN_LESS,
  NNP_OCL_BIN_GREATER
};

/* reduce_rows_f32 / reduce_general_f32 `op` (kernels/nn.cl) */
enum { NNP_OCL_RED_SUM = 0, NNP_OCL_RED_MEAN, NNP_OCL_RED_MAX, NNP_OCL_RED_MIN };

/* pad_N `mode` (kernels/copy.cl) */
enum { NNP_OCL_PAD_CONSTANT = 0, NNP_OCL_PAD_REFLECT, NNP_OCL_PAD_EDGE, NNP_OCL_PAD_WRAP };

#endif /* NNP_OCL_CODES_H */
