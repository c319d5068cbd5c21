/* libnnpipe: node lists, the one reader of how a part names its nodes
 * ("conv3..conv9", "a,b,c", "12..40": names or topological indices), used
 * by parts (lib/pipeline/part-nodes.c), the server's COST answer
 * (lib/remote/cost.c) and the server's check of a client's part. */
#include <nnpipe/error.h>
#include "graph/graph-edit.h"

#include <string.h>

/* At most this many unknown names are listed in one error. */
#define MAX_NAMED 8

/* Node index of one item (blanks stripped): a node name, else a topological
 * index; -1 for an unknown name (appended to unknown), -2 after an error. */
static int
item_index (const NnpGraph *graph, const char *nodes, const char *text, gboolean check_range,
            GString *unknown, int *n_unknown, GError **error)
{
  g_autofree char *name = g_strstrip (g_strdup (text));
  NnpNode *node;
  char *end = NULL;
  gint64 idx;

  if (*name == '\0') {
    g_set_error (error, NNP_ERROR, NNP_ERROR_PLAN, "nodes \"%.200s\": empty node name", nodes);
    return -2;
  }
  node = nnp_graph_find_node (graph, name);
  if (node)
    return node->index;
  idx = g_ascii_strtoll (name, &end, 10);
  if (end != name && *end == '\0') {
    if (check_range && (idx < 0 || idx >= (gint64) graph->nodes->len)) {
      g_set_error (error, NNP_ERROR, NNP_ERROR_PLAN,
                   "nodes \"%.200s\": node index %" G_GINT64_FORMAT
                   " out of range (the specialised graph has %u nodes)",
                   nodes, idx, graph->nodes->len);
      return -2;
    }
    return check_range ? (int) idx : 0;
  }
  if ((*n_unknown)++ < MAX_NAMED)
    g_string_append_printf (unknown, "%s'%.64s'", *n_unknown > 1 ? ", " : "", name);
  return -1;
}

gboolean
nnp_graph_select_nodes (const NnpGraph *graph, const char *nodes, gboolean *sel, GError **error)
{
  g_autoptr (GString) unknown = g_string_new (NULL);
  g_auto (GStrv) items = NULL;
  const char *dots;
  int n_unknown = 0, first = -1, last = -1;
  gboolean check = sel != NULL;

  g_return_val_if_fail (graph != NULL && nodes != NULL, FALSE);
  dots = strstr (nodes, "..");
  if (dots) {
    g_autofree char *a = g_strndup (nodes, dots - nodes);

    first = item_index (graph, nodes, a, check, unknown, &n_unknown, error);
    if (first == -2)
      return FALSE;
    last = item_index (graph, nodes, dots + 2, check, unknown, &n_unknown, error);
    if (last == -2)
      return FALSE;
  } else {
    items = g_strsplit (nodes, ",", -1);
    for (guint i = 0; items[i] != NULL; i++) {
      int idx = item_index (graph, nodes, items[i], check, unknown, &n_unknown, error);

      if (idx == -2)
        return FALSE;
      if (idx >= 0 && sel)
        sel[idx] = TRUE;
    }
  }
  if (n_unknown) {
    g_set_error (error, NNP_ERROR, NNP_ERROR_PLAN,
                 "nodes \"%.200s\": unknown node%s %s%s (not in the graph)", nodes,
                 n_unknown > 1 ? "s" : "", unknown->str, n_unknown > MAX_NAMED ? ", ..." : "");
    return FALSE;
  }
  if (dots && check) {
    if (first > last) {
      g_set_error (
          error, NNP_ERROR, NNP_ERROR_PLAN,
          "nodes \"%.200s\": '%s' (node %d) comes after '%s' (node %d) in topological order", nodes,
          nnp_graph_node (graph, first)->name, first, nnp_graph_node (graph, last)->name, last);
      return FALSE;
    }
    for (int i = first; i <= last; i++)
      sel[i] = TRUE;
  }
  return TRUE;
}
