/* libnnpipe internal: the CPU backend's kernel interface.
 *
 * Every CPU kernel has the same signature.  The kernel table in
 * cpu-kernels.c is generated from op-list.h: each op `id` provides
 *   const NnpCpuKernel nnp_cpu_<id>;
 * in lib/backends/cpu/cpu-*.c.  A kernel reads parsed attributes from
 * call->node->params (filled by nnp_op_<id>_infer) and writes outputs that
 * the executor allocated with the inferred dtype and shape.
 *
 * Kernels must not allocate on the run path: scratch memory is requested by
 * `workspace` and handed in as call->scratch (64-byte aligned); per-node
 * state built once (packed weights) comes from `prepare` as call->state. */
#pragma once

#include <nnpipe/graph.h>
#include <nnpipe/error.h>
#include <nnpipe/ops.h>
#include "graph/graph-edit.h"
#include "backends/cpu/threadpool.h"

G_BEGIN_DECLS

typedef struct {
  const NnpGraph *graph;
  const NnpNode *node;
  NnpTensor *const *inputs;  /* node->n_inputs entries; NULL for an omitted input */
  NnpTensor *const *outputs; /* node->n_outputs entries; NULL for an omitted output */
  NnpThreadPool *pool;       /* may be NULL: single thread */
  void *scratch;             /* `workspace` bytes, or NULL */
  gpointer state;            /* from `prepare`, or NULL */
  /* A residual Add fused into this Conv by the executor (cpu-exec.c), or
   * NULL: the output becomes sum_act (output + sum), sum a tensor of the
   * output's shape (the Add's other operand), sum_act the Add's fused
   * activation.  The Conv kernel adds it while its tiles are in cache. */
  const NnpTensor *sum;
  NnpActivation sum_act;
  float sum_alpha, sum_beta;
  /* A bias Add fused into this MatMul by the executor, or NULL: the output
   * becomes sum_act (output + bias), bias n constants added to every row
   * (the Add's other operand, broadcast along the last axis only), the
   * MatMul's own activation none.  Added, with the activation, in the GEMM's
   * tile store. */
  const NnpTensor *bias;
} NnpCpuCall;

typedef struct {
  /* Run the node.  Returns FALSE with an error for conditions only visible
   * at run time (e.g. an index out of range in Gather's data). */
  gboolean (*run) (const NnpCpuCall *call, GError **error);
  /* Optional: scratch bytes the kernel needs for this node. */
  gsize (*workspace) (const NnpGraph *graph, const NnpNode *node);
  /* Optional: build per-node state once (prepack constant weights). */
  gpointer (*prepare) (const NnpGraph *graph, const NnpNode *node, GError **error);
  GDestroyNotify free_state;
  /* Optional: the algorithm the prepared state chose when it is not the
   * one node->params names (--profile's kinds: "winograd"), or NULL. */
  const char *(*algo_name) (gconstpointer state);
} NnpCpuKernel;

#define NNP_OP(ID, id, onnx, ...) extern const NnpCpuKernel nnp_cpu_##id;
#include <nnpipe/op-list.h>
#undef NNP_OP

/* Kernel for an op; NULL for NNP_OP_UNKNOWN. */
const NnpCpuKernel *nnp_cpu_kernel (NnpOpType op);

/* Apply a fused activation in place to n floats (NNP_ACT_NONE: nothing). */
void nnp_cpu_apply_activation (float *x, gsize n, NnpActivation act, float alpha, float beta);

G_END_DECLS
