/* GStreamer nnpipe plugin: device memory for other/tensors buffers, of any
 * libnnpipe backend that keeps tensors in memory of its own (OpenCL today;
 * a backend is a device backend when nnp_device_spec_is_host() says no).
 *
 * A GstNnDeviceMemory wraps one NnpTensor (the backend's buffer handle and
 * an offset; for OpenCL a cl_mem) of an nnpipe device.  Buffers of it
 * travel between elements under the caps feature of the device's backend
 * (gst_nn_device_caps_feature(): "memory:OpenCL" for OpenCL,
 * "memory:BACKEND" for a backend without a line in the table of
 * gstnndevicememory.c):
 *
 *   other/tensors(memory:OpenCL), format=static, num_tensors=1, ...
 *
 * One memory per tensor, in caps order, as for system memory.  nnstage
 * elements on the same device read and write the device tensor in place, so
 * nothing crosses to the host between two stages of one device.
 *
 * Mapping to the host is on demand: gst_memory_map (READ) downloads the
 * tensor into a host copy kept with the memory (one copy, counted by
 * nnp_device_get_copy_counts()); unmapping a WRITE map uploads the host copy
 * back (one copy).  A WRITE-only map does not download first: the mapper is
 * expected to write the whole tensor.
 *
 * The device is shared between elements through a GstContext of the
 * backend's type "nnpipe.BACKEND.device" (gst_nn_device_context_type():
 * "nnpipe.opencl.device" for OpenCL) whose structure holds:
 *   "device"        GST_TYPE_NN_DEVICE (boxed NnpDevice, refcounted)
 *   "spec"          string, the spec it was opened with ("opencl:0")
 *   "name"          string, nnp_device_get_name()
 *   "backend"       string, nnp_device_get_backend() ("opencl")
 * and the backend's raw handles for other code, G_TYPE_POINTER, borrowed
 * (valid while the device lives); OpenCL: "cl-context", "cl-queue",
 * "cl-device-id".  An application can set such a context on the pipeline
 * to choose the device for every element (gst_nn_device_context_new()). */
#pragma once

#include <gst/gst.h>
#include <nnpipe/device.h>

G_BEGIN_DECLS

#define GST_NN_DEVICE_MEMORY_TYPE "NnpDeviceMemory"

/* NnpDevice as a boxed type (ref/unref). */
#define GST_TYPE_NN_DEVICE (gst_nn_device_get_type ())
GType gst_nn_device_get_type (void);

#define GST_TYPE_NN_DEVICE_ALLOCATOR (gst_nn_device_allocator_get_type ())
G_DECLARE_FINAL_TYPE (GstNnDeviceAllocator, gst_nn_device_allocator, GST,
    NN_DEVICE_ALLOCATOR, GstAllocator)

/* Whether a device spec ("opencl", "opencl:1", "cpu:2") names a device
 * that keeps tensors in memory of its own: one of a registered backend
 * that is not the host (not the CPU, not a remote stage). */
gboolean gst_nn_device_spec_has_memory (const gchar *spec);

/* The caps feature of device's memory ("memory:OpenCL"; static string). */
const gchar *gst_nn_device_caps_feature (NnpDevice *device);
/* The device's kind as messages name it: the caps feature without
 * "memory:" ("OpenCL"; static string). */
const gchar *gst_nn_device_kind_name (NnpDevice *device);
/* The GstContext type that shares devices of device's backend
 * ("nnpipe.opencl.device"; static string). */
const gchar *gst_nn_device_context_type (NnpDevice *device);

/* An allocator of device memory on device (ref taken).  gst_allocator_alloc()
 * on it gives a GstNnDeviceMemory holding a uint8 device tensor of that
 * many bytes (alignment params are ignored: the backend aligns its
 * buffers).  Caller owns the returned reference. */
GstAllocator *gst_nn_device_allocator_new (NnpDevice *device);
/* The allocator's device (borrowed). */
NnpDevice *gst_nn_device_allocator_get_device (GstNnDeviceAllocator *allocator);

/* Wrap a device tensor (a reference is taken) in a new memory of allocator,
 * whose device must be the tensor's.  Caller owns the memory. */
GstMemory *gst_nn_device_memory_new_wrapped (GstAllocator *allocator,
    NnpTensor *tensor);

gboolean gst_is_nn_device_memory (GstMemory *mem);
/* The memory's device (borrowed). */
NnpDevice *gst_nn_device_memory_get_device (GstMemory *mem);
/* The device tensor viewed as dtype/shape (same bytes): a new reference
 * (the memory's own tensor when it already has that type and shape, else a
 * wrapped view of the same buffer), NULL when the sizes differ.  Device
 * code that writes the tensor must pass write=TRUE: it drops the memory's
 * host copy, which would be stale.  Must not be called while mapped. */
NnpTensor *gst_nn_device_memory_get_tensor (GstMemory *mem, NnpDType dtype,
    const NnpShape *shape, gboolean write);

/* Whether the i-th structure of caps is in device's memory (has its caps
 * feature); FALSE when device is NULL. */
gboolean gst_nn_caps_is_device_memory (GstCaps *caps, guint i,
    NnpDevice *device);
/* Whether the i-th structure of caps is in system memory (no feature or
 * memory:SystemMemory). */
gboolean gst_nn_caps_is_system_memory (GstCaps *caps, guint i);
/* The memory features an element offers for caps (taken; new caps
 * returned): with device, every structure in device's memory first, then
 * the same in system memory; without (NULL), system memory only.  ANY
 * caps stay ANY. */
GstCaps *gst_nn_caps_offer_device_memory (GstCaps *caps, NnpDevice *device);
/* The structures of caps in device's memory moved before the others, each
 * group in its order (caps taken; new caps returned; device NULL or ANY
 * caps: caps as they are).  A stage answers a caps query on its sink pad
 * with this: GstBaseTransform orders that answer as its peer downstream
 * ordered it, so a stage before a system-memory element would otherwise
 * be offered system memory first by a device stage upstream of it. */
GstCaps *gst_nn_caps_device_memory_first (GstCaps *caps, NnpDevice *device);

/* Contexts (see above).  New context holding device, non-persistent; spec
 * NULL: the backend's name. */
GstContext *gst_nn_device_context_new (NnpDevice *device, const gchar *spec);
/* The device of a context of one of our types (new reference), or NULL. */
NnpDevice *gst_nn_device_context_get_device (GstContext *context);

/* Find or create the device an element runs on, sharing it through
 * GstContext like gst-libs/gst/cuda's gst_cuda_ensure_element_context():
 * 1. *device already set (by a context the application or bin gave the
 *    element, see gst_nn_device_handle_set_context()) and acceptable: done;
 * 2. a CONTEXT query of the spec's backend's type downstream then
 *    upstream; 3. a NEED_CONTEXT message (the bin or the application may
 *    answer with set_context); 4. open spec and announce it with a
 *    HAVE_CONTEXT message.
 * A context's device is acceptable when it is of spec's backend and spec
 * names no particular device ("opencl") or is the device nnp_device_open
 * (spec) returns.  spec must satisfy gst_nn_device_spec_has_memory().
 * *device holds a new reference on success; FALSE with error when the
 * device cannot be opened. */
gboolean gst_nn_ensure_element_device (GstElement *element, const gchar *spec,
    NnpDevice **device, GError **error);
/* For GstElement::set_context: take the context's device into *device when
 * the type is ours and it is acceptable for spec (spec may be NULL: any
 * device backend). */
void gst_nn_device_handle_set_context (GstElement *element, GstContext *context,
    const gchar *spec, NnpDevice **device);
/* For query handlers: answer a CONTEXT query of device's backend's type with
 * device (may be NULL: not answered).  TRUE when answered. */
gboolean gst_nn_device_handle_context_query (GstElement *element,
    GstQuery *query, NnpDevice *device, const gchar *spec);

G_END_DECLS
