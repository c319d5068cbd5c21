/* nnpipe plugin: redaction of rectangles (see nnredact.h). */
#include "nnredact.h"

#include <string.h>

static void
pixelate (NnPlane *p, gint x0, gint y0, gint x1, gint y1, gint block)
{
  for (gint by = y0; by < y1; by += block)
    for (gint bx = x0; bx < x1; bx += block) {
      gint ex = MIN (bx + block, x1), ey = MIN (by + block, y1);
      guint32 sum[4] = { 0 };
      guint n = (guint) ((ex - bx) * (ey - by));
      guint8 mean[4];

      for (gint y = by; y < ey; y++) {
        const guint8 *row = p->data + (gsize) y * p->stride;

        for (gint x = bx; x < ex; x++)
          for (gint c = 0; c < p->pstride; c++)
            sum[c] += row[x * p->pstride + c];
      }
      for (gint c = 0; c < p->pstride; c++)
        mean[c] = (guint8) ((sum[c] + n / 2) / n);
      for (gint y = by; y < ey; y++) {
        guint8 *row = p->data + (gsize) y * p->stride;

        for (gint x = bx; x < ex; x++)
          memcpy (row + x * p->pstride, mean, p->pstride);
      }
    }
}

/* One box-blur pass of radius r along a line of n pixels (bytes @step
 * apart, @ps bytes each) into @tmp, then back. */
static void
blur_line (guint8 *line, gint n, gint step, gint ps, gint r, guint8 *tmp)
{
  for (gint c = 0; c < ps; c++) {
    guint32 sum = 0;
    gint w = 2 * r + 1;

    /* window [i - r, i + r], indices clamped to the line */
    for (gint k = -r; k <= r; k++)
      sum += line[CLAMP (k, 0, n - 1) * step + c];
    for (gint i = 0; i < n; i++) {
      tmp[i * ps + c] = (guint8) ((sum + w / 2) / w);
      sum += line[MIN (i + r + 1, n - 1) * step + c];
      sum -= line[MAX (i - r, 0) * step + c];
    }
  }
  for (gint i = 0; i < n; i++)
    memcpy (line + i * step, tmp + i * ps, ps);
}

void
nn_plane_blur (NnPlane *p, gint x0, gint y0, gint x1, gint y1, gint r)
{
  gint w = x1 - x0, h = y1 - y0;
  guint8 *tmp;

  if (w <= 0 || h <= 0 || r <= 0)
    return;
  tmp = g_malloc ((gsize) MAX (w, h) * p->pstride);
  for (gint pass = 0; pass < 3; pass++) {
    for (gint y = y0; y < y1; y++)
      blur_line (p->data + (gsize) y * p->stride + x0 * p->pstride, w,
          p->pstride, p->pstride, MIN (r, w), tmp);
    for (gint x = x0; x < x1; x++)
      blur_line (p->data + (gsize) y0 * p->stride + x * p->pstride, h,
          p->stride, p->pstride, MIN (r, h), tmp);
  }
  g_free (tmp);
}

void
nn_redact_rect (NnImage *image, gint x0, gint y0, gint x1, gint y1,
    NnRedactMode mode, gint strength)
{
  g_return_if_fail (image != NULL);

  strength = MAX (strength, 1);
  for (gint i = 0; i < image->n_planes; i++) {
    NnPlane *p = &image->planes[i];
    gint sx = p->sub_x, sy = p->sub_y;
    /* rounded outwards: a subsampled sample touching the box is redacted */
    gint px0 = CLAMP (x0 >> sx, 0, p->width);
    gint py0 = CLAMP (y0 >> sy, 0, p->height);
    gint px1 = CLAMP ((x1 + (1 << sx) - 1) >> sx, 0, p->width);
    gint py1 = CLAMP ((y1 + (1 << sy) - 1) >> sy, 0, p->height);
    gint s = MAX (strength >> MAX (sx, sy), 1);

    if (px1 <= px0 || py1 <= py0)
      continue;
    switch (mode) {
      case NN_REDACT_PIXELATE:
        pixelate (p, px0, py0, px1, py1, s);
        break;
      case NN_REDACT_BLUR:
        nn_plane_blur (p, px0, py0, px1, py1, s);
        break;
      default:
        for (gint y = py0; y < py1; y++) {
          guint8 *row = p->data + (gsize) y * p->stride;

          for (gint x = px0; x < px1; x++)
            memcpy (row + x * p->pstride, p->fill, p->pstride);
        }
        break;
    }
  }
}
