/* GStreamer nnpipe plugin: nnpipeline, a bin that runs one ONNX model as a
 * pipeline of nnstage elements (one per stage of a plan) joined by queues. */
#pragma once

#include <gst/gst.h>

G_BEGIN_DECLS

#define GST_TYPE_NN_PIPELINE (gst_nn_pipeline_get_type ())
G_DECLARE_FINAL_TYPE (GstNnPipeline, gst_nn_pipeline, GST, NN_PIPELINE, GstBin)

GST_ELEMENT_REGISTER_DECLARE (nnpipeline);

G_END_DECLS
