/* Helpers for the unit tests. */
#include "test-util.h"
#include <nnpipe/specialize.h>
#include "graph/graph-edit.h"

#include <string.h>

NnpValue *
tu_add_input (NnpGraph *graph, const char *name, NnpDType dtype, int rank, const int64_t *dims)
{
  NnpValue *v = nnp_graph_ensure_value (graph, name);

  v->dtype = dtype;
  g_assert_true (nnp_shape_set (&v->shape, rank, dims));
  v->is_input = TRUE;
  g_array_append_val (graph->inputs, v->id);
  return v;
}

NnpValue *
tu_add_output (NnpGraph *graph, const char *name)
{
  NnpValue *v = nnp_graph_ensure_value (graph, name);

  v->is_output = TRUE;
  g_array_append_val (graph->outputs, v->id);
  return v;
}

NnpValue *
tu_add_constant (NnpGraph *graph, const char *name, NnpTensor *tensor)
{
  NnpValue *v = nnp_graph_ensure_value (graph, name);

  v->constant = nnp_tensor_ref (tensor);
  v->dtype = tensor->dtype;
  v->shape = tensor->shape;
  return v;
}

NnpNode *
tu_add_node (NnpGraph *graph, const char *name, const char *op_type, const char *const *inputs,
             const char *const *outputs)
{
  int in_ids[16], out_ids[16];
  int n_in = 0, n_out = 0;

  for (; inputs && inputs[n_in]; n_in++) {
    g_assert_cmpint (n_in, <, 16);
    in_ids[n_in] = inputs[n_in][0] ? nnp_graph_ensure_value (graph, inputs[n_in])->id : -1;
  }
  for (; outputs && outputs[n_out]; n_out++) {
    g_assert_cmpint (n_out, <, 16);
    out_ids[n_out] = nnp_graph_ensure_value (graph, outputs[n_out])->id;
  }
  return nnp_graph_add_node (graph, name, op_type, "", n_in, in_ids, n_out, out_ids);
}

NnpTensor *
tu_tensor_f32 (int rank, const int64_t *dims, const float *values)
{
  NnpShape shape;
  NnpTensor *t;

  g_assert_true (nnp_shape_set (&shape, rank, dims));
  t = nnp_tensor_new (NNP_DTYPE_FLOAT32, &shape, NULL);
  g_assert_nonnull (t);
  if (values)
    memcpy (t->data, values, t->nbytes);
  return t;
}

NnpGraph *
tu_specialize (NnpGraph *g, NnpSpecializeFlags flags)
{
  g_autoptr (GError) error = NULL;
  NnpGraph *sg;

  g_assert_true (nnp_graph_sort (g, &error));
  g_assert_no_error (error);
  sg = nnp_graph_specialize (g, NULL, 0, flags, &error);
  g_assert_no_error (error);
  g_assert_nonnull (sg);
  return sg;
}

GPtrArray *
tu_run_stage (NnpStage *stage, NnpTensor *const *inputs)
{
  GPtrArray *outs = g_ptr_array_new_with_free_func ((GDestroyNotify) nnp_tensor_unref);
  g_autoptr (GError) error = NULL;

  for (int i = 0; i < nnp_stage_get_n_outputs (stage); i++) {
    NnpTensor *t = nnp_stage_new_output (stage, i, &error);
    g_assert_no_error (error);
    g_ptr_array_add (outs, t);
  }
  nnp_stage_run (stage, inputs, (NnpTensor *const *) outs->pdata, &error);
  g_assert_no_error (error);
  return outs;
}
