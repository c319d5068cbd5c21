/* libnnpipe: devices and device tensors (include/nnpipe/device.h), the
 * backend-neutral front of lib/backends/cpu and lib/backends/opencl.
 *
 * One NnpDevice per physical device: "cpu" is a static object, each OpenCL
 * device gets one NnpDevice wrapping the backend's shared NnpOclDevice,
 * kept in a registry while referenced. */
#include <nnpipe/device.h>
#include <nnpipe/log.h>
#include <nnpipe/remote.h>

#include "backends/cpu/cpu.h"
#ifdef NNP_HAVE_OPENCL
#include "backends/opencl/opencl.h"
#endif

#include <string.h>

struct _NnpDevice {
  gint ref_count;                /* < 0: static (cpu) */
  NnpDeviceKind kind;
  char *name;
#ifdef NNP_HAVE_OPENCL
  NnpOclDevice *ocl;             /* owned ref */
#endif
};

static NnpDevice cpu_device = { -1, NNP_DEVICE_CPU, (char *) "cpu" };

static GMutex lock;
#ifdef NNP_HAVE_OPENCL
static GHashTable *devices;      /* NnpOclDevice* -> NnpDevice* (borrowed) */
#endif

#define MAX_SPEC_THREADS 1024

gboolean
nnp_device_spec_parse (const char *text, char **device_out, int *threads_out, GError **error)
{
  g_autofree char *item = g_strstrip (g_strdup (text ? text : ""));
  char *colon = strchr (item, ':');
  int threads = 0;
  gboolean known;

  if (g_ascii_strncasecmp (item, "remote://", 9) == 0) {
    /* a stage on an nnpipe server: "remote://HOST:PORT[|HOST:PORT...]" (docs/remote.md) */
    g_auto (GStrv) hosts = g_strsplit (item + 9, "|", 64);
    for (int i = 0; hosts[i] != NULL; i++) {
      g_autofree char *host = NULL;
      guint16 port;
      GError *err = NULL;
      if (!nnp_remote_address_parse (hosts[i], &host, &port, &err)) {
        g_set_error (error, NNP_ERROR, NNP_ERROR_INVALID, "invalid device '%s': %s", text,
                     err->message);
        g_error_free (err);
        return FALSE;
      }
    }
    memcpy (item, "remote://", 9);
    if (device_out)
      *device_out = g_strdup (item);
    if (threads_out)
      *threads_out = 0;
    return TRUE;
  }
  if (g_ascii_strncasecmp (item, "opencl", 6) == 0 && (item[6] == '\0' || item[6] == ':')) {
    /* "opencl:N" / "opencl:NAME": the whole item names the device */
    if (item[6] == ':' && item[7] == '\0')
      goto malformed;
    memcpy (item, "opencl", 6);
  } else {
    if (colon) {
      char *end = NULL;
      gint64 t = g_ascii_strtoll (colon + 1, &end, 10);

      if (end == colon + 1 || *end != '\0' || t < 1 || t > MAX_SPEC_THREADS)
        goto malformed;
      threads = (int) t;
      *colon = '\0';
    }
    if (g_ascii_strcasecmp (item, "cpu") != 0)
      goto malformed;
    strcpy (item, "cpu");
  }
  if (device_out)
    *device_out = g_strdup (item);
  if (threads_out)
    *threads_out = threads;
  return TRUE;

malformed:
  /* a device kind we do not know, or a known one written wrong */
  if (colon)
    *colon = '\0';
  known = g_ascii_strcasecmp (item, "cpu") == 0 || g_ascii_strncasecmp (item, "opencl", 6) == 0;
  g_set_error (error, NNP_ERROR, known ? NNP_ERROR_INVALID : NNP_ERROR_DEVICE,
               "invalid device '%s': expected cpu, cpu:THREADS (1..%d), opencl, opencl:N, "
               "opencl:NAME or remote://HOST:PORT", text ? text : "", MAX_SPEC_THREADS);
  return FALSE;
}

NnpDevice *
nnp_device_open (const char *spec, GError **error)
{
  g_autofree char *device = NULL;
  int threads = 0;

  if (spec == NULL)
    return &cpu_device;
  if (!nnp_device_spec_parse (spec, &device, &threads, error))
    return NULL;
  if (threads > 0) {
    g_set_error (error, NNP_ERROR, NNP_ERROR_DEVICE, "device '%s': a thread count is not a "
                 "device (give it as the threads of the stage)", spec);
    return NULL;
  }
  if (strcmp (device, "cpu") == 0)
    return &cpu_device;
  if (g_str_has_prefix (device, "remote://")) {
    g_set_error (error, NNP_ERROR, NNP_ERROR_DEVICE, "device '%s' is a remote stage: it runs "
                 "in an nnremote element (nnpipeline builds one), not in this process", spec);
    return NULL;
  }
  {
#ifdef NNP_HAVE_OPENCL
    NnpOclDevice *ocl = nnp_ocl_device_open (device, error);
    NnpDevice *dev;

    if (ocl == NULL)
      return NULL;
    g_mutex_lock (&lock);
    if (devices == NULL)
      devices = g_hash_table_new (g_direct_hash, g_direct_equal);
    dev = g_hash_table_lookup (devices, ocl);
    if (dev) {
      dev->ref_count++;
      g_mutex_unlock (&lock);
      nnp_ocl_device_unref (ocl);
      return dev;
    }
    dev = g_new0 (NnpDevice, 1);
    dev->ref_count = 1;
    dev->kind = NNP_DEVICE_OPENCL;
    dev->ocl = ocl;
    dev->name = g_strdup (ocl->name);
    g_hash_table_insert (devices, ocl, dev);
    g_mutex_unlock (&lock);
    return dev;
#else
    g_set_error (error, NNP_ERROR, NNP_ERROR_DEVICE,
                 "device '%s': libnnpipe was built without OpenCL", spec);
    return NULL;
#endif
  }
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
#ifdef NNP_HAVE_OPENCL
  g_hash_table_remove (devices, device->ocl);
#endif
  g_mutex_unlock (&lock);
#ifdef NNP_HAVE_OPENCL
  nnp_ocl_device_unref (device->ocl);
#endif
  g_free (device->name);
  g_free (device);
}

NnpDeviceKind
nnp_device_get_kind (NnpDevice *device)
{
  g_return_val_if_fail (device != NULL, NNP_DEVICE_CPU);
  return device->kind;
}

const char *
nnp_device_get_name (NnpDevice *device)
{
  g_return_val_if_fail (device != NULL, NULL);
  return device->name;
}

gboolean
nnp_device_supports_node (NnpDevice *device, const NnpGraph *graph, const NnpNode *node,
                          char **why)
{
  g_return_val_if_fail (device != NULL && graph != NULL && node != NULL, FALSE);
  if (why)
    *why = NULL;
#ifdef NNP_HAVE_OPENCL
  if (device->kind == NNP_DEVICE_OPENCL)
    return nnp_ocl_supports_node (graph, node, why);
#endif
  {
    const NnpCpuKernel *k = nnp_cpu_kernel (node->op);
    if (k == NULL || k->run == NULL) {
      if (why)
        *why = g_strdup_printf ("%s: no CPU kernel", node->op_type);
      return FALSE;
    }
  }
  return TRUE;
}

#ifdef NNP_HAVE_OPENCL
NnpOclDevice *
nnp_device_get_ocl (NnpDevice *device)
{
  return device && device->kind == NNP_DEVICE_OPENCL ? device->ocl : NULL;
}
#endif

/* One field of the OpenCL device behind `device`, NULL on the CPU. */
#ifdef NNP_HAVE_OPENCL
#define CL_FIELD(d, field) ((d)->kind == NNP_DEVICE_OPENCL ? (gpointer) (d)->ocl->field : NULL)
#else
#define CL_FIELD(d, field) NULL
#endif

gpointer
nnp_device_get_cl_context (NnpDevice *device)
{
  g_return_val_if_fail (device != NULL, NULL);
  return CL_FIELD (device, context);
}

gpointer
nnp_device_get_cl_queue (NnpDevice *device)
{
  g_return_val_if_fail (device != NULL, NULL);
  return CL_FIELD (device, queue);
}

gpointer
nnp_device_get_cl_device_id (NnpDevice *device)
{
  g_return_val_if_fail (device != NULL, NULL);
  return CL_FIELD (device, device);
}

/* ------------------------------------------------------------------ */
/* Device tensors */

static gboolean
tensor_size (NnpDType dtype, const NnpShape *shape, gsize *nbytes, GError **error)
{
  int64_t n = nnp_shape_numel (shape);
  gsize esize = nnp_dtype_size (dtype);

  if (n < 0 || esize == 0 || (n > 0 && (guint64) n > G_MAXSIZE / esize)) {
    g_autofree char *s = nnp_shape_to_string (shape);
    g_set_error (error, NNP_ERROR, NNP_ERROR_INVALID, "cannot make a %s %s device tensor",
                 nnp_dtype_name (dtype), s);
    return FALSE;
  }
  *nbytes = (gsize) n * esize;
  return TRUE;
}

NnpDeviceTensor *
nnp_device_tensor_new (NnpDevice *device, NnpDType dtype, const NnpShape *shape, GError **error)
{
  gsize nbytes;

  g_return_val_if_fail (device != NULL && shape != NULL, NULL);
  if (!tensor_size (dtype, shape, &nbytes, error))
    return NULL;
#ifdef NNP_HAVE_OPENCL
  if (device->kind == NNP_DEVICE_OPENCL) {
    cl_mem mem = nnp_ocl_alloc (device->ocl, nbytes, "a device tensor", error);
    NnpDeviceTensor *t;
    if (mem == NULL)
      return NULL;
    t = nnp_device_tensor_new_wrapped (device, dtype, shape, mem, 0, NULL, NULL);
    clReleaseMemObject (mem);     /* the tensor holds its own reference */
    return t;
  }
#endif
  g_set_error (error, NNP_ERROR, NNP_ERROR_DEVICE, "%s has no device memory: use NnpTensor",
               device->name);
  return NULL;
}

NnpDeviceTensor *
nnp_device_tensor_new_wrapped (NnpDevice *device, NnpDType dtype, const NnpShape *shape,
                               gpointer handle, gsize offset, GDestroyNotify release,
                               gpointer release_data)
{
  NnpDeviceTensor *t;
  gsize nbytes;

  g_return_val_if_fail (device != NULL && shape != NULL && handle != NULL, NULL);
  g_return_val_if_fail (device->kind == NNP_DEVICE_OPENCL, NULL);
  g_return_val_if_fail (tensor_size (dtype, shape, &nbytes, NULL), NULL);
  t = g_new0 (NnpDeviceTensor, 1);
  t->dtype = dtype;
  t->shape = *shape;
  t->nbytes = nbytes;
  t->device = nnp_device_ref (device);
  t->handle = handle;
  t->offset = offset;
  t->ref_count = 1;
  t->release = release;
  t->release_data = release_data;
#ifdef NNP_HAVE_OPENCL
  clRetainMemObject ((cl_mem) handle);
#endif
  return t;
}

NnpDeviceTensor *
nnp_device_tensor_ref (NnpDeviceTensor *tensor)
{
  g_return_val_if_fail (tensor != NULL, NULL);
  g_atomic_int_inc (&tensor->ref_count);
  return tensor;
}

void
nnp_device_tensor_unref (NnpDeviceTensor *tensor)
{
  if (tensor == NULL || !g_atomic_int_dec_and_test (&tensor->ref_count))
    return;
#ifdef NNP_HAVE_OPENCL
  clReleaseMemObject ((cl_mem) tensor->handle);
#endif
  if (tensor->release)
    tensor->release (tensor->release_data);
  nnp_device_unref (tensor->device);
  g_free (tensor);
}

static gboolean
check_pair (const NnpDeviceTensor *d, const NnpTensor *h, GError **error)
{
  if (d->dtype != h->dtype || !nnp_shape_equal (&d->shape, &h->shape)
      || (h->data == NULL && h->nbytes > 0)) {
    g_autofree char *ds = nnp_shape_to_string (&d->shape);
    g_autofree char *hs = nnp_shape_to_string (&h->shape);
    g_set_error (error, NNP_ERROR, NNP_ERROR_INVALID, "device tensor %s %s vs host tensor %s %s",
                 nnp_dtype_name (d->dtype), ds, nnp_dtype_name (h->dtype), hs);
    return FALSE;
  }
  return TRUE;
}

gboolean
nnp_device_tensor_upload (NnpDeviceTensor *dst, const NnpTensor *src, GError **error)
{
  g_return_val_if_fail (dst != NULL && src != NULL, FALSE);
  if (!check_pair (dst, src, error))
    return FALSE;
#ifdef NNP_HAVE_OPENCL
  return nnp_ocl_write (dst->device->ocl, dst->handle, dst->offset, src->data, src->nbytes, TRUE,
                        error);
#else
  return FALSE;
#endif
}

gboolean
nnp_device_tensor_download (NnpDeviceTensor *src, NnpTensor *dst, GError **error)
{
  g_return_val_if_fail (dst != NULL && src != NULL, FALSE);
  if (!check_pair (src, dst, error))
    return FALSE;
#ifdef NNP_HAVE_OPENCL
  return nnp_ocl_read (src->device->ocl, src->handle, src->offset, dst->data, dst->nbytes, TRUE,
                       error);
#else
  return FALSE;
#endif
}
