/* libnnpipe: scratch-slot task runner of the CPU convolution kernels
 * (nnp_cpu_run_in_slots, declared in cpu-conv.h): min(threads,
 * nnp_sgemm_slots()) slots, each run by one thread at a time, claim the
 * tasks in order from a shared counter, so a slot is never shared and a
 * core that runs slower (the VM's other hardware thread busy) takes fewer
 * tasks instead of holding the others up at the end (tasks were dealt out
 * round-robin, half to each of two threads). */
#include "backends/cpu/cpu.h"
#include "backends/cpu/cpu-gemm.h"
#include "backends/cpu/cpu-conv.h"

typedef struct {
  SlotTaskFunc fn;
  gpointer data;
  guint8 *scratch;
  gsize slot_bytes;
  int64_t n_tasks;
  gssize next; /* the next task to claim (atomic) */
} SlotRun;

static void
slot_run_range (gpointer data, gsize begin, gsize end, int thread)
{
  SlotRun *r = data;

  for (gsize s = begin; s < end; s++)
    for (gssize t; (t = g_atomic_pointer_add (&r->next, 1)) < r->n_tasks;)
      r->fn (r->data, t, r->scratch ? r->scratch + s * r->slot_bytes : NULL);
}

void
nnp_cpu_run_in_slots (NnpThreadPool *pool, int64_t n_tasks, void *scratch, gsize slot_bytes,
                      SlotTaskFunc fn, gpointer data)
{
  SlotRun r = { fn, data, scratch, slot_bytes, n_tasks, 0 };
  int64_t n_slots =
      MIN ((int64_t) MIN (nnp_thread_pool_get_n_threads (pool), nnp_sgemm_slots ()), n_tasks);

  if (n_tasks <= 0)
    return;
  if (n_slots <= 1)
    slot_run_range (&r, 0, 1, 0);
  else
    nnp_parallel_for (pool, (gsize) n_slots, 1, slot_run_range, &r);
}
