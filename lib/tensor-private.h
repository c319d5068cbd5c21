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

G_END_DECLS
