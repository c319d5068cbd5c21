/* libnnpipe internal: parsed parameters of the "nn" ops (BatchNormalization,
 * pools, Softmax, Resize, Pad, reductions, ArgMax), filled by
 * nnp_op_<id>_infer (lib/ops/ops-nn.c) into node->params and read by the
 * CPU kernels (lib/backends/cpu/cpu-nn.c, cpu-pool.c, cpu-resize.c,
 * cpu-reduce.c).
 *
 * Every struct is plain data (no pointers): nnp_graph_copy() duplicates
 * params with a byte copy.  Index/weight tables that depend on the params
 * (Resize) are built by the kernel's `prepare`, not stored here. */
#pragma once

#include <nnpipe/graph.h>

G_BEGIN_DECLS

/* BatchNormalization (inference): input viewed as n x c x inner;
 * y = (x - mean[c]) * scale[c] / sqrt(var[c] + epsilon) + bias[c]. */
typedef struct {
  float epsilon;
  int64_t n, c, inner;
} NnpBatchNormParams;

/* Most spatial dims of a pool. */
#define NNP_POOL_MAX_SPATIAL 3

/* MaxPool / AveragePool / GlobalAveragePool / GlobalMaxPool.  Input viewed
 * as (n * c) planes of 1 to 3 spatial dims; 1-D and 2-D pools are stored as
 * 3-D ones with leading spatial dims of size 1 (kernel 1, stride 1, no pads),
 * so in[] / out[] always hold 3 dims (d, h, w). */
typedef struct {
  NnpDType dtype;                    /* FLOAT32 (MaxPool also UINT8, INT8) */
  int64_t planes;                    /* n * c */
  int64_t in[NNP_POOL_MAX_SPATIAL];  /* input spatial dims (d, h, w) */
  int64_t out[NNP_POOL_MAX_SPATIAL]; /* output spatial dims */
  int64_t kernel[NNP_POOL_MAX_SPATIAL];
  int64_t stride[NNP_POOL_MAX_SPATIAL];
  int64_t dilation[NNP_POOL_MAX_SPATIAL];
  int64_t pad_begin[NNP_POOL_MAX_SPATIAL];
  int64_t pad_end[NNP_POOL_MAX_SPATIAL];
  gboolean count_include_pad; /* AveragePool */
} NnpPoolParams;

/* Softmax / LogSoftmax: input viewed as outer x dim x inner, normalised along
 * dim (inner == 1 for the opset < 13 "coerce to 2-D" form). */
typedef struct {
  int64_t outer, dim, inner;
} NnpSoftmaxParams;

typedef enum {
  NNP_RESIZE_NEAREST,
  NNP_RESIZE_LINEAR,
  NNP_RESIZE_CUBIC,
} NnpResizeMode;

typedef enum {
  NNP_RESIZE_HALF_PIXEL,
  NNP_RESIZE_HALF_PIXEL_SYMMETRIC,
  NNP_RESIZE_PYTORCH_HALF_PIXEL,
  NNP_RESIZE_ALIGN_CORNERS,
  NNP_RESIZE_ASYMMETRIC,
  NNP_RESIZE_TF_CROP_AND_RESIZE,
  NNP_RESIZE_TF_HALF_PIXEL_FOR_NN,
} NnpResizeCoord;

typedef enum {
  NNP_RESIZE_ROUND_PREFER_FLOOR,
  NNP_RESIZE_ROUND_PREFER_CEIL,
  NNP_RESIZE_FLOOR,
  NNP_RESIZE_CEIL,
} NnpResizeNearest;

/* Resize: every axis of the input.  The output coordinate x of axis k maps
 * to the input coordinate given by `coord` with scale[k] (and roi for
 * tf_crop_and_resize); the CPU kernel turns that into index/weight tables in
 * its prepare.  Opset 10 is stored as asymmetric with nearest_mode floor (as
 * ONNX's 10 -> 11 version converter does). */
typedef struct {
  NnpResizeMode mode;
  NnpResizeCoord coord;
  NnpResizeNearest nearest;
  NnpDType dtype; /* FLOAT32; nearest: any element size */
  int rank;
  float cubic_a;
  float extrapolation_value;
  gboolean exclude_outside;
  int64_t in[NNP_MAX_RANK];
  int64_t out[NNP_MAX_RANK];
  double scale[NNP_MAX_RANK];     /* out / in, or the given scale */
  double roi_start[NNP_MAX_RANK]; /* tf_crop_and_resize only, normalised coords */
  double roi_end[NNP_MAX_RANK];
} NnpResizeParams;

/* Resize's coordinate mapping (lib/ops/resize-coords.c), shared by the
 * backends.  Input coordinate of output coordinate x on axis k (*outside:
 * tf_crop_and_resize maps x outside the input). */
double nnp_resize_map_coord (const NnpResizeParams *p, int k, int64_t x, gboolean *outside);
/* Nearest mode: the input index of input coordinate xo, clamped. */
int64_t nnp_resize_nearest_index (const NnpResizeParams *p, int k, double xo);
/* Linear (taps 2) / cubic (taps 4): indices (clamped into the input) and
 * weights of input coordinate xo. */
void nnp_resize_interp_taps (const NnpResizeParams *p, int k, double xo, int taps, int64_t *idx,
                             float *w);

typedef enum {
  NNP_PAD_CONSTANT,
  NNP_PAD_REFLECT,
  NNP_PAD_EDGE,
  NNP_PAD_WRAP,
} NnpPadMode;

/* Pad: out[i] = in[i - pad_begin] per axis; pads may be negative (crop).
 * Out-of-range coordinates are mapped by `mode` (constant: `value`). */
typedef struct {
  NnpPadMode mode;
  int rank;
  int64_t esize;
  guint8 value[8]; /* constant in the element's dtype */
  int64_t in[NNP_MAX_RANK];
  int64_t out[NNP_MAX_RANK];
  int64_t pad_begin[NNP_MAX_RANK];
} NnpPadParams;

/* ReduceMean / ReduceSum / ReduceMax / ReduceMin.  The input's dims after
 * merging neighbours of the same kind (kept or reduced) and dropping size-1
 * dims: at most NNP_MAX_RANK alternating groups, group k reduced when
 * reduced[k].  `identity`: the output is a copy of the input (no axes with
 * noop_with_empty_axes, or only size-1 axes reduced). */
typedef struct {
  NnpDType dtype; /* FLOAT32, INT32, INT64 (Mean: FLOAT32) */
  int rank;       /* >= 1 */
  int64_t dims[NNP_MAX_RANK];
  gboolean reduced[NNP_MAX_RANK];
  int64_t count; /* input elements per output element */
  gboolean identity;
} NnpReduceParams;

/* Shape inference of every reduction (ops-nn.c): axes from input 1
 * (axes_from_input) or the 'axes' attribute, keepdims, noop_with_empty_axes;
 * float_only: FLOAT32 only, else also INT32 and INT64. */
gboolean nnp_op_reduce_infer (NnpGraph *graph, NnpNode *node, gboolean axes_from_input,
                              gboolean float_only, GError **error);

/* ArgMax / ArgMin: input viewed as outer x dim x inner, output int64 outer x inner. */
typedef struct {
  NnpDType dtype; /* FLOAT32, INT32, INT64 */
  int64_t outer, dim, inner;
  gboolean select_last_index;
  gboolean min; /* ArgMin */
} NnpArgMaxParams;

G_END_DECLS
