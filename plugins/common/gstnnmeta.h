/* GStreamer nnpipe plugin: GstNnTransformMeta.
 *
 * nnconvert attaches one GstNnTransformMeta to every tensor buffer it
 * produces.  It records how the pixels of the original video frame were
 * mapped into the tensor, so that decoders further down (boxes, text
 * regions) can map their results back onto the original frame:
 *
 *   tensor_x = source_x * scale_x + offset_x
 *   tensor_y = source_y * scale_y + offset_y
 *
 * in pixel units (the continuous coordinate of a pixel edge; pixel centres
 * sit at +0.5).  source_width x source_height is the original frame,
 * tensor_width x tensor_height the tensor's spatial size (padding included)
 * and content_width x content_height the part of the tensor that holds
 * image data (the rest, right and bottom, is padding).
 *
 * The meta has no tags, so GstBaseTransform-based elements (nnstage) copy
 * it from their input to their output buffers unchanged. */
#pragma once

#include <gst/gst.h>

G_BEGIN_DECLS

#define GST_NN_TRANSFORM_META_API_TYPE (gst_nn_transform_meta_api_get_type ())
#define GST_NN_TRANSFORM_META_INFO (gst_nn_transform_meta_get_info ())

typedef struct _GstNnTransformMeta GstNnTransformMeta;

struct _GstNnTransformMeta
{
  GstMeta meta;

  gint source_width, source_height;   /* the original video frame */
  gint tensor_width, tensor_height;   /* spatial size of the tensor */
  gint content_width, content_height; /* image area inside the tensor */
  gdouble scale_x, scale_y;           /* tensor pixels per source pixel */
  gdouble offset_x, offset_y;         /* tensor position of source (0,0) */
};

GType gst_nn_transform_meta_api_get_type (void);
const GstMetaInfo *gst_nn_transform_meta_get_info (void);

/* Add a meta (owned by the buffer) with an identity mapping of a
 * width x height frame; the caller fills in the rest. */
GstNnTransformMeta *gst_buffer_add_nn_transform_meta (GstBuffer *buffer,
    gint source_width, gint source_height);
/* The buffer's meta, or NULL (not a new reference: owned by the buffer). */
GstNnTransformMeta *gst_buffer_get_nn_transform_meta (GstBuffer *buffer);

/* Map a tensor coordinate back to the source frame, and forth. */
void gst_nn_transform_meta_to_source (const GstNnTransformMeta *meta,
    gdouble tensor_x, gdouble tensor_y, gdouble *source_x, gdouble *source_y);
void gst_nn_transform_meta_to_tensor (const GstNnTransformMeta *meta,
    gdouble source_x, gdouble source_y, gdouble *tensor_x, gdouble *tensor_y);

G_END_DECLS
