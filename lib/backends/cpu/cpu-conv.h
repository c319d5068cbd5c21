/* libnnpipe internal: what the CPU Conv (cpu-conv.c, cpu-conv-direct.c,
 * cpu-conv-dw.c) and ConvTranspose
 * (cpu-conv-transpose.c) kernels share: packed weights, scratch slots. */
#pragma once

#include "backends/cpu/cpu.h"
#include "backends/cpu/cpu-gemm.h"
#include "ops/conv-params.h"

G_BEGIN_DECLS

static inline int64_t
vol3 (const int64_t *d)
{
  return d[0] * d[1] * d[2];
}

/* Scratch slots are kept 64-byte aligned. */
static inline gsize
round_up_bytes (gsize n)
{
  return (n + 63) & ~(gsize) 63;
}

/* Run n_tasks tasks on min(threads, slots) scratch slots of slot_bytes each (cpu-slots.c)
 * (each slot run by one thread at a time, claiming tasks from a shared counter: a slot is
 * never shared, and which slot runs a task varies from run to run). */
typedef void (*SlotTaskFunc) (gpointer data, int64_t task, void *slot);

void nnp_cpu_run_in_slots (NnpThreadPool *pool, int64_t n_tasks, void *scratch, gsize slot_bytes,
                           SlotTaskFunc fn, gpointer data);

/* A run of output pixels of the blocked kernel: n pixels of one output row
 * from pixel out_off of a channel plane, reading its first one at float
 * in_off of the blocked copy (or of X, read in place). */
typedef struct {
  int64_t in_off, out_off;
  int n;
} NnpConvTile;

/* Per-node state of both kernels: constant weights packed once. */
typedef struct {
  const float *packed; /* group g at packed + g * group_floats: own_packed, or borrowed from
                        * the graph's derived-data cache (lives as long as the graph) */
  float *own_packed;   /* owned, or NULL */
  gsize group_floats;
  int32_t *koff;     /* Conv GEMM (1x1) algo and ConvTranspose: B row offsets q * HW for
                        * the indirect GEMM, or NULL */
  gboolean blocked;  /* packed holds the weights of cpu-conv-blocked.c (not the GEMM's) */
  gboolean winograd; /* packed holds the weights of cpu-conv-winograd.c */
  /* blocked: per tap (channel block, kh, kw), the float offset of its first
   * pixel in the blocked copy and the block's channels (owned), n_taps */
  int64_t *tap_off;
  int *tap_channels;
  int64_t n_taps;
  NnpConvTile *tiles; /* blocked: the output's tiles (owned), n_tiles */
  int64_t n_tiles;
} ConvState;

void nnp_cpu_conv_state_free (gpointer data);
/* The packed weights of a node whose weights are constant (else NULL). */
gpointer nnp_cpu_conv_prepare_common (const NnpGraph *graph, const NnpNode *node,
                                      gboolean transpose);
/* GEMM shape of one group: Conv: M = Cout/g rows, K = Cin/g * kvol;
 * ConvTranspose: M = Cout/g * kvol, K = Cin/g. */
void nnp_cpu_conv_group_mk (const NnpConvParams *p, gboolean transpose, int64_t *m, int64_t *k);

/* DIRECT algo (cpu-conv-direct.c): scratch bytes (packed_weights: the
 * node's weights were packed by prepare) and the run, with the ConvState
 * of prepare or NULL in call->state. */
gsize nnp_cpu_conv_direct_workspace (const NnpConvParams *p, gboolean packed_weights);
gboolean nnp_cpu_conv_direct_run (const NnpCpuCall *call, const NnpConvParams *p);

/* Output pixels along the AVX-512 lanes for few products per output K
 * (cpu-conv-direct.c): rows of pixels, input pixel j of row i for tap q at
 * in + koff[q] + i * in_rs + j, output channel c's at y + c * out_cs + i *
 * out_rs + j; a the packed A of the GEMM (one K block). */
#define NNP_CONV_LANES_MAX_K 256
typedef struct {
  const float *in;
  const int32_t *koff;
  const float *a, *bias; /* bias: m values, or NULL */
  float *y;
  int64_t m, k;
  int64_t n_rows, width, last_width, in_rs, out_rs, out_cs;
  /* a fused residual laid out as y, or NULL: y = sum_act (act (...) + sum) */
  const float *sum;
  /* set by nnp_cpu_conv_lanes_run() from the call: */
  NnpActivation act, sum_act;
  float act_alpha, act_beta, sum_alpha, sum_beta;
} NnpConvLanes;
/* K and the rows' width it takes (AVX-512; a fused residual only with Relu,
 * Clip or no activation before and after it) */
gboolean nnp_cpu_conv_lanes_ok (const NnpCpuCall *call, int64_t k, int64_t width);
/* lanes: the geometry; the activations and the pool from call */
void nnp_cpu_conv_lanes_run (const NnpConvLanes *lanes, const NnpCpuCall *call);
/* Output channels from which a 1x1 takes the lanes kernel.  Measured per
 * node inside the models, lanes / indirect GEMM: 96 <- 12, 18 and 16
 * channels 0.54-0.76, 144 <- 24 0.77, 192 <- 32 0.84, 384 <- 64 0.78, 576
 * <- 96 0.88, 192 <- 192 0.96; 48 <- 48 0.99, but 32 <- 16 1.06, 18 <- 96
 * 1.52, 42 <- 192 1.23: with a few panels the first one's input misses
 * (one plane per tap, no prefetch) are shared by too few. */
#define NNP_CONV_LANES_MIN_M 64
/* Pixels a row of the lanes kernel when a 1x1's plane is read as one long
 * row: a multiple of 64 (one tile) from 64 to 256, the chunk's input of k
 * channels at most 32 KB, in L1 for every panel. */
int64_t nnp_cpu_conv_lanes_chunk (int64_t k);

/* The fused residual of call->sum (see cpu.h) over the whole output, for the
 * paths that do not add it in their own stores. */
void nnp_cpu_conv_add_sum (const NnpCpuCall *call);

/* DIRECT algo in a blocked channel layout, and 1x1 GEMM-algo convolutions of
 * small planes (cpu-conv-blocked.c), where nnp_cpu_conv_blocked_ok(): the weights of all groups packed for it
 * (g_aligned_free), the scratch bytes, and the run. */
gboolean nnp_cpu_conv_blocked_ok (const NnpConvParams *p);
float *nnp_cpu_conv_blocked_pack (const NnpConvParams *p, const float *w);
/* The tap and tile tables of ConvState (tap_off, tap_channels, n_taps,
 * tiles, n_tiles), made once by prepare. */
void nnp_cpu_conv_blocked_plan (const NnpConvParams *p, ConvState *st);
gsize nnp_cpu_conv_blocked_workspace (const NnpConvParams *p);
gboolean nnp_cpu_conv_blocked_run (const NnpCpuCall *call, const NnpConvParams *p,
                                   const ConvState *st);
/* DIRECT algo for 3x3 stride-1 convolutions by Winograd F(4x4, 3x3)
 * (cpu-conv-winograd.c), where nnp_cpu_conv_winograd_ok() (tried before
 * the blocked kernel): the transformed weights of all groups
 * (g_aligned_free), the scratch bytes, and the run. */
gboolean nnp_cpu_conv_winograd_ok (const NnpConvParams *p);
float *nnp_cpu_conv_winograd_pack (const NnpConvParams *p, const float *w);
gsize nnp_cpu_conv_winograd_workspace (const NnpConvParams *p);
gboolean nnp_cpu_conv_winograd_run (const NnpCpuCall *call, const NnpConvParams *p,
                                    const ConvState *st);

/* The blocked copy both blocked kernels read (AVX-512 only): the cin
 * channels from x (NCHW planes of in_dims) into blocks of 16 channels of
 * hp x wp pixels, block floats apart, input pixel (i, j) at padded pixel
 * (i + pads_begin[1], j + pads_begin[2]), every other float of a block zero. */
void nnp_cpu_conv_blocked_pad (NnpThreadPool *pool, const NnpConvParams *p, const float *x,
                               int64_t cin, int64_t hp, int64_t wp, int64_t block, float *dst);

/* The GEMM of one (batch, group) index: Y = W x X (Conv, GEMM / IM2COL
 * algos) or cols = W^T x X (ConvTranspose); an NnpSgemm setup callback. */
typedef struct {
  const NnpConvParams *p;
  const ConvState *st; /* packed weights, or NULL: from w */
  const float *x, *w, *bias;
  float *y;
  int64_t m, k;
  gboolean transpose;
  float *cols;      /* ConvTranspose */
  const float *sum; /* Conv: a fused residual (NnpCpuCall.sum), or NULL */
} ConvGemmCtx;

void nnp_cpu_conv_gemm_setup (gpointer data, int64_t index, NnpSgemm *g);

/* Depthwise Conv (cpu-conv-dw.c): the run of algo NNP_CONV_ALGO_DEPTHWISE
 * and its scratch size (one padded input plane per slot). */
gboolean nnp_cpu_conv_depthwise_run (const NnpCpuCall *call, const NnpConvParams *p);
gsize nnp_cpu_conv_depthwise_workspace (const NnpConvParams *p);

G_END_DECLS
