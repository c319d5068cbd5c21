/* nnpipe OpenCL kernels: MatMul and Gemm as one strided batched GEMM:
 *   Y[b][m][n] = alpha * sum_k A[m][k] B[k][n] + beta * C[m][n]
 * with A[m][k] at a_off(b) + m * a_rs + k * a_cs (B likewise), batch offsets
 * from the broadcast batch dims, C (Gemm only) at m * c_rs + n * c_cs. */

typedef struct {
  int m, n, k;
  int a_rs, a_cs, b_rs, b_cs;
  int c_rs, c_cs, has_c;
  float alpha, beta;
  int batch_rank;
  int bdims[NNP_OCL_MAX_RANK];
  int a_bs[NNP_OCL_MAX_RANK];
  int b_bs[NNP_OCL_MAX_RANK];
} GemmP;

inline void
batch_offsets (GemmP p, int batch, int *ao, int *bo)
{
  int rest = batch;
  for (int d = p.batch_rank - 1; d >= 0; d--) {
    int c = rest % p.bdims[d];
    rest /= p.bdims[d];
    *ao += c * p.a_bs[d];
    *bo += c * p.b_bs[d];
  }
}

__kernel void
gemm_naive (__global const float *a, int ao, __global const float *b, int bo,
            __global const float *c, int co, __global float *y, int yo, GemmP p, Act act)
{
  int j = get_global_id (0), i = get_global_id (1), batch = get_global_id (2);
  float acc = 0.0f;
  int oa = ao, ob = bo;

  if (i >= p.m || j >= p.n)
    return;
  batch_offsets (p, batch, &oa, &ob);
  for (int k = 0; k < p.k; k++)
    acc = mad (a[oa + i * p.a_rs + k * p.a_cs], b[ob + k * p.b_rs + j * p.b_cs], acc);
  acc *= p.alpha;
  if (p.has_c)
    acc += p.beta * c[co + i * p.c_rs + j * p.c_cs];
  y[yo + (batch * p.m + i) * p.n + j] = apply_act (acc, act);
}

#define GT_M NNP_OCL_TILE
#define GT_N NNP_OCL_TILE
#define GT_K 16

__kernel __attribute__ ((reqd_work_group_size (NNP_OCL_TILE_LOCAL, NNP_OCL_TILE_LOCAL, 1))) void
gemm_tiled (__global const float *a, int ao, __global const float *b, int bo,
            __global const float *c, int co, __global float *y, int yo, GemmP p, Act act)
{
  __local float as[GT_K][GT_M + 1];
  __local float bs[GT_K][GT_N];
  int tx = get_local_id (0), ty = get_local_id (1);
  int lid = ty * 8 + tx;
  int n0 = get_group_id (0) * GT_N, m0 = get_group_id (1) * GT_M;
  int batch = get_group_id (2);
  int oa = ao, ob = bo;
  float acc[4][4];

  batch_offsets (p, batch, &oa, &ob);
  for (int i = 0; i < 4; i++)
    for (int j = 0; j < 4; j++)
      acc[i][j] = 0.0f;

  for (int k0 = 0; k0 < p.k; k0 += GT_K) {
    for (int e = lid; e < GT_M * GT_K; e += 64) {
      int mm, kk;
      if (p.a_cs == 1) {          /* row-major A: consecutive items read consecutive k */
        mm = e / GT_K;
        kk = e % GT_K;
      } else {
        kk = e / GT_M;
        mm = e % GT_M;
      }
      int m = m0 + mm, k = k0 + kk;
      as[kk][mm] = (m < p.m && k < p.k) ? a[oa + m * p.a_rs + k * p.a_cs] : 0.0f;
    }
    for (int e = lid; e < GT_K * GT_N; e += 64) {
      int kk, nn;
      if (p.b_cs == 1) {
        kk = e / GT_N;
        nn = e % GT_N;
      } else {
        nn = e / GT_K;
        kk = e % GT_K;
      }
      int n = n0 + nn, k = k0 + kk;
      bs[kk][nn] = (n < p.n && k < p.k) ? b[ob + k * p.b_rs + n * p.b_cs] : 0.0f;
    }
    barrier (CLK_LOCAL_MEM_FENCE);
    for (int kk = 0; kk < GT_K; kk++) {
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
    if (m >= p.m)
      continue;
    for (int j = 0; j < 4; j++) {
      int n = n0 + tx + 8 * j;
      float v;
      if (n >= p.n)
        continue;
      v = p.alpha * acc[i][j];
      if (p.has_c)
        v += p.beta * c[co + m * p.c_rs + n * p.c_cs];
      y[yo + (batch * p.m + m) * p.n + n] = apply_act (v, act);
    }
  }
}
