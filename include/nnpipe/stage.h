/* nnpipe: a stage = a set of nodes of a specialised graph bound to one device,
 * prepared once and run many times.  A whole-model run is a one-stage plan.
 *
 * Lifecycle (as XNNPACK's create -> setup -> run):
 *   stage = nnp_stage_new (graph, nodes, n, &opts, &err);   // kernels chosen, weights
 *                                                           // packed, memory planned,
 *                                                           // threads created
 *   nnp_stage_run (stage, inputs, outputs, &err);           // no allocation, no lookup
 *   nnp_stage_free (stage);
 *
 * A stage's inputs are the values its nodes read that it does not produce
 * (and that are not constants); its outputs are the values it produces that
 * are read outside it or are graph outputs.  Without explicit lists the order
 * is: graph inputs/outputs first in graph order, then other values by id.
 * A value may be both an input and an output (it is forwarded: copied). */
#pragma once

#include <glib.h>
#include <nnpipe/error.h>
#include <nnpipe/graph.h>
#include <nnpipe/device.h>

G_BEGIN_DECLS

typedef struct _NnpStage NnpStage;

typedef struct {
  const char *device; /* a device spec (device.h); NULL = "cpu" */
  int threads;        /* intra-op threads owned by this stage; <= 0 means 1 */
  const int *cpus;    /* optional: pin thread i to cpus[i % n_cpus] */
  int n_cpus;
  /* Optional explicit boundary, value ids in the order the caller wants.
   * NULL = derive (see above).  Must list exactly the crossing values; an
   * explicit input list may also name values the nodes do not read (not
   * constants, not produced inside): they can then be listed as outputs too
   * and are forwarded (pass-through in a pipeline of stages). */
  const int *inputs;
  int n_inputs;
  const int *outputs;
  int n_outputs;
} NnpStageOptions;


/* Prepare nodes[0..n_nodes) of graph (node indices; NULL = all nodes) on a device.
 * The stage keeps a reference to graph.  Errors: NNP_ERROR_DEVICE (unknown
 * device), NNP_ERROR_UNSUPPORTED (an op the device cannot run, naming it),
 * NNP_ERROR_INVALID (non-static shapes, a bad node list). */
NnpStage *nnp_stage_new (NnpGraph *graph, const int *nodes, int n_nodes,
                         const NnpStageOptions *options, GError **error);
void nnp_stage_free (NnpStage *stage);

int nnp_stage_get_n_inputs (NnpStage *stage);
const NnpValue *nnp_stage_get_input (NnpStage *stage, int i);
int nnp_stage_get_n_outputs (NnpStage *stage);
const NnpValue *nnp_stage_get_output (NnpStage *stage, int i);
/* Bytes of the activation arena (the memory plan's peak). */
gsize nnp_stage_get_arena_bytes (NnpStage *stage);

/* Run once.  inputs[i] must be a tensor of input i's dtype and shape,
 * outputs[i] one of output i's (the caller allocates them, e.g. with
 * nnp_stage_new_output() or nnp_stage_new_device_output()).  A tensor may
 * live in host memory or in a device's memory (tensor.h): one in the memory
 * of the stage's device is used in place, any other crosses once (one
 * counted copy; two between two devices).  So an OpenCL stage copies host
 * inputs up and host outputs back, a CPU stage copies device inputs down
 * and device outputs up, and two stages of one OpenCL device exchange
 * device tensors without a copy.  Outputs are complete when this returns.
 * Safe to call from any one thread at a time. */
gboolean nnp_stage_run (NnpStage *stage, NnpTensor *const *inputs, NnpTensor *const *outputs,
                        GError **error);
/* Convenience: a new host tensor for output i (NULL and an error for an
 * output with a data-dependent shape). */
NnpTensor *nnp_stage_new_output (NnpStage *stage, int i, GError **error);

/* Data-dependent shapes.  A graph specialised with NNP_SPECIALIZE_DYNAMIC_TAIL
 * (specialize.h) may end in a tail whose output shapes need values known
 * only at run time (NonMaxSuppression over the network's boxes, NonZero of
 * a computed mask, TopK with a computed K...).  A stage of such a graph (of
 * all its nodes: it cannot be split in stages) runs the static head as any
 * stage, then specialises the tail with the head's values and runs it on
 * the host.  Its outputs that the tail makes are "dynamic": their value's
 * shape has rank -1, nnp_stage_new_output() and nnp_stage_run() refuse
 * them (NNP_ERROR_UNSUPPORTED naming the output and the node);
 * nnp_stage_run_alloc() runs the stage and gives every output as a new
 * tensor of the shape this run produced. */
gboolean nnp_stage_output_is_dynamic (NnpStage *stage, int i);
/* Run once; outputs[i] receives a new host tensor for output i (the caller
 * unrefs each).  Works on any stage. */
gboolean nnp_stage_run_alloc (NnpStage *stage, NnpTensor *const *inputs, NnpTensor **outputs,
                              GError **error);

/* The stage's device (borrowed; valid while the stage lives), from
 * options->device ("cpu", "opencl", "opencl:N", "opencl:NAME": device.h and
 * docs/opencl.md). */
NnpDevice *nnp_stage_get_device (NnpStage *stage);

G_END_DECLS
