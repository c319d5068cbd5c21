/* compare-raw: compare two float32 files (ours against a reference).
 *
 *   compare-raw GOT.raw REF.raw [TOLERANCE]
 *
 * Prints "max_abs_err=E max_abs_ref=R ratio=E/R" and exits 0 when
 * E / R <= TOLERANCE (default 1e-4), 1 otherwise (also on a size mismatch
 * or a NaN/Inf where the reference has none), 2 on usage errors. */
#include <glib.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

int
main (int argc, char **argv)
{
  g_autofree char *got = NULL, *ref = NULL;
  g_autoptr (GError) error = NULL;
  gsize got_len = 0, ref_len = 0, n, worst = 0;
  double tol = 1e-4, max_err = 0, max_ref = 0, ratio;
  gboolean bad_value = FALSE;

  if (argc != 3 && argc != 4) {
    g_printerr ("usage: compare-raw GOT.raw REF.raw [TOLERANCE]\n");
    return 2;
  }
  if (argc == 4)
    tol = g_ascii_strtod (argv[3], NULL);
  if (!g_file_get_contents (argv[1], &got, &got_len, &error)
      || !g_file_get_contents (argv[2], &ref, &ref_len, &error)) {
    g_printerr ("compare-raw: %s\n", error->message);
    return 1;
  }
  if (got_len != ref_len || got_len % sizeof (float) != 0) {
    g_print ("size mismatch: %s has %" G_GSIZE_FORMAT " bytes, %s has %" G_GSIZE_FORMAT "\n",
             argv[1], got_len, argv[2], ref_len);
    return 1;
  }
  n = got_len / sizeof (float);
  for (gsize i = 0; i < n; i++) {
    float a, b;
    double e;

    memcpy (&a, got + i * sizeof (float), sizeof a);
    memcpy (&b, ref + i * sizeof (float), sizeof b);
    if (!isfinite (a) && isfinite (b))
      bad_value = TRUE;
    e = fabs ((double) a - (double) b);
    if (e > max_err || isnan (e)) {
      max_err = e;
      worst = i;
    }
    max_ref = MAX (max_ref, fabs ((double) b));
  }
  ratio = max_ref > 0 ? max_err / max_ref : max_err;
  g_print ("max_abs_err=%.6g max_abs_ref=%.6g ratio=%.3g (worst element %" G_GSIZE_FORMAT
           " of %" G_GSIZE_FORMAT ")\n",
           max_err, max_ref, ratio, worst, n);
  return (bad_value || isnan (ratio) || ratio > tol) ? 1 : 0;
}
