/* tsan-glib-clear: a GMutex, a GRecMutex and a GRWLock used by one thread
 * and cleared by another, ordered only by something TSan cannot see (as
 * GObject's atomic refcount orders gst_element_finalize() clearing an
 * element's state lock after another thread's last unlock: plugin-streams
 * once).  With libnnp-tsan-glib-locks.so preloaded (its unlock releases the
 * lock, its clear acquires it) there is no report; with
 * NNP_TSAN_NO_CLEAR_ORDER=1 (test tsan-glib-clear-unseen, should_fail) TSan
 * reports the clear against the other thread's last unlock, every time:
 * the clear always comes after that unlock, in the main thread. */
#include <glib.h>

static GMutex mutex;
static GRecMutex rec_mutex;
static GRWLock rw_lock;
static int value;

/* The handover TSan must not see: a plain flag, its accesses not
 * instrumented (GObject's refcount is an atomic in uninstrumented code). */
static volatile int done;

__attribute__ ((no_sanitize_thread)) static void
set_done (void)
{
  done = 1;
}

__attribute__ ((no_sanitize_thread)) static int
is_done (void)
{
  return done;
}

static gpointer
user (gpointer data)
{
  (void) data;
  g_mutex_lock (&mutex);
  value++;
  g_mutex_unlock (&mutex);
  g_rec_mutex_lock (&rec_mutex);
  value++;
  g_rec_mutex_unlock (&rec_mutex);
  g_rw_lock_writer_lock (&rw_lock);
  value++;
  g_rw_lock_writer_unlock (&rw_lock);
  set_done ();
  /* stay alive until the main thread has cleared the locks */
  g_usleep (200 * 1000);
  return NULL;
}

int
main (void)
{
  GThread *t;

  g_mutex_init (&mutex);
  g_rec_mutex_init (&rec_mutex);
  g_rw_lock_init (&rw_lock);
  t = g_thread_new ("user", user, NULL);
  while (!is_done ())
    g_usleep (1000);
  g_rw_lock_clear (&rw_lock);
  g_rec_mutex_clear (&rec_mutex);
  g_mutex_clear (&mutex);
  g_thread_join (t);
  return 0;
}
