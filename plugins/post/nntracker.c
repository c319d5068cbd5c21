/* nnpipe plugin: multi-object tracking by detection (see nntracker.h). */
#include "nntracker.h"

#include <math.h>
#include <string.h>

/* ByteTrack's / DeepSORT's noise, relative to the box height */
#define STD_POSITION (1.0 / 20)
#define STD_VELOCITY (1.0 / 160)
#define NO_PAIR 1e9

typedef struct
{
  gdouble x[8];     /* cx, cy, a, h, vcx, vcy, va, vh */
  gdouble P[8 * 8]; /* covariance */
  guint64 id;
  gint label;
  gfloat score;
  guint hits, missed;
  gboolean confirmed;
} Track;

struct _NnTracker
{
  NnTrackerParams params;
  GArray *tracks; /* Track */
  guint64 next_id;
  guint frames;
};

void
nn_tracker_params_init (NnTrackerParams *params)
{
  params->mode = NN_TRACKER_SORT;
  params->iou_threshold = 0.3;
  params->high_threshold = 0.5;
  params->low_threshold = 0.1;
  params->max_missed = 30;
  params->min_hits = 1;
}

NnTracker *
nn_tracker_new (const NnTrackerParams *params)
{
  NnTracker *t = g_new0 (NnTracker, 1);

  t->params = *params;
  t->tracks = g_array_new (FALSE, FALSE, sizeof (Track));
  t->next_id = 1;
  return t;
}

void
nn_tracker_free (NnTracker *tracker)
{
  if (tracker == NULL)
    return;
  g_array_unref (tracker->tracks);
  g_free (tracker);
}

void
nn_tracker_reset (NnTracker *tracker)
{
  g_array_set_size (tracker->tracks, 0);
  tracker->frames = 0;
}

/* ------------------------------------------------------------ Kalman filter */

static void
box_to_z (const NnTrackBox *b, gdouble z[4])
{
  gdouble w = MAX (b->x1 - b->x0, 1e-3), h = MAX (b->y1 - b->y0, 1e-3);

  z[0] = 0.5 * (b->x0 + b->x1);
  z[1] = 0.5 * (b->y0 + b->y1);
  z[2] = w / h;
  z[3] = h;
}

static void
track_box (const Track *t, NnTrackBox *b)
{
  gdouble h = MAX (t->x[3], 1e-3), w = MAX (t->x[2], 1e-6) * h;

  b->x0 = (gfloat) (t->x[0] - 0.5 * w);
  b->x1 = (gfloat) (t->x[0] + 0.5 * w);
  b->y0 = (gfloat) (t->x[1] - 0.5 * h);
  b->y1 = (gfloat) (t->x[1] + 0.5 * h);
  b->score = t->score;
  b->label = t->label;
}

static void
track_init (Track *t, const NnTrackBox *b)
{
  gdouble z[4], h, sd[8];

  memset (t, 0, sizeof (*t));
  box_to_z (b, z);
  memcpy (t->x, z, sizeof (z));
  h = z[3];
  sd[0] = sd[1] = sd[3] = 2 * STD_POSITION * h;
  sd[2] = 1e-2;
  sd[4] = sd[5] = sd[7] = 10 * STD_VELOCITY * h;
  sd[6] = 1e-5;
  for (gint i = 0; i < 8; i++)
    t->P[i * 8 + i] = sd[i] * sd[i];
  t->label = b->label;
  t->score = b->score;
}

static void
kf_predict (Track *t)
{
  gdouble h = t->x[3], q[8], FP[64];

  /* x = F x with F = [I I; 0 I] */
  for (gint i = 0; i < 4; i++)
    t->x[i] += t->x[i + 4];
  /* P = F P F^T + Q */
  for (gint i = 0; i < 8; i++)
    for (gint j = 0; j < 8; j++)
      FP[i * 8 + j] = t->P[i * 8 + j] + (i < 4 ? t->P[(i + 4) * 8 + j] : 0);
  for (gint i = 0; i < 8; i++)
    for (gint j = 0; j < 8; j++)
      t->P[i * 8 + j] = FP[i * 8 + j] + (j < 4 ? FP[i * 8 + j + 4] : 0);
  q[0] = q[1] = q[3] = STD_POSITION * h;
  q[2] = 1e-2;
  q[4] = q[5] = q[7] = STD_VELOCITY * h;
  q[6] = 1e-5;
  for (gint i = 0; i < 8; i++)
    t->P[i * 8 + i] += q[i] * q[i];
}

/* Inverse of a symmetric positive definite 4x4 (Gauss-Jordan). */
static gboolean
invert4 (const gdouble *m, gdouble *inv)
{
  gdouble a[4][8];

  for (gint i = 0; i < 4; i++)
    for (gint j = 0; j < 8; j++)
      a[i][j] = j < 4 ? m[i * 4 + j] : (j - 4 == i ? 1.0 : 0.0);
  for (gint c = 0; c < 4; c++) {
    gint piv = c;

    for (gint r = c + 1; r < 4; r++)
      if (fabs (a[r][c]) > fabs (a[piv][c]))
        piv = r;
    if (fabs (a[piv][c]) < 1e-12)
      return FALSE;
    if (piv != c)
      for (gint j = 0; j < 8; j++) {
        gdouble tmp = a[c][j];

        a[c][j] = a[piv][j];
        a[piv][j] = tmp;
      }
    for (gint j = 7; j >= c; j--)
      a[c][j] /= a[c][c];
    for (gint r = 0; r < 4; r++) {
      gdouble f = a[r][c];

      if (r == c || f == 0.0)
        continue;
      for (gint j = c; j < 8; j++)
        a[r][j] -= f * a[c][j];
    }
  }
  for (gint i = 0; i < 4; i++)
    for (gint j = 0; j < 4; j++)
      inv[i * 4 + j] = a[i][j + 4];
  return TRUE;
}

static void
kf_update (Track *t, const NnTrackBox *b)
{
  gdouble z[4], r[4], S[16], Si[16], K[32], y[4], KS[32], h;

  box_to_z (b, z);
  h = t->x[3];
  r[0] = r[1] = r[3] = STD_POSITION * h;
  r[2] = 1e-1;
  /* S = H P H^T + R: the top-left 4x4 of P */
  for (gint i = 0; i < 4; i++)
    for (gint j = 0; j < 4; j++)
      S[i * 4 + j] = t->P[i * 8 + j] + (i == j ? r[i] * r[i] : 0);
  if (!invert4 (S, Si)) {
    track_init (t, b); /* degenerate: restart from the measurement */
    return;
  }
  /* K = P H^T S^-1: (8x4) = P[:, 0:4] Si */
  for (gint i = 0; i < 8; i++)
    for (gint j = 0; j < 4; j++) {
      gdouble s = 0;

      for (gint k = 0; k < 4; k++)
        s += t->P[i * 8 + k] * Si[k * 4 + j];
      K[i * 4 + j] = s;
    }
  for (gint i = 0; i < 4; i++)
    y[i] = z[i] - t->x[i];
  for (gint i = 0; i < 8; i++)
    for (gint k = 0; k < 4; k++)
      t->x[i] += K[i * 4 + k] * y[k];
  /* P -= K S K^T = K (H P) */
  for (gint i = 0; i < 8; i++)
    for (gint j = 0; j < 4; j++) {
      gdouble s = 0;

      for (gint k = 0; k < 4; k++)
        s += K[i * 4 + k] * S[k * 4 + j];
      KS[i * 4 + j] = s;
    }
  for (gint i = 0; i < 8; i++)
    for (gint j = 0; j < 8; j++) {
      gdouble s = 0;

      for (gint k = 0; k < 4; k++)
        s += KS[i * 4 + k] * K[j * 4 + k];
      t->P[i * 8 + j] -= s;
    }
}

/* ---------------------------------------------------------------- assignment */

void
nn_assign_min_cost (const gdouble *cost, guint rows, guint cols, gint *match)
{
  gboolean transposed = rows > cols;
  guint n = transposed ? cols : rows, m = transposed ? rows : cols;
  gdouble *u, *v, *minv;
  gint *p, *way;
  gboolean *used;

  for (guint r = 0; r < rows; r++)
    match[r] = -1;
  if (rows == 0 || cols == 0)
    return;
#define A(i, j) \
  (transposed ? cost[(gsize) ((j) -1) * cols + ((i) -1)] \
              : cost[(gsize) ((i) -1) * cols + ((j) -1)])
  u = g_new0 (gdouble, n + 1);
  v = g_new0 (gdouble, m + 1);
  minv = g_new (gdouble, m + 1);
  p = g_new0 (gint, m + 1);
  way = g_new0 (gint, m + 1);
  used = g_new (gboolean, m + 1);
  for (guint i = 1; i <= n; i++) {
    gint j0 = 0;

    p[0] = (gint) i;
    for (guint j = 0; j <= m; j++) {
      minv[j] = INFINITY;
      used[j] = FALSE;
    }
    do {
      gint i0 = p[j0], j1 = 0;
      gdouble delta = INFINITY;

      used[j0] = TRUE;
      for (guint j = 1; j <= m; j++) {
        gdouble cur;

        if (used[j])
          continue;
        cur = A (i0, (gint) j) - u[i0] - v[j];
        if (cur < minv[j]) {
          minv[j] = cur;
          way[j] = j0;
        }
        if (minv[j] < delta) {
          delta = minv[j];
          j1 = (gint) j;
        }
      }
      for (guint j = 0; j <= m; j++) {
        if (used[j]) {
          u[p[j]] += delta;
          v[j] -= delta;
        } else {
          minv[j] -= delta;
        }
      }
      j0 = j1;
    } while (p[j0] != 0);
    do {
      gint j1 = way[j0];

      p[j0] = p[j1];
      j0 = j1;
    } while (j0 != 0);
  }
#undef A
  for (guint j = 1; j <= m; j++) {
    if (p[j] == 0)
      continue;
    if (transposed)
      match[j - 1] = p[j] - 1;
    else
      match[p[j] - 1] = (gint) j - 1;
  }
  g_free (u);
  g_free (v);
  g_free (minv);
  g_free (p);
  g_free (way);
  g_free (used);
}

static gdouble
box_iou (const NnTrackBox *a, const NnTrackBox *b)
{
  gdouble iw = MIN (a->x1, b->x1) - MAX (a->x0, b->x0);
  gdouble ih = MIN (a->y1, b->y1) - MAX (a->y0, b->y0);
  gdouble aa = ((gdouble) a->x1 - a->x0) * ((gdouble) a->y1 - a->y0);
  gdouble ab = ((gdouble) b->x1 - b->x0) * ((gdouble) b->y1 - b->y0);

  if (iw <= 0 || ih <= 0 || aa <= 0 || ab <= 0)
    return 0;
  return iw * ih / (aa + ab - iw * ih);
}

/* Assign detections @di (n_d of them) to tracks @ti (n_t): for each pair
 * matched, det_track[di[k]] = track index; the matched entries of @ti and
 * @di are set to -1. */
static void
associate (NnTracker *t, const NnTrackBox *dets, gint *di, guint n_d, gint *ti,
    guint n_t, gint *det_track)
{
  gdouble *cost;
  gint *match;
  NnTrackBox *pred;

  if (n_d == 0 || n_t == 0)
    return;
  cost = g_new (gdouble, (gsize) n_d * n_t);
  match = g_new (gint, n_d);
  pred = g_new (NnTrackBox, n_t);
  for (guint k = 0; k < n_t; k++)
    track_box (&g_array_index (t->tracks, Track, ti[k]), &pred[k]);
  for (guint i = 0; i < n_d; i++)
    for (guint k = 0; k < n_t; k++) {
      const NnTrackBox *d = &dets[di[i]];
      gdouble iou = d->label == pred[k].label ? box_iou (d, &pred[k]) : 0;

      cost[(gsize) i * n_t + k] =
          iou >= t->params.iou_threshold && iou > 0 ? 1.0 - iou : NO_PAIR;
    }
  nn_assign_min_cost (cost, n_d, n_t, match);
  for (guint i = 0; i < n_d; i++) {
    gint k = match[i];

    if (k < 0 || cost[(gsize) i * n_t + k] >= NO_PAIR)
      continue;
    det_track[di[i]] = ti[k];
    di[i] = -1;
    ti[k] = -1;
  }
  g_free (cost);
  g_free (match);
  g_free (pred);
}

/* Keep the entries >= 0. */
static guint
compact (gint *a, guint n)
{
  guint m = 0;

  for (guint i = 0; i < n; i++)
    if (a[i] >= 0)
      a[m++] = a[i];
  return m;
}

void
nn_tracker_update (NnTracker *t, const NnTrackBox *dets, guint n, guint64 *ids)
{
  guint n_tracks = t->tracks->len, n_hi = 0, n_lo = 0, n_t = 0;
  gint *hi = g_new (gint, n + 1), *lo = g_new (gint, n + 1);
  gint *ti = g_new (gint, n_tracks + 1), *det_track = g_new (gint, n + 1);
  gboolean byte = t->params.mode == NN_TRACKER_BYTETRACK;

  t->frames++;
  for (guint k = 0; k < n_tracks; k++) {
    kf_predict (&g_array_index (t->tracks, Track, k));
    ti[n_t++] = (gint) k;
  }
  for (guint i = 0; i < n; i++) {
    det_track[i] = -1;
    ids[i] = 0;
    if (!byte || dets[i].score >= t->params.high_threshold)
      hi[n_hi++] = (gint) i;
    else if (dets[i].score >= t->params.low_threshold)
      lo[n_lo++] = (gint) i;
  }

  associate (t, dets, hi, n_hi, ti, n_t, det_track);
  n_hi = compact (hi, n_hi);
  n_t = compact (ti, n_t);
  if (byte && n_lo > 0) {
    /* second stage: the weak detections against the tracks that were
     * being followed (matched last frame) and are still unmatched */
    gint *recent = g_new (gint, n_t + 1);
    guint n_r = 0;

    for (guint k = 0; k < n_t; k++)
      if (g_array_index (t->tracks, Track, ti[k]).missed == 0)
        recent[n_r++] = ti[k];
    associate (t, dets, lo, n_lo, recent, n_r, det_track);
    g_free (recent);
  }

  /* matched tracks take their detection */
  for (guint i = 0; i < n; i++) {
    Track *tr;

    if (det_track[i] < 0)
      continue;
    tr = &g_array_index (t->tracks, Track, det_track[i]);
    kf_update (tr, &dets[i]);
    tr->score = dets[i].score;
    tr->hits++;
    tr->missed = 0;
    tr->x[3] = MAX (tr->x[3], 1e-3);
  }
  /* unmatched tracks count a miss */
  for (guint k = 0; k < n_tracks; k++) {
    Track *tr = &g_array_index (t->tracks, Track, k);
    gboolean matched = FALSE;

    for (guint i = 0; i < n && !matched; i++)
      matched = det_track[i] == (gint) k;
    if (!matched)
      tr->missed++;
  }
  /* unmatched strong detections start tracks */
  for (guint i = 0; i < n_hi; i++) {
    Track tr;

    track_init (&tr, &dets[hi[i]]);
    tr.id = t->next_id++;
    tr.hits = 1;
    det_track[hi[i]] = (gint) t->tracks->len;
    g_array_append_val (t->tracks, tr);
  }
  for (guint i = 0; i < n; i++) {
    Track *tr;

    if (det_track[i] < 0)
      continue;
    tr = &g_array_index (t->tracks, Track, det_track[i]);
    if (tr->hits >= MAX (t->params.min_hits, 1))
      tr->confirmed = TRUE;
    if (tr->confirmed)
      ids[i] = tr->id;
  }
  /* end the tracks missed too long */
  for (guint k = t->tracks->len; k-- > 0;)
    if (g_array_index (t->tracks, Track, k).missed > t->params.max_missed)
      g_array_remove_index (t->tracks, k);

  g_free (hi);
  g_free (lo);
  g_free (ti);
  g_free (det_track);
}

static void
append_state (const Track *tr, GArray *out)
{
  NnTrackState s;

  track_box (tr, &s.box);
  s.id = tr->id;
  s.missed = tr->missed;
  s.confirmed = tr->confirmed;
  g_array_append_val (out, s);
}

void
nn_tracker_predict (NnTracker *t, GArray *out)
{
  for (guint k = 0; k < t->tracks->len; k++) {
    Track *tr = &g_array_index (t->tracks, Track, k);

    kf_predict (tr);
    if (tr->confirmed && tr->missed == 0)
      append_state (tr, out);
  }
}

void
nn_tracker_get_tracks (NnTracker *t, GArray *out)
{
  for (guint k = 0; k < t->tracks->len; k++)
    append_state (&g_array_index (t->tracks, Track, k), out);
}
