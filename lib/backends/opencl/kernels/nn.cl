/* nnpipe OpenCL kernels: BatchNormalization, pools, reductions, Softmax,
 * ArgMax, Resize. */

__kernel void
batchnorm_f32 (__global const float *x, int xo, __global const float *scale, int so,
               __global const float *bias, int bo, __global const float *mean, int mo,
               __global const float *var, int vo, __global float *y, int yo, int c,
               int inner, int total, float eps)
{
  int i = get_global_id (0);
  int ch;

  if (i >= total)
    return;
  ch = (i / inner) % c;
  y[yo + i] = (x[xo + i] - mean[mo + ch]) * (scale[so + ch] / sqrt (var[vo + ch] + eps))
      + bias[bo + ch];
}

typedef struct {
  int planes;
  int in[3];
  int out[3];
  int ksize[3];
  int stride[3];
  int dilation[3];
  int pad[3];
  int pad_end[3];
  int is_max;
  int count_include_pad;
} PoolP;

/* MaxPool / AveragePool: one output element per item, (d, h, w) spatial. */
__kernel void
pool_f32 (__global const float *x, int xo, __global float *y, int yo, PoolP p)
{
  int i = get_global_id (0);
  int total = p.planes * p.out[0] * p.out[1] * p.out[2];
  int o2, o1, o0, plane, count = 0;
  float acc;
  __global const float *xp;

  if (i >= total)
    return;
  o2 = i % p.out[2];
  o1 = (i / p.out[2]) % p.out[1];
  o0 = (i / (p.out[2] * p.out[1])) % p.out[0];
  plane = i / (p.out[2] * p.out[1] * p.out[0]);
  xp = x + xo + plane * p.in[0] * p.in[1] * p.in[2];
  acc = p.is_max ? -INFINITY : 0.0f;
  for (int k0 = 0; k0 < p.ksize[0]; k0++) {
    int i0 = o0 * p.stride[0] - p.pad[0] + k0 * p.dilation[0];
    for (int k1 = 0; k1 < p.ksize[1]; k1++) {
      int i1 = o1 * p.stride[1] - p.pad[1] + k1 * p.dilation[1];
      for (int k2 = 0; k2 < p.ksize[2]; k2++) {
        int i2 = o2 * p.stride[2] - p.pad[2] + k2 * p.dilation[2];
        if (i0 < 0 || i0 >= p.in[0] || i1 < 0 || i1 >= p.in[1] || i2 < 0 || i2 >= p.in[2])
          continue;
        float v = xp[(i0 * p.in[1] + i1) * p.in[2] + i2];
        if (p.is_max)
          acc = fmax (acc, v);
        else
          acc += v;
        count++;
      }
    }
  }
  if (!p.is_max) {
    if (p.count_include_pad) {
      /* taps inside the padded input [-pad_begin, in + pad_end) */
      int o[3];
      o[0] = o0;
      o[1] = o1;
      o[2] = o2;
      count = 1;
      for (int d = 0; d < 3; d++) {
        int n = 0;
        for (int k = 0; k < p.ksize[d]; k++) {
          int pos = o[d] * p.stride[d] - p.pad[d] + k * p.dilation[d];
          if (pos >= -p.pad[d] && pos < p.in[d] + p.pad_end[d])
            n++;
        }
        count *= n;
      }
    }
    acc = count > 0 ? acc / (float) count : 0.0f;
  }
  y[yo + i] = acc;
}

inline float
red_init (int op)
{
  return op == NNP_OCL_RED_MAX ? -INFINITY : op == NNP_OCL_RED_MIN ? INFINITY : 0.0f;
}

inline float
red_step (int op, float acc, float v)
{
  if (op == NNP_OCL_RED_MAX)
    return isnan (v) ? v : fmax (acc, v);
  if (op == NNP_OCL_RED_MIN)
    return isnan (v) ? v : fmin (acc, v);
  return acc + v;
}

/* rows x len, contiguous: one work-group per row, `scratch` = local size floats. */
__kernel void
reduce_rows_f32 (__global const float *x, int xo, __global float *y, int yo, int len, int op,
                 float scale, __local float *scratch)
{
  int row = get_group_id (0);
  int lid = get_local_id (0), ls = get_local_size (0);
  __global const float *xp = x + xo + row * len;
  float acc = red_init (op);

  for (int j = lid; j < len; j += ls)
    acc = red_step (op, acc, xp[j]);
  scratch[lid] = acc;
  barrier (CLK_LOCAL_MEM_FENCE);
  for (int s = ls / 2; s > 0; s >>= 1) {
    if (lid < s)
      scratch[lid] = red_step (op, scratch[lid], scratch[lid + s]);
    barrier (CLK_LOCAL_MEM_FENCE);
  }
  if (lid == 0)
    y[yo + row] = op == NNP_OCL_RED_MEAN ? scratch[0] * scale : scratch[0];
}

/* General reduction: merged groups dims[0..rank), reduced[d] flags; one output
 * element per item, looping over the reduced sub-space. */
typedef struct {
  int rank;
  int dims[NNP_OCL_MAX_RANK];
  int reduced[NNP_OCL_MAX_RANK];
  int count;
  int n_out;
} ReduceP;

__kernel void
reduce_general_f32 (__global const float *x, int xo, __global float *y, int yo, ReduceP p,
                    int op, float scale)
{
  int o = get_global_id (0);
  int strides[NNP_OCL_MAX_RANK];
  int base = 0, rest, s = 1;
  float acc = red_init (op);

  if (o >= p.n_out)
    return;
  for (int d = p.rank - 1; d >= 0; d--) {
    strides[d] = s;
    s *= p.dims[d];
  }
  rest = o;
  for (int d = p.rank - 1; d >= 0; d--) {
    if (p.reduced[d])
      continue;
    base += (rest % p.dims[d]) * strides[d];
    rest /= p.dims[d];
  }
  for (int r = 0; r < p.count; r++) {
    int off = base, rr = r;
    for (int d = p.rank - 1; d >= 0; d--) {
      if (!p.reduced[d])
        continue;
      off += (rr % p.dims[d]) * strides[d];
      rr /= p.dims[d];
    }
    acc = red_step (op, acc, x[xo + off]);
  }
  y[yo + o] = op == NNP_OCL_RED_MEAN ? acc * scale : acc;
}

/* Softmax / LogSoftmax over `dim` of outer x dim x inner: one (outer, inner)
 * line per item. */
__kernel void
softmax_f32 (__global const float *x, int xo, __global float *y, int yo, int outer, int dim,
             int inner, int is_log)
{
  int i = get_global_id (0);
  int o, in;
  __global const float *xp;
  __global float *yp;
  float mx = -INFINITY, sum = 0.0f;

  if (i >= outer * inner)
    return;
  o = i / inner;
  in = i % inner;
  xp = x + xo + o * dim * inner + in;
  yp = y + yo + o * dim * inner + in;
  for (int j = 0; j < dim; j++)
    mx = fmax (mx, xp[j * inner]);
  for (int j = 0; j < dim; j++)
    sum += exp (xp[j * inner] - mx);
  if (is_log) {
    float ls = log (sum);
    for (int j = 0; j < dim; j++)
      yp[j * inner] = xp[j * inner] - mx - ls;
  } else {
    float inv = 1.0f / sum;
    for (int j = 0; j < dim; j++)
      yp[j * inner] = exp (xp[j * inner] - mx) * inv;
  }
}

__kernel void
argmax_f32 (__global const float *x, int xo, __global long *y, int yo, int outer, int dim,
            int inner, int select_last)
{
  int i = get_global_id (0);
  int o, in, best = 0;
  float bv;
  __global const float *xp;

  if (i >= outer * inner)
    return;
  o = i / inner;
  in = i % inner;
  xp = x + xo + o * dim * inner + in;
  bv = xp[0];
  for (int j = 1; j < dim; j++) {
    float v = xp[j * inner];
    if (v > bv || (select_last && v == bv)) {
      bv = v;
      best = j;
    }
  }
  y[yo + i] = best;
}

/* Resize from per-axis tap tables: axis d has taps[d] taps per output
 * coordinate; idx/w hold them from tab_off[d] on (out[d] * taps[d] entries);
 * idx -1 marks a coordinate outside the crop (extrapolation value). */
typedef struct {
  int rank;
  int in[NNP_OCL_MAX_RANK];
  int out[NNP_OCL_MAX_RANK];
  int taps[NNP_OCL_MAX_RANK];
  int tab_off[NNP_OCL_MAX_RANK];
  int n_out;
  float extrapolation;
} ResizeP;

__kernel void
resize_f32 (__global const float *x, int xo, __global float *y, int yo,
            __global const int *idx, __global const float *wt, ResizeP p)
{
  int o = get_global_id (0);
  int coord[NNP_OCL_MAX_RANK], tap[NNP_OCL_MAX_RANK], istr[NNP_OCL_MAX_RANK];
  int rest, s = 1, combos = 1;
  float acc = 0.0f;

  if (o >= p.n_out)
    return;
  rest = o;
  for (int d = p.rank - 1; d >= 0; d--) {
    coord[d] = rest % p.out[d];
    rest /= p.out[d];
    istr[d] = s;
    s *= p.in[d];
    tap[d] = 0;
    combos *= p.taps[d];
    if (idx[p.tab_off[d] + coord[d] * p.taps[d]] < 0) {
      y[yo + o] = p.extrapolation;
      return;
    }
  }
  for (int c = 0; c < combos; c++) {
    int off = 0;
    float wv = 1.0f;
    for (int d = 0; d < p.rank; d++) {
      int e = p.tab_off[d] + coord[d] * p.taps[d] + tap[d];
      off += idx[e] * istr[d];
      wv *= wt[e];
    }
    acc += wv * x[xo + off];
    for (int d = p.rank - 1; d >= 0; d--) {
      if (++tap[d] < p.taps[d])
        break;
      tap[d] = 0;
    }
  }
  y[yo + o] = acc;
}
