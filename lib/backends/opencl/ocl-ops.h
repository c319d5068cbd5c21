/* libnnpipe internal: what the OpenCL launch code of every op family shares.
 *
 * One file per op family, as in the CPU backend (lib/backends/cpu/cpu-*.c):
 *   ocl-conv.c         Conv, ConvTranspose (cpu-conv.c, cpu-conv-transpose.c)
 *   ocl-matmul.c       MatMul, Gemm
 *   ocl-nn.c           BatchNormalization, Softmax, LogSoftmax, ArgMax, Pad
 *   ocl-pool.c         MaxPool, AveragePool, GlobalAveragePool, GlobalMaxPool
 *   ocl-reduce.c       ReduceMean/Sum/Max/Min (and the row reduction the
 *                      global pools use)
 *   ocl-resize.c       Resize
 *   ocl-elementwise.c  unary ops, broadcast binary ops, comparisons, Where
 *   ocl-cast.c         Cast
 *   ocl-shape.c        copies, Shape/Range/ConstantOfShape, Transpose, Slice,
 *                      Expand, Concat, Split, Gather
 * Each op `id` of include/nnpipe/op-list.h has its kernel
 *   const NnpOclKernel nnp_ocl_kernel_<id>;
 * in one of them; the table in ocl-kernels.c is generated from op-list.h, so a
 * new op without one does not link.  An op without an OpenCL kernel gets an
 * empty one (prepare NULL, see nnp_ocl_kernel_constant): the partitioner
 * keeps it on the CPU.
 *
 * Each node gets its own cl_kernel objects in `prepare` (kernel arguments
 * are per kernel object, so stages running in different threads never share
 * one), plus whatever tables the op needs on the device.  `run` sets the
 * arguments (device locations change between runs only at stage boundaries)
 * and enqueues on the device's in-order queue. */
#pragma once

#include "backends/opencl/opencl.h"
#include "backends/opencl/ocl-codes.h"

G_BEGIN_DECLS

#define NNP_OP(ID, id, onnx, ...) extern const NnpOclKernel nnp_ocl_kernel_##id;
#include <nnpipe/op-list.h>
#undef NNP_OP

/* Host mirror of the kernels' Act (kernels/common.cl; 4-byte fields only). */
typedef struct {
  cl_int act; /* NnpActivation */
  cl_float alpha, beta;
} NnpOclActArg;

/* The part of every node's state that the shared helpers know: a family's
 * state struct starts with it and is allocated by nnp_ocl_state_new. */
typedef struct {
  cl_kernel k[2];
  int n_kernels;
  cl_mem tables[2]; /* device tables owned by the state, or NULL */
  NnpOclActArg act; /* the node's fused activation */
  gsize esize;      /* element size of data-movement kernels */
} NnpOclState;

/* A zeroed state of `size` bytes (>= sizeof (NnpOclState)) with kernels k0
 * and k1 (either may be NULL) of program `file` and the node's activation;
 * errors name the node. */
gpointer nnp_ocl_state_new (NnpOclDevice *dev, const NnpNode *node, gsize size, const char *file,
                            const char *k0, const char *k1, GError **error);
/* Releases the kernels and tables, frees the state. */
void nnp_ocl_state_free (gpointer state);

/* Kernel arguments in order; the first error is kept (and reported by the
 * launch). */
typedef struct {
  cl_kernel k;
  cl_uint i;
  cl_int err;
} NnpOclArgs;

void nnp_ocl_arg_raw (NnpOclArgs *a, size_t size, const void *value);
void nnp_ocl_arg_int (NnpOclArgs *a, int v);
void nnp_ocl_arg_float (NnpOclArgs *a, float v);
/* A tensor: buffer + element offset. */
void nnp_ocl_arg_mem (NnpOclArgs *a, const NnpOclMem *m, gsize esize);

/* Enqueue: one item per element (global size rounded up to 64, the kernel
 * checks its index), or an explicit range.  Nothing is enqueued for an
 * empty range. */
gboolean nnp_ocl_launch_1d (const NnpOclCall *call, NnpOclArgs *a, size_t n, GError **error);
gboolean nnp_ocl_launch (const NnpOclCall *call, NnpOclArgs *a, cl_uint dims, const size_t *global,
                         const size_t *local, GError **error);
/* Set the node's error for a failed CL call; returns FALSE. */
gboolean nnp_ocl_call_error (const NnpOclCall *call, cl_int err, const char *what, GError **error);
/* Largest work-group the kernel can run with on this device. */
size_t nnp_ocl_work_group_max (NnpOclDevice *dev, cl_kernel k);
gboolean nnp_ocl_copy_buffer (const NnpOclCall *call, const NnpOclMem *src, const NnpOclMem *dst,
                              gsize bytes, GError **error);

gsize nnp_ocl_value_nbytes (const NnpValue *v);
NnpDType nnp_ocl_in_dtype (const NnpGraph *graph, const NnpNode *node, int k);
NnpDType nnp_ocl_out_dtype (const NnpGraph *graph, const NnpNode *node, int k);

/* supports() helpers: set *why to "<OpType>: what" and return FALSE. */
gboolean nnp_ocl_reject (char **why, const NnpNode *node, const char *what);
gboolean nnp_ocl_float_io (const NnpGraph *graph, const NnpNode *node, char **why);
gboolean nnp_ocl_no_act (const NnpNode *node, char **why);

/* "1", "2", "4", "8": suffix of the copy.cl kernels for an element size,
 * NULL for other sizes. */
const char *nnp_ocl_esize_suffix (gsize esize);

/* Row reductions (ocl-reduce.c), also the global pools': reduce_rows_f32
 * over rows x len contiguous elements, one work-group per row. */
typedef struct {
  NnpOclState base;
  size_t local; /* work-group size of reduce_rows_f32 */
} NnpOclRowsState;

/* A state of `size` bytes (>= sizeof (NnpOclRowsState)) with kernels
 * reduce_rows_f32 and reduce_general_f32. */
NnpOclRowsState *nnp_ocl_rows_state_new (NnpOclDevice *dev, const NnpNode *node, gsize size,
                                         GError **error);
/* op: NNP_OCL_RED_* */
gboolean nnp_ocl_rows_run (const NnpOclCall *call, NnpOclRowsState *s, size_t rows, size_t len,
                           int op, GError **error);

G_END_DECLS
