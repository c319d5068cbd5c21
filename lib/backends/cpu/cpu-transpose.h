/* libnnpipe internal: in-register transposes shared by the CPU kernels that
 * turn channel-innermost tiles into NCHW planes (cpu-conv-blocked.c,
 * cpu-conv-winograd.c).  Call only from functions compiled for AVX-512F
 * and only when the CPU has it (nnp_sgemm_has_avx512()). */
#pragma once

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>

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
