/* The cost of a new input shape (benchmarks/respecialize.sh): specialise a
 * model and build its CPU stage for N new widths of input 0 (dimension 3,
 * NCHW), cold (each on a freshly loaded model: nothing derived from the
 * weights is known yet - what every new shape cost before the derived-data
 * cache) and warm (one model: the weight-derived data are found in the
 * cache, lib/graph/derived.h).  Prints the median milliseconds of each.
 *
 *   respecialize MODEL HEIGHT FIRST_WIDTH STEP N */
#include <nnpipe/nnpipe.h>

#include <stdio.h>
#include <stdlib.h>

static int
cmp_double (const void *a, const void *b)
{
  double x = *(const double *) a, y = *(const double *) b;

  return x < y ? -1 : x > y;
}

static double
median (double *v, int n)
{
  qsort (v, n, sizeof (double), cmp_double);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* specialise + stage for width w: milliseconds of each in spec_ms, stage_ms */
static gboolean
build (NnpModel *model, const char *input, int64_t c, int64_t h, int64_t w, double *spec_ms,
       double *stage_ms)
{
  NnpInputShape s = { .name = input, .shape = { .rank = 4, .dims = { 1, c, h, w } } };
  GError *error = NULL;
  gint64 t0 = g_get_monotonic_time (), t1, t2;
  NnpGraph *g = nnp_model_specialize (model, &s, 1, NNP_SPECIALIZE_DEFAULT, &error);
  NnpStage *stage = NULL;

  t1 = g_get_monotonic_time ();
  if (g)
    stage = nnp_stage_new (g, NULL, 0, NULL, &error);
  t2 = g_get_monotonic_time ();
  if (stage == NULL) {
    fprintf (stderr, "respecialize: width %" G_GINT64_FORMAT ": %s\n", w, error->message);
    g_error_free (error);
    nnp_graph_unref (g);
    return FALSE;
  }
  *spec_ms = (t1 - t0) / 1000.0;
  *stage_ms = (t2 - t1) / 1000.0;
  nnp_stage_free (stage);
  nnp_graph_unref (g);
  return TRUE;
}

int
main (int argc, char **argv)
{
  GError *error = NULL;
  gchar *bytes = NULL;
  gsize size = 0;
  NnpModel *warm;
  NnpValue *in;
  int64_t h, w0, step, c;
  int n;
  double *cs, *ct, *ws, *wt, *csum, *wsum;

  if (argc != 6) {
    fprintf (stderr, "usage: respecialize MODEL HEIGHT FIRST_WIDTH STEP N\n");
    return 2;
  }
  h = g_ascii_strtoll (argv[2], NULL, 10);
  w0 = g_ascii_strtoll (argv[3], NULL, 10);
  step = g_ascii_strtoll (argv[4], NULL, 10);
  n = atoi (argv[5]);
  if (h <= 0 || w0 <= 0 || step <= 0 || n <= 0) {
    fprintf (stderr, "respecialize: HEIGHT, FIRST_WIDTH, STEP and N must be positive\n");
    return 2;
  }
  if (!g_file_get_contents (argv[1], &bytes, &size, &error)) {
    fprintf (stderr, "respecialize: %s\n", error->message);
    return 1;
  }
  warm = nnp_model_load_from_bytes ((const guint8 *) bytes, size, argv[1], &error);
  if (warm == NULL) {
    fprintf (stderr, "respecialize: %s\n", error->message);
    return 1;
  }
  in = nnp_graph_value (nnp_model_get_graph (warm),
                        g_array_index (nnp_model_get_graph (warm)->inputs, int, 0));
  if (in->shape.rank != 4 || in->shape.dims[1] <= 0) {
    fprintf (stderr, "respecialize: input '%s' is not NCHW with known C\n", in->name);
    return 1;
  }
  c = in->shape.dims[1];
  cs = g_new (double, n);
  ct = g_new (double, n);
  csum = g_new (double, n);
  ws = g_new (double, n);
  wt = g_new (double, n);
  wsum = g_new (double, n);

  /* warm: the first build (not counted) fills the cache */
  {
    double a, b;
    if (!build (warm, in->name, c, h, w0, &a, &b))
      return 1;
  }
  for (int i = 0; i < n; i++) {
    int64_t w = w0 + (i + 1) * step;
    NnpModel *cold = nnp_model_load_from_bytes ((const guint8 *) bytes, size, argv[1], &error);

    if (cold == NULL || !build (cold, in->name, c, h, w, &cs[i], &ct[i]))
      return 1;
    nnp_model_unref (cold);
    if (!build (warm, in->name, c, h, w, &ws[i], &wt[i]))
      return 1;
    csum[i] = cs[i] + ct[i];
    wsum[i] = ws[i] + wt[i];
  }
  printf (
      "new width, cold (weights folded and packed again): specialise %.2f ms + stage %.2f ms = %.2f ms\n",
      median (cs, n), median (ct, n), median (csum, n));
  printf (
      "new width, warm (weight-derived data shared):       specialise %.2f ms + stage %.2f ms = %.2f ms\n",
      median (ws, n), median (wt, n), median (wsum, n));
  nnp_model_unref (warm);
  g_free (bytes);
  g_free (cs);
  g_free (ct);
  g_free (csum);
  g_free (ws);
  g_free (wt);
  g_free (wsum);
  return 0;
}
