/* OpenCL backend: launch code of Conv and ConvTranspose (kernels/conv.cl).
 * As lib/backends/cpu/cpu-conv.c and cpu-conv-transpose.c (one launch code
 * serves both here). */
#include "backends/opencl/ocl-ops.h"
#include "ops/conv-params.h"

/* Host mirror of the kernels' ConvP (4-byte fields only). */
typedef struct {
  cl_int n, c, m, g;
  cl_int ih, iw, oh, ow;
  cl_int kh, kw, sh, sw, dh, dw, ph, pw;
  cl_int has_bias, is_1x1;
} ConvArg;

/* ------------------------------------------------------------------ */
/* Conv / ConvTranspose */

static gboolean
conv_supports (const NnpGraph *graph, const NnpNode *node, char **why)
{
  const NnpConvParams *p = node->params;

  if (!nnp_ocl_float_io (graph, node, why))
    return FALSE;
  if (p == NULL || p->n_spatial > 2)
    return nnp_ocl_reject (why, node, "3-D convolution");
  return TRUE;
}

static void
fill_conv (ConvArg *c, const NnpConvParams *p)
{
  c->n = (cl_int) p->batch;
  c->c = (cl_int) p->in_channels;
  c->m = (cl_int) p->out_channels;
  c->g = (cl_int) p->group;
  c->ih = (cl_int) p->in_dims[1];
  c->iw = (cl_int) p->in_dims[2];
  c->oh = (cl_int) p->out_dims[1];
  c->ow = (cl_int) p->out_dims[2];
  c->kh = (cl_int) p->kernel[1];
  c->kw = (cl_int) p->kernel[2];
  c->sh = (cl_int) p->strides[1];
  c->sw = (cl_int) p->strides[2];
  c->dh = (cl_int) p->dilations[1];
  c->dw = (cl_int) p->dilations[2];
  c->ph = (cl_int) p->pads_begin[1];
  c->pw = (cl_int) p->pads_begin[2];
  c->has_bias = p->has_bias;
  c->is_1x1 = c->kh == 1 && c->kw == 1 && c->sh == 1 && c->sw == 1 && c->ph == 0 && c->pw == 0
              && p->pads_end[1] == 0 && p->pads_end[2] == 0 && c->oh == c->ih && c->ow == c->iw;
}

typedef struct {
  NnpOclState base;
  gboolean tiled; /* conv_gemm (k[1]) rather than conv_direct (k[0]) */
  ConvArg conv;
} ConvState;

static gpointer
conv_prepare (NnpOclDevice *dev, const NnpGraph *graph, const NnpNode *node, GError **error)
{
  const NnpConvParams *p = node->params;
  ConvState *s;

  if (node->op == NNP_OP_CONV_TRANSPOSE) {
    s = nnp_ocl_state_new (dev, node, sizeof (ConvState), "conv.cl", "conv_transpose", NULL, error);
  } else {
    s = nnp_ocl_state_new (dev, node, sizeof (ConvState), "conv.cl", "conv_direct", "conv_gemm",
                           error);
    if (s && p->out_channels / p->group >= 4 && nnp_ocl_work_group_max (dev, s->base.k[1]) >= 64)
      s->tiled = TRUE;
  }
  if (s)
    fill_conv (&s->conv, p);
  return s;
}

static gboolean
conv_run (const NnpOclCall *call, GError **error)
{
  ConvState *s = call->state;
  const ConvArg *c = &s->conv;
  NnpOclMem no_bias = call->in[0];
  const NnpOclMem *bias = call->node->n_inputs > 2 && call->in[2].mem ? &call->in[2] : &no_bias;
  NnpOclArgs a = { s->tiled ? s->base.k[1] : s->base.k[0], 0, CL_SUCCESS };

  nnp_ocl_arg_mem (&a, &call->in[0], 4);
  nnp_ocl_arg_mem (&a, &call->in[1], 4);
  nnp_ocl_arg_mem (&a, bias, 4);
  nnp_ocl_arg_mem (&a, &call->out[0], 4);
  nnp_ocl_arg_raw (&a, sizeof (ConvArg), c);
  nnp_ocl_arg_raw (&a, sizeof (NnpOclActArg), &s->base.act);
  if (s->tiled) {
    size_t np = (size_t) c->oh * c->ow, mg = (size_t) (c->m / c->g);
    size_t global[3] = { (np + NNP_OCL_TILE - 1) / NNP_OCL_TILE * NNP_OCL_TILE_LOCAL,
                         (mg + NNP_OCL_TILE - 1) / NNP_OCL_TILE * NNP_OCL_TILE_LOCAL,
                         (size_t) c->n * c->g };
    size_t local[3] = { NNP_OCL_TILE_LOCAL, NNP_OCL_TILE_LOCAL, 1 };
    return nnp_ocl_launch (call, &a, 3, global, local, error);
  }
  return nnp_ocl_launch_1d (call, &a, (size_t) c->n * c->m * c->oh * c->ow, error);
}

#define CONV_KERNEL \
  { \
    .supports = conv_supports, .prepare = conv_prepare, .run = conv_run, \
    .free_state = nnp_ocl_state_free \
  }

const NnpOclKernel nnp_ocl_kernel_conv = CONV_KERNEL;
const NnpOclKernel nnp_ocl_kernel_conv_transpose = CONV_KERNEL;
