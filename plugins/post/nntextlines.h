/* nnpipe plugin: joining the text read in boxes of one line.
 *
 * Pure GLib code (no GStreamer), over the geometry of nngeometry.h.
 *
 * A text detector splits a line into several boxes where its words stand
 * far apart (large sign lettering, "Stationery" and "Box"); a reader of
 * lines wants them as one.  Two boxes are pieces of one line when they
 * have about the same angle (6 degrees) and height (at most 1.5 times),
 * their centre lines are less than half the lower one's height apart
 * across the line, and the gap between them along the line is at most
 * @max_gap times the lower one's height (they may overlap by half that
 * height).  A piece whose text is a single character (after trimming
 * spaces) is never joined: beside a word it is an icon, a check box or a
 * bullet far more often than a one-letter word, which the detector keeps
 * in its neighbours' box. */
#pragma once

#include <glib.h>

#include "nngeometry.h"

G_BEGIN_DECLS

typedef struct
{
  NnQuad quad;       /* corners tl, tr, br, bl (nngeometry.h) */
  const gchar *text; /* UTF-8, not owned */
} NnTextPiece;

/* Chain the pieces of each line from left to right (along the line):
 * @next[i] is the index of the piece that follows piece i on its line, or
 * -1.  A piece no other piece points to starts a line.  Each piece takes
 * as its follower the nearest piece to its right that qualifies and is
 * not taken yet, pieces visited from the leftmost.  Returns the number of
 * joins made (0: every piece is a line of its own).  @next holds @n
 * entries. */
guint nn_text_lines_join (const NnTextPiece *pieces, guint n, gdouble max_gap,
    gint *next);

G_END_DECLS
