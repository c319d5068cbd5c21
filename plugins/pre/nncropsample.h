/* nnpipe plugin: cutting a rotated box out of an image as a recogniser's
 * input tensor (nncrop's sampler).
 *
 * Pure GLib code (no GStreamer).  The box (an NnQuad of nngeometry.h, in
 * image pixels) is straightened: sampled along its own axes, turned by 90
 * degrees when it is tall, resized to the tensor height keeping its
 * aspect ratio (a width per box, or a fixed one), padded on the right with
 * zeros; each sample becomes v * mul[c] + add[c]. */
#pragma once

#include <glib.h>

#include "nngeometry.h"

G_BEGIN_DECLS

/* A packed 8-bit image: the sample of output channel c at pixel (x, y) is
 * data[y * stride + x * pstride + off[c]].  Not owned. */
typedef struct
{
  const guint8 *data;
  gint stride, pstride, width, height;
  gint off[3];
} NnImage;

/* How a line lower than the tensor is enlarged: samples between pixel
 * centres interpolated bilinearly (2 x 2 pixels), bicubic (Keys' cubic
 * convolution, a = -0.5, 4 x 4) or Lanczos (a = 3, 6 x 6).  A line as
 * high as the tensor or higher is interpolated bilinearly, and when it is
 * shrunk each output pixel averages k x k samples (k = the shrink factor,
 * at most 4). */
typedef enum
{
  NN_CROP_FILTER_BILINEAR,
  NN_CROP_FILTER_BICUBIC,
  NN_CROP_FILTER_LANCZOS,
} NnCropFilter;

typedef struct
{
  NnCropFilter filter;   /* interpolation between pixel centres */
  gint height;           /* tensor height */
  gint width;            /* fixed tensor width; 0: a width per box */
  gint width_multiple;   /* per-box widths round up to this */
  gint max_width;        /* per-box widths at most (wider: squeezed) */
  gdouble width_scale;   /* long boxes narrowed by this (see below) */
  gboolean rotate_tall;  /* turn boxes 1.5 times taller than wide */
  gdouble margin;        /* grown above and below by this * height */
  gfloat mul[3], add[3]; /* output channel c = v * mul[c] + add[c] */
} NnCropParams;

/* The box nn_crop_sample() reads for @quad_in (corners tl, tr, br, bl):
 * turned when tall, grown by the margin, into @quad of @width x @height
 * (at least 1 x 1). */
void nn_crop_box_geometry (const NnCropParams *p, const NnQuad *quad_in,
    NnQuad *quad, gdouble *width, gdouble *height);

/* The tensor width for @quad_in: the fixed width, or the box's width at
 * the tensor height (narrowed by width_scale when the box is more than 4
 * times wider than high, but not below 4 times the height) rounded up to
 * width_multiple and clamped to [width_multiple, max_width]. */
gint nn_crop_tensor_width (const NnCropParams *p, const NnQuad *quad_in);

/* Straighten @quad_in of @img into @out, a planar 3 x height x @width
 * float tensor (the box fills the left part, zeros the rest).  Returns the
 * number of columns the box fills. */
gint nn_crop_sample (const NnCropParams *p, const NnImage *img,
    const NnQuad *quad_in, gint width, gfloat *out);

G_END_DECLS
