/* nnpipe plugin: plane geometry for the post-processing elements.
 *
 * Pure GLib code (no GStreamer): convex hull, minimum-area rectangle, the
 * DB (Differentiable Binarization) text-box decoder of PaddleOCR's text
 * detectors, and box ordering.  Coordinates are continuous: pixel (i, j)
 * covers [i, i+1) x [j, j+1) and its centre is (i + 0.5, j + 0.5). */
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

/* Parameters of the DB decoder (PaddleOCR's DBPostProcess names). */
typedef struct
{
  gdouble threshold;     /* binarisation threshold of the probability map */
  gdouble box_threshold; /* minimum mean probability inside a box */
  gdouble unclip_ratio;  /* expansion: distance = area * ratio / perimeter */
  gdouble min_size;      /* minimum short side, before (and + 2 after) unclip */
  guint max_candidates;  /* connected components examined at most */
} NnDbParams;

/* One decoded text box, in map coordinates. */
typedef struct
{
  NnQuad quad;   /* ordered corners after unclip */
  gdouble score; /* mean probability inside the box before unclip */
} NnTextBox;

/* Decode text boxes from a probability map (row-major, @width x @height,
 * @stride floats per row).  Only the top-left @content_width x
 * @content_height region is searched (the rest is padding).  Appends
 * NnTextBox elements to @boxes, in component discovery order. */
void nn_db_decode (const gfloat *prob, gint width, gint height, gint stride,
    gint content_width, gint content_height, const NnDbParams *params,
    GArray *boxes);

/* Sort boxes in reading order: by the top-left corner's y, then x, and
 * boxes whose top-left corners are within 10 units vertically by x
 * (PaddleOCR's sorted_boxes). */
void nn_text_boxes_sort (NnTextBox *boxes, guint n);

G_END_DECLS
