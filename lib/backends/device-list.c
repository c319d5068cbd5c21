/* libnnpipe: device lists and what this machine can open
 * (include/nnpipe/device.h, "device lists").
 *
 * The partitioner's devices: a list "cpu:1,opencl*2" parsed into
 * NnpDeviceSpec items (the syntax of each item is device-spec.c's), each
 * device opened once and kept open for the process, and the questions the
 * planner asks of a spec (available? supports this node?). */
#include <nnpipe/device.h>

#include "backend.h"
#include "backends/device-list.h"

/* The partitioner's devices are kept open for the process (the device
 * layer's nnp_device_open_kept(): availability checks, profiling and
 * validation do not create and destroy contexts again and again, and a
 * failed open is probed once). */
NnpDevice *
nnp_device_open_planned (const char *spec, GError **error)
{
  /* a remote stage is planned as a CPU stage here (its costs: docs/remote.md) */
  if (nnp_device_spec_remote_address (spec))
    return nnp_device_open (nnp_backend_host ()->name, error);
  return nnp_device_open_kept (spec, error);
}

gboolean
nnp_device_available (const char *device)
{
  return device != NULL && nnp_device_open_planned (device, NULL) != NULL;
}

gboolean
nnp_device_spec_supports (const char *device, const NnpGraph *graph, const NnpNode *node,
                          char **why)
{
  g_autoptr (GError) err = NULL;
  NnpDevice *dev;

  g_return_val_if_fail (graph != NULL && node != NULL, FALSE);
  if (why)
    *why = NULL;
  dev = nnp_device_open_planned (device, &err);
  if (dev == NULL) {
    if (why)
      *why = g_strdup (err->message);
    return FALSE;
  }
  return nnp_device_supports_node (dev, graph, node, why);
}

gboolean
nnp_device_supports (const char *device, const NnpNode *node)
{
  NnpDevice *dev;
  const NnpBackend *backend;
  gpointer ctx;

  g_return_val_if_fail (node != NULL, FALSE);
  dev = device ? nnp_device_open_planned (device, NULL) : NULL;
  if (dev == NULL || !nnp_device_is_host (dev))
    return FALSE; /* other devices need the graph: nnp_device_spec_supports() */
  backend = nnp_device_get_backend_table (dev, &ctx);
  return backend->supports_node (ctx, NULL, node, NULL);
}

void
nnp_device_specs_free (NnpDeviceSpec *specs, int n)
{
  for (int i = 0; specs && i < n; i++)
    g_free (specs[i].device);
  g_free (specs);
}

NnpDeviceSpec *
nnp_device_specs_parse (const char *text, int *n, GError **error)
{
  g_auto (GStrv) parts = NULL;
  NnpDeviceSpec *specs;
  int count;

  g_return_val_if_fail (n != NULL, NULL);
  *n = 0;
  if (text == NULL || *text == '\0') {
    g_set_error (error, NNP_ERROR, NNP_ERROR_PLAN, "empty device list");
    return NULL;
  }
  parts = g_strsplit (text, ",", -1);
  count = g_strv_length (parts);
  specs = g_new0 (NnpDeviceSpec, count);
  for (int i = 0; i < count; i++) {
    char *item = g_strstrip (parts[i]);
    g_autofree char *device = NULL;
    g_autofree char *base = NULL;
    int threads = 0, replicas = 1;
    GError *err = NULL;

    if (*item == '\0') {
      g_set_error (error, NNP_ERROR, NNP_ERROR_PLAN, "device list item %d is empty", i);
      nnp_device_specs_free (specs, count);
      return NULL;
    }
    /* one syntax with nnstage device= and plans (device.h), "*K" replicas */
    if (!nnp_device_item_split_replicas (item, &base, &replicas, &err)
        || !nnp_device_spec_parse (base, &device, &threads, &err)) {
      /* an unknown device stays NNP_ERROR_DEVICE, a malformed item is a plan error */
      g_set_error (error, NNP_ERROR,
                   err->code == NNP_ERROR_DEVICE ? NNP_ERROR_DEVICE : NNP_ERROR_PLAN,
                   "device list item %d: %s", i, err->message);
      g_error_free (err);
      nnp_device_specs_free (specs, count);
      return NULL;
    }
    if (nnp_device_open_planned (device, &err) == NULL) {
      g_set_error (error, NNP_ERROR, NNP_ERROR_DEVICE, "device '%s' is not available: %s", item,
                   err->message);
      g_error_free (err);
      nnp_device_specs_free (specs, count);
      return NULL;
    }
    specs[i].device = g_steal_pointer (&device);
    specs[i].threads = MAX (threads, 1);
    specs[i].replicas = replicas;
  }
  *n = count;
  return specs;
}

gboolean
nnp_fallback_applies (const char *device, gboolean fallback, const GError *err)
{
  return fallback && !nnp_device_spec_is_host (device) && err != NULL
         && (g_error_matches (err, NNP_ERROR, NNP_ERROR_DEVICE)
             || g_error_matches (err, NNP_ERROR, NNP_ERROR_UNSUPPORTED));
}
