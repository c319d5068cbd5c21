/* nnpipe plugin: per-channel values (see nnchannels.h). */
#include "nnchannels.h"

#include <math.h>

guint
nn_channel_values_parse (const gchar *str, gdouble *values, guint max_values,
    gboolean nonzero)
{
  gchar **parts;
  guint n = 0;
  gboolean ok = TRUE;

  if (str == NULL)
    return 0;
  parts = g_strsplit_set (str, ",: \t", -1);
  for (gint i = 0; parts[i] != NULL && ok; i++) {
    gchar *end = NULL;
    gdouble v;

    if (parts[i][0] == '\0')
      continue;
    if (n == max_values) {
      ok = FALSE;
      break;
    }
    v = g_ascii_strtod (parts[i], &end);
    if (end == parts[i] || *end != '\0' || !isfinite (v) || (nonzero && v == 0))
      ok = FALSE;
    else
      values[n++] = v;
  }
  g_strfreev (parts);
  return ok ? n : 0;
}

gboolean
nn_channel_values_parse_n (const gchar *str, gdouble *out, guint n_channels,
    gboolean nonzero)
{
  gdouble v[64];
  guint n;

  g_return_val_if_fail (n_channels > 0 && n_channels <= G_N_ELEMENTS (v),
      FALSE);

  n = nn_channel_values_parse (str, v, n_channels, nonzero);
  if (n != 1 && n != n_channels)
    return FALSE;
  for (guint c = 0; c < n_channels; c++)
    out[c] = v[n == 1 ? 0 : c];
  return TRUE;
}
