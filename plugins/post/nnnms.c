/* nnpipe plugin: non-maximum suppression (see nnnms.h). */
#include "nnnms.h"

#include <string.h>

static gint
det_cmp (gconstpointer a, gconstpointer b)
{
  const NnDetection *p = a, *q = b;

  if (p->score != q->score)
    return p->score > q->score ? -1 : 1;
  if (p->index != q->index)
    return p->index < q->index ? -1 : 1;
  return 0;
}

void
nn_detections_sort (GArray *dets)
{
  g_array_sort (dets, det_cmp);
}

static gboolean
same_group (const NnNmsParams *p, const NnDetection *a, const NnDetection *b)
{
  return p->class_agnostic || a->label == b->label;
}

static void
nms_hard (GArray *dets, const NnNmsParams *p)
{
  NnDetection *d = (NnDetection *) dets->data;
  guint kept = 0;

  for (guint i = 0; i < dets->len; i++) {
    gboolean keep = TRUE;

    for (guint j = 0; j < kept && keep; j++) {
      if (!same_group (p, &d[j], &d[i]))
        continue;
      if (nn_detection_iou (&d[j], &d[i]) > (gfloat) p->iou_threshold)
        keep = FALSE;
    }
    if (keep && p->max_per_class > 0) {
      guint same = 0;

      for (guint j = 0; j < kept; j++)
        if (d[j].label == d[i].label)
          same++;
      keep = same < p->max_per_class;
    }
    if (keep)
      d[kept++] = d[i];
  }
  g_array_set_size (dets, kept);
}

static void
nms_weighted (GArray *dets, const NnNmsParams *p)
{
  NnDetection *d = (NnDetection *) dets->data;
  gboolean *used = g_new0 (gboolean, dets->len);
  GArray *res = g_array_sized_new (FALSE, FALSE, sizeof (NnDetection), 16);

  for (guint i = 0; i < dets->len; i++) {
    NnDetection w;
    gdouble total = 0, x0 = 0, y0 = 0, x1 = 0, y1 = 0;
    gdouble kp[2 * NN_DETECT_MAX_KEYPOINTS] = { 0 };
    guint same = 0;

    if (used[i])
      continue;
    if (p->max_per_class > 0) {
      for (guint j = 0; j < res->len; j++)
        if (g_array_index (res, NnDetection, j).label == d[i].label)
          same++;
      if (same >= p->max_per_class) {
        used[i] = TRUE;
        continue;
      }
    }
    for (guint j = i; j < dets->len; j++) {
      gdouble s;

      if (used[j] || !same_group (p, &d[i], &d[j]))
        continue;
      if (j != i
          && nn_detection_iou (&d[i], &d[j]) <= (gfloat) p->iou_threshold)
        continue;
      used[j] = TRUE;
      s = d[j].score;
      total += s;
      x0 += s * d[j].x0;
      y0 += s * d[j].y0;
      x1 += s * d[j].x1;
      y1 += s * d[j].y1;
      for (gint k = 0; k < 2 * d[i].n_keypoints; k++)
        kp[k] += s * d[j].keypoints[k];
    }
    w = d[i];
    if (total > 0) {
      w.x0 = (gfloat) (x0 / total);
      w.y0 = (gfloat) (y0 / total);
      w.x1 = (gfloat) (x1 / total);
      w.y1 = (gfloat) (y1 / total);
      for (gint k = 0; k < 2 * d[i].n_keypoints; k++)
        w.keypoints[k] = (gfloat) (kp[k] / total);
    }
    g_array_append_val (res, w);
  }
  g_array_set_size (dets, 0);
  g_array_append_vals (dets, res->data, res->len);
  g_array_unref (res);
  g_free (used);
}

void
nn_nms (GArray *dets, const NnNmsParams *params)
{
  g_return_if_fail (dets != NULL && params != NULL);

  nn_detections_sort (dets);
  switch (params->mode) {
    case NN_NMS_HARD:
      nms_hard (dets, params);
      break;
    case NN_NMS_WEIGHTED:
      nms_weighted (dets, params);
      break;
    default:
      break;
  }
  if (params->top_k > 0 && dets->len > params->top_k)
    g_array_set_size (dets, params->top_k);
}
