/* libnnpipe: a stage = nodes of a specialised graph bound to one device (see
 * include/nnpipe/stage.h), the backend-neutral part.
 *
 * nnp_stage_new() validates the node list and decides the boundary (derived
 * or checked against the caller's lists), then hands the nodes to the
 * device's backend (lib/backend.h), which prepares them once (CPU:
 * lib/backends/cpu/cpu-exec.c, OpenCL: lib/backends/opencl/ocl-exec.c).
 * nnp_stage_run() checks the caller's tensors, stages those that live in
 * another device's memory through the host (one counted copy each), calls
 * the backend's run and copies forwarded values. */
#include <nnpipe/stage.h>
#include <nnpipe/log.h>
#include <nnpipe/device.h>

#include "backend.h"
#include "backends/memplan.h"
#include "exec/stage-private.h"
#include "exec/stage-tail.h"
#include "graph/graph-edit.h"
#include "specialize/tail.h"
#include "tensor-private.h"

#include <stdlib.h>
#include <string.h>

struct _NnpStage {
  NnpGraph *graph;           /* owned ref */
  NnpDevice *device;         /* owned ref */
  const NnpBackend *backend; /* the device's */
  gpointer exec;             /* the backend's prepared stage */

  int n_inputs, n_outputs;
  int *inputs, *outputs;         /* value ids */
  int *forward_from;             /* per output: stage input index it copies, or -1 */
  NnpTensor **run_in, **run_out; /* per run: what the backend gets (borrowed) */

  /* a graph with a data-dependent tail (graph->tail): this stage runs `head`
   * (a stage of the graph's nodes) then `tail`, and has no exec of its own */
  NnpStage *head;        /* owned */
  NnpStageTail *tail;    /* owned */
  int *head_out;         /* per output: index in head's outputs, or -1: the tail's */
  int *tail_out;         /* per output: index in the tail's outputs, or -1 */
  int *cut_from;         /* per cut: head output index (>= 0), or -1 - input index, or
                       * G_MININT: a constant of the graph (cut_const) */
  NnpTensor **cut_const; /* per cut: borrowed constant or NULL */
};

static int
cmp_int (const void *a, const void *b)
{
  return *(const int *) a - *(const int *) b;
}

/* Append the ids flagged in `flag` to `list`: those in `order` first (in that
 * order), then the rest by id. */
static int
ordered_ids (const NnpGraph *graph, const gboolean *flag, const GArray *order, int *list)
{
  guint n_values = graph->values->len;
  g_autofree gboolean *taken = g_new0 (gboolean, MAX (n_values, 1));
  int n = 0;

  for (guint i = 0; i < order->len; i++) {
    int id = g_array_index (order, int, i);
    if (id >= 0 && flag[id] && !taken[id]) {
      taken[id] = TRUE;
      list[n++] = id;
    }
  }
  for (guint id = 0; id < n_values; id++)
    if (flag[id] && !taken[id])
      list[n++] = id;
  return n;
}

static gboolean
check_explicit (const NnpGraph *graph, const char *what, const gboolean *derived,
                const gboolean *also_ok, const int *list, int n, GError **error)
{
  guint n_values = graph->values->len;
  g_autofree gboolean *seen = g_new0 (gboolean, MAX (n_values, 1));

  for (int i = 0; i < n; i++) {
    int id = list[i];
    if (id < 0 || (guint) id >= n_values) {
      g_set_error (error, NNP_ERROR, NNP_ERROR_PLAN, "stage %s %d: no value with id %d", what, i,
                   id);
      return FALSE;
    }
    if (seen[id]) {
      g_set_error (error, NNP_ERROR, NNP_ERROR_PLAN, "stage %s '%s' is listed twice", what,
                   nnp_graph_value (graph, id)->name);
      return FALSE;
    }
    seen[id] = TRUE;
    if (!derived[id] && !(also_ok && also_ok[id])) {
      g_set_error (error, NNP_ERROR, NNP_ERROR_PLAN, "value '%s' is not a stage %s",
                   nnp_graph_value (graph, id)->name, what);
      return FALSE;
    }
  }
  for (guint id = 0; id < n_values; id++) {
    if (derived[id] && !seen[id]) {
      g_set_error (error, NNP_ERROR, NNP_ERROR_PLAN,
                   "value '%s' is a stage %s but missing from the explicit list",
                   nnp_graph_value (graph, id)->name, what);
      return FALSE;
    }
  }
  return TRUE;
}

static gboolean tail_stage_run_into (NnpStage *stage, NnpTensor *const *inputs,
                                     NnpTensor *const *outputs, GError **error);
static NnpStage *tail_stage_new (NnpGraph *graph, const int *nodes, int n_nodes,
                                 const NnpStageOptions *options, GError **error);

static NnpStage *
stage_new (NnpGraph *graph, const int *nodes, int n_nodes, const NnpStageOptions *options,
           GError **error)
{
  NnpStageOptions dflt = { 0 };
  const NnpStageOptions *opt = options ? options : &dflt;
  NnpStage *stage;
  guint n_values, n_graph_nodes;
  g_autofree int *order = NULL;
  g_autofree gboolean *in_set = NULL, *is_in = NULL, *is_out = NULL, *used = NULL;
  g_autofree NnpValueRole *role = NULL;
  NnpBackendStageInfo info = { 0 };
  gpointer ctx = NULL;
  g_autoptr (NnpDevice) device = NULL;

  g_return_val_if_fail (graph != NULL, NULL);
  g_return_val_if_fail (nodes == NULL || n_nodes >= 0, NULL);

  device = nnp_device_open (opt->device, error);
  if (device == NULL)
    return NULL;

  n_values = graph->values->len;
  n_graph_nodes = graph->nodes->len;
  if (nodes == NULL)
    n_nodes = n_graph_nodes;

  /* the node list: in range, unique, run in graph (topological) order */
  order = g_new (int, MAX (n_nodes, 1));
  in_set = g_new0 (gboolean, MAX (n_graph_nodes, 1));
  for (int i = 0; i < n_nodes; i++) {
    int idx = nodes ? nodes[i] : i;
    if (idx < 0 || (guint) idx >= n_graph_nodes) {
      g_set_error (error, NNP_ERROR, NNP_ERROR_INVALID,
                   "stage node %d: index %d out of range (graph has %u nodes)", i, idx,
                   n_graph_nodes);
      return NULL;
    }
    if (in_set[idx]) {
      g_set_error (error, NNP_ERROR, NNP_ERROR_INVALID, "stage node '%s' is listed twice",
                   nnp_graph_node (graph, idx)->name);
      return NULL;
    }
    in_set[idx] = TRUE;
    order[i] = idx;
  }
  qsort (order, n_nodes, sizeof (int), cmp_int);

  /* the boundary */
  is_in = g_new0 (gboolean, MAX (n_values, 1));
  is_out = g_new0 (gboolean, MAX (n_values, 1));
  used = g_new0 (gboolean, MAX (n_values, 1));
  for (int s = 0; s < n_nodes; s++) {
    const NnpNode *node = nnp_graph_node (graph, order[s]);

    for (int k = 0; k < node->n_inputs; k++) {
      NnpValue *v = nnp_node_input (graph, node, k);
      if (v == NULL)
        continue;
      used[v->id] = TRUE;
      if (v->constant || (v->producer >= 0 && in_set[v->producer]))
        continue;
      else if (v->producer >= 0 || v->is_input)
        is_in[v->id] = TRUE;
      else {
        nnp_node_set_error (error, NNP_ERROR_INVALID, node,
                            "input '%s' is not produced by any node", v->name);
        return NULL;
      }
    }
    for (int k = 0; k < node->n_outputs; k++) {
      NnpValue *v = nnp_node_output (graph, node, k);
      if (v == NULL)
        continue;
      used[v->id] = TRUE;
      if (v->is_output)
        is_out[v->id] = TRUE;
      for (int c = 0; c < v->n_consumers; c++)
        if (!in_set[v->consumers[c]])
          is_out[v->id] = TRUE;
    }
  }
  for (guint id = 0; id < n_values; id++) {
    NnpValue *v = nnp_graph_value (graph, id);
    if (!used[id])
      continue;
    if (v->dtype == NNP_DTYPE_UNDEFINED || nnp_dtype_size (v->dtype) == 0
        || !nnp_shape_is_static (&v->shape)) {
      g_autofree char *s = nnp_shape_to_string (&v->shape);
      g_set_error (
          error, NNP_ERROR, NNP_ERROR_INVALID,
          "value '%s' has no static shape or sized type (%s %s): specialise the graph first",
          v->name, nnp_dtype_name (v->dtype), s);
      return NULL;
    }
  }

  stage = g_new0 (NnpStage, 1);
  stage->graph = nnp_graph_ref (graph);
  stage->device = g_steal_pointer (&device);
  stage->backend = nnp_device_get_backend_table (stage->device, &ctx);

  if (opt->inputs) {
    /* explicit inputs may also name values the nodes do not read but that
     * come from outside the stage: passed through (forwarded) */
    g_autofree gboolean *pass = g_new0 (gboolean, MAX (n_values, 1));
    for (guint id = 0; id < n_values; id++) {
      NnpValue *v = nnp_graph_value (graph, id);
      pass[id] = v->constant == NULL && (v->is_input || (v->producer >= 0 && !in_set[v->producer]));
    }
    if (!check_explicit (graph, "input", is_in, pass, opt->inputs, opt->n_inputs, error))
      goto fail;
    stage->n_inputs = opt->n_inputs;
    stage->inputs = g_memdup2 (opt->inputs, sizeof (int) * MAX (opt->n_inputs, 1));
  } else {
    stage->inputs = g_new (int, MAX (n_values, 1));
    stage->n_inputs = ordered_ids (graph, is_in, graph->inputs, stage->inputs);
  }
  if (opt->outputs) {
    /* a stage input may also be listed as an output: it is forwarded */
    g_autofree gboolean *fwd = g_new0 (gboolean, MAX (n_values, 1));
    for (int i = 0; i < stage->n_inputs; i++)
      fwd[stage->inputs[i]] = TRUE;
    if (!check_explicit (graph, "output", is_out, fwd, opt->outputs, opt->n_outputs, error))
      goto fail;
    stage->n_outputs = opt->n_outputs;
    stage->outputs = g_memdup2 (opt->outputs, sizeof (int) * MAX (opt->n_outputs, 1));
  } else {
    stage->outputs = g_new (int, MAX (n_values, 1));
    stage->n_outputs = ordered_ids (graph, is_out, graph->outputs, stage->outputs);
  }

  /* roles: which outputs forward an input */
  role = g_new (NnpValueRole, MAX (n_values, 1));
  stage->forward_from = g_new (int, MAX (stage->n_outputs, 1));
  nnp_value_roles (graph, order, n_nodes, stage->inputs, stage->n_inputs, stage->outputs,
                   stage->n_outputs, role, stage->forward_from);
  stage->run_in = g_new0 (NnpTensor *, MAX (stage->n_inputs, 1));
  stage->run_out = g_new0 (NnpTensor *, MAX (stage->n_outputs, 1));

  info.graph = graph;
  info.nodes = order;
  info.n_nodes = n_nodes;
  info.inputs = stage->inputs;
  info.n_inputs = stage->n_inputs;
  info.outputs = stage->outputs;
  info.n_outputs = stage->n_outputs;
  info.forward_from = stage->forward_from;
  info.threads = MAX (opt->threads, 1);
  info.cpus = opt->cpus;
  info.n_cpus = opt->n_cpus;
  for (int s = 0; s < n_nodes; s++) {
    const NnpNode *node = nnp_graph_node (graph, order[s]);
    g_autofree char *why = NULL;
    if (!stage->backend->supports_node (ctx, graph, node, &why)) {
      nnp_node_set_error (error, NNP_ERROR_UNSUPPORTED, node, "not supported on %s: %s",
                          nnp_device_get_name (stage->device), why ? why : "no kernel");
      goto fail;
    }
  }
  stage->exec = stage->backend->stage_new (ctx, &info, error);
  if (stage->exec == NULL)
    goto fail;
  NNP_DEBUG ("nnp-exec", "stage: %d nodes on %s, %d inputs, %d outputs", n_nodes,
             nnp_device_get_name (stage->device), stage->n_inputs, stage->n_outputs);
  return stage;

fail:
  nnp_stage_free (stage);
  return NULL;
}

NnpStage *
nnp_stage_new (NnpGraph *graph, const int *nodes, int n_nodes, const NnpStageOptions *options,
               GError **error)
{
  g_return_val_if_fail (graph != NULL, NULL);
  if (graph->tail)
    return tail_stage_new (graph, nodes, n_nodes, options, error);
  return stage_new (graph, nodes, n_nodes, options, error);
}

void
nnp_stage_free (NnpStage *stage)
{
  if (stage == NULL)
    return;
  nnp_stage_free (stage->head);
  nnp_stage_tail_free (stage->tail);
  g_free (stage->head_out);
  g_free (stage->tail_out);
  g_free (stage->cut_from);
  g_free (stage->cut_const);
  if (stage->exec)
    stage->backend->stage_free (stage->exec);
  g_free (stage->inputs);
  g_free (stage->outputs);
  g_free (stage->forward_from);
  g_free (stage->run_in);
  g_free (stage->run_out);
  nnp_graph_unref (stage->graph);
  nnp_device_unref (stage->device);
  g_free (stage);
}

NnpGraph *
nnp_stage_get_graph (NnpStage *stage)
{
  g_return_val_if_fail (stage != NULL, NULL);
  return stage->graph;
}

int
nnp_stage_get_n_inputs (NnpStage *stage)
{
  g_return_val_if_fail (stage != NULL, 0);
  return stage->n_inputs;
}

const NnpValue *
nnp_stage_get_input (NnpStage *stage, int i)
{
  g_return_val_if_fail (stage != NULL && i >= 0 && i < stage->n_inputs, NULL);
  return nnp_graph_value (stage->graph, stage->inputs[i]);
}

int
nnp_stage_get_n_outputs (NnpStage *stage)
{
  g_return_val_if_fail (stage != NULL, 0);
  return stage->n_outputs;
}

const NnpValue *
nnp_stage_get_output (NnpStage *stage, int i)
{
  g_return_val_if_fail (stage != NULL && i >= 0 && i < stage->n_outputs, NULL);
  return nnp_graph_value (stage->graph, stage->outputs[i]);
}

gsize
nnp_stage_get_arena_bytes (NnpStage *stage)
{
  g_return_val_if_fail (stage != NULL, 0);
  if (stage->head)
    return nnp_stage_get_arena_bytes (stage->head);
  return stage->backend->stage_arena_bytes ? stage->backend->stage_arena_bytes (stage->exec) : 0;
}

NnpDevice *
nnp_stage_get_device (NnpStage *stage)
{
  g_return_val_if_fail (stage != NULL, NULL);
  return stage->device;
}

gboolean
nnp_stage_output_is_dynamic (NnpStage *stage, int i)
{
  g_return_val_if_fail (stage != NULL && i >= 0 && i < stage->n_outputs, FALSE);
  return stage->head != NULL && stage->head_out[i] < 0;
}

static gboolean
refuse_dynamic (NnpStage *stage, int i, GError **error)
{
  if (!nnp_stage_output_is_dynamic (stage, i))
    return FALSE;
  g_set_error (
      error, NNP_ERROR, NNP_ERROR_UNSUPPORTED,
      "output '%s' has a data-dependent shape (the graph's tail from %s computes it at run time): run the stage with nnp_stage_run_alloc()",
      nnp_graph_value (stage->graph, stage->outputs[i])->name, stage->graph->tail->first);
  return TRUE;
}

NnpTensor *
nnp_stage_new_output (NnpStage *stage, int i, GError **error)
{
  const NnpValue *v;

  g_return_val_if_fail (stage != NULL && i >= 0 && i < stage->n_outputs, NULL);
  if (refuse_dynamic (stage, i, error))
    return NULL;
  v = nnp_graph_value (stage->graph, stage->outputs[i]);
  return nnp_tensor_new (v->dtype, &v->shape, error);
}

NnpTensor *
nnp_stage_new_device_output (NnpStage *stage, int i, GError **error)
{
  const NnpValue *v;

  g_return_val_if_fail (stage != NULL && i >= 0 && i < stage->n_outputs, NULL);
  if (refuse_dynamic (stage, i, error))
    return NULL;
  v = nnp_graph_value (stage->graph, stage->outputs[i]);
  return nnp_tensor_new_on (stage->device, v->dtype, &v->shape, error);
}

static gboolean
check_tensor (const char *what, const NnpValue *v, const NnpTensor *t, GError **error)
{
  if (t == NULL) {
    g_set_error (error, NNP_ERROR, NNP_ERROR_INVALID, "%s '%s': no tensor given", what, v->name);
    return FALSE;
  }
  if (t->dtype != v->dtype || !nnp_shape_equal (&t->shape, &v->shape)
      || (t->device == NULL && t->data == NULL && t->nbytes > 0)) {
    g_autofree char *want = nnp_shape_to_string (&v->shape);
    g_autofree char *got = nnp_shape_to_string (&t->shape);
    g_set_error (error, NNP_ERROR, NNP_ERROR_INVALID, "%s '%s': expected %s %s, got %s %s", what,
                 v->name, nnp_dtype_name (v->dtype), want, nnp_dtype_name (t->dtype), got);
    return FALSE;
  }
  return TRUE;
}

/* Whether the backend can take t as it is: host memory, or its own device's. */
static inline gboolean
in_place (NnpStage *stage, const NnpTensor *t)
{
  return t->device == NULL || t->device == stage->device;
}

/* Host memory of a tensor the stage cannot use in place: a new host tensor
 * (downloaded when `fill`), kept in tmp. */
static NnpTensor *
host_staging (GPtrArray *tmp, NnpTensor *t, gboolean fill, GError **error)
{
  NnpTensor *h = nnp_tensor_new (t->dtype, &t->shape, error);

  if (h == NULL)
    return NULL;
  g_ptr_array_add (tmp, h);
  if (fill && !nnp_tensor_copy_into (h, t, error))
    return NULL;
  return h;
}

gboolean
nnp_stage_run (NnpStage *stage, NnpTensor *const *inputs, NnpTensor *const *outputs, GError **error)
{
  g_autoptr (GPtrArray) tmp = NULL; /* host staging of foreign device tensors */
  gboolean ok;

  g_return_val_if_fail (stage != NULL, FALSE);
  g_return_val_if_fail (stage->n_inputs == 0 || inputs != NULL, FALSE);
  g_return_val_if_fail (stage->n_outputs == 0 || outputs != NULL, FALSE);
  if (stage->head)
    return tail_stage_run_into (stage, inputs, outputs, error);

  for (int i = 0; i < stage->n_inputs; i++) {
    if (!check_tensor ("input", nnp_graph_value (stage->graph, stage->inputs[i]), inputs[i], error))
      return FALSE;
    stage->run_in[i] = inputs[i];
    if (G_UNLIKELY (!in_place (stage, inputs[i]))) {
      if (tmp == NULL)
        tmp = g_ptr_array_new_with_free_func ((GDestroyNotify) nnp_tensor_unref);
      if ((stage->run_in[i] = host_staging (tmp, inputs[i], TRUE, error)) == NULL)
        return FALSE;
    }
  }
  for (int i = 0; i < stage->n_outputs; i++) {
    if (!check_tensor ("output", nnp_graph_value (stage->graph, stage->outputs[i]), outputs[i],
                       error))
      return FALSE;
    stage->run_out[i] = outputs[i];
    if (stage->forward_from[i] >= 0) {
      stage->run_out[i] = NULL;
    } else if (G_UNLIKELY (!in_place (stage, outputs[i]))) {
      if (tmp == NULL)
        tmp = g_ptr_array_new_with_free_func ((GDestroyNotify) nnp_tensor_unref);
      if ((stage->run_out[i] = host_staging (tmp, outputs[i], FALSE, error)) == NULL)
        return FALSE;
    }
  }

  ok = stage->backend->stage_run (stage->exec, stage->run_in, stage->run_out, error);

  for (int i = 0; ok && i < stage->n_outputs; i++) {
    if (stage->forward_from[i] >= 0)
      ok = nnp_tensor_copy_into (outputs[i], inputs[stage->forward_from[i]], error);
    else if (stage->run_out[i] != outputs[i])
      ok = nnp_tensor_copy_into (outputs[i], stage->run_out[i], error);
  }
  return ok;
}

/* ------------------------------------------------------------------------ */
/* A graph with a data-dependent tail (lib/specialize/tail.c): the head is a
 * stage of the graph's nodes; each run hands what the tail reads (head
 * outputs, graph inputs, constants) to lib/exec/stage-tail.c. */

static int
index_of (const int *ids, int n, int id)
{
  for (int i = 0; i < n; i++)
    if (ids[i] == id)
      return i;
  return -1;
}

static NnpStage *
tail_stage_new (NnpGraph *graph, const int *nodes, int n_nodes, const NnpStageOptions *options,
                GError **error)
{
  NnpStageOptions dflt = { 0 }, hopt;
  const NnpStageOptions *opt = options ? options : &dflt;
  g_autoptr (GArray) ins = g_array_new (FALSE, FALSE, sizeof (int));
  g_autoptr (GArray) outs = g_array_new (FALSE, FALSE, sizeof (int));
  g_autoptr (GPtrArray) tail_names = g_ptr_array_new ();
  const char *const *cuts;
  NnpStage *head, *stage;
  int n_cuts;

  if (nodes != NULL && n_nodes != (int) graph->nodes->len) {
    g_set_error (
        error, NNP_ERROR, NNP_ERROR_UNSUPPORTED,
        "the graph has a data-dependent tail from %s (%s): it runs as one stage of the whole graph only, not split in stages",
        graph->tail->first, graph->tail->why);
    return NULL;
  }
  if (opt->inputs)
    g_array_append_vals (ins, opt->inputs, opt->n_inputs);
  else
    for (guint i = 0; i < graph->inputs->len; i++)
      if (!nnp_graph_value (graph, g_array_index (graph->inputs, int, i))->constant)
        g_array_append_val (ins, g_array_index (graph->inputs, int, i));
  if (opt->outputs)
    g_array_append_vals (outs, opt->outputs, opt->n_outputs);
  else
    for (guint i = 0; i < graph->outputs->len; i++)
      if (!nnp_graph_value (graph, g_array_index (graph->outputs, int, i))->constant)
        g_array_append_val (outs, g_array_index (graph->outputs, int, i));

  hopt = *opt;
  hopt.inputs = (const int *) ins->data;
  hopt.n_inputs = ins->len;
  hopt.outputs = NULL; /* derived: the static graph outputs and what the tail reads */
  hopt.n_outputs = 0;
  head = stage_new (graph, nodes, n_nodes, &hopt, error);
  if (head == NULL)
    return NULL;

  stage = g_new0 (NnpStage, 1);
  stage->graph = nnp_graph_ref (graph);
  stage->device = nnp_device_ref (head->device);
  stage->backend = head->backend;
  stage->head = head;
  stage->n_inputs = ins->len;
  stage->inputs = g_memdup2 (ins->data, sizeof (int) * MAX (ins->len, 1));
  stage->n_outputs = outs->len;
  stage->outputs = g_memdup2 (outs->data, sizeof (int) * MAX (outs->len, 1));
  stage->forward_from = g_new (int, MAX (outs->len, 1));
  stage->head_out = g_new (int, MAX (outs->len, 1));
  stage->tail_out = g_new (int, MAX (outs->len, 1));
  stage->run_in = g_new0 (NnpTensor *, MAX (ins->len, 1));
  stage->run_out = g_new0 (NnpTensor *, MAX (outs->len, 1));
  for (int i = 0; i < stage->n_outputs; i++) {
    NnpValue *v = nnp_graph_value (graph, stage->outputs[i]);

    stage->forward_from[i] = -1;
    stage->tail_out[i] = -1;
    stage->head_out[i] = v ? index_of (head->outputs, head->n_outputs, v->id) : -1;
    if (v && nnp_tail_is_output (graph, v)) {
      stage->tail_out[i] = tail_names->len;
      g_ptr_array_add (tail_names, v->name);
    } else if (stage->head_out[i] < 0) {
      g_set_error (error, NNP_ERROR, NNP_ERROR_PLAN, "value %s%s%s is not a stage output",
                   v ? "'" : "", v ? v->name : "(bad id)", v ? "'" : "");
      goto fail;
    }
  }
  if (tail_names->len == 0)
    return stage; /* the caller wants none of the tail's outputs */

  stage->tail =
      nnp_stage_tail_new (graph, (const char *const *) tail_names->pdata, tail_names->len, error);
  if (stage->tail == NULL)
    goto fail;
  cuts = nnp_stage_tail_get_cuts (stage->tail);
  n_cuts = (int) g_strv_length ((char **) cuts);
  stage->cut_from = g_new (int, MAX (n_cuts, 1));
  stage->cut_const = g_new0 (NnpTensor *, MAX (n_cuts, 1));
  for (int k = 0; k < n_cuts; k++) {
    NnpValue *v = nnp_graph_find_value (graph, cuts[k]);
    NnpTensor *folded = g_hash_table_lookup (graph->tail->consts, cuts[k]);
    int j = v ? index_of (head->outputs, head->n_outputs, v->id) : -1;
    int in = v ? index_of (stage->inputs, stage->n_inputs, v->id) : -1;

    if ((v && v->constant) || folded) {
      stage->cut_from[k] = G_MININT;
      stage->cut_const[k] = folded ? folded : v->constant;
    } else if (j >= 0) {
      stage->cut_from[k] = j;
    } else if (in >= 0) {
      stage->cut_from[k] = -1 - in;
    } else {
      g_set_error (error, NNP_ERROR, NNP_ERROR_INVALID,
                   "the data-dependent tail from %s reads '%s', which the head does not make",
                   graph->tail->first, cuts[k]);
      goto fail;
    }
  }
  NNP_DEBUG ("nnp-exec", "stage with a data-dependent tail from %s: %d outputs, %u of the tail",
             graph->tail->first, stage->n_outputs, tail_names->len);
  return stage;

fail:
  nnp_stage_free (stage);
  return NULL;
}

/* Run head then tail; outputs[i] gets a new reference (host memory for the
 * tail's outputs). */
static gboolean
tail_stage_run (NnpStage *stage, NnpTensor *const *inputs, NnpTensor **outputs, GError **error)
{
  NnpStage *head = stage->head;
  g_autoptr (GPtrArray) hold = g_ptr_array_new_with_free_func ((GDestroyNotify) nnp_tensor_unref);
  g_autofree NnpTensor **hout = g_new0 (NnpTensor *, MAX (head->n_outputs, 1));
  g_autofree NnpTensor **tout = g_new0 (NnpTensor *, MAX (stage->n_outputs, 1));
  g_autofree NnpTensor **cut = NULL;
  const char *const *cuts;

  for (int j = 0; j < head->n_outputs; j++) {
    if ((hout[j] = nnp_stage_new_output (head, j, error)) == NULL)
      return FALSE;
    g_ptr_array_add (hold, hout[j]);
  }
  if (!nnp_stage_run (head, inputs, hout, error))
    return FALSE;
  if (stage->tail) {
    int n_cuts;

    cuts = nnp_stage_tail_get_cuts (stage->tail);
    n_cuts = (int) g_strv_length ((char **) cuts);
    cut = g_new0 (NnpTensor *, MAX (n_cuts, 1));
    for (int k = 0; k < n_cuts; k++) {
      int from = stage->cut_from[k];
      if (from == G_MININT)
        cut[k] = stage->cut_const[k];
      else if (from >= 0)
        cut[k] = hout[from];
      else if (nnp_tensor_is_host (inputs[-1 - from]))
        cut[k] = inputs[-1 - from];
      else {
        cut[k] = nnp_tensor_copy (inputs[-1 - from]);
        g_ptr_array_add (hold, cut[k]);
      }
    }
    if (!nnp_stage_tail_run (stage->tail, cut, tout, error))
      return FALSE;
  }
  for (int i = 0; i < stage->n_outputs; i++)
    outputs[i] = stage->head_out[i] >= 0 ? nnp_tensor_ref (hout[stage->head_out[i]])
                                         : tout[stage->tail_out[i]];
  return TRUE;
}

static gboolean
tail_stage_run_into (NnpStage *stage, NnpTensor *const *inputs, NnpTensor *const *outputs,
                     GError **error)
{
  g_autofree NnpTensor **got = NULL;
  gboolean ok = TRUE;

  for (int i = 0; i < stage->n_outputs; i++)
    if (refuse_dynamic (stage, i, error))
      return FALSE;
  for (int i = 0; i < stage->n_outputs; i++)
    if (!check_tensor ("output", nnp_graph_value (stage->graph, stage->outputs[i]), outputs[i],
                       error))
      return FALSE;
  got = g_new0 (NnpTensor *, MAX (stage->n_outputs, 1));
  if (!tail_stage_run (stage, inputs, got, error))
    return FALSE;
  for (int i = 0; i < stage->n_outputs; i++) {
    ok = ok && nnp_tensor_copy_into (outputs[i], got[i], error);
    nnp_tensor_unref (got[i]);
  }
  return ok;
}

gboolean
nnp_stage_run_alloc (NnpStage *stage, NnpTensor *const *inputs, NnpTensor **outputs, GError **error)
{
  g_return_val_if_fail (stage != NULL, FALSE);
  g_return_val_if_fail (stage->n_inputs == 0 || inputs != NULL, FALSE);
  g_return_val_if_fail (stage->n_outputs == 0 || outputs != NULL, FALSE);

  for (int i = 0; i < stage->n_outputs; i++)
    outputs[i] = NULL;
  if (stage->head)
    return tail_stage_run (stage, inputs, outputs, error);
  for (int i = 0; i < stage->n_outputs; i++) {
    if ((outputs[i] = nnp_stage_new_output (stage, i, error)) == NULL)
      goto fail;
  }
  if (nnp_stage_run (stage, inputs, outputs, error))
    return TRUE;
fail:
  for (int i = 0; i < stage->n_outputs; i++)
    g_clear_pointer (&outputs[i], nnp_tensor_unref);
  return FALSE;
}
