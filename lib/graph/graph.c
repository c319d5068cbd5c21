/* libnnpipe: the graph IR (see include/nnpipe/graph.h). */
#include <nnpipe/graph.h>

#include "graph/derived.h"
#include "graph/graph-edit.h"

#include <stdarg.h>
#include <string.h>

/* ONNX op type of each NnpOpType (op-list.h); lib/ops/op-table.c holds the
 * rest of each op's definition. */
static const char *const op_names[] = {
#define NNP_OP(ID, id, onnx, ...) [NNP_OP_##ID] = onnx,
#include <nnpipe/op-list.h>
#undef NNP_OP
};
G_STATIC_ASSERT (G_N_ELEMENTS (op_names) == NNP_OP_COUNT);

const char *
nnp_op_name (NnpOpType op)
{
  if ((int) op < 0 || op >= NNP_OP_COUNT)
    return "Unknown";
  return op_names[op];
}

NnpOpType
nnp_op_from_onnx (const char *op_type)
{
  for (int i = 0; op_type && i < NNP_OP_COUNT; i++)
    if (strcmp (op_names[i], op_type) == 0)
      return (NnpOpType) i;
  return NNP_OP_UNKNOWN;
}

static void
attr_clear (NnpAttr *attr)
{
  g_free (attr->name);
  g_free (attr->s);
  if (attr->t)
    nnp_tensor_unref (attr->t);
  g_free (attr->floats);
  g_free (attr->ints);
  g_strfreev (attr->strings);
  if (attr->g)
    nnp_graph_unref (attr->g);
  memset (attr, 0, sizeof (*attr));
}

static void
attr_copy (NnpAttr *dst, const NnpAttr *src)
{
  *dst = *src;
  dst->name = g_strdup (src->name);
  dst->s = g_strdup (src->s);
  dst->t = src->t ? nnp_tensor_ref (src->t) : NULL;
  dst->floats = src->floats ? g_memdup2 (src->floats, sizeof (float) * MAX (src->n, 1)) : NULL;
  dst->ints = src->ints ? g_memdup2 (src->ints, sizeof (int64_t) * MAX (src->n, 1)) : NULL;
  dst->strings = g_strdupv (src->strings);
  dst->g = src->g ? nnp_graph_ref (src->g) : NULL;
}

static void
node_free (gpointer data)
{
  NnpNode *node = data;

  g_free (node->name);
  g_free (node->op_type);
  g_free (node->domain);
  g_free (node->inputs);
  g_free (node->outputs);
  for (int i = 0; i < node->n_attrs; i++)
    attr_clear (&node->attrs[i]);
  g_free (node->attrs);
  g_free (node->params);
  g_free (node);
}

static void
value_free (gpointer data)
{
  NnpValue *value = data;

  g_free (value->name);
  g_strfreev (value->dim_names);
  if (value->constant)
    nnp_tensor_unref (value->constant);
  g_free (value->consumers);
  g_free (value);
}

NnpGraph *
nnp_graph_new (const char *name, int opset)
{
  NnpGraph *graph = g_new0 (NnpGraph, 1);

  graph->name = g_strdup (name ? name : "");
  graph->opset = opset;
  graph->nodes = g_ptr_array_new_with_free_func (node_free);
  graph->values = g_ptr_array_new_with_free_func (value_free);
  graph->inputs = g_array_new (FALSE, FALSE, sizeof (int));
  graph->outputs = g_array_new (FALSE, FALSE, sizeof (int));
  graph->ref_count = 1;
  graph->by_name = g_hash_table_new (g_str_hash, g_str_equal);
  graph->node_by_name = g_hash_table_new (g_str_hash, g_str_equal);
  return graph;
}

void
nnp_graph_tail_free (NnpGraphTail *tail)
{
  if (tail == NULL)
    return;
  nnp_graph_unref (tail->source);
  g_strfreev (tail->nodes);
  g_free (tail->first);
  g_free (tail->why);
  if (tail->consts)
    g_hash_table_unref (tail->consts);
  g_free (tail);
}

NnpGraph *
nnp_graph_ref (NnpGraph *graph)
{
  g_return_val_if_fail (graph != NULL, NULL);
  g_atomic_int_inc (&graph->ref_count);
  return graph;
}

void
nnp_graph_unref (NnpGraph *graph)
{
  if (graph == NULL || !g_atomic_int_dec_and_test (&graph->ref_count))
    return;
  g_hash_table_destroy (graph->by_name);
  g_hash_table_destroy (graph->node_by_name);
  g_ptr_array_unref (graph->nodes);
  g_ptr_array_unref (graph->values);
  g_array_unref (graph->inputs);
  g_array_unref (graph->outputs);
  nnp_derived_cache_unref (graph->derived);
  nnp_graph_tail_free (graph->tail);
  g_free (graph->name);
  g_free (graph);
}

NnpGraph *
nnp_graph_copy (const NnpGraph *graph)
{
  NnpGraph *copy = nnp_graph_new (graph->name, graph->opset);

  copy->derived = nnp_derived_cache_ref (nnp_graph_get_derived (graph));
  if (graph->tail) {
    const NnpGraphTail *t = graph->tail;
    NnpGraphTail *c = g_new0 (NnpGraphTail, 1);

    c->source = nnp_graph_ref (t->source);
    c->nodes = g_strdupv (t->nodes);
    c->first = g_strdup (t->first);
    c->why = g_strdup (t->why);
    c->consts = t->consts ? g_hash_table_ref (t->consts) : NULL;
    copy->tail = c;
  }

  for (guint i = 0; i < graph->values->len; i++) {
    const NnpValue *v = g_ptr_array_index (graph->values, i);
    NnpValue *c = g_new0 (NnpValue, 1);

    *c = *v;
    c->name = g_strdup (v->name);
    c->dim_names = g_strdupv (v->dim_names);
    c->constant = v->constant ? nnp_tensor_ref (v->constant) : NULL;
    c->consumers = v->consumers ? g_memdup2 (v->consumers, sizeof (int) * v->n_consumers) : NULL;
    g_ptr_array_add (copy->values, c);
    g_hash_table_insert (copy->by_name, c->name, c);
  }
  for (guint i = 0; i < graph->nodes->len; i++) {
    const NnpNode *n = g_ptr_array_index (graph->nodes, i);
    NnpNode *c = g_new0 (NnpNode, 1);

    *c = *n;
    c->name = g_strdup (n->name);
    c->op_type = g_strdup (n->op_type);
    c->domain = g_strdup (n->domain);
    c->inputs = g_memdup2 (n->inputs, sizeof (int) * MAX (n->n_inputs, 1));
    c->outputs = g_memdup2 (n->outputs, sizeof (int) * MAX (n->n_outputs, 1));
    c->attrs = g_new0 (NnpAttr, MAX (n->n_attrs, 1));
    for (int a = 0; a < n->n_attrs; a++)
      attr_copy (&c->attrs[a], &n->attrs[a]);
    c->params = n->params ? g_memdup2 (n->params, n->params_size) : NULL;
    g_ptr_array_add (copy->nodes, c);
    g_hash_table_insert (copy->node_by_name, c->name, c);
  }
  g_array_append_vals (copy->inputs, graph->inputs->data, graph->inputs->len);
  g_array_append_vals (copy->outputs, graph->outputs->data, graph->outputs->len);
  return copy;
}

NnpValue *
nnp_graph_find_value (const NnpGraph *graph, const char *name)
{
  return g_hash_table_lookup (graph->by_name, name);
}

NnpNode *
nnp_graph_find_node (const NnpGraph *graph, const char *name)
{
  return g_hash_table_lookup (graph->node_by_name, name);
}

NnpValue *
nnp_graph_ensure_value (NnpGraph *graph, const char *name)
{
  NnpValue *v = nnp_graph_find_value (graph, name);

  if (v)
    return v;
  v = g_new0 (NnpValue, 1);
  v->name = g_strdup (name);
  v->id = graph->values->len;
  v->shape.rank = -1;
  v->producer = -1;
  g_ptr_array_add (graph->values, v);
  g_hash_table_insert (graph->by_name, v->name, v);
  return v;
}

NnpNode *
nnp_graph_add_node (NnpGraph *graph, const char *name, const char *op_type, const char *domain,
                    int n_inputs, const int *inputs, int n_outputs, const int *outputs)
{
  NnpNode *node = g_new0 (NnpNode, 1);
  char *unique;

  if (name == NULL || *name == '\0')
    unique = g_strdup_printf ("%s_%u", op_type, graph->nodes->len);
  else
    unique = g_strdup (name);
  for (int k = 1; g_hash_table_contains (graph->node_by_name, unique); k++) {
    g_free (unique);
    unique = g_strdup_printf ("%s_%d", name && *name ? name : op_type, k);
  }
  node->name = unique;
  node->op_type = g_strdup (op_type);
  node->domain = g_strdup (domain ? domain : "");
  node->op = (node->domain[0] == '\0' || strcmp (node->domain, "ai.onnx") == 0)
                 ? nnp_op_from_onnx (op_type)
                 : NNP_OP_UNKNOWN;
  node->index = graph->nodes->len;
  node->n_inputs = n_inputs;
  node->inputs = g_new (int, MAX (n_inputs, 1));
  if (n_inputs)
    memcpy (node->inputs, inputs, sizeof (int) * n_inputs);
  node->n_outputs = n_outputs;
  node->outputs = g_new (int, MAX (n_outputs, 1));
  if (n_outputs)
    memcpy (node->outputs, outputs, sizeof (int) * n_outputs);
  node->attrs = g_new0 (NnpAttr, 1);
  g_ptr_array_add (graph->nodes, node);
  g_hash_table_insert (graph->node_by_name, node->name, node);
  return node;
}

void
nnp_node_take_attr (NnpNode *node, NnpAttr *attr)
{
  node->attrs = g_renew (NnpAttr, node->attrs, node->n_attrs + 1);
  node->attrs[node->n_attrs++] = *attr;
  memset (attr, 0, sizeof (*attr));
}

NnpValue *
nnp_node_input (const NnpGraph *graph, const NnpNode *node, int k)
{
  if (k < 0 || k >= node->n_inputs)
    return NULL;
  return nnp_graph_value (graph, node->inputs[k]);
}

NnpValue *
nnp_node_output (const NnpGraph *graph, const NnpNode *node, int k)
{
  if (k < 0 || k >= node->n_outputs)
    return NULL;
  return nnp_graph_value (graph, node->outputs[k]);
}

static void
heap_push (int *heap, int *len, int x)
{
  int i = (*len)++;

  heap[i] = x;
  while (i > 0 && heap[(i - 1) / 2] > heap[i]) {
    int p = (i - 1) / 2, t = heap[p];
    heap[p] = heap[i];
    heap[i] = t;
    i = p;
  }
}

static int
heap_pop (int *heap, int *len)
{
  int top = heap[0], i = 0;

  heap[0] = heap[--(*len)];
  for (;;) {
    int l = 2 * i + 1, r = l + 1, m = i, t;
    if (l < *len && heap[l] < heap[m])
      m = l;
    if (r < *len && heap[r] < heap[m])
      m = r;
    if (m == i)
      break;
    t = heap[m];
    heap[m] = heap[i];
    heap[i] = t;
    i = m;
  }
  return top;
}

gboolean
nnp_graph_sort (NnpGraph *graph, GError **error)
{
  guint n_nodes = graph->nodes->len;
  g_autofree int *pending = g_new0 (int, MAX (n_nodes, 1));
  g_autofree int *order = g_new (int, MAX (n_nodes, 1));
  g_autofree gboolean *done = g_new0 (gboolean, MAX (n_nodes, 1));
  guint n_done = 0;

  for (guint i = 0; i < graph->values->len; i++)
    ((NnpValue *) g_ptr_array_index (graph->values, i))->producer = -1;
  for (guint i = 0; i < n_nodes; i++) {
    NnpNode *node = nnp_graph_node (graph, i);
    for (int k = 0; k < node->n_outputs; k++) {
      NnpValue *v = nnp_node_output (graph, node, k);
      if (v == NULL)
        continue;
      if (v->producer >= 0) {
        nnp_node_set_error (error, NNP_ERROR_INVALID, node,
                            "output '%s' is already produced by node '%s'", v->name,
                            nnp_graph_node (graph, v->producer)->name);
        return FALSE;
      }
      if (v->constant || v->is_input) {
        nnp_node_set_error (error, NNP_ERROR_INVALID, node,
                            "output '%s' is also a graph input or initializer", v->name);
        return FALSE;
      }
      v->producer = i;
    }
  }
  /* inputs that nothing produces */
  for (guint i = 0; i < n_nodes; i++) {
    NnpNode *node = nnp_graph_node (graph, i);
    for (int k = 0; k < node->n_inputs; k++) {
      NnpValue *v = nnp_node_input (graph, node, k);
      if (v == NULL)
        continue;
      if (v->producer < 0 && !v->constant && !v->is_input) {
        nnp_node_set_error (error, NNP_ERROR_INVALID, node,
                            "input '%s' is not produced by any node, initializer or graph input",
                            v->name);
        return FALSE;
      }
      if (v->producer >= 0)
        pending[i]++;
    }
  }
  for (guint i = 0; i < graph->outputs->len; i++) {
    NnpValue *v = nnp_graph_value (graph, g_array_index (graph->outputs, int, i));
    if (v->producer < 0 && !v->constant && !v->is_input) {
      g_set_error (error, NNP_ERROR, NNP_ERROR_INVALID,
                   "graph output '%s' is not produced by any node", v->name);
      return FALSE;
    }
  }

  /* Kahn's algorithm, always taking the lowest-index ready node (a min-heap),
   * so an already-sorted model keeps its order. */
  nnp_graph_update_uses (graph);
  {
    g_autofree int *heap = g_new (int, MAX (n_nodes, 1));
    int heap_len = 0;

    for (guint i = 0; i < n_nodes; i++)
      if (pending[i] == 0)
        heap_push (heap, &heap_len, i);
    while (heap_len > 0) {
      int i = heap_pop (heap, &heap_len);
      NnpNode *node = nnp_graph_node (graph, i);

      done[i] = TRUE;
      order[n_done++] = i;
      for (int k = 0; k < node->n_outputs; k++) {
        NnpValue *v = nnp_node_output (graph, node, k);
        if (v == NULL)
          continue;
        for (int c = 0; c < v->n_consumers; c++)
          if (--pending[v->consumers[c]] == 0)
            heap_push (heap, &heap_len, v->consumers[c]);
      }
    }
  }
  if (n_done < n_nodes) {
    for (guint i = 0; i < n_nodes; i++)
      if (!done[i]) {
        nnp_node_set_error (error, NNP_ERROR_INVALID, nnp_graph_node (graph, i),
                            "is part of a cycle");
        return FALSE;
      }
  }

  {
    g_autofree gpointer *sorted = g_new (gpointer, MAX (n_nodes, 1));
    for (guint i = 0; i < n_nodes; i++)
      sorted[i] = g_ptr_array_index (graph->nodes, order[i]);
    for (guint i = 0; i < n_nodes; i++) {
      NnpNode *node = sorted[i];
      graph->nodes->pdata[i] = node;
      node->index = i;
      for (int k = 0; k < node->n_outputs; k++) {
        NnpValue *v = nnp_node_output (graph, node, k);
        if (v)
          v->producer = i;
      }
    }
  }
  nnp_graph_update_uses (graph);
  return TRUE;
}

void
nnp_graph_update_uses (NnpGraph *graph)
{
  for (guint i = 0; i < graph->values->len; i++) {
    NnpValue *v = g_ptr_array_index (graph->values, i);
    g_clear_pointer (&v->consumers, g_free);
    v->n_consumers = 0;
  }
  for (guint i = 0; i < graph->nodes->len; i++) {
    NnpNode *node = nnp_graph_node (graph, i);
    for (int k = 0; k < node->n_inputs; k++) {
      NnpValue *v = nnp_node_input (graph, node, k);
      if (v)
        v->n_consumers++;
    }
  }
  for (guint i = 0; i < graph->values->len; i++) {
    NnpValue *v = g_ptr_array_index (graph->values, i);
    if (v->n_consumers)
      v->consumers = g_new (int, v->n_consumers);
    v->n_consumers = 0;
  }
  for (guint i = 0; i < graph->nodes->len; i++) {
    NnpNode *node = nnp_graph_node (graph, i);
    for (int k = 0; k < node->n_inputs; k++) {
      NnpValue *v = nnp_node_input (graph, node, k);
      if (v)
        v->consumers[v->n_consumers++] = i;
    }
  }
}

void
nnp_graph_remove_nodes (NnpGraph *graph, const gboolean *remove)
{
  guint n_values = graph->values->len;
  g_autofree gboolean *used = g_new0 (gboolean, MAX (n_values, 1));
  g_autofree int *remap = g_new (int, MAX (n_values, 1));
  GPtrArray *nodes = g_ptr_array_new_with_free_func (node_free);
  GPtrArray *values = g_ptr_array_new_with_free_func (value_free);

  /* keep nodes */
  for (guint i = 0; i < graph->nodes->len; i++) {
    NnpNode *node = nnp_graph_node (graph, i);
    if (remove[i]) {
      g_hash_table_remove (graph->node_by_name, node->name);
      node_free (node);
      continue;
    }
    node->index = nodes->len;
    g_ptr_array_add (nodes, node);
    for (int k = 0; k < node->n_inputs; k++)
      if (node->inputs[k] >= 0)
        used[node->inputs[k]] = TRUE;
    for (int k = 0; k < node->n_outputs; k++)
      if (node->outputs[k] >= 0)
        used[node->outputs[k]] = TRUE;
  }
  g_ptr_array_set_free_func (graph->nodes, NULL);
  g_ptr_array_unref (graph->nodes);
  graph->nodes = nodes;

  for (guint i = 0; i < graph->inputs->len; i++)
    used[g_array_index (graph->inputs, int, i)] = TRUE;
  for (guint i = 0; i < graph->outputs->len; i++)
    used[g_array_index (graph->outputs, int, i)] = TRUE;

  for (guint i = 0; i < n_values; i++) {
    NnpValue *v = g_ptr_array_index (graph->values, i);
    if (!used[i]) {
      g_hash_table_remove (graph->by_name, v->name);
      value_free (v);
      remap[i] = -1;
      continue;
    }
    remap[i] = values->len;
    v->id = values->len;
    g_ptr_array_add (values, v);
  }
  g_ptr_array_set_free_func (graph->values, NULL);
  g_ptr_array_unref (graph->values);
  graph->values = values;

  for (guint i = 0; i < graph->nodes->len; i++) {
    NnpNode *node = nnp_graph_node (graph, i);
    for (int k = 0; k < node->n_inputs; k++)
      if (node->inputs[k] >= 0)
        node->inputs[k] = remap[node->inputs[k]];
    for (int k = 0; k < node->n_outputs; k++)
      if (node->outputs[k] >= 0)
        node->outputs[k] = remap[node->outputs[k]];
  }
  for (guint i = 0; i < graph->inputs->len; i++)
    g_array_index (graph->inputs, int, i) = remap[g_array_index (graph->inputs, int, i)];
  for (guint i = 0; i < graph->outputs->len; i++)
    g_array_index (graph->outputs, int, i) = remap[g_array_index (graph->outputs, int, i)];
  for (guint i = 0; i < graph->values->len; i++)
    ((NnpValue *) g_ptr_array_index (graph->values, i))->producer = -1;
  for (guint i = 0; i < graph->nodes->len; i++) {
    NnpNode *node = nnp_graph_node (graph, i);
    for (int k = 0; k < node->n_outputs; k++)
      if (node->outputs[k] >= 0)
        nnp_graph_value (graph, node->outputs[k])->producer = i;
  }
  nnp_graph_update_uses (graph);
}

const NnpAttr *
nnp_node_get_attr (const NnpNode *node, const char *name)
{
  for (int i = 0; i < node->n_attrs; i++)
    if (strcmp (node->attrs[i].name, name) == 0)
      return &node->attrs[i];
  return NULL;
}

int64_t
nnp_node_attr_int (const NnpNode *node, const char *name, int64_t dflt)
{
  const NnpAttr *a = nnp_node_get_attr (node, name);
  return a && a->type == NNP_ATTR_INT ? a->i : dflt;
}

float
nnp_node_attr_float (const NnpNode *node, const char *name, float dflt)
{
  const NnpAttr *a = nnp_node_get_attr (node, name);
  if (a && a->type == NNP_ATTR_FLOAT)
    return a->f;
  if (a && a->type == NNP_ATTR_INT)
    return (float) a->i;
  return dflt;
}

const char *
nnp_node_attr_string (const NnpNode *node, const char *name, const char *dflt)
{
  const NnpAttr *a = nnp_node_get_attr (node, name);
  return a && a->type == NNP_ATTR_STRING && a->s ? a->s : dflt;
}

/* The list attribute `name` of that type, with its length in *n (0 when absent). */
static const NnpAttr *
attr_list (const NnpNode *node, const char *name, NnpAttrType type, int *n)
{
  const NnpAttr *a = nnp_node_get_attr (node, name);

  if (a && a->type == type) {
    *n = a->n;
    return a;
  }
  *n = 0;
  return NULL;
}

const int64_t *
nnp_node_attr_ints (const NnpNode *node, const char *name, int *n)
{
  const NnpAttr *a = attr_list (node, name, NNP_ATTR_INTS, n);
  return a ? a->ints : NULL;
}

const float *
nnp_node_attr_floats (const NnpNode *node, const char *name, int *n)
{
  const NnpAttr *a = attr_list (node, name, NNP_ATTR_FLOATS, n);
  return a ? a->floats : NULL;
}

void
nnp_node_set_error (GError **error, NnpErrorCode code, const NnpNode *node, const char *format, ...)
{
  va_list args;
  g_autofree char *msg = NULL;

  if (error == NULL)
    return;
  va_start (args, format);
  msg = g_strdup_vprintf (format, args);
  va_end (args);
  g_set_error (error, NNP_ERROR, code, "node '%s' (%s): %s", node->name, node->op_type, msg);
  /* names and attribute strings come from the model: keep the message one line */
  for (char *c = (*error)->message; *c; c++)
    if ((guchar) *c < 0x20 || *c == 0x7f)
      *c = '?';
}
