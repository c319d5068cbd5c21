/* nnpipe plugin: reading label lists (see nnlabels.h). */
#include "nnlabels.h"

#include <string.h>

gchar **
nn_labels_read_file (const gchar *path, NnLabelsFlags flags, guint *n_labels,
    GError **error)
{
  gchar *contents = NULL, **lines;
  guint n;

  g_return_val_if_fail (path != NULL, NULL);

  if (!g_file_get_contents (path, &contents, NULL, error))
    return NULL;
  lines = g_strsplit (contents, "\n", -1);
  g_free (contents);
  n = g_strv_length (lines);
  for (guint i = 0; i < n; i++) {
    gsize len = strlen (lines[i]);

    if (len > 0 && lines[i][len - 1] == '\r')
      lines[i][len - 1] = '\0';
    if (flags & NN_LABELS_STRIP)
      g_strstrip (lines[i]);
  }
  /* the final newline; with STRIP every blank line at the end */
  for (gboolean first = TRUE;
       n > 0 && lines[n - 1][0] == '\0' && (first || (flags & NN_LABELS_STRIP));
       first = FALSE) {
    g_free (lines[n - 1]);
    lines[--n] = NULL;
  }
  if (n_labels)
    *n_labels = n;
  return lines;
}

gchar **
nn_labels_parse (const gchar *spec, guint *n_labels, GError **error)
{
  gchar **list;

  g_return_val_if_fail (spec != NULL, NULL);

  if (strchr (spec, ',') == NULL)
    return nn_labels_read_file (spec, NN_LABELS_STRIP, n_labels, error);
  list = g_strsplit (spec, ",", -1);
  for (guint i = 0; list[i]; i++)
    g_strstrip (list[i]);
  if (n_labels)
    *n_labels = g_strv_length (list);
  return list;
}
