/* libnnpipe internal: static memory planning of a stage's activations.
 *
 * Each block is one buffer live over the closed step interval [first, last].
 * nnp_mem_plan() assigns byte offsets in one arena so that blocks whose
 * intervals overlap never overlap in memory (greedy by size, best fit), and
 * returns the arena size.  Offsets and sizes are multiples of
 * NNP_MEM_ALIGN. */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

#define NNP_MEM_ALIGN 64

typedef struct {
  gsize size;      /* bytes (rounded up to NNP_MEM_ALIGN by the planner) */
  int first, last; /* live steps, first <= last */
  gsize offset;    /* out: byte offset in the arena */
} NnpMemBlock;

/* Plan blocks[0..n); returns the peak (arena bytes). */
gsize nnp_mem_plan (NnpMemBlock *blocks, int n);

G_END_DECLS
