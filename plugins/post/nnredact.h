/* nnpipe plugin: redaction of rectangles in 8-bit images, without
 * GStreamer.
 *
 * An image is one to three planes of 8-bit samples: packed RGB / BGR /
 * RGBx (one plane, 3 or 4 bytes a pixel) or planar I420 (Y, and U, V at
 * half width and height).  A rectangle in frame pixels is redacted in
 * every plane (scaled to the plane's subsampling, rounded outwards), by:
 *
 * - NN_REDACT_PIXELATE: blocks of strength x strength frame pixels, each
 *   replaced by its mean (blocks start at the rectangle's corner);
 * - NN_REDACT_BLUR: three passes of a box blur of radius strength (close
 *   to a Gaussian of sigma ~ strength), using only pixels inside the
 *   rectangle;
 * - NN_REDACT_FILL: a solid colour (one value per byte of a pixel, per
 *   plane).
 *
 * Pixels outside the rectangle are never written. */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

typedef enum
{
  NN_REDACT_PIXELATE,
  NN_REDACT_BLUR,
  NN_REDACT_FILL,
} NnRedactMode;

#define NN_IMAGE_MAX_PLANES 3

typedef struct
{
  guint8 *data;
  gint stride;        /* bytes per row */
  gint pstride;       /* bytes per pixel (1 to 4) */
  gint width, height; /* in the plane's pixels */
  gint sub_x, sub_y;  /* log2 of the subsampling against the frame */
  guint8 fill[4];     /* NN_REDACT_FILL: the bytes of a pixel */
} NnPlane;

typedef struct
{
  gint n_planes;
  NnPlane planes[NN_IMAGE_MAX_PLANES];
} NnImage;

/* Redact [x0, x1) x [y0, y1) (frame pixels, clipped to the image) with
 * @mode; @strength is the block size or blur radius in frame pixels
 * (at least 1). */
void nn_redact_rect (NnImage *image, gint x0, gint y0, gint x1, gint y1,
    NnRedactMode mode, gint strength);

/* Box blur of radius @r over the whole rectangle [x0, x1) x [y0, y1) of
 * one plane (plane pixels), three passes, edges clamped to the rectangle.
 * Shared with the mask compositor. */
void nn_plane_blur (NnPlane *plane, gint x0, gint y0, gint x1, gint y1, gint r);

G_END_DECLS
