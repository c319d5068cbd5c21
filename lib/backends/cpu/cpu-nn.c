/* CPU kernels for the nn ops: STUB, to be implemented. */
#include "backends/cpu/cpu.h"

static gboolean
stub_run (const NnpCpuCall *call, GError **error)
{
  nnp_node_set_error (error, NNP_ERROR_UNSUPPORTED, call->node, "no CPU kernel yet");
  return FALSE;
}

const NnpCpuKernel nnp_cpu_batch_normalization = { .run = stub_run };
const NnpCpuKernel nnp_cpu_max_pool = { .run = stub_run };
const NnpCpuKernel nnp_cpu_average_pool = { .run = stub_run };
const NnpCpuKernel nnp_cpu_global_average_pool = { .run = stub_run };
const NnpCpuKernel nnp_cpu_global_max_pool = { .run = stub_run };
const NnpCpuKernel nnp_cpu_softmax = { .run = stub_run };
const NnpCpuKernel nnp_cpu_log_softmax = { .run = stub_run };
const NnpCpuKernel nnp_cpu_resize = { .run = stub_run };
const NnpCpuKernel nnp_cpu_pad = { .run = stub_run };
const NnpCpuKernel nnp_cpu_reduce_mean = { .run = stub_run };
const NnpCpuKernel nnp_cpu_reduce_sum = { .run = stub_run };
const NnpCpuKernel nnp_cpu_reduce_max = { .run = stub_run };
const NnpCpuKernel nnp_cpu_reduce_min = { .run = stub_run };
const NnpCpuKernel nnp_cpu_arg_max = { .run = stub_run };
