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
  /* a box below box_threshold is kept when the mean over its connected
   * region's own pixels (those above threshold) is at least this: the
   * rectangle of a curved or slanted line holds much background (PaddleOCR's
   * score_mode "slow" scores the region's contour instead) */
  gdouble region_threshold;
  gdouble unclip_ratio; /* expansion: distance = area * ratio / perimeter */
  gdouble min_size;     /* minimum short side, before (and + 2 after) unclip */
  guint max_candidates; /* connected components examined at most */
} NnDbParams;

/* One decoded text box, in map coordinates. */
typedef struct
{
  NnQuad quad;   /* ordered corners after unclip */
  NnQuad core;   /* the same before unclip: the map's text kernel */
  gdouble score; /* mean probability inside the box before unclip (inside
                  * the region when it was kept by region_threshold) */
} NnTextBox;

/* Decode text boxes from a probability map (row-major, @width x @height,
 * @stride floats per row).  Only the top-left @content_width x
 * @content_height region is searched (the rest is padding).  Appends
 * NnTextBox elements to @boxes, in component discovery order. */
void nn_db_decode (const gfloat *prob, gint width, gint height, gint stride,
    gint content_width, gint content_height, const NnDbParams *params,
    GArray *boxes);

/* Tidy the boxes of nn_db_decode() after the unclip growth, which makes
 * the boxes of one line overlap where a line broke into pieces (the
 * overlap is then read twice: a stray glyph, or an icon beside a menu
 * entry read as a letter) and reach into the next line on dense pages (its
 * glyphs are read too): each grown box stops halfway between its core
 * (the map's text kernel) and the core of a neighbouring box of about the
 * same angle, along the line (a box before or after it on the same line:
 * their cores overlap across the line by half the smaller core at least)
 * and across it (a box above or below it: their cores overlap along the
 * line).  A box never shrinks into its core.  Works in place. */
void nn_text_boxes_tidy (GArray *boxes);

/* Sort boxes in reading order: by the top-left corner's y, then x, and
 * boxes whose top-left corners are within 10 units vertically by x
 * (PaddleOCR's sorted_boxes). */
void nn_text_boxes_sort (NnTextBox *boxes, guint n);

G_END_DECLS
