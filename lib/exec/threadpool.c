/* STUB thread pool: runs everything inline.  To be replaced by the real pool. */
#include "exec/threadpool.h"

struct _NnpThreadPool {
  int n_threads;
};

NnpThreadPool *
nnp_thread_pool_new (int n_threads, const int *cpus, int n_cpus, GError **error)
{
  NnpThreadPool *pool = g_new0 (NnpThreadPool, 1);
  (void) cpus;
  (void) n_cpus;
  (void) error;
  pool->n_threads = MAX (n_threads, 1);
  return pool;
}

void
nnp_thread_pool_free (NnpThreadPool *pool)
{
  g_free (pool);
}

int
nnp_thread_pool_get_n_threads (NnpThreadPool *pool)
{
  return pool ? pool->n_threads : 1;
}

void
nnp_parallel_for (NnpThreadPool *pool, gsize n, gsize grain, NnpParallelFunc fn, gpointer data)
{
  (void) pool;
  (void) grain;
  if (n > 0)
    fn (data, 0, n, 0);
}
