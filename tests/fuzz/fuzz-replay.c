/* A main() for a libFuzzer harness outside libFuzzer: runs every file of
 * the corpus folders given (the seeds) through LLVMFuzzerTestOneInput, then
 * MUTATIONS variants of each (bytes flipped, cut, repeated: a fixed seed,
 * so every run is the same).  The normal and the ThreadSanitizer builds run
 * the server harness this way (test plugin-server-replay); -Dfuzzing=enabled
 * builds run it under libFuzzer (tests/fuzz/run.sh).
 *
 *   fuzz-replay [--mutations N] CORPUS_DIR... */
#include <glib.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerInitialize (int *argc, char ***argv);
int LLVMFuzzerTestOneInput (const guint8 *data, size_t size);

static guint8 *
mutate (GRand *r, const guint8 *data, gsize size, gsize *out_size)
{
  gsize n = size + 16;
  guint8 *m = g_malloc (n);
  guint kind = g_rand_int_range (r, 0, 4);

  memcpy (m, data, size);
  *out_size = size;
  if (size < 2)
    return m;
  switch (kind) {
    case 0: /* flip a few bytes (never the harness's mode byte) */
      for (gint k = g_rand_int_range (r, 1, 5); k > 0; k--)
        m[g_rand_int_range (r, 1, (gint32) size)] ^= (guint8) g_rand_int_range (r, 1, 256);
      break;
    case 1: /* cut the end */ *out_size = (gsize) g_rand_int_range (r, 1, (gint32) size); break;
    case 2: /* a byte set to an edge value */
      m[g_rand_int_range (r, 1, (gint32) size)] = (guint8) (g_rand_boolean (r) ? 0xff : 0x00);
      break;
    default: /* a stretch repeated */
    {
      gsize at = (gsize) g_rand_int_range (r, 1, (gint32) size);
      gsize len = MIN (16, size - at);
      memmove (m + at + len, m + at, size - at);
      *out_size = size + len;
    } break;
  }
  return m;
}

int
main (int argc, char **argv)
{
  GRand *r = g_rand_new_with_seed (19);
  guint mutations = 0, n = 0;
  int i = 1;

  if (argc > 2 && strcmp (argv[1], "--mutations") == 0) {
    mutations = (guint) atoi (argv[2]);
    i = 3;
  }
  if (i >= argc) {
    g_printerr ("usage: %s [--mutations N] CORPUS_DIR...\n", argv[0]);
    return 2;
  }
  LLVMFuzzerInitialize (&argc, &argv);
  for (; i < argc; i++) {
    GDir *dir = g_dir_open (argv[i], 0, NULL);
    GPtrArray *names = g_ptr_array_new_with_free_func (g_free);
    const gchar *name;

    if (dir == NULL) {
      g_printerr ("%s: cannot open %s\n", argv[0], argv[i]);
      return 1;
    }
    while ((name = g_dir_read_name (dir)) != NULL)
      g_ptr_array_add (names, g_strdup (name));
    g_dir_close (dir);
    g_ptr_array_sort (names, (GCompareFunc) g_strcmp0);
    for (guint k = 0; k < names->len; k++) {
      gchar *path = g_build_filename (argv[i], (const gchar *) names->pdata[k], NULL);
      gchar *data = NULL;
      gsize size = 0;

      if (!g_file_get_contents (path, &data, &size, NULL)) {
        g_printerr ("%s: cannot read %s\n", argv[0], path);
        return 1;
      }
      LLVMFuzzerTestOneInput ((const guint8 *) data, size);
      n++;
      for (guint m = 0; m < mutations; m++) {
        gsize msize;
        guint8 *md = mutate (r, (const guint8 *) data, size, &msize);

        LLVMFuzzerTestOneInput (md, msize);
        g_free (md);
        n++;
      }
      g_free (data);
      g_free (path);
    }
    g_ptr_array_unref (names);
  }
  g_rand_free (r);
  g_print ("%u inputs run\n", n);
  return 0;
}
