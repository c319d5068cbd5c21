/* GStreamer nnpipe plugin: nnconvert, video frames -> float32 tensors. */
#pragma once

#include <gst/gst.h>
#include <gst/base/gstbasetransform.h>
#include <gst/video/video.h>

G_BEGIN_DECLS

#define GST_TYPE_NN_CONVERT (gst_nn_convert_get_type ())
G_DECLARE_FINAL_TYPE (GstNnConvert, gst_nn_convert, GST, NN_CONVERT,
    GstBaseTransform)

#define GST_TYPE_NN_CONVERT_LAYOUT (gst_nn_convert_layout_get_type ())
#define GST_TYPE_NN_CONVERT_CHANNEL_ORDER \
  (gst_nn_convert_channel_order_get_type ())

/**
 * GstNnConvertLayout:
 * @GST_NN_CONVERT_LAYOUT_NCHW: planar, 1 x channels x height x width
 * @GST_NN_CONVERT_LAYOUT_NHWC: interleaved, 1 x height x width x channels
 *
 * Memory layout of the output tensor (ONNX dimension order).
 */
typedef enum
{
  GST_NN_CONVERT_LAYOUT_NCHW = 0,
  GST_NN_CONVERT_LAYOUT_NHWC = 1,
} GstNnConvertLayout;

/**
 * GstNnConvertChannelOrder:
 * @GST_NN_CONVERT_CHANNEL_ORDER_RGB: channel 0 is red
 * @GST_NN_CONVERT_CHANNEL_ORDER_BGR: channel 0 is blue (OpenCV-trained models)
 *
 * Order of the colour channels in the output tensor.
 */
typedef enum
{
  GST_NN_CONVERT_CHANNEL_ORDER_RGB = 0,
  GST_NN_CONVERT_CHANNEL_ORDER_BGR = 1,
} GstNnConvertChannelOrder;

GType gst_nn_convert_layout_get_type (void);
GType gst_nn_convert_channel_order_get_type (void);

GST_ELEMENT_REGISTER_DECLARE (nnconvert);

G_END_DECLS
