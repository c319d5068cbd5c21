/* libnnpipe: the cost model of the partitioner.
 *
 * Node times per device: measured by running the node alone as a one-node
 * NnpStage with the real shapes (median of repeats, after one warm-up; on an
 * OpenCL device with device-resident inputs and outputs, so no host copy is
 * timed, and with the queue finished), or estimated (FLOPs / GFLOP/s + bytes
 * moved / bandwidth) when not profiling or when the node cannot run alone.
 * An OpenCL estimate is scaled by one measured node (the heaviest) unless
 * the mode is NNP_COST_ESTIMATE.  A node the device cannot run costs +inf
 * there, with the device's reason kept (nnp_cost_model_why()).  Profiles are
 * cached on disk as JSON, keyed by model digest, device name, threads and
 * shapes.
 *
 * Transfers (see nnp_cost_model_xfer_params()):
 *   cpu -> cpu        a small per-buffer and per-tensor queue overhead +
 *                     bytes / measured memcpy bandwidth, paid by the sender;
 *   cpu -> opencl     queue overhead (sender) + upload of every tensor
 *                     (receiver: it copies its host inputs to the device);
 *   opencl -> cpu     queue overhead + download of every tensor (sender);
 *   opencl -> same    queue hand-off only: device tensors, no copy;
 *   opencl -> other   download (sender) + upload (receiver).
 * An OpenCL first (last) stage also uploads the graph inputs (downloads the
 * graph outputs).  Copy costs are latency + bytes / bandwidth, measured once
 * per device and process (upload and download of 4 bytes and of 4 MiB). */
#include <nnpipe/plan.h>
#include <nnpipe/device.h>
#include <nnpipe/log.h>
#include <nnpipe/ops.h>

#include "backend.h"
#include "backends/device-list.h"
#include "partition/partition.h"
#include "exec/stage-private.h"

#include <cjson/cJSON.h>
#include <glib/gstdio.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define CAT "nnp-partition"

#define NODE_FALLBACK_MS 1.0 /* a backend without an estimate */
#define XFER_BUFFER_MS 0.030 /* per buffer through a queue */
#define XFER_TENSOR_MS 0.003 /* per tensor in it */
#define LINK_PROBE_BYTES (4u << 20)

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

/* Where profiles are cached: $NNP_PROFILE_DIR, else the user's cache. */
static char *
profile_dir (void)
{
  const char *dir_env = g_getenv ("NNP_PROFILE_DIR");

  return dir_env ? g_strdup (dir_env)
                 : g_build_filename (g_get_user_cache_dir (), "nnpipe", "profiles", NULL);
}

static double
memcpy_measure (void)
{
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
  g_free (a);
  g_free (b);
  return size / median (t, 5);
}

/* Bytes per millisecond of a large memcpy: measured once per machine and
 * kept beside the node profiles (memcpy.json), so that every process (the
 * CLI, the elements) plans with the same copy cost whatever the load was
 * when each started. */
static double
memcpy_bytes_per_ms (void)
{
  static gsize once = 0;
  static double bw = 0;

  if (g_once_init_enter (&once)) {
    g_autofree char *dir = profile_dir ();
    g_autofree char *path = g_build_filename (dir, "memcpy.json", NULL);
    g_autofree char *text = NULL;
    cJSON *root = NULL, *v;

    if (g_file_get_contents (path, &text, NULL, NULL))
      root = cJSON_Parse (text);
    v = root ? cJSON_GetObjectItemCaseSensitive (root, "memcpy_bytes_per_ms") : NULL;
    if (cJSON_IsNumber (v) && isfinite (v->valuedouble) && v->valuedouble > 0) {
      bw = v->valuedouble;
    } else {
      g_autofree char *out = NULL;

      bw = memcpy_measure ();
      out = g_strdup_printf ("{\n  \"version\": 1,\n  \"memcpy_bytes_per_ms\": %.1f\n}\n", bw);
      if (g_mkdir_with_parents (dir, 0755) != 0 || !g_file_set_contents (path, out, -1, NULL))
        NNP_DEBUG (CAT, "cannot write %s", path);
    }
    cJSON_Delete (root);
    NNP_DEBUG (CAT, "memcpy bandwidth %.2f GB/s", bw / 1e6);
    g_once_init_leave (&once, 1);
  }
  return bw;
}

/* ------------------------------------------------------------ the model */

typedef struct {
  double *ms; /* per node; INFINITY = unsupported */
  char **why; /* per node: why unsupported (NULL when supported) */
  int n;
  gboolean profiled; /* every supported node measured */
} DevCost;

struct _NnpCostModel {
  NnpGraph *graph;
  char *digest;
  char *shapes_key;
  NnpCostMode mode;
  GHashTable *devs;      /* dev_key -> DevCost* */
  GHashTable *net_links; /* device spec (lower case) -> NnpLink*: remote stages */
};

static void
dev_cost_free (gpointer p)
{
  DevCost *d = p;
  for (int i = 0; d->why && i < d->n; i++)
    g_free (d->why[i]);
  g_free (d->why);
  g_free (d->ms);
  g_free (d);
}

static DevCost *
dev_cost_copy (const DevCost *d)
{
  DevCost *c = g_new0 (DevCost, 1);

  c->n = d->n;
  c->ms = g_memdup2 (d->ms, sizeof (double) * MAX (d->n, 1));
  c->why = g_new0 (char *, MAX (d->n, 1));
  for (int i = 0; i < d->n; i++)
    c->why[i] = g_strdup (d->why[i]);
  c->profiled = d->profiled;
  return c;
}

NnpCostModel *
nnp_cost_model_new (NnpGraph *graph, const char *digest, const char *shapes_key, NnpCostMode mode)
{
  NnpCostModel *cm;

  g_return_val_if_fail (graph != NULL, NULL);
  cm = g_new0 (NnpCostModel, 1);
  cm->graph = nnp_graph_ref (graph);
  cm->digest = g_strdup (digest);
  cm->shapes_key = g_strdup (shapes_key ? shapes_key : "static");
  cm->mode = mode;
  cm->devs = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, dev_cost_free);
  cm->net_links = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, g_free);
  return cm;
}

void
nnp_cost_model_free (NnpCostModel *cm)
{
  if (cm == NULL)
    return;
  g_hash_table_unref (cm->devs);
  g_hash_table_unref (cm->net_links);
  nnp_graph_unref (cm->graph);
  g_free (cm->digest);
  g_free (cm->shapes_key);
  g_free (cm);
}

/* The device's name made file-safe + "-t" threads: "cpu-t2",
 * "opencl_0__NVIDIA...-t1" ("opencl" and "opencl:0" share a key when they
 * are the same device); a remote device (planned as the CPU until its
 * server's COST answer is given: nnp_cost_model_set_node_costs()) is keyed
 * by its spec, so each server has its own costs.  NULL when the device
 * cannot be opened. */
static char *
dev_key (const NnpDeviceSpec *dev)
{
  NnpDevice *device;
  char *key;

  if (nnp_device_spec_remote_address (dev->device)) {
    key = g_strdup_printf ("%s-t%d", dev->device, MAX (dev->threads, 1));
  } else {
    device = nnp_device_open_planned (dev->device, NULL);
    if (device == NULL)
      return NULL;
    key = g_strdup_printf ("%s-t%d", nnp_device_get_name (device), MAX (dev->threads, 1));
  }
  for (char *p = key; *p; p++)
    if (!g_ascii_isalnum (*p) && *p != '-' && *p != '.' && *p != '_')
      *p = '_';
  return key;
}

/* The backend's analytical time of a node on an opened device. */
static double
estimate_node_ms (NnpDevice *device, const NnpGraph *graph, const NnpNode *node,
                  const NnpDeviceSpec *dev)
{
  const NnpBackend *backend = nnp_device_get_backend_table (device, NULL);

  if (backend->estimate_node_ms == NULL)
    return NODE_FALLBACK_MS;
  return backend->estimate_node_ms (graph, node, MAX (dev->threads, 1));
}

static void
unref_tensors (NnpTensor **t, int n)
{
  for (int q = 0; q < n; q++)
    if (t && t[q])
      nnp_tensor_unref (t[q]);
  g_free (t);
}

/* Median ms of node i alone, or a negative value when it cannot run alone.
 * Inputs and outputs live in the stage device's memory (uploaded once
 * before timing), so only the kernels are timed; nnp_stage_run() returns
 * when the outputs are complete. */
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
    NNP_DEBUG (CAT, "profile: node %d on %s: %s", i, dev->device, err->message);
    return -1.0;
  }
  n_in = nnp_stage_get_n_inputs (stage);
  n_out = nnp_stage_get_n_outputs (stage);
  in = g_new0 (NnpTensor *, MAX (n_in, 1));
  out = g_new0 (NnpTensor *, MAX (n_out, 1));
  for (int q = 0; q < n_in; q++) {
    const NnpValue *v = nnp_stage_get_input (stage, q);
    g_autoptr (NnpTensor) host = nnp_tensor_new (v->dtype, &v->shape, NULL);
    if (host == NULL)
      goto out;
    nnp_tensor_fill_pattern (host, (guint32) q);
    in[q] = nnp_tensor_new_on (nnp_stage_get_device (stage), v->dtype, &v->shape, NULL);
    if (in[q] == NULL || !nnp_tensor_copy_into (in[q], host, NULL))
      goto out;
  }
  for (int q = 0; q < n_out; q++)
    if ((out[q] = nnp_stage_new_device_output (stage, q, NULL)) == NULL)
      goto out;
  /* warm-up (programs built, weights uploaded / packed) */
  t0 = g_get_monotonic_time ();
  if (!nnp_stage_run (stage, in, out, &err)) {
    NNP_DEBUG (CAT, "profile: node %d on %s: %s", i, dev->device, err->message);
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
  unref_tensors (in, n_in);
  unref_tensors (out, n_out);
  nnp_stage_free (stage);
  return result;
}

static char *
cache_path (NnpCostModel *cm, const NnpDeviceSpec *dev)
{
  g_autofree char *dir = profile_dir ();
  g_autofree char *key = dev_key (dev);
  g_autofree char *shapes = g_strdup (cm->shapes_key);
  g_autofree char *file = NULL;

  for (char *p = shapes; *p; p++)
    if (!g_ascii_isalnum (*p) && *p != '=' && *p != '-' && *p != '.' && *p != '_')
      *p = '_';
  file = g_strdup_printf ("%s-%s-%s.json", cm->digest, key ? key : "unknown", shapes);
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
  NnpDevice *device = nnp_device_open_planned (dev->device, NULL);
  cJSON *root = cJSON_CreateObject (), *nodes = cJSON_CreateObject ();
  char *text;

  cJSON_AddNumberToObject (root, "version", 1);
  cJSON_AddStringToObject (root, "digest", cm->digest);
  cJSON_AddStringToObject (root, "device", dev->device);
  if (device)
    cJSON_AddStringToObject (root, "device_name", nnp_device_get_name (device));
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

/* Scale the analytical estimates of a non-CPU device by one measurement:
 * the node with the most FLOPs, run alone. */
static void
calibrate (NnpCostModel *cm, const NnpDeviceSpec *dev, DevCost *d)
{
  int best = -1;
  double best_flops = -1, ms, factor;

  for (int i = 0; i < d->n; i++) {
    double f;
    if (!isfinite (d->ms[i]))
      continue;
    f = nnp_node_flops (cm->graph, nnp_graph_node (cm->graph, i));
    if (f > best_flops) {
      best_flops = f;
      best = i;
    }
  }
  if (best < 0 || (ms = profile_node (cm->graph, best, dev)) < 0)
    return;
  factor = CLAMP (ms / d->ms[best], 1e-3, 1e4);
  for (int i = 0; i < d->n; i++)
    if (isfinite (d->ms[i]))
      d->ms[i] *= factor;
  NNP_INFO (CAT, "%s: estimates scaled by %.3g (node %s: %.3f ms measured)", dev->device, factor,
            nnp_graph_node (cm->graph, best)->name, ms);
}

gboolean
nnp_cost_model_prepare (NnpCostModel *cm, const NnpDeviceSpec *dev, GError **error)
{
  g_autofree char *key = NULL;
  GError *err = NULL;
  NnpDevice *device;
  DevCost *d;
  guint n;
  gboolean can_cache, is_cpu;
  int n_unsupported = 0;

  g_return_val_if_fail (cm != NULL && dev != NULL, FALSE);
  key = dev_key (dev);
  if (key && g_hash_table_contains (cm->devs, key))
    return TRUE; /* prepared, or costs given (nnp_cost_model_set_node_costs) */
  if (nnp_device_spec_remote_address (dev->device)) {
    /* no answer from its server: planned as this host's CPU */
    NnpDeviceSpec cpu = { (char *) "cpu", dev->threads };
    g_autofree char *cpu_key = dev_key (&cpu);
    if (!nnp_cost_model_prepare (cm, &cpu, error))
      return FALSE;
    g_hash_table_insert (cm->devs, g_steal_pointer (&key),
                         dev_cost_copy (g_hash_table_lookup (cm->devs, cpu_key)));
    return TRUE;
  }
  device = nnp_device_open_planned (dev->device, &err);
  if (device == NULL) {
    g_set_error (error, NNP_ERROR, NNP_ERROR_DEVICE, "device '%s' is not available: %s",
                 dev->device ? dev->device : "(null)", err->message);
    g_error_free (err);
    return FALSE;
  }
  if (key == NULL)
    key = dev_key (dev);
  is_cpu = nnp_device_is_host (device);
  n = cm->graph->nodes->len;
  d = g_new0 (DevCost, 1);
  d->n = n;
  d->ms = g_new (double, MAX (n, 1));
  d->why = g_new0 (char *, MAX (n, 1));
  for (guint i = 0; i < n; i++) {
    const NnpNode *node = nnp_graph_node (cm->graph, i);
    if (nnp_device_supports_node (device, cm->graph, node, &d->why[i])) {
      d->ms[i] = estimate_node_ms (device, cm->graph, node, dev);
    } else {
      d->ms[i] = INFINITY;
      if (d->why[i] == NULL)
        d->why[i] = g_strdup ("not supported");
      n_unsupported++;
      if (is_cpu)
        NNP_INFO (CAT, "node %s (%s) cannot run on cpu: %s", node->name, node->op_type, d->why[i]);
      else
        NNP_INFO (CAT, "node %s (%s) stays on cpu: %s: %s", node->name, node->op_type, dev->device,
                  d->why[i]);
    }
  }
  if (n_unsupported)
    NNP_INFO (CAT, "%s: %d of %u nodes not supported", dev->device, n_unsupported, n);
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
    NNP_DEBUG (CAT, "profiled %u nodes on %s in %.1f s (%d estimated: cannot run alone)", n, key,
               (g_get_monotonic_time () - t0) / 1e6, fallback);
    if (can_cache)
      cache_save (cm, dev, d);
  } else if (cm->mode == NNP_COST_AUTO && !is_cpu) {
    calibrate (cm, dev, d);
  }
  g_hash_table_insert (cm->devs, g_steal_pointer (&key), d);
  return TRUE;
}

static DevCost *
get_dev (NnpCostModel *cm, const NnpDeviceSpec *dev)
{
  g_autofree char *key = dev_key (dev);
  DevCost *d;

  if (key == NULL)
    return NULL;
  d = g_hash_table_lookup (cm->devs, key);
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
nnp_cost_model_why (NnpCostModel *cm, const NnpDeviceSpec *dev, int node)
{
  DevCost *d;

  g_return_val_if_fail (cm != NULL && dev != NULL, NULL);
  g_return_val_if_fail (node >= 0 && (guint) node < cm->graph->nodes->len, NULL);
  d = get_dev (cm, dev);
  return d ? d->why[node] : "device not available";
}

const char *
nnp_cost_model_source (NnpCostModel *cm, const NnpDeviceSpec *dev)
{
  DevCost *d;

  g_return_val_if_fail (cm != NULL && dev != NULL, NULL);
  d = get_dev (cm, dev);
  return d && d->profiled ? "profile" : "estimate";
}

/* ------------------------------------------------------------ host <-> device copies */

typedef struct {
  double up_ms, up_ms_per_byte; /* latency of one upload, + per byte */
  double down_ms, down_ms_per_byte;
} Link;

static GMutex link_lock;
static GHashTable *links; /* NnpDevice* (kept open) -> Link* */

/* Median ms of 5 uploads (or downloads) of `bytes`; < 0 on failure. */
static double
time_copies (NnpDevice *device, gsize bytes, gboolean up)
{
  NnpShape shape = { 1, { (int64_t) (bytes / 4) } };
  g_autoptr (NnpTensor) host = nnp_tensor_new (NNP_DTYPE_FLOAT32, &shape, NULL);
  g_autoptr (NnpTensor) dt = nnp_tensor_new_on (device, NNP_DTYPE_FLOAT32, &shape, NULL);
  double t[5];

  if (host == NULL || dt == NULL)
    return -1.0;
  nnp_tensor_fill_pattern (host, 7);
  if (!nnp_tensor_copy_into (dt, host, NULL)) /* warm-up: first touch */
    return -1.0;
  for (int r = 0; r < 5; r++) {
    gint64 t0 = g_get_monotonic_time ();
    gboolean ok =
        up ? nnp_tensor_copy_into (dt, host, NULL) : nnp_tensor_copy_into (host, dt, NULL);
    if (!ok)
      return -1.0;
    t[r] = (g_get_monotonic_time () - t0) / 1000.0;
  }
  return median (t, 5);
}

static const Link *
link_of (NnpDevice *device)
{
  Link *l;

  g_mutex_lock (&link_lock);
  if (links == NULL)
    links = g_hash_table_new_full (g_direct_hash, g_direct_equal, NULL, g_free);
  l = g_hash_table_lookup (links, device);
  if (l == NULL) {
    double us = time_copies (device, 4, TRUE), ub = time_copies (device, LINK_PROBE_BYTES, TRUE);
    double ds = time_copies (device, 4, FALSE);
    double db = time_copies (device, LINK_PROBE_BYTES, FALSE);

    l = g_new0 (Link, 1);
    if (us < 0 || ub < 0 || ds < 0 || db < 0) {
      /* cannot measure: assume PCIe-like 10 GB/s and 20 us */
      NNP_WARNING (CAT, "%s: cannot measure copies, assuming 10 GB/s",
                   nnp_device_get_name (device));
      us = ds = 0.020;
      ub = db = us + LINK_PROBE_BYTES / 1e7;
    }
    l->up_ms = us;
    l->up_ms_per_byte = MAX (ub - us, 1e-6) / LINK_PROBE_BYTES;
    l->down_ms = ds;
    l->down_ms_per_byte = MAX (db - ds, 1e-6) / LINK_PROBE_BYTES;
    NNP_INFO (CAT, "%s: upload %.3f ms + %.2f GB/s, download %.3f ms + %.2f GB/s",
              nnp_device_get_name (device), l->up_ms, 1e-6 / l->up_ms_per_byte, l->down_ms,
              1e-6 / l->down_ms_per_byte);
    g_hash_table_insert (links, device, l);
  }
  g_mutex_unlock (&link_lock);
  return l;
}

/* The device of a spec (kept open), NULL for the CPU or when unavailable. */
static NnpDevice *
accel_of (const NnpDeviceSpec *dev)
{
  NnpDevice *d;

  d = nnp_device_open_planned (dev->device, NULL);
  return d && !nnp_device_is_host (d) ? d : NULL;
}

void
nnp_cost_model_xfer_params (NnpCostModel *cm, const NnpDeviceSpec *src, const NnpDeviceSpec *dst,
                            NnpXferCost *out, NnpXferCost *in)
{
  NnpDevice *a = accel_of (src), *b = accel_of (dst);

  /* the sender always hands a buffer to a queue */
  *out = (NnpXferCost){ XFER_BUFFER_MS, XFER_TENSOR_MS, 0.0 };
  *in = (NnpXferCost){ 0.0, 0.0, 0.0 };
  /* a remote stage's bytes cross its link (link.c) */
  nnp_link_charge (nnp_cost_model_get_link (cm, dst->device),
                   nnp_cost_model_get_link (cm, src->device), out, in);
  if (a == NULL && b == NULL) {
    out->ms_per_byte += 1.0 / memcpy_bytes_per_ms ();
    return;
  }
  if (a != NULL && a == b)
    return; /* same device: device tensors, no copy */
  if (a) {
    const Link *l = link_of (a);
    out->per_tensor_ms += l->down_ms;
    out->ms_per_byte += l->down_ms_per_byte;
  }
  if (b) {
    const Link *l = link_of (b);
    in->per_tensor_ms += l->up_ms;
    in->ms_per_byte += l->up_ms_per_byte;
  }
}

void
nnp_cost_model_graph_xfer_params (NnpCostModel *cm, const NnpDeviceSpec *dev, NnpXferCost *in,
                                  NnpXferCost *out)
{
  NnpDevice *a = accel_of (dev);
  const NnpLink *net = nnp_cost_model_get_link (cm, dev->device);

  *in = (NnpXferCost){ 0.0, 0.0, 0.0 };
  *out = (NnpXferCost){ 0.0, 0.0, 0.0 };
  if (a) {
    const Link *l = link_of (a);
    *in = (NnpXferCost){ 0.0, l->up_ms, l->up_ms_per_byte };
    *out = (NnpXferCost){ 0.0, l->down_ms, l->down_ms_per_byte };
  }
  /* a remote first stage receives the graph inputs over its link, a remote
   * last stage sends the graph outputs back over it */
  nnp_link_charge (net, net, out, in);
}

double
nnp_cost_model_transfer_ms (NnpCostModel *cm, const NnpDeviceSpec *src, const NnpDeviceSpec *dst,
                            int n_tensors, double bytes)
{
  NnpXferCost out, in;

  g_return_val_if_fail (cm != NULL && src != NULL && dst != NULL, 0.0);
  if (n_tensors <= 0)
    return 0.0;
  nnp_cost_model_xfer_params (cm, src, dst, &out, &in);
  return out.overhead_ms + out.per_tensor_ms * n_tensors + out.ms_per_byte * bytes + in.overhead_ms
         + in.per_tensor_ms * n_tensors + in.ms_per_byte * bytes;
}

/* ------------------------------------------------------------ remote devices */

void
nnp_cost_model_set_link (NnpCostModel *cm, const char *device, const NnpLink *link)
{
  g_return_if_fail (cm != NULL && device != NULL);
  if (link == NULL) {
    g_autofree char *key = g_ascii_strdown (device, -1);
    g_hash_table_remove (cm->net_links, key);
    return;
  }
  g_return_if_fail (link->bytes_per_s > 0 && link->rtt_ms >= 0);
  g_hash_table_insert (cm->net_links, g_ascii_strdown (device, -1),
                       g_memdup2 (link, sizeof (*link)));
  {
    g_autofree char *text = nnp_link_to_string (link);
    NNP_INFO (CAT, "%s: link %s", device, text);
  }
}

const NnpLink *
nnp_cost_model_get_link (NnpCostModel *cm, const char *device)
{
  g_autofree char *key = NULL;

  if (cm == NULL || device == NULL || g_hash_table_size (cm->net_links) == 0)
    return NULL;
  key = g_ascii_strdown (device, -1);
  return g_hash_table_lookup (cm->net_links, key);
}

gboolean
nnp_cost_model_set_node_costs (NnpCostModel *cm, const NnpDeviceSpec *dev, const double *ms, int n,
                               GError **error)
{
  DevCost *d;
  char *key;

  g_return_val_if_fail (cm != NULL && dev != NULL && dev->device != NULL, FALSE);
  if (n < 0 || (guint) n != cm->graph->nodes->len || (n > 0 && ms == NULL)) {
    g_set_error (error, NNP_ERROR, NNP_ERROR_PLAN,
                 "node costs of '%s': %d values for a graph of %u nodes", dev->device, n,
                 cm->graph->nodes->len);
    return FALSE;
  }
  for (int i = 0; i < n; i++)
    if (isnan (ms[i]) || ms[i] < 0) {
      g_set_error (error, NNP_ERROR, NNP_ERROR_PLAN,
                   "node costs of '%s': node %s: %g ms is not a time", dev->device,
                   nnp_graph_node (cm->graph, i)->name, ms[i]);
      return FALSE;
    }
  d = g_new0 (DevCost, 1);
  d->n = n;
  d->ms = g_memdup2 (ms, sizeof (double) * MAX (n, 1));
  d->why = g_new0 (char *, MAX (n, 1));
  for (int i = 0; i < n; i++)
    if (!isfinite (ms[i]))
      d->why[i] = g_strdup_printf ("not supported by %s", dev->device);
  d->profiled = TRUE;
  key = dev_key (dev);
  g_hash_table_replace (cm->devs, key, d);
  return TRUE;
}
