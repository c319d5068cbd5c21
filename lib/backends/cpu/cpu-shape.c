/* CPU kernels for the shape / data-movement ops.  All of them are byte
 * moves driven by the params of lib/ops/shape-params.h; none looks at the
 * element type except Range (arithmetic) and Shape (writes int64).
 *
 * Ops whose output is a plain copy of the input (Identity, Reshape,
 * Flatten, Squeeze, Unsqueeze, Dropout) skip the copy when the executor
 * hands in the same buffer for input and output. */
#include "backends/cpu/cpu.h"
#include "ops/shape-params.h"

#include <string.h>

/* Below this many bytes a copy runs on the calling thread. */
#define PAR_MIN_BYTES (256 * 1024)
/* Transpose tiles are TILE x TILE elements. */
#define TILE 32

static void
copy_bytes (void *dst, const void *src, gsize n)
{
  if (dst != src && n > 0)
    memcpy (dst, src, n);
}

/* ---------------------------------------------------------------- Constant */

static gboolean
constant_run (const NnpCpuCall *call, GError **error)
{
  const NnpValue *v = nnp_node_output (call->graph, call->node, 0);
  NnpTensor *out = call->outputs[0];

  if (out == NULL)
    return TRUE;
  if (v == NULL || v->constant == NULL || v->constant->nbytes != out->nbytes) {
    nnp_node_set_error (error, NNP_ERROR_INVALID, call->node,
                        "output has no constant value of the inferred size");
    return FALSE;
  }
  copy_bytes (out->data, v->constant->data, out->nbytes);
  return TRUE;
}

const NnpCpuKernel nnp_cpu_constant = { .run = constant_run };

/* ---------------------------------------------------------------- plain copies */

static gboolean
copy_run (const NnpCpuCall *call, GError **error)
{
  const NnpTensor *x = call->inputs[0];
  NnpTensor *out = call->outputs[0];

  g_return_val_if_fail (x != NULL && out != NULL && x->nbytes == out->nbytes, FALSE);
  copy_bytes (out->data, x->data, out->nbytes);
  return TRUE;
}

const NnpCpuKernel nnp_cpu_identity = { .run = copy_run };
const NnpCpuKernel nnp_cpu_reshape = { .run = copy_run };
const NnpCpuKernel nnp_cpu_flatten = { .run = copy_run };
const NnpCpuKernel nnp_cpu_squeeze = { .run = copy_run };
const NnpCpuKernel nnp_cpu_unsqueeze = { .run = copy_run };

/* Fill n elements of esize bytes with one value. */
static void
fill (guint8 *dst, gsize n, const guint8 *value, gsize esize)
{
  gboolean zero = TRUE;

  for (gsize k = 0; k < esize; k++)
    zero = zero && value[k] == 0;
  if (zero || esize == 1) {
    memset (dst, value[0], n * esize);
    return;
  }
  switch (esize) {
    case 2: {
      guint16 v, *d = (guint16 *) dst;
      memcpy (&v, value, 2);
      for (gsize i = 0; i < n; i++)
        d[i] = v;
      break;
    }
    case 4: {
      guint32 v, *d = (guint32 *) dst;
      memcpy (&v, value, 4);
      for (gsize i = 0; i < n; i++)
        d[i] = v;
      break;
    }
    case 8: {
      guint64 v, *d = (guint64 *) dst;
      memcpy (&v, value, 8);
      for (gsize i = 0; i < n; i++)
        d[i] = v;
      break;
    }
    default:
      for (gsize i = 0; i < n; i++)
        memcpy (dst + i * esize, value, esize);
      break;
  }
}

static gboolean
dropout_run (const NnpCpuCall *call, GError **error)
{
  const NnpDropoutParams *p = call->node->params;
  NnpTensor *mask = call->node->n_outputs > 1 ? call->outputs[1] : NULL;

  if (!copy_run (call, error))
    return FALSE;
  if (mask != NULL) {
    g_return_val_if_fail (p != NULL && p->mask_esize > 0, FALSE);
    fill (mask->data, mask->nbytes / (gsize) p->mask_esize, p->mask_value, (gsize) p->mask_esize);
  }
  return TRUE;
}

const NnpCpuKernel nnp_cpu_dropout = { .run = dropout_run };

/* ---------------------------------------------------------------- Shape */

static gboolean
shape_run (const NnpCpuCall *call, GError **error)
{
  const NnpShapeParams *p = call->node->params;
  const NnpTensor *x = call->inputs[0];
  NnpTensor *out = call->outputs[0];
  int64_t *o = out->data;

  g_return_val_if_fail (p != NULL && x != NULL, FALSE);
  g_return_val_if_fail (out->nbytes == (gsize) (p->end - p->start) * sizeof (int64_t), FALSE);
  for (int k = p->start; k < p->end; k++)
    o[k - p->start] = x->shape.dims[k];
  return TRUE;
}

const NnpCpuKernel nnp_cpu_shape = { .run = shape_run };

/* ---------------------------------------------------------------- strided copy */

/* Copy n elements of esize bytes, src stride in bytes, dst contiguous. */
static void
gather_run (guint8 *dst, const guint8 *src, int64_t stride, gsize n, gsize esize)
{
  if (stride == (int64_t) esize) {
    memcpy (dst, src, n * esize);
    return;
  }
#define STRIDED(T) \
  for (gsize i = 0; i < n; i++) \
    memcpy (dst + i * sizeof (T), src + (gssize) i * stride, sizeof (T));
  switch (esize) {
    case 1:
      for (gsize i = 0; i < n; i++)
        dst[i] = src[(gssize) i * stride];
      break;
    case 2: STRIDED (guint16); break;
    case 4: STRIDED (guint32); break;
    case 8: STRIDED (guint64); break;
    default:
      for (gsize i = 0; i < n; i++)
        memcpy (dst + i * esize, src + (gssize) i * stride, esize);
      break;
  }
#undef STRIDED
}

/* Replicate one element n times (Expand along the last axis). */
static void
splat_run (guint8 *dst, const guint8 *src, gsize n, gsize esize)
{
  fill (dst, n, src, esize);
}

/* Tiled 2-D copy: out[i][j] (row length out_row elements, i < rows, j <
 * cols) = src[i * esize + j * col_stride] (the tile axis is contiguous in
 * the source, the last axis is not). */
static void
tile_copy (guint8 *dst, int64_t out_row, const guint8 *src, int64_t col_stride, int64_t rows,
           int64_t cols, gsize esize)
{
  for (int64_t i0 = 0; i0 < rows; i0 += TILE) {
    int64_t i1 = MIN (i0 + TILE, rows);
    for (int64_t j0 = 0; j0 < cols; j0 += TILE) {
      int64_t j1 = MIN (j0 + TILE, cols);
#define TILE_LOOP(T) \
  for (int64_t i = i0; i < i1; i++) { \
    T *d = (T *) (dst + (gsize) (i * out_row) * sizeof (T)); \
    const guint8 *s = src + (gsize) i * sizeof (T); \
    for (int64_t j = j0; j < j1; j++) \
      memcpy (&d[j], s + j * col_stride, sizeof (T)); \
  }
      switch (esize) {
        case 1: TILE_LOOP (guint8); break;
        case 2: TILE_LOOP (guint16); break;
        case 4: TILE_LOOP (guint32); break;
        case 8: TILE_LOOP (guint64); break;
        default:
          for (int64_t i = i0; i < i1; i++)
            for (int64_t j = j0; j < j1; j++)
              memcpy (dst + (gsize) (i * out_row + j) * esize,
                      src + (gssize) (i * (int64_t) esize + j * col_stride), esize);
          break;
      }
#undef TILE_LOOP
    }
  }
}

typedef struct {
  const NnpStridedCopy *c;
  const guint8 *src;
  guint8 *dst;
  /* the iteration: "outer" dims are every dim except the last and (tiled)
   * the tile axis; work items are outer index x tile-axis blocks */
  int n_outer;
  int outer_axes[NNP_MAX_RANK];
  int64_t out_strides[NNP_MAX_RANK]; /* output strides in elements */
  int64_t tile_blocks;               /* 1 when not tiled */
} StridedJob;

static void
strided_work (gpointer data, gsize begin, gsize end, int thread)
{
  const StridedJob *job = data;
  const NnpStridedCopy *c = job->c;
  const int last = c->rank - 1;
  const gsize esize = (gsize) c->esize;

  (void) thread;
  for (gsize item = begin; item < end; item++) {
    int64_t outer = (int64_t) item / job->tile_blocks;
    int64_t blk = (int64_t) item % job->tile_blocks;
    int64_t src_off = c->src_offset, dst_off = 0;

    for (int k = job->n_outer - 1; k >= 0; k--) {
      int a = job->outer_axes[k];
      int64_t idx = outer % c->dims[a];
      outer /= c->dims[a];
      src_off += idx * c->src_strides[a];
      dst_off += idx * job->out_strides[a];
    }
    if (c->tile_axis >= 0) {
      int t = c->tile_axis;
      int64_t i0 = blk * TILE, rows = MIN ((int64_t) TILE, c->dims[t] - i0);
      src_off += i0 * c->src_strides[t];
      dst_off += i0 * job->out_strides[t];
      tile_copy (job->dst + dst_off * (int64_t) esize, job->out_strides[t], job->src + src_off,
                 c->src_strides[last], rows, c->dims[last], esize);
    } else if (c->src_strides[last] == 0) {
      splat_run (job->dst + dst_off * (int64_t) esize, job->src + src_off, (gsize) c->dims[last],
                 esize);
    } else {
      gather_run (job->dst + dst_off * (int64_t) esize, job->src + src_off, c->src_strides[last],
                  (gsize) c->dims[last], esize);
    }
  }
}

static gboolean
strided_run (const NnpCpuCall *call, GError **error)
{
  const NnpCopyParams *p = call->node->params;
  const NnpStridedCopy *c;
  const NnpTensor *x = call->inputs[0];
  NnpTensor *out = call->outputs[0];
  StridedJob job;
  int64_t n_items = 1, s = 1;

  g_return_val_if_fail (p != NULL && x != NULL && out != NULL, FALSE);
  c = &p->copy;
  if (c->rank < 1 || c->dims[0] == 0 || out->nbytes == 0)
    return TRUE;
  memset (&job, 0, sizeof (job));
  job.c = c;
  job.src = x->data;
  job.dst = out->data;
  for (int k = c->rank - 1; k >= 0; k--) {
    job.out_strides[k] = s;
    s *= c->dims[k];
  }
  for (int k = 0; k < c->rank - 1; k++) {
    if (k == c->tile_axis)
      continue;
    job.outer_axes[job.n_outer++] = k;
    n_items *= c->dims[k];
  }
  job.tile_blocks = c->tile_axis >= 0 ? (c->dims[c->tile_axis] + TILE - 1) / TILE : 1;
  n_items *= job.tile_blocks;
  if (call->pool == NULL || out->nbytes < PAR_MIN_BYTES || n_items == 1)
    strided_work (&job, 0, (gsize) n_items, 0);
  else
    nnp_parallel_for (call->pool, (gsize) n_items,
                      MAX ((gsize) 1, (gsize) n_items * PAR_MIN_BYTES / 4 / out->nbytes),
                      strided_work, &job);
  return TRUE;
}

const NnpCpuKernel nnp_cpu_transpose = { .run = strided_run };
const NnpCpuKernel nnp_cpu_slice = { .run = strided_run };
const NnpCpuKernel nnp_cpu_expand = { .run = strided_run };

/* ---------------------------------------------------------------- Concat, Split */

/* Concat in chunks of the output of this many bytes, one task each (a
 * large concatenation is a copy bound by memory bandwidth, which two
 * cores share better than one uses) */
#define CONCAT_CHUNK (256 * 1024)

typedef struct {
  const NnpConcatParams *p;
  const NnpCpuCall *call;
  guint8 *dst;
  gsize total;
} ConcatCtx;

/* Output bytes [begin * CONCAT_CHUNK, end * CONCAT_CHUNK): output row o
 * is the parts' rows o, one after another. */
static void
concat_chunks (gpointer data, gsize begin, gsize end, int thread)
{
  const ConcatCtx *c = data;
  const NnpConcatParams *p = c->p;
  gsize at = begin * CONCAT_CHUNK, stop = MIN (end * CONCAT_CHUNK, c->total);
  gsize o = at / (gsize) p->whole_row, in_row = at % (gsize) p->whole_row;
  int i = 0;

  /* the part holding byte in_row of row o */
  while (in_row >= (gsize) p->part_row[i]) {
    in_row -= (gsize) p->part_row[i];
    i++;
  }
  while (at < stop) {
    gsize row = (gsize) p->part_row[i], n = MIN (row - in_row, stop - at);

    memcpy (c->dst + at, (const guint8 *) c->call->inputs[i]->data + o * row + in_row, n);
    at += n;
    in_row = 0;
    if (++i == p->n_parts) {
      i = 0;
      o++;
    }
  }
}

static gboolean
concat_run (const NnpCpuCall *call, GError **error)
{
  const NnpConcatParams *p = call->node->params;
  ConcatCtx c;

  g_return_val_if_fail (p != NULL, FALSE);
  c.p = p;
  c.call = call;
  c.dst = call->outputs[0]->data;
  c.total = (gsize) p->outer * (gsize) p->whole_row;
  if (c.total > 0)
    nnp_parallel_for (call->pool, (c.total + CONCAT_CHUNK - 1) / CONCAT_CHUNK, 1, concat_chunks,
                      &c);
  return TRUE;
}

static gboolean
split_run (const NnpCpuCall *call, GError **error)
{
  const NnpConcatParams *p = call->node->params;
  const guint8 *src = call->inputs[0]->data;

  g_return_val_if_fail (p != NULL, FALSE);
  for (int64_t o = 0; o < p->outer; o++) {
    for (int i = 0; i < p->n_parts; i++) {
      NnpTensor *y = i < call->node->n_outputs ? call->outputs[i] : NULL;
      gsize row = (gsize) p->part_row[i];
      if (y != NULL && row > 0)
        memcpy ((guint8 *) y->data + (gsize) o * row, src, row);
      src += row;
    }
  }
  return TRUE;
}

const NnpCpuKernel nnp_cpu_concat = { .run = concat_run };
const NnpCpuKernel nnp_cpu_split = { .run = split_run };

/* ---------------------------------------------------------------- Gather */

static gboolean
gather_op_run (const NnpCpuCall *call, GError **error)
{
  const NnpGatherParams *p = call->node->params;
  const guint8 *data = call->inputs[0]->data;
  const void *indices = call->inputs[1]->data;
  guint8 *dst = call->outputs[0]->data;
  gsize inner;

  g_return_val_if_fail (p != NULL, FALSE);
  inner = (gsize) p->inner_bytes;
  /* validate every index once, before any copy */
  for (int64_t j = 0; j < p->n_indices; j++) {
    int64_t idx =
        p->index_esize == 8 ? ((const int64_t *) indices)[j] : ((const int32_t *) indices)[j];
    if (idx < -p->axis_dim || idx >= p->axis_dim) {
      nnp_node_set_error (error, NNP_ERROR_INVALID, call->node,
                          "index %" G_GINT64_FORMAT
                          " is out of range for axis %d of size %" G_GINT64_FORMAT,
                          idx, p->axis, p->axis_dim);
      return FALSE;
    }
  }
  if (inner == 0)
    return TRUE;
  for (int64_t o = 0; o < p->outer; o++) {
    const guint8 *base = data + (gsize) (o * p->axis_dim) * inner;
    for (int64_t j = 0; j < p->n_indices; j++) {
      int64_t idx =
          p->index_esize == 8 ? ((const int64_t *) indices)[j] : ((const int32_t *) indices)[j];
      if (idx < 0)
        idx += p->axis_dim;
      memcpy (dst, base + (gsize) idx * inner, inner);
      dst += inner;
    }
  }
  return TRUE;
}

const NnpCpuKernel nnp_cpu_gather = { .run = gather_op_run };

/* ---------------------------------------------------------------- ConstantOfShape, Range */

static gboolean
constant_of_shape_run (const NnpCpuCall *call, GError **error)
{
  const NnpFillParams *p = call->node->params;
  NnpTensor *out = call->outputs[0];

  g_return_val_if_fail (p != NULL && p->esize > 0, FALSE);
  fill (out->data, out->nbytes / (gsize) p->esize, p->value, (gsize) p->esize);
  return TRUE;
}

const NnpCpuKernel nnp_cpu_constant_of_shape = { .run = constant_of_shape_run };

static gboolean
range_run (const NnpCpuCall *call, GError **error)
{
  const NnpRangeParams *p = call->node->params;
  void *o = call->outputs[0]->data;

  g_return_val_if_fail (p != NULL, FALSE);
  for (int64_t i = 0; i < p->count; i++) {
    switch (p->dtype) {
      case NNP_DTYPE_FLOAT32:
        /* accumulate like the reference: start + i * delta in float */
        ((float *) o)[i] = (float) p->fstart + (float) i * (float) p->fdelta;
        break;
      case NNP_DTYPE_FLOAT64: ((double *) o)[i] = p->fstart + (double) i * p->fdelta; break;
      case NNP_DTYPE_INT16: ((gint16 *) o)[i] = (gint16) (p->istart + i * p->idelta); break;
      case NNP_DTYPE_INT32: ((gint32 *) o)[i] = (gint32) (p->istart + i * p->idelta); break;
      default:
        ((gint64 *) o)[i] = (gint64) ((guint64) p->istart + (guint64) i * (guint64) p->idelta);
        break;
    }
  }
  return TRUE;
}

const NnpCpuKernel nnp_cpu_range = { .run = range_run };
