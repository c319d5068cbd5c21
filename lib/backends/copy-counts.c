/* libnnpipe: process-wide counts of host <-> device copies
 * (nnp_device_get_copy_counts() of include/nnpipe/device.h), kept apart from
 * device.c so that the backends that count (lib/backends/opencl/ocl-buffer.c)
 * do not call back into the device front (no loop: tools/check-layers.py). */
#include "backends/copy-counts.h"
#include <nnpipe/device.h>

static GMutex lock;
static guint64 n_to_device, n_to_host, bytes_to_device, bytes_to_host, n_weights;

void
nnp_device_count_copy (gboolean to_device, gsize bytes)
{
  g_mutex_lock (&lock);
  if (to_device) {
    n_to_device++;
    bytes_to_device += bytes;
  } else {
    n_to_host++;
    bytes_to_host += bytes;
  }
  g_mutex_unlock (&lock);
}

void
nnp_device_count_weight_upload (void)
{
  g_mutex_lock (&lock);
  n_weights++;
  g_mutex_unlock (&lock);
}

void
nnp_device_get_copy_counts (NnpCopyCounts *counts)
{
  g_return_if_fail (counts != NULL);
  g_mutex_lock (&lock);
  counts->to_device = n_to_device;
  counts->to_host = n_to_host;
  counts->to_device_bytes = bytes_to_device;
  counts->to_host_bytes = bytes_to_host;
  counts->weight_uploads = n_weights;
  g_mutex_unlock (&lock);
}
