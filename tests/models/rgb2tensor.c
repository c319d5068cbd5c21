/* rgb2tensor: packed 8-bit RGB frame -> float32 NCHW tensor file.
 *
 *   rgb2tensor IN.rgb WIDTH HEIGHT OUT.raw [MEAN_R,MEAN_G,MEAN_B STD_R,STD_G,STD_B]
 *
 * Each value is (byte / 255 - mean[c]) / std[c]; defaults are PaddleOCR's
 * detector normalisation (mean 0.485,0.456,0.406, std 0.229,0.224,0.225).
 * The output is 1x3xHEIGHTxWIDTH, little-endian float32, C order. */
#include <glib.h>
#include <stdio.h>
#include <stdlib.h>

static gboolean
parse3 (const char *text, double out[3])
{
  g_auto (GStrv) parts = g_strsplit (text, ",", -1);
  if (g_strv_length (parts) != 3)
    return FALSE;
  for (int i = 0; i < 3; i++) {
    char *end = NULL;
    out[i] = g_ascii_strtod (parts[i], &end);
    if (end == parts[i] || *end != '\0')
      return FALSE;
  }
  return TRUE;
}

int
main (int argc, char **argv)
{
  double mean[3] = { 0.485, 0.456, 0.406 };
  double std[3] = { 0.229, 0.224, 0.225 };
  g_autofree guint8 *rgb = NULL;
  g_autofree float *out = NULL;
  g_autoptr (GError) error = NULL;
  gsize len = 0;
  long w, h;

  if (argc != 5 && argc != 7) {
    g_printerr ("usage: rgb2tensor IN.rgb WIDTH HEIGHT OUT.raw [MEANS STDS]\n");
    return 2;
  }
  w = strtol (argv[2], NULL, 10);
  h = strtol (argv[3], NULL, 10);
  if (w <= 0 || h <= 0 || w > 65536 || h > 65536) {
    g_printerr ("rgb2tensor: bad size %s x %s\n", argv[2], argv[3]);
    return 2;
  }
  if (argc == 7 && (!parse3 (argv[5], mean) || !parse3 (argv[6], std))) {
    g_printerr ("rgb2tensor: bad mean/std (expected a,b,c)\n");
    return 2;
  }
  if (!g_file_get_contents (argv[1], (char **) &rgb, &len, &error)) {
    g_printerr ("rgb2tensor: %s\n", error->message);
    return 1;
  }
  if (len != (gsize) (w * h * 3)) {
    g_printerr ("rgb2tensor: %s has %" G_GSIZE_FORMAT " bytes, expected %ld\n", argv[1], len,
                w * h * 3);
    return 1;
  }
  out = g_new (float, (gsize) (3 * w * h));
  for (long c = 0; c < 3; c++) {
    for (long p = 0; p < w * h; p++)
      out[c * w * h + p] = (float) ((rgb[p * 3 + c] / 255.0 - mean[c]) / std[c]);
  }
  if (!g_file_set_contents (argv[4], (const char *) out, (gssize) (3 * w * h * sizeof (float)),
                            &error)) {
    g_printerr ("rgb2tensor: %s\n", error->message);
    return 1;
  }
  return 0;
}
