/* Helpers of the post-processing element tests (test-post.c: the OCR
 * decoders; test-post-output.c: nnoverlay, nnmetapublish). */
#pragma once

#include <gst/gst.h>
#include <gst/video/video.h>

#include "gstnnframemeta.h"

G_BEGIN_DECLS

/* A w x h RGB frame with every byte `value`; *info describes it. */
GstBuffer *make_rgb_frame (GstVideoInfo *info, gint w, gint h, guint8 value);

/* The region-of-interest meta of buf with this id, or NULL. */
GstVideoRegionOfInterestMeta *roi_by_id (GstBuffer *buf, gint id);

/* Adds a "text" ROI with an nnpipe/text structure (box-score 0.9, points
 * of the axis-aligned box), as nndbdecode makes them. */
void add_text_roi (GstBuffer *frame, gint id, gint x, gint y, gint w, gint h);

/* A new meta of the implementation named impl on buf (fails the test when
 * it is not registered). */
GstMeta *add_meta (GstBuffer *buf, const gchar *impl);

/* A GstNnFrameMeta on buf referring to frame (n_rois, roi_index, roi_id as
 * nncrop sets them; -1, -1, -1 for a whole frame). */
GstNnFrameMeta *add_frame_meta (GstBuffer *buf, GstBuffer *frame, const GstVideoInfo *info,
                                gint n_rois, gint roi_index, gint roi_id);

/* The GstNnFrameMeta of buf, or NULL. */
GstNnFrameMeta *get_frame_meta (GstBuffer *buf);

/* A buffer holding a copy of n floats. */
GstBuffer *float_buffer (const gfloat *data, gsize n);

/* The number of region-of-interest metas on buf. */
guint count_rois (GstBuffer *buf);

G_END_DECLS
