/* CPU kernel: Resize.
 *
 * `prepare` turns NnpResizeParams into per-axis tables (source index per
 * output coordinate for nearest; taps of indices and weights for linear and
 * cubic), so that `run` only gathers:
 *   - nearest: one pass over the output rows; a row whose source row is the
 *     previous output row's is a memcpy of it, and a last axis upsampled by
 *     an integer factor is written as repeated runs (the detector's x2
 *     nearest upsampling);
 *   - linear / cubic: separable, one pass per resized axis (the shrinking
 *     axes first, then the others, each last axis first), through two
 *     scratch buffers; the result equals the n-linear / n-cubic
 *     interpolation of the ONNX reference. */
#include "backends/cpu/cpu.h"
#include "backends/cpu/cpu-act.h"
#include "ops/nn-params.h"

#include <string.h>

typedef enum {
  LAST_GENERIC,
  LAST_IDENTITY,
  LAST_REPEAT, /* idx[x] = x / factor, out = in * factor */
} LastKind;

typedef struct {
  int taps; /* 0: nearest, 2: linear, 4: cubic */
  gboolean has_extrapolation;
  /* nearest: out[k] source indices per axis (-1: extrapolation_value);
   * linear / cubic: out[k] * taps indices and weights per axis, and
   * outside[k][x] when x maps outside the crop (tf_crop_and_resize). */
  int64_t *idx[NNP_MAX_RANK];
  float *w[NNP_MAX_RANK];
  guint8 *outside[NNP_MAX_RANK];
  gboolean pass[NNP_MAX_RANK]; /* linear / cubic: axis needs a pass */
  LastKind last_kind;
  int64_t repeat;
} ResizeState;

static void
resize_free_state (gpointer data)
{
  ResizeState *s = data;

  if (s == NULL)
    return;
  for (int k = 0; k < NNP_MAX_RANK; k++) {
    g_free (s->idx[k]);
    g_free (s->w[k]);
    g_free (s->outside[k]);
  }
  g_free (s);
}

/* An empty output needs no tables, scratch or work (its other dims may
 * still be huge). */
static gboolean
output_is_empty (const NnpResizeParams *p)
{
  for (int k = 0; k < p->rank; k++)
    if (p->out[k] == 0)
      return TRUE;
  return FALSE;
}

static ResizeState *
build_state (const NnpResizeParams *p)
{
  ResizeState *s = g_new0 (ResizeState, 1);
  int r = p->rank;
  gboolean empty = output_is_empty (p);

  s->taps = p->mode == NNP_RESIZE_NEAREST ? 0 : p->mode == NNP_RESIZE_LINEAR ? 2 : 4;
  for (int k = 0; k < r; k++) {
    int64_t n = empty ? 0 : p->out[k];
    int T = MAX (s->taps, 1);
    gboolean identity = p->out[k] == p->in[k];
    s->idx[k] = g_new0 (int64_t, MAX (n * T, 1));
    s->outside[k] = g_new0 (guint8, MAX (n, 1));
    if (s->taps)
      s->w[k] = g_new0 (float, MAX (n * T, 1));
    for (int64_t x = 0; x < n; x++) {
      gboolean outside;
      double xo = nnp_resize_map_coord (p, k, x, &outside);
      s->outside[k][x] = outside;
      if (outside) {
        s->has_extrapolation = TRUE;
        identity = FALSE;
      }
      if (s->taps == 0) {
        s->idx[k][x] = outside ? -1 : nnp_resize_nearest_index (p, k, xo);
        if (s->idx[k][x] != x)
          identity = FALSE;
      } else {
        nnp_resize_interp_taps (p, k, xo, s->taps, s->idx[k] + x * T, s->w[k] + x * T);
        for (int t = 0; t < T; t++) {
          float want = s->idx[k][x * T + t] == x ? 1.f : 0.f;
          /* clamped duplicates of x may share its weight */
          if (s->w[k][x * T + t] != want && s->idx[k][x * T + t] != x)
            identity = FALSE;
        }
        if (identity) {
          float sum = 0.f;
          for (int t = 0; t < T; t++)
            if (s->idx[k][x * T + t] == x)
              sum += s->w[k][x * T + t];
          if (sum != 1.f)
            identity = FALSE;
        }
      }
    }
    s->pass[k] = !identity;
  }
  if (s->taps == 0 && r > 0 && !empty) {
    const int64_t *idx = s->idx[r - 1];
    int64_t in = p->in[r - 1], out = p->out[r - 1];
    s->last_kind = LAST_GENERIC;
    if (!s->pass[r - 1]) {
      s->last_kind = LAST_IDENTITY;
    } else if (in > 0 && out % in == 0 && out > in) {
      int64_t f = out / in;
      gboolean ok = TRUE;
      for (int64_t x = 0; x < out && ok; x++)
        ok = idx[x] == x / f;
      if (ok) {
        s->last_kind = LAST_REPEAT;
        s->repeat = f;
      }
    }
  }
  return s;
}

static gpointer
resize_prepare (const NnpGraph *graph, const NnpNode *node, GError **error)
{
  return build_state (node->params);
}

/* ---------------------------------------------------------------- nearest */

typedef struct {
  const NnpResizeParams *p;
  const ResizeState *s;
  const guint8 *x;
  guint8 *y;
  int64_t esize;
  int64_t in_strides[NNP_MAX_RANK]; /* elements */
  int64_t rows;                     /* product of out[0 .. rank-1) */
} NearestJob;

#define GATHER_ROW(T) \
  do { \
    const T *src_ = (const T *) src; \
    T *dst_ = (T *) dst; \
    if (s->last_kind == LAST_REPEAT && s->repeat == 2) { \
      for (int64_t i = 0; i < in_w; i++) { \
        dst_[2 * i] = src_[i]; \
        dst_[2 * i + 1] = src_[i]; \
      } \
    } else if (s->last_kind == LAST_REPEAT) { \
      for (int64_t i = 0; i < in_w; i++) \
        for (int64_t f = 0; f < s->repeat; f++) \
          dst_[i * s->repeat + f] = src_[i]; \
    } else if (s->has_extrapolation) { \
      T ev_; \
      memcpy (&ev_, ext, sizeof (T)); \
      for (int64_t i = 0; i < out_w; i++) \
        dst_[i] = lidx[i] < 0 ? ev_ : src_[lidx[i]]; \
    } else { \
      for (int64_t i = 0; i < out_w; i++) \
        dst_[i] = src_[lidx[i]]; \
    } \
  } while (0)

static void
fill_bytes (guint8 *dst, const guint8 *value, int64_t esize, int64_t n)
{
  for (int64_t i = 0; i < n; i++)
    memcpy (dst + i * esize, value, esize);
}

static void
nearest_worker (gpointer data, gsize begin, gsize end, int thread)
{
  const NearestJob *job = data;
  const NnpResizeParams *p = job->p;
  const ResizeState *s = job->s;
  const int r = p->rank;
  const int64_t es = job->esize, out_w = p->out[r - 1], in_w = p->in[r - 1];
  const int64_t *lidx = s->idx[r - 1];
  int64_t pos[NNP_MAX_RANK] = { 0 }, rem = (int64_t) begin, prev_off = -2;
  guint8 ext[8];

  if (p->dtype == NNP_DTYPE_FLOAT32) {
    memcpy (ext, &p->extrapolation_value, 4);
  } else {
    memset (ext, 0, sizeof (ext));
  }
  for (int k = r - 2; k >= 0; k--) {
    pos[k] = rem % p->out[k];
    rem /= p->out[k];
  }
  for (gsize row = begin; row < end; row++) {
    guint8 *dst = job->y + (int64_t) row * out_w * es;
    int64_t off = 0;
    for (int k = 0; k < r - 1; k++) {
      int64_t i = s->idx[k][pos[k]];
      if (i < 0) {
        off = -1;
        break;
      }
      off += i * job->in_strides[k];
    }
    if (off < 0) {
      fill_bytes (dst, ext, es, out_w);
    } else if (off == prev_off) {
      memcpy (dst, dst - out_w * es, out_w * es);
    } else {
      const guint8 *src = job->x + off * es;
      if (s->last_kind == LAST_IDENTITY) {
        memcpy (dst, src, out_w * es);
      } else {
        switch (es) {
          case 1: GATHER_ROW (guint8); break;
          case 2: GATHER_ROW (guint16); break;
          case 4: GATHER_ROW (guint32); break;
          default: GATHER_ROW (guint64); break;
        }
      }
    }
    prev_off = off;
    for (int k = r - 2; k >= 0; k--) {
      if (++pos[k] < p->out[k])
        break;
      pos[k] = 0;
    }
  }
}

static void
resize_nearest (const NnpCpuCall *call, const NnpResizeParams *p, const ResizeState *s)
{
  NearestJob job = { p, s, call->inputs[0]->data, call->outputs[0]->data };
  int64_t st = 1;

  job.esize = (int64_t) nnp_dtype_size (p->dtype);
  for (int k = p->rank - 1; k >= 0; k--) {
    job.in_strides[k] = st;
    st *= p->in[k];
  }
  job.rows = 1;
  for (int k = 0; k < p->rank - 1; k++)
    job.rows *= p->out[k];
  if (nnp_tensor_numel (call->outputs[0]) == 0)
    return;
  nnp_parallel_for (call->pool, job.rows, MAX (1, 8192 / MAX (p->out[p->rank - 1], 1)),
                    nearest_worker, &job);
}

/* ----------------------------------------------------------- linear, cubic */

/* d = wa * a + wb * b */
static void
blend_row_generic (float *d, const float *a, const float *b, float wa, float wb, int64_t n)
{
  for (int64_t x = 0; x < n; x++)
    d[x] = wa * a[x] + wb * b[x];
}

#if defined(__x86_64__) || defined(__i386__)
__attribute__ ((target ("avx2,fma"))) static void
blend_row_avx2 (float *d, const float *a, const float *b, float wa, float wb, int64_t n)
{
  const __m256 va = _mm256_set1_ps (wa), vb = _mm256_set1_ps (wb);
  int64_t x = 0;

  /* the same two products and sum as the generic loop (no FMA contraction) */
  for (; x + 8 <= n; x += 8)
    _mm256_storeu_ps (d + x, _mm256_add_ps (_mm256_mul_ps (va, _mm256_loadu_ps (a + x)),
                                            _mm256_mul_ps (vb, _mm256_loadu_ps (b + x))));
  blend_row_generic (d + x, a + x, b + x, wa, wb, n - x);
}
#endif

static void
blend_row (float *d, const float *a, const float *b, float wa, float wb, int64_t n)
{
#if defined(__x86_64__) || defined(__i386__)
  if (nnp_cpu_avx2_ok ()) {
    blend_row_avx2 (d, a, b, wa, wb, n);
    return;
  }
#endif
  blend_row_generic (d, a, b, wa, wb, n);
}

typedef struct {
  const NnpResizeParams *p;
  const ResizeState *s;
  int k; /* axis of this pass */
  int taps;
  const float *src;
  float *dst;
  int64_t outer, d_in, d_out, inner;
} PassJob;

static void
pass_worker (gpointer data, gsize begin, gsize end, int thread)
{
  const PassJob *job = data;
  const int T = job->taps;
  const int64_t *idx = job->s->idx[job->k];
  const float *w = job->s->w[job->k];
  const guint8 *outside = job->s->outside[job->k];
  const gboolean extrap = job->s->has_extrapolation;
  const float ev = job->p->extrapolation_value;
  const int64_t inner = job->inner;

  if (inner == 1) {
    /* items are outer rows */
    for (gsize o = begin; o < end; o++) {
      const float *src = job->src + (int64_t) o * job->d_in;
      float *dst = job->dst + (int64_t) o * job->d_out;
      for (int64_t x = 0; x < job->d_out; x++) {
        const int64_t *ix = idx + x * T;
        const float *wx = w + x * T;
        float v = 0.f;
        for (int t = 0; t < T; t++)
          v += wx[t] * src[ix[t]];
        dst[x] = extrap && outside[x] ? ev : v;
      }
    }
    return;
  }
  /* items are (outer, x) pairs: one inner row each */
  for (gsize item = begin; item < end; item++) {
    int64_t o = (int64_t) item / job->d_out, x = (int64_t) item % job->d_out;
    const float *src = job->src + o * job->d_in * inner;
    float *dst = job->dst + (o * job->d_out + x) * inner;
    const int64_t *ix = idx + x * T;
    const float *wx = w + x * T;
    if (extrap && outside[x]) {
      for (int64_t j = 0; j < inner; j++)
        dst[j] = ev;
    } else if (T == 2) {
      blend_row (dst, src + ix[0] * inner, src + ix[1] * inner, wx[0], wx[1], inner);
    } else {
      const float *a = src + ix[0] * inner, *b = src + ix[1] * inner;
      const float *c = src + ix[2] * inner, *d = src + ix[3] * inner;
      const float wa = wx[0], wb = wx[1], wc = wx[2], wd = wx[3];
      for (int64_t j = 0; j < inner; j++)
        dst[j] = wa * a[j] + wb * b[j] + wc * c[j] + wd * d[j];
    }
  }
}

/* The axes that need a pass, in the order of the passes: the shrinking
 * ones first, then the others, each group last axis first.  Growing an axis
 * first made the intermediate as large as the input times that axis's
 * growth: a fuzzed 49x63x4x4 -> 1x2x2x31239 asked 3 GB of scratch; this way
 * no intermediate is larger than the input or the output. */
static int
order_pass_axes (const NnpResizeParams *p, const ResizeState *s, int *axes)
{
  int n = 0;

  for (int shrink = 1; shrink >= 0; shrink--)
    for (int k = p->rank - 1; k >= 0; k--)
      if (s->pass[k] && (p->out[k] < p->in[k]) == shrink)
        axes[n++] = k;
  return n;
}

/* Which axes need a pass, computed from params alone (for `workspace`). */
static int
interp_pass_axes (const NnpResizeParams *p, int *axes)
{
  ResizeState *s = build_state (p);
  int n = order_pass_axes (p, s, axes);

  resize_free_state (s);
  return n;
}

/* Element counts of the intermediate tensors of each pass. */
static int64_t
interp_scratch_elems (const NnpResizeParams *p, const int *axes, int n_axes)
{
  int64_t cur[NNP_MAX_RANK], most = 0;

  memcpy (cur, p->in, sizeof (cur));
  for (int i = 0; i + 1 < n_axes; i++) {
    int64_t numel = 1;
    cur[axes[i]] = p->out[axes[i]];
    for (int k = 0; k < p->rank; k++)
      numel *= cur[k];
    most = MAX (most, numel);
  }
  return most;
}

static gsize
resize_workspace (const NnpGraph *graph, const NnpNode *node)
{
  const NnpResizeParams *p = node->params;
  int axes[NNP_MAX_RANK], n;

  if (p->mode == NNP_RESIZE_NEAREST || output_is_empty (p))
    return 0;
  n = interp_pass_axes (p, axes);
  /* two buffers, each rounded up to 64 bytes */
  return 2 * ((interp_scratch_elems (p, axes, n) * sizeof (float) + 63) & ~(gsize) 63);
}

/* Linear on the last two axes only (an image upsampled or shrunk, planes
 * of H x W): both passes in one sweep per plane.  Each input row that an
 * output row needs is interpolated along W once into a ring of two rows
 * (one per tap of the H axis), and each output row is the weighted sum of
 * two ring rows: the input is read once, the output written once, and no
 * intermediate tensor goes through memory.  Same sums as the two passes. */
typedef struct {
  const ResizeState *s;
  int kh, kw;
  const float *src;
  float *dst, *ring; /* ring: 2 * w_out floats per thread */
  int64_t h_in, w_in, h_out, w_out;
} Linear2dJob;

static void
linear_row (const float *src, const int64_t *ix, const float *wx, int64_t w_out, float *dst)
{
  for (int64_t x = 0; x < w_out; x++)
    dst[x] = wx[2 * x] * src[ix[2 * x]] + wx[2 * x + 1] * src[ix[2 * x + 1]];
}

static void
linear2d_worker (gpointer data, gsize begin, gsize end, int thread)
{
  const Linear2dJob *job = data;
  const int64_t *iy = job->s->idx[job->kh], *ix = job->s->idx[job->kw];
  const float *wy = job->s->w[job->kh], *wx = job->s->w[job->kw];
  const int64_t w_out = job->w_out;
  float *ring = job->ring + (gsize) thread * 2 * w_out;

  for (gsize plane = begin; plane < end; plane++) {
    const float *src = job->src + (int64_t) plane * job->h_in * job->w_in;
    float *dst = job->dst + (int64_t) plane * job->h_out * w_out;
    int64_t held[2] = { -1, -1 }; /* input row in ring slot 0 / 1 */
    for (int64_t y = 0; y < job->h_out; y++) {
      const int64_t need[2] = { iy[2 * y], iy[2 * y + 1] };
      const float w0 = wy[2 * y], w1 = wy[2 * y + 1];
      float *d = dst + y * w_out;
      int slot[2];
      for (int t = 0; t < 2; t++)
        slot[t] = held[0] == need[t] ? 0 : held[1] == need[t] ? 1 : -1;
      for (int t = 0; t < 2; t++) {
        if (slot[t] >= 0)
          continue;
        /* the slot the other tap does not use */
        slot[t] = slot[1 - t] == 0 ? 1 : 0;
        linear_row (src + need[t] * job->w_in, ix, wx, w_out, ring + slot[t] * w_out);
        held[slot[t]] = need[t];
        if (need[1 - t] == need[t])
          slot[1 - t] = slot[t];
      }
      blend_row (d, ring + slot[0] * w_out, ring + slot[1] * w_out, w0, w1, w_out);
    }
  }
}

/* TRUE when the linear sweep of the last two axes ran (scratch_elems:
 * floats of the call's scratch). */
static gboolean
resize_linear2d (const NnpCpuCall *call, const NnpResizeParams *p, const ResizeState *s,
                 const int *axes, int n, int64_t scratch_elems)
{
  const int r = p->rank;
  int threads = nnp_thread_pool_get_n_threads (call->pool);
  Linear2dJob job;

  if (s->taps != 2 || s->has_extrapolation || n != 2 || r < 2 || axes[0] != r - 1
      || axes[1] != r - 2 || p->in[r - 2] * p->in[r - 1] == 0
      || (int64_t) threads * 2 * p->out[r - 1] > scratch_elems)
    return FALSE;
  job.s = s;
  job.kh = r - 2;
  job.kw = r - 1;
  job.src = call->inputs[0]->data;
  job.dst = call->outputs[0]->data;
  job.ring = call->scratch;
  job.h_in = p->in[r - 2];
  job.w_in = p->in[r - 1];
  job.h_out = p->out[r - 2];
  job.w_out = p->out[r - 1];
  nnp_parallel_for (call->pool, nnp_tensor_numel (call->inputs[0]) / (job.h_in * job.w_in), 1,
                    linear2d_worker, &job);
  return TRUE;
}

static void
resize_interp (const NnpCpuCall *call, const NnpResizeParams *p, const ResizeState *s)
{
  int axes[NNP_MAX_RANK], n = 0;
  int64_t cur[NNP_MAX_RANK], half;
  const float *src = call->inputs[0]->data;
  float *bufs[2];

  n = order_pass_axes (p, s, axes);
  if (n == 0) {
    memcpy (call->outputs[0]->data, src, call->outputs[0]->nbytes);
    return;
  }
  if (nnp_tensor_numel (call->outputs[0]) == 0)
    return;
  half = (interp_scratch_elems (p, axes, n) * sizeof (float) + 63) & ~(gsize) 63;
  if (resize_linear2d (call, p, s, axes, n, 2 * half / sizeof (float)))
    return;
  /* one pass needs no scratch (call->scratch may be NULL: no arithmetic on it) */
  bufs[0] = call->scratch;
  bufs[1] = n > 1 ? (float *) ((guint8 *) call->scratch + half) : NULL;
  memcpy (cur, p->in, sizeof (cur));
  for (int i = 0; i < n; i++) {
    int k = axes[i];
    PassJob job = { p, s, k, s->taps, src, i + 1 == n ? call->outputs[0]->data : bufs[i % 2] };
    gsize items;
    job.outer = 1;
    job.inner = 1;
    for (int j = 0; j < k; j++)
      job.outer *= cur[j];
    for (int j = k + 1; j < p->rank; j++)
      job.inner *= cur[j];
    job.d_in = cur[k];
    job.d_out = p->out[k];
    items = job.inner == 1 ? job.outer : job.outer * job.d_out;
    nnp_parallel_for (call->pool, items,
                      MAX (1, 8192 / MAX (job.inner == 1 ? job.d_out : job.inner, 1)), pass_worker,
                      &job);
    cur[k] = p->out[k];
    src = job.dst;
  }
}

static gboolean
resize_run (const NnpCpuCall *call, GError **error)
{
  const NnpResizeParams *p = call->node->params;
  const ResizeState *s = call->state;

  if (s == NULL) {
    nnp_node_set_error (error, NNP_ERROR_FAILED, call->node, "kernel state was not prepared");
    return FALSE;
  }
  if (output_is_empty (p))
    return TRUE;
  if (p->mode == NNP_RESIZE_NEAREST)
    resize_nearest (call, p, s);
  else
    resize_interp (call, p, s);
  return TRUE;
}

const NnpCpuKernel nnp_cpu_resize = {
  .run = resize_run,
  .workspace = resize_workspace,
  .prepare = resize_prepare,
  .free_state = resize_free_state,
};

/* Upsample (opsets 7 to 9) is Resize 10 (ops-nn.c) */
const NnpCpuKernel nnp_cpu_upsample = {
  .run = resize_run,
  .workspace = resize_workspace,
  .prepare = resize_prepare,
  .free_state = resize_free_state,
};
