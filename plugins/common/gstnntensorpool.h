/* GStreamer nnpipe plugin: a buffer pool for other/tensors buffers.
 *
 * Buffers hold one GstMemory per tensor, in caps order, each 64-byte
 * aligned (at least), as the tensor caps convention requires.  Configure it
 * with gst_buffer_pool_config_set_params() and fixed other/tensors caps
 * whose total size is the configured size. */
#pragma once

#include <gst/gst.h>
#include <nnpipe/device.h>

G_BEGIN_DECLS

#define GST_TYPE_NN_TENSOR_POOL (gst_nn_tensor_pool_get_type ())
G_DECLARE_FINAL_TYPE (GstNnTensorPool, gst_nn_tensor_pool, GST, NN_TENSOR_POOL,
    GstBufferPool)

/* New pool (caller owns the reference). */
GstBufferPool *gst_nn_tensor_pool_new (void);

/* A new buffer for fixed tensor caps, one memory per tensor, allocated
 * without a pool (caller owns it); NULL when the caps are not valid. */
GstBuffer *gst_nn_tensors_buffer_new (const GstCaps *caps);

/* decide_allocation of an element that makes tensor buffers: buffers
 * carry one memory per tensor, so a tensor pool, whatever downstream
 * offers (its minimum kept, no maximum); with device (may be NULL:
 * system memory), memories in its device memory (its caps feature,
 * memory:OpenCL): its allocator (gstnndevicememory.h).  FALSE when the query's caps are not
 * fixed tensor caps. */
gboolean gst_nn_tensor_pool_decide_allocation (GstQuery *query,
    NnpDevice *device);

G_END_DECLS
