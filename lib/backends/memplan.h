/* libnnpipe internal: static memory planning of a stage's activations,
 * shared by the CPU executor (cpu/cpu-exec.c) and the OpenCL one (opencl/ocl-exec.c).
 *
 * Each block is one buffer live over the closed step interval [first, last].
 * nnp_mem_plan() assigns byte offsets in one arena so that blocks whose
 * intervals overlap never overlap in memory (greedy by size, best fit), and
 * returns the arena size.  Offsets and sizes are multiples of
 * NNP_MEM_ALIGN; blocks of 16 KiB or more are made a few cache lines
 * larger, a different number each, so that their starts spread over the
 * addresses modulo 4 KiB (memplan.c says why). */
#pragma once

#include <glib.h>
#include <nnpipe/graph.h>

G_BEGIN_DECLS

#define NNP_MEM_ALIGN 64

typedef struct {
  gsize size;      /* bytes (rounded up to NNP_MEM_ALIGN and skewed by the planner) */
  int first, last; /* live steps, first <= last */
  gsize offset;    /* out: byte offset in the arena */
} NnpMemBlock;

/* Plan blocks[0..n); returns the peak (arena bytes). */
gsize nnp_mem_plan (NnpMemBlock *blocks, int n);

/* How a stage uses each value of its graph. */
typedef enum {
  NNP_ROLE_NONE = 0, /* not touched by the stage's nodes */
  NNP_ROLE_CONST,    /* a constant read by a node */
  NNP_ROLE_INPUT,    /* stage input: the caller's tensor */
  NNP_ROLE_OUTPUT,   /* stage output: the caller's tensor (not a forwarded input) */
  NNP_ROLE_INTERNAL, /* produced and consumed inside the stage */
} NnpValueRole;

/* Bytes of a value of static shape. */
gsize nnp_value_bytes (const NnpValue *v);

/* Fills role[graph->values->len] for a stage running nodes[0..n_nodes)
 * (indices into graph->nodes) with that boundary, and forward_from[n_outputs]:
 * per output, the index of the stage input it repeats (forwarded), or -1.
 * The boundary must already be valid (stage.c checks it). */
void nnp_value_roles (const NnpGraph *graph, const int *nodes, int n_nodes, const int *inputs,
                      int n_inputs, const int *outputs, int n_outputs, NnpValueRole *role,
                      int *forward_from);

/* Where a stage's values live in its arena.  Reshape-like nodes whose input
 * and output are both internal share one block and are skipped at run time. */
typedef struct {
  int *buffer;         /* per value id: the value whose block it uses (itself or an alias) */
  int *block_of;       /* per value id: index in blocks of its own block, or -1 */
  NnpMemBlock *blocks; /* n_blocks, offsets planned */
  int n_blocks;
  gboolean *skip;    /* per step: the node only aliases its input */
  gsize arena_bytes; /* the peak */
} NnpValuePlan;

/* Plans the internal values of nodes[0..n_nodes) (run in that order).  With
 * `boundary`, stage inputs and outputs get blocks too, live over the whole
 * run, and every block at least one byte: the device executor stages host
 * boundary data there.  `inplace` (NULL, or per step): a value id whose
 * block the step's first output takes over (an executor that computes the
 * node inside an earlier one, e.g. a residual Add in its Conv's store; the
 * step is then skipped like a Reshape), or -1; taken only when both values
 * are internal and of one size.  Free with nnp_value_plan_clear(). */
void nnp_value_plan_init (NnpValuePlan *plan, const NnpGraph *graph, const int *nodes, int n_nodes,
                          const NnpValueRole *role, gboolean boundary, const int *inplace);
/* The block value `id` lives in (after aliasing), or NULL when it has none. */
const NnpMemBlock *nnp_value_plan_block (const NnpValuePlan *plan, int id);
void nnp_value_plan_clear (NnpValuePlan *plan);

G_END_DECLS
