/* libnnpipe internal: what the CPU elementwise kernels (cpu-elementwise.c)
 * and Cast (cpu-cast.c) share: the work split and the element-type
 * X-macros. */
#pragma once

#include "backends/cpu/cpu.h"

#include <math.h>

G_BEGIN_DECLS

/* Elements per work item of a flat loop (and the longest row block). */
#define BLOCK_ELEMS 16384

/* Run fn over n_items work items of item_elems elements each: on the pool
 * when the total is large, else inline (cpu-elementwise.c). */
void nnp_cpu_run_items (NnpThreadPool *pool, gsize n_items, gsize item_elems, NnpParallelFunc fn,
                        gpointer data);

/* ---------------------------------------------------------------- element types */

/* X-macro of the numeric element types:
 * M (suffix, C type, wrap-around type, kind, dtype, lowest, highest)
 * kind: F float, S signed integer, U unsigned integer.  Integer arithmetic
 * is done in the unsigned "wrap" type (no signed overflow). */
#define NUMERIC_TYPES(M) \
  M (f32, float, float, F, NNP_DTYPE_FLOAT32, -INFINITY, INFINITY) \
  M (f64, double, double, F, NNP_DTYPE_FLOAT64, -INFINITY, INFINITY) \
  INT_TYPES (M)
#define INT_TYPES(M) \
  M (i8, gint8, guint, S, NNP_DTYPE_INT8, G_MININT8, G_MAXINT8) \
  M (u8, guint8, guint, U, NNP_DTYPE_UINT8, 0, G_MAXUINT8) \
  M (i16, gint16, guint, S, NNP_DTYPE_INT16, G_MININT16, G_MAXINT16) \
  M (u16, guint16, guint, U, NNP_DTYPE_UINT16, 0, G_MAXUINT16) \
  M (i32, gint32, guint32, S, NNP_DTYPE_INT32, G_MININT32, G_MAXINT32) \
  M (u32, guint32, guint32, U, NNP_DTYPE_UINT32, 0, G_MAXUINT32) \
  M (i64, gint64, guint64, S, NNP_DTYPE_INT64, G_MININT64, G_MAXINT64) \
  M (u64, guint64, guint64, U, NNP_DTYPE_UINT64, 0, G_MAXUINT64)

#define DTYPE_TABLE_SIZE (NNP_DTYPE_UINT64 + 1)

G_END_DECLS
