/* libnnpipe internal: tensors (lib/tensor.c), what the library and its
 * tests use beyond include/nnpipe/tensor.h. */
#pragma once

#include <nnpipe/tensor.h>

G_BEGIN_DECLS

/* Deep copy of a host tensor into new owned host storage (for any tensor:
 * nnp_tensor_new() + nnp_tensor_copy_into()). */
NnpTensor *nnp_tensor_copy (const NnpTensor *tensor);
/* TRUE when the tensor's storage is host memory (`data`). */
gboolean nnp_tensor_is_host (const NnpTensor *tensor);

/* TRUE for the 16-bit float types (float16, bfloat16): stored as 16 bits, computed in
 * float32 where an op has no 16-bit path (docs/tensor-caps.md "16-bit floats"). */
gboolean nnp_dtype_is_half (NnpDType dtype);
/* nnp_half_to_f32() / nnp_f32_to_half() for one known dtype (lib/half.c). */
void nnp_f16_to_f32 (const guint16 *src, float *dst, gsize n);
void nnp_f32_to_f16 (const float *src, guint16 *dst, gsize n);
void nnp_bf16_to_f32 (const guint16 *src, float *dst, gsize n);
void nnp_f32_to_bf16 (const float *src, guint16 *dst, gsize n);

G_END_DECLS
