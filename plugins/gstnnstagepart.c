/* GStreamer nnpipe plugin: nnstage
 *
 * This library is free software; you can redistribute it and/or
 * modify it under the terms of the GNU Library General Public
 * License as published by the Free Software Foundation; either
 * version 2.1 of the License, or (at your option) any later version.
 */

/* nnstage: which part of the model the element runs (the whole model,
 * stage k of a plan, or a set of nodes) and at which shapes: caps <->
 * model inputs and outputs, shape inference and its cache, the upstream
 * query for model input shapes, and the plan stage's NnpStage. */

#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "gstnnstagepart.h"

#include <string.h>

#define GST_CAT_DEFAULT gst_nn_stage_debug

gboolean
gst_nn_stage_spec_is_opencl (const gchar * spec)
{
  return spec != NULL && g_ascii_strncasecmp (spec, "opencl", 6) == 0
      && (spec[6] == '\0' || spec[6] == ':');
}

/* A copy of plan that the partitioner can resolve when the plan names an
 * OpenCL device this machine cannot open: nnp_plan_resolve() refuses
 * those, but nnstage's own device logic reports them (the error naming the
 * device) or, with fallback=true, runs the stage on the CPU with a warning.
 * They are resolved as "cpu": node sets and boundaries do not depend on
 * the device.  Available OpenCL devices are resolved as they are (the
 * partitioner checks their op support). */
static NnpPlan *
plan_copy_for_resolve (const NnpPlan * plan)
{
  NnpPlan *copy = nnp_plan_copy (plan);

  for (gint k = 0; copy && k < copy->n_stages; k++) {
    NnpPlanStage *st = &copy->stages[k];

    if (st->device && !nnp_device_available (st->device)
        && gst_nn_stage_spec_is_opencl (st->device)) {
      g_free (st->device);
      st->device = g_strdup ("cpu");
    }
  }
  return copy;
}

/* ------------------------------------------------------------------------ */
/* Shape inference: caps <-> model inputs and outputs */

/* The model's real inputs (graph inputs without a constant), in order. */
static guint
model_inputs (NnpGraph * graph, const NnpValue ** inputs)
{
  guint n = 0;

  for (guint i = 0; i < graph->inputs->len; i++) {
    const NnpValue *v =
        nnp_graph_value (graph, g_array_index (graph->inputs, int, i));

    if (v == NULL || v->constant != NULL)
      continue;
    if (n < GST_NN_TENSORS_MAX)
      inputs[n] = v;
    n++;
  }
  return n;
}

/* "float32 1x3x?x? (dimensions=?:?:3:1)" for a graph value. */
static gchar *
describe_value (const NnpValue * v)
{
  gchar *onnx = nnp_shape_to_string (&v->shape);
  gchar *caps = gst_nn_dims_to_string (&v->shape);
  gchar *ret;

  if (v->shape.rank < 0)
    ret = g_strdup_printf ("%s of any shape", nnp_dtype_name (v->dtype));
  else
    ret = g_strdup_printf ("%d dims %s %s (dimensions=%s)", v->shape.rank,
        nnp_dtype_name (v->dtype), onnx, caps);
  g_free (onnx);
  g_free (caps);
  return ret;
}

/* Match caps tensors to the model's inputs (in order) and fill shapes[]. */
static gboolean
match_inputs (const gchar * model_name, NnpGraph * graph,
    const GstNnTensorsInfo * info, NnpInputShape * shapes, GError ** error)
{
  const NnpValue *inputs[GST_NN_TENSORS_MAX];
  guint n = model_inputs (graph, inputs);

  if (n != info->n_tensors) {
    GString *names = g_string_new (NULL);

    for (guint i = 0; i < MIN (n, GST_NN_TENSORS_MAX); i++)
      g_string_append_printf (names, "%s'%s'", i ? ", " : "", inputs[i]->name);
    g_set_error (error, NNP_ERROR, NNP_ERROR_INVALID,
        "model %s: expects %u input tensors (%s), got num_tensors=%u",
        model_name, n, names->str, info->n_tensors);
    g_string_free (names, TRUE);
    return FALSE;
  }

  for (guint i = 0; i < n; i++) {
    const NnpValue *v = inputs[i];
    const GstNnTensorInfo *t = &info->tensors[i];
    NnpShape shape;
    gboolean ok = TRUE;

    if (v->dtype != NNP_DTYPE_UNDEFINED && v->dtype != t->dtype)
      ok = FALSE;
    if (ok && v->shape.rank >= 0) {
      if (!gst_nn_shape_fit_rank (&t->shape, v->shape.rank, &shape)) {
        ok = FALSE;
      } else {
        for (gint d = 0; d < v->shape.rank; d++)
          if (v->shape.dims[d] >= 0 && v->shape.dims[d] != shape.dims[d])
            ok = FALSE;
      }
    } else {
      shape = t->shape;
    }

    if (!ok) {
      gchar *want = describe_value (v);
      gchar *got = gst_nn_dims_to_string (&t->shape);

      g_set_error (error, NNP_ERROR, NNP_ERROR_INVALID,
          "model %s: input '%s' expects %s, got dimensions=%s types=%s",
          model_name, v->name, want, got, nnp_dtype_name (t->dtype));
      g_free (want);
      g_free (got);
      return FALSE;
    }
    shapes[i].name = v->name;
    shapes[i].shape = shape;
  }
  return TRUE;
}

/* Output tensors of a specialised graph. */
static gboolean
outputs_info (const gchar * model_name, NnpGraph * graph,
    GstNnTensorsInfo * out, GError ** error)
{
  gst_nn_tensors_info_init (out);
  if (graph->outputs->len < 1 || graph->outputs->len > GST_NN_TENSORS_MAX) {
    g_set_error (error, NNP_ERROR, NNP_ERROR_UNSUPPORTED,
        "model %s: has %u outputs, other/tensors carries 1 to %d", model_name,
        graph->outputs->len, GST_NN_TENSORS_MAX);
    return FALSE;
  }
  out->n_tensors = graph->outputs->len;
  for (guint i = 0; i < out->n_tensors; i++) {
    const NnpValue *v =
        nnp_graph_value (graph, g_array_index (graph->outputs, int, i));

    if (!nnp_shape_is_static (&v->shape) || nnp_dtype_size (v->dtype) == 0) {
      g_set_error (error, NNP_ERROR, NNP_ERROR_INVALID,
          "model %s: output '%s' has no static shape and type after "
          "shape inference", model_name, v->name);
      return FALSE;
    }
    for (gint d = 0; d < v->shape.rank; d++) {
      if (v->shape.dims[d] <= 0) {
        gchar *s = nnp_shape_to_string (&v->shape);

        g_set_error (error, NNP_ERROR, NNP_ERROR_UNSUPPORTED,
            "model %s: output '%s' has an empty shape %s", model_name,
            v->name, s);
        g_free (s);
        return FALSE;
      }
    }
    out->tensors[i].dtype = v->dtype;
    out->tensors[i].shape = v->shape;
  }
  return TRUE;
}

/* ------------------------------------------------------------------------ */
/* A part of the model: stage k of a plan, or a set of nodes.
 *
 * A part's input caps describe intermediate tensors, which do not say what
 * the model's input sizes are.  The stage learns them from, in order: the
 * caps themselves when they fit the model's inputs, the stage upstream (a
 * custom query every nnstage answers with the model input shapes it
 * specialised for), the plan's shapes, the model's static declared shapes,
 * and the shapes it last used.  The first candidate whose specialised graph
 * gives the stage inputs the caps describe wins. */

#define SHAPES_QUERY_NAME "nnp-model-input-shapes"
#define MAX_RECENT_KEYS 4
#define MAX_CACHED_GRAPHS 8

/* "1x3x48x160;1x4": the shapes of the model's inputs, in model order. */
static gchar *
shapes_key (const NnpInputShape * shapes, guint n)
{
  GString *s = g_string_new (NULL);

  for (guint i = 0; i < n; i++) {
    gchar *d = nnp_shape_to_string (&shapes[i].shape);

    g_string_append_printf (s, "%s%s", i ? ";" : "", d);
    g_free (d);
  }
  return g_string_free (s, FALSE);
}

/* Parse a key into shapes of the model's inputs (names point into
 * model_graph). */
static gboolean
shapes_from_key (NnpGraph * model_graph, const gchar * key,
    NnpInputShape * shapes, guint * n_out)
{
  const NnpValue *inputs[GST_NN_TENSORS_MAX];
  guint n = model_inputs (model_graph, inputs);
  gchar **parts;
  gboolean ok = TRUE;

  if (n > GST_NN_TENSORS_MAX)
    return FALSE;
  parts = g_strsplit (key, ";", -1);
  if (g_strv_length (parts) != n)
    ok = FALSE;
  for (guint i = 0; ok && i < n; i++) {
    NnpShape shape = { 0 };

    if (g_strcmp0 (parts[i], "scalar") != 0) {
      gchar **dims = g_strsplit (parts[i], "x", -1);
      guint rank = g_strv_length (dims);

      if (rank < 1 || rank > NNP_MAX_RANK)
        ok = FALSE;
      for (guint d = 0; ok && d < rank; d++) {
        gchar *end = NULL;
        gint64 v = g_ascii_strtoll (dims[d], &end, 10);

        if (end == dims[d] || *end != '\0' || v < 0)
          ok = FALSE;
        shape.dims[d] = v;
      }
      shape.rank = (int) rank;
      g_strfreev (dims);
    }
    shapes[i].name = inputs[i]->name;
    shapes[i].shape = shape;
  }
  g_strfreev (parts);
  *n_out = n;
  return ok;
}

/* The model specialised for a shapes key (cached).  New ref or NULL.
 * Call with self->lock held. */
static NnpGraph *
graph_for_key_locked (GstNnStage * self, const gchar * key, GError ** error)
{
  NnpInputShape shapes[GST_NN_TENSORS_MAX];
  NnpGraph *graph;
  GError *err = NULL;
  guint n = 0;

  graph = g_hash_table_lookup (self->graphs, key);
  if (graph)
    return nnp_graph_ref (graph);
  if (!shapes_from_key (nnp_model_get_graph (self->model), key, shapes, &n)) {
    g_set_error (error, NNP_ERROR, NNP_ERROR_INVALID,
        "model %s: invalid input shapes \"%s\"", self->model_name, key);
    return NULL;
  }
  graph = nnp_model_specialize (self->model, shapes, (int) n,
      self->spec_flags, &err);
  if (graph == NULL) {
    g_set_error (error, NNP_ERROR, err ? err->code : NNP_ERROR_FAILED,
        "model %s: shape inference failed for input shapes %s: %s",
        self->model_name, key, err ? err->message : "unknown error");
    g_clear_error (&err);
    return NULL;
  }
  if (g_hash_table_size (self->graphs) >= MAX_CACHED_GRAPHS)
    g_hash_table_remove_all (self->graphs);
  g_hash_table_insert (self->graphs, g_strdup (key), nnp_graph_ref (graph));
  return graph;
}

/* Keep the shapes keys last specialised for (newest first): they answer
 * the upstream query of the next stage. */
static void
remember_key_locked (GstNnStage * self, const gchar * key)
{
  for (guint i = 0; i < self->recent_keys->len; i++) {
    if (g_str_equal (g_ptr_array_index (self->recent_keys, i), key)) {
      g_ptr_array_remove_index (self->recent_keys, i);
      break;
    }
  }
  g_ptr_array_insert (self->recent_keys, 0, g_strdup (key));
  if (self->recent_keys->len > MAX_RECENT_KEYS)
    g_ptr_array_set_size (self->recent_keys, MAX_RECENT_KEYS);
}

/* Node index by name, or by topological index ("12"); -1 with error. */
static gint
find_node (NnpGraph * graph, const gchar * nodes, const gchar * what,
    GError ** error)
{
  gchar *name = g_strstrip (g_strdup (what));
  NnpNode *node;
  gchar *end = NULL;
  gint64 idx;

  if (*name == '\0') {
    g_set_error (error, NNP_ERROR, NNP_ERROR_PLAN,
        "nodes \"%s\": empty node name", nodes);
    g_free (name);
    return -1;
  }
  node = nnp_graph_find_node (graph, name);
  if (node) {
    g_free (name);
    return node->index;
  }
  idx = g_ascii_strtoll (name, &end, 10);
  if (end != name && *end == '\0') {
    if (idx < 0 || idx >= (gint64) graph->nodes->len) {
      g_set_error (error, NNP_ERROR, NNP_ERROR_PLAN,
          "nodes \"%s\": node index %" G_GINT64_FORMAT " out of range (the "
          "specialised graph has %u nodes)", nodes, idx, graph->nodes->len);
      g_free (name);
      return -1;
    }
    g_free (name);
    return (gint) idx;
  }
  g_set_error (error, NNP_ERROR, NNP_ERROR_PLAN,
      "nodes \"%s\": unknown node '%s' (not in the specialised graph)", nodes,
      name);
  g_free (name);
  return -1;
}

/* Mark the nodes of "a,b,c" or "first..last" in sel[]. */
static gboolean
select_nodes (NnpGraph * graph, const gchar * nodes, gboolean * sel,
    GError ** error)
{
  const gchar *dots = strstr (nodes, "..");

  if (dots) {
    gchar *a = g_strndup (nodes, dots - nodes);
    gint first = find_node (graph, nodes, a, error), last = -1;

    g_free (a);
    if (first < 0)
      return FALSE;
    last = find_node (graph, nodes, dots + 2, error);
    if (last < 0)
      return FALSE;
    if (first > last) {
      g_set_error (error, NNP_ERROR, NNP_ERROR_PLAN,
          "nodes \"%s\": '%s' (node %d) comes after '%s' (node %d) in "
          "topological order", nodes, nnp_graph_node (graph, first)->name,
          first, nnp_graph_node (graph, last)->name, last);
      return FALSE;
    }
    for (gint i = first; i <= last; i++)
      sel[i] = TRUE;
  } else {
    gchar **names = g_strsplit (nodes, ",", -1);

    for (guint i = 0; names[i] != NULL; i++) {
      gint idx = find_node (graph, nodes, names[i], error);

      if (idx < 0) {
        g_strfreev (names);
        return FALSE;
      }
      sel[idx] = TRUE;
    }
    g_strfreev (names);
  }
  return TRUE;
}

/* A plan for a hand-made part: [nodes before it], the part, [the rest].
 * "Before" are the nodes that precede the part's first node in
 * topological order and the part's ancestors; adjacent parts given as
 * ranges therefore agree on what crosses between them.  Stage index of the
 * part in *stage_out. */
static NnpPlan *
nodes_plan_locked (GstNnStage * self, NnpGraph * graph, const gchar * key,
    gint * stage_out, GError ** error)
{
  guint n = graph->nodes->len;
  gboolean *sel = g_new0 (gboolean, MAX (n, 1));
  guint8 *down = g_new0 (guint8, MAX (n, 1));   /* fed by the part */
  guint8 *up = g_new0 (guint8, MAX (n, 1));     /* feeds the part */
  GPtrArray *before = g_ptr_array_new (), *mine = g_ptr_array_new (),
      *after = g_ptr_array_new ();
  NnpInputShape shapes[GST_NN_TENSORS_MAX];
  NnpPlan *plan = NULL;
  NnpPlanStage *st;
  guint n_shapes = 0;
  gint first = -1;

  if (!select_nodes (graph, self->nodes, sel, error))
    goto out;

  for (guint i = 0; i < n; i++) {
    const NnpNode *node = nnp_graph_node (graph, (int) i);

    if (sel[i]) {
      if (first < 0)
        first = (gint) i;
      continue;
    }
    for (gint k = 0; k < node->n_inputs; k++) {
      const NnpValue *v = nnp_node_input (graph, node, k);

      if (v && v->producer >= 0 && (sel[v->producer] || down[v->producer]))
        down[i] = 1;
    }
  }
  for (gint i = (gint) n - 1; i >= 0; i--) {
    const NnpNode *node = nnp_graph_node (graph, i);

    if (sel[i])
      continue;
    for (gint k = 0; k < node->n_outputs; k++) {
      const NnpValue *v = nnp_node_output (graph, node, k);

      for (gint c = 0; v && c < v->n_consumers; c++)
        if (sel[v->consumers[c]] || up[v->consumers[c]])
          up[i] = 1;
    }
    if (up[i] && down[i]) {
      g_set_error (error, NNP_ERROR, NNP_ERROR_PLAN,
          "nodes \"%s\": not convex: node '%s' (%s) is outside the stage but "
          "both reads from it and feeds it", self->nodes, node->name,
          node->op_type);
      goto out;
    }
  }

  for (guint i = 0; i < n; i++) {
    const NnpNode *node = nnp_graph_node (graph, (int) i);

    if (sel[i])
      g_ptr_array_add (mine, node->name);
    else if ((gint) i < first || up[i])
      g_ptr_array_add (before, node->name);
    else
      g_ptr_array_add (after, node->name);
  }

  plan = nnp_plan_new (self->model_path, nnp_model_get_digest (self->model));
  plan->no_fusion = (self->spec_flags & NNP_SPECIALIZE_NO_FUSION) != 0;
  if (!shapes_from_key (nnp_model_get_graph (self->model), key, shapes,
          &n_shapes)) {
    g_set_error (error, NNP_ERROR, NNP_ERROR_INVALID,
        "model %s: invalid input shapes \"%s\"", self->model_name, key);
    g_clear_pointer (&plan, nnp_plan_free);
    goto out;
  }
  for (guint i = 0; i < n_shapes; i++)
    nnp_plan_set_shape (plan, shapes[i].name, &shapes[i].shape);
  if (before->len)
    nnp_plan_add_stage (plan, "cpu", 1, (const char *const *) before->pdata,
        (int) before->len);
  /* resolved as "cpu": the stage's own device is self->dev_spec */
  st = nnp_plan_add_stage (plan, "cpu",
      MAX (self->part_threads, 1), (const char *const *) mine->pdata,
      (int) mine->len);
  if (self->part_cpus && self->part_cpus->len) {
    st->cpus = g_memdup2 (self->part_cpus->data,
        self->part_cpus->len * sizeof (gint));
    st->n_cpus = (int) self->part_cpus->len;
  }
  if (after->len)
    nnp_plan_add_stage (plan, "cpu", 1, (const char *const *) after->pdata,
        (int) after->len);
  if (!nnp_plan_resolve (plan, graph, error)) {
    g_clear_pointer (&plan, nnp_plan_free);
    goto out;
  }
  *stage_out = before->len ? 1 : 0;

out:
  g_free (sel);
  g_free (down);
  g_free (up);
  g_ptr_array_unref (before);
  g_ptr_array_unref (mine);
  g_ptr_array_unref (after);
  return plan;
}

/* The part's plan resolved on graph.  New plan or NULL. */
static NnpPlan *
part_plan_locked (GstNnStage * self, NnpGraph * graph, const gchar * key,
    gint * stage_out, GError ** error)
{
  NnpPlan *plan;

  if (self->plan == NULL)
    return nodes_plan_locked (self, graph, key, stage_out, error);

  plan = plan_copy_for_resolve (self->plan);
  if (!nnp_plan_resolve (plan, graph, error)) {
    nnp_plan_free (plan);
    return NULL;
  }
  *stage_out = self->part_stage;
  return plan;
}

/* Whether caps tensors are the stage's inputs; else why not (new string). */
static gboolean
part_inputs_match (NnpGraph * graph, const NnpPlanStage * st,
    const GstNnTensorsInfo * info, gchar ** why)
{
  GString *want = g_string_new (NULL);
  gboolean ok = (guint) st->n_inputs == info->n_tensors;

  for (gint i = 0; i < st->n_inputs; i++) {
    const NnpValue *v = nnp_graph_find_value (graph, st->inputs[i]);
    gchar *s;

    if (v == NULL) {
      ok = FALSE;
      continue;
    }
    s = nnp_shape_to_string (&v->shape);
    g_string_append_printf (want, "%s'%s' %s %s", i ? ", " : "", v->name,
        nnp_dtype_name (v->dtype), s);
    g_free (s);
    if (ok && (guint) i < info->n_tensors) {
      const GstNnTensorInfo *t = &info->tensors[i];
      NnpShape shape;

      if (t->dtype != v->dtype
          || !gst_nn_shape_fit_rank (&t->shape, v->shape.rank, &shape)
          || !nnp_shape_equal (&shape, &v->shape))
        ok = FALSE;
    }
  }
  if (!ok)
    *why = g_strdup_printf ("the stage's %d inputs are %s", st->n_inputs,
        want->str);
  g_string_free (want, TRUE);
  return ok;
}

/* Add key to the candidates unless there. */
static void
add_candidate (GPtrArray * keys, GPtrArray * sources, gchar * key,
    const gchar * source)
{
  for (guint i = 0; i < keys->len; i++) {
    if (g_str_equal (g_ptr_array_index (keys, i), key)) {
      g_free (key);
      return;
    }
  }
  g_ptr_array_add (keys, key);
  g_ptr_array_add (sources, (gpointer) source);
}

/* Specialise for a part (see above).  Call with self->lock held. */
static NnpGraph *
specialize_part_locked (GstNnStage * self, const GstNnTensorsInfo * info,
    const gchar * const *upstream, NnpPlan ** plan_out, gint * stage_out,
    GError ** error)
{
  NnpGraph *model_graph = nnp_model_get_graph (self->model);
  const NnpValue *inputs[GST_NN_TENSORS_MAX];
  NnpInputShape shapes[GST_NN_TENSORS_MAX];
  GPtrArray *keys = g_ptr_array_new_with_free_func (g_free);
  GPtrArray *sources = g_ptr_array_new ();
  GString *why = g_string_new (NULL);
  NnpGraph *ret = NULL;
  guint n = model_inputs (model_graph, inputs);
  gboolean all_static = n <= GST_NN_TENSORS_MAX;

  if (match_inputs (self->model_name, model_graph, info, shapes, NULL))
    add_candidate (keys, sources, shapes_key (shapes, info->n_tensors),
        "the caps");
  for (guint i = 0; upstream && upstream[i]; i++)
    add_candidate (keys, sources, g_strdup (upstream[i]), "upstream");
  if (self->plan && n <= GST_NN_TENSORS_MAX) {
    gboolean have_all = TRUE;

    for (guint i = 0; i < n && have_all; i++) {
      have_all = FALSE;
      for (gint j = 0; j < self->plan->n_shapes; j++) {
        if (g_strcmp0 (self->plan->shape_names[j], inputs[i]->name) == 0) {
          shapes[i].name = inputs[i]->name;
          shapes[i].shape = self->plan->shapes[j];
          have_all = TRUE;
        }
      }
    }
    if (have_all)
      add_candidate (keys, sources, shapes_key (shapes, n), "the plan");
  }
  for (guint i = 0; i < n && all_static; i++) {
    all_static = nnp_shape_is_static (&inputs[i]->shape);
    shapes[i].name = inputs[i]->name;
    shapes[i].shape = inputs[i]->shape;
  }
  if (all_static)
    add_candidate (keys, sources, shapes_key (shapes, n), "the model");
  for (guint i = 0; i < self->recent_keys->len; i++)
    add_candidate (keys, sources,
        g_strdup (g_ptr_array_index (self->recent_keys, i)), "last caps");

  for (guint c = 0; c < keys->len && ret == NULL; c++) {
    const gchar *key = g_ptr_array_index (keys, c);
    GError *err = NULL;
    NnpGraph *graph = graph_for_key_locked (self, key, &err);
    NnpPlan *plan = NULL;
    gint stage = 0;
    gchar *reason = NULL;

    if (graph)
      plan = part_plan_locked (self, graph, key, &stage, &err);
    if (plan && part_inputs_match (graph, &plan->stages[stage], info,
            &reason)) {
      ret = graph;
      *plan_out = plan;
      *stage_out = stage;
      remember_key_locked (self, key);
      GST_DEBUG_OBJECT (self, "%s: model input shapes %s (from %s)",
          self->part_name, key, (const gchar *) g_ptr_array_index (sources,
              c));
      break;
    }
    g_string_append_printf (why, "%sat model input shapes %s (from %s): %s",
        why->len ? "; " : "", key,
        (const gchar *) g_ptr_array_index (sources, c),
        err ? err->message : reason);
    g_clear_error (&err);
    g_free (reason);
    g_clear_pointer (&plan, nnp_plan_free);
    g_clear_pointer (&graph, nnp_graph_unref);
  }

  if (ret == NULL) {
    gchar *got = gst_nn_tensors_info_to_string (info);

    if (keys->len == 0)
      g_set_error (error, NNP_ERROR, NNP_ERROR_PLAN,
          "model %s, %s: cannot tell the model's input shapes for input %s "
          "(the caps are not the model's inputs, no stage upstream answered, "
          "and the model's inputs are not static): use a plan with shapes",
          self->model_name, self->part_name, got);
    else
      g_set_error (error, NNP_ERROR, NNP_ERROR_PLAN,
          "model %s, %s: input %s does not fit the stage: %s",
          self->model_name, self->part_name, got, why->str);
    g_free (got);
  }
  g_string_free (why, TRUE);
  g_ptr_array_unref (keys);
  g_ptr_array_unref (sources);
  return ret;
}

/* Specialise the model for these inputs (cached: one entry).  Returns a new
 * graph reference or NULL with error; for a part also the resolved plan (a
 * new copy in *plan_out when plan_out is not NULL) and the stage index.
 * Call with self->lock held. */
static NnpGraph *
specialize_locked (GstNnStage * self, const GstNnTensorsInfo * info,
    const gchar * const *upstream, NnpPlan ** plan_out, gint * stage_out,
    GError ** error)
{
  NnpInputShape shapes[GST_NN_TENSORS_MAX];
  NnpGraph *graph = NULL;
  NnpPlan *plan = NULL;
  gint stage = 0;
  GError *err = NULL;

  if (self->model == NULL) {
    g_set_error (error, NNP_ERROR, NNP_ERROR_FAILED, "no model loaded");
    return NULL;
  }

  if (self->spec_valid && gst_nn_tensors_info_is_equal (&self->spec_in, info)) {
    if (self->spec_graph) {
      if (plan_out && self->spec_plan)
        *plan_out = nnp_plan_copy (self->spec_plan);
      if (stage_out)
        *stage_out = self->spec_stage;
      return nnp_graph_ref (self->spec_graph);
    }
    g_propagate_error (error, g_error_copy (self->spec_error));
    return NULL;
  }

  if (self->part) {
    graph = specialize_part_locked (self, info, upstream, &plan, &stage, &err);
  } else {
    /* cheap checks first, not cached: upstream may probe several candidates */
    if (!match_inputs (self->model_name, nnp_model_get_graph (self->model),
            info, shapes, error))
      return NULL;

    graph = nnp_model_specialize (self->model, shapes, (int) info->n_tensors,
        self->spec_flags, &err);
    if (graph == NULL && err != NULL) {
      /* name the model and what it got */
      gchar *got = gst_nn_tensors_info_to_string (info);
      gchar *msg = g_strdup_printf ("model %s: shape inference failed for "
          "dimensions=%s: %s", self->model_name, got, err->message);

      g_free (err->message);
      err->message = msg;
      g_free (got);
    }
    if (graph) {
      gchar *key = shapes_key (shapes, info->n_tensors);

      remember_key_locked (self, key);
      g_free (key);
    }
  }
  if (graph == NULL && err == NULL)
    g_set_error (&err, NNP_ERROR, NNP_ERROR_FAILED,
        "model %s: shape inference failed", self->model_name);

  g_clear_pointer (&self->spec_graph, nnp_graph_unref);
  g_clear_pointer (&self->spec_plan, nnp_plan_free);
  g_clear_error (&self->spec_error);
  self->spec_in = *info;
  self->spec_valid = TRUE;
  if (graph) {
    self->spec_graph = nnp_graph_ref (graph);
    self->spec_plan = plan;
    self->spec_stage = stage;
    if (plan_out && plan)
      *plan_out = nnp_plan_copy (plan);
    if (stage_out)
      *stage_out = stage;
    return graph;
  }
  self->spec_error = g_error_copy (err);
  g_propagate_error (error, err);
  return NULL;
}

/* Output tensors of stage k of a resolved plan. */
static gboolean
part_outputs_info (const gchar * model_name, NnpGraph * graph,
    const NnpPlan * plan, gint k, GstNnTensorsInfo * out, GError ** error)
{
  const NnpPlanStage *st = &plan->stages[k];

  gst_nn_tensors_info_init (out);
  if (st->n_outputs < 1 || st->n_outputs > GST_NN_TENSORS_MAX) {
    g_set_error (error, NNP_ERROR, NNP_ERROR_UNSUPPORTED,
        "model %s: stage %d has %d outputs, other/tensors carries 1 to %d",
        model_name, k, st->n_outputs, GST_NN_TENSORS_MAX);
    return FALSE;
  }
  out->n_tensors = (guint) st->n_outputs;
  for (gint i = 0; i < st->n_outputs; i++) {
    const NnpValue *v = nnp_graph_find_value (graph, st->outputs[i]);

    if (v == NULL || !nnp_shape_is_static (&v->shape)
        || nnp_dtype_size (v->dtype) == 0) {
      g_set_error (error, NNP_ERROR, NNP_ERROR_PLAN,
          "model %s: stage %d output '%s' has no static shape and type",
          model_name, k, st->outputs[i]);
      return FALSE;
    }
    out->tensors[i].dtype = v->dtype;
    out->tensors[i].shape = v->shape;
  }
  return TRUE;
}

/* Send the upstream query for model input shapes (keys, newest first). */
static gchar **
query_upstream_keys (GstNnStage * self, const gchar * digest)
{
  GstStructure *s = gst_structure_new (SHAPES_QUERY_NAME,
      "digest", G_TYPE_STRING, digest, NULL);
  GstQuery *q = gst_query_new_custom (GST_QUERY_CUSTOM, s);
  gchar **ret = NULL;

  if (gst_pad_peer_query (GST_BASE_TRANSFORM_SINK_PAD (self), q)) {
    const gchar *keys = gst_structure_get_string (gst_query_get_structure (q),
        "shapes");

    if (keys && *keys)
      ret = g_strsplit (keys, "|", -1);
  }
  gst_query_unref (q);
  return ret;
}

/* Answer the query when we run the same model and know our shapes. */
static gboolean
answer_shapes_query (GstNnStage * self, GstQuery * query)
{
  const GstStructure *s = gst_query_get_structure (query);
  gboolean ret = FALSE;

  g_mutex_lock (&self->lock);
  if (self->model && self->recent_keys->len > 0
      && g_strcmp0 (gst_structure_get_string (s, "digest"),
          nnp_model_get_digest (self->model)) == 0) {
    GString *keys = g_string_new (NULL);

    for (guint i = 0; i < self->recent_keys->len; i++)
      g_string_append_printf (keys, "%s%s", i ? "|" : "",
          (const gchar *) g_ptr_array_index (self->recent_keys, i));
    gst_structure_set (gst_query_writable_structure (query), "shapes",
        G_TYPE_STRING, keys->str, NULL);
    g_string_free (keys, TRUE);
    ret = TRUE;
  }
  g_mutex_unlock (&self->lock);
  return ret;
}

gboolean
gst_nn_stage_handle_shapes_query (GstNnStage * self, GstQuery * query)
{
  return gst_query_get_structure (query)
      && gst_structure_has_name (gst_query_get_structure (query),
      SHAPES_QUERY_NAME) && answer_shapes_query (self, query);
}

/* Output info for input info (NULL graph_out: not wanted; plan_out: the
 * resolved plan of a part, a new copy, NULL for a whole model). */
gboolean
gst_nn_stage_infer (GstNnStage * self, const GstNnTensorsInfo * in,
    GstNnTensorsInfo * out, NnpGraph ** graph_out, NnpPlan ** plan_out,
    gint * stage_out, GError ** error)
{
  NnpGraph *graph;
  NnpPlan *plan = NULL;
  gchar **upstream = NULL;
  gint stage = 0;
  gboolean ok;

  g_mutex_lock (&self->lock);
  if (self->part && self->model
      && !(self->spec_valid && gst_nn_tensors_info_is_equal (&self->spec_in,
              in))) {
    gchar *digest = g_strdup (nnp_model_get_digest (self->model));

    g_mutex_unlock (&self->lock);
    upstream = query_upstream_keys (self, digest);
    g_free (digest);
    g_mutex_lock (&self->lock);
  }
  graph = specialize_locked (self, in, (const gchar * const *) upstream,
      &plan, &stage, error);
  if (graph && plan)
    ok = part_outputs_info (self->model_name, graph, plan, stage, out, error);
  else
    ok = graph != NULL && outputs_info (self->model_name, graph, out, error);
  g_mutex_unlock (&self->lock);
  g_strfreev (upstream);

  if (ok) {
    out->fps_n = in->fps_n;
    out->fps_d = in->fps_d;
  }
  if (ok && graph_out)
    *graph_out = graph;
  else if (graph)
    nnp_graph_unref (graph);
  if (ok && plan_out)
    *plan_out = plan;
  else if (plan)
    nnp_plan_free (plan);
  if (stage_out)
    *stage_out = stage;
  return ok;
}

/* Caps describing the model's inputs (dims when all are static);
 * framerate: the value to set, or NULL for any. */
GstCaps *
gst_nn_stage_graph_input_caps (NnpGraph * graph, const GValue * framerate)
{
  const NnpValue *inputs[GST_NN_TENSORS_MAX];
  GstCaps *caps = gst_caps_new_empty ();
  GString *types, *dims;
  gboolean known_types = TRUE, known_dims = TRUE;
  GstStructure *s;
  guint n;

  n = model_inputs (graph, inputs);
  if (n < 1 || n > GST_NN_TENSORS_MAX)
    return caps;

  types = g_string_new (NULL);
  dims = g_string_new (NULL);
  for (guint i = 0; i < n; i++) {
    gchar *d = gst_nn_dims_to_string (&inputs[i]->shape);

    if (inputs[i]->dtype == NNP_DTYPE_UNDEFINED)
      known_types = FALSE;
    if (!nnp_shape_is_static (&inputs[i]->shape))
      known_dims = FALSE;
    g_string_append_printf (types, "%s%s", i ? "," : "",
        nnp_dtype_name (inputs[i]->dtype));
    g_string_append_printf (dims, "%s%s", i ? "," : "", d);
    g_free (d);
  }

  s = gst_structure_new (GST_NN_TENSORS_MEDIA_TYPE,
      "format", G_TYPE_STRING, "static", "num_tensors", G_TYPE_INT, (gint) n,
      NULL);
  if (known_types)
    gst_structure_set (s, "types", G_TYPE_STRING, types->str, NULL);
  if (known_types && known_dims)
    gst_structure_set (s, "dimensions", G_TYPE_STRING, dims->str, NULL);
  if (framerate)
    gst_structure_set_value (s, "framerate", framerate);
  else
    gst_structure_set (s, "framerate", GST_TYPE_FRACTION_RANGE, 0, 1,
        G_MAXINT, 1, NULL);
  gst_caps_append_structure (caps, s);

  /* NNStreamer's single-tensor form */
  if (n == 1) {
    s = gst_structure_new_empty (GST_NN_TENSOR_MEDIA_TYPE);
    if (known_types)
      gst_structure_set (s, "type", G_TYPE_STRING, types->str, NULL);
    if (known_types && known_dims)
      gst_structure_set (s, "dimension", G_TYPE_STRING, dims->str, NULL);
    if (framerate)
      gst_structure_set_value (s, "framerate", framerate);
    else
      gst_structure_set (s, "framerate", GST_TYPE_FRACTION_RANGE, 0, 1,
          G_MAXINT, 1, NULL);
    gst_caps_append_structure (caps, s);
  }
  g_string_free (types, TRUE);
  g_string_free (dims, TRUE);
  return caps;
}

GstCaps *
gst_nn_stage_model_sink_caps (NnpModel * model)
{
  g_return_val_if_fail (model != NULL, NULL);
  return gst_nn_stage_graph_input_caps (nnp_model_get_graph (model), NULL);
}

gboolean
gst_nn_stage_match_model_inputs (NnpModel * model,
    const GstNnTensorsInfo * info, NnpInputShape * shapes, guint * n_shapes,
    GError ** error)
{
  gchar *name;
  gboolean ok;

  g_return_val_if_fail (model != NULL, FALSE);
  name = g_path_get_basename (nnp_model_get_name (model));
  ok = match_inputs (name, nnp_model_get_graph (model), info, shapes, error);
  g_free (name);
  if (ok)
    *n_shapes = info->n_tensors;
  return ok;
}

/* Whether tensors fit the model's declared inputs (count, types, ranks,
 * fixed dims), without shape inference. */
gboolean
gst_nn_stage_inputs_match (GstNnStage * self, const GstNnTensorsInfo * info)
{
  NnpInputShape shapes[GST_NN_TENSORS_MAX];
  gboolean ret;

  g_mutex_lock (&self->lock);
  ret = self->model != NULL && match_inputs (self->model_name,
      nnp_model_get_graph (self->model), info, shapes, NULL);
  g_mutex_unlock (&self->lock);
  return ret;
}

/* The structures of caps except fixed tensors the model's inputs refuse
 * (count, type, rank or a fixed dim).  New caps. */
static GstCaps *
drop_refused_inputs (GstObject * obj, const gchar * model_name,
    NnpGraph * graph, GstCaps * caps)
{
  GstCaps *ret = gst_caps_new_empty ();

  for (guint i = 0; i < gst_caps_get_size (caps); i++) {
    const GstStructure *s = gst_caps_get_structure (caps, i);
    NnpInputShape shapes[GST_NN_TENSORS_MAX];
    GstNnTensorsInfo info;
    GError *err = NULL;

    if (graph && gst_nn_tensors_info_from_structure (&info, s, NULL)
        && !match_inputs (model_name, graph, &info, shapes, &err)) {
      GST_DEBUG_OBJECT (obj, "dropping %" GST_PTR_FORMAT ": %s", s,
          err->message);
      g_clear_error (&err);
      continue;
    }
    gst_caps_append_structure_full (ret, gst_structure_copy (s),
        gst_caps_features_copy (gst_caps_get_features (caps, i)));
  }
  return ret;
}

GstCaps *
gst_nn_stage_filter_model_inputs (GstNnStage * self, GstCaps * caps)
{
  GstCaps *ret;

  g_mutex_lock (&self->lock);
  ret = drop_refused_inputs (GST_OBJECT (self), self->model_name,
      self->model ? nnp_model_get_graph (self->model) : NULL, caps);
  g_mutex_unlock (&self->lock);
  return ret;
}

GstCaps *
gst_nn_stage_model_sink_caps_filtered (NnpModel * model, GstCaps * filter)
{
  GstCaps *caps, *f, *ret;
  gchar *name;

  g_return_val_if_fail (model != NULL, NULL);
  caps = gst_nn_stage_model_sink_caps (model);
  if (filter == NULL)
    return caps;
  name = g_path_get_basename (nnp_model_get_name (model));
  f = drop_refused_inputs (NULL, name, nnp_model_get_graph (model), filter);
  g_free (name);
  ret = gst_caps_intersect_full (f, caps, GST_CAPS_INTERSECT_FIRST);
  gst_caps_unref (f);
  gst_caps_unref (caps);
  if (gst_caps_is_empty (ret) && !gst_caps_is_empty (filter)) {
    /* nothing offered fits: answer with the tensor caps of the offer, so
     * that upstream sends them and the CAPS event fails with an error
     * naming what the model expects (as nnstage's transform_caps) */
    GstCaps *any = gst_caps_from_string (GST_NN_TENSORS_CAPS_TEMPLATE_ANY);

    gst_caps_unref (ret);
    ret = gst_caps_intersect_full (filter, any, GST_CAPS_INTERSECT_FIRST);
    gst_caps_unref (any);
  }
  return ret;
}

/* Stage k of a resolved plan on a device (the plan's own device may be
 * an unavailable one resolved as "cpu", see plan_copy_for_resolve()). */
NnpStage *
gst_nn_stage_plan_stage_new (const NnpPlan * plan, gint k, NnpGraph * graph,
    const gchar * device, GError ** error)
{
  const NnpPlanStage *st = &plan->stages[k];
  gint *nodes = g_new0 (gint, MAX (st->n_nodes, 1));
  gint *in = g_new0 (gint, MAX (st->n_inputs, 1));
  gint *out = g_new0 (gint, MAX (st->n_outputs, 1));
  NnpStageOptions opts = { 0 };
  NnpStage *stage = NULL;

  for (gint i = 0; i < st->n_nodes; i++) {
    NnpNode *node = nnp_graph_find_node (graph, st->nodes[i]);

    if (node == NULL) {
      g_set_error (error, NNP_ERROR, NNP_ERROR_PLAN, "stage %d: unknown node "
          "'%s'", k, st->nodes[i]);
      goto out;
    }
    nodes[i] = node->index;
  }
  for (gint i = 0; i < st->n_inputs + st->n_outputs; i++) {
    gboolean is_in = i < st->n_inputs;
    const gchar *name = is_in ? st->inputs[i] : st->outputs[i - st->n_inputs];
    const NnpValue *v = nnp_graph_find_value (graph, name);

    if (v == NULL) {
      g_set_error (error, NNP_ERROR, NNP_ERROR_PLAN, "stage %d: unknown value "
          "'%s'", k, name);
      goto out;
    }
    if (is_in)
      in[i] = v->id;
    else
      out[i - st->n_inputs] = v->id;
  }
  opts.device = device;
  opts.threads = st->threads;
  opts.cpus = st->cpus;
  opts.n_cpus = st->n_cpus;
  opts.inputs = in;
  opts.n_inputs = st->n_inputs;
  opts.outputs = out;
  opts.n_outputs = st->n_outputs;
  stage = nnp_stage_new (graph, nodes, st->n_nodes, &opts, error);
out:
  g_free (nodes);
  g_free (in);
  g_free (out);
  return stage;
}

/* Check a part at the plan's shapes (or the model's static ones) so that a
 * bad plan or node list fails at start.  TRUE when there is nothing to
 * check yet.  Call with self->lock held. */
gboolean
gst_nn_stage_check_part_locked (GstNnStage * self, GError ** error)
{
  NnpGraph *model_graph = nnp_model_get_graph (self->model);
  const NnpValue *inputs[GST_NN_TENSORS_MAX];
  NnpInputShape shapes[GST_NN_TENSORS_MAX];
  guint n = model_inputs (model_graph, inputs);
  gboolean have_all = n <= GST_NN_TENSORS_MAX;
  NnpGraph *graph;
  NnpPlan *plan;
  gchar *key;
  gint k = 0;

  for (guint i = 0; i < n && have_all; i++) {
    shapes[i].name = inputs[i]->name;
    shapes[i].shape = inputs[i]->shape;
    have_all = FALSE;
    for (gint j = 0; self->plan && j < self->plan->n_shapes; j++) {
      if (g_strcmp0 (self->plan->shape_names[j], inputs[i]->name) == 0) {
        shapes[i].shape = self->plan->shapes[j];
        have_all = TRUE;
      }
    }
    if (!have_all)
      have_all = nnp_shape_is_static (&inputs[i]->shape);
  }
  if (!have_all)
    return TRUE;

  key = shapes_key (shapes, n);
  graph = graph_for_key_locked (self, key, error);
  plan = graph ? part_plan_locked (self, graph, key, &k, error) : NULL;
  if (plan) {
    const NnpPlanStage *st = &plan->stages[k];

    if (self->plan == NULL)
      self->part_first = k == 0;
    GST_INFO_OBJECT (self, "%s at model input shapes %s: %d nodes ('%s' .. "
        "'%s'), %d inputs, %d outputs", self->part_name, key, st->n_nodes,
        st->nodes[0], st->nodes[st->n_nodes - 1], st->n_inputs, st->n_outputs);
  }
  g_free (key);
  g_clear_pointer (&graph, nnp_graph_unref);
  if (plan == NULL)
    return FALSE;
  nnp_plan_free (plan);
  return TRUE;
}
