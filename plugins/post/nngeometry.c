/* nnpipe plugin: plane geometry for the post-processing elements (see
 * nngeometry.h). */
#include "nngeometry.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int
point_cmp (const void *a, const void *b)
{
  const NnPoint *p = a, *q = b;

  if (p->x != q->x)
    return p->x < q->x ? -1 : 1;
  if (p->y != q->y)
    return p->y < q->y ? -1 : 1;
  return 0;
}

static gdouble
cross (const NnPoint *o, const NnPoint *a, const NnPoint *b)
{
  return (a->x - o->x) * (b->y - o->y) - (a->y - o->y) * (b->x - o->x);
}

gint
nn_convex_hull (NnPoint *pts, gint n, NnPoint *hull)
{
  gint k = 0, m = 0;

  g_return_val_if_fail (n >= 0, 0);
  if (n == 0)
    return 0;
  g_return_val_if_fail (pts != NULL && hull != NULL, 0);

  qsort (pts, n, sizeof (NnPoint), point_cmp);
  /* drop duplicates */
  for (gint i = 0; i < n; i++)
    if (m == 0 || point_cmp (&pts[m - 1], &pts[i]) != 0)
      pts[m++] = pts[i];
  n = m;
  if (n < 3) {
    memcpy (hull, pts, n * sizeof (NnPoint));
    return n;
  }
  for (gint i = 0; i < n; i++) {
    while (k >= 2 && cross (&hull[k - 2], &hull[k - 1], &pts[i]) <= 1e-9)
      k--;
    hull[k++] = pts[i];
  }
  for (gint i = n - 2, t = k + 1; i >= 0; i--) {
    while (k >= t && cross (&hull[k - 2], &hull[k - 1], &pts[i]) <= 1e-9)
      k--;
    hull[k++] = pts[i];
  }
  return k - 1; /* the last point repeats the first */
}

void
nn_quad_order (NnQuad *quad)
{
  NnPoint s[4], tl, tr, br, bl;

  g_return_if_fail (quad != NULL);

  memcpy (s, quad->p, sizeof (s));
  /* sort by x (stable for ties by y, as the reference does with argsort) */
  qsort (s, 4, sizeof (NnPoint), point_cmp);
  if (s[1].y > s[0].y) {
    tl = s[0];
    bl = s[1];
  } else {
    tl = s[1];
    bl = s[0];
  }
  if (s[3].y > s[2].y) {
    tr = s[2];
    br = s[3];
  } else {
    tr = s[3];
    br = s[2];
  }
  quad->p[0] = tl;
  quad->p[1] = tr;
  quad->p[2] = br;
  quad->p[3] = bl;
}

static gdouble
dist (const NnPoint *a, const NnPoint *b)
{
  return hypot (a->x - b->x, a->y - b->y);
}

void
nn_quad_size (const NnQuad *quad, gdouble *width, gdouble *height)
{
  g_return_if_fail (quad != NULL);

  if (width)
    *width =
        MAX (dist (&quad->p[0], &quad->p[1]), dist (&quad->p[3], &quad->p[2]));
  if (height)
    *height =
        MAX (dist (&quad->p[0], &quad->p[3]), dist (&quad->p[1], &quad->p[2]));
}

void
nn_quad_bounds (const NnQuad *quad, gdouble *x0, gdouble *y0, gdouble *x1,
    gdouble *y1)
{
  gdouble a = G_MAXDOUBLE, b = G_MAXDOUBLE, c = -G_MAXDOUBLE, d = -G_MAXDOUBLE;

  g_return_if_fail (quad != NULL);

  for (gint i = 0; i < 4; i++) {
    a = MIN (a, quad->p[i].x);
    b = MIN (b, quad->p[i].y);
    c = MAX (c, quad->p[i].x);
    d = MAX (d, quad->p[i].y);
  }
  if (x0)
    *x0 = a;
  if (y0)
    *y0 = b;
  if (x1)
    *x1 = c;
  if (y1)
    *y1 = d;
}

gboolean
nn_quad_contains (const NnQuad *quad, gdouble x, gdouble y)
{
  gboolean pos = FALSE, neg = FALSE;
  NnPoint p = { x, y };

  g_return_val_if_fail (quad != NULL, FALSE);

  for (gint i = 0; i < 4; i++) {
    gdouble c = cross (&quad->p[i], &quad->p[(i + 1) % 4], &p);

    if (c > 1e-9)
      pos = TRUE;
    else if (c < -1e-9)
      neg = TRUE;
  }
  return !(pos && neg);
}

void
nn_min_area_rect (const NnPoint *hull, gint n, NnQuad *quad, gdouble *width,
    gdouble *height)
{
  gdouble best = G_MAXDOUBLE;
  NnPoint u_best = { 1, 0 };
  gdouble umin_b = 0, umax_b = 0, vmin_b = 0, vmax_b = 0;

  g_return_if_fail (quad != NULL);

  if (n <= 0) {
    memset (quad, 0, sizeof (*quad));
    if (width)
      *width = 0;
    if (height)
      *height = 0;
    return;
  }

  /* one candidate direction per hull edge; a single point or a segment
   * gives the direction of the segment */
  for (gint i = 0; i < MAX (n, 1); i++) {
    const NnPoint *a = &hull[i], *b = &hull[(i + 1) % n];
    gdouble len = dist (a, b), umin, umax, vmin, vmax, area;
    NnPoint u;

    if (len <= 0) {
      u.x = 1;
      u.y = 0;
    } else {
      u.x = (b->x - a->x) / len;
      u.y = (b->y - a->y) / len;
    }
    umin = vmin = G_MAXDOUBLE;
    umax = vmax = -G_MAXDOUBLE;
    for (gint j = 0; j < n; j++) {
      gdouble pu = hull[j].x * u.x + hull[j].y * u.y;
      gdouble pv = -hull[j].x * u.y + hull[j].y * u.x;

      umin = MIN (umin, pu);
      umax = MAX (umax, pu);
      vmin = MIN (vmin, pv);
      vmax = MAX (vmax, pv);
    }
    area = (umax - umin) * (vmax - vmin);
    if (area < best - 1e-9) {
      best = area;
      u_best = u;
      umin_b = umin;
      umax_b = umax;
      vmin_b = vmin;
      vmax_b = vmax;
    }
  }

  /* back from (u, v) to (x, y): x = u*ux - v*uy, y = u*uy + v*ux */
  {
    gdouble us[4] = { umin_b, umax_b, umax_b, umin_b };
    gdouble vs[4] = { vmin_b, vmin_b, vmax_b, vmax_b };

    for (gint i = 0; i < 4; i++) {
      quad->p[i].x = us[i] * u_best.x - vs[i] * u_best.y;
      quad->p[i].y = us[i] * u_best.y + vs[i] * u_best.x;
    }
  }
  nn_quad_order (quad);
  nn_quad_size (quad, width, height);
}

void
nn_quad_expand (NnQuad *quad, gdouble distance)
{
  NnPoint c = { 0, 0 };
  NnPoint ex, ey;
  gdouble w, h, lw, lh;

  g_return_if_fail (quad != NULL);

  for (gint i = 0; i < 4; i++) {
    c.x += quad->p[i].x / 4;
    c.y += quad->p[i].y / 4;
  }
  lw = dist (&quad->p[0], &quad->p[1]);
  lh = dist (&quad->p[0], &quad->p[3]);
  if (lw > 0) {
    ex.x = (quad->p[1].x - quad->p[0].x) / lw;
    ex.y = (quad->p[1].y - quad->p[0].y) / lw;
  } else {
    ex.x = 1;
    ex.y = 0;
  }
  if (lh > 0) {
    ey.x = (quad->p[3].x - quad->p[0].x) / lh;
    ey.y = (quad->p[3].y - quad->p[0].y) / lh;
  } else {
    ey.x = -ex.y;
    ey.y = ex.x;
  }
  w = lw / 2 + distance;
  h = lh / 2 + distance;
  quad->p[0].x = c.x - w * ex.x - h * ey.x;
  quad->p[0].y = c.y - w * ex.y - h * ey.y;
  quad->p[1].x = c.x + w * ex.x - h * ey.x;
  quad->p[1].y = c.y + w * ex.y - h * ey.y;
  quad->p[2].x = c.x + w * ex.x + h * ey.x;
  quad->p[2].y = c.y + w * ex.y + h * ey.y;
  quad->p[3].x = c.x - w * ex.x + h * ey.x;
  quad->p[3].y = c.y - w * ex.y + h * ey.y;
  nn_quad_order (quad);
}

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
      if (score < params->box_threshold)
        continue;
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
