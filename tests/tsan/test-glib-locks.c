/* tsan-glib-locks: counters shared by threads under GMutex, GRecMutex,
 * GRWLock, a GCond handoff and buffers handed over through a GAsyncQueue
 * (as GstHarness hands a streaming thread's output to the test).  Under ThreadSanitizer with
 * libnnp-tsan-glib-locks.so preloaded there is no report; without it
 * (test tsan-glib-locks-unseen, should_fail) TSan reports the accesses as
 * races, because GLib's futex locks are invisible to it: proof that the
 * interposer is what makes the TSan job's reports real. */
#include <glib.h>

static GMutex mutex;
static GRecMutex rec_mutex;
static GRWLock rw_lock;
static GCond cond;
static int counter, rec_counter, rw_counter, turn;

#define ROUNDS 2000

static gpointer
worker (gpointer data)
{
  int me = GPOINTER_TO_INT (data);

  for (int i = 0; i < ROUNDS; i++) {
    g_mutex_lock (&mutex);
    counter++;
    g_mutex_unlock (&mutex);

    g_rec_mutex_lock (&rec_mutex);
    g_rec_mutex_lock (&rec_mutex);
    rec_counter++;
    g_rec_mutex_unlock (&rec_mutex);
    g_rec_mutex_unlock (&rec_mutex);

    g_rw_lock_writer_lock (&rw_lock);
    rw_counter++;
    g_rw_lock_writer_unlock (&rw_lock);
    g_rw_lock_reader_lock (&rw_lock);
    (void) rw_counter;
    g_rw_lock_reader_unlock (&rw_lock);
  }
  /* strict alternation through a condition variable */
  for (int i = 0; i < 200; i++) {
    g_mutex_lock (&mutex);
    while (turn % 2 != me)
      g_cond_wait (&cond, &mutex);
    turn++;
    g_cond_broadcast (&cond);
    g_mutex_unlock (&mutex);
  }
  return NULL;
}

/* Fill buffers and hand them over: the popper reads what the pusher wrote
 * with no other synchronisation than the queue. */
static gpointer
producer (gpointer data)
{
  GAsyncQueue *q = data;

  for (int i = 0; i < 200; i++) {
    int *buf = g_new (int, 64);

    for (int k = 0; k < 64; k++)
      buf[k] = i + k;
    g_async_queue_push (q, buf);
  }
  return NULL;
}

static int
consume (GAsyncQueue *q)
{
  int sum = 0;

  for (int i = 0; i < 200; i++) {
    int *buf = i % 2 ? g_async_queue_pop (q) : g_async_queue_timeout_pop (q, G_USEC_PER_SEC * 10);

    if (buf == NULL)
      return -1;
    sum += buf[63] - buf[0];
    g_free (buf);
  }
  return sum;
}

int
main (void)
{
  GThread *a = g_thread_new ("a", worker, GINT_TO_POINTER (0));
  GThread *b = g_thread_new ("b", worker, GINT_TO_POINTER (1));
  GAsyncQueue *q = g_async_queue_new ();
  GThread *p = g_thread_new ("producer", producer, q);
  int sum = consume (q);

  g_thread_join (p);
  g_async_queue_unref (q);
  if (sum != 200 * 63) {
    g_printerr ("wrong queue sum: %d\n", sum);
    return 1;
  }
  g_thread_join (a);
  g_thread_join (b);
  if (counter != 2 * ROUNDS || rec_counter != 2 * ROUNDS || rw_counter != 2 * ROUNDS
      || turn != 400) {
    g_printerr ("wrong counts: %d %d %d %d\n", counter, rec_counter, rw_counter, turn);
    return 1;
  }
  g_print ("counts right: %d %d %d %d\n", counter, rec_counter, rw_counter, turn);
  return 0;
}
