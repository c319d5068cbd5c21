/* libnnpipe internal: the CPU backend's 8-bit integer GEMM (cpu-qgemm.c),
 * shared by the integer convolutions and matrix products (cpu-qconv.c).
 *
 *   C[i][j] = sum_k (S[i][k] - zs[i]) * (U[k][j] - zu[j])      (exact, int32)
 *
 * S (m x k) is the "row" operand, U (k x n) the "column" operand.  The
 * micro-kernels multiply unsigned U bytes by signed S bytes (the x86
 * u8 x s8 dot product), so S is stored as int8 and U as uint8: an operand
 * of the other signedness is shifted by 128 (x ^ 0x80) together with its
 * zero point, which leaves (x - z) unchanged.  The zero points enter as
 * rank-1 corrections of the plain sum:
 *   C = S.U - zu[j] * rowsum(S)[i] - zs[i] * colsum(U)[j] + k * zs[i] * zu[j]
 * with the row and column sums taken when an operand is packed.
 *
 * Micro-kernels, chosen once at run time (nnp_qgemm_isa()):
 *   AVX512-VNNI  8 x 32 tile, vpdpbusd on zmm;
 *   AVX-VNNI     4 x 16 tiles, vpdpbusd on ymm;
 *   AVX2         4 x 16 tiles, vpmaddubsw + vpmaddwd on the low 7 bits and
 *                the top bit of U separately (exact: vpmaddubsw's int16
 *                pair sums cannot saturate, 2 * 127 * 128 < 32768);
 *   portable C.
 * NNPIPE_CPU_GENERIC (any value) forces the portable kernel, and
 * NNPIPE_CPU_INT8=avx512vnni|avxvnni|avx2|c caps the choice (tests compare
 * them).
 *
 * Packed layouts (k rounded up to kp, a multiple of 4, with zero bytes):
 *   S panel of NNP_QGEMM_MR rows:   byte [q][r][t] = S[r][4q + t]   (32 bytes per q)
 *   U panel of NNP_QGEMM_NRP cols:  byte [q][c][t] = U[4q + t][c]   (64 bytes per q)
 * Rows / columns past m / n are zero. */
#pragma once

#include <glib.h>
#include <nnpipe/graph.h>

G_BEGIN_DECLS

#define NNP_QGEMM_MR 8   /* rows of an S panel and of a tile */
#define NNP_QGEMM_NRP 16 /* columns of a U panel */
#define NNP_QGEMM_NT 32  /* columns of a tile: two U panels */

typedef enum {
  NNP_QGEMM_C = 0,
  NNP_QGEMM_AVX2,
  NNP_QGEMM_AVXVNNI,
  NNP_QGEMM_AVX512VNNI,
} NnpQgemmIsa;

/* The kernel in use (decided once). */
NnpQgemmIsa nnp_qgemm_isa (void);
const char *nnp_qgemm_isa_name (NnpQgemmIsa isa);

static inline int64_t
nnp_qgemm_kp (int64_t k)
{
  return (k + 3) & ~(int64_t) 3;
}

/* Bytes of m rows of S packed (whole panels). */
static inline gsize
nnp_qgemm_s_size (int64_t m, int64_t k)
{
  return (gsize) ((m + NNP_QGEMM_MR - 1) / NNP_QGEMM_MR) * NNP_QGEMM_MR * nnp_qgemm_kp (k);
}

/* Bytes of n columns of U packed (whole panels, plus one spare panel so a
 * tile may read a pair). */
static inline gsize
nnp_qgemm_u_size (int64_t n, int64_t k)
{
  return (gsize) ((n + NNP_QGEMM_NRP - 1) / NNP_QGEMM_NRP + 1) * NNP_QGEMM_NRP * nnp_qgemm_kp (k);
}

/* Pack m x k of S (element (i, q) at src[i * rs + q]; uint8 when
 * `src_unsigned`, shifted to int8) into dst (nnp_qgemm_s_size bytes); row
 * sums (of the shifted values) into rowsum[m] when not NULL. */
void nnp_qgemm_pack_s (int64_t m, int64_t k, const guint8 *src, int64_t rs, gboolean src_unsigned,
                       gint8 *dst, int32_t *rowsum);

/* Pack k x n of U (element (q, j) at src[q * rs + j]; int8 when
 * `src_signed`, shifted to uint8) into dst (nnp_qgemm_u_size bytes); column
 * sums into colsum[n] when not NULL. */
void nnp_qgemm_pack_u (int64_t k, int64_t n, const guint8 *src, int64_t rs, gboolean src_signed,
                       guint8 *dst, int32_t *colsum);

/* Interleave 4 rows of n U bytes (r[t][j]) into q-group `q` of the panels
 * at dst (panel p at dst + p * kp * NNP_QGEMM_NRP); colsum[j] += the 4
 * bytes when colsum is not NULL.  Used by pack_u and the im2col packing. */
void nnp_qgemm_interleave_u (const guint8 *const r[4], int64_t n, int64_t kp, int64_t q,
                             guint8 *dst, int32_t *colsum);

/* 16 columns of 4 rows into one q-group of a U panel (dst: 64 bytes);
 * colsum[c] += the 4 bytes of column c when colsum is not NULL. */
void nnp_qgemm_interleave16 (const guint8 *r0, const guint8 *r1, const guint8 *r2, const guint8 *r3,
                             guint8 *dst, int32_t *colsum);

/* One tile: rows [0, NNP_QGEMM_MR) of the S panel `s` times columns
 * [0, NNP_QGEMM_NT) of the U panels u0 (columns 0..15) and u1 (16..31),
 * kp / 4 q-groups: tile[r * NNP_QGEMM_NT + c] = the plain int32 sums.
 * `cols` <= NNP_QGEMM_NT: columns that matter (u1 is not read when <= 16). */
void nnp_qgemm_tile (const gint8 *s, const guint8 *u0, const guint8 *u1, int64_t kp, int cols,
                     int32_t *tile);

/* What the epilogue makes of a tile. */
typedef enum {
  NNP_QGEMM_OUT_INT32,
  NNP_QGEMM_OUT_QUANT8, /* saturate (round_half_even ((float) v * mult) + y_zp) */
  NNP_QGEMM_OUT_FLOAT,  /* (float) v * scale + bias, then the activation */
} NnpQgemmOut;

/* The epilogue of one product: corrections, then the output.  Per-row
 * arrays are indexed by the row i in [0, m), per-column ones by j in
 * [0, n); a NULL array stands for zeros, a `*_per` FALSE array has one
 * element.  "Channel" arrays (bias, scale / mult) follow rows when
 * chan_rows, else columns. */
typedef struct {
  NnpQgemmOut out;
  int64_t k;
  const int32_t *rowsum; /* of S, needed when zu != 0 */
  const int32_t *colsum; /* of U, needed when zs != 0 */
  const int32_t *zs;     /* shifted S zero points */
  gboolean zs_per;
  const int32_t *zu; /* shifted U zero points */
  gboolean zu_per;
  gboolean chan_rows;
  const int32_t *ibias; /* int32 bias added to the sum (QLinearConv) */
  const float *fbias;   /* float bias added after scaling (OUT_FLOAT) */
  gboolean bias_per;
  const float *scale; /* OUT_QUANT8: the multiplier; OUT_FLOAT: the scale */
  gboolean scale_per;
  int32_t y_zp, y_lo, y_hi; /* OUT_QUANT8 */
  gboolean y_signed;
  NnpActivation act; /* OUT_FLOAT */
  float act_alpha, act_beta;
  /* C: element (i, j) at c + (i * ldc + j) * element size */
  void *c;
  int64_t ldc;
} NnpQgemmEpilogue;

/* Write rows [i0, i0 + mr) x columns [j0, j0 + nc) from a tile (as
 * nnp_qgemm_tile wrote it, tile column 0 = column j0). */
void nnp_qgemm_epilogue (const NnpQgemmEpilogue *e, const int32_t *tile, int64_t i0, int mr,
                         int64_t j0, int nc);

/* nnp_qgemm_tile () then nnp_qgemm_epilogue () on rows [i0, i0 + mr) and
 * columns [j0, j0 + cols); the AVX512-VNNI kernel does both in registers
 * where it can (channels along rows, one U zero point; activation none or
 * Relu), else `tile` (NNP_QGEMM_MR x NNP_QGEMM_NT int32) is used. */
void nnp_qgemm_tile_store (const NnpQgemmEpilogue *e, const gint8 *s, const guint8 *u0,
                           const guint8 *u1, int64_t kp, int64_t i0, int mr, int64_t j0, int cols,
                           int32_t *tile);

G_END_DECLS
