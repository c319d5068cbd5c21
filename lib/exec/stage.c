/* libnnpipe: a stage = nodes of a specialised graph bound to one device (see
 * include/nnpipe/stage.h).
 *
 * Everything is decided in nnp_stage_new():
 *   - the boundary (derived or checked against the caller's lists);
 *   - per node: the CPU kernel, its prepared state (packed weights) and the
 *     NnpCpuCall with pre-built input/output tensor views;
 *   - a static memory plan: every intermediate value lives at a fixed offset
 *     of one 64-byte-aligned arena (memplan.c); Reshape-like nodes whose
 *     input and output are both intermediates share one buffer and are
 *     skipped at run time; one scratch area (the largest workspace) is shared
 *     by all nodes;
 *   - the thread pool (owned by the stage).
 * nnp_stage_run() then only points the boundary views at the caller's
 * tensors and calls the kernels in order: no allocation, no lookup.
 *
 * Profiling (opt-in): with NNP_PROFILE set in the environment when the
 * stage is created, each kernel call is timed and nnp_stage_free() logs a
 * per-kind time table and the slowest nodes at INFO level in category
 * "nnp-profile" (`nnpipe run --profile` prints it). */
#include <nnpipe/stage.h>
#include <nnpipe/log.h>

#include "backends/cpu/cpu.h"
#include "backends/memplan.h"
#include "backends/cpu/threadpool.h"
#ifdef NNP_HAVE_OPENCL
#include "backends/opencl/opencl.h"
#endif
#include "ops/conv-params.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct {
  const NnpNode *node;
  const NnpCpuKernel *kernel;
  gpointer state;
  NnpTensor **in;        /* node->n_inputs views (borrowed from stage->views) */
  NnpTensor **out;       /* node->n_outputs views */
  NnpCpuCall call;
  gboolean skip;         /* output aliases the input: nothing to do */
} Step;

struct _NnpStage {
  NnpGraph *graph;       /* owned ref */
  NnpDevice *device;     /* owned ref */
  gpointer ocl;          /* NnpOclExec*: the whole stage on an OpenCL device, or NULL */
  int n_steps;
  Step *steps;

  int n_inputs, n_outputs;
  int *inputs, *outputs;          /* value ids */
  NnpTensor **input_views;        /* borrowed from views */
  NnpTensor **output_views;       /* borrowed from views; NULL for a forwarded value */
  int *forward_from;              /* per output: stage input index it copies, or -1 */

  NnpTensor **views;              /* per value id (graph->values->len), owned refs or NULL */
  guint8 *arena;
  gsize arena_bytes;
  void *scratch;
  gsize scratch_bytes;
  NnpThreadPool *pool;

  gboolean profile;               /* NNP_PROFILE was set at creation */
  int prof_runs;
  gint64 *prof_ns;                /* per step: total nanoseconds over prof_runs */
};

static void
aligned_free (gpointer p)
{
  free (p);
}

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
      g_set_error (error, NNP_ERROR, NNP_ERROR_PLAN, "stage %s %d: no value with id %d", what,
                   i, id);
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
      g_set_error (error, NNP_ERROR, NNP_ERROR_PLAN, "value '%s' is a stage %s but "
                   "missing from the explicit list", nnp_graph_value (graph, id)->name, what);
      return FALSE;
    }
  }
  return TRUE;
}

NnpStage *
nnp_stage_new (NnpGraph *graph, const int *nodes, int n_nodes, const NnpStageOptions *options,
               GError **error)
{
  NnpStageOptions dflt = { 0 };
  const NnpStageOptions *opt = options ? options : &dflt;
  NnpStage *stage;
  guint n_values, n_graph_nodes;
  g_autofree int *order = NULL;
  g_autofree gboolean *in_set = NULL, *is_in = NULL, *is_out = NULL, *used = NULL;
  g_autofree NnpValueRole *role = NULL;
  NnpValuePlan plan = { 0 };

  g_return_val_if_fail (graph != NULL, NULL);
  g_return_val_if_fail (nodes == NULL || n_nodes >= 0, NULL);

  {
    NnpDevice *dev = nnp_device_open (opt->device, error);   /* checked early, reopened below */
    if (dev == NULL)
      return NULL;
    nnp_device_unref (dev);
  }

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
      g_set_error (error, NNP_ERROR, NNP_ERROR_INVALID,
                   "value '%s' has no static shape or sized type (%s %s): specialise the "
                   "graph first", v->name, nnp_dtype_name (v->dtype), s);
      return NULL;
    }
  }

  stage = g_new0 (NnpStage, 1);
  stage->graph = nnp_graph_ref (graph);
  stage->device = nnp_device_open (opt->device, error);
  if (stage->device == NULL)
    goto fail;
  stage->views = g_new0 (NnpTensor *, MAX (n_values, 1));

  if (opt->inputs) {
    /* explicit inputs may also name values the nodes do not read but that
     * come from outside the stage: passed through (forwarded) */
    g_autofree gboolean *pass = g_new0 (gboolean, MAX (n_values, 1));
    for (guint id = 0; id < n_values; id++) {
      NnpValue *v = nnp_graph_value (graph, id);
      pass[id] = v->constant == NULL
          && (v->is_input || (v->producer >= 0 && !in_set[v->producer]));
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

  /* roles; boundary views: data pointers are set by nnp_stage_run() */
  role = g_new (NnpValueRole, MAX (n_values, 1));
  stage->forward_from = g_new (int, MAX (stage->n_outputs, 1));
  nnp_value_roles (graph, order, n_nodes, stage->inputs, stage->n_inputs, stage->outputs,
                   stage->n_outputs, role, stage->forward_from);
  stage->input_views = g_new0 (NnpTensor *, MAX (stage->n_inputs, 1));
  stage->output_views = g_new0 (NnpTensor *, MAX (stage->n_outputs, 1));
  for (int i = 0; i < stage->n_inputs; i++) {
    NnpValue *v = nnp_graph_value (graph, stage->inputs[i]);
    stage->views[v->id] = nnp_tensor_new_wrapped (v->dtype, &v->shape, NULL, NULL, NULL);
    stage->input_views[i] = stage->views[v->id];
  }
  for (int i = 0; i < stage->n_outputs; i++) {
    NnpValue *v = nnp_graph_value (graph, stage->outputs[i]);
    if (stage->forward_from[i] >= 0)
      continue;
    stage->views[v->id] = nnp_tensor_new_wrapped (v->dtype, &v->shape, NULL, NULL, NULL);
    stage->output_views[i] = stage->views[v->id];
  }

#ifdef NNP_HAVE_OPENCL
  if (nnp_device_get_kind (stage->device) == NNP_DEVICE_OPENCL) {
    /* the OpenCL executor plans and runs the whole stage on the device */
    stage->ocl = nnp_ocl_exec_new (nnp_device_get_ocl (stage->device), graph, order, n_nodes,
                                   stage->inputs, stage->n_inputs, stage->outputs,
                                   stage->n_outputs, error);
    if (stage->ocl == NULL)
      goto fail;
    stage->arena_bytes = nnp_ocl_exec_get_arena_bytes (stage->ocl);
    NNP_DEBUG ("nnp-exec", "stage: %d nodes on %s, %d inputs, %d outputs", n_nodes,
               nnp_device_get_name (stage->device), stage->n_inputs, stage->n_outputs);
    return stage;
  }
#endif

  /* steps: kernels and prepared state */
  stage->n_steps = n_nodes;
  stage->steps = g_new0 (Step, MAX (n_nodes, 1));
  stage->profile = g_getenv ("NNP_PROFILE") != NULL;
  if (stage->profile)
    stage->prof_ns = g_new0 (gint64, MAX (n_nodes, 1));
  for (int s = 0; s < n_nodes; s++) {
    Step *step = &stage->steps[s];
    const NnpNode *node = nnp_graph_node (graph, order[s]);
    GError *err = NULL;

    step->node = node;
    step->kernel = nnp_cpu_kernel (node->op);
    if (step->kernel == NULL || step->kernel->run == NULL) {
      nnp_node_set_error (error, NNP_ERROR_UNSUPPORTED, node, "op '%s' is not supported on cpu",
                          node->op_type);
      goto fail;
    }
    if (step->kernel->prepare) {
      step->state = step->kernel->prepare (graph, node, &err);
      if (err) {
        g_propagate_error (error, err);
        goto fail;
      }
    }
    if (step->kernel->workspace)
      stage->scratch_bytes = MAX (stage->scratch_bytes, step->kernel->workspace (graph, node));
  }

  /* buffers: internal values, Reshape-like outputs sharing their input's */
  nnp_value_plan_init (&plan, graph, order, n_nodes, role, FALSE);
  for (int s = 0; s < n_nodes; s++)
    stage->steps[s].skip = plan.skip[s];
  stage->arena_bytes = plan.arena_bytes;
  /* at least one block: views of empty values point into it, not at NULL + 0 */
  if (posix_memalign ((void **) &stage->arena, NNP_MEM_ALIGN, MAX (stage->arena_bytes, 1)) != 0) {
    g_set_error (error, NNP_ERROR, NNP_ERROR_FAILED,
                 "out of memory allocating a %" G_GSIZE_FORMAT "-byte arena", stage->arena_bytes);
    stage->arena = NULL;
    goto fail;
  }
  if (stage->scratch_bytes > 0
      && posix_memalign (&stage->scratch, NNP_MEM_ALIGN,
                         (stage->scratch_bytes + NNP_MEM_ALIGN - 1) / NNP_MEM_ALIGN
                         * NNP_MEM_ALIGN) != 0) {
    g_set_error (error, NNP_ERROR, NNP_ERROR_FAILED,
                 "out of memory allocating %" G_GSIZE_FORMAT " bytes of scratch",
                 stage->scratch_bytes);
    stage->scratch = NULL;
    goto fail;
  }

  /* views of internal values and constants */
  for (guint id = 0; id < n_values; id++) {
    NnpValue *v = nnp_graph_value (graph, id);
    if (role[id] == NNP_ROLE_CONST) {
      stage->views[id] = nnp_tensor_ref (v->constant);
    } else if (role[id] == NNP_ROLE_INTERNAL) {
      const NnpMemBlock *b = nnp_value_plan_block (&plan, id);
      stage->views[id] = nnp_tensor_new_wrapped (v->dtype, &v->shape, stage->arena + b->offset,
                                                 NULL, NULL);
      NNP_DEBUG ("nnp-exec", "  %-40s %10" G_GSIZE_FORMAT " bytes at %10" G_GSIZE_FORMAT
                 " steps %d..%d%s", v->name, nnp_value_bytes (v), b->offset, b->first, b->last,
                 plan.buffer[id] != (int) id ? " (alias)" : "");
    }
  }

  /* pre-built calls */
  for (int s = 0; s < n_nodes; s++) {
    Step *step = &stage->steps[s];
    const NnpNode *node = step->node;

    step->in = g_new0 (NnpTensor *, MAX (node->n_inputs, 1));
    step->out = g_new0 (NnpTensor *, MAX (node->n_outputs, 1));
    for (int k = 0; k < node->n_inputs; k++)
      step->in[k] = node->inputs[k] >= 0 ? stage->views[node->inputs[k]] : NULL;
    for (int k = 0; k < node->n_outputs; k++)
      step->out[k] = node->outputs[k] >= 0 ? stage->views[node->outputs[k]] : NULL;
    step->call.graph = graph;
    step->call.node = node;
    step->call.inputs = step->in;
    step->call.outputs = step->out;
    step->call.scratch = stage->scratch;
    step->call.state = step->state;
  }

  if (opt->threads > 1 || opt->n_cpus > 0) {
    stage->pool = nnp_thread_pool_new (MAX (opt->threads, 1), opt->cpus, opt->n_cpus, error);
    if (stage->pool == NULL)
      goto fail;
  }
  for (int s = 0; s < n_nodes; s++)
    stage->steps[s].call.pool = stage->pool;

  NNP_DEBUG ("nnp-exec", "stage: %d nodes on cpu, %d inputs, %d outputs, %d buffers, arena %"
             G_GSIZE_FORMAT " bytes, scratch %" G_GSIZE_FORMAT " bytes, %d threads", n_nodes,
             stage->n_inputs, stage->n_outputs, plan.n_blocks, stage->arena_bytes,
             stage->scratch_bytes, nnp_thread_pool_get_n_threads (stage->pool));
  nnp_value_plan_clear (&plan);
  return stage;

fail:
  nnp_value_plan_clear (&plan);
  nnp_stage_free (stage);
  return NULL;
}

/* ---------------------------------------------------------------- profile */

static gint64
now_ns (void)
{
  struct timespec ts;

  clock_gettime (CLOCK_MONOTONIC, &ts);
  return (gint64) ts.tv_sec * G_GINT64_CONSTANT (1000000000) + ts.tv_nsec;
}

/* "Conv 3x3 s1 direct"-style kind of a node (newly allocated). */
static char *
profile_kind (const NnpNode *node)
{
  static const char *const algo_names[] = { "gemm", "im2col", "depthwise", "direct" };
  const NnpConvParams *p = node->params;

  if ((node->op == NNP_OP_CONV || node->op == NNP_OP_CONV_TRANSPOSE) && p != NULL) {
    const char *algo = node->op == NNP_OP_CONV_TRANSPOSE ? "gemm+col2im" :
                       (int) p->algo < (int) G_N_ELEMENTS (algo_names) ? algo_names[p->algo] : "?";
    return g_strdup_printf ("%s %" G_GINT64_FORMAT "x%" G_GINT64_FORMAT " s%" G_GINT64_FORMAT
                            " %s", node->op_type, p->kernel[1], p->kernel[2], p->strides[2], algo);
  }
  return g_strdup (node->op_type);
}

typedef struct {
  char *kind;
  gint64 ns;
  double flops;
  int count;
} ProfRow;

static int
cmp_prof_row (const void *a, const void *b)
{
  const ProfRow *x = a, *y = b;

  return x->ns < y->ns ? 1 : (x->ns > y->ns ? -1 : 0);
}

static int
cmp_step_time (const void *a, const void *b, gpointer data)
{
  const gint64 *ns = data;
  int x = *(const int *) a, y = *(const int *) b;

  return ns[x] < ns[y] ? 1 : (ns[x] > ns[y] ? -1 : 0);
}

static void
log_profile (NnpStage *stage)
{
  g_autoptr (GHashTable) index = g_hash_table_new (g_str_hash, g_str_equal);
  g_autofree ProfRow *rows = g_new0 (ProfRow, MAX (stage->n_steps, 1));
  g_autofree int *order = g_new (int, MAX (stage->n_steps, 1));
  int n_rows = 0;
  gint64 total = 0;
  double runs = stage->prof_runs;

  for (int s = 0; s < stage->n_steps; s++) {
    char *kind = profile_kind (stage->steps[s].node);
    gpointer found;
    int r;

    if (g_hash_table_lookup_extended (index, kind, NULL, &found)) {
      r = GPOINTER_TO_INT (found);
      g_free (kind);
    } else {
      r = n_rows++;
      rows[r].kind = kind;
      g_hash_table_insert (index, kind, GINT_TO_POINTER (r));
    }
    rows[r].ns += stage->prof_ns[s];
    rows[r].flops += nnp_node_flops (stage->graph, stage->steps[s].node);
    rows[r].count++;
    total += stage->prof_ns[s];
    order[s] = s;
  }
  qsort (rows, n_rows, sizeof (ProfRow), cmp_prof_row);
  NNP_INFO ("nnp-profile", "%d runs, %.3f ms per run in %d kernel calls", stage->prof_runs,
            total / runs / 1e6, stage->n_steps);
  NNP_INFO ("nnp-profile", "%-32s %6s %10s %6s %9s", "kind", "nodes", "ms/run", "%", "GFLOP/s");
  for (int r = 0; r < n_rows; r++) {
    NNP_INFO ("nnp-profile", "%-32s %6d %10.3f %6.1f %9.1f", rows[r].kind, rows[r].count,
              rows[r].ns / runs / 1e6, total > 0 ? 100.0 * rows[r].ns / total : 0.0,
              rows[r].ns > 0 ? rows[r].flops * runs / rows[r].ns : 0.0);
    g_free (rows[r].kind);
  }
  g_qsort_with_data (order, stage->n_steps, sizeof (int), cmp_step_time, stage->prof_ns);
  NNP_INFO ("nnp-profile", "slowest nodes:");
  for (int i = 0; i < MIN (stage->n_steps, 25); i++) {
    const Step *step = &stage->steps[order[i]];
    const NnpValue *out = step->node->n_outputs > 0 && step->node->outputs[0] >= 0 ?
                          nnp_graph_value (stage->graph, step->node->outputs[0]) : NULL;
    g_autofree char *kind = profile_kind (step->node);
    g_autofree char *shape = out ? nnp_shape_to_string (&out->shape) : g_strdup ("-");
    double ns = stage->prof_ns[order[i]];
    NNP_INFO ("nnp-profile", "  %8.3f ms %7.1f GFLOP/s  %-20s %-32s -> %s", ns / runs / 1e6,
              ns > 0 ? nnp_node_flops (stage->graph, step->node) * runs / ns : 0.0,
              step->node->name, kind, shape);
  }
}

void
nnp_stage_free (NnpStage *stage)
{
  if (stage == NULL)
    return;
  if (stage->profile && stage->prof_runs > 0)
    log_profile (stage);
  g_free (stage->prof_ns);
  nnp_thread_pool_free (stage->pool);
#ifdef NNP_HAVE_OPENCL
  nnp_ocl_exec_free (stage->ocl);
#endif
  for (int s = 0; stage->steps && s < stage->n_steps; s++) {
    Step *step = &stage->steps[s];
    if (step->state && step->kernel && step->kernel->free_state)
      step->kernel->free_state (step->state);
    g_free (step->in);
    g_free (step->out);
  }
  g_free (stage->steps);
  if (stage->views) {
    for (guint id = 0; id < stage->graph->values->len; id++)
      if (stage->views[id])
        nnp_tensor_unref (stage->views[id]);
    g_free (stage->views);
  }
  g_free (stage->inputs);
  g_free (stage->outputs);
  g_free (stage->input_views);
  g_free (stage->output_views);
  g_free (stage->forward_from);
  if (stage->arena)
    aligned_free (stage->arena);
  if (stage->scratch)
    aligned_free (stage->scratch);
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
  return stage->arena_bytes;
}

NnpTensor *
nnp_stage_new_output (NnpStage *stage, int i, GError **error)
{
  const NnpValue *v;

  g_return_val_if_fail (stage != NULL && i >= 0 && i < stage->n_outputs, NULL);
  v = nnp_graph_value (stage->graph, stage->outputs[i]);
  return nnp_tensor_new (v->dtype, &v->shape, error);
}

static gboolean
check_tensor (const char *what, const NnpValue *v, const NnpTensor *t, GError **error)
{
  if (t == NULL) {
    g_set_error (error, NNP_ERROR, NNP_ERROR_INVALID, "%s '%s': no tensor given", what, v->name);
    return FALSE;
  }
  if (t->dtype != v->dtype || !nnp_shape_equal (&t->shape, &v->shape)
      || (t->data == NULL && t->nbytes > 0)) {
    g_autofree char *want = nnp_shape_to_string (&v->shape);
    g_autofree char *got = nnp_shape_to_string (&t->shape);
    g_set_error (error, NNP_ERROR, NNP_ERROR_INVALID, "%s '%s': expected %s %s, got %s %s",
                 what, v->name, nnp_dtype_name (v->dtype), want, nnp_dtype_name (t->dtype), got);
    return FALSE;
  }
  return TRUE;
}

gboolean
nnp_stage_run (NnpStage *stage, NnpTensor *const *inputs, NnpTensor *const *outputs,
               GError **error)
{
  g_return_val_if_fail (stage != NULL, FALSE);
  g_return_val_if_fail (stage->n_inputs == 0 || inputs != NULL, FALSE);
  g_return_val_if_fail (stage->n_outputs == 0 || outputs != NULL, FALSE);

  for (int i = 0; i < stage->n_inputs; i++) {
    if (!check_tensor ("input", nnp_graph_value (stage->graph, stage->inputs[i]), inputs[i],
                       error))
      return FALSE;
    stage->input_views[i]->data = inputs[i]->data;
  }
  for (int i = 0; i < stage->n_outputs; i++) {
    if (!check_tensor ("output", nnp_graph_value (stage->graph, stage->outputs[i]), outputs[i],
                       error))
      return FALSE;
    if (stage->output_views[i])
      stage->output_views[i]->data = outputs[i]->data;
  }
#ifdef NNP_HAVE_OPENCL
  if (stage->ocl)
    return nnp_ocl_exec_run (stage->ocl, inputs, NULL, outputs, NULL, error);
#endif

  if (G_UNLIKELY (stage->profile)) {
    for (int s = 0; s < stage->n_steps; s++) {
      Step *step = &stage->steps[s];
      gint64 t0;
      if (step->skip)
        continue;
      t0 = now_ns ();
      if (!step->kernel->run (&step->call, error))
        return FALSE;
      stage->prof_ns[s] += now_ns () - t0;
    }
    stage->prof_runs++;
  } else {
    for (int s = 0; s < stage->n_steps; s++) {
      Step *step = &stage->steps[s];
      if (step->skip)
        continue;
      if (!step->kernel->run (&step->call, error))
        return FALSE;
    }
  }

  for (int i = 0; i < stage->n_outputs; i++)
    if (stage->forward_from[i] >= 0 && outputs[i]->nbytes > 0)
      memcpy (outputs[i]->data, inputs[stage->forward_from[i]]->data, outputs[i]->nbytes);
  return TRUE;
}

/* ---------------------------------------------------------------- devices */

NnpDevice *
nnp_stage_get_device (NnpStage *stage)
{
  g_return_val_if_fail (stage != NULL, NULL);
  return stage->device;
}

NnpDeviceTensor *
nnp_stage_new_device_output (NnpStage *stage, int i, GError **error)
{
  const NnpValue *v;

  g_return_val_if_fail (stage != NULL && i >= 0 && i < stage->n_outputs, NULL);
  v = nnp_graph_value (stage->graph, stage->outputs[i]);
  return nnp_device_tensor_new (stage->device, v->dtype, &v->shape, error);
}

static gboolean
check_device_io (NnpStage *stage, const char *what, int n, const int *ids,
                 NnpTensor *const *host, NnpDeviceTensor *const *dev, GError **error)
{
  for (int i = 0; i < n; i++) {
    const NnpValue *v = nnp_graph_value (stage->graph, ids[i]);
    NnpTensor *h = host ? host[i] : NULL;
    NnpDeviceTensor *d = dev ? dev[i] : NULL;

    if ((h == NULL) == (d == NULL)) {
      g_set_error (error, NNP_ERROR, NNP_ERROR_INVALID, "%s '%s': give either a host or a "
                   "device tensor", what, v->name);
      return FALSE;
    }
    if (h && !check_tensor (what, v, h, error))
      return FALSE;
  }
  return TRUE;
}

gboolean
nnp_stage_run_device (NnpStage *stage, NnpTensor *const *inputs,
                      NnpDeviceTensor *const *device_inputs, NnpTensor *const *outputs,
                      NnpDeviceTensor *const *device_outputs, GError **error)
{
  g_autoptr (GPtrArray) tmp = NULL;
  g_autofree NnpTensor **hin = NULL, **hout = NULL;
  gboolean ok;

  g_return_val_if_fail (stage != NULL, FALSE);
  if (!check_device_io (stage, "input", stage->n_inputs, stage->inputs, inputs, device_inputs,
                        error)
      || !check_device_io (stage, "output", stage->n_outputs, stage->outputs, outputs,
                           device_outputs, error))
    return FALSE;
#ifdef NNP_HAVE_OPENCL
  if (stage->ocl)
    return nnp_ocl_exec_run (stage->ocl, inputs, device_inputs, outputs, device_outputs, error);
#endif
  /* CPU stage: device tensors cross through host copies (one each) */
  tmp = g_ptr_array_new_with_free_func ((GDestroyNotify) nnp_tensor_unref);
  hin = g_new0 (NnpTensor *, MAX (stage->n_inputs, 1));
  hout = g_new0 (NnpTensor *, MAX (stage->n_outputs, 1));
  for (int i = 0; i < stage->n_inputs; i++) {
    hin[i] = inputs ? inputs[i] : NULL;
    if (hin[i] == NULL) {
      NnpDeviceTensor *d = device_inputs[i];
      hin[i] = nnp_tensor_new (d->dtype, &d->shape, error);
      if (hin[i] == NULL)
        return FALSE;
      g_ptr_array_add (tmp, hin[i]);
      if (!nnp_device_tensor_download (d, hin[i], error))
        return FALSE;
    }
  }
  for (int i = 0; i < stage->n_outputs; i++) {
    hout[i] = outputs ? outputs[i] : NULL;
    if (hout[i] == NULL) {
      hout[i] = nnp_stage_new_output (stage, i, error);
      if (hout[i] == NULL)
        return FALSE;
      g_ptr_array_add (tmp, hout[i]);
    }
  }
  ok = nnp_stage_run (stage, hin, hout, error);
  for (int i = 0; ok && i < stage->n_outputs; i++)
    if ((outputs == NULL || outputs[i] == NULL)
        && !nnp_device_tensor_upload (device_outputs[i], hout[i], error))
      ok = FALSE;
  return ok;
}
