/* nnpipe: command-line front end of libnnpipe.
 *
 *   nnpipe inspect MODEL [--shape NAME=D0,D1,...]
 *   nnpipe run MODEL [--shape NAME=D0,..] [--input NAME=FILE.raw] [--output-dir DIR]
 *                    [--threads N] [--cpus 0,1] [--repeat K] [--device cpu|opencl[:N]]
 *                    [--no-fusion] [--profile] [--plan FILE]
 *   nnpipe split MODEL [--stages N|auto] [--devices LIST] ... [-o FILE] [--svg FILE]
 *   nnpipe timeline TRACE.json -o timeline.svg
 *   nnpipe serve MODEL [--listen ADDR:PORT] [--device D] [--plan P --stage K | --nodes A..B]
 *                [--tls-cert F --tls-key F] [--token T]
 *
 * Errors: one line "nnpipe: <message>" on stderr; exit 1 (2 for usage errors). */
#include <nnpipe/nnpipe.h>
#include <nnpipe/model.h>
#include <nnpipe/stage.h>
#include <nnpipe/tensor.h>
#include <nnpipe/graph.h>
#include <nnpipe/plan.h>
#include <nnpipe/plan-make.h>
#include <nnpipe/remote.h>

#include <cjson/cJSON.h>
#include <glib/gstdio.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


#define EXIT_USAGE 2

static const char usage_text[] =
    "Usage: nnpipe COMMAND [OPTIONS]\n"
    "\n"
    "Commands:\n"
    "  inspect MODEL      inputs, outputs, op histogram, parameters, FLOPs\n"
    "  run MODEL          run the model on a device (--device, default the CPU) and print\n"
    "                     checksums of the outputs\n"
    "  split MODEL        split the model into pipeline stages, write a plan (JSON)\n"
    "  timeline TRACE     draw a trace (nnpipeline trace=FILE or NNP_TRACE=FILE) as an\n"
    "                     SVG timeline: -o FILE.svg (docs/pipeline.md)\n"
    "  serve MODEL        serve a part of the model to remote nnremote clients\n"
    "                     (docs/remote.md): --listen ADDR:PORT (127.0.0.1:7000),\n"
    "                     --device D, --plan P --stage K or --nodes A..B (default the\n"
    "                     whole model), --tls-cert F --tls-key F, --token T, --max-queue N\n"
    "  help               this text\n"
    "\n"
    "Options of inspect and run:\n"
    "  --shape NAME=D0,D1,...   concrete shape of input NAME (repeatable)\n"
    "\n"
    "Options of run:\n"
    "  --input NAME=FILE        raw little-endian C-order data for input NAME, in the\n"
    "                           input's own dtype (float16 inputs: 16-bit floats); without it\n"
    "                           the input gets nnp_tensor_fill_pattern (seed = input index)\n"
    "  --output-dir DIR         write DIR/<output>.raw and DIR/outputs.json\n"
    "  --threads N              intra-op threads (default 1)\n"
    "  --cpus 0,1,...           pin thread i to cpus[i % n]\n"
    "  --repeat K               time K runs after one warm-up, print latency\n"
    "  --warmup W               W untimed runs before them (default 1; a CPU stage of\n"
    "                           several threads measures its first 10 runs)\n"
    "  --device NAME            cpu[:THREADS] or opencl[:N|:NAME] (default cpu)\n"
    "  --profile                print per-node-kind kernel times (cpu device)\n"
    "  --no-fusion              keep BatchNormalization and activations as nodes\n"
    "  --plan FILE              run the plan's stages in sequence (with --repeat: time each\n"
    "                           stage) and check the outputs equal the whole-model run\n"
    "\n"
    "Options of split:\n"
    "  --stages N|auto          number of stages (default auto)\n"
    "  --devices LIST           device of each stage, comma-separated: cpu[:THREADS] or\n"
    "                           opencl[:N|:NAME] or remote://HOST:PORT (default cpu:1;\n"
    "                           docs/partition.md)\n"
    "  --cuts 10,20|NAME,...    manual split: topological indices or node names starting\n"
    "                           stages ([0,10) [10,20) [20,n))\n"
    "  --profile | --estimate   measure every node (cached) | analytical costs only\n"
    "  --memory-limit MIB       per-stage memory limit\n"
    "  --max-ideals N           ideal-lattice cap of the optimal DP (default 200000)\n"
    "  -o FILE                  write the plan\n"
    "  --export DIR             write each stage as an ONNX model DIR/stage-K.onnx\n"
    "  --plan FILE              with --export: export that plan's stages instead of splitting\n"
    "  --svg FILE               draw the plan: the graph coloured by stage and device,\n"
    "                           the tensors crossing each cut and their bytes\n"
    "  --link BW/RTT[/WINDOW]   link of the remote:// devices (e.g. 100mbit/20ms/4) instead\n"
    "                           of the one measured at connect (docs/partition.md)\n"
    "  --in-flight N            frames in flight to a remote device (default 4)\n"
    "  --token T                shared secret of the remote servers\n"
    "\n"
    "Run 'nnpipe COMMAND --help' for the options of one command.\n";

static void G_GNUC_PRINTF (1, 2) print_error (const char *format, ...)
{
  va_list args;
  g_autofree char *msg = NULL;

  va_start (args, format);
  msg = g_strdup_vprintf (format, args);
  va_end (args);
  fprintf (stderr, "nnpipe: %s\n", msg);
}

/* ------------------------------------------------------------ arguments */

static gboolean
parse_dims (const char *text, NnpShape *shape)
{
  g_auto (GStrv) parts = NULL;
  int n;

  memset (shape, 0, sizeof (*shape));
  if (text == NULL)
    return FALSE;
  if (*text == '\0') {
    shape->rank = 0; /* a scalar */
    return TRUE;
  }
  parts = g_strsplit (text, ",", -1);
  n = g_strv_length (parts);
  if (n > NNP_MAX_RANK)
    return FALSE;
  for (int i = 0; i < n; i++) {
    char *end = NULL;
    gint64 d = g_ascii_strtoll (g_strstrip (parts[i]), &end, 10);
    if (end == parts[i] || *end != '\0' || d < 0)
      return FALSE;
    shape->dims[i] = d;
  }
  shape->rank = n;
  return TRUE;
}

typedef struct {
  char **names; /* owned */
  NnpInputShape *shapes;
  int n;
} ShapeArgs;

static void
shape_args_clear (ShapeArgs *s)
{
  g_strfreev (s->names);
  g_free (s->shapes);
}

static gboolean
parse_shape_args (char **args, ShapeArgs *out)
{
  int n = args ? g_strv_length (args) : 0;

  out->names = g_new0 (char *, n + 1);
  out->shapes = g_new0 (NnpInputShape, MAX (n, 1));
  out->n = n;
  for (int i = 0; i < n; i++) {
    const char *eq = strrchr (args[i], '=');
    if (eq == NULL || eq == args[i] || !parse_dims (eq + 1, &out->shapes[i].shape)) {
      print_error ("bad --shape '%s': expected NAME=D0,D1,... (non-negative integers)", args[i]);
      return FALSE;
    }
    out->names[i] = g_strndup (args[i], eq - args[i]);
    out->shapes[i].name = out->names[i];
  }
  return TRUE;
}

/* Parse one command's options: FALSE with a usage error already printed. */
static gboolean
parse_options (const char *command, GOptionEntry *entries, int *argc, char ***argv,
               const char **model)
{
  g_autofree char *param = g_strdup_printf ("%s MODEL", command);
  g_autoptr (GOptionContext) ctx = g_option_context_new (param);
  g_autoptr (GError) err = NULL;

  g_option_context_add_main_entries (ctx, entries, NULL);
  if (!g_option_context_parse (ctx, argc, argv, &err)) {
    print_error ("%s", err->message);
    return FALSE;
  }
  /* argv[0] is "nnpipe", argv[1] the command */
  if (*argc != 3) {
    print_error (*argc < 3 ? "%s: missing MODEL argument (see 'nnpipe help')"
                           : "%s: too many arguments (see 'nnpipe help')",
                 command);
    return FALSE;
  }
  *model = (*argv)[2];
  return TRUE;
}

/* ------------------------------------------------------------ helpers */

static char *
value_shape_string (const NnpValue *v)
{
  GString *s = g_string_new ("[");

  if (v->shape.rank < 0)
    return g_string_free (g_string_assign (s, "[?]"), FALSE);
  for (int d = 0; d < v->shape.rank; d++) {
    const char *dn =
        v->dim_names && d < (int) g_strv_length (v->dim_names) ? v->dim_names[d] : NULL;
    if (d)
      g_string_append (s, ", ");
    if (v->shape.dims[d] >= 0)
      g_string_append_printf (s, "%" G_GINT64_FORMAT, v->shape.dims[d]);
    else if (dn && *dn)
      g_string_append (s, dn);
    else
      g_string_append_c (s, '?');
  }
  g_string_append_c (s, ']');
  return g_string_free (s, FALSE);
}

static char *
human (double x, const char *unit)
{
  if (x >= 1e9)
    return g_strdup_printf ("%.3f G%s", x / 1e9, unit);
  if (x >= 1e6)
    return g_strdup_printf ("%.3f M%s", x / 1e6, unit);
  if (x >= 1e3)
    return g_strdup_printf ("%.3f K%s", x / 1e3, unit);
  return g_strdup_printf ("%.0f %s", x, unit);
}

static double
element_as_double (const NnpTensor *t, int64_t i)
{
  switch (t->dtype) {
    case NNP_DTYPE_FLOAT32: return ((const float *) t->data)[i];
    case NNP_DTYPE_FLOAT64: return ((const double *) t->data)[i];
    case NNP_DTYPE_FLOAT16:
    case NNP_DTYPE_BFLOAT16: {
      float f;
      nnp_half_to_f32 (t->dtype, (const guint16 *) t->data + i, &f, 1);
      return f;
    }
    case NNP_DTYPE_UINT8:
    case NNP_DTYPE_BOOL: return ((const guint8 *) t->data)[i];
    case NNP_DTYPE_INT8: return ((const gint8 *) t->data)[i];
    case NNP_DTYPE_UINT16: return ((const guint16 *) t->data)[i];
    case NNP_DTYPE_INT16: return ((const gint16 *) t->data)[i];
    case NNP_DTYPE_INT32: return ((const gint32 *) t->data)[i];
    case NNP_DTYPE_UINT32: return ((const guint32 *) t->data)[i];
    case NNP_DTYPE_INT64: return (double) ((const gint64 *) t->data)[i];
    case NNP_DTYPE_UINT64: return (double) ((const guint64 *) t->data)[i];
    default: return 0.0;
  }
}

static char *
safe_file_name (const char *name)
{
  char *s = g_strdup (name);

  for (char *p = s; *p; p++)
    if (!g_ascii_isalnum (*p) && *p != '.' && *p != '_' && *p != '-')
      *p = '_';
  if (strcmp (s, ".") == 0 || strcmp (s, "..") == 0 || *s == '\0') {
    g_free (s);
    s = g_strdup ("_");
  }
  return s;
}

/* ------------------------------------------------------------ inspect */

typedef struct {
  const char *op;
  int count;
} OpCount;

static int
cmp_op_count (const void *a, const void *b)
{
  const OpCount *x = a, *y = b;

  if (x->count != y->count)
    return y->count - x->count;
  return strcmp (x->op, y->op);
}

static void
print_values (const NnpGraph *graph, const GArray *ids, const char *title)
{
  printf ("%s:\n", title);
  for (guint i = 0; i < ids->len; i++) {
    const NnpValue *v = nnp_graph_value (graph, g_array_index (ids, int, i));
    g_autofree char *shape = NULL;
    if (v->constant && v->is_input)
      continue;
    shape = value_shape_string (v);
    printf ("  %s: %s %s\n", v->name, nnp_dtype_name (v->dtype), shape);
  }
}

static int
cmd_inspect (int argc, char **argv)
{
  char **shape_strv = NULL;
  GOptionEntry entries[] = { { "shape", 0, 0, G_OPTION_ARG_STRING_ARRAY, &shape_strv,
                               "Concrete shape of an input (repeatable)", "NAME=D0,D1,..." },
                             { NULL } };
  const char *path;
  ShapeArgs sa = { 0 };
  g_autoptr (GError) err = NULL;
  NnpModel *model;
  NnpGraph *graph;
  g_autoptr (GHashTable) hist = NULL;
  int64_t n_params = 0, param_bytes = 0;
  int ret = 1;

  if (!parse_options ("inspect", entries, &argc, &argv, &path)
      || !parse_shape_args (shape_strv, &sa)) {
    g_strfreev (shape_strv);
    shape_args_clear (&sa);
    return EXIT_USAGE;
  }
  g_strfreev (shape_strv);
  model = nnp_model_load (path, &err);
  if (model == NULL) {
    print_error ("%s", err->message);
    goto out;
  }
  graph = nnp_model_get_graph (model);

  printf ("model: %s\n", path);
  printf ("graph: '%s', opset %d, %u nodes\n", graph->name, graph->opset, graph->nodes->len);
  print_values (graph, graph->inputs, "inputs");
  print_values (graph, graph->outputs, "outputs");

  hist = g_hash_table_new (g_str_hash, g_str_equal);
  for (guint i = 0; i < graph->nodes->len; i++) {
    const NnpNode *node = nnp_graph_node (graph, i);
    int c = GPOINTER_TO_INT (g_hash_table_lookup (hist, node->op_type));
    g_hash_table_insert (hist, node->op_type, GINT_TO_POINTER (c + 1));
  }
  {
    guint n = g_hash_table_size (hist), k = 0;
    g_autofree OpCount *counts = g_new (OpCount, MAX (n, 1));
    GHashTableIter it;
    gpointer key, val;

    g_hash_table_iter_init (&it, hist);
    while (g_hash_table_iter_next (&it, &key, &val)) {
      counts[k].op = key;
      counts[k].count = GPOINTER_TO_INT (val);
      k++;
    }
    qsort (counts, n, sizeof (OpCount), cmp_op_count);
    printf ("ops:\n");
    for (guint i = 0; i < n; i++)
      printf ("  %-24s %d\n", counts[i].op, counts[i].count);
  }

  /* parameters: constants (initializers) and the tensors of Constant nodes */
  for (guint i = 0; i < graph->values->len; i++) {
    const NnpValue *v = nnp_graph_value (graph, i);
    if (v->constant) {
      n_params += MAX (nnp_tensor_numel (v->constant), 0);
      param_bytes += v->constant->nbytes;
    }
  }
  for (guint i = 0; i < graph->nodes->len; i++) {
    const NnpNode *node = nnp_graph_node (graph, i);
    const NnpValue *out = nnp_node_output (graph, node, 0);
    const NnpAttr *a;
    if (node->op != NNP_OP_CONSTANT || (out && out->constant))
      continue;
    a = nnp_node_get_attr (node, "value");
    if (a && a->type == NNP_ATTR_TENSOR && a->t) {
      n_params += MAX (nnp_tensor_numel (a->t), 0);
      param_bytes += a->t->nbytes;
    }
  }
  {
    g_autofree char *hp = human ((double) n_params, "");
    g_autofree char *hb = human ((double) param_bytes, "B");
    printf ("parameters: %" G_GINT64_FORMAT " (%s), %" G_GINT64_FORMAT " bytes (%s)\n", n_params,
            hp, param_bytes, hb);
  }

  /* FLOPs on a specialised graph */
  {
    g_autoptr (GArray) shapes = g_array_new (FALSE, TRUE, sizeof (NnpInputShape));
    g_autoptr (GString) assumed = g_string_new (NULL);
    g_autoptr (GError) serr = NULL;
    NnpGraph *spec;

    if (sa.n > 0) {
      g_array_append_vals (shapes, sa.shapes, sa.n);
    } else {
      for (guint i = 0; i < graph->inputs->len; i++) {
        const NnpValue *v = nnp_graph_value (graph, g_array_index (graph->inputs, int, i));
        NnpInputShape s = { v->name, v->shape };
        gboolean symbolic = FALSE;
        g_autofree char *str = NULL;
        if (v->constant || v->shape.rank < 0)
          continue;
        for (int d = 0; d < v->shape.rank; d++) {
          if (s.shape.dims[d] < 0) {
            s.shape.dims[d] = d == 0 ? 1 : 64;
            symbolic = TRUE;
          }
        }
        if (!symbolic)
          continue;
        g_array_append_val (shapes, s);
        str = nnp_shape_to_string (&s.shape);
        g_string_append_printf (assumed, "%s%s=%s", assumed->len ? ", " : "", v->name, str);
      }
    }
    spec = nnp_graph_specialize (graph, (const NnpInputShape *) shapes->data, shapes->len,
                                 NNP_SPECIALIZE_NO_FUSION, &serr);
    if (assumed->len)
      printf (
          "note: symbolic dims replaced by defaults (1 for the first dim, 64 otherwise): %s; use --shape to choose\n",
          assumed->str);
    if (spec == NULL) {
      printf ("FLOPs: unknown (%s)\n", serr->message);
    } else {
      double flops = 0;
      g_autofree char *hf = NULL;
      for (guint i = 0; i < spec->nodes->len; i++)
        flops += nnp_node_flops (spec, nnp_graph_node (spec, i));
      hf = human (flops, "FLOPs");
      printf ("FLOPs: %.0f (%s), %u nodes after specialisation\n", flops, hf, spec->nodes->len);
      nnp_graph_unref (spec);
    }
  }
  nnp_model_unref (model);
  ret = 0;

out:
  shape_args_clear (&sa);
  return ret;
}

/* ------------------------------------------------------------ run */

static gboolean
load_input (NnpTensor *t, const NnpValue *v, const char *file, GError **error)
{
  g_autofree char *contents = NULL;
  gsize len = 0;

  if (!g_file_get_contents (file, &contents, &len, error))
    return FALSE;
  if (len != t->nbytes) {
    g_autofree char *s = nnp_shape_to_string (&v->shape);
    g_set_error (error, NNP_ERROR, NNP_ERROR_INVALID,
                 "input '%s': file '%s' has %" G_GSIZE_FORMAT " bytes, expected %" G_GSIZE_FORMAT
                 " (%s %s)",
                 v->name, file, len, t->nbytes, nnp_dtype_name (v->dtype), s);
    return FALSE;
  }
  if (len)
    memcpy (t->data, contents, len);
  return TRUE;
}

static int
cmp_double (const void *a, const void *b)
{
  double x = *(const double *) a, y = *(const double *) b;
  return x < y ? -1 : x > y;
}

/* The tensor of graph output v: the stage's output of that value, or its
 * constant when specialisation folded it. */
static const NnpTensor *
graph_output_tensor (NnpStage *stage, NnpTensor **outputs, const NnpValue *v)
{
  for (int i = 0; i < nnp_stage_get_n_outputs (stage); i++)
    if (nnp_stage_get_output (stage, i) == v)
      return outputs[i];
  return v->constant;
}

/* One run: into the preallocated outputs, or, with data-dependent output
 * shapes, into new ones (replacing the last run's). */
static gboolean
run_once (NnpStage *stage, gboolean dynamic, NnpTensor **inputs, NnpTensor **outputs, int n_out,
          GError **error)
{
  if (!dynamic)
    return nnp_stage_run (stage, inputs, outputs, error);
  for (int i = 0; i < n_out; i++)
    g_clear_pointer (&outputs[i], nnp_tensor_unref);
  return nnp_stage_run_alloc (stage, inputs, outputs, error);
}

/* DIR/<output>.raw for every graph output, in graph order, and DIR/outputs.json. */
static gboolean
write_outputs (const NnpGraph *graph, NnpStage *stage, NnpTensor **outputs, const char *dir,
               GError **error)
{
  cJSON *root;
  char *json;
  g_autofree char *json_path = NULL;
  gboolean ok = TRUE;

  if (g_mkdir_with_parents (dir, 0755) != 0) {
    g_set_error (error, NNP_ERROR, NNP_ERROR_IO, "cannot create directory '%s': %s", dir,
                 g_strerror (errno));
    return FALSE;
  }
  root = cJSON_CreateObject ();
  for (guint i = 0; i < graph->outputs->len; i++) {
    const NnpValue *v = nnp_graph_value (graph, g_array_index (graph->outputs, int, i));
    const NnpTensor *t = graph_output_tensor (stage, outputs, v);
    g_autofree char *base = safe_file_name (v->name);
    g_autofree char *fname = g_strconcat (base, ".raw", NULL);
    g_autofree char *path = g_build_filename (dir, fname, NULL);
    cJSON *shape;

    if (t == NULL) {
      g_set_error (error, NNP_ERROR, NNP_ERROR_FAILED, "output '%s' has no value", v->name);
      ok = FALSE;
      break;
    }
    /* the tensor's shape: a data-dependent output's is known after the run */
    shape = cJSON_CreateArray ();
    for (int d = 0; d < t->shape.rank; d++)
      cJSON_AddItemToArray (shape, cJSON_CreateNumber ((double) t->shape.dims[d]));
    cJSON_AddItemToObject (root, v->name, shape);
    if (!g_file_set_contents (path, t->data ? t->data : "", t->nbytes, error)) {
      ok = FALSE;
      break;
    }
  }
  if (ok) {
    json = cJSON_Print (root);
    json_path = g_build_filename (dir, "outputs.json", NULL);
    ok = json != NULL && g_file_set_contents (json_path, json, -1, error);
    if (json == NULL)
      g_set_error (error, NNP_ERROR, NNP_ERROR_FAILED, "cannot serialise outputs.json");
    cJSON_free (json);
  }
  cJSON_Delete (root);
  return ok;
}

static void
print_checksum (const NnpValue *v, const NnpTensor *t, const char *note)
{
  g_autofree char *shape = nnp_shape_to_string (&t->shape);
  double sum = 0, asum = 0;
  int64_t n = nnp_tensor_numel (t);

  for (int64_t e = 0; e < n; e++) {
    double x = element_as_double (t, e);
    sum += x;
    asum += fabs (x);
  }
  printf ("output %s: %s %s sum=%.6g abs=%.6g%s\n", v->name, nnp_dtype_name (t->dtype), shape, sum,
          asum, note);
}

/* --profile: the per-node table of nnp_stage_free() on stderr, other
 * messages as usual (warnings and errors). */
static void
profile_log_handler (const char *category, NnpLogLevel level, const char *file, int line,
                     const char *func, const char *message, gpointer user_data)
{
  if (strcmp (category, "nnp-profile") == 0)
    fprintf (stderr, "%s\n", message);
  else if (level <= NNP_LOG_WARNING)
    fprintf (stderr, "%s: %s\n", category, message);
}

#include "nnpipe-svg.inc"
#include "nnpipe-split.inc"
#ifdef NNP_HAVE_GST
#include "nnpipe-serve.inc"
#endif

static int
cmd_run (int argc, char **argv)
{
  char **shape_strv = NULL, **input_strv = NULL, *output_dir = NULL, *cpus_str = NULL;
  char *device = NULL;
  g_autofree char *plan_path = NULL;
  int threads = 1, repeat = 0, warmup = 1;
  gboolean no_fusion = FALSE, profile = FALSE;
  GOptionEntry entries[] = {
    { "shape", 0, 0, G_OPTION_ARG_STRING_ARRAY, &shape_strv,
      "Concrete shape of an input (repeatable)", "NAME=D0,D1,..." },
    { "input", 0, 0, G_OPTION_ARG_FILENAME_ARRAY, &input_strv,
      "Raw little-endian data for an input (repeatable)", "NAME=FILE" },
    { "output-dir", 0, 0, G_OPTION_ARG_FILENAME, &output_dir,
      "Write outputs as DIR/<name>.raw and DIR/outputs.json", "DIR" },
    { "threads", 0, 0, G_OPTION_ARG_INT, &threads, "Intra-op threads (default 1)", "N" },
    { "cpus", 0, 0, G_OPTION_ARG_STRING, &cpus_str, "Pin threads to these cpus", "0,1,..." },
    { "repeat", 0, 0, G_OPTION_ARG_INT, &repeat, "Time K runs after one warm-up", "K" },
    { "warmup", 0, 0, G_OPTION_ARG_INT, &warmup, "Untimed runs before the timed ones (default 1)",
      "W" },
    { "device", 0, 0, G_OPTION_ARG_STRING, &device, "Device: cpu or opencl[:N|:NAME] (default cpu)",
      "NAME" },
    { "no-fusion", 0, 0, G_OPTION_ARG_NONE, &no_fusion,
      "Keep BatchNormalization and activations as nodes", NULL },
    { "profile", 0, 0, G_OPTION_ARG_NONE, &profile,
      "Print per-node-kind kernel times (sets NNP_PROFILE)", NULL },
    { "plan", 0, 0, G_OPTION_ARG_FILENAME, &plan_path, "Run the stages of a plan", "FILE" },
    { NULL }
  };
  const char *path;
  ShapeArgs sa = { 0 };
  g_autofree int *cpus = NULL;
  int n_cpus = 0, ret = 1, n_in = 0, n_out = 0;
  gboolean dynamic = FALSE;
  g_autoptr (GError) err = NULL;
  NnpModel *model = NULL;
  NnpGraph *graph = NULL;
  NnpStage *stage = NULL;
  NnpTensor **inputs = NULL, **outputs = NULL;
  NnpStageOptions opts = { 0 };
  g_autoptr (GArray) io_ids = NULL;

  if (!parse_options ("run", entries, &argc, &argv, &path) || !parse_shape_args (shape_strv, &sa)) {
    ret = EXIT_USAGE;
    goto out;
  }
  if (cpus_str && !nnp_cpus_parse (cpus_str, &cpus, &n_cpus, &err)) {
    print_error ("bad --cpus: %s", err->message);
    ret = EXIT_USAGE;
    goto out;
  }
  if (device) {
    /* the device syntax of the elements and plans: "cpu:2" = 2 threads */
    g_autofree char *dev = NULL;
    int dev_threads = 0;

    if (!nnp_device_spec_parse (device, &dev, &dev_threads, &err)) {
      print_error ("bad --device: %s", err->message);
      ret = EXIT_USAGE;
      goto out;
    }
    if (dev_threads > 0 && threads != 1 && threads != dev_threads) {
      print_error ("--device %s and --threads %d disagree", device, threads);
      ret = EXIT_USAGE;
      goto out;
    }
    if (dev_threads > 0)
      threads = dev_threads;
    g_free (device);
    device = g_steal_pointer (&dev);
  }
  if (threads < 1 || threads > 1024 || repeat < 0 || warmup < 1) {
    print_error ("--threads must be in 1..1024, --repeat >= 0 and --warmup >= 1");
    ret = EXIT_USAGE;
    goto out;
  }
  if (plan_path) {
    ret = run_plan (path, plan_path, repeat);
    goto out;
  }
  for (int i = 0; input_strv && input_strv[i]; i++) {
    const char *eq = strchr (input_strv[i], '=');
    if (eq == NULL || eq == input_strv[i] || eq[1] == '\0') {
      print_error ("bad --input '%s': expected NAME=FILE", input_strv[i]);
      ret = EXIT_USAGE;
      goto out;
    }
  }

  model = nnp_model_load (path, &err);
  if (model == NULL) {
    print_error ("%s", err->message);
    goto out;
  }
  /* a data-dependent tail (NMS over the network's boxes...) runs at run time:
   * its outputs are made by nnp_stage_run_alloc() */
  graph = nnp_model_specialize (model, sa.shapes, sa.n,
                                (no_fusion ? NNP_SPECIALIZE_NO_FUSION : NNP_SPECIALIZE_DEFAULT)
                                    | NNP_SPECIALIZE_DYNAMIC_TAIL,
                                &err);
  if (graph == NULL) {
    print_error ("%s", err->message);
    goto out;
  }
  opts.device = device;
  opts.threads = threads;
  opts.cpus = cpus;
  opts.n_cpus = n_cpus;
  if (profile) {
    g_setenv ("NNP_PROFILE", "1", FALSE); /* NNP_PROFILE=all kept */
    nnp_log_set_handler (profile_log_handler, NULL);
    if (nnp_log_get_threshold () < NNP_LOG_INFO)
      nnp_log_set_threshold (NNP_LOG_INFO);
  }
  /* the stage is the model: every graph input (also one no node reads) and
   * every non-constant graph output (also one that is a graph input, as in
   * stages written by split --export) */
  io_ids = g_array_new (FALSE, FALSE, sizeof (int));
  for (int pass = 0; pass < 2; pass++) {
    GArray *ids = pass == 0 ? graph->inputs : graph->outputs;
    for (guint i = 0; i < ids->len; i++)
      if (!nnp_graph_value (graph, g_array_index (ids, int, i))->constant)
        g_array_append_val (io_ids, g_array_index (ids, int, i));
    if (pass == 0)
      opts.n_inputs = io_ids->len;
  }
  opts.inputs = (const int *) io_ids->data;
  opts.outputs = (const int *) io_ids->data + opts.n_inputs;
  opts.n_outputs = io_ids->len - opts.n_inputs;
  stage = nnp_stage_new (graph, NULL, 0, &opts, &err);
  if (stage == NULL) {
    print_error ("%s", err->message);
    goto out;
  }

  n_in = nnp_stage_get_n_inputs (stage);
  n_out = nnp_stage_get_n_outputs (stage);
  inputs = g_new0 (NnpTensor *, MAX (n_in, 1));
  outputs = g_new0 (NnpTensor *, MAX (n_out, 1));
  for (int i = 0; input_strv && input_strv[i]; i++) {
    const char *eq = strchr (input_strv[i], '=');
    g_autofree char *name = g_strndup (input_strv[i], eq - input_strv[i]);
    gboolean found = FALSE;
    for (int k = 0; k < n_in; k++)
      if (strcmp (nnp_stage_get_input (stage, k)->name, name) == 0)
        found = TRUE;
    if (!found) {
      print_error ("--input: the model has no input '%s'", name);
      goto out;
    }
  }
  for (int k = 0; k < n_in; k++) {
    const NnpValue *v = nnp_stage_get_input (stage, k);
    const char *file = NULL;

    inputs[k] = nnp_tensor_new (v->dtype, &v->shape, &err);
    if (inputs[k] == NULL) {
      print_error ("input '%s': %s", v->name, err->message);
      goto out;
    }
    for (int i = 0; input_strv && input_strv[i]; i++) {
      const char *eq = strchr (input_strv[i], '=');
      if ((gsize) (eq - input_strv[i]) == strlen (v->name)
          && strncmp (input_strv[i], v->name, eq - input_strv[i]) == 0)
        file = eq + 1;
    }
    if (file) {
      if (!load_input (inputs[k], v, file, &err)) {
        print_error ("%s", err->message);
        goto out;
      }
    } else {
      nnp_tensor_fill_pattern (inputs[k], (guint32) k);
    }
  }
  for (int i = 0; i < n_out; i++)
    dynamic = dynamic || nnp_stage_output_is_dynamic (stage, i);
  for (int i = 0; i < n_out && !dynamic; i++) {
    outputs[i] = nnp_stage_new_output (stage, i, &err);
    if (outputs[i] == NULL) {
      print_error ("output '%s': %s", nnp_stage_get_output (stage, i)->name, err->message);
      goto out;
    }
  }

  for (int w = 0; w < (repeat > 0 ? warmup : 1); w++)
    if (!run_once (stage, dynamic, inputs, outputs, n_out, &err)) {
      print_error ("%s", err->message);
      goto out;
    }
  if (repeat > 0) {
    g_autofree double *ms = g_new (double, repeat);
    for (int r = 0; r < repeat; r++) {
      gint64 t0 = g_get_monotonic_time ();
      if (!run_once (stage, dynamic, inputs, outputs, n_out, &err)) {
        print_error ("%s", err->message);
        goto out;
      }
      ms[r] = (g_get_monotonic_time () - t0) / 1000.0;
    }
    qsort (ms, repeat, sizeof (double), cmp_double);
    printf ("latency_ms median=%.3f min=%.3f (%d runs, %d threads)\n",
            repeat % 2 ? ms[repeat / 2] : (ms[repeat / 2 - 1] + ms[repeat / 2]) / 2, ms[0], repeat,
            threads);
  }

  for (int i = 0; i < n_out; i++)
    print_checksum (nnp_stage_get_output (stage, i), outputs[i], "");
  /* graph outputs folded into constants are no stage outputs */
  for (guint i = 0; i < graph->outputs->len; i++) {
    const NnpValue *v = nnp_graph_value (graph, g_array_index (graph->outputs, int, i));
    if (v->constant)
      print_checksum (v, v->constant, " (constant)");
  }
  {
    gsize arena = nnp_stage_get_arena_bytes (stage);
    printf ("arena_bytes=%" G_GSIZE_FORMAT " (%.2f MiB), %u nodes\n", arena,
            arena / (1024.0 * 1024.0), graph->nodes->len);
  }
  if (output_dir && !write_outputs (graph, stage, outputs, output_dir, &err)) {
    print_error ("%s", err->message);
    goto out;
  }
  ret = 0;

out:
  for (int i = 0; inputs && i < n_in; i++)
    nnp_tensor_unref (inputs[i]);
  for (int i = 0; outputs && i < n_out; i++)
    nnp_tensor_unref (outputs[i]);
  g_free (inputs);
  g_free (outputs);
  nnp_stage_free (stage);
  if (graph)
    nnp_graph_unref (graph);
  if (model)
    nnp_model_unref (model);
  shape_args_clear (&sa);
  g_strfreev (shape_strv);
  g_strfreev (input_strv);
  g_free (output_dir);
  g_free (cpus_str);
  g_free (device);
  return ret;
}

int
main (int argc, char **argv)
{
  const char *cmd = argc > 1 ? argv[1] : NULL;

  if (cmd == NULL) {
    fputs (usage_text, stderr);
    return EXIT_USAGE;
  }
  if (strcmp (cmd, "help") == 0 || strcmp (cmd, "--help") == 0 || strcmp (cmd, "-h") == 0) {
    fputs (usage_text, stdout);
    return 0;
  }
  if (strcmp (cmd, "--version") == 0) {
    printf ("nnpipe %s\n", NNP_VERSION);
    return 0;
  }
  if (strcmp (cmd, "inspect") == 0)
    return cmd_inspect (argc, argv);
  if (strcmp (cmd, "run") == 0)
    return cmd_run (argc, argv);
  if (strcmp (cmd, "split") == 0)
    return cmd_split (argc, argv);
  if (strcmp (cmd, "timeline") == 0)
    return cmd_timeline (argc, argv);
  if (strcmp (cmd, "serve") == 0) {
#ifdef NNP_HAVE_GST
    return cmd_serve (argc, argv);
#else
    print_error ("serve: this nnpipe was built without GStreamer (-Dplugin=disabled)");
    return 1;
#endif
  }
  print_error ("unknown command '%s' (see 'nnpipe help')", cmd);
  return EXIT_USAGE;
}
