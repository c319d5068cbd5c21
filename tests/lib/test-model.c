/* Unit tests of NnpModel: the per-process cache (one copy of a model file for
 * every element and stage that names it) and the content digest. */
#include <nnpipe/nnpipe.h>

#include <glib/gstdio.h>
#include <string.h>

static char *
copy_small_model (const char *dir)
{
  g_autofree char *src =
      g_build_filename (g_getenv ("NNP_SOURCE_DIR"), "tests", "data", "small.onnx", NULL);
  char *dst = g_build_filename (dir, "model.onnx", NULL);
  g_autofree char *bytes = NULL;
  gsize len;

  g_assert_true (g_file_get_contents (src, &bytes, &len, NULL));
  g_assert_true (g_file_set_contents (dst, bytes, len, NULL));
  return dst;
}

/* The same file loaded twice is one object; the digest is the file's SHA-256. */
static void
test_cache_shares_one_model (void)
{
  g_autofree char *dir = g_dir_make_tmp ("nnp-model-XXXXXX", NULL);
  g_autofree char *path = copy_small_model (dir);
  g_autofree char *bytes = NULL;
  g_autofree char *expected = NULL;
  GError *error = NULL;
  NnpModel *a, *b;
  gsize len;

  a = nnp_model_load (path, &error);
  g_assert_no_error (error);
  b = nnp_model_load (path, &error);
  g_assert_no_error (error);
  g_assert_true (a == b);
  g_assert_true (nnp_model_get_graph (a) == nnp_model_get_graph (b));

  g_assert_true (g_file_get_contents (path, &bytes, &len, NULL));
  expected = g_compute_checksum_for_data (G_CHECKSUM_SHA256, (const guchar *) bytes, len);
  g_assert_cmpstr (nnp_model_get_digest (a), ==, expected);

  nnp_model_unref (b);
  nnp_model_unref (a);
  g_unlink (path);
  g_rmdir (dir);
}

/* A file that changed on disk (other size and mtime) is loaded anew. */
static void
test_cache_sees_a_changed_file (void)
{
  g_autofree char *dir = g_dir_make_tmp ("nnp-model-XXXXXX", NULL);
  g_autofree char *path = copy_small_model (dir);
  g_autofree char *bytes = NULL;
  GError *error = NULL;
  NnpModel *a, *b;
  gsize len;

  a = nnp_model_load (path, &error);
  g_assert_no_error (error);
  /* the same model bytes plus an unknown field at the end: still valid ONNX,
   * another size, so another file identity */
  g_assert_true (g_file_get_contents (path, &bytes, &len, NULL));
  {
    g_autofree char *longer = g_malloc (len + 2);
    memcpy (longer, bytes, len);
    longer[len] = (char) ((99 << 3) | 0); /* field 99, varint */
    longer[len + 1] = 1;
    g_assert_true (g_file_set_contents (path, longer, len + 2, NULL));
  }
  b = nnp_model_load (path, &error);
  g_assert_no_error (error);
  g_assert_true (a != b);
  g_assert_cmpstr (nnp_model_get_digest (a), !=, nnp_model_get_digest (b));

  nnp_model_unref (b);
  nnp_model_unref (a);
  g_unlink (path);
  g_rmdir (dir);
}

/* A missing file names itself in the error. */
static void
test_missing_file (void)
{
  GError *error = NULL;
  NnpModel *m = nnp_model_load ("/nonexistent/nnp-test.onnx", &error);

  g_assert_null (m);
  g_assert_error (error, NNP_ERROR, NNP_ERROR_IO);
  g_assert_nonnull (strstr (error->message, "/nonexistent/nnp-test.onnx"));
  g_error_free (error);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/model/cache-shares-one-model", test_cache_shares_one_model);
  g_test_add_func ("/model/cache-sees-a-changed-file", test_cache_sees_a_changed_file);
  g_test_add_func ("/model/missing-file", test_missing_file);
  return g_test_run ();
}
