/* libnnpipe internal: in-register transposes shared by the CPU kernels that
 * turn channel-innermost tiles into NCHW planes and back (cpu-conv-blocked.c,
 * cpu-conv-winograd.c) and pack GEMM panels (cpu-gemm.c).  Call only from
 * functions compiled for the ISA named in each (AVX2 or AVX-512F) and only
 * when the CPU has it (nnp_cpu_avx2_ok(), nnp_sgemm_has_avx512()). */
#pragma once

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>

/* out[t][c] = in[c][t] for an 8 x 8 block (rows of 8 floats): AVX2. */
__attribute__ ((target ("avx2,fma"), always_inline)) static inline void
nnp_transpose8_avx2 (__m256 r[8])
{
  __m256 t0 = _mm256_unpacklo_ps (r[0], r[1]), t1 = _mm256_unpackhi_ps (r[0], r[1]);
  __m256 t2 = _mm256_unpacklo_ps (r[2], r[3]), t3 = _mm256_unpackhi_ps (r[2], r[3]);
  __m256 t4 = _mm256_unpacklo_ps (r[4], r[5]), t5 = _mm256_unpackhi_ps (r[4], r[5]);
  __m256 t6 = _mm256_unpacklo_ps (r[6], r[7]), t7 = _mm256_unpackhi_ps (r[6], r[7]);
  __m256 u0 = _mm256_shuffle_ps (t0, t2, 0x44), u1 = _mm256_shuffle_ps (t0, t2, 0xee);
  __m256 u2 = _mm256_shuffle_ps (t1, t3, 0x44), u3 = _mm256_shuffle_ps (t1, t3, 0xee);
  __m256 u4 = _mm256_shuffle_ps (t4, t6, 0x44), u5 = _mm256_shuffle_ps (t4, t6, 0xee);
  __m256 u6 = _mm256_shuffle_ps (t5, t7, 0x44), u7 = _mm256_shuffle_ps (t5, t7, 0xee);

  r[0] = _mm256_permute2f128_ps (u0, u4, 0x20);
  r[1] = _mm256_permute2f128_ps (u1, u5, 0x20);
  r[2] = _mm256_permute2f128_ps (u2, u6, 0x20);
  r[3] = _mm256_permute2f128_ps (u3, u7, 0x20);
  r[4] = _mm256_permute2f128_ps (u0, u4, 0x31);
  r[5] = _mm256_permute2f128_ps (u1, u5, 0x31);
  r[6] = _mm256_permute2f128_ps (u2, u6, 0x31);
  r[7] = _mm256_permute2f128_ps (u3, u7, 0x31);
}

/* r[t] (lanes: o) -> r[o] (lanes: t) for a 16 x 16 block of floats.  The
 * maskz forms: GCC 12's plain ones warn of an undefined operand.  Always
 * inlined: called out of line, r[] goes through the stack (a third caller,
 * a depthwise kernel tried and dropped, got a call and a 1 KiB copy per
 * transpose). */
__attribute__ ((target ("avx512f"), always_inline)) static inline void
nnp_transpose16_avx512 (__m512 *r)
{
  const __mmask16 all = (__mmask16) -1;
  __m512 a[16], b[16];

  for (int i = 0; i < 8; i++) {
    a[2 * i] = _mm512_maskz_unpacklo_ps (all, r[2 * i], r[2 * i + 1]);
    a[2 * i + 1] = _mm512_maskz_unpackhi_ps (all, r[2 * i], r[2 * i + 1]);
  }
  for (int i = 0; i < 4; i++) {
    b[4 * i] = _mm512_maskz_shuffle_ps (all, a[4 * i], a[4 * i + 2], 0x44);
    b[4 * i + 1] = _mm512_maskz_shuffle_ps (all, a[4 * i], a[4 * i + 2], 0xee);
    b[4 * i + 2] = _mm512_maskz_shuffle_ps (all, a[4 * i + 1], a[4 * i + 3], 0x44);
    b[4 * i + 3] = _mm512_maskz_shuffle_ps (all, a[4 * i + 1], a[4 * i + 3], 0xee);
  }
  for (int j = 0; j < 4; j++) {
    __m512 c0 = _mm512_maskz_shuffle_f32x4 (all, b[j], b[4 + j], 0x44);
    __m512 c1 = _mm512_maskz_shuffle_f32x4 (all, b[j], b[4 + j], 0xee);
    __m512 c2 = _mm512_maskz_shuffle_f32x4 (all, b[8 + j], b[12 + j], 0x44);
    __m512 c3 = _mm512_maskz_shuffle_f32x4 (all, b[8 + j], b[12 + j], 0xee);
    r[j] = _mm512_maskz_shuffle_f32x4 (all, c0, c2, 0x88);
    r[4 + j] = _mm512_maskz_shuffle_f32x4 (all, c0, c2, 0xdd);
    r[8 + j] = _mm512_maskz_shuffle_f32x4 (all, c1, c3, 0x88);
    r[12 + j] = _mm512_maskz_shuffle_f32x4 (all, c1, c3, 0xdd);
  }
}

#endif
