/* CPU kernels of the indexing ops (lib/ops/ops-index.c, index-params.h).
 *
 * Data is moved as elements of 1, 2, 4 or 8 bytes; indices are int32 or
 * int64, negative ones count from the end, and an index out of range fails
 * the run naming the node (never a read outside the tensor). */
#include "backends/cpu/cpu.h"
#include "ops/index-params.h"

#include <math.h>
#include <string.h>

/* ---------------------------------------------------------------- helpers */

static void
strides_of (const NnpShape *s, int64_t *st)
{
  int64_t acc = 1;

  for (int d = s->rank - 1; d >= 0; d--) {
    st[d] = acc;
    acc *= s->dims[d];
  }
}

/* Advance a multi-index over shape s; FALSE after the last. */
static inline gboolean
next_index (const NnpShape *s, int64_t *idx)
{
  for (int d = s->rank - 1; d >= 0; d--) {
    if (++idx[d] < s->dims[d])
      return TRUE;
    idx[d] = 0;
  }
  return FALSE;
}

static inline int64_t
load_index (const NnpTensor *t, int64_t i)
{
  return t->dtype == NNP_DTYPE_INT64 ? ((const int64_t *) t->data)[i]
                                     : ((const int32_t *) t->data)[i];
}

static gboolean
bad_index (const NnpCpuCall *call, int64_t v, int64_t dim, GError **error)
{
  nnp_node_set_error (error, NNP_ERROR_INVALID, call->node,
                      "index %" G_GINT64_FORMAT " is out of range for a dim of %" G_GINT64_FORMAT,
                      v, dim);
  return FALSE;
}

static inline void
copy_elem (guint8 *dst, const guint8 *src, int esize)
{
  switch (esize) {
    case 1: *dst = *src; break;
    case 2: memcpy (dst, src, 2); break;
    case 4: memcpy (dst, src, 4); break;
    default: memcpy (dst, src, 8); break;
  }
}

/* dst = dst (reduction) src for one element */
static void
reduce_elem (guint8 *dst, const guint8 *src, NnpDType dtype, NnpReduction r, int esize)
{
#define RED(T) \
  do { \
    T a, b; \
    memcpy (&a, dst, sizeof (T)); \
    memcpy (&b, src, sizeof (T)); \
    switch (r) { \
      case NNP_REDUCTION_ADD: a = a + b; break; \
      case NNP_REDUCTION_MUL: a = a * b; break; \
      case NNP_REDUCTION_MAX: a = b > a ? b : a; break; \
      case NNP_REDUCTION_MIN: a = b < a ? b : a; break; \
      default: a = b; break; \
    } \
    memcpy (dst, &a, sizeof (T)); \
  } while (0)
  switch (r == NNP_REDUCTION_NONE ? NNP_DTYPE_UNDEFINED : dtype) {
    case NNP_DTYPE_FLOAT32: RED (float); break;
    case NNP_DTYPE_FLOAT64: RED (double); break;
    case NNP_DTYPE_INT32: RED (gint32); break;
    case NNP_DTYPE_INT64: RED (gint64); break;
    default: copy_elem (dst, src, esize); break;
  }
#undef RED
}

/* ---------------------------------------------------------------- Gather/Scatter Elements */

static gboolean
gather_elements_run (const NnpCpuCall *call, GError **error)
{
  const NnpIndexParams *p = call->node->params;
  const NnpTensor *x = call->inputs[0], *ind = call->inputs[1];
  guint8 *o = call->outputs[0]->data;
  int64_t xs[NNP_MAX_RANK], idx[NNP_MAX_RANK] = { 0 };
  int64_t n = nnp_tensor_numel (ind), dim = p->in.dims[p->axis];

  strides_of (&p->in, xs);
  for (int64_t i = 0; i < n; i++) {
    int64_t v = load_index (ind, i), off = 0;
    if (v < -dim || v >= dim)
      return bad_index (call, v, dim, error);
    if (v < 0)
      v += dim;
    for (int d = 0; d < p->in.rank; d++) {
      if (d != p->axis && idx[d] >= p->in.dims[d])
        return bad_index (call, idx[d], p->in.dims[d], error);
      off += (d == p->axis ? v : idx[d]) * xs[d];
    }
    copy_elem (o + i * p->esize, (const guint8 *) x->data + off * p->esize, p->esize);
    next_index (&p->idx, idx);
  }
  return TRUE;
}

static gboolean
scatter_elements_run (const NnpCpuCall *call, GError **error)
{
  const NnpIndexParams *p = call->node->params;
  const NnpTensor *x = call->inputs[0], *ind = call->inputs[1], *u = call->inputs[2];
  NnpTensor *y = call->outputs[0];
  int64_t xs[NNP_MAX_RANK], idx[NNP_MAX_RANK] = { 0 };
  int64_t n = nnp_tensor_numel (ind), dim = p->in.dims[p->axis];

  if (y->nbytes)
    memcpy (y->data, x->data, y->nbytes);
  strides_of (&p->in, xs);
  for (int64_t i = 0; i < n; i++) {
    int64_t v = load_index (ind, i), off = 0;
    if (v < -dim || v >= dim)
      return bad_index (call, v, dim, error);
    if (v < 0)
      v += dim;
    for (int d = 0; d < p->in.rank; d++) {
      if (d != p->axis && idx[d] >= p->in.dims[d])
        return bad_index (call, idx[d], p->in.dims[d], error);
      off += (d == p->axis ? v : idx[d]) * xs[d];
    }
    reduce_elem ((guint8 *) y->data + off * p->esize, (const guint8 *) u->data + i * p->esize,
                 p->dtype, p->reduction, p->esize);
    next_index (&p->idx, idx);
  }
  return TRUE;
}

const NnpCpuKernel nnp_cpu_gather_elements = { .run = gather_elements_run };
const NnpCpuKernel nnp_cpu_scatter_elements = { .run = scatter_elements_run };
const NnpCpuKernel nnp_cpu_scatter = { .run = scatter_elements_run };

/* ---------------------------------------------------------------- GatherND / ScatterND */

/* Element offset in data of the index tuple at `tuple` (k entries from dim `from`). */
static gboolean
tuple_offset (const NnpCpuCall *call, const NnpIndexParams *p, const int64_t *tuple, int k,
              int from, const int64_t *xs, int64_t *off, GError **error)
{
  *off = 0;
  for (int t = 0; t < k; t++) {
    int64_t v = tuple[t], dim = p->in.dims[from + t];
    if (v < -dim || v >= dim)
      return bad_index (call, v, dim, error);
    if (v < 0)
      v += dim;
    *off += v * xs[from + t];
  }
  return TRUE;
}

static gboolean
gather_nd_run (const NnpCpuCall *call, GError **error)
{
  const NnpIndexParams *p = call->node->params;
  const NnpTensor *x = call->inputs[0], *ind = call->inputs[1];
  guint8 *o = call->outputs[0]->data;
  const int64_t *iv = ind->data;
  int b = (int) p->k, q = p->idx.rank, k = (int) p->idx.dims[q - 1];
  int64_t xs[NNP_MAX_RANK], batches = 1, per_batch = 1, slice = 1, batch_stride;

  strides_of (&p->in, xs);
  for (int d = 0; d < b; d++)
    batches *= p->idx.dims[d];
  for (int d = b; d < q - 1; d++)
    per_batch *= p->idx.dims[d];
  for (int d = b + k; d < p->in.rank; d++)
    slice *= p->in.dims[d];
  batch_stride = b > 0 ? xs[b - 1] : 0;
  for (int64_t bi = 0; bi < batches; bi++) {
    for (int64_t j = 0; j < per_batch; j++) {
      int64_t off;
      if (!tuple_offset (call, p, iv + (bi * per_batch + j) * k, k, b, xs, &off, error))
        return FALSE;
      off += bi * batch_stride;
      memcpy (o, (const guint8 *) x->data + off * p->esize, slice * p->esize);
      o += slice * p->esize;
    }
  }
  return TRUE;
}

static gboolean
scatter_nd_run (const NnpCpuCall *call, GError **error)
{
  const NnpIndexParams *p = call->node->params;
  const NnpTensor *x = call->inputs[0], *ind = call->inputs[1], *u = call->inputs[2];
  NnpTensor *y = call->outputs[0];
  const int64_t *iv = ind->data;
  int q = p->idx.rank, k = (int) p->idx.dims[q - 1];
  int64_t xs[NNP_MAX_RANK], n = 1, slice = 1;
  const guint8 *src = u->data;

  if (y->nbytes)
    memcpy (y->data, x->data, y->nbytes);
  strides_of (&p->in, xs);
  for (int d = 0; d < q - 1; d++)
    n *= p->idx.dims[d];
  for (int d = k; d < p->in.rank; d++)
    slice *= p->in.dims[d];
  for (int64_t j = 0; j < n; j++) {
    int64_t off;
    guint8 *dst;
    if (!tuple_offset (call, p, iv + j * k, k, 0, xs, &off, error))
      return FALSE;
    dst = (guint8 *) y->data + off * p->esize;
    if (p->reduction == NNP_REDUCTION_NONE)
      memcpy (dst, src, slice * p->esize);
    else
      for (int64_t e = 0; e < slice; e++)
        reduce_elem (dst + e * p->esize, src + e * p->esize, p->dtype, p->reduction, p->esize);
    src += slice * p->esize;
  }
  return TRUE;
}

const NnpCpuKernel nnp_cpu_gather_nd = { .run = gather_nd_run };
const NnpCpuKernel nnp_cpu_scatter_nd = { .run = scatter_nd_run };

/* ---------------------------------------------------------------- Trilu */

static gboolean
trilu_run (const NnpCpuCall *call, GError **error)
{
  const NnpIndexParams *p = call->node->params;
  const NnpTensor *x = call->inputs[0];
  const NnpTensor *kt = call->node->n_inputs > 1 ? call->inputs[1] : NULL;
  guint8 *o = call->outputs[0]->data;
  int64_t rows = p->in.dims[p->in.rank - 2], cols = p->in.dims[p->in.rank - 1];
  int64_t mats = rows * cols > 0 ? nnp_tensor_numel (x) / (rows * cols) : 0;
  int64_t k = kt ? ((const int64_t *) kt->data)[0] : 0;

  (void) error;
  for (int64_t m = 0; m < mats; m++) {
    for (int64_t i = 0; i < rows; i++) {
      for (int64_t j = 0; j < cols; j++) {
        int64_t e = (m * rows + i) * cols + j;
        gboolean keep = p->flag ? j - i >= k : j - i <= k;
        if (keep)
          copy_elem (o + e * p->esize, (const guint8 *) x->data + e * p->esize, p->esize);
        else
          memset (o + e * p->esize, 0, p->esize);
      }
    }
  }
  return TRUE;
}

const NnpCpuKernel nnp_cpu_trilu = { .run = trilu_run };

/* ---------------------------------------------------------------- CumSum */

static gboolean
cum_sum_run (const NnpCpuCall *call, GError **error)
{
  const NnpIndexParams *p = call->node->params;
  const NnpTensor *x = call->inputs[0];
  int axis = p->axis;
  int64_t outer = 1, dim, inner = 1;

  if (axis < 0) {
    int64_t a = load_index (call->inputs[1], 0);
    if (a < -p->in.rank || a >= p->in.rank) {
      nnp_node_set_error (error, NNP_ERROR_INVALID, call->node,
                          "axis %" G_GINT64_FORMAT " is out of range for rank %d", a, p->in.rank);
      return FALSE;
    }
    axis = (int) (a < 0 ? a + p->in.rank : a);
  }
  dim = p->in.dims[axis];
  for (int d = 0; d < axis; d++)
    outer *= p->in.dims[d];
  for (int d = axis + 1; d < p->in.rank; d++)
    inner *= p->in.dims[d];
#define CUMSUM(T) \
  do { \
    const T *xs = x->data; \
    T *ys = call->outputs[0]->data; \
    for (int64_t o = 0; o < outer; o++) \
      for (int64_t i = 0; i < inner; i++) { \
        T acc = 0; \
        for (int64_t s = 0; s < dim; s++) { \
          int64_t d = p->flag2 ? dim - 1 - s : s; \
          int64_t e = (o * dim + d) * inner + i; \
          if (p->flag) { \
            ys[e] = acc; \
            acc += xs[e]; \
          } else { \
            acc += xs[e]; \
            ys[e] = acc; \
          } \
        } \
      } \
  } while (0)
  switch (p->dtype) {
    case NNP_DTYPE_FLOAT32: CUMSUM (float); break;
    case NNP_DTYPE_FLOAT64: CUMSUM (double); break;
    case NNP_DTYPE_INT32: CUMSUM (guint32); break;
    case NNP_DTYPE_INT64: CUMSUM (guint64); break;
    case NNP_DTYPE_UINT32: CUMSUM (guint32); break;
    case NNP_DTYPE_UINT64: CUMSUM (guint64); break;
    default: break;
  }
#undef CUMSUM
  return TRUE;
}

const NnpCpuKernel nnp_cpu_cum_sum = { .run = cum_sum_run };

/* ---------------------------------------------------------------- Hardmax */

static gboolean
hardmax_run (const NnpCpuCall *call, GError **error)
{
  const NnpIndexParams *p = call->node->params;
  int64_t outer = 1, dim = 1, inner = 1;

  (void) error;
  for (int d = 0; d < p->in.rank; d++) {
    if (d < p->axis)
      outer *= p->in.dims[d];
    else if (d == p->axis || p->flag)
      dim *= p->in.dims[d];
    else
      inner *= p->in.dims[d];
  }
#define HARDMAX(T) \
  do { \
    const T *xs = call->inputs[0]->data; \
    T *ys = call->outputs[0]->data; \
    for (int64_t o = 0; o < outer; o++) \
      for (int64_t i = 0; i < inner; i++) { \
        int64_t best = 0; \
        for (int64_t d = 0; d < dim; d++) { \
          if (xs[(o * dim + d) * inner + i] > xs[(o * dim + best) * inner + i]) \
            best = d; \
          ys[(o * dim + d) * inner + i] = 0; \
        } \
        if (dim > 0) \
          ys[(o * dim + best) * inner + i] = 1; \
      } \
  } while (0)
  if (p->dtype == NNP_DTYPE_FLOAT32)
    HARDMAX (float);
  else
    HARDMAX (double);
#undef HARDMAX
  return TRUE;
}

const NnpCpuKernel nnp_cpu_hardmax = { .run = hardmax_run };

/* ---------------------------------------------------------------- EyeLike, OneHot */

/* Store the double v as an element of dtype at dst. */
static void
store_as (guint8 *dst, NnpDType dtype, double v)
{
  switch (dtype) {
    case NNP_DTYPE_FLOAT32: *(float *) dst = (float) v; break;
    case NNP_DTYPE_FLOAT64: *(double *) dst = v; break;
    case NNP_DTYPE_INT8: *(gint8 *) dst = (gint8) v; break;
    case NNP_DTYPE_UINT8: *(guint8 *) dst = (guint8) v; break;
    case NNP_DTYPE_INT16: *(gint16 *) dst = (gint16) v; break;
    case NNP_DTYPE_UINT16: *(guint16 *) dst = (guint16) v; break;
    case NNP_DTYPE_INT32: *(gint32 *) dst = (gint32) v; break;
    case NNP_DTYPE_UINT32: *(guint32 *) dst = (guint32) v; break;
    case NNP_DTYPE_INT64: *(gint64 *) dst = (gint64) v; break;
    case NNP_DTYPE_UINT64: *(guint64 *) dst = (guint64) v; break;
    case NNP_DTYPE_BOOL: *dst = v != 0; break;
    default: break;
  }
}

static double
load_as_double (const guint8 *src, NnpDType dtype)
{
  switch (dtype) {
    case NNP_DTYPE_FLOAT32: return *(const float *) src;
    case NNP_DTYPE_FLOAT64: return *(const double *) src;
    case NNP_DTYPE_INT8: return *(const gint8 *) src;
    case NNP_DTYPE_UINT8: return *src;
    case NNP_DTYPE_INT16: return *(const gint16 *) src;
    case NNP_DTYPE_UINT16: return *(const guint16 *) src;
    case NNP_DTYPE_INT32: return *(const gint32 *) src;
    case NNP_DTYPE_UINT32: return *(const guint32 *) src;
    case NNP_DTYPE_INT64: return (double) *(const gint64 *) src;
    case NNP_DTYPE_UINT64: return (double) *(const guint64 *) src;
    case NNP_DTYPE_BOOL: return *src != 0;
    default: return 0;
  }
}

static gboolean
eye_like_run (const NnpCpuCall *call, GError **error)
{
  const NnpIndexParams *p = call->node->params;
  NnpTensor *y = call->outputs[0];
  int64_t rows = p->in.dims[0], cols = p->in.dims[1];
  gsize es = nnp_dtype_size (p->to);

  (void) error;
  if (y->nbytes)
    memset (y->data, 0, y->nbytes);
  for (int64_t i = 0; i < rows; i++) {
    int64_t j = i + p->k;
    if (j >= 0 && j < cols)
      store_as ((guint8 *) y->data + (i * cols + j) * es, p->to, 1.0);
  }
  return TRUE;
}

static gboolean
one_hot_run (const NnpCpuCall *call, GError **error)
{
  const NnpIndexParams *p = call->node->params;
  const NnpTensor *ind = call->inputs[0], *values = call->inputs[2];
  NnpTensor *y = call->outputs[0];
  gsize es = nnp_dtype_size (p->to);
  const guint8 *off = values->data, *on = (const guint8 *) values->data + es;
  int64_t outer = 1, inner = 1, depth = p->k;

  (void) error;
  for (int d = 0; d < p->idx.rank; d++) {
    if (d < p->axis)
      outer *= p->idx.dims[d];
    else if (d > p->axis)
      inner *= p->idx.dims[d];
  }
  for (int64_t e = 0; e < nnp_tensor_numel (y); e++)
    memcpy ((guint8 *) y->data + e * es, off, es);
  for (int64_t o = 0; o < outer; o++) {
    for (int64_t i = 0; i < inner; i++) {
      double v = load_as_double ((const guint8 *) ind->data + (o * inner + i) * p->esize, p->dtype);
      int64_t k;
      if (!isfinite (v))
        continue;
      k = (int64_t) v;
      if (k < 0)
        k += depth;
      if (k < 0 || k >= depth)
        continue;
      memcpy ((guint8 *) y->data + ((o * depth + k) * inner + i) * es, on, es);
    }
  }
  return TRUE;
}

const NnpCpuKernel nnp_cpu_eye_like = { .run = eye_like_run };
const NnpCpuKernel nnp_cpu_one_hot = { .run = one_hot_run };

/* ---------------------------------------------------------------- DepthToSpace, SpaceToDepth */

static gboolean
block_run (const NnpCpuCall *call, GError **error)
{
  const NnpIndexParams *p = call->node->params;
  const guint8 *x = call->inputs[0]->data;
  guint8 *y = call->outputs[0]->data;
  gboolean to_space = call->node->op == NNP_OP_DEPTH_TO_SPACE;
  const int64_t b = p->k, n = p->in.dims[0];
  /* the space side (H*b x W*b) and the depth side (C*b*b) */
  const NnpShape *sp = to_space ? &p->idx : &p->in;
  const int64_t c = sp->dims[1], hb = sp->dims[2], wb = sp->dims[3];
  const int64_t h = hb / b, w = wb / b, cd = c * b * b;

  (void) error;
  for (int64_t in = 0; in < n; in++)
    for (int64_t ic = 0; ic < c; ic++)
      for (int64_t yy = 0; yy < hb; yy++)
        for (int64_t xx = 0; xx < wb; xx++) {
          int64_t i = yy % b, j = xx % b;
          /* DCR: depth channel (i*b + j)*C + c; CRD: c*b*b + i*b + j */
          int64_t dc = p->flag ? ic * b * b + i * b + j : (i * b + j) * c + ic;
          int64_t s = ((in * c + ic) * hb + yy) * wb + xx;
          int64_t d = ((in * cd + dc) * h + yy / b) * w + xx / b;
          if (to_space)
            copy_elem (y + s * p->esize, x + d * p->esize, p->esize);
          else
            copy_elem (y + d * p->esize, x + s * p->esize, p->esize);
        }
  return TRUE;
}

const NnpCpuKernel nnp_cpu_depth_to_space = { .run = block_run };
const NnpCpuKernel nnp_cpu_space_to_depth = { .run = block_run };

/* ---------------------------------------------------------------- Tile */

static gboolean
tile_run (const NnpCpuCall *call, GError **error)
{
  const NnpIndexParams *p = call->node->params;
  const guint8 *x = call->inputs[0]->data;
  guint8 *y = call->outputs[0]->data;
  int64_t xs[NNP_MAX_RANK], idx[NNP_MAX_RANK] = { 0 };
  int64_t n = nnp_shape_numel (&p->idx);

  (void) error;
  strides_of (&p->in, xs);
  for (int64_t e = 0; e < n; e++) {
    int64_t off = 0;
    for (int d = 0; d < p->in.rank; d++)
      off += (idx[d] % p->in.dims[d]) * xs[d];
    copy_elem (y + e * p->esize, x + off * p->esize, p->esize);
    next_index (&p->idx, idx);
  }
  return TRUE;
}

const NnpCpuKernel nnp_cpu_tile = { .run = tile_run };

/* ---------------------------------------------------------------- ReverseSequence */

static gboolean
reverse_sequence_run (const NnpCpuCall *call, GError **error)
{
  const NnpIndexParams *p = call->node->params;
  const guint8 *x = call->inputs[0]->data;
  const int64_t *lens = call->inputs[1]->data;
  guint8 *y = call->outputs[0]->data;
  int64_t xs[NNP_MAX_RANK], idx[NNP_MAX_RANK] = { 0 };
  int64_t n = nnp_shape_numel (&p->in), tdim = p->in.dims[p->axis];

  strides_of (&p->in, xs);
  for (int64_t b = 0; b < p->in.dims[p->axis2]; b++) {
    if (lens[b] < 0 || lens[b] > tdim)
      return bad_index (call, lens[b], tdim, error);
  }
  for (int64_t e = 0; e < n; e++) {
    int64_t t = idx[p->axis], len = lens[idx[p->axis2]];
    int64_t src = e;
    if (t < len)
      src = e + (len - 1 - 2 * t) * xs[p->axis];
    copy_elem (y + e * p->esize, x + src * p->esize, p->esize);
    next_index (&p->in, idx);
  }
  return TRUE;
}

const NnpCpuKernel nnp_cpu_reverse_sequence = { .run = reverse_sequence_run };

/* ---------------------------------------------------------------- Size, CastLike */

static gboolean
size_run (const NnpCpuCall *call, GError **error)
{
  (void) error;
  *(int64_t *) call->outputs[0]->data = nnp_tensor_numel (call->inputs[0]);
  return TRUE;
}

static gboolean
cast_like_run (const NnpCpuCall *call, GError **error)
{
  return nnp_cpu_cast.run (call, error);
}

const NnpCpuKernel nnp_cpu_size = { .run = size_run };
const NnpCpuKernel nnp_cpu_cast_like = { .run = cast_like_run };
