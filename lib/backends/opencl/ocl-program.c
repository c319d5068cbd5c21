/* OpenCL backend: programs built from the embedded kernels/NAME.cl files.
 *
 * Each program is the prelude (the NnpActivation enum, ocl-codes.h,
 * ../act-scalar.h and kernels/common.cl, see embed-cl.py) followed by one
 * kernel file, built once per device on first use with OCL_BUILD_OPTIONS.
 * Built programs are cached on disk as binaries under
 *   $XDG_CACHE_HOME/nnpipe/opencl/<sha256 of device, driver, options, sources>.bin
 * so a second start skips the compiler; a cache file that fails to load or
 * build is ignored (and rewritten).  NNP_OPENCL_CACHE=0 disables the cache. */
#include "backends/opencl/opencl.h"

#include <nnpipe/log.h>

#include <glib/gstdio.h>
#include <string.h>

#define OCL_BUILD_OPTIONS "-cl-std=CL1.2"
#define BUILD_LOG_LINES 8

/* clang-format off */
#define E(x) { x, #x },
static const struct {
  cl_int code;
  const char *name;
} cl_errors[] = {
    E (CL_SUCCESS) E (CL_DEVICE_NOT_FOUND) E (CL_DEVICE_NOT_AVAILABLE)
    E (CL_COMPILER_NOT_AVAILABLE) E (CL_MEM_OBJECT_ALLOCATION_FAILURE)
    E (CL_OUT_OF_RESOURCES) E (CL_OUT_OF_HOST_MEMORY) E (CL_BUILD_PROGRAM_FAILURE)
    E (CL_INVALID_VALUE) E (CL_INVALID_DEVICE) E (CL_INVALID_CONTEXT)
    E (CL_INVALID_COMMAND_QUEUE) E (CL_INVALID_MEM_OBJECT) E (CL_INVALID_BINARY)
    E (CL_INVALID_BUILD_OPTIONS) E (CL_INVALID_PROGRAM) E (CL_INVALID_PROGRAM_EXECUTABLE)
    E (CL_INVALID_KERNEL_NAME) E (CL_INVALID_KERNEL) E (CL_INVALID_ARG_INDEX)
    E (CL_INVALID_ARG_VALUE) E (CL_INVALID_ARG_SIZE) E (CL_INVALID_KERNEL_ARGS)
    E (CL_INVALID_WORK_DIMENSION) E (CL_INVALID_WORK_GROUP_SIZE) E (CL_INVALID_WORK_ITEM_SIZE)
    E (CL_INVALID_GLOBAL_OFFSET) E (CL_INVALID_EVENT_WAIT_LIST) E (CL_INVALID_OPERATION)
    E (CL_INVALID_BUFFER_SIZE) E (CL_INVALID_GLOBAL_WORK_SIZE) E (CL_MISALIGNED_SUB_BUFFER_OFFSET)
    E (CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST)
};
#undef E
/* clang-format on */

const char *
nnp_ocl_error_name (cl_int err)
{
  for (guint i = 0; i < G_N_ELEMENTS (cl_errors); i++)
    if (cl_errors[i].code == err)
      return cl_errors[i].name;
  return "CL error";
}

void
nnp_ocl_set_error (GError **error, NnpOclDevice *dev, cl_int err, const char *format, ...)
{
  va_list args;
  g_autofree char *what = NULL;

  va_start (args, format);
  what = g_strdup_vprintf (format, args);
  va_end (args);
  g_set_error (error, NNP_ERROR, NNP_ERROR_DEVICE, "%s: %s: %s (%d)",
               dev && dev->name ? dev->name : "opencl", what, nnp_ocl_error_name (err), err);
}

static int
source_index (const char *file)
{
  for (int i = 0; i < nnp_ocl_n_sources; i++)
    if (strcmp (nnp_ocl_sources[i].name, file) == 0)
      return i;
  return -1;
}

static char *
cache_path (NnpOclDevice *dev, int index)
{
  g_autoptr (GChecksum) sum = g_checksum_new (G_CHECKSUM_SHA256);
  const char *e = g_getenv ("NNP_OPENCL_CACHE");
  g_autofree char *base = NULL;

  if (e && strcmp (e, "0") == 0)
    return NULL;
  g_checksum_update (sum, (const guchar *) dev->device_name, -1);
  g_checksum_update (sum, (const guchar *) "\n", 1);
  g_checksum_update (sum, (const guchar *) dev->driver_version, -1);
  g_checksum_update (sum, (const guchar *) "\n" OCL_BUILD_OPTIONS "\n", -1);
  g_checksum_update (sum, (const guchar *) nnp_ocl_prelude, -1);
  g_checksum_update (sum, (const guchar *) nnp_ocl_sources[index].text, -1);
  base = g_strconcat (g_checksum_get_string (sum), ".bin", NULL);
  return g_build_filename (g_get_user_cache_dir (), "nnpipe", "opencl", base, NULL);
}

static char *
build_log_head (NnpOclDevice *dev, cl_program program)
{
  size_t len = 0;
  g_autofree char *log = NULL;
  g_auto (GStrv) lines = NULL;
  GString *out = g_string_new (NULL);

  clGetProgramBuildInfo (program, dev->device, CL_PROGRAM_BUILD_LOG, 0, NULL, &len);
  log = g_malloc0 (len + 1);
  if (len > 0)
    clGetProgramBuildInfo (program, dev->device, CL_PROGRAM_BUILD_LOG, len, log, NULL);
  lines = g_strsplit (g_strstrip (log), "\n", -1);
  for (int i = 0, shown = 0; lines[i] && shown < BUILD_LOG_LINES; i++) {
    if (*g_strstrip (lines[i]) == '\0')
      continue;
    g_string_append_printf (out, "%s%s", shown ? " | " : "", lines[i]);
    shown++;
  }
  return g_string_free (out, FALSE);
}

static cl_program
load_cached (NnpOclDevice *dev, const char *path)
{
  g_autofree guchar *bytes = NULL;
  gsize len = 0;
  cl_int err = CL_SUCCESS, status = CL_SUCCESS;
  const unsigned char *bins[1];
  cl_program program;

  if (path == NULL || !g_file_get_contents (path, (char **) &bytes, &len, NULL) || len == 0)
    return NULL;
  bins[0] = bytes;
  program = clCreateProgramWithBinary (dev->context, 1, &dev->device, &len, bins, &status, &err);
  if (err != CL_SUCCESS || status != CL_SUCCESS) {
    if (program)
      clReleaseProgram (program);
    return NULL;
  }
  if (clBuildProgram (program, 1, &dev->device, OCL_BUILD_OPTIONS, NULL, NULL) != CL_SUCCESS) {
    clReleaseProgram (program);
    return NULL;
  }
  return program;
}

static void
save_cached (NnpOclDevice *dev, cl_program program, const char *path)
{
  size_t size = 0;
  g_autofree unsigned char *bin = NULL;
  unsigned char *bins[1];
  g_autofree char *dir = NULL;

  if (path == NULL)
    return;
  if (clGetProgramInfo (program, CL_PROGRAM_BINARY_SIZES, sizeof size, &size, NULL) != CL_SUCCESS
      || size == 0)
    return;
  bin = g_malloc (size);
  bins[0] = bin;
  if (clGetProgramInfo (program, CL_PROGRAM_BINARIES, sizeof bins, bins, NULL) != CL_SUCCESS)
    return;
  dir = g_path_get_dirname (path);
  if (g_mkdir_with_parents (dir, 0755) != 0
      || !g_file_set_contents (path, (const char *) bin, size, NULL))
    NNP_DEBUG ("nnp-opencl", "could not write the program cache %s", path);
}

static cl_program
build_program (NnpOclDevice *dev, int index, GError **error)
{
  const char *texts[2] = { nnp_ocl_prelude, nnp_ocl_sources[index].text };
  cl_int err = CL_SUCCESS;
  cl_program program;
  g_autofree char *path = cache_path (dev, index);
  gint64 t0 = g_get_monotonic_time ();

  program = load_cached (dev, path);
  if (program) {
    NNP_DEBUG ("nnp-opencl", "%s: %s loaded from cache %s", dev->name, nnp_ocl_sources[index].name,
               path);
    return program;
  }
  program = clCreateProgramWithSource (dev->context, 2, texts, NULL, &err);
  if (err != CL_SUCCESS) {
    nnp_ocl_set_error (error, dev, err, "creating program %s", nnp_ocl_sources[index].name);
    return NULL;
  }
  err = clBuildProgram (program, 1, &dev->device, OCL_BUILD_OPTIONS, NULL, NULL);
  if (err != CL_SUCCESS) {
    g_autofree char *log = build_log_head (dev, program);
    g_set_error (error, NNP_ERROR, NNP_ERROR_DEVICE, "%s: kernel file %s failed to build (%s): %s",
                 dev->name, nnp_ocl_sources[index].name, nnp_ocl_error_name (err), log);
    clReleaseProgram (program);
    return NULL;
  }
  NNP_INFO ("nnp-opencl", "%s: built %s in %.0f ms", dev->name, nnp_ocl_sources[index].name,
            (g_get_monotonic_time () - t0) / 1000.0);
  save_cached (dev, program, path);
  return program;
}

cl_kernel
nnp_ocl_create_kernel (NnpOclDevice *dev, const char *file, const char *kernel, GError **error)
{
  int index = source_index (file);
  cl_program program;
  cl_kernel k;
  cl_int err = CL_SUCCESS;

  g_return_val_if_fail (index >= 0, NULL);
  g_mutex_lock (&dev->lock);
  if (dev->programs[index] == NULL)
    dev->programs[index] = build_program (dev, index, error);
  program = dev->programs[index];
  g_mutex_unlock (&dev->lock);
  if (program == NULL)
    return NULL;
  k = clCreateKernel (program, kernel, &err);
  if (err != CL_SUCCESS) {
    nnp_ocl_set_error (error, dev, err, "kernel %s of %s", kernel, file);
    return NULL;
  }
  return k;
}

void
nnp_ocl_release_programs (NnpOclDevice *dev)
{
  for (int i = 0; dev->programs && i < nnp_ocl_n_sources; i++)
    if (dev->programs[i])
      clReleaseProgram (dev->programs[i]);
  g_free (dev->programs);
  dev->programs = NULL;
}
