/* Helpers of the post-processing element tests (test-post.c: the OCR
 * decoders; test-post-output.c: nnoverlay, nnmetapublish). */
#pragma once

#include <gst/gst.h>
#include <gst/video/video.h>

G_BEGIN_DECLS

/* A w x h RGB frame with every byte `value`; *info describes it. */
GstBuffer *make_rgb_frame (GstVideoInfo *info, gint w, gint h, guint8 value);

/* The region-of-interest meta of buf with this id, or NULL. */
GstVideoRegionOfInterestMeta *roi_by_id (GstBuffer *buf, gint id);

/* Adds a "text" ROI with an nnpipe/text structure (box-score 0.9, points
 * of the axis-aligned box), as nndbdecode makes them. */
void add_text_roi (GstBuffer *frame, gint id, gint x, gint y, gint w, gint h);

G_END_DECLS
