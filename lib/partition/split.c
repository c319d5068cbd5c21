/* libnnpipe: optimal splitting of a DAG into a linear pipeline of stages.
 *
 * A split into k stages is a chain of down-sets (ideals) of the DAG
 *   {} = I_0 < I_1 < ... < I_k = all nodes,   stage j = I_{j+1} \ I_j,
 * and every such chain gives convex stages with edges only going forward.
 * Stage j costs
 *   compute_j(I_{j+1}) - compute_j(I_j) + in_j(C(I_j)) + out_j(C(I_{j+1}))
 * where C(I) is the set of values crossing the cut after ideal I (see
 * include/nnpipe/plan.h) and compute_j the prefix sum of node times on stage
 * j's device (+inf for a node the device cannot run: such a node never
 * lands on that stage).  in_j / out_j are what stage j pays to receive /
 * send a cut buffer; they differ per cut because the devices differ (an
 * OpenCL stage pays the uploads of its inputs and the downloads of its
 * outputs, two stages on the same OpenCL device pay no copy).  Stage 0 also
 * pays xfer_graph_in for the graph inputs and the last stage xfer_graph_out
 * for the graph outputs (constants of the split).  The objective is the
 * bottleneck max_j cost_j.  A stage may carry a constant load (other work
 * on its core, e.g. a second model after the last stage), added to cost_j.
 *
 * Solver 1 ("ideals", after Tarnawski et al., NeurIPS 2020): enumerate the
 * ideal lattice level by level (ideal + one available node), up to a cap.
 * Then binary-search the bottleneck B: for a fixed B, R_j = ideals reachable
 * after j stages.  Because the stage cost splits into a term of the lower
 * ideal and a term of the upper one, I is in R_j iff
 *   compute_j(I) + out_j(I) - max{ compute_j(I') - in_j(I') : I' in R_{j-1}, I' < I,
 *                                  I \ I' supported on device j } <= B
 * and that max is a running maximum pushed up the covering edges of the
 * lattice (I' < I iff I' is reached from I by removing maximal nodes one at
 * a time; op support is checked per removed node).  O(k (ideals + edges)) per
 * probe.  Optimal on the DAG; memory limits are not modelled here.
 *
 * Solver 2 ("topo"): the same over the prefixes of the topological order
 * only (contiguous segments), O(k n^2), exact for that order, with memory
 * limits.  Used when the lattice is too large or a memory limit is set. */
#include "partition/partition.h"

#include <nnpipe/log.h>

#include <math.h>
#include <string.h>

#define DEFAULT_MAX_IDEALS 200000
#define CAT "nnp-partition"

gboolean
nnp_split_value_crosses (const NnpGraph *graph, const NnpValue *v, const int *stage_of, int k)
{
  gboolean avail, needed;

  if (v->constant)
    return FALSE;
  avail = v->is_input ? TRUE : (v->producer >= 0 && stage_of[v->producer] <= k);
  if (!avail)
    return FALSE;
  needed = v->is_output;
  for (int c = 0; c < v->n_consumers && !needed; c++)
    if (stage_of[v->consumers[c]] > k)
      needed = TRUE;
  (void) graph;
  return needed;
}

static double
xfer_ms (const NnpXferCost *x, int count, double bytes)
{
  if (x == NULL || count == 0)
    return 0.0;
  return x->overhead_ms + x->per_tensor_ms * count + x->ms_per_byte * bytes;
}

/* Count and bytes of the non-constant graph inputs (C_{-1}) and outputs (C_{n-1}). */
static void
graph_io (const NnpGraph *graph, const double *value_bytes, int *n_in, double *b_in, int *n_out,
          double *b_out)
{
  *n_in = *n_out = 0;
  *b_in = *b_out = 0.0;
  for (guint id = 0; id < graph->values->len; id++) {
    const NnpValue *v = nnp_graph_value (graph, id);
    if (v->constant)
      continue;
    if (v->is_input) {
      (*n_in)++;
      *b_in += value_bytes[id];
    }
    if (v->is_output) {
      (*n_out)++;
      *b_out += value_bytes[id];
    }
  }
}

static double
graph_in_ms (const NnpGraph *graph, const NnpSplitProblem *p)
{
  int ni, no;
  double bi, bo;

  if (p->xfer_graph_in == NULL)
    return 0.0;
  graph_io (graph, p->value_bytes, &ni, &bi, &no, &bo);
  return xfer_ms (p->xfer_graph_in, ni, bi);
}

static double
graph_out_ms (const NnpGraph *graph, const NnpSplitProblem *p)
{
  int ni, no;
  double bi, bo;

  if (p->xfer_graph_out == NULL)
    return 0.0;
  graph_io (graph, p->value_bytes, &ni, &bi, &no, &bo);
  return xfer_ms (p->xfer_graph_out, no, bo);
}

double
nnp_split_evaluate (const NnpGraph *graph, const NnpSplitProblem *p, const int *stage_of,
                    double *compute_ms, double *transfer_ms, double *total_ms,
                    int *bottleneck_stage)
{
  int k = p->n_stages, worst = -1;
  double best = -1.0;
  g_autofree int *count = g_new0 (int, MAX (k, 1));
  g_autofree double *bytes = g_new0 (double, MAX (k, 1));
  g_autofree double *comp = g_new0 (double, MAX (k, 1));

  for (int i = 0; i < p->n_nodes; i++)
    comp[stage_of[i]] += p->node_ms[(gsize) stage_of[i] * p->n_nodes + i];
  for (int c = 0; c + 1 < k; c++) {
    for (guint id = 0; id < graph->values->len; id++) {
      const NnpValue *v = nnp_graph_value (graph, id);
      if (nnp_split_value_crosses (graph, v, stage_of, c)) {
        count[c]++;
        bytes[c] += p->value_bytes[id];
      }
    }
  }
  for (int j = 0; j < k; j++) {
    double t = 0.0, total;
    if (j == 0)
      t += graph_in_ms (graph, p);
    if (j + 1 == k)
      t += graph_out_ms (graph, p);
    if (j > 0 && p->xfer_in)
      t += xfer_ms (&p->xfer_in[j - 1], count[j - 1], bytes[j - 1]);
    if (j + 1 < k && p->xfer_out)
      t += xfer_ms (&p->xfer_out[j], count[j], bytes[j]);
    total = comp[j] + t + (p->stage_load_ms ? p->stage_load_ms[j] : 0.0);
    if (compute_ms)
      compute_ms[j] = comp[j];
    if (transfer_ms)
      transfer_ms[j] = t;
    if (total_ms)
      total_ms[j] = total;
    if (total > best) {
      best = total;
      worst = j;
    }
  }
  if (bottleneck_stage)
    *bottleneck_stage = worst;
  return best;
}

/* ------------------------------------------------------------ shared */

typedef struct {
  int n;       /* nodes */
  int **preds; /* per node: producer indices of its non-constant inputs, -1 terminated */
} Dag;

static void
dag_init (Dag *d, const NnpGraph *graph)
{
  d->n = graph->nodes->len;
  d->preds = g_new0 (int *, MAX (d->n, 1));
  for (int i = 0; i < d->n; i++) {
    const NnpNode *node = nnp_graph_node (graph, i);
    int m = 0;
    d->preds[i] = g_new (int, node->n_inputs + 1);
    for (int q = 0; q < node->n_inputs; q++) {
      NnpValue *v = nnp_node_input (graph, node, q);
      if (v && !v->constant && v->producer >= 0)
        d->preds[i][m++] = v->producer;
    }
    d->preds[i][m] = -1;
  }
}

static void
dag_clear (Dag *d)
{
  for (int i = 0; i < d->n; i++)
    g_free (d->preds[i]);
  g_free (d->preds);
}

#define BIT_GET(b, i) (((b)[(i) >> 6] >> ((i) &63)) & 1)
#define BIT_SET(b, i) ((b)[(i) >> 6] |= (guint64) 1 << ((i) &63))

/* Crossing count / bytes of the cut after node set `in` (a bitset). */
static void
cut_of (const NnpGraph *graph, const double *value_bytes, const guint64 *in, int *count,
        double *bytes)
{
  *count = 0;
  *bytes = 0.0;
  for (guint id = 0; id < graph->values->len; id++) {
    const NnpValue *v = nnp_graph_value (graph, id);
    gboolean needed;
    if (v->constant)
      continue;
    if (!v->is_input && !(v->producer >= 0 && BIT_GET (in, v->producer)))
      continue;
    needed = v->is_output;
    for (int c = 0; c < v->n_consumers && !needed; c++)
      if (!BIT_GET (in, v->consumers[c]))
        needed = TRUE;
    if (needed) {
      (*count)++;
      *bytes += value_bytes[id];
    }
  }
}

static gboolean
check_problem (const NnpGraph *graph, const NnpSplitProblem *p, GError **error)
{
  if (p->n_stages < 1 || p->n_stages > p->n_nodes) {
    g_set_error (error, NNP_ERROR, NNP_ERROR_PLAN, "cannot split %d nodes into %d non-empty stages",
                 p->n_nodes, p->n_stages);
    return FALSE;
  }
  for (int i = 0; i < p->n_nodes; i++) {
    gboolean somewhere = FALSE;
    for (int j = 0; j < p->n_stages && !somewhere; j++)
      somewhere = isfinite (p->node_ms[(gsize) j * p->n_nodes + i]);
    if (!somewhere) {
      const NnpNode *node = nnp_graph_node (graph, i);
      g_set_error (error, NNP_ERROR, NNP_ERROR_PLAN,
                   "node '%s' (%s) is not supported by the device of any of the %d stages",
                   node->name, node->op_type, p->n_stages);
      return FALSE;
    }
  }
  return TRUE;
}

/* ------------------------------------------------------------ topological order */

gboolean
nnp_split_solve_topo (const NnpGraph *graph, const NnpSplitProblem *p, int *stage_of,
                      double *bottleneck, GError **error)
{
  int n = p->n_nodes, k = p->n_stages, W = (n + 63) / 64;
  g_autofree double *comp = NULL, *bytes = NULL, *mem = NULL, *dp = NULL;
  g_autofree int *bad = NULL, *count = NULL, *arg = NULL;
  g_autofree guint64 *bits = g_new0 (guint64, MAX (W, 1));
  double best;

  if (!check_problem (graph, p, error))
    return FALSE;
  /* prefix data: P_i = nodes [0, i) */
  comp = g_new0 (double, (gsize) k *(n + 1));
  bad = g_new0 (int, (gsize) k *(n + 1));
  mem = g_new0 (double, n + 1);
  bytes = g_new0 (double, n + 1);
  count = g_new0 (int, n + 1);
  for (int i = 0; i <= n; i++) {
    if (i > 0) {
      BIT_SET (bits, i - 1);
      for (int j = 0; j < k; j++) {
        double ms = p->node_ms[(gsize) j * n + i - 1];
        gboolean unsup = !isfinite (ms);
        comp[(gsize) j * (n + 1) + i] = comp[(gsize) j * (n + 1) + i - 1] + (unsup ? 0 : ms);
        bad[(gsize) j * (n + 1) + i] = bad[(gsize) j * (n + 1) + i - 1] + unsup;
      }
      mem[i] = mem[i - 1] + (p->node_mem ? p->node_mem[i - 1] : 0.0);
    }
    cut_of (graph, p->value_bytes, bits, &count[i], &bytes[i]);
  }

  dp = g_new (double, (gsize) k *(n + 1));
  arg = g_new (int, (gsize) k *(n + 1));
  for (gsize x = 0; x < (gsize) k * (n + 1); x++) {
    dp[x] = INFINITY;
    arg[x] = -1;
  }
  for (int j = 0; j < k; j++) {
    double ends =
        (j == 0 ? graph_in_ms (graph, p) : 0.0) + (j + 1 == k ? graph_out_ms (graph, p) : 0.0);
    for (int i = j + 1; i <= n; i++) {
      double out = j + 1 < k && p->xfer_out ? xfer_ms (&p->xfer_out[j], count[i], bytes[i]) : 0;
      for (int i0 = j; i0 < i; i0++) {
        double prev = j == 0 ? (i0 == 0 ? 0.0 : INFINITY) : dp[(gsize) (j - 1) * (n + 1) + i0];
        double in, c, v;
        if (!isfinite (prev))
          continue;
        if (bad[(gsize) j * (n + 1) + i] != bad[(gsize) j * (n + 1) + i0])
          continue;
        if (p->mem_limit > 0 && mem[i] - mem[i0] > p->mem_limit)
          continue;
        in = j > 0 && p->xfer_in ? xfer_ms (&p->xfer_in[j - 1], count[i0], bytes[i0]) : 0;
        c = comp[(gsize) j * (n + 1) + i] - comp[(gsize) j * (n + 1) + i0] + in + out + ends
            + (p->stage_load_ms ? p->stage_load_ms[j] : 0.0);
        v = MAX (prev, c);
        if (v < dp[(gsize) j * (n + 1) + i]) {
          dp[(gsize) j * (n + 1) + i] = v;
          arg[(gsize) j * (n + 1) + i] = i0;
        }
      }
    }
  }
  best = dp[(gsize) (k - 1) * (n + 1) + n];
  if (!isfinite (best)) {
    g_set_error (
        error, NNP_ERROR, NNP_ERROR_PLAN,
        "no split of the topological order into %d stages satisfies the device op support%s", k,
        p->mem_limit > 0 ? " and the memory limit" : "");
    return FALSE;
  }
  for (int j = k - 1, i = n; j >= 0; j--) {
    int i0 = arg[(gsize) j * (n + 1) + i];
    for (int x = i0; x < i; x++)
      stage_of[x] = j;
    i = i0;
  }
  *bottleneck = nnp_split_evaluate (graph, p, stage_of, NULL, NULL, NULL, NULL);
  NNP_DEBUG (CAT, "topo DP: %d nodes, %d stages, bottleneck %.4f ms", n, k, *bottleneck);
  return TRUE;
}

/* ------------------------------------------------------------ ideal lattice */

typedef struct {
  int W;
  int n_ideals, cap;
  guint64 *bits; /* n_ideals * W */
  int *table;    /* open addressing: ideal index + 1, 0 = empty */
  guint mask;
  GArray *edges; /* Edge: child, parent, node (in generation order) */
} Lattice;

typedef struct {
  int child, parent, node;
} Edge;

static guint
hash_bits (const guint64 *b, int W)
{
  guint64 h = 1469598103934665603ull;
  for (int w = 0; w < W; w++) {
    h ^= b[w];
    h *= 1099511628211ull;
    h ^= h >> 29;
  }
  return (guint) (h ^ (h >> 32));
}

/* Index of the ideal `b`, inserting it; -1 past the cap. */
static int
lattice_find_or_add (Lattice *L, const guint64 *b)
{
  guint slot = hash_bits (b, L->W) & L->mask;

  for (;;) {
    int e = L->table[slot];
    if (e == 0)
      break;
    if (memcmp (&L->bits[(gsize) (e - 1) * L->W], b, sizeof (guint64) * L->W) == 0)
      return e - 1;
    slot = (slot + 1) & L->mask;
  }
  if (L->n_ideals >= L->cap)
    return -1;
  memcpy (&L->bits[(gsize) L->n_ideals * L->W], b, sizeof (guint64) * L->W);
  L->table[slot] = ++L->n_ideals;
  return L->n_ideals - 1;
}

static gboolean
lattice_build (Lattice *L, const Dag *d, int cap)
{
  int n = d->n;
  int start = 0, end;
  g_autofree guint64 *tmp = NULL;
  guint size = 1;

  L->W = MAX ((n + 63) / 64, 1);
  L->cap = cap;
  while (size < (guint) cap * 2u + 2u)
    size <<= 1;
  L->mask = size - 1;
  L->table = g_new0 (int, size);
  L->bits = g_new0 (guint64, (gsize) cap * L->W + L->W);
  L->edges = g_array_new (FALSE, FALSE, sizeof (Edge));
  tmp = g_new (guint64, L->W);
  memset (tmp, 0, sizeof (guint64) * L->W);
  lattice_find_or_add (L, tmp);
  end = 1;
  while (start < end) {
    for (int I = start; I < end; I++) {
      for (int v = 0; v < n; v++) {
        const guint64 *bi = &L->bits[(gsize) I * L->W];
        gboolean ok = !BIT_GET (bi, v);
        int c;
        for (const int *q = d->preds[v]; ok && *q >= 0; q++)
          ok = BIT_GET (bi, *q);
        if (!ok)
          continue;
        memcpy (tmp, bi, sizeof (guint64) * L->W);
        BIT_SET (tmp, v);
        c = lattice_find_or_add (L, tmp);
        if (c < 0)
          return FALSE;
        g_array_append_val (L->edges, ((Edge){ c, I, v }));
      }
    }
    start = end;
    end = L->n_ideals;
  }
  return TRUE;
}

static void
lattice_clear (Lattice *L)
{
  g_free (L->table);
  g_free (L->bits);
  if (L->edges)
    g_array_unref (L->edges);
}

typedef struct {
  const NnpSplitProblem *p;
  Lattice *L;
  int full;           /* index of the full set */
  double *comp;       /* [j * n_ideals + I] */
  double *tin, *tout; /* [j * n_ideals + I] */
  double *own, *hs;
  int *hsarg;
  gboolean *reach, *reach_next;
  int *back; /* [j * n_ideals + I] */
} Probe;

/* Is bottleneck B reachable?  Fills back[] for reconstruction. */
static gboolean
probe (Probe *pr, double B)
{
  const NnpSplitProblem *p = pr->p;
  int N = pr->L->n_ideals, k = p->n_stages, n = p->n_nodes;
  const Edge *edges = (const Edge *) pr->L->edges->data;
  guint n_edges = pr->L->edges->len;

  for (int I = 0; I < N; I++)
    pr->reach[I] = I == 0;
  for (int j = 0; j < k; j++) {
    const double *comp = &pr->comp[(gsize) j * N];
    const double *tin = &pr->tin[(gsize) j * N], *tout = &pr->tout[(gsize) j * N];
    int *back = &pr->back[(gsize) j * N];
    gboolean any = FALSE;
    double load = p->stage_load_ms ? p->stage_load_ms[j] : 0.0;

    for (int I = 0; I < N; I++) {
      pr->own[I] = pr->reach[I] ? comp[I] - tin[I] : -INFINITY;
      pr->hs[I] = -INFINITY;
      pr->hsarg[I] = -1;
    }
    for (guint e = 0; e < n_edges; e++) {
      const Edge *ed = &edges[e];
      double hp;
      int ap;
      if (!isfinite (p->node_ms[(gsize) j * n + ed->node]))
        continue;
      if (pr->own[ed->parent] >= pr->hs[ed->parent]) {
        hp = pr->own[ed->parent];
        ap = ed->parent;
      } else {
        hp = pr->hs[ed->parent];
        ap = pr->hsarg[ed->parent];
      }
      if (hp > pr->hs[ed->child]) {
        pr->hs[ed->child] = hp;
        pr->hsarg[ed->child] = ap;
      }
    }
    for (int I = 0; I < N; I++) {
      gboolean r = isfinite (pr->hs[I]) && comp[I] + tout[I] - pr->hs[I] + load <= B;
      if (j + 1 == k && I != pr->full)
        r = FALSE;
      pr->reach_next[I] = r;
      back[I] = r ? pr->hsarg[I] : -1;
      any |= r;
    }
    memcpy (pr->reach, pr->reach_next, sizeof (gboolean) * N);
    if (!any)
      return FALSE;
  }
  return pr->reach[pr->full];
}

static void
reconstruct (Probe *pr, int *stage_of)
{
  int N = pr->L->n_ideals, W = pr->L->W;
  int I = pr->full;

  for (int j = pr->p->n_stages - 1; j >= 0; j--) {
    int I0 = pr->back[(gsize) j * N + I];
    const guint64 *a = &pr->L->bits[(gsize) I * W], *b = &pr->L->bits[(gsize) I0 * W];
    for (int v = 0; v < pr->p->n_nodes; v++)
      if (BIT_GET (a, v) && !BIT_GET (b, v))
        stage_of[v] = j;
    I = I0;
  }
}

gboolean
nnp_split_solve_ideals (const NnpGraph *graph, const NnpSplitProblem *p, int *stage_of,
                        double *bottleneck, gboolean *too_many, GError **error)
{
  Dag d;
  Lattice L = { 0 };
  Probe pr = { 0 };
  int k = p->n_stages, n = p->n_nodes, N;
  int cap = p->max_ideals > 0 ? p->max_ideals : DEFAULT_MAX_IDEALS;
  g_autofree int *cand = NULL;
  double lo = 0.0, hi;
  gboolean ok = FALSE;
  int iters = 0;

  *too_many = FALSE;
  if (!check_problem (graph, p, error))
    return FALSE;
  dag_init (&d, graph);
  if (!lattice_build (&L, &d, cap)) {
    NNP_DEBUG (CAT, "ideal lattice exceeds %d ideals", cap);
    *too_many = TRUE;
    goto out;
  }
  N = L.n_ideals;
  NNP_DEBUG (CAT, "ideal lattice: %d ideals, %u covering edges (%d nodes)", N, L.edges->len, n);
  pr.p = p;
  pr.L = &L;
  pr.full = N - 1;
  pr.comp = g_new0 (double, (gsize) k *N);
  pr.tin = g_new0 (double, (gsize) k *N);
  pr.tout = g_new0 (double, (gsize) k *N);
  pr.own = g_new (double, N);
  pr.hs = g_new (double, N);
  pr.hsarg = g_new (int, N);
  pr.reach = g_new (gboolean, N);
  pr.reach_next = g_new (gboolean, N);
  pr.back = g_new (int, (gsize) k *N);
  for (guint e = 0; e < L.edges->len; e++) {
    const Edge *ed = &g_array_index (L.edges, Edge, e);
    for (int j = 0; j < k; j++) {
      double ms = p->node_ms[(gsize) j * n + ed->node];
      /* every ideal is reached once through its first edge: set from it */
      pr.comp[(gsize) j * N + ed->child] =
          pr.comp[(gsize) j * N + ed->parent] + (isfinite (ms) ? ms : 0.0);
    }
  }
  {
    /* the graph-input / graph-output copies are constants of stage 0 /
     * stage k-1: stage 0 always starts at the empty ideal and stage k-1
     * always ends at the full one, so they ride on tin / tout */
    double gin = graph_in_ms (graph, p), gout = graph_out_ms (graph, p);
    for (int I = 0; I < N; I++) {
      int count;
      double bytes;
      cut_of (graph, p->value_bytes, &L.bits[(gsize) I * L.W], &count, &bytes);
      for (int j = 0; j < k; j++) {
        pr.tin[(gsize) j * N + I] =
            j > 0 && p->xfer_in ? xfer_ms (&p->xfer_in[j - 1], count, bytes) : 0.0;
        pr.tout[(gsize) j * N + I] =
            j + 1 < k && p->xfer_out ? xfer_ms (&p->xfer_out[j], count, bytes) : 0.0;
        if (j == 0)
          pr.tin[(gsize) j * N + I] += gin;
        if (j + 1 == k)
          pr.tout[(gsize) j * N + I] += gout;
      }
    }
  }

  cand = g_new (int, n);
  if (!probe (&pr, G_MAXDOUBLE)) {
    g_set_error (error, NNP_ERROR, NNP_ERROR_PLAN,
                 "no split into %d stages satisfies the device op support", k);
    goto out;
  }
  reconstruct (&pr, stage_of);
  hi = nnp_split_evaluate (graph, p, stage_of, NULL, NULL, NULL, NULL);
  while (hi - lo > 1e-12 * MAX (hi, 1e-300) && iters++ < 200) {
    double mid = lo + (hi - lo) / 2, e;
    if (mid <= lo || mid >= hi)
      break;
    if (probe (&pr, mid)) {
      reconstruct (&pr, cand);
      e = nnp_split_evaluate (graph, p, cand, NULL, NULL, NULL, NULL);
      if (e <= hi) {
        memcpy (stage_of, cand, sizeof (int) * n);
        hi = e;
      }
      hi = MIN (hi, mid);
    } else {
      lo = mid;
    }
  }
  *bottleneck = nnp_split_evaluate (graph, p, stage_of, NULL, NULL, NULL, NULL);
  NNP_DEBUG (CAT, "ideal DP: %d stages, bottleneck %.4f ms after %d probes", k, *bottleneck, iters);
  ok = TRUE;

out:
  g_free (pr.comp);
  g_free (pr.tin);
  g_free (pr.tout);
  g_free (pr.own);
  g_free (pr.hs);
  g_free (pr.hsarg);
  g_free (pr.reach);
  g_free (pr.reach_next);
  g_free (pr.back);
  lattice_clear (&L);
  dag_clear (&d);
  return ok;
}

gboolean
nnp_split_solve (const NnpGraph *graph, const NnpSplitProblem *p, int *stage_of, double *bottleneck,
                 const char **method, GError **error)
{
  gboolean too_many = FALSE;

  if (p->mem_limit > 0) {
    NNP_DEBUG (CAT, "memory limit %.0f bytes per stage: using the topological-order DP",
               p->mem_limit);
  } else {
    GError *err = NULL;
    if (nnp_split_solve_ideals (graph, p, stage_of, bottleneck, &too_many, &err)) {
      *method = "ideals";
      return TRUE;
    }
    if (!too_many) {
      g_propagate_error (error, err);
      return FALSE;
    }
    NNP_DEBUG (CAT, "too many ideals: falling back to the topological-order DP");
  }
  *method = "topo";
  return nnp_split_solve_topo (graph, p, stage_of, bottleneck, error);
}
