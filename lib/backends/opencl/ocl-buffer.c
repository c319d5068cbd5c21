/* OpenCL backend: allocations and host <-> device copies.
 *
 * Copies of activations (stage boundaries, device tensor upload/download)
 * are counted process-wide; tests read the counts through
 * nnp_device_get_copy_counts() to prove where copies happen. */
#include "backends/opencl/opencl.h"
#include "backends/copy-counts.h"

#include <nnpipe/log.h>

void
nnp_ocl_count_weight_upload (void)
{
  nnp_device_count_weight_upload ();
}

cl_mem
nnp_ocl_alloc (NnpOclDevice *dev, gsize bytes, const char *what, GError **error)
{
  cl_int err = CL_SUCCESS;
  cl_mem mem;

  if (bytes == 0)
    bytes = 4;
  if (dev->max_alloc > 0 && bytes > dev->max_alloc) {
    g_set_error (error, NNP_ERROR, NNP_ERROR_DEVICE,
                 "%s: %s of %" G_GSIZE_FORMAT
                 " bytes exceeds the device's largest allocation (%" G_GUINT64_FORMAT " bytes)",
                 dev->name, what, bytes, (guint64) dev->max_alloc);
    return NULL;
  }
  mem = clCreateBuffer (dev->context, CL_MEM_READ_WRITE, bytes, NULL, &err);
  if (err != CL_SUCCESS) {
    nnp_ocl_set_error (error, dev, err, "allocating %s of %" G_GSIZE_FORMAT " bytes", what, bytes);
    return NULL;
  }
  return mem;
}

gboolean
nnp_ocl_write (NnpOclDevice *dev, cl_mem mem, gsize offset, const void *src, gsize bytes,
               gboolean count, GError **error)
{
  cl_int err;

  if (bytes == 0)
    return TRUE;
  err = clEnqueueWriteBuffer (dev->queue, mem, CL_TRUE, offset, bytes, src, 0, NULL, NULL);
  if (err != CL_SUCCESS) {
    nnp_ocl_set_error (error, dev, err, "writing %" G_GSIZE_FORMAT " bytes to the device", bytes);
    return FALSE;
  }
  if (count) {
    nnp_device_count_copy (TRUE, bytes);
  }
  return TRUE;
}

gboolean
nnp_ocl_read (NnpOclDevice *dev, cl_mem mem, gsize offset, void *dst, gsize bytes, gboolean count,
              GError **error)
{
  cl_int err;

  if (bytes == 0)
    return TRUE;
  err = clEnqueueReadBuffer (dev->queue, mem, CL_TRUE, offset, bytes, dst, 0, NULL, NULL);
  if (err != CL_SUCCESS) {
    nnp_ocl_set_error (error, dev, err, "reading %" G_GSIZE_FORMAT " bytes from the device", bytes);
    return FALSE;
  }
  if (count) {
    nnp_device_count_copy (FALSE, bytes);
  }
  return TRUE;
}
