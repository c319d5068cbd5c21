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
 * ink's height wide), as high as the line (0.85 of the ink's height or
 * more), and set apart by a gap of half the height or more that is 1.5
 * times the median gap between the other words (0.7 of the height when
 * the line has only two words).  A one-letter word ("A", "1.") is too
 * narrow, a two-letter word in capitals ("NO") too wide, and a line's own
 * word gaps set the bar for the gap. */
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
