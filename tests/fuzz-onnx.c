/* Throwaway robustness check for the ONNX loader (NOT built by tests/meson.build;
 * build by hand against an ASan build of libnnpipe).
 *
 *   fuzz-onnx [--seed N] MODEL.onnx... [TENSOR.pb...]
 *
 * For each file, feeds nnp_model_load_from_bytes() (or nnp_tensor_from_onnx_bytes() for .pb files)
 * 100 truncations, 200 copies with 1..8 flipped bits and random buffers.
 * Every attempt must either succeed or fail with an NNP_ERROR whose one-line
 * message starts with the name given.  Run it under AddressSanitizer
 * (ASAN_OPTIONS=max_allocation_size_mb=256) to catch reads out of bounds and
 * huge allocations; alarm() catches hangs. */
#include <nnpipe/model.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int n_ok, n_fail, n_bad;

static void
check (const guint8 *data, gsize size, gboolean is_pb, const char *what)
{
  GError *error = NULL;
  gint64 t0 = g_get_monotonic_time ();
  gboolean ok;

  if (is_pb) {
    char *name = NULL;
    NnpTensor *t = nnp_tensor_from_onnx_bytes (data, size, &name, &error);
    ok = t != NULL;
    nnp_tensor_unref (t);
    g_free (name);
  } else {
    NnpModel *m = nnp_model_load_from_bytes (data, size, "fuzz.onnx", &error);
    ok = m != NULL;
    nnp_model_unref (m);
  }
  if (ok) {
    n_ok++;
  } else if (error == NULL || error->domain != NNP_ERROR || strchr (error->message, '\n')
             || (!is_pb && !g_str_has_prefix (error->message, "fuzz.onnx: "))) {
    n_bad++;
    fprintf (stderr, "BAD error for %s: %s\n", what, error ? error->message : "(none)");
  } else {
    n_fail++;
  }
  if (g_get_monotonic_time () - t0 > 2 * G_USEC_PER_SEC)
    fprintf (stderr, "SLOW: %s took %.1f s\n", what,
             (g_get_monotonic_time () - t0) / (double) G_USEC_PER_SEC);
  g_clear_error (&error);
}

int
main (int argc, char **argv)
{
  GRand *rand;
  guint32 seed = 1;
  int first = 1;

  if (argc > 2 && strcmp (argv[1], "--seed") == 0) {
    seed = (guint32) atoi (argv[2]);
    first = 3;
  }
  rand = g_rand_new_with_seed (seed);
  alarm (600);
  for (int a = first; a < argc; a++) {
    gchar *data;
    gsize size;
    gboolean is_pb = g_str_has_suffix (argv[a], ".pb");
    guint8 *copy;
    int before_bad = n_bad;

    if (!g_file_get_contents (argv[a], &data, &size, NULL)) {
      fprintf (stderr, "cannot read %s\n", argv[a]);
      return 2;
    }
    copy = g_malloc (size + 1);
    for (int i = 0; i < 100; i++) {
      gsize cut = i < 50 ? size * i / 50 : (gsize) g_rand_int_range (rand, 0, (gint32) size);
      memcpy (copy, data, cut);
      check (copy, cut, is_pb, "truncation");
    }
    for (int i = 0; i < 200; i++) {
      int flips = g_rand_int_range (rand, 1, 9);
      /* half of the flips go to the first 4 KiB, where the structure is */
      memcpy (copy, data, size);
      for (int k = 0; k < flips && size; k++) {
        gsize pos = (i & 1) ? (gsize) g_rand_int_range (rand, 0, (gint32) MIN (size, 4096))
                            : (gsize) g_rand_int_range (rand, 0, (gint32) size);
        copy[pos] ^= 1u << g_rand_int_range (rand, 0, 8);
      }
      check (copy, size, is_pb, "bit flip");
    }
    for (int i = 0; i < 50; i++) {
      gsize len = g_rand_int_range (rand, 0, 4096);
      guint8 *junk = g_malloc (len + 1);
      for (gsize k = 0; k < len; k++)
        junk[k] = (guint8) g_rand_int (rand);
      check (junk, len, is_pb, "random bytes");
      g_free (junk);
    }
    printf ("%s: %s\n", argv[a], n_bad == before_bad ? "ok" : "BAD");
    g_free (copy);
    g_free (data);
  }
  printf ("loaded %d, failed cleanly %d, bad %d\n", n_ok, n_fail, n_bad);
  g_rand_free (rand);
  return n_bad ? 1 : 0;
}
