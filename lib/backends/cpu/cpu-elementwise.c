/* CPU kernels for the elementwise ops: STUB, to be implemented. */
#include "backends/cpu/cpu.h"

static gboolean
stub_run (const NnpCpuCall *call, GError **error)
{
  nnp_node_set_error (error, NNP_ERROR_UNSUPPORTED, call->node, "no CPU kernel yet");
  return FALSE;
}

const NnpCpuKernel nnp_cpu_add = { .run = stub_run };
const NnpCpuKernel nnp_cpu_sub = { .run = stub_run };
const NnpCpuKernel nnp_cpu_mul = { .run = stub_run };
const NnpCpuKernel nnp_cpu_div = { .run = stub_run };
const NnpCpuKernel nnp_cpu_pow = { .run = stub_run };
const NnpCpuKernel nnp_cpu_max = { .run = stub_run };
const NnpCpuKernel nnp_cpu_min = { .run = stub_run };
const NnpCpuKernel nnp_cpu_sum = { .run = stub_run };
const NnpCpuKernel nnp_cpu_equal = { .run = stub_run };
const NnpCpuKernel nnp_cpu_less = { .run = stub_run };
const NnpCpuKernel nnp_cpu_greater = { .run = stub_run };
const NnpCpuKernel nnp_cpu_where = { .run = stub_run };
const NnpCpuKernel nnp_cpu_relu = { .run = stub_run };
const NnpCpuKernel nnp_cpu_leaky_relu = { .run = stub_run };
const NnpCpuKernel nnp_cpu_clip = { .run = stub_run };
const NnpCpuKernel nnp_cpu_hard_sigmoid = { .run = stub_run };
const NnpCpuKernel nnp_cpu_hard_swish = { .run = stub_run };
const NnpCpuKernel nnp_cpu_sigmoid = { .run = stub_run };
const NnpCpuKernel nnp_cpu_tanh = { .run = stub_run };
const NnpCpuKernel nnp_cpu_exp = { .run = stub_run };
const NnpCpuKernel nnp_cpu_log = { .run = stub_run };
const NnpCpuKernel nnp_cpu_erf = { .run = stub_run };
const NnpCpuKernel nnp_cpu_sqrt = { .run = stub_run };
const NnpCpuKernel nnp_cpu_reciprocal = { .run = stub_run };
const NnpCpuKernel nnp_cpu_neg = { .run = stub_run };
const NnpCpuKernel nnp_cpu_abs = { .run = stub_run };
const NnpCpuKernel nnp_cpu_floor = { .run = stub_run };
const NnpCpuKernel nnp_cpu_ceil = { .run = stub_run };
const NnpCpuKernel nnp_cpu_cast = { .run = stub_run };
