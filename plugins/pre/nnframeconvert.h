/* nnpipe plugin: the conversion nnconvert runs on every frame, without
 * GStreamer: 8-bit packed pixels -> normalised float32 tensor, each sample
 * x of channel c becoming (x / 255 - mean[c]) / std[c], optionally resized
 * (bilinear, half-pixel centres as OpenCV's INTER_LINEAR) into the top-left
 * content area of the tensor and the rest filled with a pad value.
 *
 * The element describes the conversion once per negotiation
 * (NnFrameConvertInfo -> nn_frame_converter_new(), which builds the
 * normalisation tables and the resize tables) and then runs it per buffer
 * (nn_frame_converter_run()), audioconvert's shape. */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

#define NN_FRAME_CONVERT_MAX_CHANNELS 3

typedef struct
{
  gint in_w, in_h; /* frame size in pixels */
  gint pstride;    /* bytes per pixel */
  gint channels;   /* tensor channels: 1 or 3 */
  /* byte offset in a pixel of the sample that becomes tensor channel c */
  gint chan_offset[NN_FRAME_CONVERT_MAX_CHANNELS];
  gdouble mean[NN_FRAME_CONVERT_MAX_CHANNELS];
  gdouble std[NN_FRAME_CONVERT_MAX_CHANNELS]; /* none zero */
  gint out_w, out_h;                          /* tensor spatial size */
  gint content_w, content_h; /* image area inside it (top-left) */
  gboolean nchw;             /* TRUE: 1 x C x H x W; FALSE: 1 x H x W x C */
  gfloat pad_value;          /* outside the content area */
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
 * apart) into @out, out_w * out_h * channels floats in the info's layout:
 * every element written, padding included. */
void nn_frame_converter_run (NnFrameConverter *conv, const guint8 *base,
    gint stride, gfloat *out);

G_END_DECLS
