/* libnnpipe internal: the CPU backend's single-precision GEMM.
 *
 *   C (m x n) = A (m x k) x B (k x n)  [ + beta * bias ]  [ activation ]
 *
 * A packed driver in the BLIS style: A is cut into MR-row panels and B into
 * NR-column panels, both k-blocked; a register-blocked MR x NR micro-kernel
 * (AVX2 + FMA when the CPU has it, portable C otherwise, chosen at run time)
 * does the work; with AVX-512 (and no NNPIPE_CPU_NO_AVX512) blocks of two
 * panels by two NR-column tiles (12 x 32) go through an AVX-512 kernel on
 * the same packed layouts, the edges through the AVX2 one.  Constant operands (weights) can be packed once with
 * nnp_sgemm_pack_a() / nnp_sgemm_pack_b(); the others are packed block by
 * block into the caller's scratch, or produced directly in packed form by a
 * callback (im2col).
 *
 * Scratch: nnp_sgemm_run() cuts its work into tasks and runs them on
 * nnp_sgemm_slots() scratch slots of NNP_SGEMM_SLOT_BYTES each, so the
 * scratch size does not depend on the thread count of the pool that runs it. */
#pragma once

#include <glib.h>
#include <nnpipe/graph.h>
#include "backends/cpu/threadpool.h"

G_BEGIN_DECLS

#define NNP_SGEMM_MR 6
#define NNP_SGEMM_NR 16
#define NNP_SGEMM_KC 256
#define NNP_SGEMM_MC 144
#define NNP_SGEMM_NC 256
/* the most scratch slots nnp_sgemm_slots() returns */
#define NNP_SGEMM_MAX_SLOTS 64
/* one slot: an A block (MC x KC), a B block (KC x NC) */
#define NNP_SGEMM_SLOT_FLOATS (NNP_SGEMM_MC * NNP_SGEMM_KC + NNP_SGEMM_KC * NNP_SGEMM_NC)
#define NNP_SGEMM_SLOT_BYTES (NNP_SGEMM_SLOT_FLOATS * sizeof (float))

typedef struct _NnpSgemm NnpSgemm;

/* Produce the packed B block for rows [k0, k0 + kc) and columns [n0, n0 + nc)
 * of B: for each NR-column panel p (column n0 + p * NR + j), element (k0 + q, .)
 * goes to dst[p * kc * NR + q * NR + j]; columns past n are zero. */
typedef void (*NnpSgemmPackB) (gpointer data, const NnpSgemm *g, int64_t k0, int64_t kc, int64_t n0,
                               int64_t nc, float *dst);

/* One multiplication.  Pointers are borrowed for the duration of the call. */
struct _NnpSgemm {
  int64_t m, n, k;
  /* A: packed with nnp_sgemm_pack_a() (a_packed != NULL) or element (i, q)
   * at a[i * a_rs + q * a_cs], scaled by alpha when packed here. */
  const float *a_packed;
  const float *a;
  int64_t a_rs, a_cs;
  float alpha;
  /* B: packed with nnp_sgemm_pack_b(), a callback, or element (q, j) at
   * b[q * b_rs + j * b_cs] */
  const float *b_packed;
  NnpSgemmPackB pack_b;
  gpointer pack_b_data;
  const float *b;
  int64_t b_rs, b_cs;
  /* C: element (i, j) at c[i * ldc + j] */
  float *c;
  int64_t ldc;
  /* epilogue: + beta * bias[i * bias_rs + j * bias_cs] (bias may be NULL;
   * strides may be 0 to broadcast), then the activation */
  const float *bias;
  int64_t bias_rs, bias_cs;
  float beta;
  NnpActivation act;
  float act_alpha, act_beta;
  /* the indirect driver only: after the epilogue, C = sum_act (C + sum), sum
   * element (i, j) at the same place as C's (a residual Add fused into a
   * convolution: cpu.h NnpCpuCall.sum), in the AVX-512 tiles' store or
   * per task while C is in cache; NULL for none */
  const float *sum;
  NnpActivation sum_act;
  float sum_alpha, sum_beta;
};

/* Called per batch item to point a copy of the base description at the
 * item's operands (index in [0, n_batch)). */
typedef void (*NnpSgemmSetup) (gpointer data, int64_t index, NnpSgemm *g);

/* Floats of a packed A / B. */
gsize nnp_sgemm_packed_a_size (int64_t m, int64_t k);
gsize nnp_sgemm_packed_b_size (int64_t k, int64_t n);
/* Pack element (i, q) = alpha * a[i * rs + q * cs] into dst (packed_a_size floats). */
void nnp_sgemm_pack_a (int64_t m, int64_t k, const float *a, int64_t rs, int64_t cs, float alpha,
                       float *dst);
/* Pack element (q, j) = alpha * b[q * rs + j * cs] into dst (packed_b_size floats). */
void nnp_sgemm_pack_b (int64_t k, int64_t n, const float *b, int64_t rs, int64_t cs, float alpha,
                       float *dst);

/* Number of scratch slots nnp_sgemm_run() can use (one per online CPU, at most 64). */
int nnp_sgemm_slots (void);
/* Scratch bytes for all slots. */
gsize nnp_sgemm_scratch_size (void);

/* Run n_batch multiplications (setup may be NULL when n_batch == 1) on the
 * pool.  scratch: nnp_sgemm_scratch_size() bytes, 64-byte aligned; it may be
 * NULL only when both A and B are packed. */
void nnp_sgemm_run (const NnpSgemm *g, int64_t n_batch, NnpSgemmSetup setup, gpointer data,
                    NnpThreadPool *pool, void *scratch);

/* Indirect GEMM for stride-1 convolutions (no im2col, no B packing): the
 * columns are `rows` x `cols` output positions; B element (q, (r, j)) is
 * b[koff[q] + r * b_row_stride + j] (reads may run up to 2 * NNP_SGEMM_NR - 1
 * floats past the last column of a row: keep that much readable margin).
 * C element (i, (r, j)) is g->c[i * g->ldc + r * cols + j].  When
 * b_row_stride > cols and the rows do not divide into whole tiles, the
 * columns are taken as one run over the padded rows (the columns past
 * `cols` computed and not stored), so short rows still use full tiles.  Uses g->m,
 * g->k, g->a_packed (required), c, ldc, bias/beta, act; ignores B fields.
 * Needs no scratch. */
void nnp_sgemm_run_indirect (const NnpSgemm *g, const float *b, const int32_t *koff,
                             int64_t b_row_stride, int64_t rows, int64_t cols, NnpThreadPool *pool);

/* nnp_sgemm_run_indirect() with a choice: overread_ok FALSE means B has no
 * readable margin after the last column of a row (the last tile of each
 * row is then gathered), e.g. a 1x1 convolution reading X in place with
 * koff[q] = q * HW, rows = 1, cols = HW. */
void nnp_sgemm_run_indirect_full (const NnpSgemm *g, const float *b, const int32_t *koff,
                                  int64_t b_row_stride, int64_t rows, int64_t cols,
                                  gboolean overread_ok, NnpThreadPool *pool);

/* Apply a fused activation in place to n floats, vectorised (AVX2) where
 * possible; same results as nnp_cpu_apply_activation(). */
void nnp_sgemm_activate (float *x, gsize n, NnpActivation act, float alpha, float beta);

/* x[i] = act (x[i] + y[i]) for n floats (a residual Add with its activation),
 * vectorised (AVX2) where possible; the same results as the Add kernel. */
void nnp_sgemm_add_act (float *x, const float *y, gsize n, NnpActivation act, float alpha,
                        float beta);

/* TRUE when the AVX-512 12x32 kernels run (see the top of this file). */
gboolean nnp_sgemm_has_avx512 (void);

/* Which micro-kernel runs: "avx512-fma", "avx2-fma" or "generic". */
const char *nnp_sgemm_kernel_name (void);

G_END_DECLS
