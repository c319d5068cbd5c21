/* libnnp-tsan-glib-locks.so: GLib's GMutex, GCond, GRecMutex and GRWLock on
 * pthreads, for the ThreadSanitizer job (tools/test.sh, LD_PRELOADed).
 *
 * GLib implements these locks with futexes, which ThreadSanitizer cannot see:
 * every access ordered only by a GLib lock would be reported as a race.
 * Preloaded, these definitions win over libglib's for every caller outside
 * libglib itself (our code, GStreamer: GST_OBJECT_LOCK, pad stream locks,
 * GstTask, GstBus...); TSan intercepts the pthread calls underneath.  Calls
 * from inside libglib (bound at link time with -Bsymbolic-functions) keep
 * GLib's own futex locks, on locks only GLib touches.
 *
 * Each GLib lock is a pointer-sized union: its first pointer holds a
 * pthread object allocated on first use (a zero-filled static lock works, as
 * in GLib), installed with a compare-and-swap.  _clear frees it. */
#define _GNU_SOURCE
#include <glib.h>

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

/* GLib guards its table of error domains (gerror.c) with a GRWLock that only
 * libglib takes, so it keeps GLib's own implementation: a pthread_rwlock_t
 * allocated on first use and installed with an atomic compare-and-swap in
 * uninstrumented code, which TSan cannot see.  When the first GErrors of a
 * process are made in two threads, TSan reports the second thread's
 * pthread_rwlock_rdlock() against the first one's malloc() of the lock
 * (plugin-server-replay, once in 6 whole runs of tools/test.sh: the server's
 * reader and writer threads).  Make that allocation here, before any thread
 * exists (creating a thread orders it for TSan); test tsan-glib-errors, and
 * tsan-glib-errors-unseen with NNP_TSAN_NO_WARMUP=1 to show the report. */
static int clear_order = 1; /* see "clearing" below; set before any thread */

__attribute__ ((constructor)) static void
warm_up_glib_internal_locks (void)
{
  clear_order = getenv ("NNP_TSAN_NO_CLEAR_ORDER") == NULL;
  if (getenv ("NNP_TSAN_NO_WARMUP") == NULL)
    g_error_free (g_error_new_literal (g_quark_from_static_string ("nnp-tsan-warm-up"), 0, ""));
}

static void
die (const char *what, int err)
{
  g_printerr ("glib-locks (tsan interposer): %s failed: %d\n", what, err);
  abort ();
}

/* The pthread object behind `slot`, created by `make` on first use. */
static void *
get_impl (gpointer *slot, void *(*make) (void), void (*destroy) (void *))
{
  void *impl = __atomic_load_n (slot, __ATOMIC_ACQUIRE);

  if (impl == NULL) {
    void *fresh = make ();
    void *expected = NULL;
    if (__atomic_compare_exchange_n (slot, &expected, fresh, FALSE, __ATOMIC_ACQ_REL,
                                     __ATOMIC_ACQUIRE))
      impl = fresh;
    else {
      destroy (fresh);
      impl = expected;
    }
  }
  return impl;
}

static void
free_impl (gpointer *slot, void (*destroy) (void *))
{
  void *impl = __atomic_exchange_n (slot, NULL, __ATOMIC_ACQ_REL);
  if (impl != NULL)
    destroy (impl);
}

/* ------------------------------------------------------------ clearing */

/* A lock is cleared after its last unlock, by GLib's contract, and callers
 * order the two with a reference count: GstElement's state lock (a
 * GRecMutex) is taken by the thread that sets the state and cleared in
 * gst_element_finalize() by whichever thread drops the last reference, a
 * streaming thread of its task pool, through GObject's atomic refcount,
 * which TSan cannot see (libgobject is not instrumented).  So every unlock
 * releases the lock and every clear acquires it, as for GCond below; TSan
 * still sees every access to what a lock guards through the lock itself.
 * Without this (NNP_TSAN_NO_CLEAR_ORDER=1, test tsan-glib-clear-unseen) TSan
 * reports the clear's pthread_mutex_destroy() against the other thread's
 * last unlock (plugin-streams, once in 3 whole runs of tools/test.sh). */
void __tsan_acquire (void *addr);
void __tsan_release (void *addr);

static void
unlocked (void *lock)
{
  if (clear_order)
    __tsan_release (lock);
}

static void
clearing (void *lock)
{
  if (clear_order)
    __tsan_acquire (lock);
}

/* ------------------------------------------------------------ mutexes */

static void *
make_mutex_kind (int kind)
{
  pthread_mutex_t *m = malloc (sizeof *m);
  pthread_mutexattr_t attr;
  int err;

  if (m == NULL)
    die ("malloc", ENOMEM);
  pthread_mutexattr_init (&attr);
  pthread_mutexattr_settype (&attr, kind);
  err = pthread_mutex_init (m, &attr);
  pthread_mutexattr_destroy (&attr);
  if (err != 0)
    die ("pthread_mutex_init", err);
  return m;
}

static void *
make_mutex (void)
{
  return make_mutex_kind (PTHREAD_MUTEX_NORMAL);
}

static void *
make_rec_mutex (void)
{
  return make_mutex_kind (PTHREAD_MUTEX_RECURSIVE);
}

static void
destroy_mutex (void *m)
{
  pthread_mutex_destroy (m);
  free (m);
}

#define MUTEX_API(Type, prefix, make) \
  void prefix##_init (Type *l) \
  { \
    l->p = NULL; \
  } \
  void prefix##_clear (Type *l) \
  { \
    clearing (l); \
    free_impl (&l->p, destroy_mutex); \
  } \
  void prefix##_lock (Type *l) \
  { \
    int err = pthread_mutex_lock (get_impl (&l->p, make, destroy_mutex)); \
    if (err != 0) \
      die (#prefix "_lock", err); \
  } \
  void prefix##_unlock (Type *l) \
  { \
    int err = pthread_mutex_unlock (get_impl (&l->p, make, destroy_mutex)); \
    if (err != 0) \
      die (#prefix "_unlock", err); \
    unlocked (l); \
  } \
  gboolean prefix##_trylock (Type *l) \
  { \
    return pthread_mutex_trylock (get_impl (&l->p, make, destroy_mutex)) == 0; \
  }

MUTEX_API (GMutex, g_mutex, make_mutex)
MUTEX_API (GRecMutex, g_rec_mutex, make_rec_mutex)

/* ------------------------------------------------------------ GCond */

static void *
make_cond (void)
{
  pthread_cond_t *c = malloc (sizeof *c);
  pthread_condattr_t attr;
  int err;

  if (c == NULL)
    die ("malloc", ENOMEM);
  pthread_condattr_init (&attr);
  pthread_condattr_setclock (&attr, CLOCK_MONOTONIC); /* g_get_monotonic_time () */
  err = pthread_cond_init (c, &attr);
  pthread_condattr_destroy (&attr);
  if (err != 0)
    die ("pthread_cond_init", err);
  return c;
}

static void
destroy_cond (void *c)
{
  pthread_cond_destroy (c);
  free (c);
}

/* g_cond_clear() comes after the last signal by contract, and callers
 * order the two with a reference count: GstElement's state GCond is
 * signalled by the thread that changes the state and cleared by whichever
 * thread drops the last reference, through GObject's atomic refcount, which
 * TSan cannot see (libgobject is not instrumented).  So every signal
 * releases the cond and the clear acquires it; TSan still sees every other
 * access to what the cond guards through the mutex. */

void
g_cond_init (GCond *cond)
{
  cond->p = NULL;
}

void
g_cond_clear (GCond *cond)
{
  __tsan_acquire (cond);
  free_impl (&cond->p, destroy_cond);
}

void
g_cond_wait (GCond *cond, GMutex *mutex)
{
  int err = pthread_cond_wait (get_impl (&cond->p, make_cond, destroy_cond),
                               get_impl (&mutex->p, make_mutex, destroy_mutex));
  if (err != 0)
    die ("g_cond_wait", err);
}

gboolean
g_cond_wait_until (GCond *cond, GMutex *mutex, gint64 end_time)
{
  struct timespec ts;
  int err;

  ts.tv_sec = end_time / G_USEC_PER_SEC;
  ts.tv_nsec = (end_time % G_USEC_PER_SEC) * 1000;
  err = pthread_cond_timedwait (get_impl (&cond->p, make_cond, destroy_cond),
                                get_impl (&mutex->p, make_mutex, destroy_mutex), &ts);
  if (err != 0 && err != ETIMEDOUT)
    die ("g_cond_wait_until", err);
  return err == 0;
}

void
g_cond_signal (GCond *cond)
{
  pthread_cond_signal (get_impl (&cond->p, make_cond, destroy_cond));
  __tsan_release (cond);
}

void
g_cond_broadcast (GCond *cond)
{
  pthread_cond_broadcast (get_impl (&cond->p, make_cond, destroy_cond));
  __tsan_release (cond);
}

/* ------------------------------------------------------------ GRWLock */

static void *
make_rwlock (void)
{
  pthread_rwlock_t *l = malloc (sizeof *l);
  int err;

  if (l == NULL)
    die ("malloc", ENOMEM);
  err = pthread_rwlock_init (l, NULL);
  if (err != 0)
    die ("pthread_rwlock_init", err);
  return l;
}

static void
destroy_rwlock (void *l)
{
  pthread_rwlock_destroy (l);
  free (l);
}

#define RW(l) ((pthread_rwlock_t *) get_impl (&(l)->p, make_rwlock, destroy_rwlock))

void
g_rw_lock_init (GRWLock *l)
{
  l->p = NULL;
}
void
g_rw_lock_clear (GRWLock *l)
{
  clearing (l);
  free_impl (&l->p, destroy_rwlock);
}
void
g_rw_lock_writer_lock (GRWLock *l)
{
  pthread_rwlock_wrlock (RW (l));
}
gboolean
g_rw_lock_writer_trylock (GRWLock *l)
{
  return pthread_rwlock_trywrlock (RW (l)) == 0;
}
void
g_rw_lock_writer_unlock (GRWLock *l)
{
  pthread_rwlock_unlock (RW (l));
  unlocked (l);
}
void
g_rw_lock_reader_lock (GRWLock *l)
{
  pthread_rwlock_rdlock (RW (l));
}
gboolean
g_rw_lock_reader_trylock (GRWLock *l)
{
  return pthread_rwlock_tryrdlock (RW (l)) == 0;
}
void
g_rw_lock_reader_unlock (GRWLock *l)
{
  pthread_rwlock_unlock (RW (l));
  unlocked (l);
}

/* ------------------------------------------------------------ GAsyncQueue */

/* A GAsyncQueue hands items from one thread to another under libglib's own
 * (invisible) lock, e.g. GstHarness's output buffers: a pushed buffer's
 * bytes, written by the streaming thread, are read by the thread that pops
 * it.  These wrappers tell TSan of that edge (a release on the queue before
 * the push, an acquire on it after a pop that got an item) and call GLib's
 * functions for the work.  Calls from inside libglib (GThreadPool) keep
 * GLib's functions (tsan.supp: g_queue_pop_tail). */
#include <dlfcn.h>

static void *
real (const char *name)
{
  void *f = dlsym (RTLD_NEXT, name);

  if (f == NULL) {
    g_printerr ("glib-locks (tsan interposer): no %s in libglib\n", name);
    abort ();
  }
  return f;
}

#define REAL(name, type) ((type) real (#name))

void
g_async_queue_push (GAsyncQueue *queue, gpointer data)
{
  __tsan_release (queue);
  REAL (g_async_queue_push, void (*) (GAsyncQueue *, gpointer)) (queue, data);
}

void
g_async_queue_push_unlocked (GAsyncQueue *queue, gpointer data)
{
  __tsan_release (queue);
  REAL (g_async_queue_push_unlocked, void (*) (GAsyncQueue *, gpointer)) (queue, data);
}

gpointer
g_async_queue_pop (GAsyncQueue *queue)
{
  gpointer item = REAL (g_async_queue_pop, gpointer (*) (GAsyncQueue *)) (queue);

  __tsan_acquire (queue);
  return item;
}

gpointer
g_async_queue_try_pop (GAsyncQueue *queue)
{
  gpointer item = REAL (g_async_queue_try_pop, gpointer (*) (GAsyncQueue *)) (queue);

  if (item != NULL)
    __tsan_acquire (queue);
  return item;
}

gpointer
g_async_queue_timeout_pop (GAsyncQueue *queue, guint64 timeout)
{
  gpointer item =
      REAL (g_async_queue_timeout_pop, gpointer (*) (GAsyncQueue *, guint64)) (queue, timeout);

  if (item != NULL)
    __tsan_acquire (queue);
  return item;
}

/* ------------------------------------------------------------ GstMiniObject */

/* A GstBuffer is shared by reference: a streaming thread reads an input
 * tensor and drops its reference, another thread drops the last one and
 * the memory is recycled (a buffer pool) or freed.  The reference count is
 * an atomic inside uninstrumented libgstreamer, so TSan misses the edge
 * from the first thread's reads to whatever the last one does next.  Every
 * unref from outside libgstreamer releases the object here; whoever acts on
 * the last drop acquires it (GstNnTensorPool's release_buffer, under TSan).
 * gst_mini_object_unref is only resolved if a caller has libgstreamer. */
void gst_mini_object_unref (void *mini_object);

void
gst_mini_object_unref (void *mini_object)
{
  __tsan_release (mini_object);
  REAL (gst_mini_object_unref, void (*) (void *)) (mini_object);
}
