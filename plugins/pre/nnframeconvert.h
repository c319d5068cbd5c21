/* nnpipe plugin: the conversion nnconvert runs on every frame, without
 * GStreamer: 8-bit packed pixels -> normalised float32 (or float16) tensor
 * of 1 to 4 channels, each sample x of channel c becoming
 * (x / 255 - mean[c]) / std[c] (a channel the frame lacks, as the alpha of
 * an RGB frame, reads 255: opaque), optionally resized
 * (bilinear, half-pixel centres as OpenCV's INTER_LINEAR) into the top-left
 * content area of the tensor and the rest filled with a pad value.
 *
 * The element describes the conversion once per negotiation
 * (NnFrameConvertInfo -> nn_frame_converter_new(), which builds the
 * normalisation tables and the resize tables) and then runs it per buffer
 * (nn_frame_converter_run()), audioconvert's shape. */
#pragma once

#include <glib.h>
#include <nnpipe/tensor.h>

G_BEGIN_DECLS

#define NN_FRAME_CONVERT_MAX_CHANNELS 4
/* chan_offset of a channel the frame lacks: every sample reads 255 */
#define NN_FRAME_CONVERT_OPAQUE (-1)

typedef struct
{
  gint in_w, in_h; /* frame size in pixels */
  gint pstride;    /* bytes per pixel */
  gint channels;   /* tensor channels: 1 to 4 */
  /* byte offset in a pixel of the sample that becomes tensor channel c, or
   * NN_FRAME_CONVERT_OPAQUE */
  gint chan_offset[NN_FRAME_CONVERT_MAX_CHANNELS];
  gdouble mean[NN_FRAME_CONVERT_MAX_CHANNELS];
  gdouble std[NN_FRAME_CONVERT_MAX_CHANNELS]; /* none zero */
  gint out_w, out_h;                          /* tensor spatial size */
  gint content_w, content_h; /* image area inside it (top-left) */
  gboolean nchw;             /* TRUE: 1 x C x H x W; FALSE: 1 x H x W x C */
  gfloat pad_value;          /* outside the content area */
  NnpDType dtype; /* NNP_DTYPE_FLOAT32 (0 means it too) or _FLOAT16 */
} NnFrameConvertInfo;

typedef struct _NnFrameConverter NnFrameConverter;

/* A converter for frames described by @info (copied); free with
 * nn_frame_converter_free().  Used by one thread at a time (it keeps
 * resized rows between calls). */
NnFrameConverter *nn_frame_converter_new (const NnFrameConvertInfo *info);
void nn_frame_converter_free (NnFrameConverter *conv);

/* TRUE when the content area differs from the frame size (bilinear). */
gboolean nn_frame_converter_resizes (const NnFrameConverter *conv);

/* Convert the frame whose first row starts at @base (rows @stride bytes
 * apart) into @out, out_w * out_h * channels elements of the info's dtype
 * in its layout: every element written, padding included (float16: the
 * float32 values rounded to nearest even). */
void nn_frame_converter_run (NnFrameConverter *conv, const guint8 *base,
    gint stride, gpointer out);

G_END_DECLS
