/* test-opencl-ops: every op with an OpenCL kernel against the CPU backend,
 * node by node, on the ONNX conformance cases.
 *
 *   test-opencl-ops [--device opencl] [--filter SUBSTR] [--verbose] DIR...
 *
 * Each DIR is a folder of cases (model.onnx + test_data_set_0/).  A case is
 * specialised to its inputs (inputs that must be constants are bound, as
 * nnp-conformance does), then run node by node: each node runs as a one-node
 * CPU stage (its outputs feed the next nodes) and, when the OpenCL backend
 * supports it, once more on the device through the backend's executor with
 * the same inputs; the outputs must agree within rtol 1e-4 / atol 1e-5
 * (bit-exact for non-float types).
 *
 * Per op: passed / failed / skipped (no kernel for that case).  Closing line
 * "N passed, N failed, N skipped" over nodes; exit 1 on any failure and when
 * there is no OpenCL device (pocl-opencl-icd) or no case (libonnx-testdata). */
#include <nnpipe/nnpipe.h>
#include <nnpipe/device.h>

#include "backends/opencl/opencl.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define RTOL 1e-4
#define ATOL 1e-5

static char *opt_device = NULL;
static char *opt_filter = NULL;
static gboolean opt_verbose = FALSE;

typedef struct {
  int passed, failed, skipped;
} Stats;

static Stats op_stats[NNP_OP_COUNT + 1];
static GHashTable *skip_reasons; /* "Op: reason" -> count */

static NnpTensor *
read_pb (const char *path, char **name, GError **error)
{
  g_autofree char *bytes = NULL;
  gsize len = 0;

  if (!g_file_get_contents (path, &bytes, &len, error))
    return NULL;
  return nnp_tensor_from_onnx_bytes ((const guint8 *) bytes, len, name, error);
}

static double
as_double (const NnpTensor *t, int64_t i)
{
  switch (t->dtype) {
    case NNP_DTYPE_FLOAT32: return ((const float *) t->data)[i];
    case NNP_DTYPE_FLOAT64: return ((const double *) t->data)[i];
    default: return NAN;
  }
}

static gboolean
compare (const NnpTensor *got, const NnpTensor *want, char **msg)
{
  int64_t n = nnp_tensor_numel (want), bad = 0, worst = -1;
  double worst_excess = 0;

  if (got->dtype == NNP_DTYPE_FLOAT32 || got->dtype == NNP_DTYPE_FLOAT64) {
    for (int64_t i = 0; i < n; i++) {
      double a = as_double (got, i), b = as_double (want, i), e;
      if ((isnan (a) && isnan (b)) || (isinf (b) && a == b))
        continue;
      e = fabs (a - b) - (ATOL + RTOL * fabs (b));
      if (isnan (e))
        e = INFINITY;
      if (e > 0) {
        bad++;
        if (e > worst_excess || worst < 0) {
          worst_excess = e;
          worst = i;
        }
      }
    }
    if (bad) {
      *msg = g_strdup_printf ("%" G_GINT64_FORMAT "/%" G_GINT64_FORMAT
                              " differ, worst at %" G_GINT64_FORMAT ": %.9g vs cpu %.9g",
                              bad, n, worst, as_double (got, worst), as_double (want, worst));
      return FALSE;
    }
    return TRUE;
  }
  if (got->nbytes != want->nbytes || (n > 0 && memcmp (got->data, want->data, got->nbytes))) {
    *msg = g_strdup_printf ("%s data differs", nnp_dtype_name (got->dtype));
    return FALSE;
  }
  return TRUE;
}

/* Specialise, binding inputs the specialiser wants as constants. */
static NnpGraph *
specialize (NnpModel *model, NnpInputShape *shapes, NnpTensor **data, int n, GError **error)
{
  g_autoptr (NnpGraph) graph = NULL;
  NnpGraph *sg = nnp_model_specialize (model, shapes, n, NNP_SPECIALIZE_DEFAULT, error);

  for (int tries = 0; sg == NULL && tries < 16; tries++) {
    const char *must, *open = NULL, *close;
    g_autofree char *name = NULL;
    NnpValue *v;
    int k = -1;

    if (!g_error_matches (*error, NNP_ERROR, NNP_ERROR_UNSUPPORTED)
        || (must = strstr ((*error)->message, "must be a constant")) == NULL)
      return NULL;
    for (const char *p = (*error)->message; p < must; p++)
      if (p[0] == '(' && p[1] == '\'')
        open = p + 2;
    if (open == NULL || (close = strchr (open, '\'')) == NULL)
      return NULL;
    name = g_strndup (open, close - open);
    if (graph == NULL)
      graph = nnp_graph_copy (nnp_model_get_graph (model));
    v = nnp_graph_find_value (graph, name);
    for (int s = 0; s < n; s++)
      if (g_strcmp0 (shapes[s].name, name) == 0)
        k = s;
    if (v == NULL || !v->is_input || k < 0)
      return NULL;
    v->constant = nnp_tensor_ref (data[k]);
    v->dtype = data[k]->dtype;
    v->shape = data[k]->shape;
    v->is_input = FALSE;
    for (guint i = 0; i < graph->inputs->len; i++)
      if (g_array_index (graph->inputs, int, i) == v->id) {
        g_array_remove_index (graph->inputs, i);
        break;
      }
    shapes[k] = shapes[n - 1];
    data[k] = data[n - 1];
    n--;
    g_clear_error (error);
    sg = nnp_graph_specialize (graph, shapes, n, NNP_SPECIALIZE_DEFAULT, error);
  }
  return sg;
}

static void
count_skip (const char *why)
{
  gpointer old = g_hash_table_lookup (skip_reasons, why);
  g_hash_table_replace (skip_reasons, g_strdup (why), GINT_TO_POINTER (GPOINTER_TO_INT (old) + 1));
}

/* Run one node on both backends; values[] holds CPU tensors by value id. */
static void
run_node (NnpOclDevice *dev, NnpGraph *sg, int idx, NnpTensor **values, const char *case_name,
          gboolean *ok)
{
  NnpNode *node = nnp_graph_node (sg, idx);
  NnpStageOptions opts = { .device = "cpu", .threads = 1 };
  g_autoptr (GError) error = NULL;
  NnpStage *stage;
  int n_in, n_out;
  g_autofree int *in_ids = NULL, *out_ids = NULL;
  g_autofree NnpTensor **ins = NULL, **cpu_out = NULL, **ocl_out = NULL;
  g_autofree char *why = NULL;
  Stats *st = &op_stats[MIN ((int) node->op, NNP_OP_COUNT)];

  stage = nnp_stage_new (sg, &idx, 1, &opts, &error);
  if (stage == NULL) {
    *ok = FALSE;
    return;
  }
  n_in = nnp_stage_get_n_inputs (stage);
  n_out = nnp_stage_get_n_outputs (stage);
  in_ids = g_new (int, MAX (n_in, 1));
  out_ids = g_new (int, MAX (n_out, 1));
  ins = g_new0 (NnpTensor *, MAX (n_in, 1));
  cpu_out = g_new0 (NnpTensor *, MAX (n_out, 1));
  ocl_out = g_new0 (NnpTensor *, MAX (n_out, 1));
  for (int i = 0; i < n_in; i++) {
    in_ids[i] = nnp_stage_get_input (stage, i)->id;
    ins[i] = values[in_ids[i]];
    if (ins[i] == NULL) {
      *ok = FALSE;
      goto out;
    }
  }
  for (int i = 0; i < n_out; i++) {
    out_ids[i] = nnp_stage_get_output (stage, i)->id;
    cpu_out[i] = nnp_stage_new_output (stage, i, NULL);
    ocl_out[i] = nnp_stage_new_output (stage, i, NULL);
  }
  if (!nnp_stage_run (stage, ins, cpu_out, &error)) {
    *ok = FALSE;
    goto out;
  }
  for (int i = 0; i < n_out; i++) {
    if (values[out_ids[i]] == NULL)
      values[out_ids[i]] = nnp_tensor_ref (cpu_out[i]);
  }

  if (!nnp_ocl_supports_node (sg, node, &why)) {
    st->skipped++;
    count_skip (why);
    if (opt_verbose)
      printf ("SKIP %s: node '%s': %s\n", case_name, node->name, why);
  } else {
    NnpOclExec *exec = nnp_ocl_exec_new (dev, sg, &idx, 1, in_ids, n_in, out_ids, n_out, &error);
    gboolean good = exec != NULL && nnp_ocl_exec_run (exec, ins, ocl_out, &error);
    g_autofree char *msg = NULL;

    if (!good)
      msg = g_strdup (error ? error->message : "failed");
    for (int i = 0; good && i < n_out; i++) {
      if (!compare (ocl_out[i], cpu_out[i], &msg)) {
        good = FALSE;
        g_autofree char *m2 =
            g_strdup_printf ("output '%s': %s", nnp_graph_value (sg, out_ids[i])->name, msg);
        g_free (msg);
        msg = g_steal_pointer (&m2);
      }
    }
    nnp_ocl_exec_free (exec);
    if (good) {
      st->passed++;
      if (opt_verbose)
        printf ("PASS %s: node '%s' (%s)\n", case_name, node->name, node->op_type);
    } else {
      st->failed++;
      printf ("FAIL %s: node '%s' (%s): %s\n", case_name, node->name, node->op_type, msg);
    }
  }

out:
  for (int i = 0; i < n_out; i++) {
    if (cpu_out[i])
      nnp_tensor_unref (cpu_out[i]);
    if (ocl_out[i])
      nnp_tensor_unref (ocl_out[i]);
  }
  nnp_stage_free (stage);
}

static void
run_case (NnpOclDevice *dev, const char *dir, const char *case_name)
{
  g_autofree char *model_path = g_build_filename (dir, "model.onnx", NULL);
  g_autofree char *set = g_build_filename (dir, "test_data_set_0", NULL);
  g_autoptr (NnpModel) model = NULL;
  g_autoptr (NnpGraph) sg = NULL;
  g_autoptr (GPtrArray) data = g_ptr_array_new_with_free_func ((GDestroyNotify) nnp_tensor_unref);
  g_autoptr (GPtrArray) names = g_ptr_array_new_with_free_func (g_free);
  g_autofree NnpInputShape *shapes = NULL;
  g_autofree NnpTensor **sdata = NULL;
  NnpTensor **values;
  NnpGraph *graph;
  int n = 0;
  gboolean ok = TRUE;

  model = nnp_model_load (model_path, NULL);
  if (model == NULL)
    return;
  graph = nnp_model_get_graph (model);
  for (int k = 0;; k++) {
    g_autofree char *base = g_strdup_printf ("input_%d.pb", k);
    g_autofree char *path = g_build_filename (set, base, NULL);
    char *name = NULL;
    NnpTensor *t;
    if (!g_file_test (path, G_FILE_TEST_EXISTS))
      break;
    t = read_pb (path, &name, NULL);
    if (t == NULL)
      return;
    g_ptr_array_add (data, t);
    g_ptr_array_add (names, name);
  }
  shapes = g_new0 (NnpInputShape, MAX (graph->inputs->len, 1));
  sdata = g_new0 (NnpTensor *, MAX (graph->inputs->len, 1));
  for (guint i = 0; i < graph->inputs->len && i < data->len; i++) {
    const NnpValue *v = nnp_graph_value (graph, g_array_index (graph->inputs, int, i));
    int k = (int) i;
    for (guint j = 0; j < names->len; j++)
      if (g_strcmp0 (g_ptr_array_index (names, j), v->name) == 0)
        k = (int) j;
    shapes[n].name = v->name;
    shapes[n].shape = ((NnpTensor *) g_ptr_array_index (data, k))->shape;
    sdata[n] = g_ptr_array_index (data, k);
    n++;
  }
  sg = specialize (model, shapes, sdata, n, &(GError *){ NULL });
  if (sg == NULL)
    return;
  values = g_new0 (NnpTensor *, MAX (sg->values->len, 1));
  for (guint i = 0; i < sg->inputs->len; i++) {
    int id = g_array_index (sg->inputs, int, i);
    const NnpValue *v = nnp_graph_value (sg, id);
    for (int s = 0; s < n; s++)
      if (g_strcmp0 (shapes[s].name, v->name) == 0 && sdata[s]->dtype == v->dtype
          && nnp_shape_equal (&sdata[s]->shape, &v->shape))
        values[id] = nnp_tensor_ref (sdata[s]);
  }
  for (guint i = 0; i < sg->nodes->len && ok; i++)
    run_node (dev, sg, (int) i, values, case_name, &ok);
  for (guint id = 0; id < sg->values->len; id++)
    if (values[id])
      nnp_tensor_unref (values[id]);
  g_free (values);
}

static gint
cmp_str (gconstpointer a, gconstpointer b)
{
  return strcmp (*(const char *const *) a, *(const char *const *) b);
}

int
main (int argc, char **argv)
{
  GOptionEntry entries[] = { { "device", 'd', 0, G_OPTION_ARG_STRING, &opt_device,
                               "OpenCL device (default opencl)", "SPEC" },
                             { "filter", 'f', 0, G_OPTION_ARG_STRING, &opt_filter,
                               "Only cases containing SUBSTR", "SUBSTR" },
                             { "verbose", 'v', 0, G_OPTION_ARG_NONE, &opt_verbose,
                               "Print every node", NULL },
                             { NULL } };
  g_autoptr (GOptionContext) ctx = g_option_context_new ("DIR... - OpenCL vs CPU, node by node");
  g_autoptr (GError) error = NULL;
  NnpOclDevice *dev;
  Stats total = { 0 };
  int n_cases = 0;

  g_option_context_add_main_entries (ctx, entries, NULL);
  if (!g_option_context_parse (ctx, &argc, &argv, &error)) {
    fprintf (stderr, "%s\n", error->message);
    return 2;
  }
  dev = nnp_ocl_device_open (opt_device ? opt_device : "opencl", &error);
  if (dev == NULL) {
    printf ("FAIL: no OpenCL device (install the Debian package pocl-opencl-icd): %s\n",
            error->message);
    return 1;
  }
  printf ("device: %s\n", dev->name);
  skip_reasons = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);

  for (int a = 1; a < argc; a++) {
    g_autoptr (GDir) d = g_dir_open (argv[a], 0, NULL);
    g_autoptr (GPtrArray) list = g_ptr_array_new_with_free_func (g_free);
    const char *e;

    if (d == NULL)
      continue;
    while ((e = g_dir_read_name (d)) != NULL)
      if (opt_filter == NULL || strstr (e, opt_filter))
        g_ptr_array_add (list, g_strdup (e));
    g_ptr_array_sort (list, cmp_str);
    for (guint i = 0; i < list->len; i++) {
      g_autofree char *dir = g_build_filename (argv[a], g_ptr_array_index (list, i), NULL);
      g_autofree char *model = g_build_filename (dir, "model.onnx", NULL);
      if (!g_file_test (model, G_FILE_TEST_EXISTS))
        continue;
      run_case (dev, dir, g_ptr_array_index (list, i));
      n_cases++;
    }
  }

  printf ("\nper op (nodes on OpenCL vs CPU):\n");
  for (int op = 0; op <= NNP_OP_COUNT; op++) {
    Stats *s = &op_stats[op];
    if (s->passed + s->failed + s->skipped == 0)
      continue;
    printf ("  %-20s %4d passed, %3d failed, %3d skipped\n", nnp_op_name ((NnpOpType) op),
            s->passed, s->failed, s->skipped);
    total.passed += s->passed;
    total.failed += s->failed;
    total.skipped += s->skipped;
  }
  {
    GHashTableIter it;
    gpointer k, v;
    printf ("skip reasons:\n");
    g_hash_table_iter_init (&it, skip_reasons);
    while (g_hash_table_iter_next (&it, &k, &v))
      printf ("  %4d  %s\n", GPOINTER_TO_INT (v), (char *) k);
  }
  printf ("%d cases\n%d passed, %d failed, %d skipped\n", n_cases, total.passed, total.failed,
          total.skipped);
  g_hash_table_destroy (skip_reasons);
  nnp_ocl_device_unref (dev);
  if (n_cases == 0) {
    printf ("FAIL: no cases found (install the Debian package libonnx-testdata)\n");
    return 1;
  }
  return total.failed > 0 ? 1 : 0;
}
