/* nnpipe plugin: reading label lists (class labels, a recogniser's
 * character keys).
 *
 * Pure GLib code (no GStreamer).  One reader for every decoder that names
 * its classes, so a labels file means the same thing everywhere: UTF-8,
 * one label per line, "\r\n" line ends accepted, the final newline
 * optional. */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

typedef enum
{
  /* labels as written: a key may be a space (a recogniser's keys) */
  NN_LABELS_RAW = 0,
  /* white space around each label removed, blank lines at the end
   * ignored (class names) */
  NN_LABELS_STRIP = 1 << 0,
} NnLabelsFlags;

/* The labels of the file at @path, NULL-terminated (free with g_strfreev),
 * their number in @n_labels; NULL + a G_FILE_ERROR when it cannot be
 * read. */
gchar **nn_labels_read_file (const gchar *path, NnLabelsFlags flags,
    guint *n_labels, GError **error);

/* A labels property: a comma-separated list ("0,180"; each label
 * stripped) or, without a comma, the path of a labels file (read with
 * NN_LABELS_STRIP).  NULL + error when a file cannot be read or does not
 * exist. */
gchar **nn_labels_parse (const gchar *spec, guint *n_labels, GError **error);

G_END_DECLS
