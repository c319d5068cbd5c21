/* CPU kernels for the shape ops: STUB, to be implemented. */
#include "backends/cpu/cpu.h"

static gboolean
stub_run (const NnpCpuCall *call, GError **error)
{
  nnp_node_set_error (error, NNP_ERROR_UNSUPPORTED, call->node, "no CPU kernel yet");
  return FALSE;
}

const NnpCpuKernel nnp_cpu_constant = { .run = stub_run };
const NnpCpuKernel nnp_cpu_identity = { .run = stub_run };
const NnpCpuKernel nnp_cpu_dropout = { .run = stub_run };
const NnpCpuKernel nnp_cpu_shape = { .run = stub_run };
const NnpCpuKernel nnp_cpu_reshape = { .run = stub_run };
const NnpCpuKernel nnp_cpu_flatten = { .run = stub_run };
const NnpCpuKernel nnp_cpu_squeeze = { .run = stub_run };
const NnpCpuKernel nnp_cpu_unsqueeze = { .run = stub_run };
const NnpCpuKernel nnp_cpu_transpose = { .run = stub_run };
const NnpCpuKernel nnp_cpu_concat = { .run = stub_run };
const NnpCpuKernel nnp_cpu_split = { .run = stub_run };
const NnpCpuKernel nnp_cpu_slice = { .run = stub_run };
const NnpCpuKernel nnp_cpu_gather = { .run = stub_run };
const NnpCpuKernel nnp_cpu_expand = { .run = stub_run };
const NnpCpuKernel nnp_cpu_constant_of_shape = { .run = stub_run };
const NnpCpuKernel nnp_cpu_range = { .run = stub_run };
