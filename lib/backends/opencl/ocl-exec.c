/* OpenCL backend: a prepared list of nodes on one device.
 *
 * Everything is decided in nnp_ocl_exec_new(): per node the kernel state
 * (kernel objects, tables), the device location of every value:
 *   - constants: the device's weight cache (uploaded once per device);
 *   - intermediates: fixed offsets in one device arena planned by
 *     nnp_mem_plan() (liveness-based reuse); Reshape-like nodes between two
 *     intermediates share their input's block and are skipped;
 *   - boundary values: a staging block of the arena, used when the caller
 *     passes a host tensor (one copy per crossing), or the caller's tensor
 *     in this device's memory itself (no copy).
 * nnp_ocl_exec_run() points boundary locations at the run's tensors and
 * enqueues every node on the device's in-order queue.
 *
 * Nodes whose input data can be invalid at run time (Gather with computed
 * indices: the kernel's `checks`) get NNP_OCL_STATUS_WORDS words each in one
 * small status buffer; after the kernels one blocking read of that buffer
 * tells whether the run failed (then the node's `report` names the error).
 * Stages without such nodes pay nothing. */
#include "backends/opencl/opencl.h"
#include "backends/memplan.h"

#include <nnpipe/log.h>

#include <string.h>

typedef struct {
  const NnpNode *node;
  const NnpOclKernel *kernel;
  gpointer state;
  NnpOclMem *in, *out;
  gboolean skip;
  int status_slot; /* index in the status buffer, or -1 */
} Step;

struct _NnpOclExec {
  NnpOclDevice *dev; /* owned ref */
  NnpGraph *graph;   /* owned ref */
  int n_steps;
  Step *steps;
  int n_inputs, n_outputs;
  int *inputs, *outputs;
  int *forward_from;  /* per output: input index, or -1 */
  NnpOclMem *loc;     /* per value id: current location */
  NnpOclMem *staging; /* per value id: arena block for host boundary data */
  cl_mem arena;
  gsize arena_bytes;
  int n_status;          /* checked nodes */
  cl_mem status;         /* n_status * NNP_OCL_STATUS_WORDS cl_ints */
  cl_int *status_host;   /* read-back of status */
  gboolean status_dirty; /* status must be zeroed before the next run */
};

void
nnp_ocl_exec_free (NnpOclExec *exec)
{
  if (exec == NULL)
    return;
  if (exec->dev && exec->dev->queue)
    clFinish (exec->dev->queue);
  for (int s = 0; exec->steps && s < exec->n_steps; s++) {
    Step *step = &exec->steps[s];
    if (step->state && step->kernel && step->kernel->free_state)
      step->kernel->free_state (step->state);
    g_free (step->in);
    g_free (step->out);
  }
  g_free (exec->steps);
  g_free (exec->inputs);
  g_free (exec->outputs);
  g_free (exec->forward_from);
  g_free (exec->loc);
  g_free (exec->staging);
  if (exec->arena)
    clReleaseMemObject (exec->arena);
  if (exec->status)
    clReleaseMemObject (exec->status);
  g_free (exec->status_host);
  if (exec->graph)
    nnp_graph_unref (exec->graph);
  nnp_ocl_device_unref (exec->dev);
  g_free (exec);
}

static gsize
status_bytes (const NnpOclExec *exec)
{
  return (gsize) exec->n_status * NNP_OCL_STATUS_WORDS * sizeof (cl_int);
}

NnpOclExec *
nnp_ocl_exec_new (NnpOclDevice *dev, NnpGraph *graph, const int *nodes, int n_nodes,
                  const int *inputs, int n_inputs, const int *outputs, int n_outputs,
                  GError **error)
{
  NnpOclExec *exec;
  guint n_values = graph->values->len;
  g_autofree NnpValueRole *role = g_new (NnpValueRole, MAX (n_values, 1));
  NnpValuePlan plan = { 0 };
  gint64 t0 = g_get_monotonic_time ();

  g_return_val_if_fail (dev != NULL && graph != NULL, NULL);

  exec = g_new0 (NnpOclExec, 1);
  exec->dev = nnp_ocl_device_ref (dev);
  exec->graph = nnp_graph_ref (graph);
  exec->n_inputs = n_inputs;
  exec->n_outputs = n_outputs;
  exec->inputs = g_memdup2 (inputs, sizeof (int) * MAX (n_inputs, 1));
  exec->outputs = g_memdup2 (outputs, sizeof (int) * MAX (n_outputs, 1));
  exec->forward_from = g_new (int, MAX (n_outputs, 1));
  exec->loc = g_new0 (NnpOclMem, MAX (n_values, 1));
  exec->staging = g_new0 (NnpOclMem, MAX (n_values, 1));
  nnp_value_roles (graph, nodes, n_nodes, inputs, n_inputs, outputs, n_outputs, role,
                   exec->forward_from);

  /* steps: kernels and their state */
  exec->n_steps = n_nodes;
  exec->steps = g_new0 (Step, MAX (n_nodes, 1));
  for (int s = 0; s < n_nodes; s++) {
    Step *step = &exec->steps[s];
    const NnpNode *node = nnp_graph_node (graph, nodes[s]);
    g_autofree char *why = NULL;

    step->node = node;
    step->kernel = nnp_ocl_kernel (node->op);
    if (!nnp_ocl_supports_node (graph, node, &why)) {
      nnp_node_set_error (error, NNP_ERROR_UNSUPPORTED, node, "not supported on %s: %s", dev->name,
                          why);
      goto fail;
    }
    step->state = step->kernel->prepare (dev, graph, node, error);
    if (step->state == NULL)
      goto fail;
    step->status_slot = -1;
    if (step->kernel->checks && step->kernel->report && step->kernel->checks (graph, node))
      step->status_slot = exec->n_status++;
    step->in = g_new0 (NnpOclMem, MAX (node->n_inputs, 1));
    step->out = g_new0 (NnpOclMem, MAX (node->n_outputs, 1));
  }

  /* memory plan: intermediates by liveness, boundary staging for the whole run */
  nnp_value_plan_init (&plan, graph, nodes, n_nodes, role, TRUE, NULL);
  for (int s = 0; s < n_nodes; s++)
    exec->steps[s].skip = plan.skip[s];
  exec->arena_bytes = plan.arena_bytes;
  exec->arena = nnp_ocl_alloc (dev, MAX (exec->arena_bytes, 64), "the activation arena", error);
  if (exec->arena == NULL)
    goto fail;
  if (exec->n_status > 0) {
    exec->status = nnp_ocl_alloc (dev, status_bytes (exec), "the status words", error);
    if (exec->status == NULL)
      goto fail;
    exec->status_host = g_new0 (cl_int, exec->n_status * NNP_OCL_STATUS_WORDS);
    exec->status_dirty = TRUE;
  }

  for (guint id = 0; id < n_values; id++) {
    NnpValue *v = nnp_graph_value (graph, id);
    NnpValueRole r = role[id];
    if (r == NNP_ROLE_CONST) {
      exec->loc[id].mem = nnp_ocl_device_get_weight (dev, v->constant, error);
      if (exec->loc[id].mem == NULL)
        goto fail;
    } else if (r == NNP_ROLE_INTERNAL || r == NNP_ROLE_INPUT || r == NNP_ROLE_OUTPUT) {
      const NnpMemBlock *b = nnp_value_plan_block (&plan, id);
      exec->staging[id].mem = exec->arena;
      exec->staging[id].offset = b->offset;
      exec->loc[id] = exec->staging[id];
    }
  }

  NNP_DEBUG ("nnp-opencl",
             "%s: %d nodes, %d inputs, %d outputs, arena %" G_GSIZE_FORMAT
             " bytes, prepared in %.1f ms",
             dev->name, n_nodes, n_inputs, n_outputs, exec->arena_bytes,
             (g_get_monotonic_time () - t0) / 1000.0);
  nnp_value_plan_clear (&plan);
  return exec;

fail:
  nnp_value_plan_clear (&plan);
  nnp_ocl_exec_free (exec);
  return NULL;
}

gsize
nnp_ocl_exec_get_arena_bytes (NnpOclExec *exec)
{
  g_return_val_if_fail (exec != NULL, 0);
  return exec->arena_bytes;
}

/* Check the caller's tensor for boundary value `id` (host memory, or this
 * device's: a cl_mem of its context); with `locate`, point the value at the
 * device tensor, or at its staging block for host data. */
static gboolean
bind_boundary (NnpOclExec *exec, const char *what, int id, const NnpTensor *t, gboolean locate,
               GError **error)
{
  const NnpValue *v = nnp_graph_value (exec->graph, id);

  if (t == NULL) {
    g_set_error (error, NNP_ERROR, NNP_ERROR_INVALID, "%s '%s': no tensor given", what, v->name);
    return FALSE;
  }
  if (t->dtype != v->dtype || !nnp_shape_equal (&t->shape, &v->shape)
      || t->offset % MAX (nnp_dtype_size (v->dtype), 1) != 0) {
    g_autofree char *want = nnp_shape_to_string (&v->shape);
    g_autofree char *got = nnp_shape_to_string (&t->shape);
    g_set_error (error, NNP_ERROR, NNP_ERROR_INVALID,
                 "%s '%s': expected %s %s, got %s %s (offset %" G_GSIZE_FORMAT ")", what, v->name,
                 nnp_dtype_name (v->dtype), want, nnp_dtype_name (t->dtype), got, t->offset);
    return FALSE;
  }
  if (!locate)
    return TRUE;
  if (t->device) {
    exec->loc[id].mem = t->handle;
    exec->loc[id].offset = t->offset;
  } else {
    exec->loc[id] = exec->staging[id];
  }
  return TRUE;
}

/* Zero the status words (enqueued) when a run may have set them. */
static gboolean
status_reset (NnpOclExec *exec, GError **error)
{
  const cl_int zero = 0;
  cl_int err;

  if (exec->n_status == 0 || !exec->status_dirty)
    return TRUE;
  err = clEnqueueFillBuffer (exec->dev->queue, exec->status, &zero, sizeof zero, 0,
                             status_bytes (exec), 0, NULL, NULL);
  if (err != CL_SUCCESS) {
    nnp_ocl_set_error (error, exec->dev, err, "clearing the status words");
    return FALSE;
  }
  return TRUE;
}

/* After the kernels: one blocking read of the status words; the first
 * checked node (in run order) that flagged bad data fails the run. */
static gboolean
status_check (NnpOclExec *exec, GError **error)
{
  if (exec->n_status == 0)
    return TRUE;
  /* not an activation copy: not counted */
  if (!nnp_ocl_read (exec->dev, exec->status, 0, exec->status_host, status_bytes (exec), FALSE,
                     error)) {
    g_prefix_error (error, "reading the status words: ");
    return FALSE;
  }
  for (int s = 0; s < exec->n_steps; s++) {
    const Step *step = &exec->steps[s];
    const cl_int *w;

    if (step->status_slot < 0)
      continue;
    w = exec->status_host + step->status_slot * NNP_OCL_STATUS_WORDS;
    if (w[0] != 0) {
      step->kernel->report (exec->graph, step->node, w, error);
      return FALSE;
    }
  }
  exec->status_dirty = FALSE;
  return TRUE;
}

gboolean
nnp_ocl_exec_run (NnpOclExec *exec, NnpTensor *const *inputs, NnpTensor *const *outputs,
                  GError **error)
{
  NnpOclDevice *dev = exec->dev;
  NnpGraph *graph = exec->graph;
  cl_int err;

  /* boundary locations; host inputs go up once */
  for (int i = 0; i < exec->n_inputs; i++) {
    int id = exec->inputs[i];
    NnpTensor *t = inputs[i];

    if (!bind_boundary (exec, "input", id, t, TRUE, error))
      return FALSE;
    if (t->device == NULL
        && !nnp_ocl_write (dev, exec->loc[id].mem, exec->loc[id].offset, t->data, t->nbytes, TRUE,
                           error))
      return FALSE;
  }
  for (int i = 0; i < exec->n_outputs; i++)
    if (exec->forward_from[i] < 0
        && !bind_boundary (exec, "output", exec->outputs[i], outputs[i], TRUE, error))
      return FALSE;
  if (!status_reset (exec, error))
    return FALSE;
  /* from here until status_check() succeeds, kernels may set status words */
  exec->status_dirty = exec->n_status > 0;

  for (int s = 0; s < exec->n_steps; s++) {
    Step *step = &exec->steps[s];
    const NnpNode *node = step->node;
    NnpOclCall call;

    if (step->skip)
      continue;
    for (int k = 0; k < node->n_inputs; k++) {
      step->in[k].mem = NULL;
      step->in[k].offset = 0;
      if (node->inputs[k] >= 0)
        step->in[k] = exec->loc[node->inputs[k]];
    }
    for (int k = 0; k < node->n_outputs; k++) {
      step->out[k].mem = NULL;
      step->out[k].offset = 0;
      if (node->outputs[k] >= 0)
        step->out[k] = exec->loc[node->outputs[k]];
    }
    call.dev = dev;
    call.graph = graph;
    call.node = node;
    call.in = step->in;
    call.out = step->out;
    call.state = step->state;
    call.status.mem = step->status_slot >= 0 ? exec->status : NULL;
    call.status.offset = step->status_slot >= 0
                             ? (gsize) step->status_slot * NNP_OCL_STATUS_WORDS * sizeof (cl_int)
                             : 0;
    if (!step->kernel->run (&call, error)) {
      clFinish (dev->queue);
      return FALSE;
    }
  }
  if (!status_check (exec, error))
    return FALSE;

  /* outputs: host read-backs (forwarded values are the stage's to copy) */
  for (int i = 0; i < exec->n_outputs; i++) {
    int id = exec->outputs[i];
    const NnpValue *v = nnp_graph_value (graph, id);
    NnpTensor *t = outputs[i];

    if (exec->forward_from[i] >= 0 || t->device != NULL)
      continue;
    if (!nnp_ocl_read (dev, exec->loc[id].mem, exec->loc[id].offset, t->data, nnp_value_bytes (v),
                       TRUE, error)) {
      g_prefix_error (error, "output '%s': ", v->name);
      return FALSE;
    }
  }
  /* device outputs must be complete when we return (another queue or the
   * host may read them next); after blocking reads this costs nothing */
  err = clFinish (dev->queue);
  if (err != CL_SUCCESS) {
    nnp_ocl_set_error (error, dev, err, "running the stage");
    return FALSE;
  }
  return TRUE;
}
