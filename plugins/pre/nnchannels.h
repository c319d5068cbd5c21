/* nnpipe plugin: per-channel values of the pre-processing elements (the
 * `mean` and `std` properties of nnconvert and nncrop).
 *
 * Pure GLib code (no GStreamer).  One grammar everywhere: numbers in C
 * syntax (any locale), separated by commas, colons or blanks; one value
 * stands for every channel. */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

/* Parse @str into @values (at most @max_values finite numbers; @nonzero: 0
 * is refused).  Returns how many were read, 0 when @str is NULL, empty,
 * malformed or has more than @max_values. */
guint nn_channel_values_parse (const gchar *str, gdouble *values,
    guint max_values, gboolean nonzero);

/* The values of @n_channels channels: @str holds one value (every
 * channel) or exactly @n_channels.  FALSE (@out untouched) otherwise. */
gboolean nn_channel_values_parse_n (const gchar *str, gdouble *out,
    guint n_channels, gboolean nonzero);

G_END_DECLS
