/* libnnpipe: ONNX protobuf -> graph IR.
 *
 * Reads ModelProto, GraphProto, NodeProto, AttributeProto and ValueInfoProto
 * with the wire reader of wire.h (field numbers from onnx.proto); TensorProto
 * is read by tensor-proto.c.
 * Everything read from the file is untrusted: every count is checked against
 * the bytes that carry it before anything is allocated, so an allocation is
 * never more than 8x the bytes of the message it comes from. */
#include "onnx/loader.h"
#include "onnx/wire.h"
#include "graph/graph-edit.h"

#include <nnpipe/log.h>
#include <nnpipe/model.h>

#include <string.h>

#define LOG_CAT "nnp-onnx"

/* ModelProto */
enum { MODEL_IR_VERSION = 1, MODEL_PRODUCER_NAME = 2, MODEL_GRAPH = 7, MODEL_OPSET_IMPORT = 8 };
/* OperatorSetIdProto */
enum { OPSET_DOMAIN = 1, OPSET_VERSION = 2 };
/* GraphProto */
enum {
  GRAPH_NODE = 1,
  GRAPH_NAME = 2,
  GRAPH_INITIALIZER = 5,
  GRAPH_INPUT = 11,
  GRAPH_OUTPUT = 12,
  GRAPH_VALUE_INFO = 13,
  GRAPH_SPARSE_INITIALIZER = 15,
};
/* NodeProto */
enum {
  NODE_INPUT = 1,
  NODE_OUTPUT = 2,
  NODE_NAME = 3,
  NODE_OP_TYPE = 4,
  NODE_ATTRIBUTE = 5,
  NODE_DOMAIN = 7
};
/* AttributeProto */
enum {
  ATTR_NAME = 1,
  ATTR_F = 2,
  ATTR_I = 3,
  ATTR_S = 4,
  ATTR_T = 5,
  ATTR_G = 6,
  ATTR_FLOATS = 7,
  ATTR_INTS = 8,
  ATTR_STRINGS = 9,
  ATTR_TENSORS = 10,
  ATTR_GRAPHS = 11,
  ATTR_TYPE = 20,
  ATTR_SPARSE_TENSOR = 22,
  ATTR_SPARSE_TENSORS = 23,
};
/* AttributeProto.AttributeType beyond NnpAttrType */
enum { ONNX_ATTR_GRAPHS = 10 };
/* ValueInfoProto, TypeProto, TypeProto.Tensor, TensorShapeProto, Dimension */
enum { VI_NAME = 1, VI_TYPE = 2 };
enum { TYPE_TENSOR_TYPE = 1 };
enum { TT_ELEM_TYPE = 1, TT_SHAPE = 2 };
enum { SHAPE_DIM = 1 };
enum { DIM_VALUE = 1, DIM_PARAM = 2 };

#define OPSET_MIN 1
#define OPSET_MAX 21

void
nnp_onnx_model_info_clear (NnpOnnxModelInfo *info)
{
  g_clear_pointer (&info->producer, g_free);
}

/* ---------------------------------------------------------------------------
 * ValueInfoProto */

typedef struct {
  char *name;
  NnpDType dtype;
  NnpShape shape;          /* rank -1 when no shape is given */
  char **dim_names;        /* NULL when no dim has a dim_param */
  const char *unsupported; /* static text when the type is one we cannot hold, else NULL */
} ValueInfo;

static void
value_info_clear (ValueInfo *vi)
{
  g_free (vi->name);
  g_strfreev (vi->dim_names);
  memset (vi, 0, sizeof (*vi));
}

static gboolean
parse_shape (const NnpWireReader *parent, const NnpWireField *msg, ValueInfo *vi, GError **error)
{
  NnpWireReader r;
  NnpWireField f;
  g_autoptr (GPtrArray) names = g_ptr_array_new_with_free_func (g_free);
  gboolean any_param = FALSE, too_many = FALSE;
  int rank = 0, rc;

  nnp_wire_reader_sub (&r, parent, msg);
  while ((rc = nnp_wire_next (&r, &f, error)) > 0) {
    NnpWireReader dr;
    NnpWireField df;
    int64_t value = -1;
    char *param = NULL;

    if (f.number != SHAPE_DIM)
      continue;
    if (!nnp_wire_expect (&f, NNP_WIRE_LEN, error))
      return FALSE;
    nnp_wire_reader_sub (&dr, &r, &f);
    while ((rc = nnp_wire_next (&dr, &df, error)) > 0) {
      if (df.number == DIM_VALUE) {
        if (!nnp_wire_get_int64 (&df, &value, error))
          break;
        g_clear_pointer (&param, g_free);
      } else if (df.number == DIM_PARAM) {
        if (!nnp_wire_get_string (&df, &param, error))
          break;
        value = -1;
      }
    }
    if (rc != 0) {
      g_free (param);
      return FALSE;
    }
    if (rank >= NNP_MAX_RANK) {
      too_many = TRUE;
      g_free (param);
      continue;
    }
    vi->shape.dims[rank++] = value < 0 ? -1 : value;
    if (param && *param)
      any_param = TRUE;
    g_ptr_array_add (names, param ? param : g_strdup (""));
  }
  if (rc < 0)
    return FALSE;
  if (too_many) {
    vi->shape.rank = -1; /* more dims than nnpipe handles: leave unknown */
    return TRUE;
  }
  vi->shape.rank = rank;
  if (any_param) {
    g_ptr_array_add (names, NULL);
    vi->dim_names = (char **) g_ptr_array_steal (names, NULL);
  }
  return TRUE;
}

static gboolean
parse_value_info (const NnpWireReader *parent, const NnpWireField *msg, ValueInfo *vi,
                  GError **error)
{
  NnpWireReader r;
  NnpWireField f;
  int rc;

  memset (vi, 0, sizeof (*vi));
  vi->shape.rank = -1;
  if (!nnp_wire_expect (msg, NNP_WIRE_LEN, error))
    return FALSE;
  nnp_wire_reader_sub (&r, parent, msg);
  while ((rc = nnp_wire_next (&r, &f, error)) > 0) {
    if (f.number == VI_NAME) {
      if (!nnp_wire_get_string (&f, &vi->name, error))
        return FALSE;
    } else if (f.number == VI_TYPE) {
      NnpWireReader tr;
      NnpWireField tf;

      if (!nnp_wire_expect (&f, NNP_WIRE_LEN, error))
        return FALSE;
      nnp_wire_reader_sub (&tr, &r, &f);
      while ((rc = nnp_wire_next (&tr, &tf, error)) > 0) {
        NnpWireReader ttr;
        NnpWireField ttf;

        if (tf.number != TYPE_TENSOR_TYPE) {
          vi->unsupported = "is not a tensor (sequence, map or optional types are not supported)";
          continue;
        }
        if (!nnp_wire_expect (&tf, NNP_WIRE_LEN, error))
          return FALSE;
        nnp_wire_reader_sub (&ttr, &tr, &tf);
        while ((rc = nnp_wire_next (&ttr, &ttf, error)) > 0) {
          if (ttf.number == TT_ELEM_TYPE) {
            int64_t et;
            if (!nnp_wire_get_int64 (&ttf, &et, error))
              return FALSE;
            vi->dtype = et > 0 && et <= NNP_DTYPE_BFLOAT16 ? (NnpDType) et : NNP_DTYPE_UNDEFINED;
            if (vi->dtype == NNP_DTYPE_UNDEFINED || nnp_dtype_size (vi->dtype) == 0)
              vi->unsupported =
                  "has an element type that is not supported (string, complex, float8, int4...)";
          } else if (ttf.number == TT_SHAPE) {
            if (!nnp_wire_expect (&ttf, NNP_WIRE_LEN, error))
              return FALSE;
            g_clear_pointer (&vi->dim_names, g_strfreev);
            if (!parse_shape (&ttr, &ttf, vi, error))
              return FALSE;
          }
        }
        if (rc < 0)
          return FALSE;
      }
      if (rc < 0)
        return FALSE;
    }
  }
  if (rc < 0)
    return FALSE;
  if (vi->name == NULL || vi->name[0] == '\0') {
    g_set_error (error, NNP_ERROR, NNP_ERROR_PARSE, "value at byte %" G_GSIZE_FORMAT " has no name",
                 msg->offset);
    return FALSE;
  }
  return TRUE;
}

/* Copy what vi says about a value into it, where not known already. */
static void
apply_value_info (NnpValue *v, const ValueInfo *vi, gboolean with_dim_names)
{
  if (v->constant)
    return;
  if (v->dtype == NNP_DTYPE_UNDEFINED)
    v->dtype = vi->dtype;
  if (v->shape.rank < 0 && vi->shape.rank >= 0) {
    v->shape = vi->shape;
    if (with_dim_names && v->dim_names == NULL)
      v->dim_names = g_strdupv (vi->dim_names);
  }
}

/* ---------------------------------------------------------------------------
 * AttributeProto */

static char *
bytes_to_string (const NnpWireField *f)
{
  /* AttributeProto.s/strings are bytes: keep them as they are (up to a NUL) */
  return g_strndup ((const char *) f->data, f->len);
}

static NnpGraph *parse_graph (const NnpWireReader *parent, const NnpWireField *msg,
                              const char *fallback_name, int opset, int depth, guint *n_formal,
                              GError **error);

/* Subgraphs nest at most this deep (a hostile file cannot exhaust the stack). */
#define MAX_SUBGRAPH_DEPTH 16

static gboolean
parse_attribute (const NnpWireReader *parent, const NnpWireField *msg, NnpAttr *attr, int opset,
                 int depth, GError **error)
{
  NnpWireReader r;
  NnpWireField f;
  g_autofree char *name = NULL, *s = NULL;
  g_autoptr (GArray) floats = NULL;
  g_autoptr (GArray) ints = NULL;
  g_autoptr (GPtrArray) strings = NULL;
  g_autoptr (NnpTensor) t = NULL;
  g_autoptr (NnpGraph) g = NULL;
  guint n_formal = 0;
  gboolean has_f = FALSE, has_i = FALSE, has_s = FALSE, has_g = FALSE;
  float fv = 0;
  int64_t iv = 0, type = 0;
  int rc;

  memset (attr, 0, sizeof (*attr));
  if (!nnp_wire_expect (msg, NNP_WIRE_LEN, error))
    return FALSE;
  nnp_wire_reader_sub (&r, parent, msg);
  while ((rc = nnp_wire_next (&r, &f, error)) > 0) {
    NnpWireRepeated it;
    guint64 v;

    switch (f.number) {
      case ATTR_NAME:
        if (!nnp_wire_get_string (&f, &name, error))
          goto failed;
        break;
      case ATTR_F:
        if (!nnp_wire_get_float (&f, &fv, error))
          goto failed;
        has_f = TRUE;
        break;
      case ATTR_I:
        if (!nnp_wire_get_int64 (&f, &iv, error))
          goto failed;
        has_i = TRUE;
        break;
      case ATTR_S:
        if (!nnp_wire_expect (&f, NNP_WIRE_LEN, error))
          goto failed;
        g_free (s);
        s = bytes_to_string (&f);
        has_s = TRUE;
        break;
      case ATTR_T:
        if (!nnp_wire_expect (&f, NNP_WIRE_LEN, error))
          goto failed;
        g_clear_pointer (&t, nnp_tensor_unref);
        t = nnp_onnx_parse_tensor (&r, &f, TRUE, "tensor", NULL, error);
        if (t == NULL)
          goto failed;
        break;
      case ATTR_G:
        /* a subgraph (If, Loop, Scan): its outer-scope names become inputs */
        g_clear_pointer (&g, nnp_graph_unref);
        if (depth >= MAX_SUBGRAPH_DEPTH) {
          g_set_error (error, NNP_ERROR, NNP_ERROR_UNSUPPORTED,
                       "subgraphs nested more than %d deep", MAX_SUBGRAPH_DEPTH);
          goto failed;
        }
        g = parse_graph (&r, &f, name ? name : "subgraph", opset, depth + 1, &n_formal, error);
        if (g == NULL)
          goto failed;
        has_g = TRUE;
        break;
      case ATTR_GRAPHS: has_g = TRUE; break;
      case ATTR_FLOATS:
        if (!nnp_wire_repeated_init (&it, &f, NNP_WIRE_FIXED32, error))
          goto failed;
        if (floats == NULL)
          floats = g_array_new (FALSE, FALSE, sizeof (float));
        g_array_set_size (floats, floats->len + it.count);
        for (gsize k = floats->len - it.count; nnp_wire_repeated_next (&it, &v); k++) {
          guint32 bits = (guint32) v;
          memcpy (&g_array_index (floats, float, k), &bits, 4);
        }
        break;
      case ATTR_INTS:
        if (!nnp_wire_repeated_init (&it, &f, NNP_WIRE_VARINT, error))
          goto failed;
        if (ints == NULL)
          ints = g_array_new (FALSE, FALSE, sizeof (int64_t));
        g_array_set_size (ints, ints->len + it.count);
        for (gsize k = ints->len - it.count; nnp_wire_repeated_next (&it, &v); k++)
          g_array_index (ints, int64_t, k) = (int64_t) v;
        break;
      case ATTR_STRINGS:
        if (!nnp_wire_expect (&f, NNP_WIRE_LEN, error))
          goto failed;
        if (strings == NULL)
          strings = g_ptr_array_new_with_free_func (g_free);
        g_ptr_array_add (strings, bytes_to_string (&f));
        break;
      case ATTR_TYPE:
        if (!nnp_wire_get_int64 (&f, &type, error))
          goto failed;
        break;
      default: break;
    }
  }
  if (rc < 0)
    goto failed;

  if (type == 0) {
    /* IR version 1 models have no `type`: infer it from the field that is set */
    if (t)
      type = NNP_ATTR_TENSOR;
    else if (has_g)
      type = NNP_ATTR_GRAPH;
    else if (has_f)
      type = NNP_ATTR_FLOAT;
    else if (has_i)
      type = NNP_ATTR_INT;
    else if (has_s)
      type = NNP_ATTR_STRING;
    else if (floats)
      type = NNP_ATTR_FLOATS;
    else if (ints)
      type = NNP_ATTR_INTS;
    else if (strings)
      type = NNP_ATTR_STRINGS;
  }

  attr->name = name ? g_steal_pointer (&name) : g_strdup ("");
  switch (type) {
    case NNP_ATTR_FLOAT:
      attr->type = NNP_ATTR_FLOAT;
      attr->f = fv;
      break;
    case NNP_ATTR_INT:
      attr->type = NNP_ATTR_INT;
      attr->i = iv;
      break;
    case NNP_ATTR_STRING:
      attr->type = NNP_ATTR_STRING;
      attr->s = s ? g_steal_pointer (&s) : g_strdup ("");
      break;
    case NNP_ATTR_TENSOR:
      if (t == NULL) {
        g_set_error (error, NNP_ERROR, NNP_ERROR_PARSE, "tensor attribute without a tensor");
        goto failed_named;
      }
      attr->type = NNP_ATTR_TENSOR;
      attr->t = g_steal_pointer (&t);
      break;
    case NNP_ATTR_GRAPH:
    case ONNX_ATTR_GRAPHS:
      /* one subgraph (`graphs` lists stay a marker: no op we run has them) */
      attr->type = NNP_ATTR_GRAPH;
      attr->g = g ? nnp_graph_ref (g) : NULL;
      attr->i = (int64_t) n_formal; /* the subgraph's own inputs; then its captures */
      break;
    case NNP_ATTR_FLOATS:
      attr->type = NNP_ATTR_FLOATS;
      attr->n = floats ? (int) MIN (floats->len, (guint) G_MAXINT) : 0;
      attr->floats = g_new0 (float, MAX (attr->n, 1));
      if (attr->n)
        memcpy (attr->floats, floats->data, sizeof (float) * attr->n);
      break;
    case NNP_ATTR_INTS:
      attr->type = NNP_ATTR_INTS;
      attr->n = ints ? (int) MIN (ints->len, (guint) G_MAXINT) : 0;
      attr->ints = g_new0 (int64_t, MAX (attr->n, 1));
      if (attr->n)
        memcpy (attr->ints, ints->data, sizeof (int64_t) * attr->n);
      break;
    case NNP_ATTR_STRINGS:
      attr->type = NNP_ATTR_STRINGS;
      if (strings == NULL)
        strings = g_ptr_array_new_with_free_func (g_free);
      attr->n = (int) MIN (strings->len, (guint) G_MAXINT);
      g_ptr_array_add (strings, NULL);
      g_ptr_array_set_free_func (strings, NULL);
      attr->strings = (char **) g_ptr_array_free (g_steal_pointer (&strings), FALSE);
      break;
    default:
      /* TENSORS, SPARSE_TENSOR(S), TYPE_PROTO(S), unknown: kept by name only */
      attr->type = NNP_ATTR_UNDEFINED;
      break;
  }
  return TRUE;

failed_named:
  g_prefix_error (error, "attribute '%s': ", attr->name);
  g_clear_pointer (&attr->name, g_free);
  return FALSE;
failed:
  if (name)
    g_prefix_error (error, "attribute '%s': ", name);
  else
    g_prefix_error (error, "attribute: ");
  return FALSE;
}

/* ---------------------------------------------------------------------------
 * NodeProto */

typedef struct {
  char *name, *op_type, *domain;
  GPtrArray *inputs, *outputs; /* char*, owned */
  GArray *attrs;               /* NnpAttr */
} NodeInfo;

static void
node_info_clear (NodeInfo *ni)
{
  g_free (ni->name);
  g_free (ni->op_type);
  g_free (ni->domain);
  if (ni->inputs)
    g_ptr_array_unref (ni->inputs);
  if (ni->outputs)
    g_ptr_array_unref (ni->outputs);
  if (ni->attrs) {
    /* attributes not handed to a node yet */
    for (guint i = 0; i < ni->attrs->len; i++) {
      NnpAttr *a = &g_array_index (ni->attrs, NnpAttr, i);
      g_free (a->name);
      g_free (a->s);
      if (a->t)
        nnp_tensor_unref (a->t);
      g_free (a->floats);
      g_free (a->ints);
      g_strfreev (a->strings);
      if (a->g)
        nnp_graph_unref (a->g);
    }
    g_array_unref (ni->attrs);
  }
  memset (ni, 0, sizeof (*ni));
}

static gboolean
parse_node (const NnpWireReader *parent, const NnpWireField *msg, NodeInfo *ni, int opset,
            int depth, GError **error)
{
  NnpWireReader r;
  NnpWireField f;
  int rc;

  memset (ni, 0, sizeof (*ni));
  ni->inputs = g_ptr_array_new_with_free_func (g_free);
  ni->outputs = g_ptr_array_new_with_free_func (g_free);
  ni->attrs = g_array_new (FALSE, FALSE, sizeof (NnpAttr));
  if (!nnp_wire_expect (msg, NNP_WIRE_LEN, error))
    return FALSE;
  nnp_wire_reader_sub (&r, parent, msg);
  while ((rc = nnp_wire_next (&r, &f, error)) > 0) {
    char *str = NULL;

    switch (f.number) {
      case NODE_INPUT:
      case NODE_OUTPUT:
        if (!nnp_wire_get_string (&f, &str, error))
          return FALSE;
        g_ptr_array_add (f.number == NODE_INPUT ? ni->inputs : ni->outputs, str);
        break;
      case NODE_NAME:
        if (!nnp_wire_get_string (&f, &ni->name, error))
          return FALSE;
        break;
      case NODE_OP_TYPE:
        if (!nnp_wire_get_string (&f, &ni->op_type, error))
          return FALSE;
        break;
      case NODE_DOMAIN:
        if (!nnp_wire_get_string (&f, &ni->domain, error))
          return FALSE;
        break;
      case NODE_ATTRIBUTE: {
        NnpAttr attr;
        if (!parse_attribute (&r, &f, &attr, opset, depth, error))
          return FALSE;
        g_array_append_val (ni->attrs, attr);
        break;
      }
      default: break;
    }
  }
  if (rc < 0)
    return FALSE;
  if (ni->op_type == NULL || ni->op_type[0] == '\0') {
    g_set_error (error, NNP_ERROR, NNP_ERROR_PARSE, "node has no op_type");
    return FALSE;
  }
  return TRUE;
}

/* ---------------------------------------------------------------------------
 * GraphProto */

static int
value_id_for (NnpGraph *graph, const char *name)
{
  return name[0] == '\0' ? -1 : nnp_graph_ensure_value (graph, name)->id;
}

static gboolean
add_node (NnpGraph *graph, NodeInfo *ni, GError **error)
{
  g_autofree int *in = g_new (int, MAX (ni->inputs->len, 1));
  g_autofree int *out = g_new (int, MAX (ni->outputs->len, 1));
  NnpNode *node;

  if (ni->outputs->len == 0) {
    g_set_error (error, NNP_ERROR, NNP_ERROR_PARSE, "node has no outputs");
    return FALSE;
  }
  for (guint k = 0; k < ni->inputs->len; k++)
    in[k] = value_id_for (graph, g_ptr_array_index (ni->inputs, k));
  for (guint k = 0; k < ni->outputs->len; k++)
    out[k] = value_id_for (graph, g_ptr_array_index (ni->outputs, k));
  node = nnp_graph_add_node (graph, ni->name, ni->op_type, ni->domain, ni->inputs->len, in,
                             ni->outputs->len, out);
  for (guint k = 0; k < ni->attrs->len; k++)
    nnp_node_take_attr (node, &g_array_index (ni->attrs, NnpAttr, k));
  g_array_set_size (ni->attrs, 0);
  return TRUE;
}

/* Fail once, listing every node whose op nnpipe does not implement:
 * "unsupported ops: Foo (node 'n1'), Bar (nodes 'n2', 'n3')". */
static gboolean
check_ops (NnpGraph *graph, GError **error)
{
  g_autoptr (GPtrArray) keys = g_ptr_array_new_with_free_func (g_free);
  g_autoptr (GHashTable) nodes_by_key =
      g_hash_table_new_full (g_str_hash, g_str_equal, NULL, (GDestroyNotify) g_ptr_array_unref);
  GString *msg;

  for (guint i = 0; i < graph->nodes->len; i++) {
    NnpNode *node = nnp_graph_node (graph, i);
    GPtrArray *names;
    char *key;

    if (node->op != NNP_OP_UNKNOWN)
      continue;
    if (node->domain[0] && strcmp (node->domain, "ai.onnx") != 0)
      key = g_strdup_printf ("%s.%s", node->domain, node->op_type);
    else
      key = g_strdup (node->op_type);
    names = g_hash_table_lookup (nodes_by_key, key);
    if (names == NULL) {
      names = g_ptr_array_new ();
      g_ptr_array_add (keys, key);
      g_hash_table_insert (nodes_by_key, key, names);
    } else {
      g_free (key);
    }
    g_ptr_array_add (names, node->name);
  }
  if (keys->len == 0)
    return TRUE;

  msg = g_string_new ("unsupported ops: ");
  for (guint k = 0; k < keys->len; k++) {
    const char *key = g_ptr_array_index (keys, k);
    GPtrArray *names = g_hash_table_lookup (nodes_by_key, key);
    const guint shown = 5;

    g_string_append_printf (msg, "%s%s (node%s ", k ? ", " : "", key, names->len > 1 ? "s" : "");
    for (guint n = 0; n < names->len && n < shown; n++)
      g_string_append_printf (msg, "%s'%s'", n ? ", " : "",
                              (const char *) g_ptr_array_index (names, n));
    if (names->len > shown)
      g_string_append_printf (msg, " and %u more", names->len - shown);
    g_string_append_c (msg, ')');
  }
  g_set_error_literal (error, NNP_ERROR, NNP_ERROR_UNSUPPORTED, msg->str);
  g_string_free (msg, TRUE);
  return FALSE;
}

/* Graph input or output number `index` (a ValueInfoProto).  An input that is
 * also an initializer is a weight, not an input. */
static gboolean
add_graph_io (NnpGraph *graph, const NnpWireReader *r, const NnpWireField *f, guint index,
              gboolean output, GError **error)
{
  const char *what = output ? "graph output" : "graph input";
  ValueInfo vi;
  NnpValue *v;
  gboolean ok = FALSE;

  if (!parse_value_info (r, f, &vi, error)) {
    g_prefix_error (error, "%s %u: ", what, index);
  } else if (vi.unsupported) {
    g_set_error (error, NNP_ERROR, NNP_ERROR_UNSUPPORTED, "%s '%s' %s", what, vi.name,
                 vi.unsupported);
  } else {
    v = nnp_graph_ensure_value (graph, vi.name);
    if (output ? v->is_output : v->is_input) {
      g_set_error (error, NNP_ERROR, NNP_ERROR_INVALID, "%s '%s' is declared twice", what, vi.name);
    } else {
      if (output || v->constant == NULL) {
        if (output)
          v->is_output = TRUE;
        else
          v->is_input = TRUE;
        apply_value_info (v, &vi, TRUE);
        g_array_append_val (output ? graph->outputs : graph->inputs, v->id);
      }
      ok = TRUE;
    }
  }
  value_info_clear (&vi);
  return ok;
}

/* A node with subgraphs also reads the values they capture from the outer
 * scope: they become extra inputs of the node, after its own (each name once). */
static gboolean
add_captures (NodeInfo *ni)
{
  for (guint a = 0; a < ni->attrs->len; a++) {
    const NnpAttr *attr = &g_array_index (ni->attrs, NnpAttr, a);
    if (attr->type != NNP_ATTR_GRAPH || attr->g == NULL)
      continue;
    for (guint k = (guint) attr->i; k < attr->g->inputs->len; k++) {
      const char *name = nnp_graph_value (attr->g, g_array_index (attr->g->inputs, int, k))->name;
      gboolean have = FALSE;
      for (guint j = 0; j < ni->inputs->len && !have; j++)
        have = strcmp (g_ptr_array_index (ni->inputs, j), name) == 0;
      if (!have)
        g_ptr_array_add (ni->inputs, g_strdup (name));
    }
  }
  return TRUE;
}

/* Subgraph: values read by its nodes that nothing in it defines come from
 * the outer scope; they are appended to its inputs (after the formal ones,
 * whose count the attribute keeps in `i`). */
static void
capture_outer (NnpGraph *graph)
{
  for (guint i = 0; i < graph->nodes->len; i++) {
    NnpNode *node = nnp_graph_node (graph, i);
    for (int k = 0; k < node->n_inputs; k++) {
      NnpValue *v = nnp_node_input (graph, node, k);
      gboolean produced = FALSE;
      if (v == NULL || v->constant || v->is_input)
        continue;
      for (guint j = 0; j < graph->nodes->len && !produced; j++) {
        NnpNode *n = nnp_graph_node (graph, j);
        for (int o = 0; o < n->n_outputs && !produced; o++)
          produced = n->outputs[o] == v->id;
      }
      if (produced)
        continue;
      v->is_input = TRUE;
      g_array_append_val (graph->inputs, v->id);
    }
  }
  /* graph outputs taken straight from the outer scope */
  for (guint i = 0; i < graph->outputs->len; i++) {
    NnpValue *v = nnp_graph_value (graph, g_array_index (graph->outputs, int, i));
    gboolean produced = FALSE;
    if (v->constant || v->is_input)
      continue;
    for (guint j = 0; j < graph->nodes->len && !produced; j++) {
      NnpNode *n = nnp_graph_node (graph, j);
      for (int o = 0; o < n->n_outputs && !produced; o++)
        produced = n->outputs[o] == v->id;
    }
    if (!produced) {
      v->is_input = TRUE;
      g_array_append_val (graph->inputs, v->id);
    }
  }
}

/* A GraphProto; n_formal NULL for the model's graph, else a subgraph whose
 * formal input count goes there (capture_outer appends the rest). */
static NnpGraph *
parse_graph (const NnpWireReader *parent, const NnpWireField *msg, const char *fallback_name,
             int opset, int depth, guint *n_formal, GError **error)
{
  NnpWireReader r;
  NnpWireField f;
  g_autofree char *name = NULL;
  g_autoptr (NnpGraph) graph = NULL;
  gboolean sparse = FALSE;
  guint i;
  int rc;

  /* Pass 0 checks the framing of the whole message and reads the name; then
   * one pass per section (initializers, inputs, nodes, outputs, value_info)
   * walks the message again, so no list of fields is ever built. */
  nnp_wire_reader_sub (&r, parent, msg);
  while ((rc = nnp_wire_next (&r, &f, error)) > 0) {
    switch (f.number) {
      case GRAPH_NODE:
      case GRAPH_INITIALIZER:
      case GRAPH_INPUT:
      case GRAPH_OUTPUT:
      case GRAPH_VALUE_INFO:
        if (!nnp_wire_expect (&f, NNP_WIRE_LEN, error))
          return NULL;
        break;
      case GRAPH_NAME:
        if (!nnp_wire_get_string (&f, &name, error))
          return NULL;
        break;
      case GRAPH_SPARSE_INITIALIZER: sparse = TRUE; break;
      default: break;
    }
  }
  if (rc < 0)
    return NULL;
  if (sparse) {
    g_set_error (error, NNP_ERROR, NNP_ERROR_UNSUPPORTED,
                 "graph has sparse initializers (not supported)");
    return NULL;
  }

  graph = nnp_graph_new (name && *name ? name : fallback_name, opset);

  /* weights */
  nnp_wire_reader_sub (&r, parent, msg);
  for (i = 0; nnp_wire_next (&r, &f, NULL) > 0;) {
    NnpWireField *tf = &f;
    g_autofree char *tname = NULL;
    g_autofree char *what = NULL;
    NnpTensor *t;
    NnpValue *v;

    if (f.number != GRAPH_INITIALIZER)
      continue;
    what = g_strdup_printf ("initializer %u", i++);
    t = nnp_onnx_parse_tensor (&r, tf, FALSE, what, &tname, error);
    if (t == NULL)
      return NULL;
    if (tname == NULL || tname[0] == '\0') {
      nnp_tensor_unref (t);
      g_set_error (error, NNP_ERROR, NNP_ERROR_PARSE, "%s has no name", what);
      return NULL;
    }
    v = nnp_graph_ensure_value (graph, tname);
    if (v->constant) {
      nnp_tensor_unref (t);
      g_set_error (error, NNP_ERROR, NNP_ERROR_INVALID, "initializer '%s' is given twice", tname);
      return NULL;
    }
    v->constant = t;
    v->dtype = t->dtype;
    v->shape = t->shape;
  }

  /* graph inputs */
  nnp_wire_reader_sub (&r, parent, msg);
  for (i = 0; nnp_wire_next (&r, &f, NULL) > 0;)
    if (f.number == GRAPH_INPUT && !add_graph_io (graph, &r, &f, i++, FALSE, error))
      return NULL;

  /* nodes */
  nnp_wire_reader_sub (&r, parent, msg);
  for (i = 0; nnp_wire_next (&r, &f, NULL) > 0;) {
    NodeInfo ni;
    gboolean ok;

    if (f.number != GRAPH_NODE)
      continue;
    i++;
    ok = parse_node (&r, &f, &ni, opset, depth, error) && add_captures (&ni)
         && add_node (graph, &ni, error);
    if (!ok) {
      if (ni.name && *ni.name)
        g_prefix_error (error, "node %u ('%s'): ", i - 1, ni.name);
      else
        g_prefix_error (error, "node %u: ", i - 1);
      node_info_clear (&ni);
      return NULL;
    }
    node_info_clear (&ni);
  }

  /* graph outputs */
  nnp_wire_reader_sub (&r, parent, msg);
  for (i = 0; nnp_wire_next (&r, &f, NULL) > 0;)
    if (f.number == GRAPH_OUTPUT && !add_graph_io (graph, &r, &f, i++, TRUE, error))
      return NULL;

  /* intermediate type annotations (only for values the graph uses) */
  nnp_wire_reader_sub (&r, parent, msg);
  for (i = 0; nnp_wire_next (&r, &f, NULL) > 0;) {
    ValueInfo vi;
    NnpValue *v;

    if (f.number != GRAPH_VALUE_INFO)
      continue;
    i++;
    if (!parse_value_info (&r, &f, &vi, error)) {
      g_prefix_error (error, "value_info %u: ", i - 1);
      value_info_clear (&vi);
      return NULL;
    }
    v = nnp_graph_find_value (graph, vi.name);
    if (v)
      apply_value_info (v, &vi, v->is_input || v->is_output);
    value_info_clear (&vi);
  }

  if (!check_ops (graph, error))
    return NULL;
  if (n_formal) {
    *n_formal = graph->inputs->len;
    capture_outer (graph);
  }
  for (i = 0; i < graph->nodes->len; i++) {
    NnpNode *node = nnp_graph_node (graph, i);
    for (int a = 0; a < node->n_attrs; a++)
      if (node->attrs[a].type == NNP_ATTR_GRAPH && node->attrs[a].g == NULL) {
        nnp_node_set_error (error, NNP_ERROR_UNSUPPORTED, node,
                            "attribute '%s' is a list of subgraphs (not supported)",
                            node->attrs[a].name);
        return NULL;
      }
  }
  if (!nnp_graph_sort (graph, error))
    return NULL;
  return g_steal_pointer (&graph);
}

/* ---------------------------------------------------------------------------
 * ModelProto */

static NnpGraph *
parse_model (const guint8 *data, gsize size, const char *graph_name, NnpOnnxModelInfo *info,
             GError **error)
{
  NnpWireReader r;
  NnpWireField f, graph_field = { 0 };
  gboolean has_graph = FALSE, has_opset = FALSE;
  int64_t opset = 0;
  NnpGraph *graph;
  int rc;

  memset (info, 0, sizeof (*info));
  info->producer = g_strdup ("");
  nnp_wire_reader_init (&r, data, size);
  while ((rc = nnp_wire_next (&r, &f, error)) > 0) {
    switch (f.number) {
      case MODEL_IR_VERSION:
        if (!nnp_wire_get_int64 (&f, &info->ir_version, error))
          return NULL;
        break;
      case MODEL_PRODUCER_NAME:
        if (!nnp_wire_get_text (&f, &info->producer, error))
          return NULL;
        break;
      case MODEL_GRAPH:
        if (!nnp_wire_expect (&f, NNP_WIRE_LEN, error))
          return NULL;
        if (has_graph) {
          g_set_error (error, NNP_ERROR, NNP_ERROR_PARSE, "more than one graph");
          return NULL;
        }
        graph_field = f;
        has_graph = TRUE;
        break;
      case MODEL_OPSET_IMPORT: {
        NnpWireReader orr;
        NnpWireField of;
        g_autofree char *domain = NULL;
        int64_t version = 0;

        if (!nnp_wire_expect (&f, NNP_WIRE_LEN, error))
          return NULL;
        nnp_wire_reader_sub (&orr, &r, &f);
        while ((rc = nnp_wire_next (&orr, &of, error)) > 0) {
          if (of.number == OPSET_DOMAIN && !nnp_wire_get_string (&of, &domain, error))
            return NULL;
          if (of.number == OPSET_VERSION && !nnp_wire_get_int64 (&of, &version, error))
            return NULL;
        }
        if (rc < 0)
          return NULL;
        if (domain == NULL || domain[0] == '\0' || strcmp (domain, "ai.onnx") == 0) {
          opset = version;
          has_opset = TRUE;
        }
        break;
      }
      default: break;
    }
  }
  if (rc < 0)
    return NULL;
  if (!has_graph) {
    g_set_error (error, NNP_ERROR, NNP_ERROR_PARSE, "no graph");
    return NULL;
  }
  if (!has_opset) {
    g_set_error (error, NNP_ERROR, NNP_ERROR_UNSUPPORTED,
                 "no opset for the default domain (IR version %" G_GINT64_FORMAT
                 "; opsets %d..%d are supported)",
                 info->ir_version, OPSET_MIN, OPSET_MAX);
    return NULL;
  }
  if (opset < OPSET_MIN || opset > OPSET_MAX) {
    g_set_error (error, NNP_ERROR, NNP_ERROR_UNSUPPORTED,
                 "opset %" G_GINT64_FORMAT " is not supported (%d..%d are)", opset, OPSET_MIN,
                 OPSET_MAX);
    return NULL;
  }
  info->opset = (int) opset;

  graph = parse_graph (&r, &graph_field, graph_name, info->opset, 0, NULL, error);
  if (graph)
    NNP_DEBUG (LOG_CAT,
               "%s: IR %" G_GINT64_FORMAT
               ", opset %d, producer '%s': %u nodes, %u values, %u inputs, %u outputs",
               graph_name, info->ir_version, info->opset, info->producer, graph->nodes->len,
               graph->values->len, graph->inputs->len, graph->outputs->len);
  return graph;
}

NnpGraph *
nnp_onnx_parse_model (const guint8 *data, gsize size, const char *graph_name,
                      NnpOnnxModelInfo *info, GError **error)
{
  GError *local = NULL;
  NnpGraph *graph = parse_model (data, size, graph_name, info, &local);

  if (local) {
    if (local->code == NNP_ERROR_PARSE)
      g_prefix_error (&local, "not a valid ONNX model: ");
    g_propagate_error (error, local);
  }
  return graph;
}
