/* nnpipe: devices and device-resident tensors.
 *
 * A device is named by a spec string:
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
 * An NnpDeviceTensor is a tensor whose storage is device memory (for OpenCL:
 * a cl_mem and a byte offset into it).  Stages on an OpenCL device read and
 * write them without host copies (nnp_stage_run_device() in stage.h), so two
 * consecutive OpenCL stages exchange device tensors and nothing crosses to the
 * host.  Host <-> device copies of activations are counted process-wide
 * (nnp_device_get_copy_counts()); weight uploads are not counted there. */
#pragma once

#include <glib.h>
#include <nnpipe/error.h>
#include <nnpipe/graph.h>
#include <nnpipe/tensor.h>

G_BEGIN_DECLS

typedef enum {
  NNP_DEVICE_CPU = 0,
  NNP_DEVICE_OPENCL = 1,
} NnpDeviceKind;

typedef struct _NnpDevice NnpDevice;

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

/* Open (or return the shared) device for spec; NULL = "cpu".  Errors:
 * NNP_ERROR_DEVICE: unknown spec, "no OpenCL platform found", "OpenCL device
 * 'opencl:3' not found (2 devices: ...)", libnnpipe built without OpenCL.
 * Returns a new reference. */
NnpDevice *nnp_device_open (const char *spec, GError **error);
NnpDevice *nnp_device_ref (NnpDevice *device);
void nnp_device_unref (NnpDevice *device);

NnpDeviceKind nnp_device_get_kind (NnpDevice *device);
/* "cpu" or e.g. "opencl:0 (NVIDIA H100 80GB HBM3, NVIDIA CUDA)"; owned by the device. */
const char *nnp_device_get_name (NnpDevice *device);

/* Whether the device has a kernel for this (specialised) node, including its
 * attribute and dtype case.  On FALSE, *why (if not NULL) gets a one-line
 * reason, e.g. "Conv: 3-D convolution"; free it with g_free().  The CPU
 * supports every op of op-list.h that has a kernel. */
gboolean nnp_device_supports_node (NnpDevice *device, const NnpGraph *graph,
                                   const NnpNode *node, char **why);

/* OpenCL handles for sharing the device with other OpenCL code (a GstContext):
 * cl_context, cl_command_queue (in-order) and cl_device_id.  Borrowed: valid
 * while the device is referenced; retain them to keep them longer.  NULL for
 * the CPU. */
gpointer nnp_device_get_cl_context (NnpDevice *device);
gpointer nnp_device_get_cl_queue (NnpDevice *device);
gpointer nnp_device_get_cl_device_id (NnpDevice *device);

/* A tensor in device memory.  Refcounted, thread-safe to ref/unref.  The
 * public fields are read-only. */
typedef struct _NnpDeviceTensor NnpDeviceTensor;
struct _NnpDeviceTensor {
  NnpDType dtype;
  NnpShape shape;
  gsize nbytes;          /* numel * dtype size */
  NnpDevice *device;     /* owned ref */
  gpointer handle;       /* OpenCL: the cl_mem (retained by the tensor) */
  gsize offset;          /* byte offset of element 0 in handle; a multiple of the
                          * dtype size */

  /*< private >*/
  gint ref_count;
  GDestroyNotify release;
  gpointer release_data;
};

/* New device tensor owning a fresh allocation (contents undefined). */
NnpDeviceTensor *nnp_device_tensor_new (NnpDevice *device, NnpDType dtype,
                                        const NnpShape *shape, GError **error);
/* Wrap existing device memory (OpenCL: a cl_mem of the device's context, not
 * copied).  The tensor retains `handle` (clRetainMemObject) and releases it on
 * the last unref, then calls release(release_data) if given.  The buffer must
 * hold offset + nbytes bytes. */
NnpDeviceTensor *nnp_device_tensor_new_wrapped (NnpDevice *device, NnpDType dtype,
                                                const NnpShape *shape, gpointer handle,
                                                gsize offset, GDestroyNotify release,
                                                gpointer release_data);
NnpDeviceTensor *nnp_device_tensor_ref (NnpDeviceTensor *tensor);
void nnp_device_tensor_unref (NnpDeviceTensor *tensor);
/* Blocking copies between a host tensor and a device tensor of the same
 * dtype and shape (each counts as one copy). */
gboolean nnp_device_tensor_upload (NnpDeviceTensor *dst, const NnpTensor *src, GError **error);
gboolean nnp_device_tensor_download (NnpDeviceTensor *src, NnpTensor *dst, GError **error);

/* Process-wide counts of activation copies between host and any device
 * (stage boundaries, uploads/downloads above).  Weight uploads are counted
 * apart (`weight_uploads`). */
typedef struct {
  guint64 to_device, to_host;             /* number of copies */
  guint64 to_device_bytes, to_host_bytes;
  guint64 weight_uploads;
} NnpCopyCounts;

void nnp_device_get_copy_counts (NnpCopyCounts *counts);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (NnpDevice, nnp_device_unref)
G_DEFINE_AUTOPTR_CLEANUP_FUNC (NnpDeviceTensor, nnp_device_tensor_unref)

G_END_DECLS
