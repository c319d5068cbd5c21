/* GStreamer nnpipe plugin: GstNnDecoder, the base class of the decoders.
 *
 * A decoder takes a model's output tensors (other/tensors) that carry the
 * original video frame in a #GstNnFrameMeta (nnconvert keep-frame=true, or
 * one tensor per region from nncrop), turns the tensors into results on
 * that frame (region-of-interest metas and their parameter structures) and
 * pushes the frame: video in -> tensors -> decoder -> the same frame with
 * results.  nndbdecode, nnctcdecode and nnclassdecode are subclasses; a new
 * decoder (detection boxes, keypoints, masks) is one too, and writes only
 * what is its own:
 *
 *   - set_info(): the caps' tensors, at negotiation (check them, size the
 *     state); gst_nn_decoder_expect_one_float32() covers the usual "one
 *     float32 tensor of rank r" check with a clear error.
 *   - decode(): one input buffer, mapped: add metas to frame->frame.
 *   - finish(): optional, the frame is complete (all its regions read):
 *     post the element message, write the `location` lines.
 *   - start() / stop(): optional, READY <-> PAUSED.
 *
 * The base class owns the rest of the skeleton: the sink pad (tensors) and
 * source pad (video/x-raw, caps from the frame's GstVideoInfo, sent before
 * the first frame, the segment held back until then), the caps parsing,
 * the frame meta checks ("buffer before caps", "no frame meta"), mapping
 * the tensors (host pointers, sizes checked against the caps), assembling
 * a frame from per-region tensors (pushed when its last region arrived,
 * when the next frame starts, or at EOS), flushes, the `location` property
 * (a results file, "-" for standard output) and forgetting all stream
 * state on PAUSED -> READY.  Every input buffer of a whole frame gives one
 * output frame; a frame cut into n regions gives one frame after n
 * buffers, a frame without regions (nncrop's placeholder, n_rois == 0)
 * goes straight through.
 *
 * Threading: decode(), finish(), set_info() run on the streaming thread;
 * start() and stop() on the state-change thread.  Properties of the
 * subclass are read under the object lock as usual. */
#pragma once

#include <gst/gst.h>
#include <gst/video/video.h>

#include <stdio.h>

#include "gstnnframemeta.h"
#include "gstnntensorcaps.h"

G_BEGIN_DECLS

#define GST_TYPE_NN_DECODER (gst_nn_decoder_get_type ())
G_DECLARE_DERIVABLE_TYPE (GstNnDecoder, gst_nn_decoder, GST, NN_DECODER,
    GstElement)

/**
 * GstNnDecoderFrame:
 * @frame: the original frame the results go on: writable, owned by the
 *   base class (add metas to it; do not unref it)
 * @info: the frame's video info
 * @whole: TRUE when the tensors stand for the whole frame, FALSE when they
 *   are one of the frame's regions (nncrop)
 * @roi_id: the region's ROI id (-1 for a whole frame)
 * @roi_index: the region's index among the frame's regions (-1: whole)
 * @n_rois: the number of regions of the frame (-1: whole)
 * @roi: region mode: the frame's #GstVideoRegionOfInterestMeta with id
 *   @roi_id, NULL when the frame has none (a whole frame: always NULL);
 *   owned by @frame
 * @tensors: the input buffer, for its other metas (#GstNnTransformMeta);
 *   owned by the base class
 * @tensors_info: the caps' tensors (types and shapes)
 * @data: host pointer of each tensor, mapped for reading (valid during
 *   decode() only; each holds at least the caps' size of its tensor)
 *
 * What decode() gets for one input buffer.
 */
typedef struct
{
  GstBuffer *frame;
  GstVideoInfo info;
  gboolean whole;
  gint roi_id, roi_index, n_rois;
  GstVideoRegionOfInterestMeta *roi;
  GstBuffer *tensors;
  const GstNnTensorsInfo *tensors_info;
  const guint8 *data[GST_NN_TENSORS_MAX];
} GstNnDecoderFrame;

/**
 * GstNnDecoderClass:
 * @set_info: the sink caps' tensors, at negotiation.  Return FALSE after
 *   posting a NEGOTIATION error naming what was expected (the caps are
 *   refused).  Required.
 * @decode: decode one input buffer into results on @frame->frame.  Return
 *   GST_FLOW_OK, or an error flow after posting an element error.
 *   Required.
 * @finish: the frame is complete and about to be pushed (whole: it came
 *   from one buffer): post the element message, write the result lines.
 *   Optional.
 * @start: READY -> PAUSED, after the `location` file is open: check the
 *   properties (FALSE after posting an error fails the state change).
 *   Optional.
 * @stop: PAUSED -> READY: forget the subclass's stream state.  Optional.
 */
struct _GstNnDecoderClass
{
  GstElementClass parent_class;

  gboolean (*set_info) (GstNnDecoder *decoder, const GstNnTensorsInfo *info);
  GstFlowReturn (*decode) (GstNnDecoder *decoder, GstNnDecoderFrame *frame);
  void (*finish) (GstNnDecoder *decoder, GstBuffer *frame, gboolean whole);
  gboolean (*start) (GstNnDecoder *decoder);
  void (*stop) (GstNnDecoder *decoder);

  gpointer _gst_reserved[GST_PADDING];
};

/* The usual check of set_info(): one float32 tensor of rank min_rank to
 * max_rank whose dims before the last min_rank are 1 (a batch of one).
 * FALSE after posting a NEGOTIATION error "expected <expected>, got <the
 * caps' tensors>" on the decoder. */
gboolean gst_nn_decoder_expect_one_float32 (GstNnDecoder *decoder,
    const GstNnTensorsInfo *info, gint min_rank, gint max_rank,
    const gchar *expected);

/* The `location` results file while PAUSED or PLAYING (NULL when unset):
 * owned by the decoder.  gst_nn_decoder_write_results() writes and flushes
 * text to it (nothing when unset). */
FILE *gst_nn_decoder_get_results_file (GstNnDecoder *decoder);
void gst_nn_decoder_write_results (GstNnDecoder *decoder, const gchar *text);

/* Post an element message with structure @s (takes ownership). */
void gst_nn_decoder_post (GstNnDecoder *decoder, GstStructure *s);

/**
 * GstNnFrameMapping:
 *
 * How a point of a W x H output map (a detector's map or grid, in its own
 * pixels) maps onto the original frame: through nnconvert's
 * #GstNnTransformMeta on the input buffer (letterbox scale, offset and
 * padding), or a plain stretch of the map onto the frame without one.
 * @content_width x @content_height is the part of the map that holds image
 * data (the rest, right and bottom, is nnconvert's padding).
 */
typedef struct
{
  gdouble scale_x, scale_y;   /* map pixels per frame pixel */
  gdouble offset_x, offset_y; /* map position of frame (0, 0) */
  gint content_width, content_height;
  gint frame_width, frame_height;
} GstNnFrameMapping;

void gst_nn_frame_mapping_init (GstNnFrameMapping *m,
    const GstNnDecoderFrame *frame, gint map_width, gint map_height);
/* Map (x, y) from map pixels to frame pixels, clamped to the frame. */
void gst_nn_frame_mapping_to_frame (const GstNnFrameMapping *m, gdouble *x,
    gdouble *y);

G_END_DECLS
