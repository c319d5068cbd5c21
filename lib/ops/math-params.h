/* libnnpipe internal: parsed parameters of the math ops of ops-math.c
 * (trigonometric and hyperbolic functions, the activations Elu / Selu /
 * Celu / ThresholdedRelu / Shrink / Softplus / Softsign / Mish / Gelu,
 * Round, Sign, IsNaN, IsInf, Not, the bitwise and logical ops, Mod,
 * BitShift, GreaterOrEqual, LessOrEqual, PRelu, Mean), filled by
 * nnp_op_<id>_infer and read by lib/backends/cpu/cpu-math.c.
 *
 * Plain data (nnp_graph_copy() duplicates params with a byte copy). */
#pragma once

#include "ops/elementwise-params.h"

G_BEGIN_DECLS

typedef struct {
  NnpDType dtype;     /* element type of input 0 */
  NnpDType out_dtype; /* element type of the output */
  float alpha, beta;  /* Elu/Celu/ThresholdedRelu alpha; Selu alpha, gamma (beta);
                       * Shrink lambd (alpha), bias (beta) */
  int flag;           /* IsInf: bit 0 detect_negative, bit 1 detect_positive;
                       * Mod: fmod; BitShift: 1 = left; Gelu: 1 = tanh approximation */
  NnpBroadcast bc;    /* broadcasting ops (two or more inputs) */
} NnpMathParams;

G_END_DECLS
