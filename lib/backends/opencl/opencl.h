/* libnnpipe internal: the OpenCL backend.
 *
 * Pieces (one file each):
 *   ocl-device.c   platform/device selection, the process-wide refcounted
 *                  registry (one context + in-order queue per device), the
 *                  per-device weight cache
 *   ocl-program.c  programs from the embedded kernels/NAME.cl files, built once per
 *                  device and cached on disk as binaries
 *   ocl-buffer.c   allocations, host <-> device copies and their counters
 *   ocl-kernels.c  the kernel table (generated from op-list.h), the supports()
 *                  query and the helpers of the launch code (ocl-ops.h)
 *   ocl-<family>.c per-op launch code by op family, as the CPU backend's
 *                  cpu-<family>.c (list in ocl-ops.h)
 *   ocl-exec.c     a prepared list of nodes on one device: memory plan in
 *                  one device arena, boundary values in caller buffers
 *
 * Device memory locations are (cl_mem, byte offset); kernels take a buffer
 * and an element offset per tensor, so no sub-buffers are needed. */
#pragma once

#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>

#include <nnpipe/device.h>
#include <nnpipe/graph.h>
#include <nnpipe/error.h>

#include "graph/graph-edit.h"

G_BEGIN_DECLS

/* Embedded sources (generated ocl-sources.c by embed-cl.py): every program
 * is the prelude followed by one kernel file. */
extern const char nnp_ocl_prelude[];
typedef struct {
  const char *name; /* "conv.cl" */
  const char *text;
} NnpOclSource;
extern const NnpOclSource nnp_ocl_sources[];
extern const int nnp_ocl_n_sources;

typedef struct _NnpOclDevice NnpOclDevice;
struct _NnpOclDevice {
  char *name; /* "opencl:0 (device, platform)" */
  char *device_name;
  char *driver_version;
  int index; /* global device index */
  cl_platform_id platform;
  cl_device_id device;
  cl_context context;
  cl_command_queue queue; /* in-order, shared by every stage */
  size_t max_work_group;
  cl_ulong max_alloc;
  cl_uint mem_align; /* CL_DEVICE_MEM_BASE_ADDR_ALIGN in bytes */

  /*< private >*/
  GMutex lock;          /* programs, weights */
  cl_program *programs; /* per embedded source (index), lazily built */
  GHashTable *weights;  /* NnpTensor* (ref held) -> cl_mem */
  gint ref_count;
};

/* Registry (ocl-device.c).  spec: "opencl", "opencl:N" or "opencl:NAME". */
NnpOclDevice *nnp_ocl_device_open (const char *spec, GError **error);
NnpOclDevice *nnp_ocl_device_ref (NnpOclDevice *dev);
void nnp_ocl_device_unref (NnpOclDevice *dev);
/* The device copy of a constant tensor, uploaded on first use and kept for
 * the device's lifetime.  Borrowed. */
cl_mem nnp_ocl_device_get_weight (NnpOclDevice *dev, NnpTensor *tensor, GError **error);

/* Programs (ocl-program.c).  A new kernel object (caller releases it) for
 * `kernel` of source `file` ("conv.cl"); builds (or loads from the disk cache)
 * the program on first use. */
cl_kernel nnp_ocl_create_kernel (NnpOclDevice *dev, const char *file, const char *kernel,
                                 GError **error);
void nnp_ocl_release_programs (NnpOclDevice *dev);
/* "CL_OUT_OF_RESOURCES" ... */
const char *nnp_ocl_error_name (cl_int err);

/* Buffers (ocl-buffer.c) */
cl_mem nnp_ocl_alloc (NnpOclDevice *dev, gsize bytes, const char *what, GError **error);
/* Blocking host -> device / device -> host copies; `count` adds them to the
 * activation copy counters. */
gboolean nnp_ocl_write (NnpOclDevice *dev, cl_mem mem, gsize offset, const void *src, gsize bytes,
                        gboolean count, GError **error);
gboolean nnp_ocl_read (NnpOclDevice *dev, cl_mem mem, gsize offset, void *dst, gsize bytes,
                       gboolean count, GError **error);
void nnp_ocl_count_weight_upload (void);
/* Set a NNP_ERROR_DEVICE error "<device>: <what>: <CL error>". */
void nnp_ocl_set_error (GError **error, NnpOclDevice *dev, cl_int err, const char *format, ...)
    G_GNUC_PRINTF (4, 5);

/* A device location. */
typedef struct {
  cl_mem mem;
  gsize offset; /* bytes */
} NnpOclMem;

/* Kernels (ocl-kernels.c, ocl-<family>.c) */
typedef struct {
  NnpOclDevice *dev;
  const NnpGraph *graph;
  const NnpNode *node;
  const NnpOclMem *in;  /* node->n_inputs entries ({NULL,0} for omitted ones) */
  const NnpOclMem *out; /* node->n_outputs entries */
  gpointer state;       /* from prepare */
  /* The node's NNP_OCL_STATUS_WORDS status words (cl_int, zero before the
   * run) when its kernel `checks` it, else {NULL, 0}.  Borrowed. */
  NnpOclMem status;
} NnpOclCall;

/* Run-time validation of input data (Gather indices computed at run time).
 * A checked node's kernel sets word 0 of its status words to non-zero on bad
 * data (only the first offender writes the other words); the executor reads
 * all status words once after the stage's kernels and fails the run with the
 * node's `report`. */
#define NNP_OCL_STATUS_WORDS 4

typedef struct {
  /* Optional: FALSE (and *why) for attribute/dtype cases without a kernel. */
  gboolean (*supports) (const NnpGraph *graph, const NnpNode *node, char **why);
  /* Create kernel objects and per-node tables once.  Required. */
  gpointer (*prepare) (NnpOclDevice *dev, const NnpGraph *graph, const NnpNode *node,
                       GError **error);
  /* Enqueue the node's work on dev->queue (does not wait). */
  gboolean (*run) (const NnpOclCall *call, GError **error);
  void (*free_state) (gpointer state);
  /* Optional: TRUE when the node needs status words (see NnpOclCall). */
  gboolean (*checks) (const NnpGraph *graph, const NnpNode *node);
  /* With checks: set the node's error from its non-zero status words. */
  void (*report) (const NnpGraph *graph, const NnpNode *node, const cl_int *status, GError **error);
} NnpOclKernel;

/* Kernel of an op, NULL when the backend has none (its entry in the table
 * has no prepare). */
const NnpOclKernel *nnp_ocl_kernel (NnpOpType op);
gboolean nnp_ocl_supports_node (const NnpGraph *graph, const NnpNode *node, char **why);

/* Executor (ocl-exec.c): nodes[0..n) (in topological order) of a specialised
 * graph on one device.  inputs/outputs are the boundary value ids (as a
 * stage's).  At run time each boundary value is a tensor in host memory
 * (copied once) or in this device's memory (used in place); forwarded
 * outputs (an output that is also an input) are left to the caller (may be
 * NULL). */
typedef struct _NnpOclExec NnpOclExec;
NnpOclExec *nnp_ocl_exec_new (NnpOclDevice *dev, NnpGraph *graph, const int *nodes, int n_nodes,
                              const int *inputs, int n_inputs, const int *outputs, int n_outputs,
                              GError **error);
void nnp_ocl_exec_free (NnpOclExec *exec);
gsize nnp_ocl_exec_get_arena_bytes (NnpOclExec *exec);
/* Returns when the outputs are ready (and the queue is finished). */
gboolean nnp_ocl_exec_run (NnpOclExec *exec, NnpTensor *const *inputs, NnpTensor *const *outputs,
                           GError **error);

G_END_DECLS
