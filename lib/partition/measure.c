/* Timing the whole model two ways (issue 13 item 2): as one CPU stage of
 * many intra-op threads, or as copies of a stage of fewer threads running
 * frames at once (frame-level parallelism, no per-layer barrier).  The
 * replica search (replicas-search.c) calls it to choose between plain
 * threading and whole-model replicas by measured throughput. */
#include <nnpipe/plan.h>
#include <nnpipe/stage.h>

#include "partition/partition.h"
#include <nnpipe/device.h>

typedef struct {
  NnpStage *stage;
  GPtrArray *in, *out; /* NnpTensor* (owned) */
  int frames;
  GError *error;
} Runner;

static gpointer
run_frames (gpointer data)
{
  Runner *r = data;

  for (int i = 0; i < r->frames && r->error == NULL; i++)
    nnp_stage_run (r->stage, (NnpTensor *const *) r->in->pdata, (NnpTensor *const *) r->out->pdata,
                   &r->error);
  return NULL;
}

static void
runner_clear (Runner *r)
{
  g_clear_pointer (&r->in, g_ptr_array_unref);
  g_clear_pointer (&r->out, g_ptr_array_unref);
  g_clear_pointer (&r->stage, nnp_stage_free);
  g_clear_error (&r->error);
}

/* A stage of the whole graph with its tensors, run once (warm-up). */
static gboolean
runner_init (Runner *r, NnpGraph *graph, const NnpDeviceSpec *dev, int frames, GError **error)
{
  NnpStageOptions o = { 0 };

  o.device = dev->device;
  o.threads = MAX (dev->threads, 1);
  r->frames = frames;
  r->in = g_ptr_array_new_with_free_func ((GDestroyNotify) nnp_tensor_unref);
  r->out = g_ptr_array_new_with_free_func ((GDestroyNotify) nnp_tensor_unref);
  r->stage = nnp_stage_new (graph, NULL, 0, &o, error);
  if (r->stage == NULL)
    return FALSE;
  for (int i = 0; i < nnp_stage_get_n_inputs (r->stage); i++) {
    const NnpValue *v = nnp_stage_get_input (r->stage, i);
    NnpTensor *t = nnp_tensor_new (v->dtype, &v->shape, error);

    if (t == NULL)
      return FALSE;
    nnp_tensor_fill_pattern (t, (guint32) i);
    g_ptr_array_add (r->in, t);
  }
  for (int i = 0; i < nnp_stage_get_n_outputs (r->stage); i++) {
    NnpTensor *t = nnp_stage_new_output (r->stage, i, error);

    if (t == NULL)
      return FALSE;
    g_ptr_array_add (r->out, t);
  }
  return nnp_stage_run (r->stage, (NnpTensor *const *) r->in->pdata,
                        (NnpTensor *const *) r->out->pdata, error);
}

double
nnp_measure_whole_fps (NnpGraph *graph, const NnpDeviceSpec *dev, int copies, int frames,
                       GError **error)
{
  Runner *r = g_new0 (Runner, copies);
  GThread **threads = g_new0 (GThread *, copies);
  double fps = 0;
  gint64 t0;

  g_return_val_if_fail (graph != NULL && dev != NULL && copies >= 1 && frames >= 1, 0);
  for (int k = 0; k < copies; k++)
    if (!runner_init (&r[k], graph, dev, frames, error))
      goto out;
  t0 = g_get_monotonic_time ();
  for (int k = 0; k < copies; k++)
    threads[k] = g_thread_new ("nnp-measure", run_frames, &r[k]);
  for (int k = 0; k < copies; k++)
    g_thread_join (threads[k]);
  for (int k = 0; k < copies; k++)
    if (r[k].error) {
      g_propagate_error (error, g_steal_pointer (&r[k].error));
      goto out;
    }
  fps = (double) copies * frames * G_USEC_PER_SEC / MAX (g_get_monotonic_time () - t0, 1);
out:
  for (int k = 0; k < copies; k++)
    runner_clear (&r[k]);
  g_free (r);
  g_free (threads);
  return fps;
}
