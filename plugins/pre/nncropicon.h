/* nnpipe plugin: finding an icon at the start of a text line's crop
 * (nncrop's skip-icon).
 *
 * Pure GLib code (no GStreamer).  A menu entry, a button or a dialog's
 * line often starts with an icon (a star, a magnifier, a cross) that the
 * text detector puts in the line's box and the recogniser reads as a
 * letter ("Q Search", "X Close").  The crop's ink (pixels far from the
 * background, the median of its border) is split into words: runs of ink
 * columns, gaps narrower than a quarter of the ink's height closed.  The
 * first word is an icon when it is about square (0.75 to 1.35 times the
 * ink's height wide) and one of:
 * - set apart: as high as the line (0.85 of the ink's height or more),
 *   followed by a gap of half the height or more that is 1.5 times the
 *   median gap between the other words (0.7 of the height when the line
 *   has only two words);
 * - a widget beside its label (a radio button, a check box): it reaches
 *   above the top of the rest of the line's ink by 0.05 of the height and
 *   below its bottom (1 pixel, 0.02 of the height), with a gap of 0.4 of
 *   the height.  A letter stands on the line's baseline, so it never
 *   reaches below the words after it;
 * - a filled box (a check box drawn as a light cross on a dark square,
 *   "x" or "+" beside a tree entry): 0.85 of the height, 0.75 of its box
 *   ink, a gap of 0.35 of the height.  Letters cover half their box or
 *   less.
 * A one-letter word ("A", "1.") is too narrow, a two-letter word in
 * capitals ("NO") too wide, and a line's own word gaps set the bar for
 * the gap. */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

/* The column at which the text starts when the crop @t (planar 3 x @height
 * x @width floats, each sample v * mul[c] + add[c] of an 8-bit value v;
 * the line fills the first @used columns) starts with an icon: the middle
 * of the gap after it; 0 when it does not. */
gint nn_crop_find_icon (const gfloat *t, gint height, gint width, gint used,
    const gfloat mul[3], const gfloat add[3]);

/* Move columns [@from, @used) of each row and channel of @t to the left
 * edge and fill the @from columns freed at the right with zeros (the
 * padding of nn_crop_sample()). */
void nn_crop_shift_left (gfloat *t, gint height, gint width, gint used,
    gint from);

G_END_DECLS
