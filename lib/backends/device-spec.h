/* libnnpipe internal: a device spec, parsed (lib/backends/device-spec.c).
 *
 * The one place a device string is taken apart; everything else asks it
 * (nnp_device_spec_is_host(), nnp_device_spec_remote_address() of
 * include/nnpipe/device.h) instead of comparing strings. */
#pragma once

#include <nnpipe/device.h>

G_BEGIN_DECLS

typedef struct {
  char *spec;           /* canonical, without a thread count: "cpu", "opencl:1",
                         * "remote://a:7000|b:7000" */
  const char *backend;  /* the backend's name ("cpu", "opencl"), "remote" for a
                         * remote stage; static */
  char *arg;            /* what follows "BACKEND:" when it names a device ("1",
                         * "H100"), else NULL */
  int index;            /* arg as a device index, -1 when none or a name */
  int threads;          /* "cpu:4" -> 4; 0 when not given */
  gboolean is_host;     /* runs in this process on host memory (a host backend) */
  char *remote_address; /* "a:7000|b:7000" for a remote stage, else NULL */
} NnpDeviceSpecInfo;

/* Parse text (nnp_device_spec_parse()'s syntax and errors) into info
 * (cleared first; nnp_device_spec_info_clear() frees it). */
gboolean nnp_device_spec_info_parse (const char *text, NnpDeviceSpecInfo *info, GError **error);
void nnp_device_spec_info_clear (NnpDeviceSpecInfo *info);

G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC (NnpDeviceSpecInfo, nnp_device_spec_info_clear)

G_END_DECLS
