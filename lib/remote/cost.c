/* The server's answer to a COST query (include/nnpipe/remote.h): the
 * predicted time of each node of the asked-for part on the server's own
 * device, from the partitioner's cost model (profiled and cached on disk like
 * `nnpipe split --profile`, else estimated), so a client can plan a split
 * knowing what the remote side costs (the link-aware partitioner). */
#include <nnpipe/error.h>
#include <nnpipe/model.h>
#include <nnpipe/plan.h>
#include <nnpipe/remote.h>
#include <nnpipe/device.h>
#include <nnpipe/specialize.h>

#include "partition/partition.h"
#include "remote/remote-private.h"
#include "backends/device-list.h"
#include "graph/graph-edit.h"

#include <string.h>

char *
nnp_remote_shapes_text (const NnpInputShape *shapes, int n_shapes)
{
  GString *s = g_string_new (NULL);

  for (int k = 0; k < n_shapes; k++) {
    g_string_append_printf (s, "%s%s=", k ? ";" : "", shapes[k].name);
    for (int d = 0; d < shapes[k].shape.rank; d++)
      g_string_append_printf (s, "%s%" G_GINT64_FORMAT, d ? "," : "",
                              (gint64) shapes[k].shape.dims[d]);
  }
  return g_string_free (s, FALSE);
}

/* "x=1,3,640,640;y=1,4" -> shapes (names point into `parts`) */
static NnpInputShape *
parse_shapes (const char *text, char ***parts, int *n, GError **error)
{
  NnpInputShape *shapes;
  int k = 0;

  *parts = g_strsplit (text, ";", 64);
  shapes = g_new0 (NnpInputShape, g_strv_length (*parts) + 1);
  for (int i = 0; (*parts)[i] != NULL; i++) {
    char *item = g_strstrip ((*parts)[i]), *eq = strchr (item, '=');
    char **dims;
    int rank;

    if (item[0] == '\0')
      continue;
    if (eq == NULL || eq == item) {
      g_set_error (error, NNP_ERROR, NNP_ERROR_INVALID, "input shape '%s': expected NAME=D0,D1,...",
                   item);
      g_free (shapes);
      return NULL;
    }
    *eq = '\0';
    dims = g_strsplit (eq + 1, ",", -1);
    rank = (int) g_strv_length (dims);
    if (rank > NNP_MAX_RANK) {
      g_set_error (error, NNP_ERROR, NNP_ERROR_INVALID, "input shape of '%s': rank %d is over %d",
                   item, rank, NNP_MAX_RANK);
      g_strfreev (dims);
      g_free (shapes);
      return NULL;
    }
    shapes[k].name = item;
    shapes[k].shape.rank = rank;
    for (int d = 0; d < rank; d++) {
      char *end = NULL;
      gint64 v = g_ascii_strtoll (dims[d], &end, 10);
      if (end == dims[d] || *end != '\0' || v < 1 || v > (1 << 24)) {
        g_set_error (error, NNP_ERROR, NNP_ERROR_INVALID,
                     "input shape of '%s': dimension '%s' is not an integer in 1..16777216", item,
                     dims[d]);
        g_strfreev (dims);
        g_free (shapes);
        return NULL;
      }
      shapes[k].shape.dims[d] = v;
    }
    g_strfreev (dims);
    k++;
  }
  *n = k;
  return shapes;
}

/* a node by name, or by topological index */
static int
node_index (const NnpGraph *graph, const char *text, GError **error)
{
  NnpNode *node = nnp_graph_find_node (graph, text);
  char *end = NULL;
  gint64 i;

  if (node)
    return node->index;
  i = g_ascii_strtoll (text, &end, 10);
  if (end != text && *end == '\0' && i >= 0 && i < (gint64) graph->nodes->len)
    return (int) i;
  g_set_error (error, NNP_ERROR, NNP_ERROR_PLAN,
               "part: no node '%s' in the specialised graph (%u nodes)", text, graph->nodes->len);
  return -1;
}

/* sel[i] = TRUE for each node of the part */
static gboolean
select_part (const NnpRemoteCostQuery *q, const NnpGraph *graph, gboolean *sel, GError **error)
{
  guint n = graph->nodes->len;

  if (q->part_kind == NNP_REMOTE_PART_WHOLE) {
    for (guint i = 0; i < n; i++)
      sel[i] = TRUE;
  } else if (q->part_kind == NNP_REMOTE_PART_PLAN) {
    g_autoptr (NnpPlan) plan = nnp_plan_from_json (q->part, -1, error);
    if (plan == NULL)
      return FALSE;
    if (q->stage >= (guint32) plan->n_stages) {
      g_set_error (error, NNP_ERROR, NNP_ERROR_PLAN, "the plan has %d stages, no stage %u",
                   plan->n_stages, q->stage);
      return FALSE;
    }
    for (int i = 0; i < plan->stages[q->stage].n_nodes; i++) {
      int k = node_index (graph, plan->stages[q->stage].nodes[i], error);
      if (k < 0)
        return FALSE;
      sel[k] = TRUE;
    }
  } else if (!nnp_graph_select_nodes (graph, q->part, sel, error)) {
    return FALSE;
  }
  return TRUE;
}

gboolean
nnp_remote_cost_answer (const char *model_path, const char *device, const NnpRemoteCostQuery *query,
                        NnpRemoteCostReply *reply, GError **error)
{
  g_autoptr (NnpModel) model = NULL;
  NnpGraph *graph = NULL;
  NnpInputShape *shapes = NULL;
  NnpDeviceSpec *specs = NULL;
  NnpCostModel *cm = NULL;
  char **parts = NULL, *key = NULL;
  gboolean *sel = NULL, ok = FALSE;
  int n_shapes = 0, n_specs = 0, k = 0;

  memset (reply, 0, sizeof *reply);
  model = nnp_model_load (model_path, error);
  if (model == NULL)
    goto out;
  shapes = parse_shapes (query->shapes, &parts, &n_shapes, error);
  if (shapes == NULL)
    goto out;
  graph = nnp_model_specialize (model, shapes, n_shapes, NNP_SPECIALIZE_DEFAULT, error);
  if (graph == NULL)
    goto out;
  sel = g_new0 (gboolean, graph->nodes->len + 1);
  if (!select_part (query, graph, sel, error))
    goto out;
  specs = nnp_device_specs_parse (device ? device : "cpu", &n_specs, error);
  if (specs == NULL)
    goto out;
  key = nnp_shapes_key (shapes, n_shapes, FALSE);
  cm = nnp_cost_model_new (graph, nnp_model_get_digest (model), key, NNP_COST_AUTO);
  if (!nnp_cost_model_prepare (cm, &specs[0], error))
    goto out;
  reply->device = g_strdup_printf ("%s:%d", specs[0].device, specs[0].threads);
  for (guint i = 0; i < graph->nodes->len; i++)
    reply->n_nodes += sel[i] ? 1 : 0;
  reply->names = g_new0 (char *, reply->n_nodes + 1);
  reply->ms = g_new0 (double, MAX (reply->n_nodes, 1));
  for (guint i = 0; i < graph->nodes->len; i++) {
    if (!sel[i])
      continue;
    reply->names[k] = g_strdup (nnp_graph_node (graph, (int) i)->name);
    reply->ms[k++] = nnp_cost_model_node_ms (cm, &specs[0], (int) i);
  }
  ok = TRUE;
out:
  if (!ok)
    nnp_remote_cost_reply_clear (reply);
  if (cm)
    nnp_cost_model_free (cm);
  if (specs)
    nnp_device_specs_free (specs, n_specs);
  if (graph)
    nnp_graph_unref (graph);
  g_free (key);
  g_free (sel);
  g_free (shapes);
  g_strfreev (parts);
  return ok;
}

guint8 *
nnp_remote_cost_reply (const char *model_path, const char *device, const guint8 *query, gsize size,
                       gsize *reply_size, GError **error)
{
  NnpRemoteCostQuery q;
  NnpRemoteCostReply r;
  guint8 *out;
  gboolean ok;

  g_return_val_if_fail (model_path != NULL && reply_size != NULL, NULL);
  if (!nnp_remote_cost_query_parse (query, size, &q, error))
    return NULL;
  ok = nnp_remote_cost_answer (model_path, device, &q, &r, error);
  nnp_remote_cost_query_clear (&q);
  if (!ok) {
    g_prefix_error (error, "COST: ");
    return NULL;
  }
  out = nnp_remote_cost_reply_encode (&r, reply_size);
  nnp_remote_cost_reply_clear (&r);
  return out;
}
