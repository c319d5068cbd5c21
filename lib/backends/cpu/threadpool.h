/* libnnpipe internal: a thread pool owned by one stage (no global pool:
 * several stages of a pipeline each own theirs and may pin them to cores). */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

typedef struct _NnpThreadPool NnpThreadPool;

/* n_threads total workers including the calling thread (n_threads - 1 are
 * created).  cpus: optional list; worker i (0 = caller) is pinned to
 * cpus[i % n_cpus] (the caller between nnp_thread_pool_enter() and
 * _leave()).  Fails with NNP_ERROR_DEVICE when a thread cannot be created
 * or pinned, or a cpu is not in the calling thread's affinity. */
NnpThreadPool *nnp_thread_pool_new (int n_threads, const int *cpus, int n_cpus, GError **error);
void nnp_thread_pool_free (NnpThreadPool *pool);
/* Around a run of jobs from one thread (a stage's run): with cpus, pin the
 * calling thread to cpus[0], and give it back the affinity it had on leave
 * (nothing without cpus or for a NULL pool).  Not nested. */
void nnp_thread_pool_enter (NnpThreadPool *pool);
void nnp_thread_pool_leave (NnpThreadPool *pool);
/* 1 for a NULL pool. */
int nnp_thread_pool_get_n_threads (NnpThreadPool *pool);

/* Work on the range [begin, end) of n items; thread is in [0, n_threads). */
typedef void (*NnpParallelFunc) (gpointer data, gsize begin, gsize end, int thread);

/* Split [0, n) into chunks of at least `grain` items, run them on the pool's
 * threads (the caller participates) and return when all are done.  With a
 * NULL pool, or n <= grain, runs fn(data, 0, n, 0) inline.  Not reentrant:
 * do not call from inside fn. */
void nnp_parallel_for (NnpThreadPool *pool, gsize n, gsize grain, NnpParallelFunc fn,
                       gpointer data);

G_END_DECLS
