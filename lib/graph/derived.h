/* libnnpipe internal: the derived-data cache of a model, shared by every
 * specialisation of it.
 *
 * What depends only on a model's constant tensors (weights) - folded
 * weights, weights packed for the GEMM - is the same for every input shape.
 * A graph holds one NnpDerivedCache, created on first use; nnp_graph_copy()
 * (and so nnp_graph_specialize()) gives the copy the same cache, so every
 * specialisation of a model finds what an earlier one computed.  Only the
 * shape-dependent work (shape inference, the memory plan, the kernel choice)
 * is redone for a new shape.
 *
 * An entry is keyed by (kind, source tensors by identity, parameter bytes)
 * and holds a reference on each source tensor, so a source's address cannot
 * be reused by another tensor while the entry lives (tensors are immutable
 * once they are constants).  Entries are made only from *stable* sources:
 * tensors the cache holds for the model's lifetime - the constants and
 * constant attributes of every graph specialised from (registered by
 * nnp_graph_specialize()) and the tensors entries produced.  A source made
 * afresh by each specialisation (e.g. a folded Shape) would never hit again:
 * derivations from it are not cached (the caller computes its own copy), so
 * the cache cannot grow with the number of specialisations.
 *
 * Lifetime: the cache lives as long as the last graph that shares it (the
 * model's graph and its specialisations); values are never evicted before.
 * A value pointer from nnp_derived_get() is borrowed: valid while the caller
 * holds a reference on a graph sharing the cache (a stage holds its graph).
 *
 * Thread safety: every function may be called from any thread.  Values are
 * made outside the lock; when two threads make the same entry at once, the
 * first inserted wins and the other's value is freed. */
#pragma once

#include <glib.h>
#include <nnpipe/graph.h>

G_BEGIN_DECLS

typedef struct _NnpDerivedCache NnpDerivedCache;

/* The graph's cache (created on first call; borrowed, lives with the graph). */
NnpDerivedCache *nnp_graph_get_derived (const NnpGraph *graph);

NnpDerivedCache *nnp_derived_cache_ref (NnpDerivedCache *cache);
void nnp_derived_cache_unref (NnpDerivedCache *cache);

/* Register the graph's constants and tensor attributes as stable sources. */
void nnp_derived_cache_add_graph (NnpDerivedCache *cache, const NnpGraph *graph);
/* Register one tensor (a value an entry produced) as a stable source. */
void nnp_derived_cache_add_stable (NnpDerivedCache *cache, NnpTensor *tensor);
gboolean nnp_derived_cache_is_stable (NnpDerivedCache *cache, const NnpTensor *tensor);

/* Make the value for a missing entry; NULL: nothing to cache (not stored). */
typedef gpointer (*NnpDerivedMake) (gpointer data);

/* The value derived from `sources` by `kind` with these parameter bytes:
 * the cached one, or made by make(data) and cached.  Returns NULL without
 * calling make when a source is not stable (or NULL): the caller then makes
 * and owns its own value.  free_value frees a value when the cache goes. */
gpointer nnp_derived_get (NnpDerivedCache *cache, const char *kind, NnpTensor *const *sources,
                          int n_sources, gconstpointer params, gsize params_size,
                          NnpDerivedMake make, gpointer data, GDestroyNotify free_value);

/* Counters (tests, benchmarks): entries made and lookups answered from the
 * cache since it was created. */
void nnp_derived_cache_get_counts (NnpDerivedCache *cache, guint *n_made, guint *n_hits);

G_END_DECLS
