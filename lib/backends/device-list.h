/* libnnpipe internal: the partitioner's devices, kept open
 * (lib/backends/device-list.c). */
#pragma once

#include <nnpipe/device.h>

G_BEGIN_DECLS

/* Device lists, the partitioner's ("cpu:1,opencl,cpu:2*2"): nnpipeline's
 * devices= and `nnpipe split --devices` reach them through nnp_plan_make(). */
typedef struct {
  char *device; /* "cpu", "opencl", "opencl:N", "opencl:NAME" (device.h) */
  int threads;  /* >= 1 (CPU threads; 1 for OpenCL) */
  int replicas; /* "cpu:1*2": the stage runs as 2 replicas (0 is read as 1) */
} NnpDeviceSpec;

/* Parse "cpu:1,opencl,cpu:2" ("cpu:N" = N threads, default 1; "opencl:X"
 * names an OpenCL device as in device.h).  Returns n specs (free with
 * nnp_device_specs_free), NULL + NNP_ERROR_DEVICE when a device is unknown
 * or unavailable (the message says why, e.g. "no OpenCL platform found"),
 * NNP_ERROR_PLAN when malformed.  Devices named here are opened once and
 * kept open for the process by the partitioner. */
NnpDeviceSpec *nnp_device_specs_parse (const char *text, int *n, GError **error);
void nnp_device_specs_free (NnpDeviceSpec *specs, int n);

/* The device a plan stage is planned on, kept open for the process
 * (nnp_device_open_kept()): a remote stage is planned as this host's CPU. */
NnpDevice *nnp_device_open_planned (const char *spec, GError **error);

/* TRUE when this build and machine can run stages on the device ("cpu",
 * "opencl...": opens it once). */
gboolean nnp_device_available (const char *device);
/* TRUE when the CPU has a kernel for the node; FALSE for every other device
 * (their answer depends on the graph: use nnp_device_spec_supports()). */
gboolean nnp_device_supports (const char *device, const NnpNode *node);
/* TRUE when the device named by a spec can run this node of graph
 * (nnp_device_supports_node() of device.h).  On FALSE, *why (when not NULL)
 * gets a one-line reason (g_free), also when the device is unavailable. */
gboolean nnp_device_spec_supports (const char *device, const NnpGraph *graph, const NnpNode *node,
                                   char **why);

/* The CPU fallback policy, written once for parts (nnp_part_open(),
 * nnp_part_prepare()) and plans (nnp_plan_make()): whether work meant for
 * `device` goes to the CPU after `err`, the error of opening the device or
 * of preparing a stage on it.  TRUE when fallback is asked for, device is
 * not the CPU and err is NNP_ERROR_DEVICE (missing or failed) or
 * NNP_ERROR_UNSUPPORTED (an op, attribute or shape without kernel). */
gboolean nnp_fallback_applies (const char *device, gboolean fallback, const GError *err);


G_END_DECLS
