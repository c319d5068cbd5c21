/* nnpipe plugin: a segmentation mask applied to a frame (see nnmask.h). */
#include "nnmask.h"

#include <math.h>

void
nn_mask_alpha (const gfloat *map, gint map_w, gint map_h, gint stride,
    const NnMaskMapping *m, gint frame_w, gint frame_h, gboolean sigmoid,
    gboolean soft, gdouble threshold, guint8 *alpha)
{
  g_return_if_fail (map != NULL && m != NULL && alpha != NULL);

  for (gint y = 0; y < frame_h; y++) {
    /* the centre of frame row y in map coordinates, as an index */
    gdouble my = (y + 0.5) * m->scale_y + m->offset_y - 0.5;
    gint y0 = (gint) floor (my);
    gdouble fy = my - y0;
    gint ya = CLAMP (y0, 0, map_h - 1), yb = CLAMP (y0 + 1, 0, map_h - 1);

    for (gint x = 0; x < frame_w; x++) {
      gdouble mx = (x + 0.5) * m->scale_x + m->offset_x - 0.5;
      gint x0 = (gint) floor (mx);
      gdouble fx = mx - x0;
      gint xa = CLAMP (x0, 0, map_w - 1), xb = CLAMP (x0 + 1, 0, map_w - 1);
      gdouble v = (1 - fy)
              * ((1 - fx) * map[(gsize) ya * stride + xa]
                  + fx * map[(gsize) ya * stride + xb])
          + fy
              * ((1 - fx) * map[(gsize) yb * stride + xa]
                  + fx * map[(gsize) yb * stride + xb]);

      if (sigmoid)
        v = 1.0 / (1.0 + exp (-v));
      if (soft)
        alpha[(gsize) y * frame_w + x] =
            (guint8) lround (CLAMP (v, 0.0, 1.0) * 255.0);
      else
        alpha[(gsize) y * frame_w + x] = v >= threshold ? 255 : 0;
    }
  }
}

void
nn_mask_blend (NnPlane *frame, const guint8 *alpha, const NnPlane *bg,
    const guint8 *color)
{
  g_return_if_fail (frame != NULL && alpha != NULL);

  for (gint y = 0; y < frame->height; y++) {
    guint8 *row = frame->data + (gsize) y * frame->stride;
    const guint8 *brow = bg ? bg->data + (gsize) y * bg->stride : NULL;
    const guint8 *a = alpha + (gsize) y * frame->width;

    for (gint x = 0; x < frame->width; x++) {
      guint8 *p = row + x * frame->pstride;
      const guint8 *b = brow ? brow + x * frame->pstride : color;
      guint w = a[x];

      if (w == 255)
        continue;
      for (gint c = 0; c < frame->pstride; c++)
        p[c] = (guint8) ((w * p[c] + (255 - w) * b[c] + 127) / 255);
    }
  }
}

void
nn_mask_set_alpha (NnPlane *frame, gint offset, const guint8 *alpha)
{
  g_return_if_fail (frame != NULL && alpha != NULL);

  for (gint y = 0; y < frame->height; y++) {
    guint8 *row = frame->data + (gsize) y * frame->stride + offset;

    for (gint x = 0; x < frame->width; x++)
      row[x * frame->pstride] = alpha[(gsize) y * frame->width + x];
  }
}
