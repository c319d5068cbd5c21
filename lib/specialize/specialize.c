/* libnnpipe: specialisation of a graph for concrete input shapes.
 *
 *   copy -> set input shapes -> 16-bit floats computed in float32 (half.c)
 *   -> infer every node in topological order,
 *   folding nodes whose outputs are constants (Constant, Shape, ...) or whose
 *   inputs are all constants (run on the host backend) -> remove folded
 *   and dead nodes -> check every shape is static -> fuse (unless
 *   NNP_SPECIALIZE_NO_FUSION) and re-infer the fused nodes.
 *
 * The copy shares the source's cache of weight-derived data (derived.h):
 * fused weights here and packed weights in the CPU kernels' prepare are
 * made by the first specialisation and found by every later one. */
#include <nnpipe/model.h>
#include <nnpipe/log.h>
#include <nnpipe/specialize.h>

#include "graph/derived.h"
#include "specialize/passes.h"
#include "ops/ops.h"
#include "ops/control-params.h"
#include "backend.h"
#include "graph/graph-edit.h"
#include "specialize/specialize.h"
#include "specialize/tail.h"

#include <stdlib.h>
#include <string.h>

/* Largest total output of a node we fold by running its kernel. */
#define FOLD_MAX_BYTES ((gsize) 64 << 20)


NnpGraph *
nnp_model_specialize (NnpModel *model, const NnpInputShape *shapes, int n_shapes,
                      NnpSpecializeFlags flags, GError **error)
{
  NnpGraph *graph;

  g_return_val_if_fail (model != NULL, NULL);
  graph = nnp_model_get_graph (model);
  if (graph == NULL) {
    g_set_error (error, NNP_ERROR, NNP_ERROR_INVALID, "%s: model has no graph",
                 nnp_model_get_name (model));
    return NULL;
  }
  graph = nnp_graph_specialize (graph, shapes, n_shapes, flags, error);
  if (graph == NULL && error && *error)
    g_prefix_error (error, "%s: ", nnp_model_get_name (model));
  return graph;
}

char *
nnp_shapes_key (const NnpInputShape *shapes, int n_shapes, NnpSpecializeFlags flags)
{
  GString *s = g_string_new (NULL);

  for (int i = 0; i < n_shapes; i++) {
    g_autofree char *d = nnp_shape_to_string (&shapes[i].shape);
    g_string_append_printf (s, "%s%s=%s", i ? "," : "", shapes[i].name, d);
  }
  if (n_shapes == 0)
    g_string_append (s, "static");
  if (flags & NNP_SPECIALIZE_NO_FUSION)
    g_string_append (s, "-nofusion");
  return g_string_free (s, FALSE);
}

/* One "1x3x48x160" (or "scalar") of a key into *shape; FALSE when malformed. */
static gboolean
shape_from_text (const char *text, NnpShape *shape)
{
  g_auto (GStrv) dims = NULL;
  int rank;

  if (strcmp (text, "scalar") == 0)
    return nnp_shape_set (shape, 0, NULL);
  dims = g_strsplit (text, "x", -1);
  rank = (int) g_strv_length (dims);
  if (rank < 1 || rank > NNP_MAX_RANK)
    return FALSE;
  shape->rank = rank;
  for (int d = 0; d < rank; d++) {
    char *end = NULL;
    gint64 v = g_ascii_strtoll (dims[d], &end, 10);

    if (end == dims[d] || *end != '\0' || dims[d][0] == '-' || v < 0)
      return FALSE;
    shape->dims[d] = v;
  }
  return TRUE;
}

gboolean
nnp_shapes_from_key (const NnpGraph *graph, const char *key, NnpInputShape *shapes, int max_shapes,
                     int *n_shapes, NnpSpecializeFlags *flags, GError **error)
{
  g_autofree char *text = NULL;
  g_auto (GStrv) items = NULL;
  gsize len;
  int n = 0;

  g_return_val_if_fail (graph != NULL && key != NULL && n_shapes != NULL, FALSE);
  text = g_strdup (key);
  len = strlen (text);
  if (flags)
    *flags = NNP_SPECIALIZE_DEFAULT;
  if (len >= 9 && strcmp (text + len - 9, "-nofusion") == 0) {
    text[len - 9] = '\0';
    if (flags)
      *flags = NNP_SPECIALIZE_NO_FUSION;
  }
  if (strcmp (text, "static") != 0) {
    items = g_strsplit (text, ",", -1);
    for (; items[n]; n++) {
      char *eq = strrchr (items[n], '=');
      const NnpValue *v = NULL;

      if (eq)
        *eq = '\0';
      for (guint i = 0; eq && i < graph->inputs->len && v == NULL; i++) {
        const NnpValue *in = nnp_graph_value (graph, g_array_index (graph->inputs, int, i));
        if (!in->constant && strcmp (in->name, items[n]) == 0)
          v = in;
      }
      if (eq == NULL || v == NULL || n >= max_shapes
          || !shape_from_text (eq + 1, &shapes[n].shape)) {
        g_set_error (
            error, NNP_ERROR, NNP_ERROR_INVALID,
            "shapes key '%s': item %d is not NAME=D0xD1x... of a graph input (or more than %d items)",
            key, n, max_shapes);
        return FALSE;
      }
      shapes[n].name = v->name;
    }
  }
  *n_shapes = n;
  return TRUE;
}

static char *
input_list (const NnpGraph *graph)
{
  GString *s = g_string_new (NULL);

  for (guint i = 0; i < graph->inputs->len; i++) {
    NnpValue *v = nnp_graph_value (graph, g_array_index (graph->inputs, int, i));
    if (v->constant)
      continue;
    g_string_append_printf (s, "%s'%s'", s->len ? ", " : "", v->name);
  }
  if (s->len == 0)
    g_string_append (s, "none");
  return g_string_free (s, FALSE);
}

static const char *
dim_name (const NnpValue *v, int d)
{
  if (v->dim_names && d < (int) g_strv_length (v->dim_names) && v->dim_names[d]
      && v->dim_names[d][0])
    return v->dim_names[d];
  return NULL;
}

static gboolean
set_input_shapes (NnpGraph *graph, const NnpInputShape *shapes, int n_shapes, GError **error)
{
  for (int i = 0; i < n_shapes; i++) {
    NnpValue *v = shapes[i].name ? nnp_graph_find_value (graph, shapes[i].name) : NULL;
    const NnpShape *s = &shapes[i].shape;

    if (v == NULL || !v->is_input || v->constant) {
      g_autofree char *list = input_list (graph);
      g_set_error (error, NNP_ERROR, NNP_ERROR_INVALID, "unknown input '%s' (inputs: %s)",
                   shapes[i].name ? shapes[i].name : "(null)", list);
      return FALSE;
    }
    if (!nnp_shape_is_static (s)) {
      g_autofree char *str = nnp_shape_to_string (s);
      g_set_error (error, NNP_ERROR, NNP_ERROR_INVALID, "input '%s': shape %s is not concrete",
                   v->name, str);
      return FALSE;
    }
    if (v->shape.rank >= 0 && v->shape.rank != s->rank) {
      g_set_error (error, NNP_ERROR, NNP_ERROR_INVALID,
                   "input '%s': shape has %d dims, the model declares %d", v->name, s->rank,
                   v->shape.rank);
      return FALSE;
    }
    for (int d = 0; v->shape.rank >= 0 && d < s->rank; d++) {
      if (v->shape.dims[d] >= 0 && v->shape.dims[d] != s->dims[d]) {
        g_set_error (error, NNP_ERROR, NNP_ERROR_INVALID,
                     "input '%s': dim %d is %" G_GINT64_FORMAT
                     ", the model fixes it to %" G_GINT64_FORMAT,
                     v->name, d, s->dims[d], v->shape.dims[d]);
        return FALSE;
      }
    }
    v->shape = *s;
  }
  for (guint i = 0; i < graph->inputs->len; i++) {
    NnpValue *v = nnp_graph_value (graph, g_array_index (graph->inputs, int, i));
    if (v->constant || nnp_shape_is_static (&v->shape))
      continue;
    if (v->shape.rank < 0) {
      g_set_error (error, NNP_ERROR, NNP_ERROR_INVALID,
                   "input '%s' has no declared shape: give its shape", v->name);
      return FALSE;
    }
    for (int d = 0; d < v->shape.rank; d++) {
      if (v->shape.dims[d] < 0) {
        const char *dn = dim_name (v, d);
        g_set_error (error, NNP_ERROR, NNP_ERROR_INVALID,
                     "input '%s': dim %d%s%s%s is symbolic: give its shape", v->name, d,
                     dn ? " ('" : "", dn ? dn : "", dn ? "')" : "");
        return FALSE;
      }
    }
  }
  return TRUE;
}

/* Run a node whose inputs are all constants on the host backend
 * (lib/backend.h) and store its outputs as constants.  FALSE (error set)
 * when it cannot. */
static gboolean
fold_node (NnpGraph *graph, NnpNode *node, GError **error)
{
  const NnpBackend *host = nnp_backend_host ();
  g_autofree NnpTensor **in = g_new0 (NnpTensor *, MAX (node->n_inputs, 1));
  g_autofree NnpTensor **out = g_new0 (NnpTensor *, MAX (node->n_outputs, 1));
  gboolean ok = FALSE;

  if (host == NULL || !host->supports_node (NULL, graph, node, NULL)) {
    nnp_node_set_error (error, NNP_ERROR_UNSUPPORTED, node, "no host kernel to fold it");
    return FALSE;
  }
  for (int k = 0; k < node->n_inputs; k++) {
    NnpValue *v = nnp_node_input (graph, node, k);
    in[k] = v ? v->constant : NULL;
  }
  for (int k = 0; k < node->n_outputs; k++) {
    NnpValue *v = nnp_node_output (graph, node, k);
    if (v == NULL)
      continue;
    out[k] = nnp_tensor_new (v->dtype, &v->shape, error);
    if (out[k] == NULL)
      goto done;
  }
  if (!host->run_node (graph, node, in, out, error))
    goto done;
  for (int k = 0; k < node->n_outputs; k++) {
    NnpValue *v = nnp_node_output (graph, node, k);
    if (v == NULL)
      continue;
    if (v->constant)
      nnp_tensor_unref (v->constant);
    v->constant = g_steal_pointer (&out[k]);
  }
  ok = TRUE;

done:
  for (int k = 0; k < node->n_outputs; k++)
    if (out[k])
      nnp_tensor_unref (out[k]);
  return ok;
}

/* After infer: TRUE when the node's outputs are (now) constants. */
static gboolean
try_fold (NnpGraph *graph, NnpNode *node, gboolean *folded, GError **error)
{
  gboolean all_out = TRUE, all_in = TRUE;
  gsize bytes = 0;

  *folded = FALSE;
  for (int k = 0; k < node->n_outputs; k++) {
    NnpValue *v = nnp_node_output (graph, node, k);
    if (v == NULL)
      continue;
    if (v->constant == NULL)
      all_out = FALSE;
    bytes += (gsize) MAX (nnp_shape_numel (&v->shape), 0) * nnp_dtype_size (v->dtype);
  }
  if (all_out) {
    *folded = TRUE;
    return TRUE;
  }
  for (int k = 0; k < node->n_inputs; k++) {
    NnpValue *v = nnp_node_input (graph, node, k);
    if (v && v->constant == NULL)
      all_in = FALSE;
  }
  if (!all_in || bytes > FOLD_MAX_BYTES)
    return TRUE;
  /* constant quantised weights stay 8-bit for the quantisation pass */
  if (nnp_graph_quant_keep_dq (graph, node))
    return TRUE;
  {
    GError *err = NULL;
    if (!fold_node (graph, node, &err)) {
      /* a missing kernel only costs us the fold; anything else is a real error */
      if (err->code == NNP_ERROR_UNSUPPORTED) {
        NNP_DEBUG ("nnp-graph", "not folded: %s", err->message);
        g_error_free (err);
        return TRUE;
      }
      g_propagate_error (error, err);
      return FALSE;
    }
  }
  *folded = TRUE;
  return TRUE;
}

/* `tail` (NULL unless NNP_SPECIALIZE_DYNAMIC_TAIL): nodes whose output
 * shapes need values known only at run time, and those after them, are
 * flagged there instead of refused (tail.c); *first is the first one and
 * *why its error. */
static gboolean
infer_all (NnpGraph *graph, gboolean *folded, int *n_folded, gboolean *tail, NnpNode **first,
           GError **why, GError **error)
{
  *n_folded = 0;
  for (guint i = 0; i < graph->nodes->len; i++) {
    NnpNode *node = nnp_graph_node (graph, i);
    GError *err = NULL;

    if (tail && nnp_tail_reads_tail (graph, node, tail)) {
      tail[i] = TRUE;
      continue;
    }
    if (!nnp_op_infer (graph, node, &err)) {
      if (tail == NULL || !nnp_error_is_data_dependent (err)) {
        g_propagate_error (error, err);
        return FALSE;
      }
      NNP_DEBUG ("nnp-graph", "data-dependent tail from here: %s", err->message);
      tail[i] = TRUE;
      if (*first == NULL) {
        *first = node;
        *why = err;
      } else {
        g_error_free (err);
      }
      continue;
    }
    if (!try_fold (graph, node, &folded[i], error))
      return FALSE;
    if (folded[i]) {
      (*n_folded)++;
      NNP_DEBUG ("nnp-graph", "folded node '%s' (%s)", node->name, node->op_type);
    }
  }
  return TRUE;
}

/* Flag nodes whose outputs reach no graph output (on top of `remove`). */
static int
mark_dead (NnpGraph *graph, gboolean *remove)
{
  guint n_values = graph->values->len;
  g_autofree gboolean *needed = g_new0 (gboolean, MAX (n_values, 1));
  int n_dead = 0;

  for (guint i = 0; i < graph->outputs->len; i++)
    needed[g_array_index (graph->outputs, int, i)] = TRUE;
  for (guint i = 0; i < n_values; i++) /* also what a data-dependent tail reads */
    needed[i] = needed[i] || nnp_graph_value (graph, i)->is_output;
  for (int i = (int) graph->nodes->len - 1; i >= 0; i--) {
    NnpNode *node = nnp_graph_node (graph, i);
    gboolean live = FALSE;

    if (remove[i])
      continue;
    for (int k = 0; k < node->n_outputs; k++)
      if (node->outputs[k] >= 0 && needed[node->outputs[k]])
        live = TRUE;
    if (!live) {
      remove[i] = TRUE;
      n_dead++;
      NNP_DEBUG ("nnp-graph", "removed dead node '%s' (%s)", node->name, node->op_type);
      continue;
    }
    for (int k = 0; k < node->n_inputs; k++) {
      NnpValue *v = nnp_node_input (graph, node, k);
      if (v && v->constant == NULL)
        needed[v->id] = TRUE;
    }
  }
  return n_dead;
}

static gboolean
check_static (NnpGraph *graph, GError **error)
{
  for (guint i = 0; i < graph->values->len; i++) {
    NnpValue *v = nnp_graph_value (graph, i);
    if (nnp_tail_is_output (graph, v))
      continue;
    if (v->dtype == NNP_DTYPE_UNDEFINED || !nnp_shape_is_static (&v->shape)) {
      g_autofree char *s = nnp_shape_to_string (&v->shape);
      g_set_error (error, NNP_ERROR, NNP_ERROR_INVALID,
                   "value '%s' has no static shape after specialisation (%s %s)", v->name,
                   nnp_dtype_name (v->dtype), s);
      return FALSE;
    }
  }
  return TRUE;
}

/* If/Loop/Scan bodies, for the ops' shape inference and the CPU backend
 * (lib/ops/control-params.h). */
static NnpGraph *
subgraph_specialize (const NnpGraph *g, const char *const *names, const NnpShape *shapes, int n,
                     GError **error)
{
  g_autofree NnpInputShape *in = g_new0 (NnpInputShape, MAX (n, 1));

  for (int k = 0; k < n; k++) {
    in[k].name = names[k];
    in[k].shape = shapes[k];
  }
  return nnp_graph_specialize (g, in, n, NNP_SPECIALIZE_DEFAULT, error); /* no tail */
}

NnpGraph *
nnp_graph_specialize (const NnpGraph *graph, const NnpInputShape *shapes, int n_shapes,
                      NnpSpecializeFlags flags, GError **error)
{
  g_autoptr (NnpGraph) g = NULL;
  g_autofree gboolean *remove = NULL, *tail = NULL;
  g_autoptr (GError) why = NULL;
  NnpNode *first = NULL;
  int n_folded = 0, n_dead, n_before;

  g_return_val_if_fail (graph != NULL, NULL);
  g_return_val_if_fail (n_shapes == 0 || shapes != NULL, NULL);
  nnp_op_set_subgraph_specializer (subgraph_specialize);

  /* the source's weights are stable sources of the cache its copies share:
   * what is derived from them is computed once per model (derived.h) */
  nnp_derived_cache_add_graph (nnp_graph_get_derived (graph), graph);
  g = nnp_graph_copy (graph);
  if (!nnp_graph_sort (g, error))
    return NULL;
  if (!set_input_shapes (g, shapes, n_shapes, error))
    return NULL;
  /* float16 / bfloat16 computed in float32 (half.c): inserts Casts */
  if (nnp_graph_lower_half (g) > 0 && !nnp_graph_sort (g, error))
    return NULL;

  n_before = g->nodes->len;
  remove = g_new0 (gboolean, MAX (g->nodes->len, 1));
  if (flags & NNP_SPECIALIZE_DYNAMIC_TAIL)
    tail = g_new0 (gboolean, MAX (g->nodes->len, 1));
  if (!infer_all (g, remove, &n_folded, tail, &first, &why, error))
    return NULL;
  if (first)
    nnp_graph_cut_tail (g, graph, tail, remove, first, why);
  n_dead = mark_dead (g, remove);
  nnp_graph_remove_nodes (g, remove);
  NNP_DEBUG ("nnp-graph", "specialised '%s': %d nodes -> %u (%d folded, %d dead)", g->name,
             n_before, g->nodes->len, n_folded, n_dead);
  if (!check_static (g, error))
    return NULL;

  if (!(flags & NNP_SPECIALIZE_NO_FUSION)) {
    g_autoptr (GPtrArray) changed = g_ptr_array_new ();
    if (nnp_graph_fold_transposes (g, error) < 0) /* transpose-fold.c */
      return NULL;
    /* quantised patterns first (quant-fuse.c), then the float fusions */
    int n_fused = nnp_graph_fuse_quant (g, changed);

    n_fused += nnp_graph_fuse (g, changed);

    for (guint i = 0; i < changed->len; i++)
      if (!nnp_op_infer (g, g_ptr_array_index (changed, i), error))
        return NULL;
    NNP_DEBUG ("nnp-graph", "fusion: %d fusions, %u nodes left", n_fused, g->nodes->len);
  }
  return g_steal_pointer (&g);
}
