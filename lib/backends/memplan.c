/* libnnpipe: static memory planner and value placement (see memplan.h).
 *
 * Greedy by size with best fit: blocks are placed largest first; each goes
 * into the smallest gap between already-placed blocks whose lifetimes
 * overlap with it, or after the highest of them when no gap fits. */
#include "backends/memplan.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
  gsize offset, end;
} Span;

static int
cmp_size_desc (const void *a, const void *b, void *data)
{
  const NnpMemBlock *blocks = data;
  const NnpMemBlock *x = &blocks[*(const int *) a], *y = &blocks[*(const int *) b];

  if (x->size != y->size)
    return x->size > y->size ? -1 : 1;
  if (x->first != y->first)
    return x->first < y->first ? -1 : 1;
  return *(const int *) a - *(const int *) b;
}

static int
cmp_span (const void *a, const void *b)
{
  const Span *x = a, *y = b;

  if (x->offset != y->offset)
    return x->offset < y->offset ? -1 : 1;
  return x->end < y->end ? -1 : (x->end > y->end);
}

gsize
nnp_mem_plan (NnpMemBlock *blocks, int n)
{
  g_autofree int *order = NULL;
  g_autofree gboolean *placed = NULL;
  g_autofree Span *spans = NULL;
  gsize peak = 0;

  if (n <= 0)
    return 0;
  order = g_new (int, n);
  placed = g_new0 (gboolean, n);
  spans = g_new (Span, n);
  for (int i = 0; i < n; i++) {
    order[i] = i;
    blocks[i].size = (blocks[i].size + NNP_MEM_ALIGN - 1) / NNP_MEM_ALIGN * NNP_MEM_ALIGN;
    /* skew: a block of 16 KiB or more takes 5 to 65 more cache lines (by its
     * index), so that blocks laid one after the other do not start at the
     * same address modulo 4 KiB.  Tensors of 160x160 or 64x64 floats are
     * whole multiples of 4 KiB; without the skew a kernel's input and output
     * often share their low 12 address bits, and the CPU then takes each
     * load for one that may alias the store just made to the other (and
     * both compete for the same L1 sets).  Measured on M-LSD large, 1
     * thread: its residual Adds 6.6-9.3 -> 1.7-2.4 ms a run, its 1x1
     * convolutions 18.5-21.9 -> 12.9-16.7 ms. */
    if (blocks[i].size >= 16384)
      blocks[i].size += (gsize) (i % 13 + 1) * 5 * NNP_MEM_ALIGN;
  }
  qsort_r (order, n, sizeof (int), cmp_size_desc, blocks);

  for (int oi = 0; oi < n; oi++) {
    NnpMemBlock *b = &blocks[order[oi]];
    int n_spans = 0;
    gsize prev_end = 0, best = G_MAXSIZE, best_gap = G_MAXSIZE;

    for (int j = 0; j < n; j++) {
      const NnpMemBlock *o = &blocks[j];
      if (!placed[j] || o->last < b->first || o->first > b->last)
        continue;
      spans[n_spans].offset = o->offset;
      spans[n_spans].end = o->offset + o->size;
      n_spans++;
    }
    qsort (spans, n_spans, sizeof (Span), cmp_span);
    for (int s = 0; s < n_spans; s++) {
      if (spans[s].offset > prev_end) {
        gsize gap = spans[s].offset - prev_end;
        if (gap >= b->size && gap < best_gap) {
          best_gap = gap;
          best = prev_end;
        }
      }
      prev_end = MAX (prev_end, spans[s].end);
    }
    b->offset = best != G_MAXSIZE ? best : prev_end;
    placed[order[oi]] = TRUE;
    peak = MAX (peak, b->offset + b->size);
  }
  return peak;
}

/* ---------------------------------------------------------------- values of a stage */

gsize
nnp_value_bytes (const NnpValue *v)
{
  return (gsize) nnp_shape_numel (&v->shape) * nnp_dtype_size (v->dtype);
}

void
nnp_value_roles (const NnpGraph *graph, const int *nodes, int n_nodes, const int *inputs,
                 int n_inputs, const int *outputs, int n_outputs, NnpValueRole *role,
                 int *forward_from)
{
  memset (role, 0, sizeof (NnpValueRole) * graph->values->len);
  for (int i = 0; i < n_inputs; i++)
    role[inputs[i]] = NNP_ROLE_INPUT;
  for (int i = 0; i < n_outputs; i++) {
    forward_from[i] = -1;
    if (role[outputs[i]] == NNP_ROLE_INPUT) {
      for (int j = 0; j < n_inputs; j++)
        if (inputs[j] == outputs[i])
          forward_from[i] = j;
      continue;
    }
    role[outputs[i]] = NNP_ROLE_OUTPUT;
  }
  for (int s = 0; s < n_nodes; s++) {
    const NnpNode *node = nnp_graph_node (graph, nodes[s]);
    for (int k = 0; k < node->n_inputs; k++) {
      const NnpValue *v = nnp_node_input (graph, node, k);
      if (v && role[v->id] == NNP_ROLE_NONE)
        role[v->id] = v->constant ? NNP_ROLE_CONST : NNP_ROLE_INTERNAL;
    }
    for (int k = 0; k < node->n_outputs; k++) {
      const NnpValue *v = nnp_node_output (graph, node, k);
      if (v && role[v->id] == NNP_ROLE_NONE)
        role[v->id] = NNP_ROLE_INTERNAL;
    }
  }
}

static gboolean
is_alias_op (const NnpNode *node)
{
  switch (node->op) {
    case NNP_OP_RESHAPE:
    case NNP_OP_FLATTEN:
    case NNP_OP_SQUEEZE:
    case NNP_OP_UNSQUEEZE:
    case NNP_OP_IDENTITY: return node->n_outputs == 1;
    case NNP_OP_DROPOUT: return node->n_outputs == 1 || node->outputs[1] < 0;
    default: return FALSE;
  }
}

void
nnp_value_plan_init (NnpValuePlan *plan, const NnpGraph *graph, const int *nodes, int n_nodes,
                     const NnpValueRole *role, gboolean boundary, const int *inplace)
{
  guint n_values = graph->values->len;
  g_autofree int *first = g_new (int, MAX (n_values, 1));
  g_autofree int *last = g_new (int, MAX (n_values, 1));

  memset (plan, 0, sizeof (*plan));
  plan->buffer = g_new (int, MAX (n_values, 1));
  plan->block_of = g_new (int, MAX (n_values, 1));
  plan->blocks = g_new0 (NnpMemBlock, MAX (n_values, 1));
  plan->skip = g_new0 (gboolean, MAX (n_nodes, 1));

  for (guint id = 0; id < n_values; id++) {
    plan->buffer[id] = id;
    first[id] = -1;
    last[id] = -1;
    if (boundary && (role[id] == NNP_ROLE_INPUT || role[id] == NNP_ROLE_OUTPUT)) {
      first[id] = 0;
      last[id] = MAX (n_nodes - 1, 0);
    }
  }
  /* liveness by step; Reshape-like outputs share their input's buffer */
  for (int s = 0; s < n_nodes; s++) {
    const NnpNode *node = nnp_graph_node (graph, nodes[s]);
    int *buffer = plan->buffer;

    gboolean in_place = inplace && inplace[s] >= 0;

    if ((in_place || (is_alias_op (node) && node->n_inputs >= 1 && node->inputs[0] >= 0))
        && node->n_outputs >= 1 && node->outputs[0] >= 0) {
      int a = in_place ? inplace[s] : node->inputs[0], b = node->outputs[0];
      if (role[a] == NNP_ROLE_INTERNAL && role[b] == NNP_ROLE_INTERNAL
          && nnp_value_bytes (nnp_graph_value (graph, a))
                 == nnp_value_bytes (nnp_graph_value (graph, b))) {
        buffer[b] = buffer[a];
        plan->skip[s] = TRUE;
      }
    }
    for (int k = 0; k < node->n_outputs; k++) {
      int id = node->outputs[k];
      if (id < 0 || role[id] != NNP_ROLE_INTERNAL)
        continue;
      if (first[buffer[id]] < 0)
        first[buffer[id]] = s;
      last[buffer[id]] = MAX (last[buffer[id]], s);
    }
    for (int k = 0; k < node->n_inputs; k++) {
      int id = node->inputs[k];
      if (id < 0 || role[id] != NNP_ROLE_INTERNAL)
        continue;
      last[buffer[id]] = MAX (last[buffer[id]], s);
    }
  }
  for (guint id = 0; id < n_values; id++) {
    NnpMemBlock *b = &plan->blocks[plan->n_blocks];
    gboolean placed = role[id] == NNP_ROLE_INTERNAL
                      || (boundary && (role[id] == NNP_ROLE_INPUT || role[id] == NNP_ROLE_OUTPUT));

    plan->block_of[id] = -1;
    if (!placed || plan->buffer[id] != (int) id)
      continue;
    plan->block_of[id] = plan->n_blocks++;
    b->size = nnp_value_bytes (nnp_graph_value (graph, id));
    if (boundary)
      b->size = MAX (b->size, 1);
    b->first = MAX (first[id], 0);
    b->last = MAX (last[id], b->first);
  }
  plan->arena_bytes = nnp_mem_plan (plan->blocks, plan->n_blocks);
}

const NnpMemBlock *
nnp_value_plan_block (const NnpValuePlan *plan, int id)
{
  int k = plan->block_of[plan->buffer[id]];

  return k >= 0 ? &plan->blocks[k] : NULL;
}

void
nnp_value_plan_clear (NnpValuePlan *plan)
{
  g_free (plan->buffer);
  g_free (plan->block_of);
  g_free (plan->blocks);
  g_free (plan->skip);
  memset (plan, 0, sizeof (*plan));
}
