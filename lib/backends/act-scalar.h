/* libnnpipe internal: THE scalar definition of each activation, for the
 * standalone ops (Relu, Clip, LeakyRelu, HardSigmoid, HardSwish, Sigmoid) and
 * the activations fused into a producer (NnpActivation, include/nnpipe/graph.h).
 *
 * Written in the common subset of C99 and OpenCL C 1.2: the CPU backend
 * includes it (its scalar loops and tails; only its AVX2 versions in
 * cpu-act.h are separate), and the OpenCL backend's embedding step
 * (lib/backends/opencl/embed-cl.py) puts it in the prelude of every program,
 * after the NnpActivation enum copied from graph.h.
 *
 * Each formula is a macro over any floating type (float, and double for the
 * CPU's float64 ops); the typed functions below are what callers use.
 * Max / min are compare-and-select, the semantics of the vector max / min
 * instructions (a NaN input gives the bound).
 *
 * Classic include guard (not #pragma once): this text is also compiled as
 * part of an OpenCL program source. */
#ifndef NNP_ACT_SCALAR_H
#define NNP_ACT_SCALAR_H

#ifndef __OPENCL_VERSION__
#include <math.h>
#include <nnpipe/graph.h>
#endif

#define NNP_ACT_MAX(a, b) ((a) > (b) ? (a) : (b))
#define NNP_ACT_MIN(a, b) ((a) < (b) ? (a) : (b))

/* The formulas.  x, alpha, beta of one floating type; `exp` the exponential
 * of that type; sixth and half 1/6 and 1/2 of that type. */
#define NNP_ACT_RELU_F(x) NNP_ACT_MAX (x, 0)
#define NNP_ACT_CLIP_F(x, lo, hi) NNP_ACT_MIN (NNP_ACT_MAX (x, lo), hi)
#define NNP_ACT_LEAKY_RELU_F(x, alpha) (NNP_ACT_MAX (x, 0) + (alpha) *NNP_ACT_MIN (x, 0))
#define NNP_ACT_HARD_SIGMOID_F(x, alpha, beta) \
  NNP_ACT_MIN (NNP_ACT_MAX ((alpha) * (x) + (beta), 0), 1)
#define NNP_ACT_HARD_SWISH_F(x, sixth, half) ((x) *NNP_ACT_HARD_SIGMOID_F (x, sixth, half))
#define NNP_ACT_SIGMOID_F(x, exp) (1 / (1 + exp (-(x))))

/* float32: CPU and OpenCL */

static inline float
nnp_act_relu (float x)
{
  return NNP_ACT_RELU_F (x);
}

static inline float
nnp_act_clip (float x, float lo, float hi)
{
  return NNP_ACT_CLIP_F (x, lo, hi);
}

static inline float
nnp_act_leaky_relu (float x, float alpha)
{
  return NNP_ACT_LEAKY_RELU_F (x, alpha);
}

static inline float
nnp_act_hard_sigmoid (float x, float alpha, float beta)
{
  return NNP_ACT_HARD_SIGMOID_F (x, alpha, beta);
}

static inline float
nnp_act_hard_swish (float x)
{
  return NNP_ACT_HARD_SWISH_F (x, 1.0f / 6.0f, 0.5f);
}

/* HardSwish followed by a scalar Mul / Add (fused only) */
static inline float
nnp_act_hard_swish_affine (float x, float alpha, float beta)
{
  return alpha * nnp_act_hard_swish (x) + beta;
}

static inline float
nnp_act_sigmoid (float x)
{
#ifdef __OPENCL_VERSION__
  return NNP_ACT_SIGMOID_F (x, exp);
#else
  return NNP_ACT_SIGMOID_F (x, expf);
#endif
}

/* x * (1 + erf(x / sqrt 2)) / 2: GELU (fused only) */
static inline float
nnp_act_gelu (float x)
{
#ifdef __OPENCL_VERSION__
  return 0.5f * x * (1.0f + erf (x * 0.70710678118654752f));
#else
  return 0.5f * x * (1.0f + erff (x * 0.70710678118654752f));
#endif
}

/* x * sigmoid(x): SiLU / Swish (fused only) */
static inline float
nnp_act_silu (float x)
{
  return x * nnp_act_sigmoid (x);
}

/* A fused activation (NNP_ACT_NONE: x). */
static inline float
nnp_act_apply (float x, NnpActivation act, float alpha, float beta)
{
  switch (act) {
    case NNP_ACT_RELU: return nnp_act_relu (x);
    case NNP_ACT_CLIP: return nnp_act_clip (x, alpha, beta);
    case NNP_ACT_LEAKY_RELU: return nnp_act_leaky_relu (x, alpha);
    case NNP_ACT_HARD_SIGMOID: return nnp_act_hard_sigmoid (x, alpha, beta);
    case NNP_ACT_HARD_SWISH: return nnp_act_hard_swish (x);
    case NNP_ACT_HARD_SWISH_AFFINE: return nnp_act_hard_swish_affine (x, alpha, beta);
    case NNP_ACT_SIGMOID: return nnp_act_sigmoid (x);
    case NNP_ACT_SILU: return nnp_act_silu (x);
    case NNP_ACT_GELU: return nnp_act_gelu (x);
    case NNP_ACT_NONE:
    default: return x;
  }
}

#ifndef __OPENCL_VERSION__
/* float64: the CPU's standalone ops */

static inline double
nnp_act_leaky_relu_f64 (double x, double alpha)
{
  return NNP_ACT_LEAKY_RELU_F (x, alpha);
}

static inline double
nnp_act_hard_sigmoid_f64 (double x, double alpha, double beta)
{
  return NNP_ACT_HARD_SIGMOID_F (x, alpha, beta);
}

static inline double
nnp_act_hard_swish_f64 (double x)
{
  return NNP_ACT_HARD_SWISH_F (x, 1.0 / 6.0, 0.5);
}

static inline double
nnp_act_sigmoid_f64 (double x)
{
  return NNP_ACT_SIGMOID_F (x, exp);
}
#endif

#endif /* NNP_ACT_SCALAR_H */
