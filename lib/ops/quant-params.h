/* libnnpipe internal: parsed parameters of the quantisation ops, filled by
 * nnp_op_<id>_infer (lib/ops/ops-quant.c) into node->params and read by the
 * CPU kernels (lib/backends/cpu/cpu-quant.c, cpu-qconv.c).  Plain data: a
 * byte copy duplicates them. */
#pragma once

#include "ops/conv-params.h"

G_BEGIN_DECLS

/* QuantizeLinear / DequantizeLinear.  X is seen as [outer, axis_dim, inner]
 * around the quantisation axis (per tensor: outer = numel, axis_dim = inner
 * = 1).  The scale (and zero point) of element (o, a, i) is at
 *   o * scale_os + (a / block) * scale_as + i * scale_is
 * per tensor: all strides 0; per axis: scale_as = 1; blocked (opset 21
 * block_size): the scale has X's shape with ceil(axis_dim / block) along the
 * axis, scale_os = n_blocks * inner, scale_as = inner, scale_is = 1. */
typedef struct {
  NnpDType x_dtype, y_dtype;
  gboolean has_zp;
  int64_t outer, axis_dim, inner;
  int64_t block;
  int64_t scale_os, scale_as, scale_is;
} NnpQuantLinearParams;

/* What an integer convolution / matrix product writes. */
typedef enum {
  NNP_QOUT_INT32 = 0, /* ConvInteger, MatMulInteger: the exact int32 sums */
  NNP_QOUT_QUANT,     /* QLinearConv, QLinearMatMul: requantised to y's 8-bit type */
  NNP_QOUT_FLOAT,     /* the fused *IntegerToFloat ops: scale * sum + bias, activation */
} NnpQOut;

/* The operands of an integer convolution / matrix product, by input index
 * (-1: absent).  "x" is the data operand (Conv X, MatMul A), "w" the weight
 * operand (Conv W, MatMul B).  A "channel" is an output channel (Conv: dim
 * 1 of Y; MatMul: a column of B).  Counts are 1 (per tensor) or the number
 * of channels (per channel); x_zp_n is 1 or M (MatMul: per row of A). */
typedef struct {
  NnpQOut out;
  NnpDType x_dtype, w_dtype, y_dtype;
  int x, w, x_zp, w_zp;
  int x_scale, w_scale, y_scale, y_zp; /* QLinear* */
  int scale, bias;                     /* *IntegerToFloat (bias also QLinearConv's int32 B) */
  int64_t x_zp_n, w_zp_n, w_scale_n, scale_n, bias_n;
} NnpQOperands;

/* ConvInteger, QLinearConv, NnpConvIntegerToFloat. */
typedef struct {
  NnpConvParams conv;
  NnpQOperands q;
} NnpQConvParams;

/* MatMulInteger, QLinearMatMul, NnpMatMulIntegerToFloat. */
typedef struct {
  NnpMatMulParams mm;
  NnpQOperands q;
} NnpQMatMulParams;

G_END_DECLS
