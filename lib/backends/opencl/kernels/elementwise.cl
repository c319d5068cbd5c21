/* nnpipe OpenCL kernels: unary, broadcast binary / ternary ops, Cast.
 * Op codes: ocl-codes.h; activations: act-scalar.h (both in the prelude). */

__kernel void
unary_f32 (__global const float *x, int xo, __global float *y, int yo, int n, int op,
           float alpha, float beta)
{
  int i = get_global_id (0);
  float v, r;

  if (i >= n)
    return;
  v = x[xo + i];
  switch (op) {
    case NNP_OCL_UN_RELU: r = nnp_act_relu (v); break;
    case NNP_OCL_UN_LEAKY_RELU: r = nnp_act_leaky_relu (v, alpha); break;
    case NNP_OCL_UN_CLIP: r = nnp_act_clip (v, alpha, beta); break;
    case NNP_OCL_UN_HARD_SIGMOID: r = nnp_act_hard_sigmoid (v, alpha, beta); break;
    case NNP_OCL_UN_HARD_SWISH: r = nnp_act_hard_swish (v); break;
    case NNP_OCL_UN_SIGMOID: r = nnp_act_sigmoid (v); break;
    case NNP_OCL_UN_TANH: r = tanh (v); break;
    case NNP_OCL_UN_EXP: r = exp (v); break;
    case NNP_OCL_UN_LOG: r = log (v); break;
    case NNP_OCL_UN_ERF: r = erf (v); break;
    case NNP_OCL_UN_SQRT: r = sqrt (v); break;
    case NNP_OCL_UN_RECIPROCAL: r = 1.0f / v; break;
    case NNP_OCL_UN_NEG: r = -v; break;
    case NNP_OCL_UN_ABS: r = fabs (v); break;
    case NNP_OCL_UN_FLOOR: r = floor (v); break;
    case NNP_OCL_UN_CEIL: r = ceil (v); break;
    default: r = v; break;
  }
  y[yo + i] = r;
}

/* Broadcast iteration: output element i (row-major over dims) reads input k
 * at sum_d coord_d * s[k][d]. */
typedef struct {
  int rank;
  int dims[NNP_OCL_MAX_RANK];
  int s0[NNP_OCL_MAX_RANK];
  int s1[NNP_OCL_MAX_RANK];
  int s2[NNP_OCL_MAX_RANK];
} Bcast;

__kernel void
binary_f32 (__global const float *a, int ao, __global const float *b, int bo,
            __global float *y, int yo, Bcast bc, int n, int op, Act act)
{
  int i = get_global_id (0);
  int rest, ia = 0, ib = 0;
  float va, vb, r;

  if (i >= n)
    return;
  rest = i;
  for (int d = bc.rank - 1; d >= 0; d--) {
    int c = rest % bc.dims[d];
    rest /= bc.dims[d];
    ia += c * bc.s0[d];
    ib += c * bc.s1[d];
  }
  va = a[ao + ia];
  vb = b[bo + ib];
  switch (op) {
    case NNP_OCL_BIN_ADD: r = va + vb; break;
    case NNP_OCL_BIN_SUB: r = va - vb; break;
    case NNP_OCL_BIN_MUL: r = va * vb; break;
    case NNP_OCL_BIN_DIV: r = va / vb; break;
    case NNP_OCL_BIN_POW: r = pow (va, vb); break;
    case NNP_OCL_BIN_MAX: r = isnan (va) || isnan (vb) ? NAN : fmax (va, vb); break;
    case NNP_OCL_BIN_MIN: r = isnan (va) || isnan (vb) ? NAN : fmin (va, vb); break;
    default: r = va; break;
  }
  y[yo + i] = apply_act (r, act);
}

__kernel void
compare_f32 (__global const float *a, int ao, __global const float *b, int bo,
             __global uchar *y, int yo, Bcast bc, int n, int op)
{
  int i = get_global_id (0);
  int rest, ia = 0, ib = 0;
  float va, vb;
  int r;

  if (i >= n)
    return;
  rest = i;
  for (int d = bc.rank - 1; d >= 0; d--) {
    int c = rest % bc.dims[d];
    rest /= bc.dims[d];
    ia += c * bc.s0[d];
    ib += c * bc.s1[d];
  }
  va = a[ao + ia];
  vb = b[bo + ib];
  if (op == NNP_OCL_BIN_EQUAL)
    r = va == vb;
  else if (op == NNP_OCL_BIN_LESS)
    r = va < vb;
  else
    r = va > vb;
  y[yo + i] = (uchar) r;
}

__kernel void
where_f32 (__global const uchar *c, int co, __global const float *a, int ao,
           __global const float *b, int bo, __global float *y, int yo, Bcast bc, int n)
{
  int i = get_global_id (0);
  int rest, ic = 0, ia = 0, ib = 0;

  if (i >= n)
    return;
  rest = i;
  for (int d = bc.rank - 1; d >= 0; d--) {
    int k = rest % bc.dims[d];
    rest /= bc.dims[d];
    ic += k * bc.s0[d];
    ia += k * bc.s1[d];
    ib += k * bc.s2[d];
  }
  y[yo + i] = c[co + ic] ? a[ao + ia] : b[bo + ib];
}

/* Cast between float32, int32, int64, uint8, int8 and bool (uchar 0/1); the
 * 16-bit floats below. */
#define CAST(NAME, TIN, TOUT, EXPR)                                              \
  __kernel void NAME (__global const TIN *x, int xo, __global TOUT *y, int yo, int n) \
  {                                                                              \
    int i = get_global_id (0);                                                   \
    TIN v;                                                                       \
    if (i >= n)                                                                  \
      return;                                                                    \
    v = x[xo + i];                                                               \
    y[yo + i] = EXPR;                                                            \
  }

CAST (cast_f32_i32, float, int, (int) v)
CAST (cast_f32_i64, float, long, (long) v)
CAST (cast_f32_u8, float, uchar, (uchar) (int) v)
CAST (cast_f32_i8, float, char, (char) (int) v)
CAST (cast_f32_bool, float, uchar, (uchar) (v != 0.0f))
CAST (cast_i32_f32, int, float, (float) v)
CAST (cast_i64_f32, long, float, (float) v)
CAST (cast_u8_f32, uchar, float, (float) v)
CAST (cast_i8_f32, char, float, (float) v)
CAST (cast_bool_f32, uchar, float, (float) (v != 0))
CAST (cast_i32_i64, int, long, (long) v)
CAST (cast_i64_i32, long, int, (int) v)
CAST (cast_i64_bool, long, uchar, (uchar) (v != 0))
CAST (cast_i32_bool, int, uchar, (uchar) (v != 0))
CAST (cast_bool_i64, uchar, long, (long) (v != 0))
CAST (cast_bool_i32, uchar, int, (int) (v != 0))

/* 16-bit floats: float16 through vload_half / vstore_half_rte (core OpenCL,
 * no cl_khr_fp16 needed), bfloat16 as the upper half of a float32's bits;
 * to 16 bits rounds to nearest even, as the CPU backend (lib/half.c). */
__kernel void
cast_f16_f32 (__global const half *x, int xo, __global float *y, int yo, int n)
{
  int i = get_global_id (0);
  if (i < n)
    y[yo + i] = vload_half (xo + i, x);
}

__kernel void
cast_f32_f16 (__global const float *x, int xo, __global half *y, int yo, int n)
{
  int i = get_global_id (0);
  if (i < n)
    vstore_half_rte (x[xo + i], yo + i, y);
}

__kernel void
cast_bf16_f32 (__global const ushort *x, int xo, __global float *y, int yo, int n)
{
  int i = get_global_id (0);
  if (i < n)
    y[yo + i] = as_float ((uint) x[xo + i] << 16);
}

__kernel void
cast_f32_bf16 (__global const float *x, int xo, __global ushort *y, int yo, int n)
{
  int i = get_global_id (0);
  uint b;
  if (i >= n)
    return;
  b = as_uint (x[xo + i]);
  if ((b & 0x7fffffffu) > 0x7f800000u) /* NaN stays a quiet NaN */
    y[yo + i] = (ushort) ((b >> 16) | 0x40u);
  else
    y[yo + i] = (ushort) ((b + 0x7fffu + ((b >> 16) & 1u)) >> 16);
}
