/* OpenCL backend: the ops without an OpenCL kernel (an empty entry: prepare
 * NULL, see ocl-ops.h).  nnp_ocl_supports_node() refuses them with "no
 * OpenCL kernel" and the partitioner keeps them on the CPU. */
#include "backends/opencl/ocl-ops.h"

#define CPU_ONLY(id) const NnpOclKernel nnp_ocl_kernel_##id = { NULL };

/* math ops (lib/ops/ops-math.c) */
CPU_ONLY (cos)
CPU_ONLY (sin)
CPU_ONLY (tan)
CPU_ONLY (acos)
CPU_ONLY (asin)
CPU_ONLY (atan)
CPU_ONLY (cosh)
CPU_ONLY (sinh)
CPU_ONLY (acosh)
CPU_ONLY (asinh)
CPU_ONLY (atanh)
CPU_ONLY (softplus)
CPU_ONLY (softsign)
CPU_ONLY (elu)
CPU_ONLY (selu)
CPU_ONLY (celu)
CPU_ONLY (thresholded_relu)
CPU_ONLY (shrink)
CPU_ONLY (mish)
CPU_ONLY (gelu)
CPU_ONLY (round)
CPU_ONLY (sign)
CPU_ONLY (is_nan)
CPU_ONLY (is_inf)
CPU_ONLY (not )
CPU_ONLY (bitwise_not)
CPU_ONLY (and)
CPU_ONLY (or)
CPU_ONLY (xor)
CPU_ONLY (bitwise_and)
CPU_ONLY (bitwise_or)
CPU_ONLY (bitwise_xor)
CPU_ONLY (bit_shift)
CPU_ONLY (mod)
CPU_ONLY (greater_or_equal)
CPU_ONLY (less_or_equal)
CPU_ONLY (prelu)
CPU_ONLY (mean)

/* more reductions (lib/ops/ops-reduce.c) */
CPU_ONLY (reduce_l1)
CPU_ONLY (reduce_l2)
CPU_ONLY (reduce_log_sum)
CPU_ONLY (reduce_log_sum_exp)
CPU_ONLY (reduce_prod)
CPU_ONLY (reduce_sum_square)
CPU_ONLY (arg_min)

/* indexing ops (lib/ops/ops-index.c) */
CPU_ONLY (gather_elements)
CPU_ONLY (scatter_elements)
CPU_ONLY (scatter)
CPU_ONLY (gather_nd)
CPU_ONLY (scatter_nd)
CPU_ONLY (trilu)
CPU_ONLY (cum_sum)
CPU_ONLY (hardmax)
CPU_ONLY (eye_like)
CPU_ONLY (one_hot)
CPU_ONLY (depth_to_space)
CPU_ONLY (space_to_depth)
CPU_ONLY (tile)
CPU_ONLY (reverse_sequence)
CPU_ONLY (size)
CPU_ONLY (cast_like)

/* normalisation and loss ops (lib/ops/ops-norm.c) */
CPU_ONLY (layer_normalization)
CPU_ONLY (instance_normalization)
CPU_ONLY (group_normalization)
CPU_ONLY (mean_variance_normalization)
CPU_ONLY (lrn)
CPU_ONLY (lp_normalization)
CPU_ONLY (negative_log_likelihood_loss)
CPU_ONLY (softmax_cross_entropy_loss)

/* recurrent ops (lib/ops/ops-rnn.c) */
CPU_ONLY (rnn)
CPU_ONLY (gru)
CPU_ONLY (lstm)

/* selection ops (lib/ops/ops-select.c) */
CPU_ONLY (top_k)
CPU_ONLY (compress)
CPU_ONLY (non_zero)
CPU_ONLY (unique)
CPU_ONLY (non_max_suppression)

/* signal ops (lib/ops/ops-signal.c) */
CPU_ONLY (hann_window)
CPU_ONLY (hamming_window)
CPU_ONLY (blackman_window)
CPU_ONLY (dft)

/* sampling ops (lib/ops/ops-sample.c) */
CPU_ONLY (grid_sample)
CPU_ONLY (roi_align)
CPU_ONLY (max_unpool)

/* linear algebra (lib/ops/ops-linalg.c) */
CPU_ONLY (einsum)
CPU_ONLY (det)

/* control flow (lib/ops/ops-control.c) */
CPU_ONLY (if)
CPU_ONLY (loop)
CPU_ONLY (scan)
