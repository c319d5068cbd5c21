/* nnpipe plugin: decoding a CTC text recogniser's output.
 *
 * Pure GLib code (no GStreamer). */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

/* Greedy CTC decoding of a T x C row-major score matrix: per step the best
 * class, repeats merged, @blank dropped.  @classes[i] is the UTF-8 string
 * of class i (NULL entries decode to "").  Returns the text (free with
 * g_free) and the mean best score of the kept steps in @score (0 when
 * none). */
gchar *nn_ctc_greedy_decode (const gfloat *scores, gint steps, gint n_classes,
    gint blank, const gchar *const *classes, gdouble *score);

G_END_DECLS
