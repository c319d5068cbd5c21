/* OpenCL backend: its table (lib/backend.h).  A device backend: the
 * context is the shared NnpOclDevice of ocl-device.c, buffers are cl_mems,
 * stages are ocl-exec.c's executors. */
#include "backend.h"
#include "backends/opencl/opencl.h"
#include "ops/ops.h"

#include <string.h>

/* analytical cost of a mid-range GPU, before calibration */
#define OCL_GFLOPS 2000.0
#define OCL_BYTES_PER_MS 2.0e8     /* 200 GB/s */
#define OCL_NODE_OVERHEAD_MS 0.010 /* one or two kernel launches */

static gpointer
ocl_open (const char *spec, char **name_out, GError **error)
{
  NnpOclDevice *dev = nnp_ocl_device_open (spec, error);

  if (dev)
    *name_out = g_strdup (dev->name);
  return dev;
}

static void
ocl_close (gpointer ctx)
{
  nnp_ocl_device_unref (ctx);
}

static gpointer
ocl_native (gpointer ctx, const char *what)
{
  NnpOclDevice *dev = ctx;

  if (strcmp (what, "cl_context") == 0)
    return dev->context;
  if (strcmp (what, "cl_command_queue") == 0)
    return dev->queue;
  if (strcmp (what, "cl_device_id") == 0)
    return dev->device;
  return NULL;
}

static gboolean
ocl_supports_node (gpointer ctx, const NnpGraph *graph, const NnpNode *node, char **why)
{
  (void) ctx;
  return nnp_ocl_supports_node (graph, node, why);
}

static gpointer
ocl_stage_new (gpointer ctx, const NnpBackendStageInfo *info, GError **error)
{
  return nnp_ocl_exec_new (ctx, info->graph, info->nodes, info->n_nodes, info->inputs,
                           info->n_inputs, info->outputs, info->n_outputs, error);
}

static gboolean
ocl_stage_run (gpointer stage, NnpTensor *const *inputs, NnpTensor *const *outputs, GError **error)
{
  return nnp_ocl_exec_run (stage, inputs, outputs, error);
}

static gsize
ocl_stage_arena_bytes (gpointer stage)
{
  return nnp_ocl_exec_get_arena_bytes (stage);
}

static void
ocl_stage_free (gpointer stage)
{
  nnp_ocl_exec_free (stage);
}

static gpointer
ocl_buffer_alloc (gpointer ctx, gsize bytes, GError **error)
{
  return nnp_ocl_alloc (ctx, bytes, "a device tensor", error);
}

static void
ocl_buffer_ref (gpointer buffer)
{
  clRetainMemObject ((cl_mem) buffer);
}

static void
ocl_buffer_unref (gpointer buffer)
{
  clReleaseMemObject ((cl_mem) buffer);
}

/* not counted here: the device front counts the copies it asks for */
static gboolean
ocl_buffer_write (gpointer ctx, gpointer buffer, gsize offset, const void *src, gsize bytes,
                  GError **error)
{
  return nnp_ocl_write (ctx, buffer, offset, src, bytes, FALSE, error);
}

static gboolean
ocl_buffer_read (gpointer ctx, gpointer buffer, gsize offset, void *dst, gsize bytes,
                 GError **error)
{
  return nnp_ocl_read (ctx, buffer, offset, dst, bytes, FALSE, error);
}

static gboolean
ocl_buffer_copy (gpointer ctx, gpointer src, gsize src_offset, gpointer dst, gsize dst_offset,
                 gsize bytes, GError **error)
{
  NnpOclDevice *dev = ctx;
  cl_int err =
      clEnqueueCopyBuffer (dev->queue, src, dst, src_offset, dst_offset, bytes, 0, NULL, NULL);

  if (err == CL_SUCCESS)
    err = clFinish (dev->queue);
  if (err != CL_SUCCESS) {
    nnp_ocl_set_error (error, dev, err, "copying %" G_GSIZE_FORMAT " bytes on the device", bytes);
    return FALSE;
  }
  return TRUE;
}

static double
ocl_estimate_node_ms (const NnpGraph *graph, const NnpNode *node, int threads)
{
  double flops = nnp_node_flops (graph, node), bytes = nnp_node_io_bytes (graph, node);

  (void) threads;
  return OCL_NODE_OVERHEAD_MS + flops / (OCL_GFLOPS * 1e6) + bytes / OCL_BYTES_PER_MS;
}

const NnpBackend nnp_backend_opencl = {
  .name = "opencl",
  .spec_help = "opencl, opencl:N or opencl:NAME",
  .host = FALSE,
  .spec_threads = FALSE,
  .open = ocl_open,
  .close = ocl_close,
  .native = ocl_native,
  .supports_node = ocl_supports_node,
  .stage_new = ocl_stage_new,
  .stage_run = ocl_stage_run,
  .stage_arena_bytes = ocl_stage_arena_bytes,
  .stage_free = ocl_stage_free,
  .buffer_alloc = ocl_buffer_alloc,
  .buffer_ref = ocl_buffer_ref,
  .buffer_unref = ocl_buffer_unref,
  .buffer_write = ocl_buffer_write,
  .buffer_read = ocl_buffer_read,
  .buffer_copy = ocl_buffer_copy,
  .estimate_node_ms = ocl_estimate_node_ms,
};
