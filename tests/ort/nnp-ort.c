/* nnp-ort: run a model with ONNX Runtime, the reference nnpipe is tested against.
 *
 *   nnp-ort MODEL --shape x=1,3,640,640 [--input x=FILE.raw] [--output-dir DIR]
 *           [--threads N] [--warmup W] [--repeat K] [--ort-lib PATH]
 *
 * Mirrors `nnpipe run`: input files are raw little-endian data of the input's
 * element type in C order (float32 for the working models); without --input
 * an input gets nnp_tensor_fill_pattern() with seed = the input's position,
 * exactly like nnpipe.  Each output is written to DIR/NAME.raw (characters
 * outside [A-Za-z0-9._-] replaced by '_') and DIR/outputs.json maps names to
 * shapes.  With --repeat K the run is timed K times (after W untimed runs
 * with --warmup W) and "latency_ms median=X min=Y" is printed.
 *
 * libonnxruntime.so.1 is opened with dlopen() (no build-time dependency):
 * --ort-lib, else $NNP_ORT_LIB, else NNP_ORT_DEFAULT_LIB (set by the build
 * to <source>/.cache/ort/libonnxruntime.so.1).  Exit status 77 when the
 * library cannot be found (meson's "skipped"), 1 on other errors. */
#include <nnpipe/nnpipe.h>

#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "ort-api.h"

#ifndef NNP_ORT_DEFAULT_LIB
#define NNP_ORT_DEFAULT_LIB "libonnxruntime.so.1"
#endif

#define EXIT_SKIP 77

static const OrtFn *api;

/* In an AddressSanitizer build, LeakSanitizer would blame ONNX Runtime's own
 * process-lifetime allocations on us; read by LSan at start-up, unused otherwise. */
const char *__lsan_default_suppressions (void);
const char *
__lsan_default_suppressions (void)
{
  return "leak:libonnxruntime.so\n";
}

#define ORT(type, name) ((Ort##type##Fn) api[ORT_FN_##name])

static void
release (int fn, void *object)
{
  if (object != NULL)
    ((OrtReleaseFn) api[fn]) (object);
}

/* Turns a non-NULL status into a GError and frees it. */
static gboolean
check (OrtStatus *status, const char *what, GError **error)
{
  if (status == NULL)
    return TRUE;
  g_set_error (error, NNP_ERROR, NNP_ERROR_FAILED, "onnxruntime: %s: %s", what,
               ORT (GetErrorMessage, GetErrorMessage) (status));
  release (ORT_FN_ReleaseStatus, status);
  return FALSE;
}

static gboolean
load_api (const char *path, GError **error)
{
  void *lib = dlopen (path, RTLD_NOW | RTLD_LOCAL);
  OrtGetApiBaseFn get_base;
  const OrtApiBase *base;
  OrtStatus *probe;
  gboolean ok;

  if (lib == NULL) {
    g_set_error (error, NNP_ERROR, NNP_ERROR_IO, "cannot load %s: %s", path, dlerror ());
    return FALSE;
  }
  get_base = (OrtGetApiBaseFn) dlsym (lib, "OrtGetApiBase");
  if (get_base == NULL || (base = get_base ()) == NULL) {
    g_set_error (error, NNP_ERROR, NNP_ERROR_FAILED, "%s: no OrtGetApiBase", path);
    return FALSE;
  }
  api = base->GetApi (NNP_ORT_API_VERSION);
  if (api == NULL) {
    g_set_error (error, NNP_ERROR, NNP_ERROR_FAILED, "%s (version %s): no C API version %d", path,
                 base->GetVersionString (), NNP_ORT_API_VERSION);
    return FALSE;
  }
  /* Check the numbering of the first members on a harmless round trip. */
  probe = ORT (CreateStatus, CreateStatus) (ORT_FAIL, "nnp-ort probe");
  ok = probe != NULL && ORT (GetErrorCode, GetErrorCode) (probe) == ORT_FAIL
       && g_strcmp0 (ORT (GetErrorMessage, GetErrorMessage) (probe), "nnp-ort probe") == 0;
  release (ORT_FN_ReleaseStatus, probe);
  if (!ok) {
    g_set_error (error, NNP_ERROR, NNP_ERROR_FAILED, "%s: unexpected C API layout", path);
    return FALSE;
  }
  g_debug ("onnxruntime %s from %s", base->GetVersionString (), path);
  return TRUE;
}

/* ---------------------------------------------------------------------- */

typedef struct {
  char *name;
  NnpShape shape;
  gboolean has_shape;
  char *file;
  int dtype;         /* ONNX element type */
  NnpTensor *tensor; /* owned */
  OrtValue *value;   /* owned */
} Input;

static gboolean
parse_dims (const char *text, NnpShape *shape, GError **error)
{
  g_auto (GStrv) parts = g_strsplit (text, ",", -1);
  int64_t dims[NNP_MAX_RANK];
  int n = (int) g_strv_length (parts);

  if (n > NNP_MAX_RANK || (n == 1 && parts[0][0] == '\0'))
    goto bad;
  for (int i = 0; i < n; i++) {
    char *end = NULL;
    long long d = g_ascii_strtoll (parts[i], &end, 10);
    if (end == parts[i] || *end != '\0' || d < 0)
      goto bad;
    dims[i] = d;
  }
  nnp_shape_set (shape, n, dims);
  return TRUE;
bad:
  g_set_error (error, NNP_ERROR, NNP_ERROR_INVALID, "bad shape '%s' (expected e.g. 1,3,640,640)",
               text);
  return FALSE;
}

static char *
sanitize_name (const char *name)
{
  char *s = g_strdup (name);
  for (char *p = s; *p; p++) {
    if (!g_ascii_isalnum (*p) && *p != '.' && *p != '_' && *p != '-')
      *p = '_';
  }
  return s;
}

static int
compare_doubles (const void *a, const void *b)
{
  double x = *(const double *) a, y = *(const double *) b;
  return x < y ? -1 : x > y;
}

static char **opt_shapes = NULL;
static char **opt_inputs = NULL;
static char *opt_output_dir = NULL;
static char *opt_ort_lib = NULL;
static int opt_threads = 1;
static int opt_repeat = 1;
static int opt_warmup = 0;
static gboolean opt_no_optimization = FALSE;
static char *opt_profile = NULL;
static char *opt_save_optimized = NULL;

static gboolean
run (const char *model_path, GError **error)
{
  OrtEnv *env = NULL;
  OrtSessionOptions *so = NULL;
  OrtSession *session = NULL;
  OrtMemoryInfo *mem = NULL;
  OrtAllocator *alloc = NULL;
  size_t n_in = 0, n_out = 0;
  Input *inputs = NULL;
  char **out_names = NULL;
  OrtValue **outputs = NULL;
  const OrtValue **in_values = NULL;
  const char **in_names = NULL;
  g_autofree double *times = NULL;
  gboolean ok = FALSE;

  if (!check (ORT (CreateEnv, CreateEnv) (ORT_LOGGING_LEVEL_ERROR, "nnp-ort", &env), "CreateEnv",
              error)
      || !check (ORT (CreateSessionOptions, CreateSessionOptions) (&so), "CreateSessionOptions",
                 error)
      || !check (ORT (SetInt, SetIntraOpNumThreads) (so, MAX (opt_threads, 1)),
                 "SetIntraOpNumThreads", error)
      || !check (ORT (SetInt, SetInterOpNumThreads) (so, 1), "SetInterOpNumThreads", error)
      || !check (ORT (SetInt, SetSessionGraphOptimizationLevel) (
                     so, opt_no_optimization ? ORT_DISABLE_ALL : ORT_ENABLE_ALL),
                 "SetSessionGraphOptimizationLevel", error)
      || (opt_profile
          && !check (ORT (SetPath, EnableProfiling) (so, opt_profile), "EnableProfiling", error))
      || (opt_save_optimized
          && !check (ORT (SetPath, SetOptimizedModelFilePath) (so, opt_save_optimized),
                     "SetOptimizedModelFilePath", error))
      || !check (ORT (CreateSession, CreateSession) (env, model_path, so, &session),
                 "CreateSession", error)
      || !check (ORT (CreateCpuMemoryInfo, CreateCpuMemoryInfo) (ORT_ARENA_ALLOCATOR,
                                                                 ORT_MEM_TYPE_DEFAULT, &mem),
                 "CreateCpuMemoryInfo", error)
      || !check (ORT (GetAllocatorWithDefaultOptions, GetAllocatorWithDefaultOptions) (&alloc),
                 "GetAllocatorWithDefaultOptions", error)
      || !check (ORT (SessionGetCount, SessionGetInputCount) (session, &n_in), "input count", error)
      || !check (ORT (SessionGetCount, SessionGetOutputCount) (session, &n_out), "output count",
                 error))
    goto out;

  inputs = g_new0 (Input, n_in);
  in_values = g_new0 (const OrtValue *, n_in);
  in_names = g_new0 (const char *, n_in);
  out_names = g_new0 (char *, n_out + 1);
  outputs = g_new0 (OrtValue *, n_out);

  /* Inputs: name, element type, declared shape. */
  for (size_t i = 0; i < n_in; i++) {
    Input *in = &inputs[i];
    char *name = NULL;
    OrtTypeInfo *ti = NULL;
    const OrtTensorTypeAndShapeInfo *tsi = NULL;
    size_t rank = 0;
    int64_t dims[NNP_MAX_RANK];
    gboolean good;

    if (!check (ORT (SessionGetName, SessionGetInputName) (session, i, alloc, &name), "input name",
                error))
      goto out;
    in->name = g_strdup (name);
    ORT (AllocatorFree, AllocatorFree) (alloc, name);
    good =
        check (ORT (SessionGetTypeInfo, SessionGetInputTypeInfo) (session, i, &ti), "input type",
               error)
        && check (ORT (CastTypeInfoToTensorInfo, CastTypeInfoToTensorInfo) (ti, &tsi),
                  "input tensor info", error)
        && check (ORT (GetTensorElementType, GetTensorElementType) (tsi, &in->dtype),
                  "input element type", error)
        && check (ORT (GetDimensionsCount, GetDimensionsCount) (tsi, &rank), "input rank", error);
    if (good && rank <= NNP_MAX_RANK) {
      good = check (ORT (GetDimensions, GetDimensions) (tsi, dims, rank), "input dims", error);
      if (good) {
        gboolean fixed = TRUE;
        for (size_t d = 0; d < rank; d++)
          fixed = fixed && dims[d] >= 0;
        if (fixed)
          in->has_shape = nnp_shape_set (&in->shape, (int) rank, dims);
      }
    }
    release (ORT_FN_ReleaseTypeInfo, ti);
    if (!good)
      goto out;
  }

  /* --shape and --input override / supply. */
  for (int k = 0; opt_shapes && opt_shapes[k]; k++) {
    const char *eq = strchr (opt_shapes[k], '=');
    gboolean found = FALSE;
    g_autofree char *name = eq ? g_strndup (opt_shapes[k], eq - opt_shapes[k]) : NULL;

    if (eq == NULL) {
      g_set_error (error, NNP_ERROR, NNP_ERROR_INVALID, "--shape %s: expected NAME=DIMS",
                   opt_shapes[k]);
      goto out;
    }
    for (size_t i = 0; i < n_in; i++) {
      if (strcmp (inputs[i].name, name) == 0) {
        if (!parse_dims (eq + 1, &inputs[i].shape, error))
          goto out;
        inputs[i].has_shape = found = TRUE;
      }
    }
    if (!found) {
      g_set_error (error, NNP_ERROR, NNP_ERROR_INVALID, "--shape: the model has no input '%s'",
                   name);
      goto out;
    }
  }
  for (int k = 0; opt_inputs && opt_inputs[k]; k++) {
    const char *eq = strchr (opt_inputs[k], '=');
    gboolean found = FALSE;
    g_autofree char *name = eq ? g_strndup (opt_inputs[k], eq - opt_inputs[k]) : NULL;

    if (eq == NULL) {
      g_set_error (error, NNP_ERROR, NNP_ERROR_INVALID, "--input %s: expected NAME=FILE",
                   opt_inputs[k]);
      goto out;
    }
    for (size_t i = 0; i < n_in; i++) {
      if (strcmp (inputs[i].name, name) == 0) {
        g_free (inputs[i].file);
        inputs[i].file = g_strdup (eq + 1);
        found = TRUE;
      }
    }
    if (!found) {
      g_set_error (error, NNP_ERROR, NNP_ERROR_INVALID, "--input: the model has no input '%s'",
                   name);
      goto out;
    }
  }

  for (size_t i = 0; i < n_in; i++) {
    Input *in = &inputs[i];

    if (!in->has_shape) {
      g_set_error (error, NNP_ERROR, NNP_ERROR_INVALID,
                   "input '%s' has dynamic dims: give --shape %s=...", in->name, in->name);
      goto out;
    }
    in->tensor = nnp_tensor_new ((NnpDType) in->dtype, &in->shape, error);
    if (in->tensor == NULL)
      goto out;
    if (in->file != NULL) {
      g_autofree char *bytes = NULL;
      gsize len = 0;

      if (!g_file_get_contents (in->file, &bytes, &len, error))
        goto out;
      if (len != in->tensor->nbytes) {
        g_autofree char *s = nnp_shape_to_string (&in->shape);
        g_set_error (error, NNP_ERROR, NNP_ERROR_INVALID,
                     "%s: %" G_GSIZE_FORMAT " bytes, input '%s' (%s %s) needs %" G_GSIZE_FORMAT,
                     in->file, len, in->name, nnp_dtype_name (in->tensor->dtype), s,
                     in->tensor->nbytes);
        goto out;
      }
      memcpy (in->tensor->data, bytes, len);
    } else {
      nnp_tensor_fill_pattern (in->tensor, (guint32) i);
    }
    if (!check (ORT (CreateTensorWithDataAsOrtValue, CreateTensorWithDataAsOrtValue) (
                    mem, in->tensor->data, in->tensor->nbytes, in->shape.dims,
                    (size_t) in->shape.rank, in->dtype, &in->value),
                "input tensor", error))
      goto out;
    in_values[i] = in->value;
    in_names[i] = in->name;
  }

  for (size_t o = 0; o < n_out; o++) {
    char *name = NULL;
    if (!check (ORT (SessionGetName, SessionGetOutputName) (session, o, alloc, &name),
                "output name", error))
      goto out;
    out_names[o] = g_strdup (name);
    ORT (AllocatorFree, AllocatorFree) (alloc, name);
  }

  /* Run: W untimed runs, then once, or K timed runs. */
  opt_repeat = MAX (opt_repeat, 1);
  opt_warmup = MAX (opt_warmup, 0);
  times = g_new0 (double, opt_repeat);
  for (int r = -opt_warmup; r < opt_repeat; r++) {
    gint64 t0;
    for (size_t o = 0; o < n_out; o++) {
      release (ORT_FN_ReleaseValue, outputs[o]);
      outputs[o] = NULL;
    }
    t0 = g_get_monotonic_time ();
    if (!check (ORT (Run, Run) (session, NULL, in_names, in_values, n_in,
                                (const char *const *) out_names, n_out, outputs),
                "Run", error))
      goto out;
    if (r >= 0)
      times[r] = (double) (g_get_monotonic_time () - t0) / 1000.0;
  }

  /* Report and write outputs. */
  {
    g_autoptr (GString) json = g_string_new ("{\n");

    if (opt_output_dir != NULL && g_mkdir_with_parents (opt_output_dir, 0755) != 0) {
      g_set_error (error, NNP_ERROR, NNP_ERROR_IO, "cannot create %s: %s", opt_output_dir,
                   g_strerror (errno));
      goto out;
    }
    for (size_t o = 0; o < n_out; o++) {
      OrtTensorTypeAndShapeInfo *info = NULL;
      size_t rank = 0;
      int64_t dims[NNP_MAX_RANK];
      int etype = 0;
      void *data = NULL;
      NnpShape shape;
      gsize nbytes, esize;
      double sum = 0;
      g_autofree char *shape_s = NULL;
      gboolean good;

      good = check (ORT (GetTensorTypeAndShape, GetTensorTypeAndShape) (outputs[o], &info),
                    "output shape", error)
             && check (ORT (GetDimensionsCount, GetDimensionsCount) (info, &rank), "output rank",
                       error)
             && rank <= NNP_MAX_RANK
             && check (ORT (GetDimensions, GetDimensions) (info, dims, rank), "output dims", error)
             && check (ORT (GetTensorElementType, GetTensorElementType) (info, &etype),
                       "output type", error)
             && check (ORT (GetTensorMutableData, GetTensorMutableData) (outputs[o], &data),
                       "output data", error);
      release (ORT_FN_ReleaseTensorTypeAndShapeInfo, info);
      if (!good) {
        if (error != NULL && *error == NULL)
          g_set_error (error, NNP_ERROR, NNP_ERROR_FAILED, "output '%s': rank %zu too high",
                       out_names[o], rank);
        goto out;
      }
      nnp_shape_set (&shape, (int) rank, dims);
      esize = nnp_dtype_size ((NnpDType) etype);
      nbytes = (gsize) nnp_shape_numel (&shape) * esize;
      if (etype == NNP_DTYPE_FLOAT32) {
        for (int64_t i = 0; i < nnp_shape_numel (&shape); i++)
          sum += ((const float *) data)[i];
      }
      shape_s = nnp_shape_to_string (&shape);
      g_print ("output %s: %s %s checksum=%.6g\n", out_names[o], nnp_dtype_name ((NnpDType) etype),
               shape_s, sum);

      if (opt_output_dir != NULL) {
        g_autofree char *base = sanitize_name (out_names[o]);
        g_autofree char *file = g_strconcat (base, ".raw", NULL);
        g_autofree char *path = g_build_filename (opt_output_dir, file, NULL);

        if (!g_file_set_contents (path, data, (gssize) nbytes, error))
          goto out;
        g_string_append_printf (json, "%s  \"%s\": [", o ? ",\n" : "", out_names[o]);
        for (size_t d = 0; d < rank; d++)
          g_string_append_printf (json, "%s%" G_GINT64_FORMAT, d ? ", " : "", dims[d]);
        g_string_append (json, "]");
      }
    }
    if (opt_output_dir != NULL) {
      g_autofree char *path = g_build_filename (opt_output_dir, "outputs.json", NULL);
      g_string_append (json, "\n}\n");
      if (!g_file_set_contents (path, json->str, (gssize) json->len, error))
        goto out;
    }
  }

  if (opt_repeat > 1) {
    double min;
    qsort (times, opt_repeat, sizeof (double), compare_doubles);
    min = times[0];
    g_print ("latency_ms median=%.3f min=%.3f\n",
             opt_repeat % 2 ? times[opt_repeat / 2]
                            : (times[opt_repeat / 2 - 1] + times[opt_repeat / 2]) / 2,
             min);
  }
  ok = TRUE;

out:
  for (size_t o = 0; outputs && o < n_out; o++)
    release (ORT_FN_ReleaseValue, outputs[o]);
  for (size_t i = 0; inputs && i < n_in; i++) {
    release (ORT_FN_ReleaseValue, inputs[i].value);
    if (inputs[i].tensor)
      nnp_tensor_unref (inputs[i].tensor);
    g_free (inputs[i].name);
    g_free (inputs[i].file);
  }
  g_free (inputs);
  g_free (in_values);
  g_free (in_names);
  g_strfreev (out_names);
  g_free (outputs);
  release (ORT_FN_ReleaseMemoryInfo, mem);
  release (ORT_FN_ReleaseSession, session);
  release (ORT_FN_ReleaseSessionOptions, so);
  release (ORT_FN_ReleaseEnv, env);
  return ok;
}

int
main (int argc, char **argv)
{
  g_autoptr (GOptionContext) ctx = NULL;
  g_autoptr (GError) error = NULL;
  const char *lib;
  GOptionEntry entries[] = {
    { "shape", 's', 0, G_OPTION_ARG_STRING_ARRAY, &opt_shapes, "Input shape", "NAME=1,3,H,W" },
    { "input", 'i', 0, G_OPTION_ARG_STRING_ARRAY, &opt_inputs, "Raw input file", "NAME=FILE.raw" },
    { "output-dir", 'o', 0, G_OPTION_ARG_FILENAME, &opt_output_dir,
      "Write NAME.raw and outputs.json here", "DIR" },
    { "threads", 't', 0, G_OPTION_ARG_INT, &opt_threads, "Intra-op threads (default 1)", "N" },
    { "repeat", 'r', 0, G_OPTION_ARG_INT, &opt_repeat, "Timed runs (prints latency)", "K" },
    { "warmup", 0, 0, G_OPTION_ARG_INT, &opt_warmup, "Untimed runs before them (default 0)", "W" },
    { "ort-lib", 0, 0, G_OPTION_ARG_FILENAME, &opt_ort_lib, "Path of libonnxruntime.so.1", "PATH" },
    { "no-optimization", 0, 0, G_OPTION_ARG_NONE, &opt_no_optimization,
      "Graph optimisations off (how far ONNX Runtime disagrees with itself)", NULL },
    { "profile", 0, 0, G_OPTION_ARG_FILENAME, &opt_profile,
      "ONNX Runtime's own per-node profile, written to PREFIX_<date>.json at exit", "PREFIX" },
    { "save-optimized", 0, 0, G_OPTION_ARG_FILENAME, &opt_save_optimized,
      "Write the graph ONNX Runtime runs after its optimisations", "FILE" },
    { NULL }
  };
  int status;

  ctx = g_option_context_new ("MODEL - run a model with ONNX Runtime (the test oracle)");
  g_option_context_add_main_entries (ctx, entries, NULL);
  if (!g_option_context_parse (ctx, &argc, &argv, &error)) {
    g_printerr ("nnp-ort: %s\n", error->message);
    return 2;
  }
  if (argc != 2) {
    g_printerr (
        "usage: nnp-ort MODEL --shape NAME=DIMS [--input NAME=FILE] [--output-dir DIR] [--threads N] [--warmup W] [--repeat K] [--ort-lib PATH]\n");
    return 2;
  }

  lib = opt_ort_lib ? opt_ort_lib : g_getenv ("NNP_ORT_LIB");
  if (lib == NULL || *lib == '\0')
    lib = NNP_ORT_DEFAULT_LIB;
  if (!load_api (lib, &error)) {
    g_printerr ("nnp-ort: %s\n", error->message);
    return g_error_matches (error, NNP_ERROR, NNP_ERROR_IO) ? EXIT_SKIP : 1;
  }

  status = run (argv[1], &error) ? 0 : 1;
  if (error != NULL)
    g_printerr ("nnp-ort: %s\n", error->message);
  g_strfreev (opt_shapes);
  g_strfreev (opt_inputs);
  g_free (opt_output_dir);
  g_free (opt_ort_lib);
  return status;
}
