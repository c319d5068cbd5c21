/* nnpipe OpenCL kernels: Conv (implicit GEMM tiled in local memory, and a
 * direct fallback) and ConvTranspose.  1-D convolutions arrive as 2-D ones
 * with H = 1.  Layout NCHW; weights [M, C/G, KH, KW] as in ONNX. */

typedef struct {
  int n, c, m, g;            /* batch, in channels, out channels, groups */
  int ih, iw, oh, ow;
  int kh, kw, sh, sw, dh, dw, ph, pw;
  int has_bias;
  int is_1x1;                /* kernel 1x1, stride 1, no padding: X is the B matrix */
} ConvP;

/* One output element per work item: any group count, depthwise included. */
__kernel void
conv_direct (__global const float *x, int xo, __global const float *w, int wo,
             __global const float *bias, int bo, __global float *y, int yo, ConvP p, Act act)
{
  int i = get_global_id (0);
  int total = p.n * p.m * p.oh * p.ow;
  int ox, oy, m, b, cg, mg, g;
  float acc;

  if (i >= total)
    return;
  ox = i % p.ow;
  oy = (i / p.ow) % p.oh;
  m = (i / (p.ow * p.oh)) % p.m;
  b = i / (p.ow * p.oh * p.m);
  cg = p.c / p.g;
  mg = p.m / p.g;
  g = m / mg;
  acc = p.has_bias ? bias[bo + m] : 0.0f;
  for (int c = 0; c < cg; c++) {
    __global const float *xp = x + xo + ((b * p.c + g * cg + c) * p.ih) * p.iw;
    __global const float *wp = w + wo + ((m * cg + c) * p.kh) * p.kw;
    for (int ky = 0; ky < p.kh; ky++) {
      int iy = oy * p.sh - p.ph + ky * p.dh;
      if (iy < 0 || iy >= p.ih)
        continue;
      for (int kx = 0; kx < p.kw; kx++) {
        int ix = ox * p.sw - p.pw + kx * p.dw;
        if (ix < 0 || ix >= p.iw)
          continue;
        acc += xp[iy * p.iw + ix] * wp[ky * p.kw + kx];
      }
    }
  }
  y[yo + i] = apply_act (acc, act);
}

/* Implicit GEMM per (batch, group): Y[m][p] = sum_k W[m][k] * im2col(X)[k][p],
 * K = C/G * KH * KW, P = OH * OW.  A 32x32 output tile per work-group of 8x8
 * items (4x4 outputs each), K in steps of 16 through local memory. */
#define CT_M NNP_OCL_TILE
#define CT_N NNP_OCL_TILE
#define CT_K 16

__kernel __attribute__ ((reqd_work_group_size (NNP_OCL_TILE_LOCAL, NNP_OCL_TILE_LOCAL, 1))) void
conv_gemm (__global const float *x, int xo, __global const float *w, int wo,
           __global const float *bias, int bo, __global float *y, int yo, ConvP p, Act act)
{
  __local float as[CT_K][CT_M + 1];
  __local float bs[CT_K][CT_N];
  int tx = get_local_id (0), ty = get_local_id (1);
  int lid = ty * 8 + tx;
  int n0 = get_group_id (0) * CT_N, m0 = get_group_id (1) * CT_M;
  int bg = get_group_id (2);
  int b = bg / p.g, g = bg % p.g;
  int cg = p.c / p.g, mg = p.m / p.g;
  int khw = p.kh * p.kw;
  int kk_total = cg * khw;
  int np = p.oh * p.ow;
  int plane = p.ih * p.iw;
  __global const float *xb = x + xo + (b * p.c + g * cg) * plane;
  __global const float *wb = w + wo + (g * mg) * kk_total;
  float acc[4][4];

  for (int i = 0; i < 4; i++)
    for (int j = 0; j < 4; j++)
      acc[i][j] = 0.0f;

  for (int k0 = 0; k0 < kk_total; k0 += CT_K) {
    for (int e = lid; e < CT_M * CT_K; e += 64) {
      int mm = e / CT_K, kk = e % CT_K;
      int m = m0 + mm, k = k0 + kk;
      as[kk][mm] = (m < mg && k < kk_total) ? wb[m * kk_total + k] : 0.0f;
    }
    for (int e = lid; e < CT_K * CT_N; e += 64) {
      int kk = e / CT_N, nn = e % CT_N;
      int pix = n0 + nn, k = k0 + kk;
      float v = 0.0f;
      if (pix < np && k < kk_total) {
        if (p.is_1x1) {
          v = xb[k * plane + pix];
        } else {
          int c = k / khw, r = k % khw;
          int ky = r / p.kw, kx = r % p.kw;
          int oy = pix / p.ow, ox = pix % p.ow;
          int iy = oy * p.sh - p.ph + ky * p.dh;
          int ix = ox * p.sw - p.pw + kx * p.dw;
          if (iy >= 0 && iy < p.ih && ix >= 0 && ix < p.iw)
            v = xb[c * plane + iy * p.iw + ix];
        }
      }
      bs[kk][nn] = v;
    }
    barrier (CLK_LOCAL_MEM_FENCE);
    for (int kk = 0; kk < CT_K; kk++) {
      float av[4], bv[4];
      for (int i = 0; i < 4; i++)
        av[i] = as[kk][ty + 8 * i];
      for (int j = 0; j < 4; j++)
        bv[j] = bs[kk][tx + 8 * j];
      for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++)
          acc[i][j] = mad (av[i], bv[j], acc[i][j]);
    }
    barrier (CLK_LOCAL_MEM_FENCE);
  }

  for (int i = 0; i < 4; i++) {
    int m = m0 + ty + 8 * i;
    float bias_v;
    if (m >= mg)
      continue;
    bias_v = p.has_bias ? bias[bo + g * mg + m] : 0.0f;
    for (int j = 0; j < 4; j++) {
      int pix = n0 + tx + 8 * j;
      if (pix < np)
        y[yo + (b * p.m + g * mg + m) * np + pix] = apply_act (acc[i][j] + bias_v, act);
    }
  }
}

/* ConvTranspose, gather form: out[o] = sum over (c, k) with
 * o = i * stride - pad + k * dilation.  Weights [C, M/G, KH, KW]. */
__kernel void
conv_transpose (__global const float *x, int xo, __global const float *w, int wo,
                __global const float *bias, int bo, __global float *y, int yo, ConvP p,
                Act act)
{
  int i = get_global_id (0);
  int total = p.n * p.m * p.oh * p.ow;
  int ox, oy, m, b, cg, mg, g, ml;
  float acc;

  if (i >= total)
    return;
  ox = i % p.ow;
  oy = (i / p.ow) % p.oh;
  m = (i / (p.ow * p.oh)) % p.m;
  b = i / (p.ow * p.oh * p.m);
  cg = p.c / p.g;
  mg = p.m / p.g;
  g = m / mg;
  ml = m % mg;
  acc = p.has_bias ? bias[bo + m] : 0.0f;
  for (int ky = 0; ky < p.kh; ky++) {
    int ty = oy + p.ph - ky * p.dh;
    int iy;
    if (ty < 0 || ty % p.sh != 0)
      continue;
    iy = ty / p.sh;
    if (iy >= p.ih)
      continue;
    for (int kx = 0; kx < p.kw; kx++) {
      int tx = ox + p.pw - kx * p.dw;
      int ix;
      if (tx < 0 || tx % p.sw != 0)
        continue;
      ix = tx / p.sw;
      if (ix >= p.iw)
        continue;
      for (int c = 0; c < cg; c++) {
        int ci = g * cg + c;
        acc += x[xo + ((b * p.c + ci) * p.ih + iy) * p.iw + ix]
            * w[wo + ((ci * mg + ml) * p.kh + ky) * p.kw + kx];
      }
    }
  }
  y[yo + i] = apply_act (acc, act);
}
