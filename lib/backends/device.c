/* libnnpipe: devices and tensors in device memory (include/nnpipe/device.h),
 * the backend-neutral front of the backends (lib/backend.h).
 *
 * One NnpDevice per backend context, i.e. per physical device: a spec is
 * parsed here (the backend is its first word), the backend opens or shares
 * its context, and the registry below maps that context to one NnpDevice
 * while it is referenced.  Devices of a host backend (the CPU) live for the
 * process.  Nothing here knows a particular backend. */
#include <nnpipe/device.h>
#include <nnpipe/log.h>

#include "backend.h"
#include "backends/copy-counts.h"
#include "backends/device-spec.h"

#include <string.h>

struct _NnpDevice {
  gint ref_count; /* < 0: lives for the process (host backends) */
  const NnpBackend *backend;
  gpointer ctx; /* the backend's context (a reference, closed at the end) */
  char *name;
};

static GMutex lock;
static GHashTable *devices; /* ctx -> NnpDevice* (borrowed) */

NnpDevice *
nnp_device_open (const char *spec, GError **error)
{
  g_auto (NnpDeviceSpecInfo) info = { 0 };
  g_autofree char *name = NULL;
  const NnpBackend *backend;
  gpointer ctx;
  NnpDevice *dev;

  if (spec == NULL)
    spec = nnp_backend_host ()->name;
  if (!nnp_device_spec_info_parse (spec, &info, error))
    return NULL;
  if (info.threads > 0) {
    g_set_error (
        error, NNP_ERROR, NNP_ERROR_DEVICE,
        "device '%s': a thread count is not a device (give it as the threads of the stage)", spec);
    return NULL;
  }
  if (info.remote_address) {
    g_set_error (
        error, NNP_ERROR, NNP_ERROR_DEVICE,
        "device '%s' is a remote stage: it runs in an nnremote element (nnpipeline builds one), not in this process",
        spec);
    return NULL;
  }
  backend = nnp_backend_find (info.backend);
  ctx = backend->open (info.spec, &name, error);
  if (ctx == NULL)
    return NULL;
  g_mutex_lock (&lock);
  if (devices == NULL)
    devices = g_hash_table_new (g_direct_hash, g_direct_equal);
  dev = g_hash_table_lookup (devices, ctx);
  if (dev) {
    if (dev->ref_count > 0)
      dev->ref_count++;
    g_mutex_unlock (&lock);
    backend->close (ctx); /* the device holds its own reference */
    return dev;
  }
  dev = g_new0 (NnpDevice, 1);
  dev->ref_count = backend->host ? -1 : 1;
  dev->backend = backend;
  dev->ctx = ctx;
  dev->name = name ? g_steal_pointer (&name) : g_strdup (backend->name);
  g_hash_table_insert (devices, ctx, dev);
  g_mutex_unlock (&lock);
  NNP_DEBUG ("nnp-device", "opened %s", dev->name);
  return dev;
}

/* Devices opened by nnp_device_open_kept(), by spec: kept open for the
 * life of the process.  A failed open is remembered too (its message), so a
 * missing platform is probed once. */
typedef struct {
  NnpDevice *device; /* owned ref, NULL when the open failed */
  char *error;       /* the open error */
} KeptDevice;

static GMutex kept_lock;
static GHashTable *kept; /* spec (lower case) -> KeptDevice* */

NnpDevice *
nnp_device_open_kept (const char *spec, GError **error)
{
  g_autofree char *key = g_ascii_strdown (spec ? spec : "cpu", -1);
  KeptDevice *k;

  g_mutex_lock (&kept_lock);
  if (kept == NULL)
    kept = g_hash_table_new (g_str_hash, g_str_equal);
  k = g_hash_table_lookup (kept, key);
  if (k == NULL) {
    GError *err = NULL;
    k = g_new0 (KeptDevice, 1);
    k->device = nnp_device_open (spec ? spec : "cpu", &err);
    if (k->device == NULL) {
      k->error = g_strdup (err->message);
      g_error_free (err);
    } else {
      NNP_DEBUG ("nnp-device", "device '%s' = %s (kept open)", key, k->device->name);
    }
    g_hash_table_insert (kept, g_steal_pointer (&key), k);
  }
  g_mutex_unlock (&kept_lock);
  if (k->device == NULL)
    g_set_error (error, NNP_ERROR, NNP_ERROR_DEVICE, "%s", k->error);
  return k->device;
}

NnpDevice *
nnp_device_ref (NnpDevice *device)
{
  g_return_val_if_fail (device != NULL, NULL);
  if (device->ref_count < 0)
    return device;
  g_mutex_lock (&lock);
  device->ref_count++;
  g_mutex_unlock (&lock);
  return device;
}

void
nnp_device_unref (NnpDevice *device)
{
  if (device == NULL || device->ref_count < 0)
    return;
  g_mutex_lock (&lock);
  if (--device->ref_count > 0) {
    g_mutex_unlock (&lock);
    return;
  }
  g_hash_table_remove (devices, device->ctx);
  g_mutex_unlock (&lock);
  device->backend->close (device->ctx);
  g_free (device->name);
  g_free (device);
}

const NnpBackend *
nnp_device_get_backend_table (NnpDevice *device, gpointer *ctx)
{
  g_return_val_if_fail (device != NULL, NULL);
  if (ctx)
    *ctx = device->ctx;
  return device->backend;
}

const char *
nnp_device_get_backend (NnpDevice *device)
{
  g_return_val_if_fail (device != NULL, NULL);
  return device->backend->name;
}

gboolean
nnp_device_is_host (NnpDevice *device)
{
  g_return_val_if_fail (device != NULL, TRUE);
  return device->backend->host;
}

const char *
nnp_device_get_name (NnpDevice *device)
{
  g_return_val_if_fail (device != NULL, NULL);
  return device->name;
}

gboolean
nnp_device_supports_node (NnpDevice *device, const NnpGraph *graph, const NnpNode *node, char **why)
{
  g_return_val_if_fail (device != NULL && graph != NULL && node != NULL, FALSE);
  if (why)
    *why = NULL;
  return device->backend->supports_node (device->ctx, graph, node, why);
}

gpointer
nnp_device_get_native (NnpDevice *device, const char *what)
{
  g_return_val_if_fail (device != NULL && what != NULL, NULL);
  return device->backend->native ? device->backend->native (device->ctx, what) : NULL;
}

/* ------------------------------------------------------------------ */
/* Tensors in device memory */

typedef struct {
  NnpDevice *device;      /* owned ref */
  gpointer handle;        /* a reference of the backend's buffer */
  GDestroyNotify release; /* the caller's, or NULL */
  gpointer release_data;
} DeviceStorage;

static void
device_storage_release (gpointer data)
{
  DeviceStorage *s = data;

  s->device->backend->buffer_unref (s->handle);
  if (s->release)
    s->release (s->release_data);
  nnp_device_unref (s->device);
  g_free (s);
}

NnpTensor *
nnp_tensor_new_device_wrapped (NnpDevice *device, NnpDType dtype, const NnpShape *shape,
                               gpointer handle, gsize offset, GDestroyNotify release,
                               gpointer release_data)
{
  DeviceStorage *s;
  NnpTensor *t;

  g_return_val_if_fail (device != NULL && shape != NULL && handle != NULL, NULL);
  g_return_val_if_fail (!device->backend->host, NULL);
  g_return_val_if_fail (nnp_shape_is_static (shape) && nnp_dtype_size (dtype) > 0, NULL);
  g_return_val_if_fail (offset % nnp_dtype_size (dtype) == 0, NULL);
  s = g_new0 (DeviceStorage, 1);
  s->device = nnp_device_ref (device);
  s->handle = handle;
  s->release = release;
  s->release_data = release_data;
  device->backend->buffer_ref (handle);
  t = nnp_tensor_new_wrapped (dtype, shape, NULL, device_storage_release, s);
  t->device = device; /* the storage holds the reference */
  t->handle = handle;
  t->offset = offset;
  return t;
}

NnpTensor *
nnp_tensor_new_on (NnpDevice *device, NnpDType dtype, const NnpShape *shape, GError **error)
{
  int64_t n;
  gsize esize, nbytes;
  gpointer buffer;
  NnpTensor *t;

  g_return_val_if_fail (device != NULL && shape != NULL, NULL);
  if (device->backend->host)
    return nnp_tensor_new (dtype, shape, error);
  n = nnp_shape_numel (shape);
  esize = nnp_dtype_size (dtype);
  if (n < 0 || esize == 0 || (n > 0 && (guint64) n > G_MAXSIZE / esize)) {
    g_autofree char *str = nnp_shape_to_string (shape);
    g_set_error (error, NNP_ERROR, NNP_ERROR_INVALID, "cannot make a %s %s tensor on %s",
                 nnp_dtype_name (dtype), str, device->name);
    return NULL;
  }
  nbytes = (gsize) n * esize;
  buffer = device->backend->buffer_alloc (device->ctx, MAX (nbytes, 1), error);
  if (buffer == NULL)
    return NULL;
  t = nnp_tensor_new_device_wrapped (device, dtype, shape, buffer, 0, NULL, NULL);
  device->backend->buffer_unref (buffer); /* the tensor holds its own reference */
  return t;
}

gboolean
nnp_tensor_copy_into (NnpTensor *dst, const NnpTensor *src, GError **error)
{
  g_return_val_if_fail (dst != NULL && src != NULL, FALSE);
  if (dst->dtype != src->dtype || !nnp_shape_equal (&dst->shape, &src->shape)
      || (dst->device == NULL && dst->data == NULL && dst->nbytes > 0)
      || (src->device == NULL && src->data == NULL && src->nbytes > 0)) {
    g_autofree char *ds = nnp_shape_to_string (&dst->shape);
    g_autofree char *ss = nnp_shape_to_string (&src->shape);
    g_set_error (error, NNP_ERROR, NNP_ERROR_INVALID, "copy of a %s %s tensor into a %s %s one",
                 nnp_dtype_name (src->dtype), ss, nnp_dtype_name (dst->dtype), ds);
    return FALSE;
  }
  if (src->nbytes == 0)
    return TRUE;
  if (src->device == NULL && dst->device == NULL) {
    if (dst->data != src->data)
      memcpy (dst->data, src->data, src->nbytes);
    return TRUE;
  }
  if (src->device == NULL) {
    const NnpBackend *b = dst->device->backend;
    if (!b->buffer_write (dst->device->ctx, dst->handle, dst->offset, src->data, src->nbytes,
                          error))
      return FALSE;
    nnp_device_count_copy (TRUE, src->nbytes);
    return TRUE;
  }
  if (dst->device == NULL) {
    const NnpBackend *b = src->device->backend;
    if (!b->buffer_read (src->device->ctx, src->handle, src->offset, dst->data, src->nbytes, error))
      return FALSE;
    nnp_device_count_copy (FALSE, src->nbytes);
    return TRUE;
  }
  if (src->device == dst->device && src->device->backend->buffer_copy) {
    if (src->handle == dst->handle && src->offset == dst->offset)
      return TRUE;
    return src->device->backend->buffer_copy (src->device->ctx, src->handle, src->offset,
                                              dst->handle, dst->offset, src->nbytes, error);
  }
  {
    /* two devices (or no device copy): through the host */
    g_autoptr (NnpTensor) host = nnp_tensor_new (src->dtype, &src->shape, error);
    return host != NULL && nnp_tensor_copy_into (host, src, error)
           && nnp_tensor_copy_into (dst, host, error);
  }
}
