/* OpenCL backend: the quantisation ops have no OpenCL kernel; the
 * partitioner places them on the CPU (lib/backends/cpu/cpu-quant.c,
 * cpu-qconv.c). */
#include "backends/opencl/ocl-ops.h"

const NnpOclKernel nnp_ocl_kernel_quantize_linear = { NULL };
const NnpOclKernel nnp_ocl_kernel_dequantize_linear = { NULL };
const NnpOclKernel nnp_ocl_kernel_dynamic_quantize_linear = { NULL };
const NnpOclKernel nnp_ocl_kernel_conv_integer = { NULL };
const NnpOclKernel nnp_ocl_kernel_mat_mul_integer = { NULL };
const NnpOclKernel nnp_ocl_kernel_qlinear_conv = { NULL };
const NnpOclKernel nnp_ocl_kernel_qlinear_mat_mul = { NULL };
const NnpOclKernel nnp_ocl_kernel_conv_integer_to_float = { NULL };
const NnpOclKernel nnp_ocl_kernel_mat_mul_integer_to_float = { NULL };
