/* tsan-glib-errors: two threads make the first GErrors of the process, one
 * 200 ms after the other, with nothing between them that ThreadSanitizer
 * sees.  GLib guards its table of error domains with a GRWLock of its own
 * (gerror.c), taken by g_error_new*() and g_error_free() from inside
 * libglib, past the interposer (glib-locks.c): its pthread_rwlock_t is
 * allocated on first use and installed with an atomic compare-and-swap in
 * uninstrumented code, so TSan sees the second thread's pthread_rwlock_rdlock()
 * on memory the first thread's malloc() wrote, unordered: a report (seen in
 * plugin-server-replay, where the server's reader and writer threads made
 * the process's first GErrors).  With the interposer preloaded its
 * constructor makes that allocation before any thread exists (creating a
 * thread orders it): no report.  tsan-glib-errors-unseen runs this with
 * that warm-up turned off (NNP_TSAN_NO_WARMUP=1) and must fail. */
#include <glib.h>

static gpointer
make_error (gpointer data)
{
  if (GPOINTER_TO_INT (data))
    g_usleep (200 * 1000);
  g_error_free (g_error_new_literal (g_quark_from_static_string ("tsan-glib-errors"), 1, "x"));
  return NULL;
}

int
main (void)
{
  GThread *a = g_thread_new ("first", make_error, GINT_TO_POINTER (0));
  GThread *b = g_thread_new ("second", make_error, GINT_TO_POINTER (1));

  g_thread_join (a);
  g_thread_join (b);
  return 0;
}
