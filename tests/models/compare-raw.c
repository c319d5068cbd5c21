/* compare-raw: compare two float32 (or float16 / bfloat16) files, ours
 * against a reference.
 *
 *   compare-raw GOT.raw REF.raw [TOLERANCE [DTYPE]]
 *
 * DTYPE: float32 (the default), float16 or bfloat16.
 * Prints "max_abs_err=E max_abs_ref=R ratio=E/R" and exits 0 when
 * E / R <= TOLERANCE (default 1e-4), 1 otherwise (also on a size mismatch
 * or a NaN/Inf where the reference has none), 2 on usage errors. */
#include <glib.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* element i of a file of dtype esize bytes (2: float16 / bfloat16, else float32) */
static float
element (const char *data, gsize i, gsize esize, gboolean bf16)
{
  float f;

  if (esize == 4) {
    memcpy (&f, data + i * 4, 4);
  } else {
    guint16 h;
    guint32 bits;

    memcpy (&h, data + i * 2, 2);
    if (bf16) {
      bits = (guint32) h << 16;
    } else {
      guint32 sign = (guint32) (h & 0x8000) << 16, exp = (h >> 10) & 0x1f, mant = h & 0x3ff;

      if (exp == 0) {
        f = (float) mant * (1.f / 16777216.f);
        return sign ? -f : f;
      }
      bits = sign | (exp == 31 ? 0x7f800000u : (exp + 112) << 23) | (mant << 13);
    }
    memcpy (&f, &bits, 4);
  }
  return f;
}

int
main (int argc, char **argv)
{
  g_autofree char *got = NULL, *ref = NULL;
  g_autoptr (GError) error = NULL;
  gsize got_len = 0, ref_len = 0, n, worst = 0;
  double tol = 1e-4, max_err = 0, max_ref = 0, ratio;
  gboolean bad_value = FALSE, bf16 = FALSE;
  gsize esize = 4;

  if (argc < 3 || argc > 5) {
    g_printerr ("usage: compare-raw GOT.raw REF.raw [TOLERANCE [DTYPE]]\n");
    return 2;
  }
  if (argc >= 4)
    tol = g_ascii_strtod (argv[3], NULL);
  if (argc == 5) {
    if (strcmp (argv[4], "float16") == 0 || strcmp (argv[4], "bfloat16") == 0) {
      esize = 2;
      bf16 = argv[4][0] == 'b';
    } else if (strcmp (argv[4], "float32") != 0) {
      g_printerr ("compare-raw: dtype '%s' is not float32, float16 or bfloat16\n", argv[4]);
      return 2;
    }
  }
  if (!g_file_get_contents (argv[1], &got, &got_len, &error)
      || !g_file_get_contents (argv[2], &ref, &ref_len, &error)) {
    g_printerr ("compare-raw: %s\n", error->message);
    return 1;
  }
  if (got_len != ref_len || got_len % esize != 0) {
    g_print ("size mismatch: %s has %" G_GSIZE_FORMAT " bytes, %s has %" G_GSIZE_FORMAT "\n",
             argv[1], got_len, argv[2], ref_len);
    return 1;
  }
  n = got_len / esize;
  for (gsize i = 0; i < n; i++) {
    float a = element (got, i, esize, bf16), b = element (ref, i, esize, bf16);
    double e;

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
