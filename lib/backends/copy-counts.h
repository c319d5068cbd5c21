/* libnnpipe internal: copy counters the backends bump (copy-counts.c). */
#pragma once

#include <nnpipe/device.h>

G_BEGIN_DECLS

/* Count one activation copy host -> device (to_device) or device -> host. */
void nnp_device_count_copy (gboolean to_device, gsize bytes);
void nnp_device_count_weight_upload (void);

G_END_DECLS
