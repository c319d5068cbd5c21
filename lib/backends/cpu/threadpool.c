/* libnnpipe: a thread pool owned by one stage.
 *
 * n_threads - 1 persistent pthreads plus the calling thread.  A job is
 * published by bumping `generation`; idle workers spin briefly on it, then
 * sleep on a condition variable.  Work is split into chunks (>= grain items)
 * claimed dynamically with an atomic counter; the caller claims chunks too
 * and then waits (spinning, then yielding) until every chunk is done.
 *
 * A worker that wakes late must not read a half-written job: it registers in
 * `active` and then checks `open`; the caller closes the job and waits for
 * `active` to drain before the next job may overwrite the fields.
 *
 * Nothing is allocated per nnp_parallel_for call. */
#include "backends/cpu/threadpool.h"


#include <nnpipe/error.h>
#include <nnpipe/log.h>
#include <nnpipe/device.h>

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <string.h>

#define SPIN_WAKE 20000 /* iterations a worker spins before sleeping */
#define SPIN_DONE 4000  /* iterations the caller spins before yielding */
#define CHUNKS_PER_THREAD 4

#if defined(__x86_64__) || defined(__i386__)
#define cpu_relax() __builtin_ia32_pause ()
#elif defined(__aarch64__)
#define cpu_relax() __asm__ __volatile__("yield" ::: "memory")
#else
#define cpu_relax() \
  do { \
  } while (0)
#endif

typedef struct {
  NnpThreadPool *pool;
  pthread_t thread;
  int index; /* 1 .. n_threads-1 (0 is the caller) */
  gboolean started;
} Worker;

struct _NnpThreadPool {
  int n_threads;
  Worker *workers; /* n_threads - 1 */
  int *cpus;       /* owned copy, or NULL */
  int n_cpus;
  /* between nnp_thread_pool_enter() and _leave(): the calling thread's
   * affinity before it was pinned to cpus[0] */
  gboolean caller_saved;
  cpu_set_t caller_mask;

  /* the current job (written by the caller while no worker may read it) */
  NnpParallelFunc fn;
  gpointer data;
  gsize n, chunk;
  gint n_chunks;

  gint generation; /* bumped for each job */
  gint open;       /* 1 while the job's fields are valid */
  gint next;       /* next chunk to claim */
  gint done;       /* chunks finished */
  gint active;     /* workers currently reading the job */
  gint stop;
  gint sleepers;

  GMutex lock;
  GCond wake;
};

static void
run_chunks (NnpThreadPool *pool, int thread)
{
  for (;;) {
    gint c = g_atomic_int_add (&pool->next, 1);
    gsize begin, end;

    if (c >= pool->n_chunks)
      break;
    begin = (gsize) c * pool->chunk;
    end = MIN (begin + pool->chunk, pool->n);
    pool->fn (pool->data, begin, end, thread);
    g_atomic_int_inc (&pool->done);
  }
}

static void *
worker_main (void *arg)
{
  Worker *w = arg;
  NnpThreadPool *pool = w->pool;
  gint seen = g_atomic_int_get (&pool->generation);

  for (;;) {
    gint gen = g_atomic_int_get (&pool->generation);

    for (int spin = 0; gen == seen && spin < SPIN_WAKE; spin++) {
      if (g_atomic_int_get (&pool->stop))
        return NULL;
      cpu_relax ();
      gen = g_atomic_int_get (&pool->generation);
    }
    if (gen == seen) {
      g_mutex_lock (&pool->lock);
      g_atomic_int_inc (&pool->sleepers);
      while ((gen = g_atomic_int_get (&pool->generation)) == seen
             && !g_atomic_int_get (&pool->stop))
        g_cond_wait (&pool->wake, &pool->lock);
      g_atomic_int_add (&pool->sleepers, -1);
      g_mutex_unlock (&pool->lock);
    }
    if (g_atomic_int_get (&pool->stop))
      return NULL;
    seen = gen;

    g_atomic_int_inc (&pool->active);
    if (g_atomic_int_get (&pool->open) && g_atomic_int_get (&pool->generation) == gen)
      run_chunks (pool, w->index);
    g_atomic_int_add (&pool->active, -1);
  }
}

static gboolean
pin_thread (pthread_t thread, int cpu, int index, GError **error)
{
  cpu_set_t set;
  int err;

  CPU_ZERO (&set);
  CPU_SET (cpu, &set);
  err = pthread_setaffinity_np (thread, sizeof (set), &set);
  if (err != 0) {
    g_set_error (error, NNP_ERROR, NNP_ERROR_DEVICE, "cannot pin thread %d to cpu %d: %s", index,
                 cpu, g_strerror (err));
    return FALSE;
  }
  return TRUE;
}

#define MAX_CPU_LIST 1024

gboolean
nnp_cpus_parse (const char *text, int **cpus, int *n_cpus, GError **error)
{
  g_auto (GStrv) parts = NULL;
  GArray *list;

  g_return_val_if_fail (cpus != NULL && n_cpus != NULL, FALSE);
  *cpus = NULL;
  *n_cpus = 0;
  if (text == NULL || *text == '\0')
    return TRUE;
  parts = g_strsplit (text, ",", -1);
  list = g_array_new (FALSE, FALSE, sizeof (int));
  for (int i = 0; parts[i] != NULL; i++) {
    char *p = g_strstrip (parts[i]), *end = NULL;
    gint64 lo, hi;

    lo = g_ascii_strtoll (p, &end, 10);
    if (end == p || lo < 0 || lo >= MAX_CPU_LIST)
      goto bad_item;
    hi = lo;
    if (*end == '-') {
      char *start = end + 1;

      hi = g_ascii_strtoll (start, &end, 10);
      if (end == start || hi < lo || hi >= MAX_CPU_LIST)
        goto bad_item;
    }
    if (*end != '\0' || list->len + (hi - lo + 1) > MAX_CPU_LIST)
      goto bad_item;
    for (gint64 c = lo; c <= hi; c++) {
      int v = (int) c;
      g_array_append_val (list, v);
    }
    continue;

  bad_item:
    g_set_error (
        error, NNP_ERROR, NNP_ERROR_INVALID,
        "invalid cpu list '%s' (at '%s'): expected core numbers and ranges 0..%d separated by commas, e.g. 0,1 or 0-3",
        text, p, MAX_CPU_LIST - 1);
    g_array_unref (list);
    return FALSE;
  }
  *n_cpus = (int) list->len;
  *cpus = (int *) g_array_free (list, FALSE);
  return TRUE;
}

NnpThreadPool *
nnp_thread_pool_new (int n_threads, const int *cpus, int n_cpus, GError **error)
{
  NnpThreadPool *pool;
  cpu_set_t allowed;

  g_return_val_if_fail (n_cpus == 0 || cpus != NULL, NULL);

  if (n_cpus > 0) {
    gboolean have_mask = sched_getaffinity (0, sizeof (allowed), &allowed) == 0;
    for (int i = 0; i < n_cpus; i++) {
      if (cpus[i] < 0 || cpus[i] >= CPU_SETSIZE || (have_mask && !CPU_ISSET (cpus[i], &allowed))) {
        g_set_error (error, NNP_ERROR, NNP_ERROR_DEVICE,
                     "cannot pin threads to cpu %d: not available to this process", cpus[i]);
        return NULL;
      }
    }
  }

  pool = g_new0 (NnpThreadPool, 1);
  pool->n_threads = MAX (n_threads, 1);
  if (n_cpus > 0) {
    pool->cpus = g_memdup2 (cpus, sizeof (int) * n_cpus);
    pool->n_cpus = n_cpus;
  }
  g_mutex_init (&pool->lock);
  g_cond_init (&pool->wake);
  pool->workers = g_new0 (Worker, MAX (pool->n_threads - 1, 1));

  for (int i = 0; i < pool->n_threads - 1; i++) {
    Worker *w = &pool->workers[i];
    int err;

    w->pool = pool;
    w->index = i + 1;
    err = pthread_create (&w->thread, NULL, worker_main, w);
    if (err != 0) {
      g_set_error (error, NNP_ERROR, NNP_ERROR_DEVICE, "cannot create worker thread %d: %s",
                   w->index, g_strerror (err));
      nnp_thread_pool_free (pool);
      return NULL;
    }
    w->started = TRUE;
    if (pool->n_cpus > 0
        && !pin_thread (w->thread, pool->cpus[w->index % pool->n_cpus], w->index, error)) {
      nnp_thread_pool_free (pool);
      return NULL;
    }
  }
  NNP_DEBUG ("nnp-exec", "thread pool: %d threads%s", pool->n_threads,
             pool->n_cpus > 0 ? " (pinned)" : "");
  return pool;
}

void
nnp_thread_pool_free (NnpThreadPool *pool)
{
  if (pool == NULL)
    return;
  g_mutex_lock (&pool->lock);
  g_atomic_int_set (&pool->stop, 1);
  g_cond_broadcast (&pool->wake);
  g_mutex_unlock (&pool->lock);
  for (int i = 0; i < pool->n_threads - 1; i++)
    if (pool->workers[i].started)
      pthread_join (pool->workers[i].thread, NULL);
  g_mutex_clear (&pool->lock);
  g_cond_clear (&pool->wake);
  g_free (pool->workers);
  g_free (pool->cpus);
  g_free (pool);
}

/* The calling thread is a streaming thread the stage does not own (a
 * queue's, an application's; GStreamer reuses task threads): pinned while
 * the stage runs, given its affinity back after, so a pinned stage never
 * leaves a thread pinned (issue 14: a pinned plan run from the test's own
 * thread made the next stage built there see one core). */
void
nnp_thread_pool_enter (NnpThreadPool *pool)
{
  GError *err = NULL;

  if (pool == NULL || pool->n_cpus == 0)
    return;
  g_return_if_fail (!pool->caller_saved);
  if (sched_getaffinity (0, sizeof (pool->caller_mask), &pool->caller_mask) != 0) {
    NNP_WARNING ("nnp-exec", "cannot read the calling thread's cpus: %s; not pinned",
                 g_strerror (errno));
    return;
  }
  pool->caller_saved = TRUE;
  if (!pin_thread (pthread_self (), pool->cpus[0], 0, &err)) {
    NNP_WARNING ("nnp-exec", "%s", err->message);
    g_error_free (err);
  }
}

void
nnp_thread_pool_leave (NnpThreadPool *pool)
{
  int err;

  if (pool == NULL || !pool->caller_saved)
    return;
  pool->caller_saved = FALSE;
  err = pthread_setaffinity_np (pthread_self (), sizeof (pool->caller_mask), &pool->caller_mask);
  if (err != 0)
    NNP_WARNING ("nnp-exec", "cannot give the calling thread its cpus back: %s", g_strerror (err));
}

int
nnp_thread_pool_get_n_threads (NnpThreadPool *pool)
{
  return pool ? pool->n_threads : 1;
}

void
nnp_parallel_for (NnpThreadPool *pool, gsize n, gsize grain, NnpParallelFunc fn, gpointer data)
{
  gsize n_chunks, chunk;

  g_return_if_fail (fn != NULL);
  if (n == 0)
    return;
  if (grain == 0)
    grain = 1;
  if (pool == NULL || pool->n_threads <= 1 || n <= grain) {
    fn (data, 0, n, 0);
    return;
  }

  n_chunks = MIN ((n + grain - 1) / grain, (gsize) pool->n_threads * CHUNKS_PER_THREAD);
  chunk = (n + n_chunks - 1) / n_chunks;
  n_chunks = (n + chunk - 1) / chunk;

  /* Publish the job.  No worker reads these fields now: the previous job
   * was closed and `active` drained before the previous call returned. */
  pool->fn = fn;
  pool->data = data;
  pool->n = n;
  pool->chunk = chunk;
  pool->n_chunks = (gint) n_chunks;
  g_atomic_int_set (&pool->next, 0);
  g_atomic_int_set (&pool->done, 0);
  g_atomic_int_set (&pool->open, 1);
  g_atomic_int_inc (&pool->generation);
  if (g_atomic_int_get (&pool->sleepers) > 0) {
    g_mutex_lock (&pool->lock);
    g_cond_broadcast (&pool->wake);
    g_mutex_unlock (&pool->lock);
  }

  run_chunks (pool, 0);

  for (int spin = 0; g_atomic_int_get (&pool->done) < (gint) n_chunks; spin++) {
    if (spin < SPIN_DONE)
      cpu_relax ();
    else
      sched_yield ();
  }
  g_atomic_int_set (&pool->open, 0);
  for (int spin = 0; g_atomic_int_get (&pool->active) > 0; spin++) {
    if (spin < SPIN_DONE)
      cpu_relax ();
    else
      sched_yield ();
  }
}
