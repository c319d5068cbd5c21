/* CPU kernels of the math ops (lib/ops/ops-math.c, math-params.h).
 *
 * Unary ops run a typed loop over blocks of the flat tensor.  Broadcasting
 * ops walk the plan made at infer time (NnpBroadcast, as cpu-elementwise.c):
 * the output is rows x row_len and along a row every input is a vector
 * (stride 1) or one element (stride 0); a row block is one work item of the
 * thread pool.  float32 math is done in float (libm's f functions), float64
 * in double; integer arithmetic in the unsigned type of the same width. */
#include "backends/cpu/cpu.h"
#include "backends/cpu/cpu-elementwise.h"
#include "ops/math-params.h"

#include <math.h>
#include <string.h>

/* ---------------------------------------------------------------- unary */

typedef struct {
  NnpOpType op;
  const NnpMathParams *p;
  const guint8 *x;
  guint8 *y;
  gsize n;
} UnaryJob;

static inline float
softplus_f (float x)
{
  return x > 0 ? x + log1pf (expf (-x)) : log1pf (expf (x));
}

static inline double
softplus_d (double x)
{
  return x > 0 ? x + log1p (exp (-x)) : log1p (exp (x));
}

/* round half to even (ONNX Round) */
static inline float
round_even_f (float x)
{
  return nearbyintf (x);
}

static inline double
round_even_d (double x)
{
  return nearbyint (x);
}

#define FLOAT_UNARY_CASES(T, F, SOFTPLUS, ROUND) \
  case NNP_OP_COS: LOOP (F (cos) (x)); break; \
  case NNP_OP_SIN: LOOP (F (sin) (x)); break; \
  case NNP_OP_TAN: LOOP (F (tan) (x)); break; \
  case NNP_OP_ACOS: LOOP (F (acos) (x)); break; \
  case NNP_OP_ASIN: LOOP (F (asin) (x)); break; \
  case NNP_OP_ATAN: LOOP (F (atan) (x)); break; \
  case NNP_OP_COSH: LOOP (F (cosh) (x)); break; \
  case NNP_OP_SINH: LOOP (F (sinh) (x)); break; \
  case NNP_OP_ACOSH: LOOP (F (acosh) (x)); break; \
  case NNP_OP_ASINH: LOOP (F (asinh) (x)); break; \
  case NNP_OP_ATANH: LOOP (F (atanh) (x)); break; \
  case NNP_OP_SOFTPLUS: LOOP (SOFTPLUS (x)); break; \
  case NNP_OP_SOFTSIGN: LOOP (x / ((T) 1 + F (fabs) (x))); break; \
  case NNP_OP_ELU: LOOP (x < 0 ? a * (F (exp) (x) - (T) 1) : x); break; \
  case NNP_OP_SELU: LOOP (x <= 0 ? b * (a * F (exp) (x) - a) : b * x); break; \
  case NNP_OP_CELU: \
    LOOP (F (fmax) ((T) 0, x) + F (fmin) ((T) 0, a * (F (exp) (x / a) - (T) 1))); \
    break; \
  case NNP_OP_THRESHOLDED_RELU: LOOP (x > a ? x : (T) 0); break; \
  case NNP_OP_SHRINK: LOOP (x<-a ? x + b : x> a ? x - b : (T) 0); break; \
  case NNP_OP_MISH: LOOP (x *F (tanh) (SOFTPLUS (x))); break; \
  case NNP_OP_GELU: \
    if (p->flag) \
      LOOP ((T) 0.5 * x \
            * ((T) 1 + F (tanh) ((T) 0.7978845608028654 * (x + (T) 0.044715 * x * x * x)))); \
    else \
      LOOP ((T) 0.5 * x * ((T) 1 + F (erf) (x * (T) 0.7071067811865476))); \
    break; \
  case NNP_OP_ROUND: LOOP (ROUND (x)); break; \
  case NNP_OP_SIGN: LOOP (x > 0 ? (T) 1 : x < 0 ? (T) -1 : x); break; \
  default: \
    break;

#define FN_F(name) name##f
#define FN_D(name) name

static void
unary_float_work (gpointer data, gsize begin, gsize end, int thread)
{
  const UnaryJob *job = data;
  const NnpMathParams *p = job->p;
  gsize lo = begin * BLOCK_ELEMS, hi = MIN (end * BLOCK_ELEMS, job->n);

  (void) thread;
  if (p->dtype == NNP_DTYPE_FLOAT32) {
    const float *restrict xs = (const float *) job->x;
    float *restrict ys = (float *) job->y;
    const float a = p->alpha, b = p->beta;
#define LOOP(EXPR) \
  do { \
    for (gsize i = lo; i < hi; i++) { \
      const float x = xs[i]; \
      ys[i] = (EXPR); \
    } \
  } while (0)
    switch (job->op) {
      FLOAT_UNARY_CASES (float, FN_F, softplus_f, round_even_f)
    }
#undef LOOP
  } else {
    const double *restrict xs = (const double *) job->x;
    double *restrict ys = (double *) job->y;
    const double a = p->alpha, b = p->beta;
#define LOOP(EXPR) \
  do { \
    for (gsize i = lo; i < hi; i++) { \
      const double x = xs[i]; \
      ys[i] = (EXPR); \
    } \
  } while (0)
    switch (job->op) {
      FLOAT_UNARY_CASES (double, FN_D, softplus_d, round_even_d)
    }
#undef LOOP
  }
}

/* x < 0 of an element of kind K (S signed, U unsigned: never) */
#define NEG_S(x) ((x) < 0)
#define NEG_U(x) ((void) (x), 0)

/* Sign and Shrink of integers, IsNaN, IsInf, Not, BitwiseNot */
#define INT_SIGN_SHRINK(sfx, T, UT, K, DT, LO, HI) \
  case DT: { \
    const T *restrict xs = (const T *) job->x; \
    T *restrict ys = (T *) job->y; \
    if (job->op == NNP_OP_SIGN) { \
      for (gsize i = lo; i < hi; i++) \
        ys[i] = (T) (NEG_##K (xs[i]) ? -1 : xs[i] > 0 ? 1 : 0); \
    } else if (job->op == NNP_OP_BITWISE_NOT) { \
      for (gsize i = lo; i < hi; i++) \
        ys[i] = (T) ~(UT) xs[i]; \
    } else { \
      for (gsize i = lo; i < hi; i++) { \
        double x = (double) xs[i]; \
        ys[i] = (T) (x < -p->alpha ? x + p->beta : x > p->alpha ? x - p->beta : 0); \
      } \
    } \
    break; \
  }

static void
unary_other_work (gpointer data, gsize begin, gsize end, int thread)
{
  const UnaryJob *job = data;
  const NnpMathParams *p = job->p;
  gsize lo = begin * BLOCK_ELEMS, hi = MIN (end * BLOCK_ELEMS, job->n);
  guint8 *restrict yb = job->y;

  (void) thread;
  switch (job->op) {
    case NNP_OP_NOT:
      for (gsize i = lo; i < hi; i++)
        yb[i] = !job->x[i];
      return;
    case NNP_OP_IS_NAN:
    case NNP_OP_IS_INF: {
      gboolean neg = (p->flag & 1) != 0, pos = (p->flag & 2) != 0;
      for (gsize i = lo; i < hi; i++) {
        double x = p->dtype == NNP_DTYPE_FLOAT32 ? ((const float *) job->x)[i]
                                                 : ((const double *) job->x)[i];
        if (job->op == NNP_OP_IS_NAN)
          yb[i] = isnan (x) != 0;
        else
          yb[i] = isinf (x) && ((x > 0 && pos) || (x < 0 && neg));
      }
      return;
    }
    default: break;
  }
  switch (p->dtype) {
    INT_TYPES (INT_SIGN_SHRINK)
    default: break;
  }
}

static gboolean
unary_run (const NnpCpuCall *call, GError **error)
{
  const NnpMathParams *p = call->node->params;
  UnaryJob job = { call->node->op, p, call->inputs[0]->data, call->outputs[0]->data,
                   (gsize) nnp_tensor_numel (call->inputs[0]) };
  gboolean float_op =
      (p->dtype == NNP_DTYPE_FLOAT32 || p->dtype == NNP_DTYPE_FLOAT64) && p->out_dtype == p->dtype;

  (void) error;
  if (job.n == 0)
    return TRUE;
  nnp_cpu_run_items (call->pool, (job.n + BLOCK_ELEMS - 1) / BLOCK_ELEMS, BLOCK_ELEMS,
                     float_op ? unary_float_work : unary_other_work, &job);
  return TRUE;
}

#define UNARY_KERNEL(id) const NnpCpuKernel nnp_cpu_##id = { .run = unary_run };
UNARY_KERNEL (cos)
UNARY_KERNEL (sin)
UNARY_KERNEL (tan)
UNARY_KERNEL (acos)
UNARY_KERNEL (asin)
UNARY_KERNEL (atan)
UNARY_KERNEL (cosh)
UNARY_KERNEL (sinh)
UNARY_KERNEL (acosh)
UNARY_KERNEL (asinh)
UNARY_KERNEL (atanh)
UNARY_KERNEL (softplus)
UNARY_KERNEL (softsign)
UNARY_KERNEL (elu)
UNARY_KERNEL (selu)
UNARY_KERNEL (celu)
UNARY_KERNEL (thresholded_relu)
UNARY_KERNEL (shrink)
UNARY_KERNEL (mish)
UNARY_KERNEL (gelu)
UNARY_KERNEL (round)
UNARY_KERNEL (sign)
UNARY_KERNEL (is_nan)
UNARY_KERNEL (is_inf)
UNARY_KERNEL (not )
UNARY_KERNEL (bitwise_not)

/* ---------------------------------------------------------------- broadcasting */

typedef struct _BinJob BinJob;
/* o[i] = a[i * sa] op b[i * sb] for i < n; acc: o is also the left operand */
typedef void (*BinRow) (const BinJob *job, guint8 *o, const guint8 *a, gsize sa, const guint8 *b,
                        gsize sb, gsize n);

struct _BinJob {
  NnpOpType op;
  const NnpMathParams *p;
  const NnpBroadcast *bc;
  BinRow row;
  guint8 *out;
  const guint8 *in[NNP_ELTWISE_MAX_INPUTS];
  gsize esize, out_esize;
  int64_t row_len, block, blocks_per_row;
};

#define BOOL_ROW(NAME, EXPR) \
  static void NAME (const BinJob *job, guint8 *o, const guint8 *a, gsize sa, const guint8 *b, \
                    gsize sb, gsize n) \
  { \
    (void) job; \
    for (gsize i = 0; i < n; i++) { \
      gboolean x = a[i * sa] != 0, y = b[i * sb] != 0; \
      o[i] = (EXPR); \
    } \
  }
BOOL_ROW (and_row, x &&y)
BOOL_ROW (or_row, x || y)
BOOL_ROW (xor_row, x != y)

/* integer rows: bitwise ops, BitShift, Mod, comparisons, PRelu */
#define INT_ROWS(sfx, T, UT, K, DT, LO, HI) \
  static void int_row_##sfx (const BinJob *job, guint8 *o_, const guint8 *a_, gsize sa, \
                             const guint8 *b_, gsize sb, gsize n) \
  { \
    const T *a = (const T *) a_, *b = (const T *) b_; \
    T *o = (T *) o_; \
    guint8 *ob = o_; \
    const int bits = (int) sizeof (T) * 8; \
    switch (job->op) { \
      case NNP_OP_BITWISE_AND: \
        for (gsize i = 0; i < n; i++) \
          o[i] = (T) ((UT) a[i * sa] & (UT) b[i * sb]); \
        break; \
      case NNP_OP_BITWISE_OR: \
        for (gsize i = 0; i < n; i++) \
          o[i] = (T) ((UT) a[i * sa] | (UT) b[i * sb]); \
        break; \
      case NNP_OP_BITWISE_XOR: \
        for (gsize i = 0; i < n; i++) \
          o[i] = (T) ((UT) a[i * sa] ^ (UT) b[i * sb]); \
        break; \
      case NNP_OP_BIT_SHIFT: \
        for (gsize i = 0; i < n; i++) { \
          UT x = (UT) a[i * sa]; \
          guint64 s = (guint64) b[i * sb]; \
          o[i] = s >= (guint64) bits ? 0 : job->p->flag ? (T) (x << s) : (T) (x >> s); \
        } \
        break; \
      case NNP_OP_MOD: \
        for (gsize i = 0; i < n; i++) { \
          T x = a[i * sa], y = b[i * sb], r; \
          if (y == 0) \
            r = 0; \
          else if (NEG_##K ((T) -1) && y == (T) -1) \
            r = 0; \
          else \
            r = (T) (x % y); \
          if (!job->p->flag && r != 0 && (NEG_##K (r) != NEG_##K (y))) \
            r = (T) ((UT) r + (UT) y); \
          o[i] = r; \
        } \
        break; \
      case NNP_OP_GREATER_OR_EQUAL: \
        for (gsize i = 0; i < n; i++) \
          ob[i] = a[i * sa] >= b[i * sb]; \
        break; \
      case NNP_OP_LESS_OR_EQUAL: \
        for (gsize i = 0; i < n; i++) \
          ob[i] = a[i * sa] <= b[i * sb]; \
        break; \
      case NNP_OP_PRELU: \
        for (gsize i = 0; i < n; i++) { \
          T x = a[i * sa]; \
          o[i] = NEG_##K (x) ? (T) ((UT) x * (UT) b[i * sb]) : x; \
        } \
        break; \
      default: break; \
    } \
  }
INT_TYPES (INT_ROWS)

#define FLOAT_ROWS(sfx, T, F) \
  static void float_row_##sfx (const BinJob *job, guint8 *o_, const guint8 *a_, gsize sa, \
                               const guint8 *b_, gsize sb, gsize n) \
  { \
    const T *a = (const T *) a_, *b = (const T *) b_; \
    T *o = (T *) o_; \
    guint8 *ob = o_; \
    switch (job->op) { \
      case NNP_OP_MOD: \
        for (gsize i = 0; i < n; i++) \
          o[i] = F (fmod) (a[i * sa], b[i * sb]); \
        break; \
      case NNP_OP_GREATER_OR_EQUAL: \
        for (gsize i = 0; i < n; i++) \
          ob[i] = a[i * sa] >= b[i * sb]; \
        break; \
      case NNP_OP_LESS_OR_EQUAL: \
        for (gsize i = 0; i < n; i++) \
          ob[i] = a[i * sa] <= b[i * sb]; \
        break; \
      case NNP_OP_PRELU: \
        for (gsize i = 0; i < n; i++) { \
          T x = a[i * sa]; \
          o[i] = x < 0 ? x * b[i * sb] : x; \
        } \
        break; \
      case NNP_OP_MEAN: /* accumulates; scaled after the last input */ \
        for (gsize i = 0; i < n; i++) \
          o[i] = a[i * sa] + b[i * sb]; \
        break; \
      default: break; \
    } \
  }
FLOAT_ROWS (f32, float, FN_F)
FLOAT_ROWS (f64, double, FN_D)

static BinRow
bin_row_for (NnpOpType op, NnpDType dtype)
{
  switch (op) {
    case NNP_OP_AND: return and_row;
    case NNP_OP_OR: return or_row;
    case NNP_OP_XOR: return xor_row;
    default: break;
  }
  switch (dtype) {
    case NNP_DTYPE_FLOAT32: return float_row_f32;
    case NNP_DTYPE_FLOAT64: return float_row_f64;
#define INT_ENTRY(sfx, T, UT, K, DT, LO, HI) \
  case DT: return int_row_##sfx;
      INT_TYPES (INT_ENTRY)
#undef INT_ENTRY
    default: return NULL;
  }
}

static void
bin_work (gpointer data, gsize begin, gsize end, int thread)
{
  const BinJob *job = data;
  const NnpBroadcast *bc = job->bc;
  const int last = bc->rank - 1, n = bc->n_inputs;

  (void) thread;
  for (gsize item = begin; item < end; item++) {
    int64_t row = (int64_t) item / job->blocks_per_row;
    int64_t start = ((int64_t) item % job->blocks_per_row) * job->block;
    gsize len = (gsize) MIN (job->block, job->row_len - start);
    const guint8 *in[NNP_ELTWISE_MAX_INPUTS] = { NULL };
    gsize st[NNP_ELTWISE_MAX_INPUTS] = { 0 };
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
      in[i] = job->in[i] + (gsize) off[i] * job->esize;
      st[i] = bc->strides[i][last] != 0;
    }
    if (n == 1) {
      /* single-input Mean: a copy */
      for (gsize i = 0; i < len; i++)
        memcpy (o + i * job->esize, in[0] + i * st[0] * job->esize, job->esize);
      continue;
    }
    job->row (job, o, in[0], st[0], in[1], st[1], len);
    for (int i = 2; i < n; i++)
      job->row (job, o, o, 1, in[i], st[i], len);
    if (job->op == NNP_OP_MEAN) {
      if (job->p->dtype == NNP_DTYPE_FLOAT32) {
        float *v = (float *) o;
        for (gsize i = 0; i < len; i++)
          v[i] /= (float) n;
      } else {
        double *v = (double *) o;
        for (gsize i = 0; i < len; i++)
          v[i] /= (double) n;
      }
    }
  }
}

static gboolean
bin_run (const NnpCpuCall *call, GError **error)
{
  const NnpMathParams *p = call->node->params;
  const NnpBroadcast *bc = &p->bc;
  BinJob job;
  gsize n_items;

  memset (&job, 0, sizeof (job));
  job.op = call->node->op;
  job.p = p;
  job.bc = bc;
  job.row = bin_row_for (job.op, p->dtype);
  if (job.row == NULL) {
    nnp_node_set_error (error, NNP_ERROR_UNSUPPORTED, call->node, "no CPU kernel for dtype %s",
                        nnp_dtype_name (p->dtype));
    return FALSE;
  }
  for (int i = 0; i < bc->n_inputs; i++)
    job.in[i] = call->inputs[i]->data;
  job.out = call->outputs[0]->data;
  job.esize = nnp_dtype_size (p->dtype);
  job.out_esize = nnp_dtype_size (p->out_dtype);
  if (bc->numel == 0)
    return TRUE;
  job.row_len = bc->dims[bc->rank - 1];
  job.block = MIN (job.row_len, BLOCK_ELEMS);
  job.blocks_per_row = (job.row_len + job.block - 1) / job.block;
  n_items = (gsize) (bc->numel / job.row_len * job.blocks_per_row);
  nnp_cpu_run_items (call->pool, n_items, (gsize) job.block, bin_work, &job);
  return TRUE;
}

#define BIN_KERNEL(id) const NnpCpuKernel nnp_cpu_##id = { .run = bin_run };
BIN_KERNEL (and)
BIN_KERNEL (or)
BIN_KERNEL (xor)
BIN_KERNEL (bitwise_and)
BIN_KERNEL (bitwise_or)
BIN_KERNEL (bitwise_xor)
BIN_KERNEL (bit_shift)
BIN_KERNEL (mod)
BIN_KERNEL (greater_or_equal)
BIN_KERNEL (less_or_equal)
BIN_KERNEL (prelu)
BIN_KERNEL (mean)
