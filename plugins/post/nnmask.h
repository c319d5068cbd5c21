/* nnpipe plugin: a segmentation mask applied to a video frame, without
 * GStreamer.
 *
 * A 1-channel map (ISNet's salient-object mask, any model's foreground
 * probability) covers the frame through a scale and an offset (map pixel =
 * frame pixel * scale + offset, nnconvert's letterbox); every frame pixel
 * gets an alpha from the map sampled bilinearly at its centre: the value
 * itself (soft) or 0 / 255 at a threshold.  Then the frame keeps its
 * pixels where alpha is 255 and takes the background's where it is 0,
 * blending between: the background is the frame blurred, a colour, or the
 * alpha goes into the frame's alpha channel (for compositor). */
#pragma once

#include "nnredact.h"

G_BEGIN_DECLS

typedef struct
{
  gdouble scale_x, scale_y;   /* map pixels per frame pixel */
  gdouble offset_x, offset_y; /* map position of frame (0, 0) */
} NnMaskMapping;

/* @alpha: frame_w x frame_h bytes.  @map: map_w x map_h floats (rows
 * @stride floats apart); @sigmoid: the map holds logits; @soft: alpha =
 * 255 x probability, else 255 where the probability is at least
 * @threshold and 0 elsewhere. */
void nn_mask_alpha (const gfloat *map, gint map_w, gint map_h, gint stride,
    const NnMaskMapping *m, gint frame_w, gint frame_h, gboolean sigmoid,
    gboolean soft, gdouble threshold, guint8 *alpha);

/* frame = (alpha x frame + (255 - alpha) x background) / 255 on every byte
 * of every pixel, the background being @bg (a plane of the same size and
 * layout) or, when NULL, @color (the bytes of one pixel). */
void nn_mask_blend (NnPlane *frame, const guint8 *alpha, const NnPlane *bg,
    const guint8 *color);

/* The alpha into byte @offset of every pixel of a packed frame. */
void nn_mask_set_alpha (NnPlane *frame, gint offset, const guint8 *alpha);

G_END_DECLS
