/* libnnpipe: the cost model of the partitioner.
 *
 * Node times per device: measured by running the node alone as a one-node
 * NnpStage with the real shapes (median of repeats, after one warm-up), or
 * estimated (FLOPs / GFLOP/s + bytes moved / bandwidth) when not profiling
 * or when the node cannot run alone.  Profiles are cached on disk as JSON,
 * keyed by model digest, device, threads and shapes.
 *
 * Transfers cpu -> cpu (one process, a queue between two elements): a small
 * per-buffer and per-tensor overhead + bytes / measured memcpy bandwidth,
 * charged to the sending stage (it writes / forwards the tensors). */
#include <nnpipe/plan.h>
#include <nnpipe/log.h>

#include "backends/cpu/cpu.h"
#include "partition/partition.h"

#include <cjson/cJSON.h>
#include <glib/gstdio.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define CAT "nnp-partition"

/* analytical fallback for the CPU, per thread */
#define CPU_GFLOPS_PER_THREAD 40.0
#define CPU_BYTES_PER_MS 2.0e7          /* 20 GB/s of streamed tensor bytes */
#define NODE_OVERHEAD_MS 0.002
#define XFER_BUFFER_MS 0.030            /* per buffer through a queue */
#define XFER_TENSOR_MS 0.003            /* per tensor in it */

/* ------------------------------------------------------------ devices */

gboolean
nnp_device_available (const char *device)
{
  return device != NULL && strcmp (device, "cpu") == 0;
}

gboolean
nnp_device_supports (const char *device, const NnpNode *node)
{
  const NnpCpuKernel *k;

  g_return_val_if_fail (node != NULL, FALSE);
  if (!nnp_device_available (device))
    return FALSE;
  k = nnp_cpu_kernel (node->op);
  return k != NULL && k->run != NULL;
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
    char *colon = strchr (item, ':');
    int threads = 1;

    if (colon) {
      char *end = NULL;
      gint64 t = g_ascii_strtoll (colon + 1, &end, 10);
      if (end == colon + 1 || *end != '\0' || t < 1 || t > 1024) {
        g_set_error (error, NNP_ERROR, NNP_ERROR_PLAN,
                     "device list item '%s': expected DEVICE or DEVICE:THREADS (1..1024)", item);
        nnp_device_specs_free (specs, count);
        return NULL;
      }
      threads = (int) t;
      *colon = '\0';
    }
    if (*item == '\0') {
      g_set_error (error, NNP_ERROR, NNP_ERROR_PLAN, "device list item %d is empty", i);
      nnp_device_specs_free (specs, count);
      return NULL;
    }
    if (!nnp_device_available (item)) {
      g_set_error (error, NNP_ERROR, NNP_ERROR_DEVICE,
                   "device '%s' is not available (available: cpu)", item);
      nnp_device_specs_free (specs, count);
      return NULL;
    }
    specs[i].device = g_strdup (item);
    specs[i].threads = threads;
  }
  *n = count;
  return specs;
}

char *
nnp_shapes_key (const NnpInputShape *shapes, int n_shapes, gboolean no_fusion)
{
  GString *s = g_string_new (NULL);

  for (int i = 0; i < n_shapes; i++) {
    g_autofree char *d = nnp_shape_to_string (&shapes[i].shape);
    g_string_append_printf (s, "%s%s=%s", i ? "," : "", shapes[i].name, d);
  }
  if (n_shapes == 0)
    g_string_append (s, "static");
  if (no_fusion)
    g_string_append (s, "-nofusion");
  return g_string_free (s, FALSE);
}

/* ------------------------------------------------------------ memcpy bandwidth */

static int
cmp_double (const void *a, const void *b)
{
  double x = *(const double *) a, y = *(const double *) b;
  return x < y ? -1 : x > y;
}

static double
median (double *x, int n)
{
  qsort (x, n, sizeof (double), cmp_double);
  return n % 2 ? x[n / 2] : (x[n / 2 - 1] + x[n / 2]) / 2;
}

/* Bytes per millisecond of a large memcpy (measured once per process). */
static double
memcpy_bytes_per_ms (void)
{
  static gsize once = 0;
  static double bw = 0;

  if (g_once_init_enter (&once)) {
    const gsize size = 16u << 20;
    guint8 *a = g_malloc (size), *b = g_malloc (size);
    double t[5];
    memset (a, 1, size);
    memset (b, 2, size);
    for (int r = 0; r < 5; r++) {
      gint64 t0 = g_get_monotonic_time ();
      memcpy (b, a, size);
      a[r] = b[size - 1 - r];
      t[r] = MAX ((g_get_monotonic_time () - t0) / 1000.0, 1e-3);
    }
    bw = size / median (t, 5);
    g_free (a);
    g_free (b);
    NNP_DEBUG (CAT, "memcpy bandwidth %.2f GB/s", bw / 1e6);
    g_once_init_leave (&once, 1);
  }
  return bw;
}

/* ------------------------------------------------------------ the model */

typedef struct {
  double *ms;        /* per node; INFINITY = unsupported */
  gboolean profiled; /* every supported node measured */
} DevCost;

struct _NnpCostModel {
  NnpGraph *graph;
  char *digest;
  char *shapes_key;
  NnpCostMode mode;
  GHashTable *devs;  /* "cpu-t1" -> DevCost* */
};

static void
dev_cost_free (gpointer p)
{
  DevCost *d = p;
  g_free (d->ms);
  g_free (d);
}

NnpCostModel *
nnp_cost_model_new (NnpGraph *graph, const char *digest, const char *shapes_key,
                    NnpCostMode mode)
{
  NnpCostModel *cm;

  g_return_val_if_fail (graph != NULL, NULL);
  cm = g_new0 (NnpCostModel, 1);
  cm->graph = nnp_graph_ref (graph);
  cm->digest = g_strdup (digest);
  cm->shapes_key = g_strdup (shapes_key ? shapes_key : "static");
  cm->mode = mode;
  cm->devs = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, dev_cost_free);
  return cm;
}

void
nnp_cost_model_free (NnpCostModel *cm)
{
  if (cm == NULL)
    return;
  g_hash_table_unref (cm->devs);
  nnp_graph_unref (cm->graph);
  g_free (cm->digest);
  g_free (cm->shapes_key);
  g_free (cm);
}

static char *
dev_key (const NnpDeviceSpec *dev)
{
  return g_strdup_printf ("%s-t%d", dev->device ? dev->device : "cpu", MAX (dev->threads, 1));
}

static double
value_bytes (const NnpValue *v)
{
  int64_t n = nnp_shape_numel (&v->shape);
  return n > 0 ? (double) n * nnp_dtype_size (v->dtype) : 0.0;
}

static double
estimate_node_ms (const NnpGraph *graph, const NnpNode *node, int threads)
{
  double flops = nnp_node_flops (graph, node), bytes = 0;
  double t = MAX (threads, 1);
  double eff = t > 1 ? 0.9 * t : 1.0;

  for (int q = 0; q < node->n_inputs; q++) {
    NnpValue *v = nnp_node_input (graph, node, q);
    if (v)
      bytes += value_bytes (v);
  }
  for (int q = 0; q < node->n_outputs; q++) {
    NnpValue *v = nnp_node_output (graph, node, q);
    if (v)
      bytes += value_bytes (v);
  }
  return NODE_OVERHEAD_MS + flops / (CPU_GFLOPS_PER_THREAD * eff * 1e6)
      + bytes / (CPU_BYTES_PER_MS * MIN (eff, 2.0));
}

/* Median ms of node i alone, or a negative value when it cannot run alone. */
static double
profile_node (NnpGraph *graph, int i, const NnpDeviceSpec *dev)
{
  NnpStageOptions opts = { 0 };
  NnpStage *stage;
  g_autoptr (GError) err = NULL;
  int n_in, n_out, reps;
  NnpTensor **in = NULL, **out = NULL;
  double result = -1.0, t[9];
  gint64 t0;

  opts.device = dev->device;
  opts.threads = dev->threads;
  stage = nnp_stage_new (graph, &i, 1, &opts, &err);
  if (stage == NULL) {
    NNP_DEBUG (CAT, "profile: node %d: %s", i, err->message);
    return -1.0;
  }
  n_in = nnp_stage_get_n_inputs (stage);
  n_out = nnp_stage_get_n_outputs (stage);
  in = g_new0 (NnpTensor *, MAX (n_in, 1));
  out = g_new0 (NnpTensor *, MAX (n_out, 1));
  for (int q = 0; q < n_in; q++) {
    const NnpValue *v = nnp_stage_get_input (stage, q);
    in[q] = nnp_tensor_new (v->dtype, &v->shape, NULL);
    if (in[q] == NULL)
      goto out;
    nnp_tensor_fill_pattern (in[q], (guint32) q);
  }
  for (int q = 0; q < n_out; q++)
    if ((out[q] = nnp_stage_new_output (stage, q, NULL)) == NULL)
      goto out;
  t0 = g_get_monotonic_time ();
  if (!nnp_stage_run (stage, in, out, &err)) {
    NNP_DEBUG (CAT, "profile: node %d: %s", i, err->message);
    goto out;
  }
  /* keep profiling short: fewer repeats for slow nodes */
  reps = (g_get_monotonic_time () - t0) > 50000 ? 3 : 9;
  for (int r = 0; r < reps; r++) {
    t0 = g_get_monotonic_time ();
    if (!nnp_stage_run (stage, in, out, NULL))
      goto out;
    t[r] = (g_get_monotonic_time () - t0) / 1000.0;
  }
  result = median (t, reps);

out:
  for (int q = 0; q < n_in; q++)
    if (in[q])
      nnp_tensor_unref (in[q]);
  for (int q = 0; q < n_out; q++)
    if (out[q])
      nnp_tensor_unref (out[q]);
  g_free (in);
  g_free (out);
  nnp_stage_free (stage);
  return result;
}

static char *
cache_path (NnpCostModel *cm, const NnpDeviceSpec *dev)
{
  const char *dir_env = g_getenv ("NNP_PROFILE_DIR");
  g_autofree char *dir = dir_env ? g_strdup (dir_env)
      : g_build_filename (g_get_user_cache_dir (), "nnpipe", "profiles", NULL);
  g_autofree char *key = dev_key (dev);
  g_autofree char *shapes = g_strdup (cm->shapes_key);
  g_autofree char *file = NULL;

  for (char *p = shapes; *p; p++)
    if (!g_ascii_isalnum (*p) && *p != '=' && *p != '-' && *p != '.' && *p != '_')
      *p = '_';
  file = g_strdup_printf ("%s-%s-%s.json", cm->digest, key, shapes);
  return g_build_filename (dir, file, NULL);
}

/* Fill d from the cache file; TRUE when every supported node is there. */
static gboolean
cache_load (NnpCostModel *cm, const NnpDeviceSpec *dev, DevCost *d)
{
  g_autofree char *path = cache_path (cm, dev);
  g_autofree char *text = NULL;
  cJSON *root, *nodes;
  gboolean ok = TRUE;

  if (!g_file_get_contents (path, &text, NULL, NULL))
    return FALSE;
  root = cJSON_Parse (text);
  nodes = root ? cJSON_GetObjectItemCaseSensitive (root, "nodes") : NULL;
  if (!cJSON_IsObject (nodes)) {
    cJSON_Delete (root);
    return FALSE;
  }
  for (guint i = 0; i < cm->graph->nodes->len && ok; i++) {
    const NnpNode *node = nnp_graph_node (cm->graph, i);
    cJSON *ms;
    if (!isfinite (d->ms[i]))
      continue;
    ms = cJSON_GetObjectItemCaseSensitive (nodes, node->name);
    if (cJSON_IsNumber (ms) && ms->valuedouble >= 0)
      d->ms[i] = ms->valuedouble;
    else
      ok = FALSE;
  }
  cJSON_Delete (root);
  NNP_DEBUG (CAT, "profile cache %s: %s", path, ok ? "hit" : "incomplete");
  return ok;
}

static void
cache_save (NnpCostModel *cm, const NnpDeviceSpec *dev, const DevCost *d)
{
  g_autofree char *path = cache_path (cm, dev);
  g_autofree char *dir = g_path_get_dirname (path);
  cJSON *root = cJSON_CreateObject (), *nodes = cJSON_CreateObject ();
  char *text;

  cJSON_AddNumberToObject (root, "version", 1);
  cJSON_AddStringToObject (root, "digest", cm->digest);
  cJSON_AddStringToObject (root, "device", dev->device);
  cJSON_AddNumberToObject (root, "threads", dev->threads);
  cJSON_AddStringToObject (root, "shapes", cm->shapes_key);
  cJSON_AddNumberToObject (root, "memcpy_bytes_per_ms", memcpy_bytes_per_ms ());
  for (guint i = 0; i < cm->graph->nodes->len; i++)
    if (isfinite (d->ms[i]))
      cJSON_AddNumberToObject (nodes, nnp_graph_node (cm->graph, i)->name, d->ms[i]);
  cJSON_AddItemToObject (root, "nodes", nodes);
  text = cJSON_Print (root);
  if (g_mkdir_with_parents (dir, 0755) != 0 || text == NULL
      || !g_file_set_contents (path, text, -1, NULL))
    NNP_WARNING (CAT, "cannot write the profile cache %s", path);
  else
    NNP_DEBUG (CAT, "profile written to %s", path);
  cJSON_free (text);
  cJSON_Delete (root);
}

gboolean
nnp_cost_model_prepare (NnpCostModel *cm, const NnpDeviceSpec *dev, GError **error)
{
  g_autofree char *key = NULL;
  DevCost *d;
  guint n;
  gboolean can_cache;

  g_return_val_if_fail (cm != NULL && dev != NULL, FALSE);
  if (!nnp_device_available (dev->device)) {
    g_set_error (error, NNP_ERROR, NNP_ERROR_DEVICE, "device '%s' is not available",
                 dev->device ? dev->device : "(null)");
    return FALSE;
  }
  key = dev_key (dev);
  if (g_hash_table_contains (cm->devs, key))
    return TRUE;
  n = cm->graph->nodes->len;
  d = g_new0 (DevCost, 1);
  d->ms = g_new (double, MAX (n, 1));
  for (guint i = 0; i < n; i++) {
    const NnpNode *node = nnp_graph_node (cm->graph, i);
    d->ms[i] = nnp_device_supports (dev->device, node)
        ? estimate_node_ms (cm->graph, node, dev->threads) : INFINITY;
  }
  can_cache = cm->digest != NULL && *cm->digest;
  if (cm->mode != NNP_COST_ESTIMATE && can_cache && cache_load (cm, dev, d)) {
    d->profiled = TRUE;
  } else if (cm->mode == NNP_COST_PROFILE) {
    gint64 t0 = g_get_monotonic_time ();
    int fallback = 0;
    for (guint i = 0; i < n; i++) {
      double ms;
      if (!isfinite (d->ms[i]))
        continue;
      ms = profile_node (cm->graph, (int) i, dev);
      if (ms >= 0)
        d->ms[i] = ms;
      else
        fallback++;
    }
    d->profiled = TRUE;
    NNP_DEBUG (CAT, "profiled %u nodes on %s in %.1f s (%d estimated: cannot run alone)", n,
               key, (g_get_monotonic_time () - t0) / 1e6, fallback);
    if (can_cache)
      cache_save (cm, dev, d);
  }
  g_hash_table_insert (cm->devs, g_steal_pointer (&key), d);
  return TRUE;
}

static DevCost *
get_dev (NnpCostModel *cm, const NnpDeviceSpec *dev)
{
  g_autofree char *key = dev_key (dev);
  DevCost *d = g_hash_table_lookup (cm->devs, key);

  if (d == NULL && nnp_cost_model_prepare (cm, dev, NULL))
    d = g_hash_table_lookup (cm->devs, key);
  return d;
}

double
nnp_cost_model_node_ms (NnpCostModel *cm, const NnpDeviceSpec *dev, int node)
{
  DevCost *d;

  g_return_val_if_fail (cm != NULL && dev != NULL, INFINITY);
  g_return_val_if_fail (node >= 0 && (guint) node < cm->graph->nodes->len, INFINITY);
  d = get_dev (cm, dev);
  return d ? d->ms[node] : INFINITY;
}

const char *
nnp_cost_model_source (NnpCostModel *cm, const NnpDeviceSpec *dev)
{
  DevCost *d;

  g_return_val_if_fail (cm != NULL && dev != NULL, NULL);
  d = get_dev (cm, dev);
  return d && d->profiled ? "profile" : "estimate";
}

double
nnp_cost_model_transfer_ms (NnpCostModel *cm, const NnpDeviceSpec *src, const NnpDeviceSpec *dst,
                            int n_tensors, double bytes)
{
  g_return_val_if_fail (cm != NULL, 0.0);
  (void) src;
  (void) dst;   /* only cpu -> cpu for now */
  if (n_tensors <= 0)
    return 0.0;
  return XFER_BUFFER_MS + XFER_TENSOR_MS * n_tensors + bytes / memcpy_bytes_per_ms ();
}

void
nnp_cost_model_xfer_params (NnpCostModel *cm, const NnpDeviceSpec *src, const NnpDeviceSpec *dst,
                            double *overhead_ms, double *per_tensor_ms, double *ms_per_byte)
{
  (void) cm;
  (void) src;
  (void) dst;
  *overhead_ms = XFER_BUFFER_MS;
  *per_tensor_ms = XFER_TENSOR_MS;
  *ms_per_byte = 1.0 / memcpy_bytes_per_ms ();
}
