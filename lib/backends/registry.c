/* libnnpipe: the backend registry (lib/backend.h).  One line per backend;
 * the only file outside lib/backends/<name>/ that names one. */
#include "backend.h"

#include <string.h>

extern const NnpBackend nnp_backend_cpu;
#ifdef NNP_HAVE_OPENCL
extern const NnpBackend nnp_backend_opencl;
#endif

static const NnpBackend *const builtin[] = {
  &nnp_backend_cpu, /* lib/backends/cpu/: the host backend */
#ifdef NNP_HAVE_OPENCL
  &nnp_backend_opencl, /* lib/backends/opencl/ */
#endif
};

#define MAX_BACKENDS 16

static GMutex lock;
static const NnpBackend *added[MAX_BACKENDS];
static gint n_added; /* read without the lock: entries are set before it grows */

int
nnp_backend_count (void)
{
  return (int) G_N_ELEMENTS (builtin) + g_atomic_int_get (&n_added);
}

const NnpBackend *
nnp_backend_get (int i)
{
  g_return_val_if_fail (i >= 0 && i < nnp_backend_count (), NULL);
  if (i < (int) G_N_ELEMENTS (builtin))
    return builtin[i];
  return added[i - (int) G_N_ELEMENTS (builtin)];
}

const NnpBackend *
nnp_backend_find (const char *name)
{
  int n = nnp_backend_count ();

  for (int i = 0; name && i < n; i++)
    if (g_ascii_strcasecmp (nnp_backend_get (i)->name, name) == 0)
      return nnp_backend_get (i);
  return NULL;
}

const NnpBackend *
nnp_backend_host (void)
{
  int n = nnp_backend_count ();

  for (int i = 0; i < n; i++)
    if (nnp_backend_get (i)->host)
      return nnp_backend_get (i);
  return NULL; /* not reached: the CPU backend is always built */
}

gboolean
nnp_backend_register (const NnpBackend *backend)
{
  gboolean ok;

  g_return_val_if_fail (backend != NULL && backend->name != NULL, FALSE);
  if (backend->open == NULL || backend->close == NULL || backend->supports_node == NULL
      || backend->stage_new == NULL || backend->stage_run == NULL || backend->stage_free == NULL
      || (!backend->host
          && (backend->buffer_alloc == NULL || backend->buffer_unref == NULL
              || backend->buffer_ref == NULL || backend->buffer_write == NULL
              || backend->buffer_read == NULL))
      || (backend->host && backend->run_node == NULL) || strchr (backend->name, ':'))
    return FALSE;
  g_mutex_lock (&lock);
  ok = nnp_backend_find (backend->name) == NULL && n_added < MAX_BACKENDS;
  if (ok) {
    added[n_added] = backend;
    g_atomic_int_inc (&n_added);
  }
  g_mutex_unlock (&lock);
  return ok;
}
