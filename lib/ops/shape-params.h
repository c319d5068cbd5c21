/* libnnpipe internal: parsed parameters of the shape / data-movement ops,
 * filled by nnp_op_<id>_infer (lib/ops/ops-shape.c) into node->params and
 * read by the CPU kernels (lib/backends/cpu/cpu-shape.c).
 *
 * Every struct is plain data (no pointers): nnp_graph_copy() duplicates
 * params with a byte copy. */
#pragma once

#include <nnpipe/tensor.h>

G_BEGIN_DECLS

/* Most inputs of Concat / outputs of Split (op-list.h says 64). */
#define NNP_SHAPE_MAX_IO 64

/* Copy of a strided view of the input into the contiguous output, in output
 * order: output element (i0, .., ir-1) comes from the input byte
 *   src_offset + sum_k i_k * src_strides[k].
 * Strides may be 0 (broadcast, Expand) or negative (Slice with a negative
 * step).  Used by Transpose, Slice and Expand.  Built by
 * nnp_strided_copy_init(), which drops size-1 dims and merges dims that are
 * contiguous in the input, so that the last axis is a memcpy run whenever
 * the data allows it. */
typedef struct {
  int rank;                          /* >= 1 after init */
  int tile_axis;                     /* Transpose-like: the axis (< rank - 1) with
                                      * src stride == esize when the last axis has
                                      * another stride, else -1: the kernel then
                                      * copies in 2-D tiles over (tile_axis, last) */
  int64_t esize;                     /* bytes per element */
  int64_t dims[NNP_MAX_RANK];        /* output dims; dims[0] == 0 for an empty output */
  int64_t src_strides[NNP_MAX_RANK]; /* bytes */
  int64_t src_offset;                /* bytes */
} NnpStridedCopy;

/* rank/dims/strides/offset in elements as seen from the output; strides may be
 * 0 or negative.  rank may be 0 (a scalar). */
void nnp_strided_copy_init (NnpStridedCopy *copy, gsize esize, int rank, const int64_t *dims,
                            const int64_t *src_strides, int64_t src_offset);

/* Transpose, Slice, Expand */
typedef struct {
  NnpStridedCopy copy;
} NnpCopyParams;

/* Dropout: the optional mask output is filled with one element value. */
typedef struct {
  int64_t mask_esize;   /* bytes per mask element (1 for bool) */
  guint8 mask_value[8]; /* "true" / 1.0 in the mask's dtype */
} NnpDropoutParams;

/* Shape: output = input dims [start, end). */
typedef struct {
  int start, end;
} NnpShapeParams;

/* Concat (inputs -> output) and Split (input -> outputs) along one axis:
 * both tensors viewed as outer x row, row = dims[axis] * inner * esize. */
typedef struct {
  int axis;
  int n_parts;                        /* inputs of Concat, outputs of Split */
  int64_t outer;                      /* product of dims before axis */
  int64_t whole_row;                  /* bytes of one row of the joined tensor */
  int64_t part_row[NNP_SHAPE_MAX_IO]; /* bytes of one row of each part */
} NnpConcatParams;

/* Gather: data viewed as outer x axis_dim x inner. */
typedef struct {
  int axis;
  int index_esize; /* 4 (int32) or 8 (int64) */
  int64_t outer;
  int64_t axis_dim;
  int64_t inner_bytes; /* bytes of one gathered slice */
  int64_t n_indices;
} NnpGatherParams;

/* ConstantOfShape: output filled with one element value. */
typedef struct {
  int64_t esize;
  guint8 value[8];
} NnpFillParams;

/* Range: out[i] = start + i * delta, computed in the output dtype's domain. */
typedef struct {
  NnpDType dtype; /* FLOAT32, FLOAT64, INT16, INT32 or INT64 */
  int64_t count;
  int64_t istart, idelta; /* integer dtypes */
  double fstart, fdelta;  /* float dtypes */
} NnpRangeParams;

G_END_DECLS
