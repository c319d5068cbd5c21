/* nnpipe plugin: plane geometry for the post-processing elements.
 *
 * Pure GLib code (no GStreamer): points, rotated boxes (quads), convex
 * hull, minimum-area rectangle, box growth.  Coordinates are continuous:
 * pixel (i, j) covers [i, i+1) x [j, j+1) and its centre is
 * (i + 0.5, j + 0.5).  The DB decoder is in nndb.h. */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

typedef struct
{
  gdouble x, y;
} NnPoint;

/* A rectangle of any orientation.  Corners in reading order: top-left,
 * top-right, bottom-right, bottom-left (PaddleOCR's order: of the two
 * leftmost corners the upper one is top-left, of the two rightmost the upper
 * one is top-right). */
typedef struct
{
  NnPoint p[4];
} NnQuad;

/* Convex hull of n points (Andrew's monotone chain), counter-clockwise in a
 * y-up frame, no repeated or collinear points.  Sorts @pts in place.
 * @hull must hold 2 * n points.  Returns the hull size (n for n < 3
 * distinct points, 0 for n == 0). */
gint nn_convex_hull (NnPoint *pts, gint n, NnPoint *hull);

/* Minimum-area enclosing rectangle of a convex polygon (rotating calipers).
 * Writes the ordered corners to @quad and its side lengths to @width (along
 * top edge) and @height; degenerate input gives zero sides. */
void nn_min_area_rect (const NnPoint *hull, gint n, NnQuad *quad,
    gdouble *width, gdouble *height);

/* Order 4 corners as NnQuad does (see above), in place. */
void nn_quad_order (NnQuad *quad);

/* Side lengths: width = max(|tl-tr|, |bl-br|), height = max(|tl-bl|, |tr-br|). */
void nn_quad_size (const NnQuad *quad, gdouble *width, gdouble *height);

/* Axis-aligned bounding box. */
void nn_quad_bounds (const NnQuad *quad, gdouble *x0, gdouble *y0, gdouble *x1,
    gdouble *y1);

/* TRUE if (x, y) lies inside the convex quad (border included). */
gboolean nn_quad_contains (const NnQuad *quad, gdouble x, gdouble y);

/* Grow a rectangle outwards by @distance on every side, keeping its centre
 * and orientation.  (The outward offset of a rectangle with rounded joins
 * has exactly this minimum-area rectangle, which is what PaddleOCR's
 * "unclip" computes with a polygon-offset library.) */
void nn_quad_expand (NnQuad *quad, gdouble distance);

G_END_DECLS
