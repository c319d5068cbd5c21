/* CPU backend: the kernel table, generated from op-list.h. */
#include "backends/cpu/cpu.h"
#include "backends/cpu/cpu-gemm.h"


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

/* One implementation for all kernels: the GEMM epilogue's (AVX2 when the
 * CPU has it, a scalar loop otherwise). */
void
nnp_cpu_apply_activation (float *x, gsize n, NnpActivation act, float alpha, float beta)
{
  nnp_sgemm_activate (x, n, act, alpha, beta);
}
