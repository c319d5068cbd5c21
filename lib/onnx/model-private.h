/* libnnpipe internal: what the library and its tests read of a model
 * beyond include/nnpipe/model.h (lib/onnx/model.c, tensor-proto.c). */
#pragma once

#include <nnpipe/model.h>

G_BEGIN_DECLS

const char *nnp_model_get_producer (NnpModel *model); /* producer_name, may be "" */
int64_t nnp_model_get_ir_version (NnpModel *model);
/* Read one serialized ONNX TensorProto (a .pb file of the conformance suite). */
NnpTensor *nnp_tensor_from_onnx_bytes (const guint8 *data, gsize size, char **name_out,
                                       GError **error);

/* Parse a model from memory (not cached).  `name` is used in messages. */
NnpModel *nnp_model_load_from_bytes (const guint8 *data, gsize size, const char *name,
                                     GError **error);

G_END_DECLS
