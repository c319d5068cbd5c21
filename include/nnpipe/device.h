/* nnpipe: devices and tensors in device memory.
 *
 * A device is named by a spec string, "BACKEND" or "BACKEND:ARG", where
 * BACKEND is a registered backend (lib/backends/registry.c):
 *   "cpu"                 the CPU backend (always there)
 *   "opencl"              the first OpenCL device (GPU first, then any)
 *   "opencl:N"            the N-th OpenCL device, counting every device of every
 *                         platform in platform order (as `clinfo -l` lists them)
 *   "opencl:NAME"         the first OpenCL device whose name or platform name
 *                         contains NAME (case-insensitive), e.g. "opencl:H100"
 *   "remote://H:P[|H:P]"  a stage on an nnpipe server (docs/remote.md): nnpipeline
 *                         runs it in an nnremote element; nnp_device_open() refuses it,
 *                         the partitioner plans it like a CPU stage
 *
 * nnp_device_open() returns one shared object per physical device: every
 * stage (and every element) of a process that opens "opencl:0" shares one
 * OpenCL context, one in-order command queue, the compiled programs and the
 * weights uploaded to the device (each constant tensor is uploaded once per
 * device).  Devices are refcounted and thread-safe.
 *
 * A tensor (tensor.h) lives in host memory or in a device's memory.  Stages
 * use tensors of their own device in place (nnp_stage_run() in stage.h), so
 * two consecutive OpenCL stages exchange device tensors and nothing crosses
 * to the host.  Host <-> device copies of activations are counted
 * process-wide (nnp_device_get_copy_counts()); weight uploads are not
 * counted there. */
#pragma once

#include <glib.h>
#include <nnpipe/error.h>
#include <nnpipe/graph.h>
#include <nnpipe/tensor.h>

G_BEGIN_DECLS

/* NnpDevice is declared in tensor.h (a tensor names the device it lives on). */

/* The one device syntax of every element (nnstage device=, nnpipeline
 * devices=), the CLI (`nnpipe run --device`, `nnpipe split --devices`) and
 * plans: a spec above, or "cpu:THREADS" (the CPU with THREADS threads,
 * 1..1024).  "opencl:X" always names a device, never a thread count.  Case
 * and surrounding blanks do not matter.  Checks the syntax only (opens
 * nothing).  device_out (may be NULL; g_free) gets the spec without the
 * thread count ("cpu", "opencl", "opencl:1", "opencl:H100"), threads_out
 * (may be NULL) the thread count or 0 when none is given.  FALSE with an
 * error naming text: NNP_ERROR_DEVICE when it names no known device kind
 * ("tpu9"), NNP_ERROR_INVALID when a known one is written wrong ("cpu:0",
 * "opencl:"). */
gboolean nnp_device_spec_parse (const char *text, char **device_out, int *threads_out,
                                GError **error);

/* A device spec refined by an index or a name (nnstage's device-index and
 * device-name): name (not NULL or "") gives "BACKEND:NAME", index >= 0
 * "BACKEND:INDEX", neither the spec of text as nnp_device_spec_parse()
 * writes it (threads_out as there).  An index or a name needs text to be
 * a bare backend that names its devices ("opencl"; not "cpu", not
 * "opencl:1"): else NNP_ERROR_DEVICE saying so.  New string, or NULL with
 * nnp_device_spec_parse()'s error. */
char *nnp_device_spec_select (const char *text, int index, const char *name, int *threads_out,
                              GError **error);

/* "Is this the CPU?", answered once: TRUE when spec (a device spec above,
 * "cpu:4" included; NULL, the default device, too) names a host backend
 * (one that works on host memory in this process).  FALSE for a remote
 * stage, another backend, and text that is not a device spec. */
gboolean nnp_device_spec_is_host (const char *spec);
/* The addresses of a remote stage: for "remote://a:7000|b:7000" (any case,
 * leading blanks) a pointer into spec at "a:7000|b:7000"; NULL when spec
 * names no remote stage.  Checks the scheme only (nnp_device_spec_parse()
 * checks the addresses). */
const char *nnp_device_spec_remote_address (const char *spec);
/* "host:port" or "[v6]:port" -> host (g_free) and port; FALSE with a clear
 * error otherwise. */
gboolean nnp_remote_address_parse (const char *text, char **host, guint16 *port, GError **error);

/* ------------------------------------------------------------ device lists (the partitioner's) */

/* One device list item "DEVICE" or "DEVICE*K" (K replicas, 1..64): *device
 * gets DEVICE (g_free), *replicas K (1 without "*").  NNP_ERROR_PLAN naming
 * the item when K is malformed. */
gboolean nnp_device_item_split_replicas (const char *item, char **device, int *replicas,
                                         GError **error);

/* Open (or return the shared) device for spec; NULL = "cpu".  Errors:
 * NNP_ERROR_DEVICE: unknown spec, "no OpenCL platform found", "OpenCL device
 * 'opencl:3' not found (2 devices: ...)", libnnpipe built without OpenCL.
 * Returns a new reference. */
NnpDevice *nnp_device_open (const char *spec, GError **error);
NnpDevice *nnp_device_ref (NnpDevice *device);
void nnp_device_unref (NnpDevice *device);

/* The device's backend: "cpu", "opencl" (the first word of its spec). */
const char *nnp_device_get_backend (NnpDevice *device);
/* "cpu" or e.g. "opencl:0 (NVIDIA H100 80GB HBM3, NVIDIA CUDA)"; owned by the device. */
const char *nnp_device_get_name (NnpDevice *device);


/* A native handle of the device for sharing it with other code (a
 * GstContext), by name; borrowed: valid while the device is referenced
 * (retain it to keep it longer).  NULL when the device's backend has no
 * such handle (the CPU has none).  OpenCL: "cl_context", "cl_command_queue"
 * (in-order) and "cl_device_id". */
gpointer nnp_device_get_native (NnpDevice *device, const char *what);

/* A new tensor in the device's memory (contents undefined); on a host
 * device a zero-filled host tensor (nnp_tensor_new()). */
NnpTensor *nnp_tensor_new_on (NnpDevice *device, NnpDType dtype, const NnpShape *shape,
                              GError **error);
/* Wrap an existing buffer of the device's backend (OpenCL: a cl_mem of the
 * device's context), not copied.  The tensor holds `handle` (OpenCL:
 * clRetainMemObject) and lets it go on the last unref, then calls
 * release(release_data) if given.  The buffer must hold offset + nbytes
 * bytes; offset must be a multiple of the dtype size.  Not for host
 * devices (use nnp_tensor_new_wrapped()). */
NnpTensor *nnp_tensor_new_device_wrapped (NnpDevice *device, NnpDType dtype, const NnpShape *shape,
                                          gpointer handle, gsize offset, GDestroyNotify release,
                                          gpointer release_data);
/* Blocking copy of src's contents into dst, of the same dtype and shape,
 * wherever each lives: host -> host (memcpy), host -> device and device ->
 * host (one counted copy), device -> same device (a device copy), device ->
 * other device (through the host: two counted copies). */
gboolean nnp_tensor_copy_into (NnpTensor *dst, const NnpTensor *src, GError **error);

/* Process-wide counts of activation copies between host and any device
 * (stage boundaries, uploads/downloads above).  Weight uploads are counted
 * apart (`weight_uploads`). */
typedef struct {
  guint64 to_device, to_host; /* number of copies */
  guint64 to_device_bytes, to_host_bytes;
  guint64 weight_uploads;
} NnpCopyCounts;

void nnp_device_get_copy_counts (NnpCopyCounts *counts);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (NnpDevice, nnp_device_unref)

/* Parse a list of cores, the one syntax of nnstage cpus= and `nnpipe run
 * --cpus`: core numbers and inclusive ranges separated by commas, e.g. "0,1"
 * or "0-3,6" (each 0..1023, at most 1024 in all).  NULL or "" is no list:
 * TRUE with *cpus = NULL and *n_cpus = 0.  Otherwise *cpus (g_free) gets the
 * cores in the order given.  FALSE with NNP_ERROR_INVALID naming text and
 * the bad item when malformed. */
gboolean nnp_cpus_parse (const char *text, int **cpus, int *n_cpus, GError **error);


G_END_DECLS
