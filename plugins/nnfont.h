/* nnpipe plugin: a 5x7 bitmap font for printable ASCII (32..126), drawn in
 * a 6x8 cell.  Each glyph is 5 columns, left to right; bit r of a column is
 * row r from the top. */
#pragma once

#include <glib.h>

#define NN_FONT_FIRST 32
#define NN_FONT_LAST 126
#define NN_FONT_COLS 5
#define NN_FONT_ROWS 7
#define NN_FONT_CELL_W 6
#define NN_FONT_CELL_H 8

/* The columns of glyph @c, or NULL when the font has none. */
const guint8 *nn_font_glyph (gunichar c);
