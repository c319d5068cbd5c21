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
