/* GStreamer nnpipe plugin: other/tensors caps <-> tensor infos.
 *
 * The caps follow NNStreamer's conventions, so nnpipe elements link with
 * NNStreamer elements and with plain filesrc/filesink:
 *
 *   other/tensors, format=(string)static, num_tensors=(int)2,
 *       types=(string)"float32,int64",
 *       dimensions=(string)"640:640:3:1,10:1",
 *       framerate=(fraction)30/1
 *
 * - dimensions are written innermost first: an ONNX (NCHW) tensor of shape
 *   1x3x640x640 is "640:640:3:1".  ':' separates dims of one tensor, ','
 *   separates tensors.  Trailing 1s may be omitted on input ("640:640:3" ==
 *   "640:640:3:1"), as in NNStreamer.
 * - types are nnp_dtype_name() names ("float32", "uint8", "int64", ...).
 * - one GstMemory per tensor in each buffer, in the order of the caps.
 * - the singular NNStreamer form (other/tensor, type=, dimension=) is
 *   accepted when parsing; nnpipe elements always produce other/tensors.
 *
 * Inside nnpipe shapes are kept in ONNX order (outermost first, NnpShape). */
#pragma once

#include <gst/gst.h>
#include <nnpipe/tensor.h>

G_BEGIN_DECLS

#define GST_NN_TENSORS_MEDIA_TYPE "other/tensors"
#define GST_NN_TENSOR_MEDIA_TYPE "other/tensor"
/* GStreamer buffers hold at most 16 memories. */
#define GST_NN_TENSORS_MAX 16

/* Template caps: any static other/tensors stream. */
#define GST_NN_TENSORS_CAPS_TEMPLATE \
  "other/tensors, format = (string) static, num_tensors = (int) [ 1, 16 ], " \
  "framerate = (fraction) [ 0/1, MAX ]"
/* Template caps that also accept NNStreamer's single-tensor form. */
#define GST_NN_TENSORS_CAPS_TEMPLATE_ANY \
  GST_NN_TENSORS_CAPS_TEMPLATE \
  "; " \
  "other/tensor, framerate = (fraction) [ 0/1, MAX ]"

typedef struct
{
  NnpDType dtype;
  NnpShape shape; /* ONNX order, outermost first; static */
} GstNnTensorInfo;

typedef struct
{
  guint n_tensors;
  GstNnTensorInfo tensors[GST_NN_TENSORS_MAX];
  gint fps_n, fps_d; /* 0/1 when unknown */
} GstNnTensorsInfo;

void gst_nn_tensors_info_init (GstNnTensorsInfo *info);

/* Parse a fixed other/tensors (or other/tensor) structure.  Fails with a
 * one-line message (for logs and element errors) when a field is missing,
 * unfixed or malformed.  A missing `format` is taken as static. */
gboolean gst_nn_tensors_info_from_structure (GstNnTensorsInfo *info,
    const GstStructure *s, GError **error);
/* Same on the first structure of caps. */
gboolean gst_nn_tensors_info_from_caps (GstNnTensorsInfo *info,
    const GstCaps *caps, GError **error);

/* New fixed other/tensors structure / caps (caller owns them). */
GstStructure *gst_nn_tensors_info_to_structure (const GstNnTensorsInfo *info);
GstCaps *gst_nn_tensors_info_to_caps (const GstNnTensorsInfo *info);

gboolean gst_nn_tensors_info_is_equal (const GstNnTensorsInfo *a,
    const GstNnTensorsInfo *b);

/* Bytes of tensor i (numel * dtype size), 0 when unknown. */
gsize gst_nn_tensor_info_get_size (const GstNnTensorInfo *info);
/* Sum of all tensor sizes. */
gsize gst_nn_tensors_info_get_size (const GstNnTensorsInfo *info);

/* "640:640:3:1" for an ONNX shape 1x3x640x640 (unknown dims are written
 * "?", rank 0 as "1").  Free with g_free(). */
gchar *gst_nn_dims_to_string (const NnpShape *shape);
/* Parse "640:640:3:1" into an ONNX-order shape (here 1x3x640x640).  Every dim
 * must be a positive integer; at most NNP_MAX_RANK dims. */
gboolean gst_nn_dims_from_string (const gchar *str, NnpShape *shape);
/* Fit a shape parsed from caps to a wanted rank the NNStreamer way: missing
 * outer dims are 1, extra outer dims must be 1.  FALSE if impossible. */
gboolean gst_nn_shape_fit_rank (const NnpShape *shape, gint rank,
    NnpShape *out);
/* NNStreamer equality: equal after dropping outer (trailing in caps) 1s. */
gboolean gst_nn_shape_is_compatible (const NnpShape *a, const NnpShape *b);

/* "dimensions=640:640:3:1 types=float32" style one-line description of a
 * tensors info, for messages.  Free with g_free(). */
gchar *gst_nn_tensors_info_to_string (const GstNnTensorsInfo *info);

/* Fixate caps (takes ownership, returns fixed caps): keeps the first
 * structure, sets format to static, fixates a framerate range to the value
 * nearest 0/1 (unknown rate), then the rest with gst_caps_fixate(). */
GstCaps *gst_nn_tensors_caps_fixate (GstCaps *caps);

G_END_DECLS
