/* OpenCL backend: a prepared list of nodes on one device.
 *
 * Everything is decided in nnp_ocl_exec_new(): per node the kernel state
 * (kernel objects, tables), the device location of every value:
 *   - constants: the device's weight cache (uploaded once per device);
 *   - intermediates: fixed offsets in one device arena planned by
 *     nnp_mem_plan() (liveness-based reuse); Reshape-like nodes between two
 *     intermediates share their input's block and are skipped;
 *   - boundary values: a staging block of the arena, used when the caller
 *     passes a host tensor (one copy per crossing), or the caller's device
 *     tensor itself (no copy).
 * nnp_ocl_exec_run() points boundary locations at the run's tensors and
 * enqueues every node on the device's in-order queue. */
#include "backends/opencl/opencl.h"
#include "exec/memplan.h"

#include <nnpipe/log.h>

#include <string.h>

typedef enum {
  ROLE_NONE = 0,
  ROLE_CONST,
  ROLE_INPUT,
  ROLE_OUTPUT,
  ROLE_INTERNAL,
} Role;

typedef struct {
  const NnpNode *node;
  const NnpOclKernel *kernel;
  gpointer state;
  NnpOclMem *in, *out;
  gboolean skip;
} Step;

struct _NnpOclExec {
  NnpOclDevice *dev;             /* owned ref */
  NnpGraph *graph;               /* owned ref */
  int n_steps;
  Step *steps;
  int n_inputs, n_outputs;
  int *inputs, *outputs;
  int *forward_from;             /* per output: input index, or -1 */
  Role *role;                    /* per value id */
  NnpOclMem *loc;                /* per value id: current location */
  NnpOclMem *staging;            /* per value id: arena block for host boundary data */
  cl_mem arena;
  gsize arena_bytes;
};

static gboolean
is_alias_op (const NnpNode *node)
{
  switch (node->op) {
    case NNP_OP_RESHAPE:
    case NNP_OP_FLATTEN:
    case NNP_OP_SQUEEZE:
    case NNP_OP_UNSQUEEZE:
    case NNP_OP_IDENTITY:
      return node->n_outputs == 1;
    case NNP_OP_DROPOUT:
      return node->n_outputs == 1 || node->outputs[1] < 0;
    default:
      return FALSE;
  }
}

static gsize
value_bytes (const NnpValue *v)
{
  return (gsize) nnp_shape_numel (&v->shape) * nnp_dtype_size (v->dtype);
}

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
  g_free (exec->role);
  g_free (exec->loc);
  g_free (exec->staging);
  if (exec->arena)
    clReleaseMemObject (exec->arena);
  if (exec->graph)
    nnp_graph_unref (exec->graph);
  nnp_ocl_device_unref (exec->dev);
  g_free (exec);
}

NnpOclExec *
nnp_ocl_exec_new (NnpOclDevice *dev, NnpGraph *graph, const int *nodes, int n_nodes,
                  const int *inputs, int n_inputs, const int *outputs, int n_outputs,
                  GError **error)
{
  NnpOclExec *exec;
  guint n_values = graph->values->len;
  g_autofree int *buffer = NULL, *first = NULL, *last = NULL, *block_of = NULL;
  g_autofree NnpMemBlock *blocks = NULL;
  int n_blocks = 0;
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
  exec->role = g_new0 (Role, MAX (n_values, 1));
  exec->loc = g_new0 (NnpOclMem, MAX (n_values, 1));
  exec->staging = g_new0 (NnpOclMem, MAX (n_values, 1));

  /* roles */
  for (int i = 0; i < n_inputs; i++)
    exec->role[inputs[i]] = ROLE_INPUT;
  for (int i = 0; i < n_outputs; i++) {
    exec->forward_from[i] = -1;
    if (exec->role[outputs[i]] == ROLE_INPUT) {
      for (int j = 0; j < n_inputs; j++)
        if (inputs[j] == outputs[i])
          exec->forward_from[i] = j;
      continue;
    }
    exec->role[outputs[i]] = ROLE_OUTPUT;
  }
  for (int s = 0; s < n_nodes; s++) {
    const NnpNode *node = nnp_graph_node (graph, nodes[s]);
    for (int pass = 0; pass < 2; pass++) {
      int n = pass ? node->n_outputs : node->n_inputs;
      const int *ids = pass ? node->outputs : node->inputs;
      for (int k = 0; k < n; k++) {
        NnpValue *v = nnp_graph_value (graph, ids[k]);
        if (v == NULL || exec->role[v->id] != ROLE_NONE)
          continue;
        exec->role[v->id] = v->constant ? ROLE_CONST : ROLE_INTERNAL;
      }
    }
  }

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
      nnp_node_set_error (error, NNP_ERROR_UNSUPPORTED, node, "not supported on %s: %s",
                          dev->name, why);
      goto fail;
    }
    step->state = step->kernel->prepare (dev, graph, node, error);
    if (step->state == NULL)
      goto fail;
    step->in = g_new0 (NnpOclMem, MAX (node->n_inputs, 1));
    step->out = g_new0 (NnpOclMem, MAX (node->n_outputs, 1));
  }

  /* memory plan: intermediates by liveness, boundary staging for the whole run */
  buffer = g_new (int, MAX (n_values, 1));
  first = g_new (int, MAX (n_values, 1));
  last = g_new (int, MAX (n_values, 1));
  for (guint id = 0; id < n_values; id++) {
    buffer[id] = id;
    first[id] = -1;
    last[id] = -1;
    if (exec->role[id] == ROLE_INPUT || exec->role[id] == ROLE_OUTPUT) {
      first[id] = 0;
      last[id] = MAX (n_nodes - 1, 0);
    }
  }
  for (int s = 0; s < n_nodes; s++) {
    Step *step = &exec->steps[s];
    const NnpNode *node = step->node;

    if (is_alias_op (node) && node->n_inputs >= 1 && node->inputs[0] >= 0
        && node->outputs[0] >= 0) {
      int a = node->inputs[0], b = node->outputs[0];
      if (exec->role[a] == ROLE_INTERNAL && exec->role[b] == ROLE_INTERNAL
          && value_bytes (nnp_graph_value (graph, a)) == value_bytes (nnp_graph_value (graph, b))) {
        buffer[b] = buffer[a];
        step->skip = TRUE;
      }
    }
    for (int k = 0; k < node->n_outputs; k++) {
      int id = node->outputs[k];
      if (id < 0 || exec->role[id] != ROLE_INTERNAL)
        continue;
      if (first[buffer[id]] < 0)
        first[buffer[id]] = s;
      last[buffer[id]] = MAX (last[buffer[id]], s);
    }
    for (int k = 0; k < node->n_inputs; k++) {
      int id = node->inputs[k];
      if (id < 0 || exec->role[id] != ROLE_INTERNAL)
        continue;
      last[buffer[id]] = MAX (last[buffer[id]], s);
    }
  }
  blocks = g_new0 (NnpMemBlock, MAX (n_values, 1));
  block_of = g_new (int, MAX (n_values, 1));
  for (guint id = 0; id < n_values; id++) {
    Role r = exec->role[id];
    block_of[id] = -1;
    if (!(r == ROLE_INTERNAL || r == ROLE_INPUT || r == ROLE_OUTPUT) || buffer[id] != (int) id)
      continue;
    block_of[id] = n_blocks;
    blocks[n_blocks].size = MAX (value_bytes (nnp_graph_value (graph, id)), 1);
    blocks[n_blocks].first = MAX (first[id], 0);
    blocks[n_blocks].last = MAX (last[id], blocks[n_blocks].first);
    n_blocks++;
  }
  exec->arena_bytes = nnp_mem_plan (blocks, n_blocks);
  exec->arena = nnp_ocl_alloc (dev, MAX (exec->arena_bytes, 64), "the activation arena", error);
  if (exec->arena == NULL)
    goto fail;

  for (guint id = 0; id < n_values; id++) {
    NnpValue *v = nnp_graph_value (graph, id);
    Role r = exec->role[id];
    if (r == ROLE_CONST) {
      exec->loc[id].mem = nnp_ocl_device_get_weight (dev, v->constant, error);
      if (exec->loc[id].mem == NULL)
        goto fail;
    } else if (r == ROLE_INTERNAL || r == ROLE_INPUT || r == ROLE_OUTPUT) {
      const NnpMemBlock *b = &blocks[block_of[buffer[id]]];
      exec->staging[id].mem = exec->arena;
      exec->staging[id].offset = b->offset;
      exec->loc[id] = exec->staging[id];
    }
  }

  NNP_DEBUG ("nnp-opencl", "%s: %d nodes, %d inputs, %d outputs, arena %" G_GSIZE_FORMAT
             " bytes, prepared in %.1f ms", dev->name, n_nodes, n_inputs, n_outputs,
             exec->arena_bytes, (g_get_monotonic_time () - t0) / 1000.0);
  return exec;

fail:
  nnp_ocl_exec_free (exec);
  return NULL;
}

gsize
nnp_ocl_exec_get_arena_bytes (NnpOclExec *exec)
{
  g_return_val_if_fail (exec != NULL, 0);
  return exec->arena_bytes;
}

static gboolean
check_device_tensor (NnpOclExec *exec, const char *what, const NnpValue *v,
                     const NnpDeviceTensor *t, GError **error)
{
  if (nnp_device_get_ocl (t->device) != exec->dev) {
    g_set_error (error, NNP_ERROR, NNP_ERROR_DEVICE, "%s '%s': device tensor is on %s, the "
                 "stage on %s", what, v->name, nnp_device_get_name (t->device), exec->dev->name);
    return FALSE;
  }
  if (t->dtype != v->dtype || !nnp_shape_equal (&t->shape, &v->shape)
      || t->offset % MAX (nnp_dtype_size (v->dtype), 1) != 0) {
    g_autofree char *want = nnp_shape_to_string (&v->shape);
    g_autofree char *got = nnp_shape_to_string (&t->shape);
    g_set_error (error, NNP_ERROR, NNP_ERROR_INVALID, "%s '%s': expected %s %s, got %s %s "
                 "(offset %" G_GSIZE_FORMAT ")", what, v->name, nnp_dtype_name (v->dtype), want,
                 nnp_dtype_name (t->dtype), got, t->offset);
    return FALSE;
  }
  return TRUE;
}

gboolean
nnp_ocl_exec_run (NnpOclExec *exec, NnpTensor *const *host_in, NnpDeviceTensor *const *dev_in,
                  NnpTensor *const *host_out, NnpDeviceTensor *const *dev_out, GError **error)
{
  NnpOclDevice *dev = exec->dev;
  NnpGraph *graph = exec->graph;
  cl_int err;

  /* boundary locations; host inputs go up once */
  for (int i = 0; i < exec->n_inputs; i++) {
    int id = exec->inputs[i];
    const NnpValue *v = nnp_graph_value (graph, id);
    NnpDeviceTensor *d = dev_in ? dev_in[i] : NULL;
    NnpTensor *h = host_in ? host_in[i] : NULL;

    if (d) {
      if (!check_device_tensor (exec, "input", v, d, error))
        return FALSE;
      exec->loc[id].mem = d->handle;
      exec->loc[id].offset = d->offset;
    } else if (h) {
      exec->loc[id] = exec->staging[id];
      if (!nnp_ocl_write (dev, exec->loc[id].mem, exec->loc[id].offset, h->data, h->nbytes, TRUE,
                          error))
        return FALSE;
    } else {
      g_set_error (error, NNP_ERROR, NNP_ERROR_INVALID, "input '%s': no tensor given", v->name);
      return FALSE;
    }
  }
  for (int i = 0; i < exec->n_outputs; i++) {
    int id = exec->outputs[i];
    const NnpValue *v = nnp_graph_value (graph, id);
    NnpDeviceTensor *d = dev_out ? dev_out[i] : NULL;
    NnpTensor *h = host_out ? host_out[i] : NULL;

    if (d == NULL && h == NULL) {
      g_set_error (error, NNP_ERROR, NNP_ERROR_INVALID, "output '%s': no tensor given", v->name);
      return FALSE;
    }
    if (d && !check_device_tensor (exec, "output", v, d, error))
      return FALSE;
    if (exec->forward_from[i] >= 0)
      continue;
    if (d) {
      exec->loc[id].mem = d->handle;
      exec->loc[id].offset = d->offset;
    } else {
      exec->loc[id] = exec->staging[id];
    }
  }

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
    if (!step->kernel->run (&call, error)) {
      clFinish (dev->queue);
      return FALSE;
    }
  }

  /* outputs: forwarded values, host read-backs */
  for (int i = 0; i < exec->n_outputs; i++) {
    int id = exec->outputs[i];
    const NnpValue *v = nnp_graph_value (graph, id);
    NnpDeviceTensor *d = dev_out ? dev_out[i] : NULL;
    NnpTensor *h = host_out ? host_out[i] : NULL;
    int f = exec->forward_from[i];
    gsize bytes = value_bytes (v);

    if (f >= 0) {
      NnpTensor *hin = host_in ? host_in[f] : NULL;
      NnpDeviceTensor *din = dev_in ? dev_in[f] : NULL;
      if (d == NULL && din == NULL) {
        if (bytes > 0)
          memcpy (h->data, hin->data, bytes);
      } else if (d == NULL) {
        if (!nnp_ocl_read (dev, din->handle, din->offset, h->data, bytes, TRUE, error))
          return FALSE;
      } else if (din == NULL) {
        if (!nnp_ocl_write (dev, d->handle, d->offset, hin->data, bytes, TRUE, error))
          return FALSE;
      } else if (bytes > 0 && (din->handle != d->handle || din->offset != d->offset)) {
        err = clEnqueueCopyBuffer (dev->queue, din->handle, d->handle, din->offset, d->offset,
                                   bytes, 0, NULL, NULL);
        if (err != CL_SUCCESS) {
          nnp_ocl_set_error (error, dev, err, "forwarding '%s'", v->name);
          return FALSE;
        }
      }
      continue;
    }
    if (d == NULL
        && !nnp_ocl_read (dev, exec->loc[id].mem, exec->loc[id].offset, h->data, bytes, TRUE,
                          error)) {
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
