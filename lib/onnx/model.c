/* libnnpipe: NnpModel, the loaded ONNX model, and the process-wide model
 * cache (see include/nnpipe/model.h).
 *
 * The cache maps a file identity (device, inode, size, mtime) to the live
 * NnpModel loaded from it.  It holds no reference: the entry is dropped when
 * the model's last reference goes.  A lookup that races with that last unref
 * sees a zero refcount, does not resurrect the dying model, and loads a fresh
 * copy that replaces the entry. */
#include <nnpipe/model.h>
#include <nnpipe/log.h>

#include "onnx/loader.h"
#include "onnx/model-private.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define LOG_CAT "nnp-onnx"

typedef struct {
  guint64 dev, ino, size;
  gint64 mtime_sec, mtime_nsec;
} FileKey;

struct _NnpModel {
  gint ref_count;
  char *name;
  GMutex digest_lock;
  char *digest;           /* NULL until known */
  GThread *digest_thread; /* hashing digest_src in the background, or NULL */
  GMappedFile *digest_src;
  gint digest_cancel; /* atomic: set by model_free() to stop the thread early */
  NnpOnnxModelInfo info;
  NnpGraph *graph;
  gboolean cached; /* registered in the cache under `key` */
  FileKey key;
};

static GMutex cache_lock;
static GHashTable *cache; /* FileKey* (inside the model) -> NnpModel*, no refs */

static guint
file_key_hash (gconstpointer p)
{
  const FileKey *k = p;
  guint64 h = k->ino * 0x9e3779b97f4a7c15ull ^ k->dev ^ (k->size << 17) ^ (guint64) k->mtime_sec
              ^ ((guint64) k->mtime_nsec << 32);
  return (guint) (h ^ (h >> 32));
}

static gboolean
file_key_equal (gconstpointer a, gconstpointer b)
{
  return memcmp (a, b, sizeof (FileKey)) == 0;
}

static void
model_free (NnpModel *model)
{
  if (model->digest_thread) {
    g_atomic_int_set (&model->digest_cancel, 1);
    g_free (g_thread_join (model->digest_thread));
  }
  if (model->digest_src)
    g_mapped_file_unref (model->digest_src);
  g_mutex_clear (&model->digest_lock);
  nnp_graph_unref (model->graph);
  nnp_onnx_model_info_clear (&model->info);
  g_free (model->name);
  g_free (model->digest);
  g_free (model);
}

static gpointer
digest_worker (gpointer data)
{
  NnpModel *model = data; /* outlives the thread: model_free() joins it */
  const guint8 *bytes = (const guint8 *) g_mapped_file_get_contents (model->digest_src);
  gsize size = g_mapped_file_get_length (model->digest_src);
  const gsize chunk = 1 << 20;
  GChecksum *sum = g_checksum_new (G_CHECKSUM_SHA256);
  char *hex = NULL;

  for (gsize off = 0; off < size; off += chunk) {
    if (g_atomic_int_get (&model->digest_cancel))
      goto out;
    g_checksum_update (sum, bytes + off, MIN (chunk, size - off));
  }
  hex = g_strdup (g_checksum_get_string (sum));
out:
  g_checksum_free (sum);
  return hex;
}

/* Parse a model.  With `mapped` (the file data points into), the SHA-256
 * (about 4 ms per MB) is computed on a thread of its own while the caller
 * goes on, and nnp_model_get_digest() waits for it; without, right here. */
static NnpModel *
model_parse (const guint8 *data, gsize size, const char *name, GMappedFile *mapped, GError **error)
{
  NnpModel *model = g_new0 (NnpModel, 1);
  g_autofree char *base = g_path_get_basename (name);
  gint64 t0 = g_get_monotonic_time ();

  model->ref_count = 1;
  model->name = g_strdup (name);
  g_mutex_init (&model->digest_lock);
  model->graph = nnp_onnx_parse_model (data, size, base, &model->info, error);
  if (model->graph == NULL) {
    g_prefix_error (error, "%s: ", name);
    model_free (model);
    return NULL;
  }
  if (mapped) {
    model->digest_src = g_mapped_file_ref (mapped);
    model->digest_thread = g_thread_try_new ("nnp-digest", digest_worker, model, NULL);
  }
  if (model->digest_thread == NULL)
    model->digest = g_compute_checksum_for_data (G_CHECKSUM_SHA256, data, size);
  NNP_INFO (LOG_CAT, "loaded %s (%" G_GSIZE_FORMAT " bytes, %u nodes) in %.1f ms", name, size,
            model->graph->nodes->len, (g_get_monotonic_time () - t0) / 1000.0);
  return model;
}

NnpModel *
nnp_model_load_from_bytes (const guint8 *data, gsize size, const char *name, GError **error)
{
  g_return_val_if_fail (data != NULL || size == 0, NULL);
  g_return_val_if_fail (error == NULL || *error == NULL, NULL);

  return model_parse (data ? data : (const guint8 *) "", size, name ? name : "<memory>", NULL,
                      error);
}

/* Take a reference on a cached model unless it is already dying. */
static gboolean
try_ref (NnpModel *model)
{
  for (;;) {
    gint old = g_atomic_int_get (&model->ref_count);
    if (old <= 0)
      return FALSE;
    if (g_atomic_int_compare_and_exchange (&model->ref_count, old, old + 1))
      return TRUE;
  }
}

static NnpModel *
cache_lookup (const FileKey *key)
{
  NnpModel *model = NULL;

  g_mutex_lock (&cache_lock);
  if (cache) {
    model = g_hash_table_lookup (cache, key);
    if (model && !try_ref (model))
      model = NULL;
  }
  g_mutex_unlock (&cache_lock);
  return model;
}

/* Register a freshly parsed model, or return the one another thread
 * registered meanwhile (then `model` is freed). */
static NnpModel *
cache_insert (NnpModel *model)
{
  NnpModel *other;

  g_mutex_lock (&cache_lock);
  if (cache == NULL)
    cache = g_hash_table_new (file_key_hash, file_key_equal);
  other = g_hash_table_lookup (cache, &model->key);
  if (other && try_ref (other)) {
    g_mutex_unlock (&cache_lock);
    model_free (model);
    return other;
  }
  model->cached = TRUE;
  g_hash_table_replace (cache, &model->key, model); /* replaces the key pointer too */
  g_mutex_unlock (&cache_lock);
  return model;
}

NnpModel *
nnp_model_load (const char *path, GError **error)
{
  g_autoptr (GMappedFile) mapped = NULL;
  GError *local = NULL;
  struct stat st;
  FileKey key;
  NnpModel *model;
  int fd;

  g_return_val_if_fail (path != NULL, NULL);
  g_return_val_if_fail (error == NULL || *error == NULL, NULL);

  fd = open (path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    int e = errno;
    g_set_error (error, NNP_ERROR, NNP_ERROR_IO, "%s: cannot open: %s", path, g_strerror (e));
    return NULL;
  }
  if (fstat (fd, &st) != 0) {
    int e = errno;
    g_set_error (error, NNP_ERROR, NNP_ERROR_IO, "%s: cannot stat: %s", path, g_strerror (e));
    close (fd);
    return NULL;
  }
  if (!S_ISREG (st.st_mode)) {
    g_set_error (error, NNP_ERROR, NNP_ERROR_IO, "%s: not a regular file", path);
    close (fd);
    return NULL;
  }
  memset (&key, 0, sizeof (key));
  key.dev = (guint64) st.st_dev;
  key.ino = (guint64) st.st_ino;
  key.size = (guint64) st.st_size;
  key.mtime_sec = (gint64) st.st_mtim.tv_sec;
  key.mtime_nsec = (gint64) st.st_mtim.tv_nsec;

  model = cache_lookup (&key);
  if (model) {
    close (fd);
    NNP_DEBUG (LOG_CAT, "%s: cached (loaded as %s)", path, model->name);
    return model;
  }

  if (st.st_size > 0) {
    mapped = g_mapped_file_new_from_fd (fd, FALSE, &local);
    if (mapped == NULL) {
      g_set_error (error, NNP_ERROR, NNP_ERROR_IO, "%s: cannot read: %s", path, local->message);
      g_error_free (local);
      close (fd);
      return NULL;
    }
  }
  close (fd);

  model = model_parse (mapped ? (const guint8 *) g_mapped_file_get_contents (mapped)
                              : (const guint8 *) "",
                       mapped ? g_mapped_file_get_length (mapped) : 0, path, mapped, error);
  if (model == NULL)
    return NULL;
  model->key = key;
  return cache_insert (model);
}

NnpModel *
nnp_model_ref (NnpModel *model)
{
  g_return_val_if_fail (model != NULL, NULL);
  g_atomic_int_inc (&model->ref_count);
  return model;
}

void
nnp_model_unref (NnpModel *model)
{
  if (model == NULL || !g_atomic_int_dec_and_test (&model->ref_count))
    return;
  if (model->cached) {
    g_mutex_lock (&cache_lock);
    if (cache && g_hash_table_lookup (cache, &model->key) == model)
      g_hash_table_remove (cache, &model->key);
    g_mutex_unlock (&cache_lock);
  }
  model_free (model);
}

NnpGraph *
nnp_model_get_graph (NnpModel *model)
{
  g_return_val_if_fail (model != NULL, NULL);
  return model->graph;
}

const char *
nnp_model_get_name (NnpModel *model)
{
  g_return_val_if_fail (model != NULL, NULL);
  return model->name;
}

const char *
nnp_model_get_digest (NnpModel *model)
{
  const char *digest;

  g_return_val_if_fail (model != NULL, NULL);
  g_mutex_lock (&model->digest_lock);
  if (model->digest_thread) {
    model->digest = g_thread_join (model->digest_thread);
    model->digest_thread = NULL;
    g_clear_pointer (&model->digest_src, g_mapped_file_unref);
  }
  digest = model->digest;
  g_mutex_unlock (&model->digest_lock);
  return digest;
}

const char *
nnp_model_get_producer (NnpModel *model)
{
  g_return_val_if_fail (model != NULL, NULL);
  return model->info.producer ? model->info.producer : "";
}

int64_t
nnp_model_get_ir_version (NnpModel *model)
{
  g_return_val_if_fail (model != NULL, 0);
  return model->info.ir_version;
}
