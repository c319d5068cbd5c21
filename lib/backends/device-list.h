/* libnnpipe internal: the partitioner's devices, kept open
 * (lib/backends/device-list.c). */
#pragma once

#include <nnpipe/device.h>

G_BEGIN_DECLS

/* The device a plan stage is planned on, kept open for the process
 * (nnp_device_open_kept()): a remote stage is planned as this host's CPU. */
NnpDevice *nnp_device_open_planned (const char *spec, GError **error);

G_END_DECLS
