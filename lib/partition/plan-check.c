/* libnnpipe: a plan checked against a graph (nnp_plan_validate) and
 * completed (nnp_plan_resolve: nodes in topological order, the values
 * crossing each cut derived in canonical order). */
#include <nnpipe/plan.h>

#include "backends/device-list.h"
#include "partition/partition.h"
#include "graph/graph-edit.h"

#include <string.h>

/* ------------------------------------------------------------ boundaries */

/* Ids flagged in `flag`, canonical order (see plan.h); returns the count. */
static int
canonical_order (const NnpGraph *graph, const gboolean *flag, int *list)
{
  guint nv = graph->values->len;
  g_autofree gboolean *taken = g_new0 (gboolean, MAX (nv, 1));
  int n = 0;

  for (guint i = 0; i < graph->inputs->len; i++) {
    int id = g_array_index (graph->inputs, int, i);
    if (flag[id] && !taken[id]) {
      taken[id] = TRUE;
      list[n++] = id;
    }
  }
  for (guint i = 0; i < graph->outputs->len; i++) {
    int id = g_array_index (graph->outputs, int, i);
    if (flag[id] && !taken[id]) {
      taken[id] = TRUE;
      list[n++] = id;
    }
  }
  for (guint i = 0; i < graph->nodes->len; i++) {
    const NnpNode *node = nnp_graph_node (graph, i);
    for (int q = 0; q < node->n_outputs; q++) {
      int id = node->outputs[q];
      if (id >= 0 && flag[id] && !taken[id]) {
        taken[id] = TRUE;
        list[n++] = id;
      }
    }
  }
  return n;
}

/* Canonical ids of C_k (k = -1: graph inputs; k = n_stages - 1: graph outputs). */
static int
cut_ids (const NnpGraph *graph, const int *stage_of, int k, int *list)
{
  guint nv = graph->values->len;
  g_autofree gboolean *flag = g_new0 (gboolean, MAX (nv, 1));

  for (guint id = 0; id < nv; id++) {
    const NnpValue *v = nnp_graph_value (graph, id);
    if (k < 0)
      flag[id] = v->is_input && !v->constant;
    else
      flag[id] = nnp_split_value_crosses (graph, v, stage_of, k);
  }
  return canonical_order (graph, flag, list);
}

static char **
names_of (const NnpGraph *graph, const int *ids, int n)
{
  char **v = g_new0 (char *, n + 1);
  for (int i = 0; i < n; i++)
    v[i] = g_strdup (nnp_graph_value (graph, ids[i])->name);
  return v;
}

/* Check one boundary list against the derived ids. */
static gboolean
check_boundary (const NnpGraph *graph, int k, const char *what, char **names, const int *ids, int n,
                GError **error)
{
  guint nv = graph->values->len;
  g_autofree int *pos = g_new (int, MAX (nv, 1));
  g_autofree gboolean *seen = g_new0 (gboolean, MAX (nv, 1));

  for (guint id = 0; id < nv; id++)
    pos[id] = -1;
  for (int i = 0; i < n; i++)
    pos[ids[i]] = i;
  for (int i = 0; names[i]; i++) {
    const NnpValue *v = nnp_graph_find_value (graph, names[i]);
    if (v == NULL) {
      g_set_error (error, NNP_ERROR, NNP_ERROR_PLAN, "stage %d: unknown value '%s' in %s", k,
                   names[i], what);
      return FALSE;
    }
    if (seen[v->id]) {
      g_set_error (error, NNP_ERROR, NNP_ERROR_PLAN, "stage %d: value '%s' is listed twice in %s",
                   k, names[i], what);
      return FALSE;
    }
    seen[v->id] = TRUE;
    if (pos[v->id] < 0) {
      g_set_error (error, NNP_ERROR, NNP_ERROR_PLAN,
                   "stage %d: value '%s' in %s does not cross that boundary", k, names[i], what);
      return FALSE;
    }
  }
  for (int i = 0; i < n; i++) {
    if (!seen[ids[i]]) {
      g_set_error (error, NNP_ERROR, NNP_ERROR_PLAN, "stage %d: missing %s '%s'", k,
                   strcmp (what, "inputs") == 0 ? "input" : "output",
                   nnp_graph_value (graph, ids[i])->name);
      return FALSE;
    }
  }
  return TRUE;
}

static gboolean
strv_equal_n (char **a, char **b)
{
  int i;
  for (i = 0; a[i] && b[i]; i++)
    if (strcmp (a[i], b[i]) != 0)
      return FALSE;
  return a[i] == NULL && b[i] == NULL;
}

/* Everything nnp_plan_validate checks; *stage_of_out (n nodes) on success
 * (partition.h). */
gboolean
nnp_plan_check_stage_of (const NnpPlan *plan, const NnpGraph *graph, int **stage_of_out,
                         GError **error)
{
  int n = graph->nodes->len, ns = plan->n_stages;
  g_autofree int *stage_of = g_new (int, MAX (n, 1));
  g_autofree int *ids = g_new (int, MAX (graph->values->len, 1));

  if (ns < 1) {
    g_set_error (error, NNP_ERROR, NNP_ERROR_PLAN, "plan has no stages");
    return FALSE;
  }
  for (int i = 0; i < n; i++)
    stage_of[i] = -1;
  for (int k = 0; k < ns; k++) {
    const NnpPlanStage *s = &plan->stages[k];
    g_autoptr (GError) derr = NULL;
    if (s->device == NULL || nnp_device_open_planned (s->device, &derr) == NULL) {
      g_set_error (error, NNP_ERROR, NNP_ERROR_DEVICE, "stage %d: device '%s' is not available: %s",
                   k, s->device ? s->device : "(null)", derr ? derr->message : "no device");
      return FALSE;
    }
    if (s->threads < 1) {
      g_set_error (error, NNP_ERROR, NNP_ERROR_PLAN, "stage %d: threads must be >= 1", k);
      return FALSE;
    }
    if (s->nodes == NULL || s->nodes[0] == NULL) {
      g_set_error (error, NNP_ERROR, NNP_ERROR_PLAN, "stage %d has no nodes", k);
      return FALSE;
    }
    for (int i = 0; s->nodes[i]; i++) {
      NnpNode *node = nnp_graph_find_node (graph, s->nodes[i]);
      if (node == NULL) {
        g_set_error (error, NNP_ERROR, NNP_ERROR_PLAN, "stage %d: unknown node '%s'", k,
                     s->nodes[i]);
        return FALSE;
      }
      if (stage_of[node->index] >= 0) {
        g_set_error (error, NNP_ERROR, NNP_ERROR_PLAN,
                     "node '%s' is listed twice (stage %d and stage %d)", node->name,
                     stage_of[node->index], k);
        return FALSE;
      }
      {
        g_autofree char *why = NULL;
        if (!nnp_device_spec_supports (s->device, graph, node, &why)) {
          g_set_error (error, NNP_ERROR, NNP_ERROR_PLAN,
                       "stage %d: node '%s' (%s) is not supported on device '%s': %s", k,
                       node->name, node->op_type, s->device, why ? why : "no kernel");
          return FALSE;
        }
      }
      stage_of[node->index] = k;
    }
  }
  for (int i = 0; i < n; i++) {
    if (stage_of[i] < 0) {
      const NnpNode *node = nnp_graph_node (graph, i);
      g_set_error (error, NNP_ERROR, NNP_ERROR_PLAN, "node '%s' (%s, index %d) is in no stage",
                   node->name, node->op_type, i);
      return FALSE;
    }
  }

  /* convexity: from each stage, walk outside it; coming back = not convex */
  {
    g_autofree int *mark = g_new (int, MAX (n, 1));
    g_autofree int *from = g_new (int, MAX (n, 1));
    g_autofree int *queue = g_new (int, MAX (n, 1));
    for (int k = 0; k < ns; k++) {
      int head = 0, tail = 0;
      for (int i = 0; i < n; i++)
        mark[i] = 0;
      /* seed: nodes outside k fed by k */
      for (int i = 0; i < n; i++) {
        const NnpNode *node = nnp_graph_node (graph, i);
        if (stage_of[i] != k)
          continue;
        for (int q = 0; q < node->n_outputs; q++) {
          NnpValue *v = nnp_node_output (graph, node, q);
          for (int c = 0; v && c < v->n_consumers; c++) {
            int w = v->consumers[c];
            if (stage_of[w] != k && !mark[w]) {
              mark[w] = 1;
              from[w] = i;
              queue[tail++] = w;
            }
          }
        }
      }
      while (head < tail) {
        int u = queue[head++];
        const NnpNode *node = nnp_graph_node (graph, u);
        for (int q = 0; q < node->n_outputs; q++) {
          NnpValue *v = nnp_node_output (graph, node, q);
          for (int c = 0; v && c < v->n_consumers; c++) {
            int w = v->consumers[c];
            if (stage_of[w] == k) {
              g_set_error (
                  error, NNP_ERROR, NNP_ERROR_PLAN,
                  "stage %d is not convex: a path leaves it at node '%s', goes through node '%s' (stage %d) and comes back to node '%s'",
                  k, nnp_graph_node (graph, from[u])->name, node->name, stage_of[u],
                  nnp_graph_node (graph, w)->name);
              return FALSE;
            }
            if (!mark[w]) {
              mark[w] = 1;
              from[w] = from[u];
              queue[tail++] = w;
            }
          }
        }
      }
    }
  }

  /* order: an edge back to an earlier stage is a cycle between stages when
   * the stages also feed forward, else the stages are just out of order */
  for (int i = 0; i < n; i++) {
    const NnpNode *node = nnp_graph_node (graph, i);
    for (int q = 0; q < node->n_inputs; q++) {
      NnpValue *v = nnp_node_input (graph, node, q);
      int a, b;
      gboolean forward = FALSE;
      if (v == NULL || v->constant || v->producer < 0)
        continue;
      a = stage_of[v->producer];
      b = stage_of[i];
      if (a <= b)
        continue;
      /* does stage b reach stage a?  (stage DAG edges b -> ... -> a) */
      {
        g_autofree gboolean *reach = g_new0 (gboolean, ns);
        gboolean changed = TRUE;
        reach[b] = TRUE;
        while (changed) {
          changed = FALSE;
          for (int x = 0; x < n; x++) {
            const NnpNode *nx = nnp_graph_node (graph, x);
            for (int r = 0; r < nx->n_inputs; r++) {
              NnpValue *u = nnp_node_input (graph, nx, r);
              if (u && !u->constant && u->producer >= 0 && reach[stage_of[u->producer]]
                  && !reach[stage_of[x]]) {
                reach[stage_of[x]] = TRUE;
                changed = TRUE;
              }
            }
          }
        }
        forward = reach[a];
      }
      if (forward)
        g_set_error (
            error, NNP_ERROR, NNP_ERROR_PLAN,
            "cycle between stages %d and %d: node '%s' (stage %d) feeds node '%s' (stage %d), and stage %d also feeds stage %d",
            b, a, nnp_graph_node (graph, v->producer)->name, a, node->name, b, b, a);
      else
        g_set_error (
            error, NNP_ERROR, NNP_ERROR_PLAN,
            "stages out of order: node '%s' in stage %d reads '%s' produced by node '%s' in the later stage %d",
            node->name, b, v->name, nnp_graph_node (graph, v->producer)->name, a);
      return FALSE;
    }
  }

  /* boundaries */
  for (int k = 0; k < ns; k++) {
    const NnpPlanStage *s = &plan->stages[k];
    int m;
    if (s->inputs) {
      m = cut_ids (graph, stage_of, k - 1, ids);
      if (!check_boundary (graph, k, "inputs", s->inputs, ids, m, error))
        return FALSE;
      if (k == 0) {
        g_auto (GStrv) canon = names_of (graph, ids, m);
        if (!strv_equal_n (canon, s->inputs)) {
          g_set_error (error, NNP_ERROR, NNP_ERROR_PLAN,
                       "stage 0: inputs must be the graph inputs in graph order");
          return FALSE;
        }
      }
    }
    if (s->outputs) {
      m = cut_ids (graph, stage_of, k, ids);
      if (!check_boundary (graph, k, "outputs", s->outputs, ids, m, error))
        return FALSE;
      if (k == ns - 1) {
        g_auto (GStrv) canon = names_of (graph, ids, m);
        if (!strv_equal_n (canon, s->outputs)) {
          g_set_error (error, NNP_ERROR, NNP_ERROR_PLAN,
                       "stage %d: outputs must be the graph outputs in graph order", k);
          return FALSE;
        }
      }
    }
    if (k > 0 && s->inputs && plan->stages[k - 1].outputs
        && !strv_equal_n (s->inputs, plan->stages[k - 1].outputs)) {
      g_set_error (error, NNP_ERROR, NNP_ERROR_PLAN,
                   "stage %d: inputs are not stage %d's outputs in the same order", k, k - 1);
      return FALSE;
    }
  }
  if (stage_of_out)
    *stage_of_out = g_steal_pointer (&stage_of);
  return TRUE;
}

gboolean
nnp_plan_validate (const NnpPlan *plan, const NnpGraph *graph, GError **error)
{
  g_return_val_if_fail (plan != NULL && graph != NULL, FALSE);
  return nnp_plan_check_stage_of (plan, graph, NULL, error);
}

gboolean
nnp_plan_resolve (NnpPlan *plan, const NnpGraph *graph, GError **error)
{
  g_autofree int *stage_of = NULL;
  g_autofree int *ids = NULL;

  g_return_val_if_fail (plan != NULL && graph != NULL, FALSE);
  if (!nnp_plan_check_stage_of (plan, graph, &stage_of, error))
    return FALSE;
  ids = g_new (int, MAX (graph->values->len, 1));
  for (int k = 0; k < plan->n_stages; k++) {
    NnpPlanStage *s = &plan->stages[k];
    int m;
    /* put nodes in topological order */
    int j = 0;
    for (guint i = 0; i < graph->nodes->len; i++) {
      if (stage_of[i] == k) {
        g_free (s->nodes[j]);
        s->nodes[j++] = g_strdup (nnp_graph_node (graph, i)->name);
      }
    }
    if (s->inputs == NULL) {
      m = cut_ids (graph, stage_of, k - 1, ids);
      s->inputs = names_of (graph, ids, m);
      s->n_inputs = m;
    }
    if (s->outputs == NULL) {
      m = cut_ids (graph, stage_of, k, ids);
      s->outputs = names_of (graph, ids, m);
      s->n_outputs = m;
    }
  }
  return TRUE;
}
