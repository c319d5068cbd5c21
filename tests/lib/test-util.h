/* Helpers for the unit tests: build small graphs by hand and run them. */
#pragma once

#include <nnpipe/nnpipe.h>

G_BEGIN_DECLS

/* A NULL-terminated list of value names for tu_add_node(): L ("x", "w"). */
#define L(...) ((const char *const[]){ __VA_ARGS__, NULL })

/* A graph input of that dtype and static shape (appended to graph->inputs). */
NnpValue *tu_add_input (NnpGraph *graph, const char *name, NnpDType dtype, int rank,
                        const int64_t *dims);
/* Mark a value as a graph output (created if absent). */
NnpValue *tu_add_output (NnpGraph *graph, const char *name);
/* A constant (weight) value; takes a reference to tensor. */
NnpValue *tu_add_constant (NnpGraph *graph, const char *name, NnpTensor *tensor);
/* A node by value names; NULL-terminated lists "in1", "in2", NULL. */
NnpNode *tu_add_node (NnpGraph *graph, const char *name, const char *op_type,
                      const char *const *inputs, const char *const *outputs);
/* A float32 tensor of the shape filled from values (numel floats). */
NnpTensor *tu_tensor_f32 (int rank, const int64_t *dims, const float *values);

/* Sort and specialise g (no input shapes) with those flags; asserts success;
 * returns the specialised graph (owned). */
NnpGraph *tu_specialize (NnpGraph *g, NnpSpecializeFlags flags);

/* Run every node of a specialised graph as one CPU stage with `threads`
 * threads; inputs in stage input order; returns outputs (owned) in stage
 * output order. */
GPtrArray *tu_run_stage (NnpStage *stage, NnpTensor *const *inputs);

G_END_DECLS
