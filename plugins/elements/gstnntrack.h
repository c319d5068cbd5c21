/* GStreamer nnpipe plugin: nntrack, gives detections stable track ids
 * across frames (SORT or ByteTrack). */
#pragma once

#include <gst/gst.h>
#include <gst/base/gstbasetransform.h>

G_BEGIN_DECLS

#define GST_TYPE_NN_TRACK (gst_nn_track_get_type ())
G_DECLARE_FINAL_TYPE (GstNnTrack, gst_nn_track, GST, NN_TRACK, GstBaseTransform)

#define GST_TYPE_NN_TRACK_MODE (gst_nn_track_mode_get_type ())
GType gst_nn_track_mode_get_type (void);

GST_ELEMENT_REGISTER_DECLARE (nntrack);

G_END_DECLS
