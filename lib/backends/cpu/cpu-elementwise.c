/* CPU kernels for the elementwise ops.
 *
 * Broadcasting ops walk the plan made at infer time (NnpBroadcast): the
 * output is rows x row_len, every input is a vector (stride 1) or a single
 * element (stride 0) along a row, so a row is one call of a typed loop with
 * one of four shapes: vector op vector, vector op scalar, scalar op vector,
 * scalar op scalar (plus "accumulate into the output" for the third and
 * later inputs of Max / Min / Sum).  Rows are cut into blocks that are the
 * work items of the thread pool; small tensors run on the calling thread.
 *
 * The typed loops are written so that gcc -O2 vectorises them (restrict
 * parameters, a fixed-length inner loop of 16, no branches that could trap);
 * check with -fopt-info-vec when changing them. */
#include "backends/cpu/cpu.h"
#include "backends/cpu/cpu-elementwise.h"
#include "backends/cpu/cpu-act.h"
#include "backends/act-scalar.h"
#include "ops/elementwise-params.h"

#include <math.h>
#include <string.h>

/* ---------------------------------------------------------------- work split */

/* Below this many output elements a kernel runs on the calling thread. */
#define PAR_MIN_ELEMS 32768

/* for (i = 0; i < n; i++) STMT, in runs of 16 that gcc -O2 vectorises */
#define VFOR(i, n, STMT) \
  do { \
    const gssize i##_n = (gssize) (n), i##_e = i##_n & ~(gssize) 15; \
    gssize i; \
    for (gssize i##_b = 0; i##_b < i##_e; i##_b += 16) \
      for (gssize i##_j = 0; i##_j < 16; i##_j++) { \
        i = i##_b + i##_j; \
        STMT; \
      } \
    for (i = i##_e; i < i##_n; i++) { \
      STMT; \
    } \
  } while (0)

void
nnp_cpu_run_items (NnpThreadPool *pool, gsize n_items, gsize item_elems, NnpParallelFunc fn,
                   gpointer data)
{
  gsize grain;

  if (n_items == 0)
    return;
  if (pool == NULL || n_items * item_elems < PAR_MIN_ELEMS || n_items == 1) {
    fn (data, 0, n_items, 0);
    return;
  }
  grain = MAX ((gsize) 1, (BLOCK_ELEMS / 2) / MAX (item_elems, (gsize) 1));
  nnp_parallel_for (pool, n_items, grain, fn, data);
}

/* ---------------------------------------------------------------- binary rows */

typedef void (*RowFn) (void *o, const void *a, const void *b, gsize n);

enum {
  ROW_VV,    /* o = a[i] op b[i] */
  ROW_VS,    /* o = a[i] op b[0] */
  ROW_SV,    /* o = a[0] op b[i] */
  ROW_SS,    /* o = a[0] op b[0] */
  ROW_ACC_V, /* o = o[i] op b[i] */
  ROW_ACC_S, /* o = o[i] op b[0] */
  N_ROW,
};

typedef struct {
  RowFn f[N_ROW];
} RowSet;

/* Typed loops take restrict parameters (that is what lets gcc vectorise)
 * and are wrapped in RowFn-shaped functions. */
#define DEF_ROWS_NOACC(NAME, T, OT, EXPR) \
  static inline void NAME##_vv_t (OT *restrict o, const T *restrict a, const T *restrict b, \
                                  gsize n) \
  { \
    VFOR (i, n, T x = a[i]; T y = b[i]; o[i] = (OT) (EXPR)); \
  } \
  static inline void NAME##_vs_t (OT *restrict o, const T *restrict a, const T y, gsize n) \
  { \
    VFOR (i, n, T x = a[i]; o[i] = (OT) (EXPR)); \
  } \
  static inline void NAME##_sv_t (OT *restrict o, const T x, const T *restrict b, gsize n) \
  { \
    VFOR (i, n, T y = b[i]; o[i] = (OT) (EXPR)); \
  } \
  static void NAME##_vv (void *o, const void *a, const void *b, gsize n) \
  { \
    NAME##_vv_t (o, a, b, n); \
  } \
  static void NAME##_vs (void *o, const void *a, const void *b, gsize n) \
  { \
    NAME##_vs_t (o, a, *(const T *) b, n); \
  } \
  static void NAME##_sv (void *o, const void *a, const void *b, gsize n) \
  { \
    NAME##_sv_t (o, *(const T *) a, b, n); \
  } \
  static void NAME##_ss (void *o_, const void *a, const void *b, gsize n) \
  { \
    const T x = *(const T *) a, y = *(const T *) b; \
    const OT v = (OT) (EXPR); \
    OT *o = o_; \
    for (gsize i = 0; i < n; i++) \
      o[i] = v; \
  }

#define DEF_ROWS(NAME, T, EXPR) \
  DEF_ROWS_NOACC (NAME, T, T, EXPR) \
  static inline void NAME##_av_t (T *restrict o, const T *restrict b, gsize n) \
  { \
    VFOR (i, n, T x = o[i]; T y = b[i]; o[i] = (T) (EXPR)); \
  } \
  static void NAME##_av (void *o, const void *a, const void *b, gsize n) \
  { \
    (void) a; \
    NAME##_av_t (o, b, n); \
  } \
  static inline void NAME##_as_t (T *restrict o, const T y, gsize n) \
  { \
    VFOR (i, n, T x = o[i]; o[i] = (T) (EXPR)); \
  } \
  static void NAME##_as (void *o, const void *a, const void *b, gsize n) \
  { \
    (void) a; \
    NAME##_as_t (o, *(const T *) b, n); \
  } \
  static const RowSet NAME = { { NAME##_vv, NAME##_vs, NAME##_sv, NAME##_ss, NAME##_av, \
                                 NAME##_as } };

#define DEF_ROWS_CMP(NAME, T, EXPR) \
  DEF_ROWS_NOACC (NAME, T, guint8, EXPR) \
  static const RowSet NAME = { { NAME##_vv, NAME##_vs, NAME##_sv, NAME##_ss, NULL, NULL } };

/* The expressions see x (left) and y (right) of type T; UT is the wrap type. */
#define E_ADD(T, UT, K) ((T) ((UT) x + (UT) y))
#define E_SUB(T, UT, K) ((T) ((UT) x - (UT) y))
#define E_MUL(T, UT, K) ((T) ((UT) x * (UT) y))
#define E_DIV(T, UT, K) E_DIV_##K (T, UT)
#define E_DIV_F(T, UT) (x / y)
/* integer division truncates (C); x / 0 gives 0 instead of a trap, and
 * MIN / -1 wraps */
#define E_DIV_S(T, UT) (y == 0 ? (T) 0 : y == -1 ? (T) (0 - (UT) x) : (T) (x / y))
#define E_DIV_U(T, UT) (y == 0 ? (T) 0 : (T) (x / y))
#define E_MAX(T, UT, K) (x > y ? x : y)
#define E_MIN(T, UT, K) (x < y ? x : y)

#define DEF_ARITH(sfx, T, UT, K, DT, LO, HI) \
  DEF_ROWS (add_##sfx, T, E_ADD (T, UT, K)) \
  DEF_ROWS (sub_##sfx, T, E_SUB (T, UT, K)) \
  DEF_ROWS (mul_##sfx, T, E_MUL (T, UT, K)) \
  DEF_ROWS (div_##sfx, T, E_DIV (T, UT, K)) \
  DEF_ROWS (max_##sfx, T, E_MAX (T, UT, K)) \
  DEF_ROWS (min_##sfx, T, E_MIN (T, UT, K)) \
  DEF_ROWS_CMP (eq_##sfx, T, x == y) \
  DEF_ROWS_CMP (lt_##sfx, T, x < y) \
  DEF_ROWS_CMP (gt_##sfx, T, x > y)

NUMERIC_TYPES (DEF_ARITH)
DEF_ROWS_CMP (eq_bool, guint8, (x != 0) == (y != 0))

/* float32 Add / Sub / Mul / Div: the same loops compiled for AVX2 (one
 * operation per element, so no FMA contraction: results are identical),
 * chosen at run time by nnp_cpu_avx2_ok(). */
#if defined(__x86_64__) || defined(__i386__)
#define DEF_ROWS_F32_AVX2(NAME, EXPR) \
  __attribute__ ((target ("avx2"))) static inline void NAME##_avx2_vv_t ( \
      float *restrict o, const float *restrict a, const float *restrict b, gsize n) \
  { \
    VFOR (i, n, float x = a[i]; float y = b[i]; o[i] = (EXPR)); \
  } \
  __attribute__ ((target ("avx2"))) static inline void NAME##_avx2_vs_t ( \
      float *restrict o, const float *restrict a, const float y, gsize n) \
  { \
    VFOR (i, n, float x = a[i]; o[i] = (EXPR)); \
  } \
  __attribute__ ((target ("avx2"))) static inline void NAME##_avx2_sv_t ( \
      float *restrict o, const float x, const float *restrict b, gsize n) \
  { \
    VFOR (i, n, float y = b[i]; o[i] = (EXPR)); \
  } \
  __attribute__ ((target ("avx2"))) static inline void NAME##_avx2_av_t ( \
      float *restrict o, const float *restrict b, gsize n) \
  { \
    VFOR (i, n, float x = o[i]; float y = b[i]; o[i] = (EXPR)); \
  } \
  __attribute__ ((target ("avx2"))) static inline void NAME##_avx2_as_t (float *restrict o, \
                                                                         const float y, gsize n) \
  { \
    VFOR (i, n, float x = o[i]; o[i] = (EXPR)); \
  } \
  __attribute__ ((target ("avx2"))) static void NAME##_avx2_vv (void *o, const void *a, \
                                                                const void *b, gsize n) \
  { \
    NAME##_avx2_vv_t (o, a, b, n); \
  } \
  __attribute__ ((target ("avx2"))) static void NAME##_avx2_vs (void *o, const void *a, \
                                                                const void *b, gsize n) \
  { \
    NAME##_avx2_vs_t (o, a, *(const float *) b, n); \
  } \
  __attribute__ ((target ("avx2"))) static void NAME##_avx2_sv (void *o, const void *a, \
                                                                const void *b, gsize n) \
  { \
    NAME##_avx2_sv_t (o, *(const float *) a, b, n); \
  } \
  __attribute__ ((target ("avx2"))) static void NAME##_avx2_av (void *o, const void *a, \
                                                                const void *b, gsize n) \
  { \
    (void) a; \
    NAME##_avx2_av_t (o, b, n); \
  } \
  __attribute__ ((target ("avx2"))) static void NAME##_avx2_as (void *o, const void *a, \
                                                                const void *b, gsize n) \
  { \
    (void) a; \
    NAME##_avx2_as_t (o, *(const float *) b, n); \
  } \
  static const RowSet NAME##_avx2 = { { NAME##_avx2_vv, NAME##_avx2_vs, NAME##_avx2_sv, NAME##_ss, \
                                        NAME##_avx2_av, NAME##_avx2_as } };
DEF_ROWS_F32_AVX2 (add_f32, x + y)
DEF_ROWS_F32_AVX2 (sub_f32, x - y)
DEF_ROWS_F32_AVX2 (mul_f32, x *y)
DEF_ROWS_F32_AVX2 (div_f32, x / y)
#define ROWS_F32_AVX2(op) (&op##_f32_avx2)
#else
#define ROWS_F32_AVX2(op) NULL
#endif

#define ENTRY(op) \
  static const RowSet *const op##_rows[DTYPE_TABLE_SIZE] = { NUMERIC_TYPES (ENTRY_##op) };
#define ENTRY_add(sfx, T, UT, K, DT, LO, HI) [DT] = &add_##sfx,
#define ENTRY_sub(sfx, T, UT, K, DT, LO, HI) [DT] = &sub_##sfx,
#define ENTRY_mul(sfx, T, UT, K, DT, LO, HI) [DT] = &mul_##sfx,
#define ENTRY_div(sfx, T, UT, K, DT, LO, HI) [DT] = &div_##sfx,
#define ENTRY_max(sfx, T, UT, K, DT, LO, HI) [DT] = &max_##sfx,
#define ENTRY_min(sfx, T, UT, K, DT, LO, HI) [DT] = &min_##sfx,
#define ENTRY_lt(sfx, T, UT, K, DT, LO, HI) [DT] = &lt_##sfx,
#define ENTRY_gt(sfx, T, UT, K, DT, LO, HI) [DT] = &gt_##sfx,
#define ENTRY_eq(sfx, T, UT, K, DT, LO, HI) [DT] = &eq_##sfx,
ENTRY (add)
ENTRY (sub)
ENTRY (mul)
ENTRY (div)
ENTRY (max)
ENTRY (min)
ENTRY (lt)
ENTRY (gt)
static const RowSet *const eq_rows[DTYPE_TABLE_SIZE] = {
  NUMERIC_TYPES (ENTRY_eq)[NNP_DTYPE_BOOL] = &eq_bool,
};

/* Pow: float32 ^ float32 is the common case; everything else goes through
 * double. */
static inline void
pow_f32_vs_t (float *restrict o, const float *restrict a, float y, gsize n)
{
  if (y == 2.f)
    VFOR (i, n, float x = a[i]; o[i] = x * x);
  else if (y == 1.f)
    VFOR (i, n, o[i] = a[i]);
  else if (y == 3.f)
    VFOR (i, n, float x = a[i]; o[i] = x * x * x);
  else if (y == 0.5f)
    for (gsize i = 0; i < n; i++)
      o[i] = sqrtf (a[i]);
  else
    for (gsize i = 0; i < n; i++)
      o[i] = powf (a[i], y);
}

static void
pow_f32_row (void *o, const void *a, gboolean va, const void *b, gboolean vb, gsize n)
{
  const float *x = a, *y = b;
  float *out = o;

  if (va && !vb) {
    pow_f32_vs_t (out, x, y[0], n);
    return;
  }
  for (gsize i = 0; i < n; i++)
    out[i] = powf (x[va ? i : 0], y[vb ? i : 0]);
}

/* One element of any numeric dtype as a double, and back. */
static double
load_double (const void *p, NnpDType dtype, gsize i)
{
  switch (dtype) {
#define LOAD_CASE(sfx, T, UT, K, DT, LO, HI) \
  case DT: return (double) ((const T *) p)[i];
    NUMERIC_TYPES (LOAD_CASE)
#undef LOAD_CASE
    default: return 0;
  }
}

static void
pow_generic_row (void *o, NnpDType dt, const void *a, gboolean va, const void *b, NnpDType dtb,
                 gboolean vb, gsize n)
{
  for (gsize i = 0; i < n; i++) {
    double r = pow (load_double (a, dt, va ? i : 0), load_double (b, dtb, vb ? i : 0));
    switch (dt) {
      case NNP_DTYPE_FLOAT32: ((float *) o)[i] = (float) r; break;
      case NNP_DTYPE_FLOAT64: ((double *) o)[i] = r; break;
      case NNP_DTYPE_INT32:
        ((gint32 *) o)[i] = isfinite (r) && fabs (r) < 2147483648.0 ? (gint32) r : G_MININT32;
        break;
      default:
        ((gint64 *) o)[i] =
            isfinite (r) && fabs (r) < 9223372036854775808.0 ? (gint64) r : G_MININT64;
        break;
    }
  }
}

/* ---------------------------------------------------------------- broadcast engine */

typedef struct _BcastJob BcastJob;
typedef enum {
  JOB_ROWSET, /* binary / variadic ops through a RowSet */
  JOB_POW,
  JOB_WHERE,
} JobKind;

struct _BcastJob {
  JobKind kind;
  const NnpBroadcast *bc;
  const RowSet *rs;
  guint8 *out;
  const guint8 *in[NNP_ELTWISE_MAX_INPUTS];
  gsize in_esize[NNP_ELTWISE_MAX_INPUTS];
  gsize out_esize;
  int64_t row_len, block, blocks_per_row;
  NnpDType dtype, dtype_b;
  NnpActivation act;
  float act_alpha, act_beta;
};

static void
where_row (guint8 *o, const guint8 *c, gboolean vc, const guint8 *x, gboolean vx, const guint8 *y,
           gboolean vy, gsize esize, gsize n)
{
  const gsize sc = vc, sx = vx, sy = vy;

#define WHERE_LOOP(T) \
  for (gsize i = 0; i < n; i++) \
    ((T *) o)[i] = c[i * sc] ? ((const T *) x)[i * sx] : ((const T *) y)[i * sy];
  switch (esize) {
    case 1: WHERE_LOOP (guint8); break;
    case 2: WHERE_LOOP (guint16); break;
    case 4: WHERE_LOOP (guint32); break;
    default: WHERE_LOOP (guint64); break;
  }
#undef WHERE_LOOP
}

/* Copy (broadcast) one input into the output row (single-input Max/Min/Sum). */
static void
copy_row (guint8 *o, const guint8 *a, gboolean va, gsize esize, gsize n)
{
  if (va) {
    memcpy (o, a, n * esize);
    return;
  }
  for (gsize i = 0; i < n; i++)
    memcpy (o + i * esize, a, esize);
}

static void
bcast_work (gpointer data, gsize begin, gsize end, int thread)
{
  const BcastJob *job = data;
  const NnpBroadcast *bc = job->bc;
  const int last = bc->rank - 1, n = bc->n_inputs;

  (void) thread;
  for (gsize item = begin; item < end; item++) {
    int64_t row = (int64_t) item / job->blocks_per_row;
    int64_t start = ((int64_t) item % job->blocks_per_row) * job->block;
    gsize len = (gsize) MIN (job->block, job->row_len - start);
    const guint8 *in[NNP_ELTWISE_MAX_INPUTS];
    gboolean vec[NNP_ELTWISE_MAX_INPUTS];
    int64_t off[NNP_ELTWISE_MAX_INPUTS];
    guint8 *o = job->out + (gsize) (row * job->row_len + start) * job->out_esize;
    int64_t r = row;

    for (int i = 0; i < n; i++)
      off[i] = start * bc->strides[i][last];
    for (int d = last - 1; d >= 0 && r > 0; d--) {
      int64_t idx = r % bc->dims[d];
      r /= bc->dims[d];
      for (int i = 0; i < n; i++)
        off[i] += idx * bc->strides[i][d];
    }
    for (int i = 0; i < n; i++) {
      in[i] = job->in[i] + (gsize) off[i] * job->in_esize[i];
      vec[i] = bc->strides[i][last] != 0;
    }

    switch (job->kind) {
      case JOB_ROWSET:
        if (n == 1) {
          copy_row (o, in[0], vec[0], job->out_esize, len);
          break;
        }
        job->rs->f[vec[0] ? (vec[1] ? ROW_VV : ROW_VS) : (vec[1] ? ROW_SV : ROW_SS)](o, in[0],
                                                                                     in[1], len);
        for (int i = 2; i < n; i++)
          job->rs->f[vec[i] ? ROW_ACC_V : ROW_ACC_S](o, NULL, in[i], len);
        break;
      case JOB_POW:
        if (job->dtype == NNP_DTYPE_FLOAT32 && job->dtype_b == NNP_DTYPE_FLOAT32)
          pow_f32_row (o, in[0], vec[0], in[1], vec[1], len);
        else
          pow_generic_row (o, job->dtype, in[0], vec[0], in[1], job->dtype_b, vec[1], len);
        break;
      case JOB_WHERE:
        where_row (o, in[0], vec[0], in[1], vec[1], in[2], vec[2], job->out_esize, len);
        break;
    }
    if (job->act != NNP_ACT_NONE)
      nnp_cpu_apply_activation ((float *) o, len, job->act, job->act_alpha, job->act_beta);
  }
}

static gboolean
run_bcast (const NnpCpuCall *call, JobKind kind, const RowSet *const *table, const RowSet *f32_avx2,
           GError **error)
{
  const NnpNode *node = call->node;
  const NnpBinaryParams *p = node->params;
  const NnpBroadcast *bc;
  NnpTensor *out = call->outputs[0];
  BcastJob job;
  gsize n_items;

  g_return_val_if_fail (p != NULL && out != NULL, FALSE);
  bc = &p->bc;
  memset (&job, 0, sizeof (job));
  job.kind = kind;
  job.bc = bc;
  job.dtype = p->dtype;
  job.dtype_b = p->dtype_b;
  if (kind == JOB_ROWSET) {
    job.rs = (int) p->dtype < DTYPE_TABLE_SIZE ? table[p->dtype] : NULL;
    if (p->dtype == NNP_DTYPE_FLOAT32 && f32_avx2 != NULL && nnp_cpu_avx2_ok ())
      job.rs = f32_avx2;
    if (job.rs == NULL) {
      nnp_node_set_error (error, NNP_ERROR_UNSUPPORTED, node, "no CPU kernel for dtype %s",
                          nnp_dtype_name (p->dtype));
      return FALSE;
    }
  }
  for (int i = 0; i < bc->n_inputs; i++) {
    const NnpTensor *t = call->inputs[i];
    g_return_val_if_fail (t != NULL, FALSE);
    job.in[i] = t->data;
    job.in_esize[i] = nnp_dtype_size (t->dtype);
  }
  job.out = out->data;
  job.out_esize = nnp_dtype_size (out->dtype);
  if (out->dtype == NNP_DTYPE_FLOAT32 && kind == JOB_ROWSET) {
    job.act = node->act;
    job.act_alpha = node->act_alpha;
    job.act_beta = node->act_beta;
  }
  if (bc->numel == 0)
    return TRUE;
  job.row_len = bc->dims[bc->rank - 1];
  job.block = MIN (job.row_len, BLOCK_ELEMS);
  job.blocks_per_row = (job.row_len + job.block - 1) / job.block;
  n_items = (gsize) (bc->numel / job.row_len * job.blocks_per_row);
  nnp_cpu_run_items (call->pool, n_items, (gsize) job.block, bcast_work, &job);
  return TRUE;
}

/* RUN_FN: the kernel's run function over the row functions of TABLE */
#define DEF_BCAST_RUN(RUN_FN, TABLE, F32_AVX2) \
  static gboolean RUN_FN (const NnpCpuCall *call, GError **error) \
  { \
    return run_bcast (call, JOB_ROWSET, TABLE, F32_AVX2, error); \
  }

DEF_BCAST_RUN (add_run, add_rows, ROWS_F32_AVX2 (add))
DEF_BCAST_RUN (sub_run, sub_rows, ROWS_F32_AVX2 (sub))
DEF_BCAST_RUN (mul_run, mul_rows, ROWS_F32_AVX2 (mul))
DEF_BCAST_RUN (div_run, div_rows, ROWS_F32_AVX2 (div))
DEF_BCAST_RUN (max_run, max_rows, NULL)
DEF_BCAST_RUN (min_run, min_rows, NULL)
DEF_BCAST_RUN (equal_run, eq_rows, NULL)
DEF_BCAST_RUN (less_run, lt_rows, NULL)
DEF_BCAST_RUN (greater_run, gt_rows, NULL)

const NnpCpuKernel nnp_cpu_add = { .run = add_run };
const NnpCpuKernel nnp_cpu_sub = { .run = sub_run };
const NnpCpuKernel nnp_cpu_mul = { .run = mul_run };
const NnpCpuKernel nnp_cpu_div = { .run = div_run };
const NnpCpuKernel nnp_cpu_max = { .run = max_run };
const NnpCpuKernel nnp_cpu_min = { .run = min_run };
const NnpCpuKernel nnp_cpu_sum = { .run = add_run }; /* variadic: the rows accumulate */
const NnpCpuKernel nnp_cpu_equal = { .run = equal_run };
const NnpCpuKernel nnp_cpu_less = { .run = less_run };
const NnpCpuKernel nnp_cpu_greater = { .run = greater_run };

static gboolean
pow_run (const NnpCpuCall *call, GError **error)
{
  return run_bcast (call, JOB_POW, NULL, NULL, error);
}

static gboolean
where_run (const NnpCpuCall *call, GError **error)
{
  return run_bcast (call, JOB_WHERE, NULL, NULL, error);
}

const NnpCpuKernel nnp_cpu_pow = { .run = pow_run };
const NnpCpuKernel nnp_cpu_where = { .run = where_run };

/* ---------------------------------------------------------------- unary ops */

typedef struct {
  float alpha, beta;
  guint8 lo[8], hi[8]; /* Clip bounds, raw element bytes */
  gboolean has_lo, has_hi;
} UnaryArgs;

typedef void (*UnaryFn) (void *o, const void *x, gsize n, const UnaryArgs *u);

/* NAME_t is the typed loop, NAME the UnaryFn.  EXPR sees x (T), alpha, beta. */
#define DEF_UNARY(NAME, T, EXPR) \
  static inline void NAME##_t (T *restrict o, const T *restrict in, gsize n, const T alpha, \
                               const T beta) \
  { \
    (void) alpha; \
    (void) beta; \
    VFOR (i, n, T x = in[i]; o[i] = (T) (EXPR)); \
  } \
  static void NAME (void *o, const void *x, gsize n, const UnaryArgs *u) \
  { \
    NAME##_t (o, x, n, (T) u->alpha, (T) u->beta); \
  }

/* both float types; EXPR_F for float, EXPR_D for double */
#define DEF_UNARY_FLOAT(name, EXPR_F, EXPR_D) \
  DEF_UNARY (name##_f32, float, EXPR_F) \
  DEF_UNARY (name##_f64, double, EXPR_D)

/* The activations' formulas: lib/backends/act-scalar.h */
DEF_UNARY_FLOAT (leaky_relu, nnp_act_leaky_relu (x, alpha), nnp_act_leaky_relu_f64 (x, alpha))
DEF_UNARY_FLOAT (hard_sigmoid, nnp_act_hard_sigmoid (x, alpha, beta),
                 nnp_act_hard_sigmoid_f64 (x, alpha, beta))
DEF_UNARY (hard_swish_f32_generic, float, nnp_act_hard_swish (x))
DEF_UNARY (hard_swish_f64, double, nnp_act_hard_swish_f64 (x))
DEF_UNARY (sigmoid_f64, double, nnp_act_sigmoid_f64 (x))
DEF_UNARY_FLOAT (tanh, tanhf (x), tanh (x))
DEF_UNARY (exp_f64, double, exp (x))

/* exp(x) for x already clamped to [-87, 88]: Cody-Waite range reduction
 * and a degree-6 polynomial (relative error ~1.2e-7), branch-free so that
 * it vectorises.  The clamp is a separate loop: with it inline gcc (with
 * -ftrapping-math) keeps the loop scalar. */
static inline float
exp_clamped (float x)
{
  float fn = (x * 1.44269504088896341f + 12582912.f) - 12582912.f; /* round(x / ln 2) */
  float r = x - fn * 0.693359375f;
  float p = 1.9875691500e-4f;
  gint32 bits;

  r = r - fn * -2.12194440e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.f;
  memcpy (&bits, &p, sizeof (bits));
  /* NaN (the clamp keeps it) must not reach the int conversion (undefined):
   * shift by 0, p is NaN already (found by fuzz-onnx-run) */
  bits += (gint32) (fn == fn ? fn : 0.f) * (1 << 23);
  memcpy (&p, &bits, sizeof (p));
  return p;
}

/* o = clamp (in, lo, hi) */
static inline void
clamp_t (float *restrict o, const float *restrict in, gsize n, const float lo, const float hi)
{
  VFOR (i, n, float x = in[i]; x = x < lo ? lo : x; o[i] = x > hi ? hi : x);
}

/* in place on x clamped to [-88, 87] (exp's argument is -x) */
static inline void
sigmoid_inplace_t (float *restrict o, gsize n)
{
  VFOR (i, n, o[i] = NNP_ACT_SIGMOID_F (o[i], exp_clamped));
}

static inline void
exp_inplace_t (float *restrict o, gsize n)
{
  VFOR (i, n, o[i] = exp_clamped (o[i]));
}

#if defined(__x86_64__) || defined(__i386__)
/* A float32 activation with the AVX2 code of the fused activations
 * (cpu-act.h); returns how many elements it did (a multiple of 8). */
__attribute__ ((target ("avx2,fma"))) static gsize
act_f32_avx2 (float *o, const float *x, gsize n, NnpActivation act)
{
  const __m256 zero = _mm256_setzero_ps ();
  gsize i;

  for (i = 0; i + 8 <= n; i += 8)
    _mm256_storeu_ps (o + i, nnp_act_avx2 (_mm256_loadu_ps (x + i), act, zero, zero));
  return i;
}
#endif

/* HardSwish: AVX2, then the scalar definition (gcc does not vectorise
 * x * clamp (v, 0, 1): it turns the multiply by the bound 1 into a branch). */
static void
hard_swish_f32 (void *o, const void *x, gsize n, const UnaryArgs *u)
{
#if defined(__x86_64__) || defined(__i386__)
  if (nnp_cpu_avx2_ok ()) {
    gsize done = act_f32_avx2 (o, x, n, NNP_ACT_HARD_SWISH);
    o = (float *) o + done;
    x = (const float *) x + done;
    n -= done;
  }
#endif
  hard_swish_f32_generic (o, x, n, u);
}

/* The two passes run over blocks that stay in L1.  o may be x (in place). */
static void
sigmoid_f32 (void *o, const void *x, gsize n, const UnaryArgs *u)
{
  (void) u;
#if defined(__x86_64__) || defined(__i386__)
  if (nnp_cpu_avx2_ok ()) {
    gsize done = act_f32_avx2 (o, x, n, NNP_ACT_SIGMOID);
    o = (float *) o + done;
    x = (const float *) x + done;
    n -= done;
  }
#endif
  for (gsize s = 0; s < n; s += 2048) {
    gsize m = MIN ((gsize) 2048, n - s);
    clamp_t ((float *) o + s, (const float *) x + s, m, -88.f, 87.f);
    sigmoid_inplace_t ((float *) o + s, m);
  }
}

static void
exp_f32 (void *o, const void *x, gsize n, const UnaryArgs *u)
{
  const float *in = x;
  float *out = o;

  (void) u;
  for (gsize s = 0; s < n; s += 2048) {
    gsize m = MIN ((gsize) 2048, n - s);
    clamp_t (out + s, in + s, m, -87.f, 88.f);
    exp_inplace_t (out + s, m);
    /* keep IEEE results outside the clamped range (overflow, underflow, NaN) */
    for (gsize i = s; i < s + m; i++)
      if (!(in[i] >= -87.f && in[i] <= 88.f))
        out[i] = expf (in[i]);
  }
}
DEF_UNARY_FLOAT (log, logf (x), log (x))
DEF_UNARY (erf_f32_generic, float, erff (x))
DEF_UNARY (erf_f64, double, erf (x))

#if defined(__x86_64__) || defined(__i386__)
/* Erf with cpu-act.h's nnp_erf_avx2; returns how many elements it did (a
 * multiple of 8). */
__attribute__ ((target ("avx2,fma"))) static gsize
erf_f32_avx2 (float *o, const float *x, gsize n)
{
  gsize i;

  for (i = 0; i + 8 <= n; i += 8)
    _mm256_storeu_ps (o + i, nnp_erf_avx2 (_mm256_loadu_ps (x + i)));
  return i;
}
#endif

static void
erf_f32 (void *o, const void *x, gsize n, const UnaryArgs *u)
{
#if defined(__x86_64__) || defined(__i386__)
  if (nnp_cpu_avx2_ok ()) {
    gsize done = erf_f32_avx2 (o, x, n);
    o = (float *) o + done;
    x = (const float *) x + done;
    n -= done;
  }
#endif
  erf_f32_generic (o, x, n, u);
}
DEF_UNARY_FLOAT (sqrt, sqrtf (x), sqrt (x))
DEF_UNARY_FLOAT (reciprocal, 1.f / x, 1. / x)
DEF_UNARY_FLOAT (floor, floorf (x), floor (x))
DEF_UNARY_FLOAT (ceil, ceilf (x), ceil (x))

/* Relu, Neg, Abs, Clip for every numeric type they accept. */
#define DEF_INT_UNARY(sfx, T, UT, K, DT, LO, HI) \
  DEF_UNARY (relu_##sfx, T, NNP_ACT_RELU_F (x)) \
  DEF_UNARY (neg_##sfx, T, E_NEG_##K (T, UT)) \
  DEF_UNARY (abs_##sfx, T, E_ABS_##K (T, UT)) \
  static inline void clip_##sfx##_t (T *restrict o, const T *restrict in, gsize n, const T lo, \
                                     const T hi) \
  { \
    VFOR (i, n, T x = in[i]; o[i] = NNP_ACT_CLIP_F (x, lo, hi)); \
  } \
  static void clip_##sfx (void *o, const void *x, gsize n, const UnaryArgs *u) \
  { \
    T lo = (T) (LO), hi = (T) (HI); \
    if (u->has_lo) \
      memcpy (&lo, u->lo, sizeof (T)); \
    if (u->has_hi) \
      memcpy (&hi, u->hi, sizeof (T)); \
    clip_##sfx##_t (o, x, n, lo, hi); \
  }
#define E_NEG_F(T, UT) (-x)
#define E_NEG_S(T, UT) ((T) (0 - (UT) x))
#define E_NEG_U(T, UT) ((T) (0 - (UT) x))
#define E_ABS_F(T, UT) (x < 0 ? -x : x)
#define E_ABS_S(T, UT) (x < 0 ? (T) (0 - (UT) x) : x)
#define E_ABS_U(T, UT) (x)

NUMERIC_TYPES (DEF_INT_UNARY)

#define FLOAT_TABLE(name) \
  static const UnaryFn name##_fns[DTYPE_TABLE_SIZE] = { \
    [NNP_DTYPE_FLOAT32] = name##_f32, \
    [NNP_DTYPE_FLOAT64] = name##_f64, \
  };
FLOAT_TABLE (leaky_relu)
FLOAT_TABLE (hard_sigmoid)
FLOAT_TABLE (hard_swish)
FLOAT_TABLE (sigmoid)
FLOAT_TABLE (tanh)
FLOAT_TABLE (exp)
FLOAT_TABLE (log)
FLOAT_TABLE (erf)
FLOAT_TABLE (sqrt)
FLOAT_TABLE (reciprocal)
FLOAT_TABLE (floor)
FLOAT_TABLE (ceil)

#define ENTRY_relu(sfx, T, UT, K, DT, LO, HI) [DT] = relu_##sfx,
#define ENTRY_neg(sfx, T, UT, K, DT, LO, HI) [DT] = neg_##sfx,
#define ENTRY_abs(sfx, T, UT, K, DT, LO, HI) [DT] = abs_##sfx,
#define ENTRY_clip(sfx, T, UT, K, DT, LO, HI) [DT] = clip_##sfx,
static const UnaryFn relu_fns[DTYPE_TABLE_SIZE] = { NUMERIC_TYPES (ENTRY_relu) };
static const UnaryFn neg_fns[DTYPE_TABLE_SIZE] = { NUMERIC_TYPES (ENTRY_neg) };
static const UnaryFn abs_fns[DTYPE_TABLE_SIZE] = { NUMERIC_TYPES (ENTRY_abs) };
static const UnaryFn clip_fns[DTYPE_TABLE_SIZE] = { NUMERIC_TYPES (ENTRY_clip) };

typedef struct {
  UnaryFn fn;
  const guint8 *in;
  guint8 *out;
  gsize esize;
  gsize numel;
  UnaryArgs args;
  NnpActivation act;
  float act_alpha, act_beta;
} UnaryJob;

static void
unary_work (gpointer data, gsize begin, gsize end, int thread)
{
  const UnaryJob *job = data;

  (void) thread;
  for (gsize item = begin; item < end; item++) {
    gsize start = item * BLOCK_ELEMS, n = MIN ((gsize) BLOCK_ELEMS, job->numel - start);
    guint8 *o = job->out + start * job->esize;
    job->fn (o, job->in + start * job->esize, n, &job->args);
    if (job->act != NNP_ACT_NONE)
      nnp_cpu_apply_activation ((float *) o, n, job->act, job->act_alpha, job->act_beta);
  }
}

static gboolean
run_unary (const NnpCpuCall *call, const UnaryFn *table, GError **error)
{
  const NnpNode *node = call->node;
  const NnpUnaryParams *p = node->params;
  const NnpTensor *x = call->inputs[0];
  NnpTensor *out = call->outputs[0];
  UnaryJob job;

  g_return_val_if_fail (p != NULL && x != NULL && out != NULL, FALSE);
  memset (&job, 0, sizeof (job));
  job.fn = (int) x->dtype < DTYPE_TABLE_SIZE ? table[x->dtype] : NULL;
  if (job.fn == NULL) {
    nnp_node_set_error (error, NNP_ERROR_UNSUPPORTED, node, "no CPU kernel for dtype %s",
                        nnp_dtype_name (x->dtype));
    return FALSE;
  }
  job.in = x->data;
  job.out = out->data;
  job.esize = nnp_dtype_size (x->dtype);
  job.numel = (gsize) nnp_tensor_numel (x);
  job.args.alpha = p->alpha;
  job.args.beta = p->beta;
  job.args.has_lo = p->has_min;
  job.args.has_hi = p->has_max;
  memcpy (job.args.lo, p->min_value, sizeof (job.args.lo));
  memcpy (job.args.hi, p->max_value, sizeof (job.args.hi));
  if (p->min_input >= 0 && p->min_input < node->n_inputs && call->inputs[p->min_input])
    memcpy (job.args.lo, call->inputs[p->min_input]->data, job.esize);
  if (p->max_input >= 0 && p->max_input < node->n_inputs && call->inputs[p->max_input])
    memcpy (job.args.hi, call->inputs[p->max_input]->data, job.esize);
  if (x->dtype == NNP_DTYPE_FLOAT32) {
    job.act = node->act;
    job.act_alpha = node->act_alpha;
    job.act_beta = node->act_beta;
  }
  nnp_cpu_run_items (call->pool, (job.numel + BLOCK_ELEMS - 1) / BLOCK_ELEMS, BLOCK_ELEMS,
                     unary_work, &job);
  return TRUE;
}

/* RUN_FN: the kernel's run function over the typed loops of TABLE */
#define DEF_UNARY_RUN(RUN_FN, TABLE) \
  static gboolean RUN_FN (const NnpCpuCall *call, GError **error) \
  { \
    return run_unary (call, TABLE, error); \
  }

DEF_UNARY_RUN (relu_run, relu_fns)
DEF_UNARY_RUN (leaky_relu_run, leaky_relu_fns)
DEF_UNARY_RUN (clip_run, clip_fns)
DEF_UNARY_RUN (hard_sigmoid_run, hard_sigmoid_fns)
DEF_UNARY_RUN (hard_swish_run, hard_swish_fns)
DEF_UNARY_RUN (sigmoid_run, sigmoid_fns)
DEF_UNARY_RUN (tanh_run, tanh_fns)
DEF_UNARY_RUN (exp_run, exp_fns)
DEF_UNARY_RUN (log_run, log_fns)
DEF_UNARY_RUN (erf_run, erf_fns)
DEF_UNARY_RUN (sqrt_run, sqrt_fns)
DEF_UNARY_RUN (reciprocal_run, reciprocal_fns)
DEF_UNARY_RUN (neg_run, neg_fns)
DEF_UNARY_RUN (abs_run, abs_fns)
DEF_UNARY_RUN (floor_run, floor_fns)
DEF_UNARY_RUN (ceil_run, ceil_fns)

const NnpCpuKernel nnp_cpu_relu = { .run = relu_run };
const NnpCpuKernel nnp_cpu_leaky_relu = { .run = leaky_relu_run };
const NnpCpuKernel nnp_cpu_clip = { .run = clip_run };
const NnpCpuKernel nnp_cpu_hard_sigmoid = { .run = hard_sigmoid_run };
const NnpCpuKernel nnp_cpu_hard_swish = { .run = hard_swish_run };
const NnpCpuKernel nnp_cpu_sigmoid = { .run = sigmoid_run };
const NnpCpuKernel nnp_cpu_tanh = { .run = tanh_run };
const NnpCpuKernel nnp_cpu_exp = { .run = exp_run };
const NnpCpuKernel nnp_cpu_log = { .run = log_run };
const NnpCpuKernel nnp_cpu_erf = { .run = erf_run };
const NnpCpuKernel nnp_cpu_sqrt = { .run = sqrt_run };
const NnpCpuKernel nnp_cpu_reciprocal = { .run = reciprocal_run };
const NnpCpuKernel nnp_cpu_neg = { .run = neg_run };
const NnpCpuKernel nnp_cpu_abs = { .run = abs_run };
const NnpCpuKernel nnp_cpu_floor = { .run = floor_run };
const NnpCpuKernel nnp_cpu_ceil = { .run = ceil_run };
