/* OpenCL backend: device selection and the process-wide device registry.
 *
 * Devices are numbered across platforms in platform order ("opencl:N", as
 * `clinfo -l` lists them).  Each opened device gets one context and one
 * in-order queue, shared by every stage of the process; the registry keeps
 * one NnpOclDevice per device index while anybody holds a reference. */
#include "backends/opencl/opencl.h"

#include <nnpipe/log.h>

#include <stdlib.h>
#include <string.h>

#define MAX_PLATFORMS 16
#define MAX_DEVICES 64

static GMutex registry_lock;
static GHashTable *registry; /* GINT_TO_POINTER (index + 1) -> NnpOclDevice* (borrowed) */

typedef struct {
  cl_platform_id platform;
  cl_device_id device;
  cl_device_type type;
  char *name;
  char *platform_name;
} Candidate;

static cl_int
get_info (cl_platform_id platform, cl_device_id device, cl_uint what, size_t size, void *value,
          size_t *size_ret)
{
  return device ? clGetDeviceInfo (device, what, size, value, size_ret)
                : clGetPlatformInfo (platform, what, size, value, size_ret);
}

/* A string property of `device`, or of `platform` when device is NULL;
 * newly allocated, stripped, "" when unknown. */
static char *
info_string (cl_platform_id platform, cl_device_id device, cl_uint what)
{
  size_t len = 0;
  char *s;

  if (get_info (platform, device, what, 0, NULL, &len) != CL_SUCCESS || len == 0)
    return g_strdup ("");
  s = g_malloc0 (len + 1);
  if (get_info (platform, device, what, len, s, NULL) != CL_SUCCESS)
    s[0] = '\0';
  return g_strstrip (s);
}

/* Every device of every platform; returns the count (0 with error set when
 * there is no platform). */
static int
list_devices (Candidate *out, GError **error)
{
  cl_platform_id platforms[MAX_PLATFORMS];
  cl_uint n_platforms = 0;
  int n = 0;
  cl_int err;

  err = clGetPlatformIDs (MAX_PLATFORMS, platforms, &n_platforms);
  if (err != CL_SUCCESS || n_platforms == 0) {
    g_set_error (error, NNP_ERROR, NNP_ERROR_DEVICE, "no OpenCL platform found");
    return 0;
  }
  for (cl_uint p = 0; p < MIN (n_platforms, MAX_PLATFORMS); p++) {
    cl_device_id devices[MAX_DEVICES];
    cl_uint n_devices = 0;
    g_autofree char *pname = info_string (platforms[p], NULL, CL_PLATFORM_NAME);

    if (clGetDeviceIDs (platforms[p], CL_DEVICE_TYPE_ALL, MAX_DEVICES, devices, &n_devices)
        != CL_SUCCESS)
      continue;
    for (cl_uint d = 0; d < MIN (n_devices, MAX_DEVICES) && n < MAX_DEVICES; d++) {
      Candidate *c = &out[n++];
      c->platform = platforms[p];
      c->device = devices[d];
      c->type = 0;
      clGetDeviceInfo (devices[d], CL_DEVICE_TYPE, sizeof c->type, &c->type, NULL);
      c->name = info_string (NULL, devices[d], CL_DEVICE_NAME);
      c->platform_name = g_strdup (pname);
    }
  }
  if (n == 0)
    g_set_error (error, NNP_ERROR, NNP_ERROR_DEVICE, "no OpenCL device found (%u platforms)",
                 n_platforms);
  return n;
}

static void
free_candidates (Candidate *c, int n)
{
  for (int i = 0; i < n; i++) {
    g_free (c[i].name);
    g_free (c[i].platform_name);
  }
}

/* Index of the device named by spec, or -1 with error set. */
static int
select_device (const char *spec, Candidate *c, int n, GError **error)
{
  const char *arg;

  if (g_ascii_strcasecmp (spec, "opencl") == 0) {
    for (int i = 0; i < n; i++)
      if (c[i].type & CL_DEVICE_TYPE_GPU)
        return i;
    return 0;
  }
  if (g_ascii_strncasecmp (spec, "opencl:", 7) != 0) {
    g_set_error (error, NNP_ERROR, NNP_ERROR_DEVICE, "unknown device '%s'", spec);
    return -1;
  }
  arg = spec + 7;
  if (*arg != '\0' && strspn (arg, "0123456789") == strlen (arg)) {
    long k = strtol (arg, NULL, 10);
    if (k >= 0 && k < n)
      return (int) k;
  } else if (*arg != '\0') {
    g_autofree char *want = g_ascii_strdown (arg, -1);
    for (int i = 0; i < n; i++) {
      g_autofree char *dn = g_ascii_strdown (c[i].name, -1);
      g_autofree char *pn = g_ascii_strdown (c[i].platform_name, -1);
      if (strstr (dn, want) || strstr (pn, want))
        return i;
    }
  }
  {
    GString *list = g_string_new (NULL);
    for (int i = 0; i < n; i++)
      g_string_append_printf (list, "%sopencl:%d %s", i ? ", " : "", i, c[i].name);
    g_set_error (error, NNP_ERROR, NNP_ERROR_DEVICE,
                 "OpenCL device '%s' not found (%d device%s: %s)", spec, n, n == 1 ? "" : "s",
                 list->str);
    g_string_free (list, TRUE);
  }
  return -1;
}

static void
release_weight (gpointer data)
{
  if (data)
    clReleaseMemObject ((cl_mem) data);
}

static void
device_free (NnpOclDevice *dev)
{
  if (dev->queue)
    clFinish (dev->queue);
  if (dev->weights)
    g_hash_table_destroy (dev->weights);
  nnp_ocl_release_programs (dev);
  if (dev->queue)
    clReleaseCommandQueue (dev->queue);
  if (dev->context)
    clReleaseContext (dev->context);
  g_mutex_clear (&dev->lock);
  g_free (dev->name);
  g_free (dev->device_name);
  g_free (dev->driver_version);
  g_free (dev);
}

static NnpOclDevice *
device_create (const Candidate *c, int index, GError **error)
{
  NnpOclDevice *dev = g_new0 (NnpOclDevice, 1);
  cl_context_properties props[] = { CL_CONTEXT_PLATFORM, (cl_context_properties) c->platform, 0 };
  cl_int err = CL_SUCCESS;
  size_t wg = 0;
  cl_uint align_bits = 0;

  g_mutex_init (&dev->lock);
  dev->ref_count = 1;
  dev->index = index;
  dev->platform = c->platform;
  dev->device = c->device;
  dev->device_name = g_strdup (c->name);
  dev->driver_version = info_string (NULL, c->device, CL_DRIVER_VERSION);
  dev->name = g_strdup_printf ("opencl:%d (%s, %s)", index, c->name, c->platform_name);
  dev->programs = g_new0 (cl_program, nnp_ocl_n_sources);
  dev->weights = g_hash_table_new_full (g_direct_hash, g_direct_equal,
                                        (GDestroyNotify) nnp_tensor_unref, release_weight);

  dev->context = clCreateContext (props, 1, &c->device, NULL, NULL, &err);
  if (err != CL_SUCCESS) {
    nnp_ocl_set_error (error, dev, err, "creating a context");
    device_free (dev);
    return NULL;
  }
  dev->queue = clCreateCommandQueue (dev->context, c->device, 0, &err);
  if (err != CL_SUCCESS) {
    nnp_ocl_set_error (error, dev, err, "creating a command queue");
    device_free (dev);
    return NULL;
  }
  clGetDeviceInfo (c->device, CL_DEVICE_MAX_WORK_GROUP_SIZE, sizeof wg, &wg, NULL);
  dev->max_work_group = MAX (wg, 1);
  clGetDeviceInfo (c->device, CL_DEVICE_MAX_MEM_ALLOC_SIZE, sizeof dev->max_alloc, &dev->max_alloc,
                   NULL);
  clGetDeviceInfo (c->device, CL_DEVICE_MEM_BASE_ADDR_ALIGN, sizeof align_bits, &align_bits, NULL);
  dev->mem_align = MAX (align_bits / 8, 1);
  NNP_INFO ("nnp-opencl",
            "opened %s: driver %s, max work-group %zu, max alloc %" G_GUINT64_FORMAT " bytes",
            dev->name, dev->driver_version, dev->max_work_group, (guint64) dev->max_alloc);
  return dev;
}

NnpOclDevice *
nnp_ocl_device_open (const char *spec, GError **error)
{
  Candidate cands[MAX_DEVICES];
  NnpOclDevice *dev = NULL;
  int n, index;

  g_return_val_if_fail (spec != NULL, NULL);

  g_mutex_lock (&registry_lock);
  n = list_devices (cands, error);
  if (n == 0)
    goto out;
  index = select_device (spec, cands, n, error);
  if (index < 0)
    goto out;
  if (registry == NULL)
    registry = g_hash_table_new (g_direct_hash, g_direct_equal);
  dev = g_hash_table_lookup (registry, GINT_TO_POINTER (index + 1));
  if (dev) {
    g_atomic_int_inc (&dev->ref_count);
    goto out;
  }
  dev = device_create (&cands[index], index, error);
  if (dev)
    g_hash_table_insert (registry, GINT_TO_POINTER (index + 1), dev);

out:
  g_mutex_unlock (&registry_lock);
  free_candidates (cands, n);
  return dev;
}

NnpOclDevice *
nnp_ocl_device_ref (NnpOclDevice *dev)
{
  g_return_val_if_fail (dev != NULL, NULL);
  g_atomic_int_inc (&dev->ref_count);
  return dev;
}

void
nnp_ocl_device_unref (NnpOclDevice *dev)
{
  if (dev == NULL)
    return;
  g_mutex_lock (&registry_lock);
  if (!g_atomic_int_dec_and_test (&dev->ref_count)) {
    g_mutex_unlock (&registry_lock);
    return;
  }
  g_hash_table_remove (registry, GINT_TO_POINTER (dev->index + 1));
  g_mutex_unlock (&registry_lock);
  NNP_DEBUG ("nnp-opencl", "closing %s", dev->name);
  device_free (dev);
}

cl_mem
nnp_ocl_device_get_weight (NnpOclDevice *dev, NnpTensor *tensor, GError **error)
{
  cl_mem mem;

  g_mutex_lock (&dev->lock);
  mem = g_hash_table_lookup (dev->weights, tensor);
  if (mem == NULL) {
    mem = nnp_ocl_alloc (dev, MAX (tensor->nbytes, 4), "a weight", error);
    if (mem && tensor->nbytes > 0
        && !nnp_ocl_write (dev, mem, 0, tensor->data, tensor->nbytes, FALSE, error)) {
      clReleaseMemObject (mem);
      mem = NULL;
    }
    if (mem) {
      g_hash_table_insert (dev->weights, nnp_tensor_ref (tensor), mem);
      nnp_ocl_count_weight_upload ();
    }
  }
  g_mutex_unlock (&dev->lock);
  return mem;
}
