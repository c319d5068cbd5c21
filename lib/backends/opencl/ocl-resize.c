/* OpenCL backend: launch code of Resize (kernels/nn.cl).  As
 * lib/backends/cpu/cpu-resize.c. */
#include "backends/opencl/ocl-ops.h"
#include "ops/nn-params.h"

/* Host mirror of the kernels' ResizeP (4-byte fields only). */
typedef struct {
  cl_int rank;
  cl_int in[NNP_OCL_MAX_RANK], out[NNP_OCL_MAX_RANK], taps[NNP_OCL_MAX_RANK];
  cl_int tab_off[NNP_OCL_MAX_RANK];
  cl_int n_out;
  cl_float extrapolation;
} ResizeArg;

/* ------------------------------------------------------------------ */
/* Resize: per-axis tap tables built here, gathered by resize_f32 */

/* Taps of one output coordinate: nearest (1 tap), linear (2), cubic (4), from
 * the coordinate mapping shared with the CPU kernel (lib/ops/resize-coords.c). */
static void
resize_taps (const NnpResizeParams *p, int k, double xo, int taps, cl_int *idx, cl_float *w)
{
  int64_t i64[4];
  float f[4];

  if (taps == 1) {
    idx[0] = (cl_int) nnp_resize_nearest_index (p, k, xo);
    w[0] = 1.f;
    return;
  }
  nnp_resize_interp_taps (p, k, xo, taps, i64, f);
  for (int t = 0; t < taps; t++) {
    idx[t] = (cl_int) i64[t];
    w[t] = f[t];
  }
}

static gboolean
resize_supports (const NnpGraph *graph, const NnpNode *node, char **why)
{
  const NnpResizeParams *p = node->params;

  if (p == NULL || p->dtype != NNP_DTYPE_FLOAT32
      || nnp_ocl_in_dtype (graph, node, 0) != NNP_DTYPE_FLOAT32)
    return nnp_ocl_reject (why, node, "only float32 on OpenCL");
  if (p->rank > NNP_OCL_MAX_RANK)
    return nnp_ocl_reject (why, node, "rank too large");
  return nnp_ocl_no_act (node, why);
}

/* tables[0]: tap indices (cl_int), tables[1]: tap weights (cl_float) */
typedef struct {
  NnpOclState base;
  ResizeArg resize;
} ResizeState;

static gpointer
resize_prepare (NnpOclDevice *dev, const NnpGraph *graph, const NnpNode *node, GError **error)
{
  const NnpResizeParams *p = node->params;
  ResizeState *s =
      nnp_ocl_state_new (dev, node, sizeof (ResizeState), "nn.cl", "resize_f32", NULL, error);
  int taps = p->mode == NNP_RESIZE_NEAREST ? 1 : p->mode == NNP_RESIZE_LINEAR ? 2 : 4;
  ResizeArg *r;
  cl_mem *tab;
  GArray *idx, *w;
  int64_t n_out = 1;

  if (s == NULL)
    return NULL;
  r = &s->resize;
  r->rank = p->rank;
  r->extrapolation = p->extrapolation_value;
  idx = g_array_new (FALSE, FALSE, sizeof (cl_int));
  w = g_array_new (FALSE, FALSE, sizeof (cl_float));
  for (int k = 0; k < p->rank; k++) {
    guint start = idx->len;
    gboolean identity = p->in[k] == p->out[k];

    r->in[k] = (cl_int) p->in[k];
    r->out[k] = (cl_int) p->out[k];
    r->taps[k] = taps;
    r->tab_off[k] = (cl_int) start;
    n_out *= p->out[k];
    g_array_set_size (idx, start + p->out[k] * taps);
    g_array_set_size (w, start + p->out[k] * taps);
    for (int64_t x = 0; x < p->out[k]; x++) {
      gboolean outside;
      double xo = nnp_resize_map_coord (p, k, x, &outside);
      cl_int *ix = &g_array_index (idx, cl_int, start + x * taps);
      cl_float *wx = &g_array_index (w, cl_float, start + x * taps);
      resize_taps (p, k, xo, taps, ix, wx);
      if (outside) {
        ix[0] = -1;
        identity = FALSE;
      }
      /* identity axis: all weight on x itself */
      for (int t = 0; t < taps && identity; t++)
        if (wx[t] != 0.f && ix[t] != x)
          identity = FALSE;
      if (identity) {
        float sum = 0.f;
        for (int t = 0; t < taps; t++)
          sum += ix[t] == x ? wx[t] : 0.f;
        identity = sum == 1.f;
      }
    }
    if (identity && taps > 1) {
      /* one tap per coordinate */
      for (int64_t x = 0; x < p->out[k]; x++) {
        g_array_index (idx, cl_int, start + x) = (cl_int) x;
        g_array_index (w, cl_float, start + x) = 1.f;
      }
      g_array_set_size (idx, start + p->out[k]);
      g_array_set_size (w, start + p->out[k]);
      r->taps[k] = 1;
    }
  }
  r->n_out = (cl_int) n_out;
  tab = s->base.tables;
  tab[0] = nnp_ocl_alloc (dev, MAX (idx->len, 1) * sizeof (cl_int), "a resize table", error);
  tab[1] = tab[0]
               ? nnp_ocl_alloc (dev, MAX (w->len, 1) * sizeof (cl_float), "a resize table", error)
               : NULL;
  if (tab[1] == NULL
      || !nnp_ocl_write (dev, tab[0], 0, idx->data, idx->len * sizeof (cl_int), FALSE, error)
      || !nnp_ocl_write (dev, tab[1], 0, w->data, w->len * sizeof (cl_float), FALSE, error)) {
    nnp_ocl_state_free (s);
    s = NULL;
  }
  g_array_free (idx, TRUE);
  g_array_free (w, TRUE);
  return s;
}

static gboolean
resize_run (const NnpOclCall *call, GError **error)
{
  ResizeState *s = call->state;
  NnpOclArgs a = { s->base.k[0], 0, CL_SUCCESS };

  nnp_ocl_arg_mem (&a, &call->in[0], 4);
  nnp_ocl_arg_mem (&a, &call->out[0], 4);
  nnp_ocl_arg_raw (&a, sizeof (cl_mem), &s->base.tables[0]);
  nnp_ocl_arg_raw (&a, sizeof (cl_mem), &s->base.tables[1]);
  nnp_ocl_arg_raw (&a, sizeof (ResizeArg), &s->resize);
  return nnp_ocl_launch_1d (call, &a, (size_t) s->resize.n_out, error);
}

const NnpOclKernel nnp_ocl_kernel_resize = {
  .supports = resize_supports,
  .prepare = resize_prepare,
  .run = resize_run,
  .free_state = nnp_ocl_state_free,
};

/* Upsample (opsets 7 to 9) is Resize 10 (ops-nn.c) */
const NnpOclKernel nnp_ocl_kernel_upsample = {
  .supports = resize_supports,
  .prepare = resize_prepare,
  .run = resize_run,
  .free_state = nnp_ocl_state_free,
};
