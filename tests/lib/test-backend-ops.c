/* test-backend-ops: every op of the ONNX conformance cases on every
 * registered backend against the CPU backend, node by node (as ggml's
 * test-backend-ops runs every op on every backend against the CPU).
 *
 *   test-backend-ops [--backend NAME] [--filter SUBSTR] [--verbose] DIR...
 *
 * Each DIR is a folder of cases (model.onnx + test_data_set_0/).  A case is
 * specialised to its inputs (inputs that must be constants are bound, as
 * nnp-conformance does), then run node by node: each node runs as a one-node
 * stage on the host backend (the reference; its outputs feed the next nodes)
 * and, for every other registered backend (lib/backends/registry.c: OpenCL
 * when built with it, any other), as a one-node stage on that backend's
 * device with the same host inputs, through the backend-neutral API
 * (nnp_stage_new() with the device spec, host tensors in and out).  The
 * outputs must agree within rtol 1e-4 / atol 1e-5 (bit-exact for non-float
 * types).  A node the device does not support (nnp_device_supports_node(),
 * the placement query) is reported as unsupported with the backend's reason,
 * not failed.
 *
 * Per backend and op: passed / failed / unsupported; closing line per
 * backend.  Exit 1 on any failure, when a registered backend's device does
 * not open (for OpenCL: install pocl-opencl-icd), and when there is no case
 * (libonnx-testdata). */
#include <nnpipe/nnpipe.h>

#include "backend.h"
#include "graph/graph-edit.h"
#include "onnx/model-private.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define RTOL 1e-4
#define ATOL 1e-5
#define MAX_BACKENDS 8

static char *opt_backend = NULL;
static char *opt_filter = NULL;
static gboolean opt_verbose = FALSE;

typedef struct {
  int passed, failed, unsupported;
} Stats;

/* A backend under test: its device and its counts per op. */
typedef struct {
  const char *name;
  NnpDevice *device;
  Stats ops[NNP_OP_COUNT + 1];
  GHashTable *why; /* "Op: reason" -> count */
} Target;

static Target targets[MAX_BACKENDS];
static int n_targets;
static int ops_seen[NNP_OP_COUNT + 1];

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
count_unsupported (Target *t, const char *why)
{
  gpointer old = g_hash_table_lookup (t->why, why);
  g_hash_table_replace (t->why, g_strdup (why), GINT_TO_POINTER (GPOINTER_TO_INT (old) + 1));
}

/* Node idx on target t with the reference's inputs; compares with ref_out. */
static void
run_on (Target *t, NnpGraph *sg, int idx, NnpTensor **ins, NnpTensor **ref_out, int n_out,
        const char *case_name)
{
  NnpNode *node = nnp_graph_node (sg, idx);
  Stats *st = &t->ops[MIN ((int) node->op, NNP_OP_COUNT)];
  NnpStageOptions opts = { .device = t->name, .threads = 1 };
  g_autoptr (GError) error = NULL;
  g_autofree char *why = NULL, *msg = NULL;
  g_autofree NnpTensor **out = g_new0 (NnpTensor *, MAX (n_out, 1));
  NnpStage *stage;
  gboolean good;

  if (!nnp_device_supports_node (t->device, sg, node, &why)) {
    st->unsupported++;
    count_unsupported (t, why ? why : node->op_type);
    if (opt_verbose)
      printf ("UNSUPPORTED %s on %s: node '%s': %s\n", case_name, t->name, node->name, why);
    return;
  }
  stage = nnp_stage_new (sg, &idx, 1, &opts, &error);
  good = stage != NULL;
  for (int i = 0; good && i < n_out; i++)
    good = (out[i] = nnp_stage_new_output (stage, i, &error)) != NULL;
  good = good && nnp_stage_run (stage, ins, out, &error);
  if (!good)
    msg = g_strdup (error ? error->message : "failed");
  for (int i = 0; good && i < n_out; i++) {
    g_autofree char *m = NULL;
    if (!compare (out[i], ref_out[i], &m)) {
      good = FALSE;
      msg = g_strdup_printf ("output '%s': %s", nnp_stage_get_output (stage, i)->name, m);
    }
  }
  if (good) {
    st->passed++;
    if (opt_verbose)
      printf ("PASS %s on %s: node '%s' (%s)\n", case_name, t->name, node->name, node->op_type);
  } else {
    st->failed++;
    printf ("FAIL %s on %s: node '%s' (%s): %s\n", case_name, t->name, node->name, node->op_type,
            msg);
  }
  for (int i = 0; i < n_out; i++)
    if (out[i])
      nnp_tensor_unref (out[i]);
  if (stage)
    nnp_stage_free (stage);
}

/* Run one node on the host backend (the reference), then on every target;
 * values[] holds the reference's tensors by value id. */
static void
run_node (NnpGraph *sg, int idx, NnpTensor **values, const char *case_name, gboolean *ok)
{
  NnpNode *node = nnp_graph_node (sg, idx);
  NnpStageOptions opts = { .device = nnp_backend_host ()->name, .threads = 1 };
  g_autoptr (GError) error = NULL;
  NnpStage *stage;
  int n_in, n_out;
  g_autofree NnpTensor **ins = NULL, **ref_out = NULL;

  stage = nnp_stage_new (sg, &idx, 1, &opts, &error);
  if (stage == NULL) {
    *ok = FALSE;
    return;
  }
  n_in = nnp_stage_get_n_inputs (stage);
  n_out = nnp_stage_get_n_outputs (stage);
  ins = g_new0 (NnpTensor *, MAX (n_in, 1));
  ref_out = g_new0 (NnpTensor *, MAX (n_out, 1));
  for (int i = 0; i < n_in; i++)
    if ((ins[i] = values[nnp_stage_get_input (stage, i)->id]) == NULL) {
      *ok = FALSE;
      goto out;
    }
  for (int i = 0; i < n_out; i++)
    ref_out[i] = nnp_stage_new_output (stage, i, NULL);
  if (!nnp_stage_run (stage, ins, ref_out, &error)) {
    *ok = FALSE;
    goto out;
  }
  for (int i = 0; i < n_out; i++) {
    int id = nnp_stage_get_output (stage, i)->id;
    if (values[id] == NULL)
      values[id] = nnp_tensor_ref (ref_out[i]);
  }
  ops_seen[MIN ((int) node->op, NNP_OP_COUNT)]++;
  for (int t = 0; t < n_targets; t++)
    run_on (&targets[t], sg, idx, ins, ref_out, n_out, case_name);

out:
  for (int i = 0; i < n_out; i++)
    if (ref_out[i])
      nnp_tensor_unref (ref_out[i]);
  nnp_stage_free (stage);
}

static void
run_case (const char *dir, const char *case_name)
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
    run_node (sg, (int) i, values, case_name, &ok);
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
  GOptionEntry entries[] = { { "backend", 'b', 0, G_OPTION_ARG_STRING, &opt_backend,
                               "Only this backend (default: every registered one)", "NAME" },
                             { "filter", 'f', 0, G_OPTION_ARG_STRING, &opt_filter,
                               "Only cases containing SUBSTR", "SUBSTR" },
                             { "verbose", 'v', 0, G_OPTION_ARG_NONE, &opt_verbose,
                               "Print every node", NULL },
                             { NULL } };
  g_autoptr (GOptionContext) ctx =
      g_option_context_new ("DIR... - every op on every backend against the CPU, node by node");
  g_autoptr (GError) error = NULL;
  const NnpBackend *host = nnp_backend_host ();
  int n_cases = 0, failed = 0, missing = 0, n_ops = 0;

  g_option_context_add_main_entries (ctx, entries, NULL);
  if (!g_option_context_parse (ctx, &argc, &argv, &error)) {
    fprintf (stderr, "%s\n", error->message);
    return 2;
  }
  printf ("reference: %s\n", host->name);
  for (int i = 0; i < nnp_backend_count () && n_targets < MAX_BACKENDS; i++) {
    const NnpBackend *b = nnp_backend_get (i);
    Target *t = &targets[n_targets];

    if (b == host || (opt_backend && g_ascii_strcasecmp (opt_backend, b->name) != 0))
      continue;
    t->name = b->name;
    t->device = nnp_device_open (b->name, &error);
    if (t->device == NULL) {
      /* a registered backend must be tested: its device missing is a failure */
      printf (
          "FAIL: backend '%s': its device does not open (OpenCL: install the Debian package pocl-opencl-icd): %s\n",
          b->name, error->message);
      g_clear_error (&error);
      missing++;
      continue;
    }
    printf ("backend: %s (%s)\n", b->name, nnp_device_get_name (t->device));
    t->why = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
    n_targets++;
  }
  if (n_targets == 0 && missing == 0)
    printf ("no backend besides %s is registered: the reference runs alone\n", host->name);

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
      run_case (dir, g_ptr_array_index (list, i));
      n_cases++;
    }
  }

  for (int op = 0; op <= NNP_OP_COUNT; op++)
    n_ops += ops_seen[op] > 0;
  printf ("\n%d cases, %d ops run on %s\n", n_cases, n_ops, host->name);
  for (int k = 0; k < n_targets; k++) {
    Target *t = &targets[k];
    Stats total = { 0 };
    GHashTableIter it;
    gpointer key, v;

    printf ("\n%s against %s, per op:\n", t->name, host->name);
    for (int op = 0; op <= NNP_OP_COUNT; op++) {
      Stats *s = &t->ops[op];
      if (ops_seen[op] == 0)
        continue;
      printf ("  %-20s %4d passed, %3d failed, %3d unsupported\n",
              op < NNP_OP_COUNT ? nnp_op_name ((NnpOpType) op) : "(other)", s->passed, s->failed,
              s->unsupported);
      total.passed += s->passed;
      total.failed += s->failed;
      total.unsupported += s->unsupported;
    }
    printf ("  unsupported, why:\n");
    g_hash_table_iter_init (&it, t->why);
    while (g_hash_table_iter_next (&it, &key, &v))
      printf ("    %4d  %s\n", GPOINTER_TO_INT (v), (char *) key);
    printf ("%s: %d passed, %d failed, %d unsupported (nodes)\n", t->name, total.passed,
            total.failed, total.unsupported);
    failed += total.failed;
    g_hash_table_destroy (t->why);
    nnp_device_unref (t->device);
  }
  if (n_cases == 0) {
    printf ("FAIL: no cases found (install the Debian package libonnx-testdata)\n");
    return 1;
  }
  return failed > 0 || missing > 0 ? 1 : 0;
}
