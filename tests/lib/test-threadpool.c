/* Unit tests: the stage thread pool (lib/backends/cpu/threadpool.h). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <nnpipe/nnpipe.h>
#include "backends/cpu/threadpool.h"

#include <sched.h>

typedef struct {
  gint *hits; /* per index, atomically incremented */
  int n_threads;
  gint bad_thread; /* set when a callback saw a thread id out of range */
  gint calls;
} Work;

static void
mark (gpointer data, gsize begin, gsize end, int thread)
{
  Work *w = data;

  g_atomic_int_inc (&w->calls);
  if (thread < 0 || thread >= w->n_threads)
    g_atomic_int_set (&w->bad_thread, 1);
  for (gsize i = begin; i < end; i++)
    g_atomic_int_inc (&w->hits[i]);
}

static void
check_cover (NnpThreadPool *pool, int n_threads, gsize n, gsize grain)
{
  Work w = { .n_threads = n_threads };

  w.hits = g_new0 (gint, MAX (n, 1));
  nnp_parallel_for (pool, n, grain, mark, &w);
  for (gsize i = 0; i < n; i++) {
    if (w.hits[i] != 1)
      g_error ("threads=%d n=%" G_GSIZE_FORMAT " grain=%" G_GSIZE_FORMAT ": index %" G_GSIZE_FORMAT
               " ran %d times",
               n_threads, n, grain, i, w.hits[i]);
  }
  g_assert_cmpint (w.bad_thread, ==, 0);
  if (n > 0 && grain > 0)
    g_assert_cmpint (w.calls, <=, (int) ((n + grain - 1) / grain));
  g_free (w.hits);
}

static void
test_parallel_for_covers (void)
{
  const int thread_counts[] = { 1, 2, 4 };
  const gsize sizes[] = { 0, 1, 2, 3, 7, 64, 1000, 100003 };
  const gsize grains[] = { 1, 3, 16, 4096 };

  for (guint t = 0; t < G_N_ELEMENTS (thread_counts); t++) {
    g_autoptr (GError) error = NULL;
    NnpThreadPool *pool = nnp_thread_pool_new (thread_counts[t], NULL, 0, &error);

    g_assert_no_error (error);
    g_assert_cmpint (nnp_thread_pool_get_n_threads (pool), ==, thread_counts[t]);
    for (guint s = 0; s < G_N_ELEMENTS (sizes); s++)
      for (guint g = 0; g < G_N_ELEMENTS (grains); g++)
        check_cover (pool, thread_counts[t], sizes[s], grains[g]);
    /* many small rounds in a row: no lost wake-ups */
    for (int round = 0; round < 2000; round++)
      check_cover (pool, thread_counts[t], 8, 1);
    nnp_thread_pool_free (pool);
  }
}

static void
test_null_pool (void)
{
  g_assert_cmpint (nnp_thread_pool_get_n_threads (NULL), ==, 1);
  check_cover (NULL, 1, 1000, 10);
}

typedef struct {
  gint seen[4];
} ThreadsSeen;

static void
note_thread (gpointer data, gsize begin, gsize end, int thread)
{
  ThreadsSeen *s = data;
  volatile double x = 0;

  /* enough work per chunk that every worker gets some */
  for (gsize i = begin; i < end; i++)
    for (int k = 0; k < 2000; k++)
      x += k * 0.5;
  g_atomic_int_inc (&s->seen[thread]);
}

static void
test_uses_all_threads (void)
{
  g_autoptr (GError) error = NULL;
  NnpThreadPool *pool = nnp_thread_pool_new (4, NULL, 0, &error);
  ThreadsSeen s = { { 0 } };
  int used = 0;

  g_assert_no_error (error);
  for (int round = 0; round < 20; round++)
    nnp_parallel_for (pool, 4096, 1, note_thread, &s);
  for (int t = 0; t < 4; t++)
    used += s.seen[t] > 0;
  g_test_message ("threads used: %d of 4", used);
  g_assert_cmpint (used, >=, 2);
  nnp_thread_pool_free (pool);
}

typedef struct {
  cpu_set_t during; /* the calling thread's cpus inside the job */
  gint got;
} CallerMask;

static void
note_caller_mask (gpointer data, gsize begin, gsize end, int thread)
{
  CallerMask *c = data;

  if (thread == 0 && !g_atomic_int_get (&c->got)) {
    g_assert_cmpint (sched_getaffinity (0, sizeof (c->during), &c->during), ==, 0);
    g_atomic_int_set (&c->got, 1);
  }
}

/* A pinned pool pins the calling thread between enter and leave only: after
 * leave the thread has every cpu it had, and a pool pinned to another of
 * them can still be made from it (a pinned stage run from a streaming
 * thread used to leave that thread on one core for good). */
static void
test_pinned_caller_restored (void)
{
  g_autoptr (GError) error = NULL;
  cpu_set_t before, after;
  CallerMask c = { 0 };
  NnpThreadPool *pool;
  int first = -1, last = -1;

  g_assert_cmpint (sched_getaffinity (0, sizeof (before), &before), ==, 0);
  for (int i = 0; i < CPU_SETSIZE; i++)
    if (CPU_ISSET (i, &before)) {
      first = first < 0 ? i : first;
      last = i;
    }
  g_assert_cmpint (last, >=, 0);
  pool = nnp_thread_pool_new (1, &last, 1, &error);
  g_assert_no_error (error);
  nnp_thread_pool_enter (pool);
  nnp_parallel_for (pool, 16, 1, note_caller_mask, &c);
  nnp_thread_pool_leave (pool);
  nnp_thread_pool_free (pool);
  g_assert_true (c.got);
  g_assert_cmpint (CPU_COUNT (&c.during), ==, 1);
  g_assert_true (CPU_ISSET (last, &c.during));

  g_assert_cmpint (sched_getaffinity (0, sizeof (after), &after), ==, 0);
  g_assert_true (CPU_EQUAL (&before, &after));
  pool = nnp_thread_pool_new (1, &first, 1, &error);
  g_assert_no_error (error);
  g_assert_nonnull (pool);
  nnp_thread_pool_free (pool);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/threadpool/parallel-for-covers", test_parallel_for_covers);
  g_test_add_func ("/threadpool/null-pool", test_null_pool);
  g_test_add_func ("/threadpool/uses-all-threads", test_uses_all_threads);
  g_test_add_func ("/threadpool/pinned-caller-restored", test_pinned_caller_restored);
  return g_test_run ();
}
