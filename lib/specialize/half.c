/* libnnpipe: the 16-bit float pass (float16, bfloat16 computed in float32).
 *
 * Run by nnp_graph_specialize() on its copy before shape inference, so that
 * every op works on a float16 or bfloat16 graph without a 16-bit kernel of
 * its own, the way ONNX Runtime's CPU provider inserts casts around ops that
 * lack a float16 kernel:
 *
 *   - 16-bit constants (initializers, Constant / ConstantOfShape values)
 *     become float32 constants, converted once per model: the converted
 *     tensor is an entry of the derived-data cache (derived.h), shared by
 *     every specialisation, and a stable source for what is derived from it
 *     (folded and packed weights); one that is also a graph output stays
 *     16-bit and the ops reading it get a float32 copy (a Cast, folded);
 *   - a 16-bit graph input gets a Cast to float32 in front of the nodes that
 *     use it, so the element's pad still carries 16-bit tensors;
 *   - a Cast to a 16-bit type stays (it rounds, as the model says) and a
 *     Cast to float32 follows it for the nodes that use its output (Cast
 *     nodes read the 16-bit value itself);
 *   - a graph output declared 16-bit is produced in float32 and cast back,
 *     so the element's pad carries what the model declares;
 *   - an op told by an attribute to make 16-bit floats (`dtype`) makes
 *     float32.
 * Everything between computes in float32: values are not rounded to 16 bits
 * between two ops (as ONNX Runtime's inserted casts, which it removes between
 * two converted nodes).  A 16-bit value that reaches any other op afterwards
 * is refused by that op's inference with its usual error. */
#include "graph/derived.h"
#include "graph/graph-edit.h"
#include "specialize/passes.h"
#include "tensor-private.h"

#include <nnpipe/log.h>

#include <string.h>

/* ---------------------------------------------------------------- constants */

static gpointer
to_f32_make (gpointer data)
{
  const NnpTensor *t = data;
  NnpTensor *out = nnp_tensor_new (NNP_DTYPE_FLOAT32, &t->shape, NULL);
  gsize n;

  if (out == NULL)
    return NULL;
  n = (gsize) nnp_tensor_numel (t);
  if (t->dtype == NNP_DTYPE_FLOAT16)
    nnp_f16_to_f32 (t->data, out->data, n);
  else
    nnp_bf16_to_f32 (t->data, out->data, n);
  return out;
}

/* A float32 copy of a 16-bit host tensor: the cache's entry (a new
 * reference) when `t` is a stable source, else a tensor of our own. */
static NnpTensor *
constant_to_f32 (NnpDerivedCache *cache, NnpTensor *t)
{
  NnpTensor *out;

  if (t->data == NULL && t->nbytes > 0)
    return NULL; /* a placeholder or device tensor: leave it to the op's check */
  out = nnp_derived_get (cache, "half-to-float32", &t, 1, NULL, 0, to_f32_make, t,
                         (GDestroyNotify) nnp_tensor_unref);
  if (out) {
    nnp_derived_cache_add_stable (cache, out);
    return nnp_tensor_ref (out);
  }
  return to_f32_make (t);
}

/* ---------------------------------------------------------------- helpers */

static NnpValue *
new_value (NnpGraph *graph, const char *base, NnpDType dtype, const NnpShape *shape)
{
  g_autofree char *name = g_strdup_printf ("%s/%s", base, nnp_dtype_name (dtype));
  NnpValue *v;

  for (int k = 1; nnp_graph_find_value (graph, name); k++) {
    g_free (name);
    name = g_strdup_printf ("%s/%s_%d", base, nnp_dtype_name (dtype), k);
  }
  v = nnp_graph_ensure_value (graph, name);
  v->dtype = dtype;
  v->shape = *shape;
  v->producer = -1;
  return v;
}

/* Append `Cast(from) -> to` with the given target type. */
static void
add_cast (NnpGraph *graph, NnpValue *from, NnpValue *to, NnpDType dtype)
{
  g_autofree char *name = g_strdup_printf ("%s/to_%s", from->name, nnp_dtype_name (dtype));
  NnpNode *node = nnp_graph_add_node (graph, name, "Cast", "", 1, &from->id, 1, &to->id);
  NnpAttr attr = { 0 };

  attr.name = g_strdup ("to");
  attr.type = NNP_ATTR_INT;
  attr.i = dtype;
  nnp_node_take_attr (node, &attr);
}

static gboolean
is_cast (const NnpNode *node)
{
  return node->op == NNP_OP_CAST;
}

static gboolean
is_cast_to_half (const NnpNode *node)
{
  return is_cast (node) && nnp_dtype_is_half ((NnpDType) nnp_node_attr_int (node, "to", 0));
}

/* Does a non-Cast node among the first n_nodes read value `id`? */
static gboolean
read_by_ops (const NnpGraph *graph, guint n_nodes, int id)
{
  for (guint i = 0; i < n_nodes; i++) {
    const NnpNode *node = nnp_graph_node (graph, i);
    for (int k = 0; !is_cast (node) && k < node->n_inputs; k++)
      if (node->inputs[k] == id)
        return TRUE;
  }
  return FALSE;
}

/* A 16-bit value read by ops: they read a float32 copy made by a Cast
 * (Cast nodes go on reading the 16-bit value).  FALSE when nothing to do. */
static gboolean
widen_value (NnpGraph *graph, guint n_nodes, int id)
{
  int wide;

  if (!read_by_ops (graph, n_nodes, id))
    return FALSE;
  /* new_value may move the values array: keep ids, not pointers */
  wide = new_value (graph, nnp_graph_value (graph, id)->name, NNP_DTYPE_FLOAT32,
                    &nnp_graph_value (graph, id)->shape)
             ->id;
  for (guint i = 0; i < n_nodes; i++) {
    NnpNode *node = nnp_graph_node (graph, i);
    for (int k = 0; !is_cast (node) && k < node->n_inputs; k++)
      if (node->inputs[k] == id)
        node->inputs[k] = wide;
  }
  add_cast (graph, nnp_graph_value (graph, id), nnp_graph_value (graph, wide), NNP_DTYPE_FLOAT32);
  return TRUE;
}

/* ---------------------------------------------------------------- the pass */

int
nnp_graph_lower_half (NnpGraph *graph)
{
  NnpDerivedCache *cache = nnp_graph_get_derived (graph);
  guint n_nodes = graph->nodes->len, n_values = graph->values->len;
  int n_changed = 0;

  /* 16-bit constants and constant attributes become float32 */
  for (guint i = 0; i < n_values; i++) {
    NnpValue *v = nnp_graph_value (graph, i);
    NnpTensor *f;

    if (v->constant == NULL || !nnp_dtype_is_half (v->constant->dtype) || v->is_output)
      continue;
    if ((f = constant_to_f32 (cache, v->constant)) == NULL)
      continue;
    nnp_tensor_unref (v->constant);
    v->constant = f;
    v->dtype = NNP_DTYPE_FLOAT32;
    n_changed++;
  }
  for (guint i = 0; i < n_nodes; i++) {
    NnpNode *node = nnp_graph_node (graph, i);

    for (int a = 0; a < node->n_attrs; a++) {
      NnpAttr *attr = &node->attrs[a];
      NnpTensor *f;

      if (attr->type == NNP_ATTR_TENSOR && attr->t && nnp_dtype_is_half (attr->t->dtype)
          && (node->op == NNP_OP_CONSTANT || node->op == NNP_OP_CONSTANT_OF_SHAPE)
          && (f = constant_to_f32 (cache, attr->t)) != NULL) {
        nnp_tensor_unref (attr->t);
        attr->t = f;
        n_changed++;
      } else if (attr->type == NNP_ATTR_INT && strcmp (attr->name, "dtype") == 0
                 && nnp_dtype_is_half ((NnpDType) attr->i)) {
        attr->i = NNP_DTYPE_FLOAT32;
        n_changed++;
      }
    }
  }

  /* 16-bit graph inputs, constants that are graph outputs (kept 16-bit
   * above) and Cast outputs: float32 copies for the ops */
  for (guint i = 0; i < graph->inputs->len; i++) {
    NnpValue *v = nnp_graph_value (graph, g_array_index (graph->inputs, int, i));
    if (v->constant == NULL && nnp_dtype_is_half (v->dtype) && widen_value (graph, n_nodes, v->id))
      n_changed++;
  }
  for (guint i = 0; i < n_values; i++) {
    NnpValue *v = nnp_graph_value (graph, i);
    if (v->constant && v->is_output && nnp_dtype_is_half (v->constant->dtype)
        && widen_value (graph, n_nodes, (int) i))
      n_changed++;
  }
  for (guint i = 0; i < n_nodes; i++) {
    NnpNode *node = nnp_graph_node (graph, i);
    if (is_cast_to_half (node) && node->outputs[0] >= 0
        && widen_value (graph, n_nodes, node->outputs[0]))
      n_changed++;
  }

  /* 16-bit graph outputs that an op (now in float32) makes: cast back */
  for (guint i = 0; i < graph->outputs->len; i++) {
    int id = g_array_index (graph->outputs, int, i), wide_id;
    NnpValue *v = nnp_graph_value (graph, id);
    NnpNode *producer = NULL;

    if (!nnp_dtype_is_half (v->dtype) || v->constant || v->is_input)
      continue;
    for (guint n = 0; n < n_nodes && producer == NULL; n++) {
      NnpNode *node = nnp_graph_node (graph, n);
      for (int k = 0; k < node->n_outputs; k++)
        if (node->outputs[k] == id)
          producer = node;
    }
    if (producer == NULL || is_cast_to_half (producer))
      continue;
    wide_id = new_value (graph, v->name, NNP_DTYPE_FLOAT32, &v->shape)->id;
    v = nnp_graph_value (graph, id);
    for (int k = 0; k < producer->n_outputs; k++)
      if (producer->outputs[k] == id)
        producer->outputs[k] = wide_id;
    for (guint n = 0; n < n_nodes; n++) {
      NnpNode *node = nnp_graph_node (graph, n);
      for (int k = 0; k < node->n_inputs; k++)
        if (node->inputs[k] == id)
          node->inputs[k] = wide_id;
    }
    add_cast (graph, nnp_graph_value (graph, wide_id), v, v->dtype);
    n_changed++;
  }
  if (n_changed)
    NNP_DEBUG ("nnp-graph", "16-bit floats: %d changes, %u nodes -> %u", n_changed, n_nodes,
               graph->nodes->len);
  return n_changed;
}
