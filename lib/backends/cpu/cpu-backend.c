/* CPU backend: its table (lib/backend.h).  The host backend: one device
 * ("cpu", "cpu:THREADS" gives the stage's threads), host tensors only, the
 * executor in cpu-exec.c, and constant folding (run_node) for
 * lib/specialize/specialize.c. */
#include "backends/cpu/cpu-exec.h"
#include "ops/ops.h"

#include <stdlib.h>

/* analytical cost before profiling, per thread */
#define CPU_GFLOPS_PER_THREAD 40.0
#define CPU_BYTES_PER_MS 2.0e7 /* 20 GB/s of streamed tensor bytes */
#define CPU_NODE_OVERHEAD_MS 0.002

static int cpu_context; /* the one device's context: its address */

static gpointer
cpu_open (const char *spec, char **name_out, GError **error)
{
  (void) spec;
  (void) error;
  *name_out = g_strdup ("cpu");
  return &cpu_context;
}

static void
cpu_close (gpointer ctx)
{
  (void) ctx;
}

static gboolean
cpu_supports_node (gpointer ctx, const NnpGraph *graph, const NnpNode *node, char **why)
{
  const NnpCpuKernel *k = nnp_cpu_kernel (node->op);

  (void) ctx;
  (void) graph;
  if (k == NULL || k->run == NULL) {
    if (why)
      *why = g_strdup_printf ("%s: no CPU kernel", node->op_type);
    return FALSE;
  }
  return TRUE;
}

static gpointer
cpu_stage_new (gpointer ctx, const NnpBackendStageInfo *info, GError **error)
{
  (void) ctx;
  return nnp_cpu_exec_new (info, error);
}

static gboolean
cpu_stage_run (gpointer stage, NnpTensor *const *inputs, NnpTensor *const *outputs, GError **error)
{
  return nnp_cpu_exec_run (stage, inputs, outputs, error);
}

static gsize
cpu_stage_arena_bytes (gpointer stage)
{
  return nnp_cpu_exec_get_arena_bytes (stage);
}

static void
cpu_stage_free (gpointer stage)
{
  nnp_cpu_exec_free (stage);
}

static double
cpu_estimate_node_ms (const NnpGraph *graph, const NnpNode *node, int threads)
{
  double flops = nnp_node_flops (graph, node), bytes = nnp_node_io_bytes (graph, node);
  double t = MAX (threads, 1);
  double eff = t > 1 ? 0.9 * t : 1.0;

  return CPU_NODE_OVERHEAD_MS + flops / (CPU_GFLOPS_PER_THREAD * eff * 1e6)
         + bytes / (CPU_BYTES_PER_MS * MIN (eff, 2.0));
}

/* One node on host tensors, single thread, its state and scratch made and
 * freed here (constant folding: run once). */
static gboolean
cpu_run_node (const NnpGraph *graph, const NnpNode *node, NnpTensor *const *inputs,
              NnpTensor *const *outputs, GError **error)
{
  const NnpCpuKernel *kernel = nnp_cpu_kernel (node->op);
  gpointer state = NULL, scratch = NULL;
  gsize ws = 0;
  gboolean ok = FALSE;
  NnpCpuCall call = { 0 };

  if (kernel == NULL || kernel->run == NULL) {
    nnp_node_set_error (error, NNP_ERROR_UNSUPPORTED, node, "no CPU kernel");
    return FALSE;
  }
  if (kernel->prepare) {
    state = kernel->prepare (graph, node, error);
    if (state == NULL)
      return FALSE;
  }
  if (kernel->workspace)
    ws = kernel->workspace (graph, node);
  if (ws > 0 && posix_memalign (&scratch, 64, (ws + 63) / 64 * 64) != 0) {
    nnp_node_set_error (error, NNP_ERROR_FAILED, node,
                        "out of memory (%" G_GSIZE_FORMAT " bytes of scratch)", ws);
    scratch = NULL;
    goto done;
  }
  call.graph = graph;
  call.node = node;
  call.inputs = inputs;
  call.outputs = outputs;
  call.pool = NULL;
  call.scratch = scratch;
  call.state = state;
  ok = kernel->run (&call, error);

done:
  if (state && kernel->free_state)
    kernel->free_state (state);
  free (scratch);
  return ok;
}

const NnpBackend nnp_backend_cpu = {
  .name = "cpu",
  .spec_help = "cpu, cpu:THREADS (1..1024)",
  .host = TRUE,
  .spec_threads = TRUE,
  .open = cpu_open,
  .close = cpu_close,
  .supports_node = cpu_supports_node,
  .stage_new = cpu_stage_new,
  .stage_run = cpu_stage_run,
  .stage_arena_bytes = cpu_stage_arena_bytes,
  .stage_free = cpu_stage_free,
  .estimate_node_ms = cpu_estimate_node_ms,
  .run_node = cpu_run_node,
};
