/* CPU kernels of If, Loop and Scan (lib/ops/ops-control.c).
 *
 * `prepare` specialises each subgraph for the shapes that flow in (as the
 * infer function did) and makes a CPU executor for it (cpu-exec.c, one
 * thread), with every tensor the runs need: the formal inputs (iteration
 * number, condition, slices), two sets of loop-carried values used in turn,
 * and one tensor per subgraph output.  `run` only copies and calls the
 * executor.  Subgraph outputs that are constants, or inputs passed through,
 * are copied from there. */
#include "backends/cpu/cpu.h"
#include "backends/cpu/cpu-exec.h"
#include "ops/control-params.h"

#include <string.h>

/* One specialised subgraph and its executor. */
typedef struct {
  NnpGraph *g;
  NnpCpuExec *exec;
  int n_in;       /* executor inputs: the non-constant inputs of g */
  int *in_pos;    /* per executor input: its position among g's inputs */
  NnpTensor **in; /* per executor input: the tensor run() fills in (borrowed) */
  int n_formal;
  int *outer;       /* per input position >= n_formal: node input index */
  NnpTensor **outs; /* per output of g: owned tensor the executor writes */
  int *out_const;   /* per output: 1 constant, 2 an input passed through */
  int *out_from;    /* per output passed through: its input position */
} Sub;

typedef struct {
  Sub *sub[2]; /* If: else, then; Loop / Scan: sub[0] */
  Sub **iters; /* unrolled Loop: one body per iteration */
  int n_iters;
  NnpTensor **formal;   /* per formal input: owned tensor */
  NnpTensor **carry[2]; /* loop-carried / state values, two sets */
  int n_formal;
} ControlState;

static void
sub_free (Sub *s)
{
  if (s == NULL)
    return;
  if (s->exec)
    nnp_cpu_exec_free (s->exec);
  for (guint k = 0; s->g && s->outs && k < s->g->outputs->len; k++)
    if (s->outs[k])
      nnp_tensor_unref (s->outs[k]);
  if (s->g)
    nnp_graph_unref (s->g);
  g_free (s->in_pos);
  g_free (s->in);
  g_free (s->outer);
  g_free (s->outs);
  g_free (s->out_const);
  g_free (s->out_from);
  g_free (s);
}

static void
state_free (gpointer data)
{
  ControlState *st = data;

  if (st == NULL)
    return;
  for (int b = 0; b < 2; b++)
    sub_free (st->sub[b]);
  for (int i = 0; i < st->n_iters; i++)
    sub_free (st->iters[i]);
  g_free (st->iters);
  for (int k = 0; st->formal && k < st->n_formal; k++) {
    if (st->formal[k])
      nnp_tensor_unref (st->formal[k]);
    for (int b = 0; b < 2; b++)
      if (st->carry[b] && st->carry[b][k])
        nnp_tensor_unref (st->carry[b][k]);
  }
  g_free (st->formal);
  g_free (st->carry[0]);
  g_free (st->carry[1]);
  g_free (st);
}

static Sub *
sub_new (const NnpGraph *graph, const NnpNode *node, const NnpAttr *attr, const NnpDType *dt,
         const NnpShape *sh, NnpTensor *const *consts, GError **error)
{
  Sub *s = g_new0 (Sub, 1);
  g_autofree int *in_ids = NULL, *out_ids = NULL, *order = NULL;
  NnpBackendStageInfo info = { 0 };
  int n_out = 0;

  s->g = nnp_op_subgraph_specialize (graph, node, attr, dt, sh, consts, error);
  if (s->g == NULL)
    goto fail;
  s->n_formal = (int) attr->i;
  s->in_pos = g_new0 (int, MAX (s->g->inputs->len, 1));
  s->in = g_new0 (NnpTensor *, MAX (s->g->inputs->len, 1));
  s->outer = g_new0 (int, MAX (s->g->inputs->len, 1));
  in_ids = g_new0 (int, MAX (s->g->inputs->len, 1));
  for (guint k = 0; k < s->g->inputs->len; k++) {
    NnpValue *v = nnp_graph_value (s->g, g_array_index (s->g->inputs, int, k));
    s->outer[k] = -1;
    if ((int) k >= s->n_formal) {
      for (int j = 0; j < node->n_inputs; j++) {
        NnpValue *c = nnp_node_input (graph, node, j);
        if (c && strcmp (c->name, v->name) == 0)
          s->outer[k] = j;
      }
    }
    if (v->constant)
      continue;
    s->in_pos[s->n_in] = (int) k;
    in_ids[s->n_in++] = v->id;
  }
  s->outs = g_new0 (NnpTensor *, MAX (s->g->outputs->len, 1));
  s->out_const = g_new0 (int, MAX (s->g->outputs->len, 1));
  s->out_from = g_new0 (int, MAX (s->g->outputs->len, 1));
  out_ids = g_new0 (int, MAX (s->g->outputs->len, 1));
  for (guint k = 0; k < s->g->outputs->len; k++) {
    NnpValue *v = nnp_graph_value (s->g, g_array_index (s->g->outputs, int, k));
    s->outs[k] = nnp_tensor_new (v->dtype, &v->shape, error);
    if (s->outs[k] == NULL)
      goto fail;
    if (v->constant) {
      s->out_const[k] = 1;
      continue;
    }
    if (v->is_input) {
      s->out_const[k] = 2;
      for (guint j = 0; j < s->g->inputs->len; j++)
        if (g_array_index (s->g->inputs, int, j) == v->id)
          s->out_from[k] = (int) j;
      continue;
    }
    out_ids[n_out++] = v->id;
  }
  order = g_new0 (int, MAX (s->g->nodes->len, 1));
  for (guint i = 0; i < s->g->nodes->len; i++)
    order[i] = (int) i;
  info.graph = s->g;
  info.nodes = order;
  info.n_nodes = (int) s->g->nodes->len;
  info.inputs = in_ids;
  info.n_inputs = s->n_in;
  info.outputs = out_ids;
  info.n_outputs = n_out;
  info.threads = 1;
  s->exec = nnp_cpu_exec_new (&info, error);
  if (s->exec == NULL)
    goto fail;
  return s;
fail:
  sub_free (s);
  return NULL;
}

/* Run a subgraph whose formal inputs are `formal` (by position) and whose
 * outer values come from the node's inputs; outputs land in s->outs. */
static gboolean
sub_run (Sub *s, const NnpCpuCall *call, NnpTensor *const *formal, GError **error)
{
  NnpTensor *ins[64], *outs[64];
  NnpTensor **in = s->n_in <= 64 ? ins : g_new0 (NnpTensor *, s->n_in);
  NnpTensor **out = s->g->outputs->len <= 64 ? outs : g_new0 (NnpTensor *, s->g->outputs->len);
  int n_out = 0;
  gboolean ok;

  for (int i = 0; i < s->n_in; i++) {
    int k = s->in_pos[i];
    in[i] = k < s->n_formal ? formal[k] : call->inputs[s->outer[k]];
  }
  for (guint k = 0; k < s->g->outputs->len; k++)
    if (!s->out_const[k])
      out[n_out++] = s->outs[k];
  ok = nnp_cpu_exec_run (s->exec, in, out, error);
  for (guint k = 0; ok && k < s->g->outputs->len; k++) {
    const NnpTensor *src = NULL;
    if (s->out_const[k] == 1)
      src = nnp_graph_value (s->g, g_array_index (s->g->outputs, int, k))->constant;
    else if (s->out_const[k] == 2)
      src = s->out_from[k] < s->n_formal ? formal[s->out_from[k]]
                                         : call->inputs[s->outer[s->out_from[k]]];
    if (src && s->outs[k]->nbytes)
      memcpy (s->outs[k]->data, src->data, s->outs[k]->nbytes);
  }
  if (in != ins)
    g_free (in);
  if (out != outs)
    g_free (out);
  return ok;
}

static void
copy_tensor (NnpTensor *dst, const NnpTensor *src)
{
  if (dst && dst->nbytes)
    memcpy (dst->data, src->data, MIN (dst->nbytes, src->nbytes));
}

/* ---------------------------------------------------------------- If */

static gpointer
if_prepare (const NnpGraph *graph, const NnpNode *node, GError **error)
{
  const NnpControlParams *p = node->params;
  ControlState *st = g_new0 (ControlState, 1);
  const char *names[2] = { "else_branch", "then_branch" };

  for (int b = 0; b < 2; b++) {
    if (p->cond_const >= 0 && p->cond_const != b)
      continue;
    st->sub[b] = sub_new (graph, node, nnp_node_get_attr (node, names[b]), NULL, NULL, NULL, error);
    if (st->sub[b] == NULL) {
      state_free (st);
      return NULL;
    }
  }
  return st;
}

static gboolean
if_run (const NnpCpuCall *call, GError **error)
{
  ControlState *st = call->state;
  int b = ((const guint8 *) call->inputs[0]->data)[0] != 0;
  Sub *s = st->sub[b];

  if (s == NULL) {
    nnp_node_set_error (error, NNP_ERROR_INVALID, call->node,
                        "the condition differs from the constant it was specialised for");
    return FALSE;
  }
  if (!sub_run (s, call, NULL, error))
    return FALSE;
  for (int k = 0; k < call->node->n_outputs; k++)
    copy_tensor (call->outputs[k], s->outs[k]);
  return TRUE;
}

const NnpCpuKernel nnp_cpu_if = { .run = if_run, .prepare = if_prepare, .free_state = state_free };

/* ---------------------------------------------------------------- Loop */

static gboolean
alloc_formal (ControlState *st, int n, const NnpDType *dt, const NnpShape *sh, gboolean carry,
              int first_carry, GError **error)
{
  st->n_formal = n;
  st->formal = g_new0 (NnpTensor *, n);
  st->carry[0] = g_new0 (NnpTensor *, n);
  st->carry[1] = g_new0 (NnpTensor *, n);
  for (int k = 0; k < n; k++) {
    st->formal[k] = nnp_tensor_new (dt[k], &sh[k], error);
    if (st->formal[k] == NULL)
      return FALSE;
    for (int b = 0; carry && k >= first_carry && b < 2; b++) {
      st->carry[b][k] = nnp_tensor_new (dt[k], &sh[k], error);
      if (st->carry[b][k] == NULL)
        return FALSE;
    }
  }
  return TRUE;
}

static gpointer
loop_prepare (const NnpGraph *graph, const NnpNode *node, GError **error)
{
  const NnpControlParams *p = node->params;
  ControlState *st = g_new0 (ControlState, 1);
  int n = 2 + p->n_state;
  g_autofree NnpDType *dt = g_new0 (NnpDType, n);
  g_autofree NnpShape *sh = g_new0 (NnpShape, n);
  g_autofree NnpTensor **consts = g_new0 (NnpTensor *, n);
  NnpShape scalar = { .rank = 0 };

  dt[0] = NNP_DTYPE_INT64;
  dt[1] = NNP_DTYPE_BOOL;
  sh[0] = sh[1] = scalar;
  for (int k = 0; k < p->n_state; k++) {
    NnpValue *v = nnp_node_input (graph, node, 2 + k);
    dt[2 + k] = v->dtype;
    sh[2 + k] = v->shape;
  }
  if (!alloc_formal (st, n, dt, sh, TRUE, 2, error))
    goto fail;
  ((guint8 *) st->formal[1]->data)[0] = 1;
  consts[1] = st->formal[1]; /* the body runs only while its condition is true */
  if (p->unrolled) {
    st->iters = g_new0 (Sub *, MAX (p->trip, 1));
    for (int64_t i = 0; i < p->trip; i++) {
      g_autoptr (NnpTensor) it = nnp_tensor_new (NNP_DTYPE_INT64, &scalar, error);
      if (it == NULL)
        goto fail;
      ((int64_t *) it->data)[0] = i;
      consts[0] = it;
      st->iters[i] = sub_new (graph, node, nnp_node_get_attr (node, "body"), dt, sh, consts, error);
      consts[0] = NULL;
      if (st->iters[i] == NULL)
        goto fail;
      st->n_iters = (int) i + 1;
    }
    return st;
  }
  st->sub[0] = sub_new (graph, node, nnp_node_get_attr (node, "body"), dt, sh, consts, error);
  if (st->sub[0] == NULL)
    goto fail;
  return st;
fail:
  state_free (st);
  return NULL;
}

static gboolean
loop_run (const NnpCpuCall *call, GError **error)
{
  const NnpControlParams *p = call->node->params;
  ControlState *st = call->state;
  Sub *s = st->sub[0];
  const NnpTensor *m = call->node->n_inputs > 0 ? call->inputs[0] : NULL;
  NnpTensor *formal[2 + NNP_MAX_RANK * 8];
  const NnpTensor *c = call->node->n_inputs > 1 ? call->inputs[1] : NULL;
  int64_t trip = m ? ((const int64_t *) m->data)[0] : G_MAXINT64, i;
  gboolean cond = c ? ((const guint8 *) c->data)[0] != 0 : TRUE;
  int cur = 0;

  for (int k = 0; k < p->n_state; k++)
    copy_tensor (st->carry[0][2 + k], call->inputs[2 + k]);
  for (i = 0; i < trip && cond; i++) {
    NnpTensor **f = 2 + p->n_state <= (int) G_N_ELEMENTS (formal)
                        ? formal
                        : g_new0 (NnpTensor *, 2 + p->n_state);
    gboolean ok;

    if (p->iterations >= 0 && i >= p->iterations)
      break;
    if (p->unrolled) {
      if (i >= st->n_iters) {
        nnp_node_set_error (error, NNP_ERROR_INVALID, call->node,
                            "trip count %" G_GINT64_FORMAT
                            " differs from the %d it was specialised for",
                            trip, st->n_iters);
        if (f != formal)
          g_free (f);
        return FALSE;
      }
      s = st->iters[i];
    }
    ((int64_t *) st->formal[0]->data)[0] = i;
    f[0] = st->formal[0];
    f[1] = st->formal[1];
    for (int k = 0; k < p->n_state; k++)
      f[2 + k] = st->carry[cur][2 + k];
    ok = sub_run (s, call, f, error);
    if (f != formal)
      g_free (f);
    if (!ok)
      return FALSE;
    cond = ((const guint8 *) s->outs[0]->data)[0] != 0;
    for (int k = 0; k < p->n_state; k++)
      copy_tensor (st->carry[1 - cur][2 + k], s->outs[1 + k]);
    cur = 1 - cur;
    for (int k = 0; k < p->n_scan; k++) {
      NnpTensor *o = call->outputs[p->n_state + k], *src = s->outs[1 + p->n_state + k];
      if (o && src->nbytes)
        memcpy ((guint8 *) o->data + i * src->nbytes, src->data, src->nbytes);
    }
  }
  if (p->n_scan > 0 && i != p->iterations) {
    nnp_node_set_error (error, NNP_ERROR_INVALID, call->node,
                        "ran %" G_GINT64_FORMAT
                        " iterations, its scan outputs were sized for %" G_GINT64_FORMAT,
                        i, p->iterations);
    return FALSE;
  }
  for (int k = 0; k < p->n_state; k++)
    copy_tensor (call->outputs[k], st->carry[cur][2 + k]);
  return TRUE;
}

const NnpCpuKernel nnp_cpu_loop = { .run = loop_run,
                                    .prepare = loop_prepare,
                                    .free_state = state_free };

/* ---------------------------------------------------------------- Scan */

static gpointer
scan_prepare (const NnpGraph *graph, const NnpNode *node, GError **error)
{
  const NnpControlParams *p = node->params;
  const NnpAttr *body = nnp_node_get_attr (node, "body");
  ControlState *st = g_new0 (ControlState, 1);
  int n = (int) body->i;
  g_autofree NnpDType *dt = g_new0 (NnpDType, n);
  g_autofree NnpShape *sh = g_new0 (NnpShape, n);

  for (int k = 0; k < n; k++) {
    NnpValue *v = nnp_node_input (graph, node, k);
    dt[k] = v->dtype;
    sh[k] = v->shape;
    if (k >= p->n_state) {
      int a = p->in_axis[k - p->n_state];
      for (int d = a; d < v->shape.rank - 1; d++)
        sh[k].dims[d] = v->shape.dims[d + 1];
      sh[k].rank--;
    }
  }
  if (!alloc_formal (st, n, dt, sh, TRUE, 0, error))
    goto fail;
  st->sub[0] = sub_new (graph, node, body, dt, sh, NULL, error);
  if (st->sub[0] == NULL)
    goto fail;
  return st;
fail:
  state_free (st);
  return NULL;
}

/* Copy slice t along axis a between a full tensor and a slice tensor. */
static void
slice_copy (NnpTensor *full, NnpTensor *slice, int a, int64_t t, gboolean to_slice)
{
  gsize es = nnp_dtype_size (full->dtype);
  int64_t outer = 1, inner = 1, dim = full->shape.dims[a];

  for (int d = 0; d < a; d++)
    outer *= full->shape.dims[d];
  for (int d = a + 1; d < full->shape.rank; d++)
    inner *= full->shape.dims[d];
  for (int64_t o = 0; o < outer; o++) {
    guint8 *f = (guint8 *) full->data + ((o * dim + t) * inner) * es;
    guint8 *s = (guint8 *) slice->data + (o * inner) * es;
    if (to_slice)
      memcpy (s, f, inner * es);
    else
      memcpy (f, s, inner * es);
  }
}

static gboolean
scan_run (const NnpCpuCall *call, GError **error)
{
  const NnpControlParams *p = call->node->params;
  ControlState *st = call->state;
  Sub *s = st->sub[0];
  int cur = 0;

  for (int k = 0; k < p->n_state; k++)
    copy_tensor (st->carry[0][k], call->inputs[k]);
  for (int64_t t = 0; t < p->iterations; t++) {
    NnpTensor *f[2 * NNP_SCAN_MAX_IO + 64];
    if (st->n_formal > (int) G_N_ELEMENTS (f)) {
      nnp_node_set_error (error, NNP_ERROR_UNSUPPORTED, call->node, "too many inputs");
      return FALSE;
    }
    for (int k = 0; k < p->n_state; k++)
      f[k] = st->carry[cur][k];
    for (int j = 0; j < p->n_scan_in; j++) {
      int k = p->n_state + j;
      int64_t at = p->in_reverse[j] ? p->iterations - 1 - t : t;
      slice_copy ((NnpTensor *) call->inputs[k], st->formal[k], p->in_axis[j], at, TRUE);
      f[k] = st->formal[k];
    }
    if (!sub_run (s, call, f, error))
      return FALSE;
    for (int k = 0; k < p->n_state; k++)
      copy_tensor (st->carry[1 - cur][k], s->outs[k]);
    cur = 1 - cur;
    for (int j = 0; j < p->n_scan; j++) {
      NnpTensor *o = call->outputs[p->n_state + j];
      int64_t at = p->out_reverse[j] ? p->iterations - 1 - t : t;
      if (o)
        slice_copy (o, s->outs[p->n_state + j], p->out_axis[j], at, FALSE);
    }
  }
  for (int k = 0; k < p->n_state; k++)
    copy_tensor (call->outputs[k], st->carry[cur][k]);
  return TRUE;
}

const NnpCpuKernel nnp_cpu_scan = { .run = scan_run,
                                    .prepare = scan_prepare,
                                    .free_state = state_free };
