/* nnpipe plugin: joining the text read in boxes of one line (see
 * nntextlines.h). */
#include "nntextlines.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct
{
  gdouble angle, height; /* of the top edge; mean of the two sides */
  gdouble cos_a, sin_a;
  gboolean single; /* a single character */
  guint index;
  gdouble left; /* leftmost corner along the line (for sorting) */
} Piece;

static gboolean
single_char (const gchar *text)
{
  gchar *t = g_strstrip (g_strdup (text ? text : ""));
  gboolean single = g_utf8_strlen (t, -1) < 2;

  g_free (t);
  return single;
}

static void
piece_init (Piece *p, const NnTextPiece *in, guint index)
{
  const NnPoint *q = in->quad.p;

  p->angle = atan2 (q[1].y - q[0].y, q[1].x - q[0].x);
  p->height = (hypot (q[3].x - q[0].x, q[3].y - q[0].y)
                  + hypot (q[2].x - q[1].x, q[2].y - q[1].y))
      / 2;
  p->cos_a = cos (p->angle);
  p->sin_a = sin (p->angle);
  p->single = single_char (in->text);
  p->index = index;
  p->left = MIN (q[0].x * p->cos_a + q[0].y * p->sin_a,
      q[3].x * p->cos_a + q[3].y * p->sin_a);
}

static int
piece_cmp (const void *a, const void *b)
{
  const Piece *pa = a, *pb = b;

  return pa->left < pb->left ? -1
      : pa->left > pb->left
      ? 1
      : (pa->index < pb->index ? -1 : pa->index > pb->index);
}

/* Along-line extent and centre line of quad @q in the frame of @a. */
static void
project (const NnQuad *q, const Piece *a, gdouble *lo, gdouble *hi,
    gdouble *across)
{
  *lo = G_MAXDOUBLE;
  *hi = -G_MAXDOUBLE;
  *across = 0;
  for (gint i = 0; i < 4; i++) {
    gdouble u = q->p[i].x * a->cos_a + q->p[i].y * a->sin_a;

    *lo = MIN (*lo, u);
    *hi = MAX (*hi, u);
    *across += (-q->p[i].x * a->sin_a + q->p[i].y * a->cos_a) / 4;
  }
}

guint
nn_text_lines_join (const NnTextPiece *pieces, guint n, gdouble max_gap,
    gint *next)
{
  Piece *ps;
  gboolean *taken;
  guint joins = 0;

  g_return_val_if_fail (n == 0 || (pieces != NULL && next != NULL), 0);
  for (guint i = 0; i < n; i++)
    next[i] = -1;
  if (n < 2)
    return 0;

  ps = g_new (Piece, n);
  taken = g_new0 (gboolean, n);
  for (guint i = 0; i < n; i++)
    piece_init (&ps[i], &pieces[i], i);
  qsort (ps, n, sizeof (Piece), piece_cmp);

  for (guint i = 0; i < n; i++) {
    const Piece *a = &ps[i];
    gdouble a_lo, a_hi, a_across, best_gap = G_MAXDOUBLE;
    gint best = -1;

    if (a->single)
      continue;
    project (&pieces[a->index].quad, a, &a_lo, &a_hi, &a_across);
    for (guint j = 0; j < n; j++) {
      const Piece *b = &ps[j];
      gdouble b_lo, b_hi, b_across, h, gap, turn;

      if (j == i || taken[j] || b->single)
        continue;
      turn = fabs (remainder (b->angle - a->angle, 2 * G_PI));
      h = MIN (a->height, b->height);
      if (turn > 0.1 || MAX (a->height, b->height) > 1.5 * h || h <= 0)
        continue;
      project (&pieces[b->index].quad, a, &b_lo, &b_hi, &b_across);
      gap = b_lo - a_hi;
      if (fabs (b_across - a_across) > 0.5 * h || gap < -0.5 * h
          || gap > max_gap * h || b_hi <= a_hi)
        continue;
      if (gap < best_gap) {
        best_gap = gap;
        best = (gint) j;
      }
    }
    if (best >= 0) {
      taken[best] = TRUE;
      next[a->index] = (gint) ps[best].index;
      joins++;
    }
  }
  g_free (taken);
  g_free (ps);
  return joins;
}
