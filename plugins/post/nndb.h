/* nnpipe plugin: the DB (Differentiable Binarization) text-box decoder of
 * PaddleOCR's text detectors, and the reading order of text boxes.
 *
 * Pure GLib code (no GStreamer), over the geometry of nngeometry.h; map
 * coordinates are continuous as there. */
#pragma once

#include <glib.h>

#include "nngeometry.h"

G_BEGIN_DECLS

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
