/* GStreamer nnpipe plugin: OpenCL device memory for other/tensors buffers.
 *
 * A GstNnClMemory wraps one NnpTensor (a cl_mem and an offset) of an
 * nnpipe OpenCL device.  Buffers of it travel between elements under the
 * caps feature "memory:OpenCL":
 *
 *   other/tensors(memory:OpenCL), format=static, num_tensors=1, ...
 *
 * One memory per tensor, in caps order, as for system memory.  nnstage
 * elements on the same device read and write the device tensor in place, so
 * nothing crosses to the host between two OpenCL stages.
 *
 * Mapping to the host is on demand: gst_memory_map (READ) downloads the
 * tensor into a host copy kept with the memory (one copy, counted by
 * nnp_device_get_copy_counts()); unmapping a WRITE map uploads the host copy
 * back (one copy).  A WRITE-only map does not download first: the mapper is
 * expected to write the whole tensor.
 *
 * The device is shared between elements through a GstContext of type
 * GST_NN_CL_DEVICE_CONTEXT_TYPE ("nnpipe.opencl.device") whose structure
 * holds:
 *   "device"        GST_TYPE_NN_CL_DEVICE (boxed NnpDevice, refcounted)
 *   "spec"          string, the spec it was opened with ("opencl:0")
 *   "name"          string, nnp_device_get_name()
 *   "cl-context", "cl-queue", "cl-device-id"
 *                   G_TYPE_POINTER, the raw OpenCL handles (borrowed: valid
 *                   while the device lives), for other OpenCL code
 * An application can set such a context on the pipeline to choose the
 * device for every element (gst_nn_cl_device_context_new()). */
#pragma once

#include <gst/gst.h>
#include <nnpipe/device.h>

G_BEGIN_DECLS

#define GST_CAPS_FEATURE_MEMORY_OPENCL "memory:OpenCL"
#define GST_NN_CL_MEMORY_TYPE "NnpOpenCLMemory"
#define GST_NN_CL_DEVICE_CONTEXT_TYPE "nnpipe.opencl.device"

/* NnpDevice as a boxed type (ref/unref). */
#define GST_TYPE_NN_CL_DEVICE (gst_nn_cl_device_get_type ())
GType gst_nn_cl_device_get_type (void);

#define GST_TYPE_NN_CL_ALLOCATOR (gst_nn_cl_allocator_get_type ())
G_DECLARE_FINAL_TYPE (GstNnClAllocator, gst_nn_cl_allocator, GST,
    NN_CL_ALLOCATOR, GstAllocator)

/* An allocator of device memory on device (ref taken).  gst_allocator_alloc()
 * on it gives a GstNnClMemory holding a uint8 device tensor of that many
 * bytes (alignment params are ignored: cl_mem allocations are aligned).
 * Caller owns the returned reference. */
GstAllocator *gst_nn_cl_allocator_new (NnpDevice *device);
/* The allocator's device (borrowed). */
NnpDevice *gst_nn_cl_allocator_get_device (GstNnClAllocator *allocator);

/* Wrap a device tensor (a reference is taken) in a new memory of allocator,
 * whose device must be the tensor's.  Caller owns the memory. */
GstMemory *gst_nn_cl_memory_new_wrapped (GstAllocator *allocator,
    NnpTensor *tensor);

gboolean gst_is_nn_cl_memory (GstMemory *mem);
/* Whether the i-th structure of caps has the memory:OpenCL feature. */
gboolean gst_nn_caps_has_cl_memory (GstCaps *caps, guint i);
/* The memory features an element offers for caps (taken; new caps
 * returned): with device, every structure in device memory
 * (memory:OpenCL) first, then the same in system memory; without, system
 * memory only.  ANY caps stay ANY. */
GstCaps *gst_nn_caps_offer_cl_memory (GstCaps *caps, gboolean device);
/* Whether a device spec ("opencl", "opencl:1", "cpu:2") names an OpenCL
 * device. */
gboolean gst_nn_cl_spec_is_opencl (const gchar *spec);
/* The memory's device (borrowed). */
NnpDevice *gst_nn_cl_memory_get_device (GstMemory *mem);
/* The device tensor viewed as dtype/shape (same bytes): a new reference
 * (the memory's own tensor when it already has that type and shape, else a
 * wrapped view of the same cl_mem), NULL when the sizes differ.  Device
 * code that writes the tensor must pass write=TRUE: it drops the memory's
 * host copy, which would be stale.  Must not be called while mapped. */
NnpTensor *gst_nn_cl_memory_get_tensor (GstMemory *mem, NnpDType dtype,
    const NnpShape *shape, gboolean write);

/* Contexts (see above).  New context holding device, non-persistent. */
GstContext *gst_nn_cl_device_context_new (NnpDevice *device, const gchar *spec);
/* The device of a context of our type (new reference), or NULL. */
NnpDevice *gst_nn_cl_device_context_get_device (GstContext *context);

/* Find or create the device an element runs on, sharing it through
 * GstContext like gst-libs/gst/cuda's gst_cuda_ensure_element_context():
 * 1. *device already set (by a context the application or bin gave the
 *    element, see gst_nn_cl_handle_set_context()) and acceptable: done;
 * 2. a CONTEXT query downstream then upstream; 3. a NEED_CONTEXT message
 *    (the bin or the application may answer with set_context); 4. open
 *    spec and announce it with a HAVE_CONTEXT message.
 * A context's device is acceptable when spec names no particular device
 * ("opencl") or is the device nnp_device_open (spec) returns.
 * *device holds a new reference on success; FALSE with error when the
 * device cannot be opened. */
gboolean gst_nn_cl_ensure_element_device (GstElement *element,
    const gchar *spec, NnpDevice **device, GError **error);
/* For GstElement::set_context: take the context's device into *device when
 * the type matches and it is acceptable for spec (spec may be NULL: any). */
void gst_nn_cl_handle_set_context (GstElement *element, GstContext *context,
    const gchar *spec, NnpDevice **device);
/* For query handlers: answer a CONTEXT query of our type with device (may
 * be NULL: not answered).  TRUE when answered. */
gboolean gst_nn_cl_handle_context_query (GstElement *element, GstQuery *query,
    NnpDevice *device, const gchar *spec);

G_END_DECLS
