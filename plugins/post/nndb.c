/* nnpipe plugin: the DB text-box decoder and box ordering (see nndb.h). */
#include "nndb.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Mean of the map over the pixels whose centres lie inside the quad. */
static gdouble
box_score (const gfloat *prob, gint width, gint height, gint stride,
    const NnQuad *quad)
{
  gdouble x0, y0, x1, y1, sum = 0;
  gint ix0, iy0, ix1, iy1;
  guint64 count = 0;

  nn_quad_bounds (quad, &x0, &y0, &x1, &y1);
  ix0 = CLAMP ((gint) floor (x0), 0, width - 1);
  iy0 = CLAMP ((gint) floor (y0), 0, height - 1);
  ix1 = CLAMP ((gint) ceil (x1), 0, width - 1);
  iy1 = CLAMP ((gint) ceil (y1), 0, height - 1);
  for (gint y = iy0; y <= iy1; y++)
    for (gint x = ix0; x <= ix1; x++)
      if (nn_quad_contains (quad, x + 0.5, y + 0.5)) {
        sum += prob[(gsize) y * stride + x];
        count++;
      }
  return count ? sum / count : 0.0;
}

void
nn_db_decode (const gfloat *prob, gint width, gint height, gint stride,
    gint content_width, gint content_height, const NnDbParams *params,
    GArray *boxes)
{
  gint W, H;
  gint32 *label;
  gint *stack, *row_min, *row_max;
  NnPoint *pts, *hull;
  gsize n_px;
  guint n_comp = 0;

  g_return_if_fail (prob != NULL && params != NULL && boxes != NULL);
  g_return_if_fail (width > 0 && height > 0 && stride >= width);

  W = CLAMP (content_width, 0, width);
  H = CLAMP (content_height, 0, height);
  if (W == 0 || H == 0)
    return;

  n_px = (gsize) W * H;
  label = g_new0 (gint32, n_px);
  stack = g_new (gint, n_px);
  row_min = g_new (gint, H);
  row_max = g_new (gint, H);
  pts = g_new (NnPoint, 2 * (gsize) H);
  hull = g_new (NnPoint, 4 * (gsize) H + 2);

  for (gint y0 = 0; y0 < H; y0++) {
    for (gint x0 = 0; x0 < W; x0++) {
      gsize top = 0;
      gint ymin = y0, ymax = y0, n_pts = 0, n_hull;
      gdouble region_sum = 0;
      guint64 region_count = 0;
      NnQuad quad;
      gdouble w, h, score, d;
      NnTextBox box;

      if (label[(gsize) y0 * W + x0] != 0
          || !(prob[(gsize) y0 * stride + x0] > params->threshold))
        continue;
      if (n_comp >= params->max_candidates)
        goto done;
      n_comp++;

      /* flood fill one 8-connected component, tracking each row's extent */
      for (gint y = 0; y < H; y++) {
        row_min[y] = G_MAXINT;
        row_max[y] = -1;
      }
      label[(gsize) y0 * W + x0] = n_comp;
      stack[top++] = y0 * W + x0;
      while (top > 0) {
        gint idx = stack[--top], y = idx / W, x = idx % W;

        row_min[y] = MIN (row_min[y], x);
        row_max[y] = MAX (row_max[y], x);
        region_sum += prob[(gsize) y * stride + x];
        region_count++;
        ymin = MIN (ymin, y);
        ymax = MAX (ymax, y);
        for (gint dy = -1; dy <= 1; dy++) {
          gint yy = y + dy;

          if (yy < 0 || yy >= H)
            continue;
          for (gint dx = -1; dx <= 1; dx++) {
            gint xx = x + dx;
            gsize j = (gsize) yy * W + xx;

            if (xx < 0 || xx >= W || label[j] != 0
                || !(prob[(gsize) yy * stride + xx] > params->threshold))
              continue;
            label[j] = n_comp;
            stack[top++] = (gint) j;
          }
        }
      }

      /* the row extremes' pixel centres span the component's hull */
      for (gint y = ymin; y <= ymax; y++) {
        if (row_max[y] < 0)
          continue;
        pts[n_pts].x = row_min[y] + 0.5;
        pts[n_pts++].y = y + 0.5;
        if (row_max[y] != row_min[y]) {
          pts[n_pts].x = row_max[y] + 0.5;
          pts[n_pts++].y = y + 0.5;
        }
      }
      n_hull = nn_convex_hull (pts, n_pts, hull);
      nn_min_area_rect (hull, n_hull, &quad, &w, &h);
      if (MIN (w, h) < params->min_size || w <= 0 || h <= 0)
        continue;
      score = box_score (prob, W, H, stride, &quad);
      if (score < params->box_threshold) {
        /* a curved or slanted line: its own pixels are strong */
        score = region_sum / region_count;
        if (score < params->region_threshold)
          continue;
      }
      box.core = quad;
      d = w * h * params->unclip_ratio / (2.0 * (w + h));
      nn_quad_expand (&quad, d);
      nn_quad_size (&quad, &w, &h);
      if (MIN (w, h) < params->min_size + 2)
        continue;
      box.quad = quad;
      box.score = score;
      g_array_append_val (boxes, box);
    }
  }

done:
  g_free (label);
  g_free (stack);
  g_free (row_min);
  g_free (row_max);
  g_free (pts);
  g_free (hull);
}

/* A box's own frame: centre, unit vectors along (top edge) and across
 * (left edge, downwards) the line. */
typedef struct
{
  NnPoint c, ex, ey;
} Frame;

static void
frame_of (const NnQuad *q, Frame *f)
{
  gdouble lx = hypot (q->p[1].x - q->p[0].x, q->p[1].y - q->p[0].y);
  gdouble ly = hypot (q->p[3].x - q->p[0].x, q->p[3].y - q->p[0].y);

  f->c.x = (q->p[0].x + q->p[1].x + q->p[2].x + q->p[3].x) / 4;
  f->c.y = (q->p[0].y + q->p[1].y + q->p[2].y + q->p[3].y) / 4;
  f->ex.x = lx > 0 ? (q->p[1].x - q->p[0].x) / lx : 1;
  f->ex.y = lx > 0 ? (q->p[1].y - q->p[0].y) / lx : 0;
  f->ey.x = ly > 0 ? (q->p[3].x - q->p[0].x) / ly : -f->ex.y;
  f->ey.y = ly > 0 ? (q->p[3].y - q->p[0].y) / ly : f->ex.x;
}

/* The extent of quad q along f's axes: [s0, s1] along, [t0, t1] across. */
static void
extent (const Frame *f, const NnQuad *q, gdouble *s0, gdouble *s1, gdouble *t0,
    gdouble *t1)
{
  *s0 = *t0 = G_MAXDOUBLE;
  *s1 = *t1 = -G_MAXDOUBLE;
  for (gint k = 0; k < 4; k++) {
    gdouble dx = q->p[k].x - f->c.x, dy = q->p[k].y - f->c.y;
    gdouble s = dx * f->ex.x + dy * f->ex.y, t = dx * f->ey.x + dy * f->ey.y;

    *s0 = MIN (*s0, s);
    *s1 = MAX (*s1, s);
    *t0 = MIN (*t0, t);
    *t1 = MAX (*t1, t);
  }
}

static gdouble
overlap (gdouble a0, gdouble a1, gdouble b0, gdouble b1)
{
  return MIN (a1, b1) - MAX (a0, b0);
}

/* Move edge (corners i, j) of q by d along unit vector u. */
static void
move_edge (NnQuad *q, gint i, gint j, const NnPoint *u, gdouble d)
{
  q->p[i].x += u->x * d;
  q->p[i].y += u->y * d;
  q->p[j].x += u->x * d;
  q->p[j].y += u->y * d;
}

/* Boxes whose lines differ in angle by more than this (sine) are never
 * compared. */
#define TIDY_MAX_SIN 0.17

void
nn_text_boxes_tidy (GArray *boxes)
{
  g_return_if_fail (boxes != NULL);

  for (guint i = 0; i < boxes->len; i++) {
    NnTextBox *a = &g_array_index (boxes, NnTextBox, i);
    Frame fa, fg;
    gdouble as0, as1, at0, at1, gs0, gs1, gt0, gt1;
    gdouble left = -G_MAXDOUBLE, right = G_MAXDOUBLE;
    gdouble top = -G_MAXDOUBLE, bottom = G_MAXDOUBLE;

    frame_of (&a->core, &fa);
    frame_of (&a->quad, &fg);
    /* the grown box's corners must name the same edges as the core's */
    if (fa.ex.x * fg.ex.x + fa.ex.y * fg.ex.y < 0.95
        || fa.ey.x * fg.ey.x + fa.ey.y * fg.ey.y < 0.95)
      continue;
    extent (&fa, &a->core, &as0, &as1, &at0, &at1);
    for (guint j = 0; j < boxes->len; j++) {
      NnTextBox *b = &g_array_index (boxes, NnTextBox, j);
      Frame fb;
      gdouble bs0, bs1, bt0, bt1;

      if (j == i)
        continue;
      frame_of (&b->core, &fb);
      if (fabs (fa.ex.x * fb.ex.y - fa.ex.y * fb.ex.x) > TIDY_MAX_SIN)
        continue;
      extent (&fa, &b->core, &bs0, &bs1, &bt0, &bt1);
      if (overlap (at0, at1, bt0, bt1) >= 0.5 * MIN (at1 - at0, bt1 - bt0)) {
        /* the same line: before or after along it */
        if (bs0 >= as1)
          right = MIN (right, (as1 + bs0) / 2);
        else if (bs1 <= as0)
          left = MAX (left, (bs1 + as0) / 2);
      } else if (overlap (as0, as1, bs0, bs1) > 0) {
        /* the line above or below */
        if (bt0 >= at1)
          bottom = MIN (bottom, (at1 + bt0) / 2);
        else if (bt1 <= at0)
          top = MAX (top, (bt1 + at0) / 2);
      }
    }
    /* corners: 0 top-left, 1 top-right, 2 bottom-right, 3 bottom-left */
    extent (&fa, &a->quad, &gs0, &gs1, &gt0, &gt1);
    if (gs1 > right) {
      NnPoint back = { -fa.ex.x, -fa.ex.y };

      move_edge (&a->quad, 1, 2, &back, gs1 - right);
    }
    if (gs0 < left)
      move_edge (&a->quad, 0, 3, &fa.ex, left - gs0);
    if (gt1 > bottom) {
      NnPoint up = { -fa.ey.x, -fa.ey.y };

      move_edge (&a->quad, 2, 3, &up, gt1 - bottom);
    }
    if (gt0 < top)
      move_edge (&a->quad, 0, 1, &fa.ey, top - gt0);
  }
}

static int
box_cmp (const void *a, const void *b)
{
  const NnTextBox *p = a, *q = b;

  if (p->quad.p[0].y != q->quad.p[0].y)
    return p->quad.p[0].y < q->quad.p[0].y ? -1 : 1;
  if (p->quad.p[0].x != q->quad.p[0].x)
    return p->quad.p[0].x < q->quad.p[0].x ? -1 : 1;
  return 0;
}

void
nn_text_boxes_sort (NnTextBox *boxes, guint n)
{
  g_return_if_fail (n == 0 || boxes != NULL);

  if (n < 2)
    return;
  qsort (boxes, n, sizeof (NnTextBox), box_cmp);
  for (guint i = 0; i + 1 < n; i++) {
    for (gint j = (gint) i; j >= 0; j--) {
      NnTextBox *a = &boxes[j], *b = &boxes[j + 1];

      if (fabs (b->quad.p[0].y - a->quad.p[0].y) < 10
          && b->quad.p[0].x < a->quad.p[0].x) {
        NnTextBox t = *a;

        *a = *b;
        *b = t;
      } else {
        break;
      }
    }
  }
}
