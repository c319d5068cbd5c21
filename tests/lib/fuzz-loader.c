/* nnp-fuzz-loader: mutate valid models and feed them to the loader in-process.
 *
 *   nnp-fuzz-loader [--iterations N] [--seed S] [--no-run] FILE...
 *
 * FILEs ending in ".pb" are serialized TensorProtos (conformance test data):
 * their damaged copies go to nnp_tensor_from_onnx_bytes() instead.
 *
 * Each iteration takes one of the models, damages a copy (bit flips, byte
 * overwrites, truncation, a duplicated or deleted span, a varint set to a huge
 * value) and calls nnp_model_load_from_bytes().  A load that succeeds is
 * specialised (unknown input dims set to small sizes), prepared as one CPU
 * stage and run once on the test pattern, as long as its activations stay
 * small.  Any failure must come back as a GError with a one-line message
 * and a NULL result; anything else (a crash, an ASan report, a result and an
 * error together) is a bug.  Meant to run under AddressSanitizer (suite
 * 'asan').  Prints counts and exits 1 on a contract violation. */
#include "../fuzz/fuzz-common.h"
#include "onnx/model-private.h"

#include <string.h>

static int opt_iterations = 2000;
static int opt_seed = 1;
static gboolean opt_no_run = FALSE;

static void
mutate (GRand *rng, GByteArray *data)
{
  int kind = g_rand_int_range (rng, 0, 7);
  guint len = data->len;

  if (len == 0)
    return;
  switch (kind) {
    case 0: /* a few bit flips */
    case 1: {
      int n = g_rand_int_range (rng, 1, 5);
      for (int i = 0; i < n; i++)
        data->data[g_rand_int_range (rng, 0, len)] ^= (guint8) (1u << g_rand_int_range (rng, 0, 8));
      break;
    }
    case 2: { /* overwrite a byte with an interesting value */
      const guint8 vals[] = { 0x00, 0xff, 0x7f, 0x80, 0x01, 0x0a, 0x12, 0x1a, 0x22, 0x3a };
      data->data[g_rand_int_range (rng, 0, len)] =
          vals[g_rand_int_range (rng, 0, G_N_ELEMENTS (vals))];
      break;
    }
    case 3: /* truncate */ g_byte_array_set_size (data, g_rand_int_range (rng, 0, len)); break;
    case 4: { /* delete a span */
      guint at = g_rand_int_range (rng, 0, len);
      guint want = g_rand_int_range (rng, 1, 64);
      guint n = MIN (want, len - at);
      g_byte_array_remove_range (data, at, n);
      break;
    }
    case 5: { /* duplicate a span */
      guint at = g_rand_int_range (rng, 0, len);
      guint want = g_rand_int_range (rng, 1, 64);
      guint n = MIN (want, len - at);
      g_byte_array_set_size (data, len + n);
      memmove (data->data + at + n, data->data + at, len - at);
      break;
    }
    default: { /* a huge varint (length or dim) at a random place */
      const guint8 huge[] = { 0xff, 0xff, 0xff, 0xff, 0x0f };
      guint at = g_rand_int_range (rng, 0, len);
      guint n = MIN ((guint) sizeof huge, len - at);
      memcpy (data->data + at, huge, n);
      break;
    }
  }
}

int
main (int argc, char **argv)
{
  g_autoptr (GOptionContext) ctx = NULL;
  g_autoptr (GError) error = NULL;
  g_autoptr (GPtrArray) models = g_ptr_array_new_with_free_func ((GDestroyNotify) g_bytes_unref);
  GOptionEntry entries[] = {
    { "iterations", 'n', 0, G_OPTION_ARG_INT, &opt_iterations, "Mutations to try (default 2000)",
      "N" },
    { "seed", 's', 0, G_OPTION_ARG_INT, &opt_seed, "Random seed (default 1)", "S" },
    { "no-run", 0, 0, G_OPTION_ARG_NONE, &opt_no_run, "Only load, never specialise or run", NULL },
    { NULL }
  };
  NnpFuzzCounts c = { 0 };
  GRand *rng;

  ctx = g_option_context_new ("MODEL... - fuzz the ONNX loader with damaged copies");
  g_option_context_add_main_entries (ctx, entries, NULL);
  if (!g_option_context_parse (ctx, &argc, &argv, &error)) {
    g_printerr ("nnp-fuzz-loader: %s\n", error->message);
    return 2;
  }
  for (int i = 1; i < argc; i++) {
    char *bytes;
    gsize len;
    if (!g_file_get_contents (argv[i], &bytes, &len, &error)) {
      g_printerr ("nnp-fuzz-loader: %s\n", error->message);
      return 1;
    }
    g_ptr_array_add (models, g_bytes_new_take (bytes, len));
  }
  if (models->len == 0) {
    g_printerr ("usage: nnp-fuzz-loader [--iterations N] [--seed S] MODEL...\n");
    return 2;
  }

  /* The originals must load. */
  for (guint m = 0; m < models->len; m++) {
    gsize len;
    const guint8 *bytes = g_bytes_get_data (g_ptr_array_index (models, m), &len);
    NnpModel *model;

    if (g_str_has_suffix (argv[m + 1], ".pb")) {
      char *name = NULL;
      NnpTensor *t = nnp_tensor_from_onnx_bytes (bytes, len, &name, &error);
      if (t == NULL) {
        g_print ("FAIL: the unmodified tensor %s does not load: %s\n", argv[m + 1], error->message);
        return 1;
      }
      nnp_tensor_unref (t);
      g_free (name);
      continue;
    }
    model = nnp_model_load_from_bytes (bytes, len, argv[m + 1], &error);
    if (model == NULL) {
      g_print ("FAIL: the unmodified model %s does not load: %s\n", argv[m + 1], error->message);
      return 1;
    }
    nnp_model_unref (model);
  }

  rng = g_rand_new_with_seed ((guint32) opt_seed);
  for (int it = 0; it < opt_iterations; it++) {
    GBytes *orig = g_ptr_array_index (models, it % models->len);
    gsize len;
    const guint8 *bytes = g_bytes_get_data (orig, &len);
    GByteArray *data = g_byte_array_sized_new ((guint) len + 128);
    g_autoptr (GError) err = NULL;
    NnpModel *model;
    int rounds = g_rand_int_range (rng, 1, 4);

    g_byte_array_append (data, bytes, (guint) len);
    for (int r = 0; r < rounds; r++)
      mutate (rng, data);
    if (g_str_has_suffix (argv[it % models->len + 1], ".pb")) {
      char *name = NULL;
      NnpTensor *t = nnp_tensor_from_onnx_bytes (data->data, data->len, &name, &err);
      if (nnp_fuzz_check_error ("tensor", it, t != NULL, err, &c)) {
        if (t != NULL)
          c.loaded++;
        else
          c.load_failed++;
      }
      g_clear_pointer (&t, nnp_tensor_unref);
      g_free (name);
      g_byte_array_unref (data);
      continue;
    }
    model = nnp_model_load_from_bytes (data->data, data->len, "fuzzed.onnx", &err);
    if (nnp_fuzz_check_error ("load", it, model != NULL, err, &c)) {
      if (model != NULL) {
        c.loaded++;
        if (!opt_no_run)
          nnp_fuzz_try_run (model, it, 4e6, 2e9, &c);
      } else {
        c.load_failed++;
        if (strstr (err->message, "fuzzed.onnx") == NULL) {
          g_print ("iteration %d: load error does not name the model: %s\n", it, err->message);
          c.violations++;
        }
      }
    }
    if (model != NULL)
      nnp_model_unref (model);
    g_byte_array_unref (data);
  }
  g_rand_free (rng);

  g_print (
      "%d iterations: %d loaded (%d specialised, %d ran, %d run errors), %d rejected, %d contract violations\n",
      opt_iterations, c.loaded, c.specialized, c.ran, c.run_failed, c.load_failed, c.violations);
  g_print ("%d passed, %d failed, 0 skipped\n", opt_iterations - c.violations, c.violations);
  return c.violations ? 1 : 0;
}
