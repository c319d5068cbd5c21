/* nnp-conformance: run ONNX backend conformance cases through libnnpipe.
 *
 *   nnp-conformance [--filter SUBSTR] [--verbose] [--no-fork] [--timeout S]
 *                   [--expect FILE] DIR...
 *
 * Each DIR is either one case (a folder holding model.onnx and
 * test_data_set_N/) or a folder of cases (e.g. .../libonnx-testdata/data/node).
 * A case is loaded, specialised to the shapes of its inputs, prepared as one
 * CPU stage over every node and run on each data set; every output must match
 * the reference: same dtype and shape, floats within |a-b| <= atol + rtol*|b|
 * (NaN equals NaN), everything else bit-exact.
 *
 * Classification:
 *   skipped  NNP_ERROR_UNSUPPORTED from load, specialize or stage preparation
 *   failed   any other error, a mismatch, a crash or a timeout
 *   passed   otherwise
 *
 * By default every case runs in a child process (fork), so a crash or a hang
 * in one case is reported as that case's failure and the run goes on.
 *
 * --bad-reference FILE names cases whose reference outputs are wrong (with the
 * reason): they are not run and count as skipped.
 *
 * --expect FILE names cases (one per line, '#' comments) that must pass: one
 * of them skipped, or absent from the folders given, is a failure too
 * ("REGRESSED"), so the test that passes the list catches a case that used
 * to pass and no longer does.
 *
 * Closing line: "N passed, N failed, N skipped"; exit status 1 if any failed,
 * and when no case was found (a failure naming libonnx-testdata, not a skip).
 */
#include <nnpipe/nnpipe.h>
#include <nnpipe/specialize.h>

#include "graph/graph-edit.h"
#include "onnx/model-private.h"
#include "tensor-private.h"

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define RTOL 1e-4
#define ATOL 1e-5

typedef enum {
  CASE_PASSED = 'P',
  CASE_FAILED = 'F',
  CASE_SKIPPED = 'S',
} CaseResult;

static char *opt_filter = NULL;
static gboolean opt_verbose = FALSE;
static gboolean opt_no_fork = FALSE;
static int opt_timeout = 120;
static double opt_rtol = RTOL;
static double opt_atol = ATOL;
static char *opt_expect = NULL;
static char *opt_bad_reference = NULL;

/* ---------------------------------------------------------------------- */
/* Reference data */

static NnpTensor *
read_pb (const char *path, char **name_out, GError **error)
{
  g_autofree char *bytes = NULL;
  gsize len = 0;

  if (!g_file_get_contents (path, &bytes, &len, error))
    return NULL;
  return nnp_tensor_from_onnx_bytes ((const guint8 *) bytes, len, name_out, error);
}

/* Loads DIR/<prefix>_0.pb, _1.pb, ... until one is missing.  Returns an array
 * of NnpTensor* (owned refs, freed by the array); names in *names (owned). */
static GPtrArray *
read_pb_list (const char *dir, const char *prefix, GPtrArray *names, GError **error)
{
  g_autoptr (GPtrArray) tensors =
      g_ptr_array_new_with_free_func ((GDestroyNotify) nnp_tensor_unref);

  for (int k = 0;; k++) {
    g_autofree char *base = g_strdup_printf ("%s_%d.pb", prefix, k);
    g_autofree char *path = g_build_filename (dir, base, NULL);
    char *name = NULL;
    NnpTensor *t;

    if (!g_file_test (path, G_FILE_TEST_EXISTS))
      break;
    t = read_pb (path, &name, error);
    if (t == NULL) {
      g_prefix_error (error, "%s: ", base);
      return NULL;
    }
    g_ptr_array_add (tensors, t);
    g_ptr_array_add (names, name);
  }
  return g_steal_pointer (&tensors);
}

/* Sorted list of test_data_set_* folders (numeric order). */
static gint
compare_data_set_names (gconstpointer a, gconstpointer b)
{
  const char *sa = *(const char *const *) a;
  const char *sb = *(const char *const *) b;
  long na = strtol (sa + strlen ("test_data_set_"), NULL, 10);
  long nb = strtol (sb + strlen ("test_data_set_"), NULL, 10);

  return na < nb ? -1 : na > nb;
}

static GPtrArray *
list_data_sets (const char *case_dir)
{
  GPtrArray *sets = g_ptr_array_new_with_free_func (g_free);
  g_autoptr (GDir) dir = g_dir_open (case_dir, 0, NULL);
  const char *entry;

  if (dir == NULL)
    return sets;
  while ((entry = g_dir_read_name (dir)) != NULL) {
    if (g_str_has_prefix (entry, "test_data_set_"))
      g_ptr_array_add (sets, g_strdup (entry));
  }
  g_ptr_array_sort (sets, compare_data_set_names);
  return sets;
}

/* ---------------------------------------------------------------------- */
/* Comparison */

static float
half_to_float (uint16_t h)
{
  uint32_t sign = (uint32_t) (h >> 15) << 31;
  uint32_t exp = (h >> 10) & 0x1f;
  uint32_t mant = h & 0x3ff;
  uint32_t bits;
  float f;

  if (exp == 0) {
    /* zero or subnormal */
    f = ldexpf ((float) mant, -24);
    return sign ? -f : f;
  }
  if (exp == 31)
    bits = sign | 0x7f800000u | (mant << 13);
  else
    bits = sign | ((exp + 112) << 23) | (mant << 13);
  memcpy (&f, &bits, sizeof f);
  return f;
}

static gboolean
dtype_is_float (NnpDType dtype)
{
  return dtype == NNP_DTYPE_FLOAT32 || dtype == NNP_DTYPE_FLOAT64 || nnp_dtype_is_half (dtype);
}

static double
element_as_double (const NnpTensor *t, int64_t i)
{
  switch (t->dtype) {
    case NNP_DTYPE_FLOAT32: return ((const float *) t->data)[i];
    case NNP_DTYPE_FLOAT64: return ((const double *) t->data)[i];
    case NNP_DTYPE_FLOAT16: return half_to_float (((const uint16_t *) t->data)[i]);
    case NNP_DTYPE_BFLOAT16: {
      float f;
      nnp_bf16_to_f32 ((const guint16 *) t->data + i, &f, 1);
      return f;
    }
    case NNP_DTYPE_UINT8: return ((const uint8_t *) t->data)[i];
    case NNP_DTYPE_INT8: return ((const int8_t *) t->data)[i];
    case NNP_DTYPE_UINT16: return ((const uint16_t *) t->data)[i];
    case NNP_DTYPE_INT16: return ((const int16_t *) t->data)[i];
    case NNP_DTYPE_INT32: return ((const int32_t *) t->data)[i];
    case NNP_DTYPE_INT64: return (double) ((const int64_t *) t->data)[i];
    case NNP_DTYPE_BOOL: return ((const uint8_t *) t->data)[i];
    case NNP_DTYPE_UINT32: return ((const uint32_t *) t->data)[i];
    case NNP_DTYPE_UINT64: return (double) ((const uint64_t *) t->data)[i];
    default: return NAN;
  }
}

static char *
index_to_string (const NnpShape *shape, int64_t flat)
{
  GString *s = g_string_new ("[");
  int64_t idx[NNP_MAX_RANK];

  for (int d = shape->rank - 1; d >= 0; d--) {
    idx[d] = shape->dims[d] > 0 ? flat % shape->dims[d] : 0;
    flat = shape->dims[d] > 0 ? flat / shape->dims[d] : 0;
  }
  for (int d = 0; d < shape->rank; d++)
    g_string_append_printf (s, "%s%" G_GINT64_FORMAT, d ? "," : "", idx[d]);
  g_string_append_c (s, ']');
  return g_string_free (s, FALSE);
}

/* Compare `got` with `want`.  On mismatch returns FALSE and a message. */
static gboolean
compare_tensors (const NnpTensor *got, const NnpTensor *want, char **message)
{
  int64_t n, bad = 0, worst = -1;
  double worst_excess = -1.0;

  if (got->dtype != want->dtype) {
    *message = g_strdup_printf ("dtype %s, expected %s", nnp_dtype_name (got->dtype),
                                nnp_dtype_name (want->dtype));
    return FALSE;
  }
  if (!nnp_shape_equal (&got->shape, &want->shape)) {
    g_autofree char *gs = nnp_shape_to_string (&got->shape);
    g_autofree char *ws = nnp_shape_to_string (&want->shape);
    *message = g_strdup_printf ("shape %s, expected %s", gs, ws);
    return FALSE;
  }
  n = nnp_tensor_numel (want);
  if (n > 0 && (got->data == NULL || want->data == NULL)) {
    *message = g_strdup ("tensor has no data");
    return FALSE;
  }

  if (dtype_is_float (want->dtype)) {
    for (int64_t i = 0; i < n; i++) {
      double a = element_as_double (got, i), b = element_as_double (want, i);
      double excess;

      if (isnan (a) && isnan (b))
        continue;
      if (isinf (b) && a == b)
        continue;
      excess = fabs (a - b) - (opt_atol + opt_rtol * fabs (b));
      if (isnan (excess))
        excess = INFINITY;
      if (excess > 0) {
        bad++;
        if (excess > worst_excess) {
          worst_excess = excess;
          worst = i;
        }
      }
    }
  } else {
    gsize esize = nnp_dtype_size (want->dtype);

    if (esize == 0) {
      *message = g_strdup_printf ("cannot compare dtype %s", nnp_dtype_name (want->dtype));
      return FALSE;
    }
    for (int64_t i = 0; i < n; i++) {
      if (memcmp ((const guint8 *) got->data + i * esize, (const guint8 *) want->data + i * esize,
                  esize)
          != 0) {
        bad++;
        if (worst < 0)
          worst = i;
      }
    }
  }

  if (bad > 0) {
    g_autofree char *where = index_to_string (&want->shape, worst);
    double a = element_as_double (got, worst), b = element_as_double (want, worst);

    *message =
        g_strdup_printf ("%" G_GINT64_FORMAT "/%" G_GINT64_FORMAT
                         " elements differ; worst at %s: got %.9g, expected %.9g (|diff| %.3g)",
                         bad, n, where, a, b, fabs (a - b));
    return FALSE;
  }
  return TRUE;
}

/* ---------------------------------------------------------------------- */
/* One case */

static int
find_name (GPtrArray *names, const char *name)
{
  for (guint i = 0; i < names->len; i++) {
    const char *n = g_ptr_array_index (names, i);
    if (n != NULL && g_strcmp0 (n, name) == 0)
      return (int) i;
  }
  return -1;
}

/* Specialisation refuses data-dependent shapes ("node 'r' (Reshape): input 1
 * ('shape') must be a constant").  The conformance cases often feed such
 * operands (Reshape shapes, Slice starts, Resize scales...) as graph inputs;
 * nnpipe specialises for known shapes, so the runner binds the named input to
 * its test data as a constant and tries again.  Returns the value name the
 * message asks for, or NULL. */
static char *
constant_wanted (const GError *error)
{
  const char *must, *open, *close;

  if (!g_error_matches (error, NNP_ERROR, NNP_ERROR_UNSUPPORTED))
    return NULL;
  must = strstr (error->message, "must be a constant");
  if (must == NULL)
    return NULL;
  open = NULL;
  for (const char *p = error->message; p < must; p++) {
    if (p[0] == '(' && p[1] == '\'')
      open = p + 2;
  }
  if (open == NULL || (close = strchr (open, '\'')) == NULL || close > must)
    return NULL;
  return g_strndup (open, close - open);
}

/* Specialise model for shapes; binding graph inputs as constants when asked
 * (see constant_wanted()).  *n_bound counts the inputs bound. */
static NnpGraph *
specialize_binding (NnpModel *model, NnpInputShape *shapes, NnpTensor **data, int n_shapes,
                    int *n_bound, GError **error)
{
  g_autoptr (NnpGraph) graph = NULL;
  g_autofree char *wanted = NULL;
  NnpGraph *sg;

  *n_bound = 0;
  sg = nnp_model_specialize (model, shapes, n_shapes, NNP_SPECIALIZE_DEFAULT, error);
  while (sg == NULL && *n_bound < 16) {
    g_autofree char *name = constant_wanted (*error);
    NnpValue *v;
    int k = -1;

    if (name == NULL)
      break;
    if (graph == NULL)
      graph = nnp_graph_copy (nnp_model_get_graph (model));
    v = nnp_graph_find_value (graph, name);
    for (int s = 0; s < n_shapes; s++) {
      if (g_strcmp0 (shapes[s].name, name) == 0)
        k = s;
    }
    if (v == NULL || !v->is_input || k < 0)
      break;
    /* shapes[k] names the data tensor data[k] (borrowed) */
    v->constant = nnp_tensor_ref (data[k]);
    v->dtype = v->constant->dtype;
    v->shape = v->constant->shape;
    v->is_input = FALSE;
    for (guint i = 0; i < graph->inputs->len; i++) {
      if (g_array_index (graph->inputs, int, i) == v->id) {
        g_array_remove_index (graph->inputs, i);
        break;
      }
    }
    shapes[k] = shapes[n_shapes - 1];
    data[k] = data[n_shapes - 1];
    n_shapes--;
    (*n_bound)++;
    g_clear_error (error);
    sg = nnp_graph_specialize (graph, shapes, n_shapes, NNP_SPECIALIZE_DEFAULT, error);
  }
  /* a value computed by the graph that no binding can give: the
   * data-dependent tail runs it (what `nnpipe run` does) */
  if (sg == NULL && (wanted = constant_wanted (*error)) != NULL) {
    g_clear_error (error);
    sg = nnp_graph_specialize (graph ? graph : nnp_model_get_graph (model), shapes, n_shapes,
                               NNP_SPECIALIZE_DYNAMIC_TAIL, error);
  }
  return sg;
}

/* Runs one data set.  Returns the result; *message set for failures/skips. */
static CaseResult
run_data_set (NnpModel *model, const char *set_dir, int *n_bound, char **message)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (GPtrArray) in_names = g_ptr_array_new_with_free_func (g_free);
  g_autoptr (GPtrArray) out_names = g_ptr_array_new_with_free_func (g_free);
  g_autoptr (GPtrArray) inputs = NULL;
  g_autoptr (GPtrArray) expected = NULL;
  g_autoptr (NnpGraph) sg = NULL;
  g_autofree NnpInputShape *shapes = NULL;
  g_autofree int *input_for = NULL;         /* graph input index -> data index */
  g_autofree NnpTensor **shape_data = NULL; /* borrowed, parallel to shapes */
  NnpGraph *graph = nnp_model_get_graph (model);
  NnpStage *stage = NULL;
  g_autoptr (GPtrArray) stage_in = NULL;
  g_autoptr (GPtrArray) stage_out = NULL;
  NnpStageOptions opts = { .device = "cpu", .threads = 1 };
  CaseResult result = CASE_FAILED;
  int n_graph_inputs = (int) graph->inputs->len;
  int n_shapes = 0;

  inputs = read_pb_list (set_dir, "input", in_names, &error);
  if (inputs != NULL)
    expected = read_pb_list (set_dir, "output", out_names, &error);
  if (inputs == NULL || expected == NULL) {
    *message = g_strdup_printf ("reading %s: %s", set_dir, error->message);
    return g_error_matches (error, NNP_ERROR, NNP_ERROR_UNSUPPORTED) ? CASE_SKIPPED : CASE_FAILED;
  }

  /* Match data to graph inputs: by name when the name is a graph input,
   * else by position. */
  input_for = g_new (int, MAX (n_graph_inputs, 1));
  shapes = g_new0 (NnpInputShape, MAX (n_graph_inputs, 1));
  shape_data = g_new0 (NnpTensor *, MAX (n_graph_inputs, 1));
  for (int i = 0; i < n_graph_inputs; i++) {
    const NnpValue *v = nnp_graph_value (graph, g_array_index (graph->inputs, int, i));
    int k = find_name (in_names, v->name);

    if (k < 0 && i < (int) inputs->len)
      k = i;
    input_for[i] = k;
    if (k >= 0 && k < (int) inputs->len) {
      const NnpTensor *t = g_ptr_array_index (inputs, k);
      shapes[n_shapes].name = v->name;
      shapes[n_shapes].shape = t->shape;
      shape_data[n_shapes] = (NnpTensor *) t;
      n_shapes++;
    }
  }

  sg = specialize_binding (model, shapes, shape_data, n_shapes, n_bound, &error);
  if (sg == NULL) {
    *message = g_strdup_printf ("specialize: %s", error->message);
    return g_error_matches (error, NNP_ERROR, NNP_ERROR_UNSUPPORTED) ? CASE_SKIPPED : CASE_FAILED;
  }

  stage_in = g_ptr_array_new ();
  stage_out = g_ptr_array_new_with_free_func ((GDestroyNotify) nnp_tensor_unref);

  if (sg->nodes->len > 0 || sg->tail != NULL) {
    g_autofree NnpTensor **made = NULL;

    stage = nnp_stage_new (sg, NULL, 0, &opts, &error);
    if (stage == NULL) {
      *message = g_strdup_printf ("prepare: %s", error->message);
      return g_error_matches (error, NNP_ERROR, NNP_ERROR_UNSUPPORTED) ? CASE_SKIPPED : CASE_FAILED;
    }

    for (int i = 0; i < nnp_stage_get_n_inputs (stage); i++) {
      const NnpValue *v = nnp_stage_get_input (stage, i);
      NnpTensor *t = NULL;

      for (int g = 0; g < n_graph_inputs; g++) {
        const NnpValue *gv = nnp_graph_value (graph, g_array_index (graph->inputs, int, g));
        if (g_strcmp0 (gv->name, v->name) == 0 && input_for[g] >= 0
            && input_for[g] < (int) inputs->len)
          t = g_ptr_array_index (inputs, input_for[g]);
      }
      if (t == NULL) {
        *message = g_strdup_printf ("stage input '%s' has no data", v->name);
        goto out;
      }
      /* ONNX 1.12's data hold bfloat16 as uint16: the same bits */
      if (v->dtype == NNP_DTYPE_BFLOAT16 && t->dtype == NNP_DTYPE_UINT16)
        t->dtype = NNP_DTYPE_BFLOAT16;
      if (t->dtype != v->dtype || !nnp_shape_equal (&t->shape, &v->shape)) {
        g_autofree char *ts = nnp_shape_to_string (&t->shape);
        g_autofree char *vs = nnp_shape_to_string (&v->shape);
        *message = g_strdup_printf ("stage input '%s' is %s %s, data is %s %s", v->name,
                                    nnp_dtype_name (v->dtype), vs, nnp_dtype_name (t->dtype), ts);
        goto out;
      }
      g_ptr_array_add (stage_in, t);
    }
    /* new outputs: those of a data-dependent tail get their shape at run time */
    made = g_new0 (NnpTensor *, MAX (nnp_stage_get_n_outputs (stage), 1));
    if (!nnp_stage_run_alloc (stage, (NnpTensor *const *) stage_in->pdata, made, &error)) {
      *message = g_strdup_printf ("run: %s", error->message);
      goto out;
    }
    for (int i = 0; i < nnp_stage_get_n_outputs (stage); i++)
      g_ptr_array_add (stage_out, made[i]);
  }

  if (expected->len != sg->outputs->len) {
    *message =
        g_strdup_printf ("graph has %u outputs, reference has %u", sg->outputs->len, expected->len);
    goto out;
  }

  for (guint k = 0; k < expected->len; k++) {
    const NnpValue *v = nnp_graph_value (sg, g_array_index (sg->outputs, int, k));
    const NnpTensor *got = NULL;
    g_autofree char *why = NULL;

    if (stage != NULL) {
      for (int i = 0; i < nnp_stage_get_n_outputs (stage); i++) {
        if (g_strcmp0 (nnp_stage_get_output (stage, i)->name, v->name) == 0)
          got = g_ptr_array_index (stage_out, i);
      }
    }
    if (got == NULL && v->constant != NULL)
      got = v->constant;
    if (got == NULL) {
      for (int g = 0; g < n_graph_inputs; g++) {
        const NnpValue *gv = nnp_graph_value (graph, g_array_index (graph->inputs, int, g));
        if (g_strcmp0 (gv->name, v->name) == 0 && input_for[g] >= 0
            && input_for[g] < (int) inputs->len)
          got = g_ptr_array_index (inputs, input_for[g]);
      }
    }
    if (got == NULL) {
      *message = g_strdup_printf ("output %u '%s': not produced by the stage", k, v->name);
      goto out;
    }
    /* ONNX 1.12's data hold bfloat16 as uint16: the same bits */
    if (got->dtype == NNP_DTYPE_BFLOAT16
        && ((NnpTensor *) g_ptr_array_index (expected, k))->dtype == NNP_DTYPE_UINT16)
      ((NnpTensor *) g_ptr_array_index (expected, k))->dtype = NNP_DTYPE_BFLOAT16;
    if (!compare_tensors (got, g_ptr_array_index (expected, k), &why)) {
      *message = g_strdup_printf ("output %u '%s': %s", k, v->name, why);
      goto out;
    }
  }
  result = CASE_PASSED;

out:
  if (stage != NULL)
    nnp_stage_free (stage);
  return result;
}

/* Cases whose test data contradict the operator's current definition: run
 * as skipped with the reason.  (Debian's libonnx-testdata is ONNX 1.12's: it
 * stores bfloat16 tensors as uint16, which the runner reads as bfloat16 bits.) */
static CaseResult run_case_model (const char *case_dir, char **message);

static const struct {
  const char *name, *why;
} data_defects[] = {
  { "test_cast_FLOAT_to_BFLOAT16",
    "ONNX 1.12's expected data truncate to bfloat16; ONNX >= 1.14 and ONNX Runtime round to nearest even, as nnpipe does" },
  { "test_castlike_FLOAT_to_BFLOAT16_expanded",
    "ONNX 1.12's data truncate to bfloat16 (see test_cast_FLOAT_to_BFLOAT16) and give 'like' 1 dim where the model declares 2" },
  { "test_castlike_BFLOAT16_to_FLOAT_expanded",
    "ONNX 1.12's data give 'like' 1 dim where the model declares 2" },
  { "test_castlike_FLOAT_to_BFLOAT16",
    "ONNX 1.12's data truncate to bfloat16 (see test_cast_FLOAT_to_BFLOAT16) and give 'like' 1 dim where the model declares 2" },
  { "test_castlike_BFLOAT16_to_FLOAT",
    "ONNX 1.12's data give 'like' 1 dim where the model declares 2" },
};

static CaseResult
run_case (const char *case_dir, char **message)
{
  g_autofree char *base = g_path_get_basename (case_dir);

  for (guint i = 0; i < G_N_ELEMENTS (data_defects); i++)
    if (strcmp (base, data_defects[i].name) == 0) {
      *message = g_strdup_printf ("test data defect: %s", data_defects[i].why);
      return CASE_SKIPPED;
    }
  return run_case_model (case_dir, message);
}

static CaseResult
run_case_model (const char *case_dir, char **message)
{
  g_autofree char *model_path = g_build_filename (case_dir, "model.onnx", NULL);
  g_autoptr (GError) error = NULL;
  g_autoptr (NnpModel) model = NULL;
  g_autoptr (GPtrArray) sets = NULL;

  model = nnp_model_load (model_path, &error);
  if (model == NULL) {
    *message = g_strdup_printf ("load: %s", error->message);
    return g_error_matches (error, NNP_ERROR, NNP_ERROR_UNSUPPORTED) ? CASE_SKIPPED : CASE_FAILED;
  }

  int n_bound = 0;

  sets = list_data_sets (case_dir);
  if (sets->len == 0) {
    *message = g_strdup ("no test_data_set_* folder");
    return CASE_FAILED;
  }
  for (guint s = 0; s < sets->len; s++) {
    g_autofree char *set_dir = g_build_filename (case_dir, g_ptr_array_index (sets, s), NULL);
    g_autofree char *why = NULL;
    int bound = 0;
    CaseResult r = run_data_set (model, set_dir, &bound, &why);

    n_bound = MAX (n_bound, bound);

    if (r != CASE_PASSED) {
      if (sets->len > 1)
        *message = g_strdup_printf ("%s: %s", (char *) g_ptr_array_index (sets, s), why);
      else
        *message = g_steal_pointer (&why);
      return r;
    }
  }
  if (n_bound > 0)
    *message = g_strdup_printf ("%d input%s bound as constant%s", n_bound, n_bound > 1 ? "s" : "",
                                n_bound > 1 ? "s" : "");
  return CASE_PASSED;
}

/* ---------------------------------------------------------------------- */
/* Process isolation */

static gboolean
write_all (int fd, const char *buf, gsize len)
{
  while (len > 0) {
    ssize_t w = write (fd, buf, len);
    if (w < 0) {
      if (errno == EINTR)
        continue;
      return FALSE;
    }
    buf += w;
    len -= (gsize) w;
  }
  return TRUE;
}

static CaseResult
run_case_forked (const char *case_dir, char **message)
{
  int fds[2];
  pid_t pid;
  GString *buf;
  char chunk[4096];
  int status = 0;
  CaseResult result;

  fflush (stdout);
  fflush (stderr);
  if (pipe (fds) != 0) {
    *message = g_strdup_printf ("pipe: %s", g_strerror (errno));
    return CASE_FAILED;
  }
  pid = fork ();
  if (pid < 0) {
    close (fds[0]);
    close (fds[1]);
    *message = g_strdup_printf ("fork: %s", g_strerror (errno));
    return CASE_FAILED;
  }
  if (pid == 0) {
    char *msg = NULL;
    char code;

    close (fds[0]);
    /* A g_critical (a programmer error caught by g_return_if_fail) counts
     * as a failure: make it abort, the parent reports the signal. */
    g_log_set_always_fatal (G_LOG_LEVEL_CRITICAL | G_LOG_LEVEL_ERROR);
    alarm ((unsigned) opt_timeout);
    code = (char) run_case (case_dir, &msg);
    if (!write_all (fds[1], &code, 1) || (msg && !write_all (fds[1], msg, strlen (msg))))
      _exit (3);
    g_free (msg);
    close (fds[1]);
    _exit (0);
  }

  close (fds[1]);
  buf = g_string_new (NULL);
  for (;;) {
    ssize_t r = read (fds[0], chunk, sizeof chunk);
    if (r < 0 && errno == EINTR)
      continue;
    if (r <= 0)
      break;
    g_string_append_len (buf, chunk, r);
  }
  close (fds[0]);
  while (waitpid (pid, &status, 0) < 0 && errno == EINTR)
    ;

  if (WIFSIGNALED (status)) {
    int sig = WTERMSIG (status);
    if (sig == SIGALRM)
      *message = g_strdup_printf ("timed out after %d s", opt_timeout);
    else
      *message = g_strdup_printf ("crashed: signal %d (%s)", sig, g_strsignal (sig));
    g_string_free (buf, TRUE);
    return CASE_FAILED;
  }
  if (!WIFEXITED (status) || WEXITSTATUS (status) != 0 || buf->len == 0) {
    *message = g_strdup_printf ("child exited with status %d",
                                WIFEXITED (status) ? WEXITSTATUS (status) : -1);
    g_string_free (buf, TRUE);
    return CASE_FAILED;
  }
  result = (CaseResult) buf->str[0];
  if (result != CASE_PASSED && result != CASE_FAILED && result != CASE_SKIPPED) {
    *message = g_strdup ("child reported garbage");
    result = CASE_FAILED;
  } else if (buf->len > 1) {
    *message = g_strdup (buf->str + 1);
  }
  g_string_free (buf, TRUE);
  return result;
}

/* ---------------------------------------------------------------------- */

static gboolean
is_case_dir (const char *dir)
{
  g_autofree char *model = g_build_filename (dir, "model.onnx", NULL);
  return g_file_test (model, G_FILE_TEST_IS_REGULAR);
}

static gint
compare_strings (gconstpointer a, gconstpointer b)
{
  return strcmp (*(const char *const *) a, *(const char *const *) b);
}

/* Case folders under dir (or dir itself), sorted, filtered. */
static void
collect_cases (const char *path, GPtrArray *cases)
{
  g_autoptr (GPtrArray) found = g_ptr_array_new_with_free_func (g_free);

  if (is_case_dir (path)) {
    g_ptr_array_add (found, g_strdup (path));
  } else {
    g_autoptr (GError) error = NULL;
    g_autoptr (GDir) dir = g_dir_open (path, 0, &error);
    const char *entry;

    if (dir == NULL) {
      g_printerr ("nnp-conformance: %s\n", error->message);
      return;
    }
    while ((entry = g_dir_read_name (dir)) != NULL) {
      g_autofree char *sub = g_build_filename (path, entry, NULL);
      if (is_case_dir (sub))
        g_ptr_array_add (found, g_steal_pointer (&sub));
    }
  }
  g_ptr_array_sort (found, compare_strings);
  for (guint i = 0; i < found->len; i++) {
    const char *c = g_ptr_array_index (found, i);
    g_autofree char *name = g_path_get_basename (c);
    if (opt_filter == NULL || strstr (name, opt_filter) != NULL)
      g_ptr_array_add (cases, g_strdup (c));
  }
}

/* Case names of an --expect file (one per line; blank lines and '#' comments ignored). */
static gboolean
read_expect (const char *path, GHashTable *set, GError **error)
{
  g_autofree char *text = NULL;
  g_auto (GStrv) lines = NULL;

  if (!g_file_get_contents (path, &text, NULL, error))
    return FALSE;
  lines = g_strsplit (text, "\n", -1);
  for (int i = 0; lines[i]; i++) {
    char *l = g_strstrip (lines[i]);
    if (*l != '\0' && *l != '#')
      g_hash_table_add (set, g_strdup (l));
  }
  return TRUE;
}

/* --bad-reference FILE: "NAME reason..." per line ('#' comments). */
static gboolean
read_bad_reference (const char *path, GHashTable *map, GError **error)
{
  g_autofree char *text = NULL;
  g_auto (GStrv) lines = NULL;

  if (!g_file_get_contents (path, &text, NULL, error))
    return FALSE;
  lines = g_strsplit (text, "\n", -1);
  for (int i = 0; lines[i]; i++) {
    char *l = g_strstrip (lines[i]), *sp;
    if (*l == '\0' || *l == '#')
      continue;
    sp = strchr (l, ' ');
    g_hash_table_insert (map, g_strndup (l, sp ? (gsize) (sp - l) : strlen (l)),
                         g_strdup (sp ? g_strstrip (sp + 1) : "no reason given"));
  }
  return TRUE;
}

int
main (int argc, char **argv)
{
  g_autoptr (GOptionContext) ctx = NULL;
  g_autoptr (GError) error = NULL;
  g_autoptr (GPtrArray) cases = g_ptr_array_new_with_free_func (g_free);
  g_autoptr (GPtrArray) skipped = g_ptr_array_new_with_free_func (g_free);
  g_autoptr (GPtrArray) failed = g_ptr_array_new_with_free_func (g_free);
  g_autoptr (GHashTable) expect = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
  g_autoptr (GHashTable) expect_all = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
  g_autoptr (GHashTable) bad_ref = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, g_free);
  int n_passed = 0, n_passed_bound = 0;
  GOptionEntry entries[] = {
    { "filter", 'f', 0, G_OPTION_ARG_STRING, &opt_filter,
      "Only run cases whose name contains SUBSTR", "SUBSTR" },
    { "verbose", 'v', 0, G_OPTION_ARG_NONE, &opt_verbose, "Print every case", NULL },
    { "no-fork", 0, 0, G_OPTION_ARG_NONE, &opt_no_fork,
      "Run cases in this process (a crash ends the run)", NULL },
    { "timeout", 0, 0, G_OPTION_ARG_INT, &opt_timeout, "Seconds per case (default 120)", "S" },
    { "rtol", 0, 0, G_OPTION_ARG_DOUBLE, &opt_rtol, "Relative tolerance (default 1e-4)", "R" },
    { "atol", 0, 0, G_OPTION_ARG_DOUBLE, &opt_atol, "Absolute tolerance (default 1e-5)", "A" },
    { "expect", 0, 0, G_OPTION_ARG_FILENAME, &opt_expect,
      "Cases listed in FILE must pass (a skip is a failure)", "FILE" },
    { "bad-reference", 0, 0, G_OPTION_ARG_FILENAME, &opt_bad_reference,
      "Cases listed in FILE ('NAME reason') have wrong reference data: not run, skipped", "FILE" },
    { NULL }
  };

  ctx = g_option_context_new ("DIR... - run ONNX conformance cases");
  g_option_context_add_main_entries (ctx, entries, NULL);
  if (!g_option_context_parse (ctx, &argc, &argv, &error)) {
    g_printerr ("nnp-conformance: %s\n", error->message);
    return 2;
  }
  if (opt_bad_reference && !read_bad_reference (opt_bad_reference, bad_ref, &error)) {
    g_printerr ("nnp-conformance: %s\n", error->message);
    return 2;
  }
  if (argc < 2) {
    g_printerr ("usage: nnp-conformance [--filter SUBSTR] [--verbose] [--no-fork] DIR...\n");
    return 2;
  }
  if (opt_timeout <= 0)
    opt_timeout = 120;

  for (int i = 1; i < argc; i++)
    collect_cases (argv[i], cases);
  if (opt_expect
      && (!read_expect (opt_expect, expect, &error)
          || !read_expect (opt_expect, expect_all, &error))) {
    g_printerr ("nnp-conformance: %s\n", error->message);
    return 2;
  }
  if (cases->len == 0) {
    g_print (
        "FAIL: no conformance cases found%s%s%s (the cases come from the Debian package libonnx-testdata)\n",
        opt_filter ? " matching '" : "", opt_filter ? opt_filter : "", opt_filter ? "'" : "");
    g_print ("0 passed, 1 failed, 0 skipped\n");
    g_free (opt_filter);
    return 1;
  }

  for (guint i = 0; i < cases->len; i++) {
    const char *case_dir = g_ptr_array_index (cases, i);
    g_autofree char *name = g_path_get_basename (case_dir);
    g_autofree char *msg = NULL;
    CaseResult r;

    if (opt_verbose) {
      g_print ("RUN  %s\n", name);
      fflush (stdout);
    }
    if (g_hash_table_contains (bad_ref, name)) {
      r = CASE_SKIPPED;
      msg = g_strdup_printf ("reference data is wrong (%s): %s", opt_bad_reference,
                             (char *) g_hash_table_lookup (bad_ref, name));
    } else {
      r = opt_no_fork ? run_case (case_dir, &msg) : run_case_forked (case_dir, &msg);
    }
    switch (r) {
      case CASE_PASSED:
        n_passed++;
        if (msg != NULL)
          n_passed_bound++;
        if (opt_verbose)
          g_print ("PASS %s%s%s\n", name, msg ? ": " : "", msg ? msg : "");
        break;
      case CASE_SKIPPED:
        if (g_hash_table_contains (expect, name)) {
          g_print ("FAIL %s: REGRESSED (listed in %s as passing): %s\n", name, opt_expect,
                   msg ? msg : "unsupported");
          g_ptr_array_add (failed, g_steal_pointer (&name));
          break;
        }
        g_print ("SKIP %s: %s\n", name, msg ? msg : "unsupported");
        g_ptr_array_add (skipped, g_steal_pointer (&name));
        break;
      case CASE_FAILED:
      default:
        g_print ("FAIL %s: %s\n", name, msg ? msg : "failed");
        g_ptr_array_add (failed, g_steal_pointer (&name));
        break;
    }
    fflush (stdout);
    if (name == NULL)
      name = g_path_get_basename (case_dir);
    g_hash_table_remove (expect, name);
  }
  /* listed cases that were not there at all */
  if (opt_filter == NULL) {
    GHashTableIter it;
    gpointer key;
    g_hash_table_iter_init (&it, expect);
    while (g_hash_table_iter_next (&it, &key, NULL)) {
      g_print ("FAIL %s: REGRESSED (listed in %s as passing, but not found)\n", (char *) key,
               opt_expect);
      g_ptr_array_add (failed, g_strdup (key));
    }
  }

  g_print ("\n");
  if (skipped->len > 0) {
    g_print ("Skipped (%u):", skipped->len);
    for (guint i = 0; i < skipped->len; i++)
      g_print (" %s", (char *) g_ptr_array_index (skipped, i));
    g_print ("\n");
  }
  if (failed->len > 0) {
    g_print ("Failed (%u):", failed->len);
    for (guint i = 0; i < failed->len; i++)
      g_print (" %s", (char *) g_ptr_array_index (failed, i));
    g_print ("\n");
  }
  if (n_passed_bound > 0)
    g_print (
        "(%d of the passed cases feed shape operands as graph inputs; the runner bound them to their test data as constants)\n",
        n_passed_bound);
  if (opt_expect) {
    guint bad = 0;
    for (guint i = 0; i < failed->len; i++)
      bad += g_hash_table_contains (expect_all, g_ptr_array_index (failed, i));
    g_print ("%u of the %u cases listed in %s passed\n", g_hash_table_size (expect_all) - bad,
             g_hash_table_size (expect_all), opt_expect);
  }
  g_print ("%d passed, %u failed, %u skipped\n", n_passed, failed->len, skipped->len);
  g_free (opt_filter);
  g_free (opt_expect);
  g_free (opt_bad_reference);
  return failed->len > 0 ? 1 : 0;
}
