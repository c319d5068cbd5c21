/* stage-io MODEL PLAN DIR: run the plan's stages in sequence on the pattern
 * inputs of `nnpipe run` (nnp_tensor_fill_pattern, seed = input index) and
 * write what crosses each stage: DIR/stage-K/{in,out}-I.raw, and
 * DIR/stage-K/io.txt with one line per tensor: "in|out I NAME DTYPE D0,D1,...".
 * The export test feeds these inputs to the exported stage files in ONNX
 * Runtime and compares with these outputs.  Exit 0 on success. */
#include <nnpipe/nnpipe.h>
#include <nnpipe/specialize.h>

#include "partition/partition.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static gboolean
write_tensor (GString *io, const char *dir, const char *kind, int i, const NnpValue *v,
              const NnpTensor *t, GError **error)
{
  g_autofree char *file = g_strdup_printf ("%s-%d.raw", kind, i);
  g_autofree char *path = g_build_filename (dir, file, NULL);

  g_string_append_printf (io, "%s %d %s %s ", kind, i, v->name, nnp_dtype_name (t->dtype));
  for (int d = 0; d < t->shape.rank; d++)
    g_string_append_printf (io, "%s%" G_GINT64_FORMAT, d ? "," : "", t->shape.dims[d]);
  g_string_append_c (io, '\n');
  return g_file_set_contents (path, t->data, t->nbytes, error);
}

int
main (int argc, char **argv)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (NnpModel) model = NULL;
  g_autoptr (NnpGraph) graph = NULL;
  g_autofree NnpInputShape *shapes = NULL;
  GPtrArray *cur = NULL;
  NnpPlan *plan;
  int n_shapes = 0;

  if (argc != 4) {
    fprintf (stderr, "usage: stage-io MODEL PLAN DIR\n");
    return 2;
  }
  plan = nnp_plan_load (argv[2], &error);
  if (plan == NULL || !(model = nnp_model_load (argv[1], &error)))
    goto fail;
  shapes = nnp_plan_get_input_shapes (plan, &n_shapes);
  graph = nnp_model_specialize (model, shapes, n_shapes,
                                plan->no_fusion ? NNP_SPECIALIZE_NO_FUSION : NNP_SPECIALIZE_DEFAULT,
                                &error);
  if (graph == NULL || !nnp_plan_resolve (plan, graph, &error))
    goto fail;
  for (int k = 0; k < plan->n_stages; k++) {
    NnpStage *st = nnp_plan_stage_new (plan, k, graph, &error);
    g_autofree char *name = g_strdup_printf ("stage-%d", k);
    g_autofree char *dir = g_build_filename (argv[3], name, NULL);
    g_autofree char *io_path = g_build_filename (dir, "io.txt", NULL);
    g_autoptr (GString) io = g_string_new (NULL);
    GPtrArray *next = g_ptr_array_new_with_free_func ((GDestroyNotify) nnp_tensor_unref);
    gboolean ok = st != NULL;

    if (ok && k == 0) {
      cur = g_ptr_array_new_with_free_func ((GDestroyNotify) nnp_tensor_unref);
      for (int i = 0; i < nnp_stage_get_n_inputs (st); i++) {
        const NnpValue *v = nnp_stage_get_input (st, i);
        NnpTensor *t = nnp_tensor_new (v->dtype, &v->shape, &error);
        if (t == NULL) {
          ok = FALSE;
          break;
        }
        nnp_tensor_fill_pattern (t, (guint32) i);
        g_ptr_array_add (cur, t);
      }
    }
    for (int i = 0; ok && i < nnp_stage_get_n_outputs (st); i++) {
      NnpTensor *t = nnp_stage_new_output (st, i, &error);
      if (t == NULL)
        ok = FALSE;
      else
        g_ptr_array_add (next, t);
    }
    ok = ok && g_mkdir_with_parents (dir, 0755) == 0
         && nnp_stage_run (st, (NnpTensor *const *) cur->pdata, (NnpTensor *const *) next->pdata,
                           &error);
    for (int i = 0; ok && i < nnp_stage_get_n_inputs (st); i++)
      ok = write_tensor (io, dir, "in", i, nnp_stage_get_input (st, i), cur->pdata[i], &error);
    for (int i = 0; ok && i < nnp_stage_get_n_outputs (st); i++)
      ok = write_tensor (io, dir, "out", i, nnp_stage_get_output (st, i), next->pdata[i], &error);
    ok = ok && g_file_set_contents (io_path, io->str, io->len, &error);
    nnp_stage_free (st);
    if (cur)
      g_ptr_array_unref (cur);
    cur = next;
    if (!ok) {
      if (error == NULL)
        g_set_error (&error, NNP_ERROR, NNP_ERROR_FAILED, "stage %d failed", k);
      goto fail;
    }
    printf ("stage %d: %s\n", k, io_path);
  }
  g_ptr_array_unref (cur);
  nnp_plan_free (plan);
  return 0;

fail:
  fprintf (stderr, "stage-io: %s\n", error ? error->message : "failed");
  if (cur)
    g_ptr_array_unref (cur);
  nnp_plan_free (plan);
  return 1;
}
