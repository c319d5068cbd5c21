/* Unit tests of the protobuf writer (lib/onnx/wire-write.c) read back with
 * the reader (wire.c), and of the ONNX writer: a node with an attribute of
 * every type the loader reads, exported as a stage and loaded back. */
#include <nnpipe/nnpipe.h>

#include "onnx/wire-write.h"
#include "onnx/wire.h"
#include "graph/graph-edit.h"
#include "partition/partition.h"

#include <glib/gstdio.h>
#include <math.h>
#include <string.h>

static void
test_scalars_round_trip (void)
{
  static const int64_t ints[] = {
    0, 1, 127, 128, 300, G_MAXINT32, (int64_t) 1 << 40, G_MAXINT64, -1, -300, G_MININT64
  };
  g_autoptr (GByteArray) buf = g_byte_array_new ();
  g_autoptr (GByteArray) sub = g_byte_array_new ();
  NnpWireReader r, rs;
  NnpWireField f;
  GError *error = NULL;
  char *s = NULL;
  float fv;
  int64_t iv;

  for (guint i = 0; i < G_N_ELEMENTS (ints); i++)
    nnp_wire_put_int (buf, 1 + i, ints[i]);
  nnp_wire_put_float (buf, 100, -2.5f);
  nnp_wire_put_string (buf, 101, "conv_1");
  nnp_wire_put_string (sub, 1, "inner");
  nnp_wire_put_message (buf, 102, sub);

  nnp_wire_reader_init (&r, buf->data, buf->len);
  for (guint i = 0; i < G_N_ELEMENTS (ints); i++) {
    g_assert_cmpint (nnp_wire_next (&r, &f, &error), ==, 1);
    g_assert_no_error (error);
    g_assert_cmpuint (f.number, ==, 1 + i);
    g_assert_true (nnp_wire_get_int64 (&f, &iv, &error));
    g_assert_cmpint (iv, ==, ints[i]);
  }
  g_assert_cmpint (nnp_wire_next (&r, &f, &error), ==, 1);
  g_assert_true (nnp_wire_get_float (&f, &fv, &error));
  g_assert_cmpfloat (fv, ==, -2.5f);
  g_assert_cmpint (nnp_wire_next (&r, &f, &error), ==, 1);
  g_assert_true (nnp_wire_get_string (&f, &s, &error));
  g_assert_cmpstr (s, ==, "conv_1");
  g_assert_cmpint (nnp_wire_next (&r, &f, &error), ==, 1);
  g_assert_cmpuint (f.number, ==, 102);
  nnp_wire_reader_sub (&rs, &r, &f);
  g_assert_cmpint (nnp_wire_next (&rs, &f, &error), ==, 1);
  g_assert_true (nnp_wire_get_string (&f, &s, &error));
  g_assert_cmpstr (s, ==, "inner");
  g_assert_cmpint (nnp_wire_next (&rs, &f, &error), ==, 0);
  g_assert_cmpint (nnp_wire_next (&r, &f, &error), ==, 0);
  g_assert_no_error (error);
  g_free (s);
}

static void
test_packed_round_trip (void)
{
  static const int64_t ints[] = { 3, -1, 0, 1 << 20 };
  static const float floats[] = { 0.f, 1.5f, -INFINITY, 1e-30f };
  g_autoptr (GByteArray) buf = g_byte_array_new ();
  NnpWireReader r;
  NnpWireField f;
  NnpWireRepeated it;
  GError *error = NULL;
  guint64 v;
  gsize n = 0;

  nnp_wire_put_packed_int64 (buf, 1, ints, G_N_ELEMENTS (ints));
  nnp_wire_put_packed_float (buf, 2, floats, G_N_ELEMENTS (floats));
  nnp_wire_put_packed_int64 (buf, 3, ints, 0); /* nothing written */

  nnp_wire_reader_init (&r, buf->data, buf->len);
  g_assert_cmpint (nnp_wire_next (&r, &f, &error), ==, 1);
  g_assert_true (nnp_wire_repeated_init (&it, &f, NNP_WIRE_VARINT, &error));
  g_assert_cmpuint (it.count, ==, G_N_ELEMENTS (ints));
  while (nnp_wire_repeated_next (&it, &v))
    g_assert_cmpint ((int64_t) v, ==, ints[n++]);
  g_assert_cmpuint (n, ==, G_N_ELEMENTS (ints));
  g_assert_cmpint (nnp_wire_next (&r, &f, &error), ==, 1);
  g_assert_true (nnp_wire_repeated_init (&it, &f, NNP_WIRE_FIXED32, &error));
  for (n = 0; nnp_wire_repeated_next (&it, &v); n++) {
    guint32 bits = (guint32) v;
    float x;
    memcpy (&x, &bits, 4);
    g_assert_cmpfloat (x, ==, floats[n]);
  }
  g_assert_cmpuint (n, ==, G_N_ELEMENTS (floats));
  g_assert_cmpint (nnp_wire_next (&r, &f, &error), ==, 0);
  g_assert_no_error (error);
}

/* Identity with an attribute of every type (ignored by the op, kept by the
 * loader), exported as the one stage of a hand-made plan and loaded back. */
static void
test_export_attributes (void)
{
  g_autofree char *dir = g_dir_make_tmp ("nnp-export-XXXXXX", NULL);
  g_autofree char *path = g_build_filename (dir, "stage-0.onnx", NULL);
  g_autofree char *src =
      g_build_filename (g_getenv ("NNP_SOURCE_DIR"), "tests", "data", "small.onnx", NULL);
  g_autoptr (NnpGraph) g = nnp_graph_new ("attrs", 13);
  g_autoptr (NnpModel) model = NULL, back = NULL;
  NnpShape shape = { .rank = 2, .dims = { 2, 3 } };
  NnpValue *x = nnp_graph_ensure_value (g, "x"), *y = nnp_graph_ensure_value (g, "y");
  const char *node_name = "id";
  const char *io_x[] = { "x", NULL }, *io_y[] = { "y", NULL };
  NnpNode *n;
  NnpAttr a;
  NnpPlan *plan;
  GError *error = NULL;
  const NnpNode *m;
  const NnpAttr *t;
  NnpGraph *bg;
  int cnt;

  x->dtype = y->dtype = NNP_DTYPE_FLOAT32;
  x->shape = y->shape = shape;
  x->is_input = TRUE;
  y->is_output = TRUE;
  g_array_append_val (g->inputs, x->id);
  g_array_append_val (g->outputs, y->id);
  n = nnp_graph_add_node (g, node_name, "Identity", "", 1, &x->id, 1, &y->id);
  memset (&a, 0, sizeof a);
  a.name = g_strdup ("f");
  a.type = NNP_ATTR_FLOAT;
  a.f = 0.25f;
  nnp_node_take_attr (n, &a);
  memset (&a, 0, sizeof a);
  a.name = g_strdup ("i");
  a.type = NNP_ATTR_INT;
  a.i = -7;
  nnp_node_take_attr (n, &a);
  memset (&a, 0, sizeof a);
  a.name = g_strdup ("s");
  a.type = NNP_ATTR_STRING;
  a.s = g_strdup ("nearest");
  nnp_node_take_attr (n, &a);
  memset (&a, 0, sizeof a);
  a.name = g_strdup ("t");
  a.type = NNP_ATTR_TENSOR;
  a.t = nnp_tensor_new (NNP_DTYPE_INT64, &shape, NULL);
  ((int64_t *) a.t->data)[5] = -42;
  nnp_node_take_attr (n, &a);
  memset (&a, 0, sizeof a);
  a.name = g_strdup ("fs");
  a.type = NNP_ATTR_FLOATS;
  a.n = 2;
  a.floats = g_new (float, 2);
  a.floats[0] = 1.f;
  a.floats[1] = -0.5f;
  nnp_node_take_attr (n, &a);
  memset (&a, 0, sizeof a);
  a.name = g_strdup ("is");
  a.type = NNP_ATTR_INTS;
  a.n = 3;
  a.ints = g_new (int64_t, 3);
  a.ints[0] = 1;
  a.ints[1] = -2;
  a.ints[2] = 1LL << 40;
  nnp_node_take_attr (n, &a);
  memset (&a, 0, sizeof a);
  a.name = g_strdup ("ss");
  a.type = NNP_ATTR_STRINGS;
  a.n = 2;
  a.strings = g_new0 (char *, 3);
  a.strings[0] = g_strdup ("a");
  a.strings[1] = g_strdup ("bc");
  nnp_node_take_attr (n, &a);
  g_assert_true (nnp_graph_sort (g, &error));

  model = nnp_model_load (src, &error); /* supplies name, digest, IR version */
  g_assert_no_error (error);
  plan = nnp_plan_new (src, NULL);
  nnp_plan_add_stage (plan, "cpu", 1, &node_name, 1);
  plan->stages[0].inputs = g_strdupv ((char **) io_x);
  plan->stages[0].n_inputs = 1;
  plan->stages[0].outputs = g_strdupv ((char **) io_y);
  plan->stages[0].n_outputs = 1;
  g_assert_true (nnp_plan_export_stage (plan, 0, model, g, path, &error));
  g_assert_no_error (error);
  g_assert_false (nnp_plan_export_stage (plan, 1, model, g, path, &error));
  g_assert_error (error, NNP_ERROR, NNP_ERROR_PLAN);
  g_clear_error (&error);

  back = nnp_model_load (path, &error);
  g_assert_no_error (error);
  bg = nnp_model_get_graph (back);
  g_assert_cmpint (bg->opset, ==, 13);
  g_assert_cmpuint (bg->nodes->len, ==, 1);
  m = nnp_graph_node (bg, 0);
  g_assert_cmpstr (m->name, ==, "id");
  g_assert_cmpstr (m->op_type, ==, "Identity");
  g_assert_cmpfloat (nnp_node_attr_float (m, "f", 0), ==, 0.25f);
  g_assert_cmpint (nnp_node_attr_int (m, "i", 0), ==, -7);
  g_assert_cmpstr (nnp_node_attr_string (m, "s", NULL), ==, "nearest");
  t = nnp_node_get_attr (m, "t");
  g_assert_nonnull (t);
  g_assert_cmpint (t->type, ==, NNP_ATTR_TENSOR);
  g_assert_cmpint (t->t->dtype, ==, NNP_DTYPE_INT64);
  g_assert_true (nnp_shape_equal (&t->t->shape, &shape));
  g_assert_cmpint (((int64_t *) t->t->data)[5], ==, -42);
  g_assert_cmpfloat (nnp_node_attr_floats (m, "fs", &cnt)[1], ==, -0.5f);
  g_assert_cmpint (cnt, ==, 2);
  g_assert_cmpint (nnp_node_attr_ints (m, "is", &cnt)[2], ==, 1LL << 40);
  g_assert_cmpint (cnt, ==, 3);
  t = nnp_node_get_attr (m, "ss");
  g_assert_nonnull (t);
  g_assert_cmpint (t->n, ==, 2);
  g_assert_cmpstr (t->strings[1], ==, "bc");
  g_assert_cmpint (nnp_graph_value (bg, g_array_index (bg->inputs, int, 0))->shape.dims[1], ==, 3);
  g_assert_cmpstr (nnp_graph_value (bg, g_array_index (bg->outputs, int, 0))->name, ==, "y");

  nnp_plan_free (plan);
  g_unlink (path);
  g_rmdir (dir);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/wire-write/scalars", test_scalars_round_trip);
  g_test_add_func ("/wire-write/packed", test_packed_round_trip);
  g_test_add_func ("/wire-write/export-attributes", test_export_attributes);
  return g_test_run ();
}
