/* CPU kernels for the conv ops: STUB, to be implemented. */
#include "backends/cpu/cpu.h"

static gboolean
stub_run (const NnpCpuCall *call, GError **error)
{
  nnp_node_set_error (error, NNP_ERROR_UNSUPPORTED, call->node, "no CPU kernel yet");
  return FALSE;
}

const NnpCpuKernel nnp_cpu_conv = { .run = stub_run };
const NnpCpuKernel nnp_cpu_conv_transpose = { .run = stub_run };
const NnpCpuKernel nnp_cpu_mat_mul = { .run = stub_run };
const NnpCpuKernel nnp_cpu_gemm = { .run = stub_run };
