/* libnnpipe (internal): ONNX ModelProto / TensorProto -> NnpGraph / NnpTensor.
 *
 * The parsers here set errors WITHOUT the model name; lib/onnx/model.c adds
 * "<model name>: " in front of every message. */
#pragma once

#include <nnpipe/graph.h>

G_BEGIN_DECLS

typedef struct {
  int64_t ir_version;
  char *producer;     /* producer_name, "" when absent (owned) */
  int opset;          /* default-domain opset version */
} NnpOnnxModelInfo;

void nnp_onnx_model_info_clear (NnpOnnxModelInfo *info);

/* Parse a serialized ModelProto into a new, sorted graph (caller owns the
 * reference) and fill *info (caller clears it, also on failure).  The graph
 * keeps no pointer into data: weights are copied into NnpTensors. */
NnpGraph *nnp_onnx_parse_model (const guint8 *data, gsize size, const char *graph_name,
                                NnpOnnxModelInfo *info, GError **error);

G_END_DECLS
