/* libnnpipe: the derived-data cache shared by the specialisations of a
 * model (see derived.h for the rules: keys, stable sources, lifetime,
 * threads). */
#include "graph/derived.h"

#include <string.h>

struct _NnpDerivedCache {
  gint ref_count;
  GMutex lock;
  GHashTable *stable;  /* NnpTensor* -> same, owned refs: sources that live with the cache */
  GHashTable *entries; /* GBytes* key (owned) -> Entry* (owned) */
  guint n_made, n_hits;
};

typedef struct {
  NnpTensor **sources; /* owned refs: keep the addresses in the key unique */
  int n_sources;
  gpointer value; /* owned, freed with free_value */
  GDestroyNotify free_value;
} Entry;

static void
entry_free (gpointer data)
{
  Entry *e = data;

  if (e->free_value)
    e->free_value (e->value);
  for (int i = 0; i < e->n_sources; i++)
    nnp_tensor_unref (e->sources[i]);
  g_free (e->sources);
  g_free (e);
}

static NnpDerivedCache *
derived_cache_new (void)
{
  NnpDerivedCache *cache = g_new0 (NnpDerivedCache, 1);

  cache->ref_count = 1;
  g_mutex_init (&cache->lock);
  cache->stable = g_hash_table_new_full (g_direct_hash, g_direct_equal,
                                         (GDestroyNotify) nnp_tensor_unref, NULL);
  cache->entries = g_hash_table_new_full (g_bytes_hash, g_bytes_equal,
                                          (GDestroyNotify) g_bytes_unref, entry_free);
  return cache;
}

NnpDerivedCache *
nnp_graph_get_derived (const NnpGraph *graph)
{
  NnpGraph *g = (NnpGraph *) graph; /* the cache is a thread-safe attachment, not graph state */
  NnpDerivedCache *cache = g_atomic_pointer_get (&g->derived);

  if (cache == NULL) {
    NnpDerivedCache *made = derived_cache_new ();

    if (g_atomic_pointer_compare_and_exchange (&g->derived, NULL, made))
      cache = made;
    else {
      nnp_derived_cache_unref (made);
      cache = g_atomic_pointer_get (&g->derived);
    }
  }
  return cache;
}

NnpDerivedCache *
nnp_derived_cache_ref (NnpDerivedCache *cache)
{
  g_atomic_int_inc (&cache->ref_count);
  return cache;
}

void
nnp_derived_cache_unref (NnpDerivedCache *cache)
{
  if (cache == NULL || !g_atomic_int_dec_and_test (&cache->ref_count))
    return;
  /* entries first: their values may point into stable tensors */
  g_hash_table_destroy (cache->entries);
  g_hash_table_destroy (cache->stable);
  g_mutex_clear (&cache->lock);
  g_free (cache);
}

static void
add_stable_locked (NnpDerivedCache *cache, NnpTensor *t)
{
  if (t != NULL && !g_hash_table_contains (cache->stable, t))
    g_hash_table_add (cache->stable, nnp_tensor_ref (t));
}

void
nnp_derived_cache_add_graph (NnpDerivedCache *cache, const NnpGraph *graph)
{
  g_mutex_lock (&cache->lock);
  for (guint i = 0; i < graph->values->len; i++)
    add_stable_locked (cache, nnp_graph_value (graph, i)->constant);
  for (guint i = 0; i < graph->nodes->len; i++) {
    const NnpNode *node = nnp_graph_node (graph, i);
    for (int a = 0; a < node->n_attrs; a++)
      if (node->attrs[a].type == NNP_ATTR_TENSOR)
        add_stable_locked (cache, node->attrs[a].t);
  }
  g_mutex_unlock (&cache->lock);
}

void
nnp_derived_cache_add_stable (NnpDerivedCache *cache, NnpTensor *tensor)
{
  g_mutex_lock (&cache->lock);
  add_stable_locked (cache, tensor);
  g_mutex_unlock (&cache->lock);
}

gboolean
nnp_derived_cache_is_stable (NnpDerivedCache *cache, const NnpTensor *tensor)
{
  gboolean ret;

  g_mutex_lock (&cache->lock);
  ret = tensor != NULL && g_hash_table_contains (cache->stable, tensor);
  g_mutex_unlock (&cache->lock);
  return ret;
}

/* kind NUL, n_sources, source addresses, params */
static GBytes *
make_key (const char *kind, NnpTensor *const *sources, int n_sources, gconstpointer params,
          gsize params_size)
{
  GByteArray *k = g_byte_array_new ();
  guint32 n = (guint32) n_sources;

  g_byte_array_append (k, (const guint8 *) kind, strlen (kind) + 1);
  g_byte_array_append (k, (const guint8 *) &n, sizeof (n));
  for (int i = 0; i < n_sources; i++)
    g_byte_array_append (k, (const guint8 *) &sources[i], sizeof (sources[i]));
  if (params_size > 0)
    g_byte_array_append (k, params, (guint) params_size);
  return g_byte_array_free_to_bytes (k);
}

gpointer
nnp_derived_get (NnpDerivedCache *cache, const char *kind, NnpTensor *const *sources, int n_sources,
                 gconstpointer params, gsize params_size, NnpDerivedMake make, gpointer data,
                 GDestroyNotify free_value)
{
  g_autoptr (GBytes) key = NULL;
  Entry *e;
  gpointer value;

  g_return_val_if_fail (cache != NULL && kind != NULL && make != NULL, NULL);
  g_return_val_if_fail (n_sources >= 0 && (n_sources == 0 || sources != NULL), NULL);

  key = make_key (kind, sources, n_sources, params, params_size);
  g_mutex_lock (&cache->lock);
  for (int i = 0; i < n_sources; i++) {
    if (sources[i] == NULL || !g_hash_table_contains (cache->stable, sources[i])) {
      g_mutex_unlock (&cache->lock);
      return NULL;
    }
  }
  e = g_hash_table_lookup (cache->entries, key);
  if (e) {
    cache->n_hits++;
    g_mutex_unlock (&cache->lock);
    return e->value;
  }
  g_mutex_unlock (&cache->lock);

  /* made outside the lock: packing a big weight must not block other stages */
  value = make (data);
  if (value == NULL)
    return NULL;

  g_mutex_lock (&cache->lock);
  e = g_hash_table_lookup (cache->entries, key);
  if (e) {
    /* another thread made it meanwhile: keep the first */
    cache->n_hits++;
    g_mutex_unlock (&cache->lock);
    if (free_value)
      free_value (value);
    return e->value;
  }
  e = g_new0 (Entry, 1);
  e->n_sources = n_sources;
  e->sources = g_new (NnpTensor *, MAX (n_sources, 1));
  for (int i = 0; i < n_sources; i++)
    e->sources[i] = nnp_tensor_ref (sources[i]);
  e->value = value;
  e->free_value = free_value;
  g_hash_table_insert (cache->entries, g_bytes_ref (key), e);
  cache->n_made++;
  g_mutex_unlock (&cache->lock);
  return value;
}

void
nnp_derived_cache_get_counts (NnpDerivedCache *cache, guint *n_made, guint *n_hits)
{
  g_mutex_lock (&cache->lock);
  if (n_made)
    *n_made = cache->n_made;
  if (n_hits)
    *n_hits = cache->n_hits;
  g_mutex_unlock (&cache->lock);
}
