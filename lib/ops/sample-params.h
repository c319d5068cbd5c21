/* libnnpipe internal: parsed parameters of GridSample, RoiAlign and
 * MaxUnpool (lib/ops/ops-sample.c), read by lib/backends/cpu/cpu-sample.c.
 * Plain data (nnp_graph_copy() duplicates params with a byte copy). */
#pragma once

#include <nnpipe/tensor.h>

G_BEGIN_DECLS

typedef enum {
  NNP_SAMPLE_LINEAR,
  NNP_SAMPLE_NEAREST,
  NNP_SAMPLE_CUBIC,
} NnpSampleMode;

typedef enum {
  NNP_SAMPLE_PAD_ZEROS,
  NNP_SAMPLE_PAD_BORDER,
  NNP_SAMPLE_PAD_REFLECTION,
} NnpSamplePad;

typedef struct {
  NnpDType dtype; /* FLOAT32 or FLOAT64 */
  NnpShape in, out;
  NnpShape unpooled;      /* MaxUnpool: the shape its indices count in (from the pool attributes) */
  NnpSampleMode mode;     /* GridSample; RoiAlign: LINEAR avg, NEAREST max */
  NnpSamplePad padding;   /* GridSample */
  gboolean align_corners; /* GridSample; RoiAlign: half_pixel */
  float spatial_scale;    /* RoiAlign */
  int64_t sampling_ratio;
} NnpSampleParams;

G_END_DECLS
