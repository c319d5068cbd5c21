/* CPU backend: the kernel table, generated from op-list.h. */
#include "backends/cpu/cpu.h"

#include <math.h>

static const NnpCpuKernel *const cpu_kernels[] = {
#define NNP_OP(ID, id, onnx, ...) [NNP_OP_##ID] = &nnp_cpu_##id,
#include <nnpipe/op-list.h>
#undef NNP_OP
};
G_STATIC_ASSERT (G_N_ELEMENTS (cpu_kernels) == NNP_OP_COUNT);

const NnpCpuKernel *
nnp_cpu_kernel (NnpOpType op)
{
  if ((int) op < 0 || op >= NNP_OP_COUNT)
    return NULL;
  return cpu_kernels[op];
}

void
nnp_cpu_apply_activation (float *x, gsize n, NnpActivation act, float alpha, float beta)
{
  switch (act) {
    case NNP_ACT_NONE:
      break;
    case NNP_ACT_RELU:
      for (gsize i = 0; i < n; i++)
        x[i] = x[i] > 0.f ? x[i] : 0.f;
      break;
    case NNP_ACT_CLIP:
      for (gsize i = 0; i < n; i++)
        x[i] = x[i] < alpha ? alpha : (x[i] > beta ? beta : x[i]);
      break;
    case NNP_ACT_LEAKY_RELU:
      for (gsize i = 0; i < n; i++)
        x[i] = x[i] < 0.f ? alpha * x[i] : x[i];
      break;
    case NNP_ACT_HARD_SIGMOID:
      for (gsize i = 0; i < n; i++) {
        float v = alpha * x[i] + beta;
        x[i] = v < 0.f ? 0.f : (v > 1.f ? 1.f : v);
      }
      break;
    case NNP_ACT_HARD_SWISH:
      for (gsize i = 0; i < n; i++) {
        float v = x[i] * (1.f / 6.f) + 0.5f;
        x[i] = x[i] * (v < 0.f ? 0.f : (v > 1.f ? 1.f : v));
      }
      break;
    case NNP_ACT_SIGMOID:
      for (gsize i = 0; i < n; i++)
        x[i] = 1.f / (1.f + expf (-x[i]));
      break;
  }
}
