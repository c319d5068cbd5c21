/* libnnpipe (internal): ONNX ModelProto / TensorProto -> NnpGraph / NnpTensor.
 *
 * The parsers here set errors WITHOUT the model name; lib/onnx/model.c adds
 * "<model name>: " in front of every message. */
#pragma once

#include <nnpipe/graph.h>
#include "onnx/wire.h"

G_BEGIN_DECLS

typedef struct {
  int64_t ir_version;
  char *producer; /* producer_name, "" when absent (owned) */
  int opset;      /* default-domain opset version */
} NnpOnnxModelInfo;

void nnp_onnx_model_info_clear (NnpOnnxModelInfo *info);

/* Parse a serialized ModelProto into a new, sorted graph (caller owns the
 * reference) and fill *info (caller clears it, also on failure).  The graph
 * keeps no pointer into data: weights are copied into NnpTensors. */
NnpGraph *nnp_onnx_parse_model (const guint8 *data, gsize size, const char *graph_name,
                                NnpOnnxModelInfo *info, GError **error);

/* TensorProto (tensor-proto.c).  Parse the TensorProto in `msg` (a LEN field
 * read from parent).  With placeholder_ok, a tensor of a dtype nnpipe cannot
 * hold (string, complex...) becomes a data-less placeholder carrying that
 * dtype code (ops reject it when used); otherwise that is
 * NNP_ERROR_UNSUPPORTED.  *name_out (may be NULL) receives the tensor's name
 * (owned).  `what` names the tensor in errors. */
NnpTensor *nnp_onnx_parse_tensor (const NnpWireReader *parent, const NnpWireField *msg,
                                  gboolean placeholder_ok, const char *what, char **name_out,
                                  GError **error);
/* ONNX data type names ("float32", "bfloat16", ...), also for the codes
 * NnpDType does not cover; "unknown" past the table. */
const char *nnp_onnx_dtype_name (int64_t code);


G_END_DECLS
