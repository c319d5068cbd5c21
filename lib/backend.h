/* libnnpipe internal: the backend interface (issue 11).
 *
 * A backend is a table of functions plus a context per device, as ggml's
 * ggml_backend_i: everything the rest of the library needs from a place
 * where nodes run.  Implementations live in lib/backends/<name>/ (cpu,
 * opencl) and are listed once, in lib/backends/registry.c; nothing else in
 * the library names a backend.  The device front (lib/backends/device.c),
 * the stage (lib/exec/stage.c), constant folding (lib/specialize/specialize.c)
 * and the partitioner's cost model reach backends only through this table.
 *
 * This header sits at the bottom of the layers (it includes public headers
 * only), so the graph passes may call the host backend without including
 * anything of lib/backends.
 *
 * Adding a backend: a folder lib/backends/<name>/ defining
 *   const NnpBackend nnp_backend_<name> = { .name = "<name>", ... };
 * its sources in lib/meson.build, and one line in registry.c.  Tests may
 * add one at run time with nnp_backend_register() (tests/lib/test-backend.c
 * registers a small test-only backend that way). */
#pragma once

#include <nnpipe/graph.h>
#include <nnpipe/tensor.h>
#include <nnpipe/error.h>

G_BEGIN_DECLS

/* What a stage asks of a backend: nodes of a specialised graph and its
 * boundary, all decided by lib/exec/stage.c before the backend is called. */
typedef struct {
  NnpGraph *graph;  /* the backend takes its own ref if it keeps it */
  const int *nodes; /* node indices in topological order */
  int n_nodes;
  const int *inputs; /* boundary value ids */
  int n_inputs;
  const int *outputs;
  int n_outputs;
  const int *forward_from; /* per output: the input it forwards, or -1; the stage
                                  * copies forwarded values, the backend ignores them */
  int threads;             /* intra-op threads (host backends), >= 1 */
  const int *cpus;         /* optional pinning, n_cpus entries */
  int n_cpus;
} NnpBackendStageInfo;

typedef struct _NnpBackend NnpBackend;
struct _NnpBackend {
  const char *name;      /* first word of the device spec: "cpu", "opencl" */
  const char *spec_help; /* spellings for error messages: "opencl, opencl:N or
                                  * opencl:NAME" */
  /* Host backend: works on host memory (no buffers of its own; its stages
   * take host tensors), opens one device, and folds constants. */
  gboolean host;
  /* "NAME:ARG": ARG is a thread count (1..1024) when TRUE, else it names a
   * device of the backend and is handed to open(). */
  gboolean spec_threads;

  /* Devices.  open: the backend's context for spec ("opencl", "opencl:1";
   * canonical as nnp_device_spec_parse() writes it), one shared context per
   * physical device (equal pointers for "opencl" and "opencl:0" when they
   * are the same device), a reference the caller gives back with close().
   * *name_out (g_free) gets the display name, e.g. "opencl:0 (NVIDIA H100,
   * NVIDIA CUDA)".  Required. */
  gpointer (*open) (const char *spec, char **name_out, GError **error);
  void (*close) (gpointer ctx);
  /* Optional: a native handle for sharing the device ("cl_context",
   * "cl_command_queue", "cl_device_id"), borrowed; NULL when unknown. */
  gpointer (*native) (gpointer ctx, const char *what);
  /* Whether the device runs this node; on FALSE *why (may be NULL) gets a
   * one-line reason.  graph may be NULL for a host backend (op check only). */
  gboolean (*supports_node) (gpointer ctx, const NnpGraph *graph, const NnpNode *node, char **why);

  /* Stages.  stage_new plans and prepares the nodes once; stage_run gets
   * per boundary value a tensor of the value's dtype and shape in host
   * memory or in this device's memory (never another device's: the stage
   * stages those through the host), NULL for forwarded outputs.  Outputs
   * are complete when it returns. */
  gpointer (*stage_new) (gpointer ctx, const NnpBackendStageInfo *info, GError **error);
  gboolean (*stage_run) (gpointer stage, NnpTensor *const *inputs, NnpTensor *const *outputs,
                         GError **error);
  gsize (*stage_arena_bytes) (gpointer stage);
  void (*stage_free) (gpointer stage);

  /* Buffers (device backends; NULL on a host backend).  Copies are
   * blocking; the caller counts them (copy-counts.h). */
  gpointer (*buffer_alloc) (gpointer ctx, gsize bytes, GError **error);
  void (*buffer_ref) (gpointer buffer);
  void (*buffer_unref) (gpointer buffer);
  gboolean (*buffer_write) (gpointer ctx, gpointer buffer, gsize offset, const void *src,
                            gsize bytes, GError **error);
  gboolean (*buffer_read) (gpointer ctx, gpointer buffer, gsize offset, void *dst, gsize bytes,
                           GError **error);
  gboolean (*buffer_copy) (gpointer ctx, gpointer src, gsize src_offset, gpointer dst,
                           gsize dst_offset, gsize bytes, GError **error);

  /* Cost model: analytical ms of a node with `threads` threads before any
   * measurement (the partitioner profiles or calibrates on top). */
  double (*estimate_node_ms) (const NnpGraph *graph, const NnpNode *node, int threads);

  /* Host backends: run one node on host tensors (constant folding). */
  gboolean (*run_node) (const NnpGraph *graph, const NnpNode *node, NnpTensor *const *inputs,
                        NnpTensor *const *outputs, GError **error);
};

/* Registry (lib/backends/registry.c).  Backends in registration order:
 * the built-in ones, then those added by nnp_backend_register(). */
int nnp_backend_count (void);
const NnpBackend *nnp_backend_get (int i);
/* By name (case-insensitive), NULL when none. */
const NnpBackend *nnp_backend_find (const char *name);
/* The first host backend (constant folding runs there). */
const NnpBackend *nnp_backend_host (void);
/* Add a backend (kept for the process; must stay valid).  FALSE when the
 * name is taken or the table lacks a required function. */
gboolean nnp_backend_register (const NnpBackend *backend);

/* Device glue for backends and the executor (device.c). */
/* The backend of a device and its context (borrowed). */
const NnpBackend *nnp_device_get_backend_table (NnpDevice *device, gpointer *ctx);
/* The device of a spec, opened once and kept open for the process (so
 * availability checks and profiling do not open and close contexts again
 * and again); a failed open is remembered and its error repeated.
 * Borrowed. */
NnpDevice *nnp_device_open_kept (const char *spec, GError **error);

/* TRUE when the device works on host memory (the CPU): its tensors are
 * host tensors. */
gboolean nnp_device_is_host (NnpDevice *device);
/* Whether the device has a kernel for this (specialised) node, including its
 * attribute and dtype case.  On FALSE, *why (if not NULL) gets a one-line
 * reason, e.g. "Conv: 3-D convolution"; free it with g_free().  The CPU
 * supports every op of op-list.h that has a kernel. */
gboolean nnp_device_supports_node (NnpDevice *device, const NnpGraph *graph, const NnpNode *node,
                                   char **why);

G_END_DECLS
