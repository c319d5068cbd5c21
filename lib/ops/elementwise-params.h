/* libnnpipe internal: parsed parameters of the elementwise ops, filled by
 * nnp_op_<id>_infer (lib/ops/ops-elementwise.c) into node->params and read
 * by the CPU kernels (lib/backends/cpu/cpu-elementwise.c).
 *
 * Every struct is plain data (no pointers): nnp_graph_copy() duplicates
 * params with a byte copy. */
#pragma once

#include <nnpipe/graph.h>

G_BEGIN_DECLS

/* Most inputs of Max / Min / Sum (op-list.h says 16). */
#define NNP_ELTWISE_MAX_INPUTS 16

/* How the inputs of a broadcasting op line up with the output; decides the
 * kernel's loop.  Every kind is also a valid GENERAL iteration. */
typedef enum {
  NNP_BCAST_GENERAL = 0, /* rows of the merged iteration (any mix) */
  NNP_BCAST_SAME,        /* every input has the output's shape: one flat loop */
  NNP_BCAST_SCALAR,      /* every input is the whole output or one element */
  NNP_BCAST_CHANNEL,     /* rows: inputs are whole or one element per row
                           * (NCHW bias / SE scale: [1,C,H,W] * [1,C,1,1]) */
  NNP_BCAST_INNER,       /* rows: inputs are whole or one repeated row ([N,C] + [C]) */
} NnpBroadcastKind;

/* Broadcast iteration of n inputs into the contiguous output (numpy rules).
 * Output dims of size 1 are dropped and neighbouring dims merged when every
 * input is contiguous across them, so the output is rows x dims[rank - 1].
 * Along the last dim every input has stride 0 or 1. */
typedef struct {
  NnpBroadcastKind kind;
  int n_inputs;
  int rank;                                              /* >= 1 */
  int64_t numel;                                         /* output elements */
  int64_t dims[NNP_MAX_RANK];                            /* merged output dims */
  int64_t strides[NNP_ELTWISE_MAX_INPUTS][NNP_MAX_RANK]; /* elements; 0 = broadcast */
} NnpBroadcast;

/* Plan the numpy broadcast of node inputs [0, n) (with the legacy opset < 7
 * `broadcast`/`axis` form for two inputs) into bc and the output shape;
 * FALSE with the node's error when the shapes do not broadcast
 * (lib/ops/ops-elementwise.c). */
gboolean nnp_op_plan_broadcast (const NnpGraph *graph, const NnpNode *node, int n, NnpBroadcast *bc,
                                NnpShape *out, GError **error);
/* The same for given shapes (errors name the node). */
gboolean nnp_op_plan_broadcast_shapes (const NnpNode *node, const NnpShape *const *shapes, int n,
                                       NnpBroadcast *bc, NnpShape *out, GError **error);

/* Add, Sub, Mul, Div, Pow, Max, Min, Sum, Equal, Less, Greater, Where. */
typedef struct {
  NnpBroadcast bc;
  NnpDType dtype;   /* element type of the operands (Where: of X and Y) */
  NnpDType dtype_b; /* Pow: exponent type; else == dtype */
} NnpBinaryParams;

/* The unary ops (activations, math, Clip, Cast). */
typedef struct {
  NnpDType dtype;    /* input element type */
  NnpDType to;       /* output element type (Cast); else == dtype */
  float alpha, beta; /* LeakyRelu alpha; HardSigmoid alpha, beta */
  /* Clip: a bound is present when has_*; it is min_value/max_value (one
   * element of dtype, raw bytes) unless *_input >= 0, in which case the
   * kernel reads it from that (non-constant) input at run time. */
  gboolean has_min, has_max;
  int min_input, max_input;
  guint8 min_value[8], max_value[8];
} NnpUnaryParams;

G_END_DECLS
