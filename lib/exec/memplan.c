/* libnnpipe: static memory planner (see memplan.h).
 *
 * Greedy by size with best fit: blocks are placed largest first; each goes
 * into the smallest gap between already-placed blocks whose lifetimes
 * overlap with it, or after the highest of them when no gap fits. */
#include "exec/memplan.h"

#include <stdlib.h>

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
