/* CPU backend: a prepared list of nodes run on the host (the CPU stage of
 * lib/exec/stage.c, through the table in cpu-backend.c).
 *
 * Everything is decided in nnp_cpu_exec_new():
 *   - per node: the CPU kernel, its prepared state (packed weights) and the
 *     NnpCpuCall with pre-built input/output tensor views;
 *   - a static memory plan: every intermediate value lives at a fixed offset
 *     of one 64-byte-aligned arena (memplan.c); Reshape-like nodes whose
 *     input and output are both intermediates share one buffer and are
 *     skipped at run time; one scratch area (the largest workspace) is shared
 *     by all nodes;
 *   - the thread pool (owned by the stage).
 * nnp_cpu_exec_run() then only points the boundary views at the caller's
 * tensors and calls the kernels in order: no allocation, no lookup.
 *
 * One thread or several, measured (run_calibrating): with a pool of two or
 * more threads the first runs alternate between every node on the pool
 * and every node on the calling thread alone, each node timed, then try
 * the mix (each node the faster way); the fastest of the three as a whole
 * is kept.  Small nodes on tensors that fit a core's caches often run
 * faster on one thread: the hand-over to the pool and the halves of the
 * tensors moving between the cores' caches cost more than the second core
 * gives (BlazeFace at 2 threads ran slower than at 1).  Measured again
 * from runs 100 and 1000 (other work on the machine during the first runs
 * must not decide for good).  A stage whose second run on the pool takes
 * 50 ms or more stays there (three runs measured, not ten, and not
 * again).  Results do not
 * depend on it: each kernel computes the same sums in the same order
 * whatever the number of threads.
 *
 * Profiling (opt-in): with NNP_PROFILE set in the environment when the
 * stage is created, each kernel call is timed and nnp_cpu_exec_free() logs a
 * per-kind time table and the 25 slowest nodes (NNP_PROFILE=all: every
 * node, in the order they run) at INFO level in category "nnp-profile"
 * (`nnpipe run --profile` prints it). */
#include "backends/cpu/cpu-exec.h"
#include "backends/memplan.h"
#include "backends/cpu/threadpool.h"
#include "ops/conv-params.h"

#include <nnpipe/log.h>

#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct {
  const NnpNode *node;
  const NnpCpuKernel *kernel;
  gpointer state;
  NnpTensor **in;  /* node->n_inputs views (borrowed from exec->views) */
  NnpTensor **out; /* node->n_outputs views */
  NnpCpuCall call;
  gboolean skip; /* output aliases the input: nothing to do */
  int sum_value; /* Conv: the operand of a residual Add fused into it; MatMul: of a bias Add; or -1 */
  int sum_step; /* ... and the Add's step */
} Step;

struct _NnpCpuExec {
  NnpGraph *graph; /* owned ref */
  int n_steps;
  Step *steps;

  int n_inputs, n_outputs;
  NnpTensor **input_views;  /* borrowed from views */
  NnpTensor **output_views; /* borrowed from views; NULL for a forwarded value */

  NnpTensor **views; /* per value id (graph->values->len), owned refs or NULL */
  guint8 *arena;
  gsize arena_bytes;
  void *scratch;
  gsize scratch_bytes;
  NnpThreadPool *pool;

  /* per node on one thread or the pool: runs measured so far, and per step
   * the least nanoseconds on the pool [2 s] and on one thread [2 s + 1] */
  int calib_runs;
  gint64 *calib_ns;
  gint64 calib_total[3]; /* least whole run: on the pool, one thread, the mix */
  gint64 runs;           /* runs of the stage so far */
  gint64 next_calib;     /* the run at which to measure again */

  gboolean profile;     /* NNP_PROFILE was set at creation */
  gboolean profile_all; /* NNP_PROFILE=all: every node listed, in run order */
  int prof_runs;
  gint64 *prof_ns; /* per step: total nanoseconds over prof_runs */
};

/* runs that measure each node on the pool and on one thread, alternately,
 * then the mix of the faster ways */
#define CALIB_ALT 8
#define CALIB_RUNS 10
/* runs on the pool at least this long (the second one) end the measuring */
#define CALIB_LONG_NS (50 * 1000 * 1000)
/* measured again from runs 100 and 1000 (a machine busy with other work
 * during the first runs must not decide for good), then kept */
#define CALIB_AGAIN_1 100
#define CALIB_AGAIN_2 1000

static void
aligned_free (gpointer p)
{
  free (p);
}

/* b can be a column bias of MatMul mm's output v: a constant holding
 * one value per output column (shape [n], or [1, ..., 1, n] of at most
 * v's rank), mm without an activation of its own (the Add's comes after
 * the bias). */
static gboolean
column_bias (const NnpNode *mm, const NnpValue *v, const NnpValue *b, NnpValueRole b_role)
{
  int64_t n;

  if (mm->act != NNP_ACT_NONE || b_role != NNP_ROLE_CONST || b->constant == NULL
      || v->shape.rank < 1 || b->shape.rank < 1 || b->shape.rank > v->shape.rank)
    return FALSE;
  n = v->shape.dims[v->shape.rank - 1];
  if (b->shape.dims[b->shape.rank - 1] != n || nnp_tensor_numel (b->constant) != n)
    return FALSE;
  return TRUE;
}

/* Residual Adds to compute inside their Conv (Conv -> Add(conv, r) [->
 * activation], BlazeFace's and MobileNet's blocks): the Conv's output read
 * only by the Add, r of the same shape and ready before the Conv runs (a
 * stage input, a constant, or computed by an earlier step), both values and
 * the Add's output internal.  The Conv kernel then adds r while its tiles
 * are in cache, the Add's output takes over the Conv's output block and its
 * step is skipped: one pass over three tensors fewer.  The same for the
 * bias Add after a MatMul without an activation (MatMul -> Add(mm, b) [->
 * activation], every linear layer of a transformer): b a constant of the
 * output's last dimension, broadcast along it alone; the GEMM adds it as
 * column biases.  Fills sum_value / sum_step of the Conv and MatMul steps
 * and inplace[] (per step) for the memory plan. */
static void
find_sum_fusions (const NnpGraph *graph, const int *order, int n_nodes, const NnpValueRole *role,
                  Step *steps, int *inplace)
{
  g_autofree int *step_of = g_new (int, MAX (graph->nodes->len, 1));

  for (guint i = 0; i < graph->nodes->len; i++)
    step_of[i] = -1;
  for (int s = 0; s < n_nodes; s++) {
    step_of[order[s]] = s;
    steps[s].sum_value = -1;
    steps[s].sum_step = -1;
    inplace[s] = -1;
  }
  for (int sa = 0; sa < n_nodes; sa++) {
    const NnpNode *add = nnp_graph_node (graph, order[sa]);
    if (add->op != NNP_OP_ADD || add->n_inputs != 2 || add->n_outputs != 1 || add->outputs[0] < 0
        || role[add->outputs[0]] != NNP_ROLE_INTERNAL)
      continue;
    for (int k = 0; k < 2; k++) {
      int v = add->inputs[k], r = add->inputs[1 - k], sc;
      const NnpValue *vv, *rv, *ov = nnp_graph_value (graph, add->outputs[0]);
      const NnpNode *conv;
      if (v < 0 || r < 0 || v == r || role[v] != NNP_ROLE_INTERNAL)
        continue;
      vv = nnp_graph_value (graph, v);
      rv = nnp_graph_value (graph, r);
      if (vv->n_consumers != 1 || vv->producer < 0 || (sc = step_of[vv->producer]) < 0)
        continue;
      conv = nnp_graph_node (graph, vv->producer);
      if ((conv->op != NNP_OP_CONV && conv->op != NNP_OP_MAT_MUL) || conv->outputs[0] != v
          || steps[sc].sum_value >= 0 || vv->dtype != NNP_DTYPE_FLOAT32
          || rv->dtype != NNP_DTYPE_FLOAT32 || ov->dtype != NNP_DTYPE_FLOAT32
          || !nnp_shape_equal (&vv->shape, &ov->shape))
        continue;
      if (conv->op == NNP_OP_MAT_MUL ? !column_bias (conv, vv, rv, role[r])
                                     : !nnp_shape_equal (&vv->shape, &rv->shape))
        continue;
      if (role[r] == NNP_ROLE_INTERNAL
          && (rv->producer < 0 || step_of[rv->producer] < 0 || step_of[rv->producer] >= sc))
        continue;
      if (role[r] != NNP_ROLE_INTERNAL && role[r] != NNP_ROLE_INPUT && role[r] != NNP_ROLE_CONST)
        continue;
      steps[sc].sum_value = r;
      steps[sc].sum_step = sa;
      inplace[sa] = v;
      break;
    }
  }
}

NnpCpuExec *
nnp_cpu_exec_new (const NnpBackendStageInfo *info, GError **error)
{
  NnpGraph *graph = info->graph;
  const int *order = info->nodes;
  int n_nodes = info->n_nodes;
  guint n_values = graph->values->len;
  g_autofree NnpValueRole *role = g_new (NnpValueRole, MAX (n_values, 1));
  g_autofree int *forward_from = g_new (int, MAX (info->n_outputs, 1));
  NnpValuePlan plan = { 0 };
  g_autofree int *inplace = NULL;
  NnpCpuExec *stage;

  stage = g_new0 (NnpCpuExec, 1);
  stage->graph = nnp_graph_ref (graph);
  stage->views = g_new0 (NnpTensor *, MAX (n_values, 1));
  stage->n_inputs = info->n_inputs;
  stage->n_outputs = info->n_outputs;

  /* roles; boundary views: data pointers are set by nnp_cpu_exec_run() */
  nnp_value_roles (graph, order, n_nodes, info->inputs, info->n_inputs, info->outputs,
                   info->n_outputs, role, forward_from);
  stage->input_views = g_new0 (NnpTensor *, MAX (stage->n_inputs, 1));
  stage->output_views = g_new0 (NnpTensor *, MAX (stage->n_outputs, 1));
  for (int i = 0; i < stage->n_inputs; i++) {
    NnpValue *v = nnp_graph_value (graph, info->inputs[i]);
    stage->views[v->id] = nnp_tensor_new_wrapped (v->dtype, &v->shape, NULL, NULL, NULL);
    stage->input_views[i] = stage->views[v->id];
  }
  for (int i = 0; i < stage->n_outputs; i++) {
    NnpValue *v = nnp_graph_value (graph, info->outputs[i]);
    if (forward_from[i] >= 0)
      continue;
    stage->views[v->id] = nnp_tensor_new_wrapped (v->dtype, &v->shape, NULL, NULL, NULL);
    stage->output_views[i] = stage->views[v->id];
  }

  /* steps: kernels and prepared state */
  stage->n_steps = n_nodes;
  stage->steps = g_new0 (Step, MAX (n_nodes, 1));
  stage->profile = g_getenv ("NNP_PROFILE") != NULL;
  stage->profile_all = g_strcmp0 (g_getenv ("NNP_PROFILE"), "all") == 0;
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
  inplace = g_new (int, MAX (n_nodes, 1));
  find_sum_fusions (graph, order, n_nodes, role, stage->steps, inplace);
  nnp_value_plan_init (&plan, graph, order, n_nodes, role, FALSE, inplace);
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
                         (stage->scratch_bytes + NNP_MEM_ALIGN - 1) / NNP_MEM_ALIGN * NNP_MEM_ALIGN)
             != 0) {
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
      stage->views[id] =
          nnp_tensor_new_wrapped (v->dtype, &v->shape, stage->arena + b->offset, NULL, NULL);
      NNP_DEBUG ("nnp-exec",
                 "  %-40s %10" G_GSIZE_FORMAT " bytes at %10" G_GSIZE_FORMAT " steps %d..%d%s",
                 v->name, nnp_value_bytes (v), b->offset, b->first, b->last,
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
    /* a fused residual Add (the plan took the Add's step out) */
    if (step->sum_value >= 0 && stage->steps[step->sum_step].skip) {
      const NnpNode *add = stage->steps[step->sum_step].node;
      if (node->op == NNP_OP_MAT_MUL)
        step->call.bias = stage->views[step->sum_value];
      else
        step->call.sum = stage->views[step->sum_value];
      step->call.sum_act = add->act;
      step->call.sum_alpha = add->act_alpha;
      step->call.sum_beta = add->act_beta;
      NNP_DEBUG ("nnp-exec", "  Add '%s' computed in %s '%s'", add->name, node->op_type,
                 node->name);
    }
  }

  if (info->threads > 1 || info->n_cpus > 0) {
    stage->pool = nnp_thread_pool_new (MAX (info->threads, 1), info->cpus, info->n_cpus, error);
    if (stage->pool == NULL)
      goto fail;
  }
  for (int s = 0; s < n_nodes; s++)
    stage->steps[s].call.pool = stage->pool;
  stage->calib_runs = CALIB_RUNS;
  stage->next_calib = G_MAXINT64;
  if (nnp_thread_pool_get_n_threads (stage->pool) > 1) {
    stage->calib_ns = g_new (gint64, 2 * MAX (n_nodes, 1));
    stage->next_calib = 0;
  }

  NNP_DEBUG ("nnp-exec",
             "cpu: %d nodes, %d inputs, %d outputs, %d buffers, arena %" G_GSIZE_FORMAT
             " bytes, scratch %" G_GSIZE_FORMAT " bytes, %d threads",
             n_nodes, stage->n_inputs, stage->n_outputs, plan.n_blocks, stage->arena_bytes,
             stage->scratch_bytes, nnp_thread_pool_get_n_threads (stage->pool));
  nnp_value_plan_clear (&plan);
  return stage;

fail:
  nnp_value_plan_clear (&plan);
  nnp_cpu_exec_free (stage);
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

/* "Conv 3x3 s1 direct"-style kind of a step's node (newly allocated). */
static char *
profile_kind (const Step *step)
{
  static const char *const algo_names[] = { "gemm", "im2col", "depthwise", "direct" };
  const NnpNode *node = step->node;
  const NnpConvParams *p = node->params;
  const char *chosen = step->kernel->algo_name ? step->kernel->algo_name (step->state) : NULL;

  if ((node->op == NNP_OP_CONV || node->op == NNP_OP_CONV_TRANSPOSE) && p != NULL) {
    const char *algo = chosen                                            ? chosen
                       : node->op == NNP_OP_CONV_TRANSPOSE               ? "gemm+col2im"
                       : (int) p->algo < (int) G_N_ELEMENTS (algo_names) ? algo_names[p->algo]
                                                                         : "?";
    return g_strdup_printf ("%s %" G_GINT64_FORMAT "x%" G_GINT64_FORMAT " s%" G_GINT64_FORMAT " %s",
                            node->op_type, p->kernel[1], p->kernel[2], p->strides[2], algo);
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
log_profile (NnpCpuExec *stage)
{
  g_autoptr (GHashTable) index = g_hash_table_new (g_str_hash, g_str_equal);
  g_autofree ProfRow *rows = g_new0 (ProfRow, MAX (stage->n_steps, 1));
  g_autofree int *order = g_new (int, MAX (stage->n_steps, 1));
  int n_rows = 0;
  gint64 total = 0;
  double runs = stage->prof_runs;

  for (int s = 0; s < stage->n_steps; s++) {
    char *kind = profile_kind (&stage->steps[s]);
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
  int n_listed = stage->n_steps;
  if (!stage->profile_all) {
    g_qsort_with_data (order, stage->n_steps, sizeof (int), cmp_step_time, stage->prof_ns);
    n_listed = MIN (stage->n_steps, 25);
  }
  NNP_INFO ("nnp-profile", stage->profile_all ? "nodes:" : "slowest nodes:");
  for (int i = 0; i < n_listed; i++) {
    const Step *step = &stage->steps[order[i]];
    const NnpValue *out = step->node->n_outputs > 0 && step->node->outputs[0] >= 0
                              ? nnp_graph_value (stage->graph, step->node->outputs[0])
                              : NULL;
    g_autofree char *kind = profile_kind (step);
    g_autofree char *shape = out ? nnp_shape_to_string (&out->shape) : g_strdup ("-");
    double ns = stage->prof_ns[order[i]];
    NNP_INFO ("nnp-profile", "  %8.3f ms %7.1f GFLOP/s  %-20s %-32s -> %s", ns / runs / 1e6,
              ns > 0 ? nnp_node_flops (stage->graph, step->node) * runs / ns : 0.0,
              step->node->name, kind, shape);
  }
}

void
nnp_cpu_exec_free (NnpCpuExec *stage)
{
  if (stage == NULL)
    return;
  if (stage->profile && stage->prof_runs > 0)
    log_profile (stage);
  g_free (stage->prof_ns);
  g_free (stage->calib_ns);
  nnp_thread_pool_free (stage->pool);
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
  g_free (stage->input_views);
  g_free (stage->output_views);
  if (stage->arena)
    aligned_free (stage->arena);
  if (stage->scratch)
    aligned_free (stage->scratch);
  nnp_graph_unref (stage->graph);
  g_free (stage);
}

gsize
nnp_cpu_exec_get_arena_bytes (NnpCpuExec *stage)
{
  g_return_val_if_fail (stage != NULL, 0);
  return stage->arena_bytes;
}

/* One of the first CALIB_RUNS runs.  Runs 0 .. CALIB_ALT - 1: every node
 * on the pool (even runs) or on the calling thread (odd runs), each node
 * timed; then the mix (each node the faster way) for the remaining runs;
 * the whole run timed each time.  Kept from then on: whichever of the
 * three was fastest as a whole (a mix can lose to all-on-one-thread when
 * the nodes it splits hand the tensors between the cores' caches). */
static gboolean
run_calibrating (NnpCpuExec *stage, GError **error)
{
  int run = stage->calib_runs, mode = run < CALIB_ALT ? run % 2 : 2, best = 0, n_serial = 0;
  gboolean ok = TRUE;
  gint64 total = 0;

  for (int s = 0; s < stage->n_steps && ok; s++) {
    Step *step = &stage->steps[s];
    gint64 t0, ns;
    if (step->skip)
      continue;
    if (mode < 2)
      step->call.pool = mode ? NULL : stage->pool;
    t0 = now_ns ();
    ok = step->kernel->run (&step->call, error);
    ns = now_ns () - t0;
    total += ns;
    if (mode < 2)
      stage->calib_ns[2 * s + mode] = MIN (stage->calib_ns[2 * s + mode], ns);
    if (stage->profile)
      stage->prof_ns[s] += ns;
  }
  stage->prof_runs += ok && stage->profile;
  if (!ok)
    return FALSE;
  stage->calib_total[mode] = MIN (stage->calib_total[mode], total);
  if (run == 2 && stage->calib_total[0] >= CALIB_LONG_NS) {
    /* long runs (the first is cold: the second on the pool decides): the
     * hand-overs, microseconds a node, cannot matter */
    stage->calib_runs = CALIB_RUNS;
    stage->next_calib = G_MAXINT64;
    NNP_DEBUG ("nnp-exec", "cpu: every node on %d threads (a run of %.1f ms)",
               nnp_thread_pool_get_n_threads (stage->pool), stage->calib_total[0] / 1e6);
    for (int s = 0; s < stage->n_steps; s++)
      stage->steps[s].call.pool = stage->pool;
    return TRUE;
  }
  stage->calib_runs++;
  if (stage->calib_runs == CALIB_ALT) {
    /* the mix for the next runs */
    for (int s = 0; s < stage->n_steps; s++)
      stage->steps[s].call.pool =
          stage->calib_ns[2 * s + 1] < stage->calib_ns[2 * s] ? NULL : stage->pool;
  }
  if (stage->calib_runs < CALIB_RUNS)
    return TRUE;
  stage->next_calib = stage->runs < CALIB_AGAIN_1   ? CALIB_AGAIN_1
                      : stage->runs < CALIB_AGAIN_2 ? CALIB_AGAIN_2
                                                    : G_MAXINT64;
  for (int m = 1; m < 3; m++)
    if (stage->calib_total[m] < stage->calib_total[best])
      best = m;
  for (int s = 0; s < stage->n_steps; s++) {
    Step *step = &stage->steps[s];
    if (best < 2)
      step->call.pool = best ? NULL : stage->pool;
    n_serial += step->call.pool == NULL && !step->skip;
  }
  NNP_DEBUG ("nnp-exec",
             "cpu: %d nodes on one thread, the rest on %d (fastest measured: %s; "
             "runs of %.3f / %.3f / %.3f ms)",
             n_serial, nnp_thread_pool_get_n_threads (stage->pool),
             best == 0   ? "all on the pool"
             : best == 1 ? "all on one thread"
                         : "each node its way",
             stage->calib_total[0] / 1e6, stage->calib_total[1] / 1e6, stage->calib_total[2] / 1e6);
  return TRUE;
}

gboolean
nnp_cpu_exec_run (NnpCpuExec *stage, NnpTensor *const *inputs, NnpTensor *const *outputs,
                  GError **error)
{
  gboolean ok = TRUE;

  for (int i = 0; i < stage->n_inputs; i++)
    stage->input_views[i]->data = inputs[i]->data;
  for (int i = 0; i < stage->n_outputs; i++)
    if (stage->output_views[i])
      stage->output_views[i]->data = outputs[i]->data;

  /* a pinned stage pins the calling thread only while it runs */
  nnp_thread_pool_enter (stage->pool);
  if (G_UNLIKELY (stage->runs == stage->next_calib)) {
    /* measure (again) from this run on */
    stage->calib_runs = 0;
    for (int i = 0; i < 2 * stage->n_steps; i++)
      stage->calib_ns[i] = G_MAXINT64;
    for (int m = 0; m < 3; m++)
      stage->calib_total[m] = G_MAXINT64;
  }
  stage->runs++;
  if (G_UNLIKELY (stage->profile && stage->runs == 2)) {
    /* the profile leaves out the first run when there are more: it is cold
     * (the arena's and scratch's pages touched for the first time) and
     * would weigh on the nodes with the largest tensors */
    memset (stage->prof_ns, 0, MAX (stage->n_steps, 1) * sizeof (gint64));
    stage->prof_runs = 0;
  }
  if (G_UNLIKELY (stage->calib_runs < CALIB_RUNS)) {
    ok = run_calibrating (stage, error);
  } else if (G_UNLIKELY (stage->profile)) {
    for (int s = 0; s < stage->n_steps && ok; s++) {
      Step *step = &stage->steps[s];
      gint64 t0;
      if (step->skip)
        continue;
      t0 = now_ns ();
      ok = step->kernel->run (&step->call, error);
      stage->prof_ns[s] += now_ns () - t0;
    }
    stage->prof_runs += ok;
  } else {
    for (int s = 0; s < stage->n_steps && ok; s++) {
      Step *step = &stage->steps[s];
      if (step->skip)
        continue;
      ok = step->kernel->run (&step->call, error);
    }
  }
  nnp_thread_pool_leave (stage->pool);
  return ok;
}
