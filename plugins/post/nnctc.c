/* nnpipe plugin: decoding a CTC text recogniser's output (see nnctc.h). */
#include "nnctc.h"

gchar *
nn_ctc_greedy_decode (const gfloat *scores, gint steps, gint n_classes,
    gint blank, const gchar *const *classes, gdouble *score)
{
  GString *text = g_string_new (NULL);
  gdouble sum = 0;
  gint kept = 0, prev = -1;

  g_return_val_if_fail (scores != NULL || steps == 0, NULL);

  for (gint t = 0; t < steps; t++) {
    const gfloat *row = scores + (gsize) t * n_classes;
    gint best = 0;

    for (gint c = 1; c < n_classes; c++)
      if (row[c] > row[best])
        best = c;
    if (best != blank && best != prev) {
      if (classes && classes[best])
        g_string_append (text, classes[best]);
      sum += row[best];
      kept++;
    }
    prev = best;
  }
  if (score)
    *score = kept ? sum / kept : 0.0;
  return g_string_free (text, FALSE);
}
