/* nnpipe plugin: object-detection box decoding (see nndetect.h). */
#include "nndetect.h"

#include <math.h>
#include <string.h>

static GQuark
nn_detect_error_quark (void)
{
  return g_quark_from_static_string ("nn-detect-error-quark");
}

static void set_error (GError **error, const gchar *format, ...)
    G_GNUC_PRINTF (2, 3);

static void
set_error (GError **error, const gchar *format, ...)
{
  va_list ap;
  gchar *msg;

  va_start (ap, format);
  msg = g_strdup_vprintf (format, ap);
  va_end (ap);
  g_set_error_literal (error, nn_detect_error_quark (), 0, msg);
  g_free (msg);
}

void
nn_ssd_anchor_options_init_blazeface (NnSsdAnchorOptions *opts, gint input_size)
{
  gint base = input_size >= 256 ? 16 : 8;

  memset (opts, 0, sizeof (*opts));
  opts->input_width = opts->input_height = input_size;
  opts->min_scale = 0.1484375;
  opts->max_scale = 0.75;
  opts->offset_x = opts->offset_y = 0.5;
  opts->n_layers = 4;
  opts->strides[0] = base;
  opts->strides[1] = opts->strides[2] = opts->strides[3] = 2 * base;
  opts->n_aspect_ratios = 1;
  opts->aspect_ratios[0] = 1.0;
  opts->interpolated_scale_aspect_ratio = 1.0;
  opts->fixed_anchor_size = TRUE;
}

static gdouble
anchor_scale (gdouble min_scale, gdouble max_scale, gint index, gint n)
{
  if (n == 1)
    return (min_scale + max_scale) * 0.5;
  return min_scale + (max_scale - min_scale) * index / (n - 1.0);
}

GArray *
nn_ssd_anchors_generate (const NnSsdAnchorOptions *opts, GError **error)
{
  GArray *anchors;
  gint layer = 0, distinct = 0;

  g_return_val_if_fail (opts != NULL, NULL);
  if (opts->input_width <= 0 || opts->input_height <= 0) {
    set_error (error, "anchor input size %dx%d is not positive",
        opts->input_width, opts->input_height);
    return NULL;
  }
  if (opts->n_layers <= 0 || opts->n_layers > NN_SSD_MAX_LAYERS) {
    set_error (error, "%d anchor layers (strides): 1 to %d expected",
        opts->n_layers, NN_SSD_MAX_LAYERS);
    return NULL;
  }
  for (gint i = 0; i < opts->n_layers; i++)
    if (opts->strides[i] <= 0) {
      set_error (error, "anchor stride %d is %d, not positive", i,
          opts->strides[i]);
      return NULL;
    }

  anchors = g_array_new (FALSE, FALSE, sizeof (NnAnchor));
  while (layer < opts->n_layers) {
    gdouble heights[4 * NN_SSD_MAX_LAYERS * (NN_SSD_MAX_RATIOS + 1)];
    gdouble widths[G_N_ELEMENTS (heights)];
    gint n_cell = 0, last = layer;
    gint stride = opts->strides[layer], fw, fh;

    while (last < opts->n_layers && opts->strides[last] == stride) {
      gdouble scale =
          anchor_scale (opts->min_scale, opts->max_scale, last, opts->n_layers);

      if (last == 0 && opts->reduce_boxes_in_lowest_layer) {
        static const gdouble ar[3] = { 1.0, 2.0, 0.5 };
        gdouble sc[3] = { 0.1, scale, scale };

        for (gint k = 0; k < 3; k++) {
          heights[n_cell] = sc[k] / sqrt (ar[k]);
          widths[n_cell++] = sc[k] * sqrt (ar[k]);
        }
      } else {
        for (gint k = 0; k < opts->n_aspect_ratios; k++) {
          gdouble r = sqrt (opts->aspect_ratios[k]);

          heights[n_cell] = scale / r;
          widths[n_cell++] = scale * r;
        }
        if (opts->interpolated_scale_aspect_ratio > 0) {
          gdouble next = last == opts->n_layers - 1
              ? 1.0
              : anchor_scale (opts->min_scale, opts->max_scale, last + 1,
                  opts->n_layers);
          gdouble s = sqrt (scale * next);
          gdouble r = sqrt (opts->interpolated_scale_aspect_ratio);

          heights[n_cell] = s / r;
          widths[n_cell++] = s * r;
        }
      }
      last++;
    }
    if (opts->anchors_per_cell[distinct] > 0) {
      n_cell =
          MIN (opts->anchors_per_cell[distinct], (gint) G_N_ELEMENTS (heights));
      for (gint k = 0; k < n_cell; k++)
        heights[k] = widths[k] = 1.0;
    }
    fh = (opts->input_height + stride - 1) / stride;
    fw = (opts->input_width + stride - 1) / stride;
    for (gint y = 0; y < fh; y++)
      for (gint x = 0; x < fw; x++)
        for (gint k = 0; k < n_cell; k++) {
          NnAnchor a;

          a.cx = (gfloat) ((x + opts->offset_x) / fw);
          a.cy = (gfloat) ((y + opts->offset_y) / fh);
          if (opts->fixed_anchor_size || opts->anchors_per_cell[distinct] > 0) {
            a.w = a.h = 1.0f;
          } else {
            a.w = (gfloat) widths[k];
            a.h = (gfloat) heights[k];
          }
          g_array_append_val (anchors, a);
        }
    layer = last;
    distinct++;
  }
  return anchors;
}

void
nn_detect_params_init (NnDetectParams *params)
{
  memset (params, 0, sizeof (*params));
  params->layout = NN_DETECT_LAYOUT_SSD;
  params->activation = NN_SCORE_NONE;
  params->score_threshold = 0.5;
  params->background_label = -1;
  params->keypoint_offset = 4;
  params->box_format = NN_BOX_CXCYWH;
}

static inline gfloat
sigmoid (gfloat x)
{
  return 1.0f / (1.0f + expf (-x));
}

/* Best class of a row of @n scores @step floats apart, after the
 * activation; -1 when only the background class remains. */
static gint
best_class (const NnDetectParams *p, const gfloat *s, guint n, gsize step,
    gfloat *score)
{
  gint best = -1;
  gfloat best_raw = -INFINITY, sum = 0.0f, max_raw = -INFINITY;

  for (guint c = 0; c < n; c++) {
    gfloat v = s[c * step];

    if (p->score_clip > 0)
      v = CLAMP (v, -p->score_clip, p->score_clip);
    max_raw = MAX (max_raw, v);
    if ((gint) c == p->background_label)
      continue;
    if (v > best_raw) {
      best_raw = v;
      best = (gint) c;
    }
  }
  if (best < 0) {
    *score = 0.0f;
    return -1;
  }
  switch (p->activation) {
    case NN_SCORE_SIGMOID:
      *score = sigmoid (best_raw);
      break;
    case NN_SCORE_SOFTMAX:
      for (guint c = 0; c < n; c++) {
        gfloat v = s[c * step];

        if (p->score_clip > 0)
          v = CLAMP (v, -p->score_clip, p->score_clip);
        sum += expf (v - max_raw);
      }
      *score = expf (best_raw - max_raw) / sum;
      break;
    default:
      *score = best_raw;
      break;
  }
  return best;
}

static void
set_box (NnDetection *d, NnBoxFormat format, const gfloat *b, gsize step,
    gfloat sx, gfloat sy)
{
  gfloat v0 = b[0], v1 = b[step], v2 = b[2 * step], v3 = b[3 * step];

  switch (format) {
    case NN_BOX_XYXY:
      d->x0 = MIN (v0, v2) * sx;
      d->x1 = MAX (v0, v2) * sx;
      d->y0 = MIN (v1, v3) * sy;
      d->y1 = MAX (v1, v3) * sy;
      break;
    case NN_BOX_YXYX:
      d->y0 = MIN (v0, v2) * sy;
      d->y1 = MAX (v0, v2) * sy;
      d->x0 = MIN (v1, v3) * sx;
      d->x1 = MAX (v1, v3) * sx;
      break;
    default:
      d->x0 = (v0 - 0.5f * fabsf (v2)) * sx;
      d->x1 = (v0 + 0.5f * fabsf (v2)) * sx;
      d->y0 = (v1 - 0.5f * fabsf (v3)) * sy;
      d->y1 = (v1 + 0.5f * fabsf (v3)) * sy;
      break;
  }
}

/* Append a detection whose box is written in a row as @format. */
static void
append_box (GArray *out, NnBoxFormat format, const gfloat *b, gsize step,
    gfloat sx, gfloat sy, gfloat score, gint label, guint index)
{
  NnDetection d;

  memset (&d, 0, sizeof (d));
  set_box (&d, format, b, step, sx, sy);
  d.score = score;
  d.label = label;
  d.index = index;
  g_array_append_val (out, d);
}

static gboolean
check_input_size (const NnDetectParams *p, GError **error)
{
  if (p->input_width <= 0 || p->input_height <= 0) {
    set_error (error, "model input size %dx%d is not positive", p->input_width,
        p->input_height);
    return FALSE;
  }
  return TRUE;
}

gboolean
nn_detect_decode_ssd (const NnDetectParams *p, const gfloat *scores,
    guint n_classes, const gfloat *boxes, guint n_coords, guint n, GArray *out,
    GError **error)
{
  gdouble sc[4];
  gboolean yx = p->box_format == NN_BOX_YXYX;

  if (!check_input_size (p, error))
    return FALSE;
  if (n != p->n_anchors) {
    set_error (error, "%u boxes but %u anchors (check the anchor options)", n,
        p->n_anchors);
    return FALSE;
  }
  if (n_classes == 0 || n_coords < 4) {
    set_error (error,
        "SSD rows of %u scores and %u coordinates: at least 1 and 4 expected",
        n_classes, n_coords);
    return FALSE;
  }
  if (p->n_keypoints > NN_DETECT_MAX_KEYPOINTS
      || (p->n_keypoints > 0
          && (guint) (p->keypoint_offset + 2 * p->n_keypoints) > n_coords)) {
    set_error (error,
        "%d keypoints from offset %d do not fit rows of %u coordinates (at most %d keypoints)",
        p->n_keypoints, p->keypoint_offset, n_coords, NN_DETECT_MAX_KEYPOINTS);
    return FALSE;
  }
  sc[0] = p->box_scale[0] > 0 ? p->box_scale[0] : p->input_width;
  sc[1] = p->box_scale[1] > 0 ? p->box_scale[1] : p->input_height;
  sc[2] = p->box_scale[2] > 0 ? p->box_scale[2] : p->input_width;
  sc[3] = p->box_scale[3] > 0 ? p->box_scale[3] : p->input_height;

  for (guint i = 0; i < n; i++) {
    const NnAnchor *a = &p->anchors[i];
    const gfloat *r = boxes + (gsize) i * n_coords;
    NnDetection d;
    gfloat score, dx, dy, dw, dh, cx, cy, w, h;
    gint label =
        best_class (p, scores + (gsize) i * n_classes, n_classes, 1, &score);

    if (label < 0 || score < p->score_threshold)
      continue;
    dx = yx ? r[1] : r[0];
    dy = yx ? r[0] : r[1];
    dw = yx ? r[3] : r[2];
    dh = yx ? r[2] : r[3];
    cx = (gfloat) (dx / sc[0] * a->w + a->cx);
    cy = (gfloat) (dy / sc[1] * a->h + a->cy);
    if (p->box_exp) {
      w = (gfloat) (expf ((gfloat) (dw / sc[2])) * a->w);
      h = (gfloat) (expf ((gfloat) (dh / sc[3])) * a->h);
    } else {
      w = (gfloat) (dw / sc[2] * a->w);
      h = (gfloat) (dh / sc[3] * a->h);
    }
    memset (&d, 0, sizeof (d));
    d.x0 = (cx - 0.5f * w) * p->input_width;
    d.x1 = (cx + 0.5f * w) * p->input_width;
    d.y0 = (cy - 0.5f * h) * p->input_height;
    d.y1 = (cy + 0.5f * h) * p->input_height;
    if (d.x1 < d.x0 || d.y1 < d.y0)
      continue; /* a negative size: not a box */
    d.score = score;
    d.label = label;
    d.index = i;
    d.n_keypoints = p->n_keypoints;
    for (gint k = 0; k < p->n_keypoints; k++) {
      const gfloat *kp = r + p->keypoint_offset + 2 * k;
      gfloat kx = yx ? kp[1] : kp[0], ky = yx ? kp[0] : kp[1];

      d.keypoints[2 * k] =
          (gfloat) ((kx / sc[0] * a->w + a->cx) * p->input_width);
      d.keypoints[2 * k + 1] =
          (gfloat) ((ky / sc[1] * a->h + a->cy) * p->input_height);
    }
    g_array_append_val (out, d);
  }
  return TRUE;
}

gboolean
nn_detect_decode_yolov5 (const NnDetectParams *p, const gfloat *data, guint n,
    guint row, GArray *out, GError **error)
{
  if (row < 6) {
    set_error (error,
        "YOLO v5 rows of %u values: 5 + classes (at least 6) expected", row);
    return FALSE;
  }
  for (guint i = 0; i < n; i++) {
    const gfloat *r = data + (gsize) i * row;
    gfloat obj = r[4], cls;
    gint label;

    if (p->activation == NN_SCORE_SIGMOID)
      obj = sigmoid (obj);
    if (obj < p->score_threshold)
      continue; /* obj * class <= obj */
    label = best_class (p, r + 5, row - 5, 1, &cls);
    if (label < 0 || obj * cls < p->score_threshold)
      continue;
    append_box (out, NN_BOX_CXCYWH, r, 1, 1.0f, 1.0f, obj * cls, label, i);
  }
  return TRUE;
}

gboolean
nn_detect_decode_yolov8 (const NnDetectParams *p, const gfloat *data,
    guint rows, guint n, GArray *out, GError **error)
{
  guint box_rows = p->dfl_bins > 0 ? 4 * (guint) p->dfl_bins : 4;
  guint n_classes;
  guint *grid_stride = NULL, *grid_x = NULL, *grid_y = NULL;
  gfloat *prob = NULL;

  if (rows <= box_rows) {
    set_error (error,
        "YOLO v8 tensor of %u rows: %u box rows + classes expected", rows,
        box_rows);
    return FALSE;
  }
  n_classes = rows - box_rows;
  if (p->dfl_bins > 0) {
    guint k = 0, total = 0;

    if (!check_input_size (p, error))
      return FALSE;
    for (gint s = 0; s < p->n_strides; s++) {
      guint st = (guint) MAX (p->strides[s], 1);

      total += (((guint) p->input_width + st - 1) / st)
          * (((guint) p->input_height + st - 1) / st);
    }
    if (total != n || p->n_strides == 0) {
      set_error (error,
          "YOLO v8 DFL: %u points, but the strides' grids over %dx%d give %u",
          n, p->input_width, p->input_height, total);
      return FALSE;
    }
    grid_stride = g_new (guint, n);
    grid_x = g_new (guint, n);
    grid_y = g_new (guint, n);
    for (gint s = 0; s < p->n_strides && k < n; s++) {
      guint st = (guint) MAX (p->strides[s], 1);
      guint gw = ((guint) p->input_width + st - 1) / st;
      guint gh = ((guint) p->input_height + st - 1) / st;

      for (guint y = 0; y < gh && k < n; y++)
        for (guint x = 0; x < gw && k < n; x++, k++) {
          grid_stride[k] = st;
          grid_x[k] = x;
          grid_y[k] = y;
        }
    }
    prob = g_new (gfloat, p->dfl_bins);
  }

  for (guint i = 0; i < n; i++) {
    NnDetection d;
    gfloat score;
    gint label =
        best_class (p, data + (gsize) box_rows * n + i, n_classes, n, &score);

    if (label < 0 || score < p->score_threshold)
      continue;
    memset (&d, 0, sizeof (d));
    if (p->dfl_bins > 0) {
      gfloat dist[4];

      /* distance of each side (left, top, right, bottom) from the grid
       * point: the expectation of a softmax over the bins, in strides */
      for (gint side = 0; side < 4; side++) {
        const gfloat *b = data + (gsize) side * p->dfl_bins * n + i;
        gfloat mx = -INFINITY, sum = 0.0f, e = 0.0f;

        for (gint k = 0; k < p->dfl_bins; k++)
          mx = MAX (mx, b[(gsize) k * n]);
        for (gint k = 0; k < p->dfl_bins; k++) {
          prob[k] = expf (b[(gsize) k * n] - mx);
          sum += prob[k];
        }
        for (gint k = 0; k < p->dfl_bins; k++)
          e += k * prob[k] / sum;
        dist[side] = e;
      }
      d.x0 = (grid_x[i] + 0.5f - dist[0]) * grid_stride[i];
      d.y0 = (grid_y[i] + 0.5f - dist[1]) * grid_stride[i];
      d.x1 = (grid_x[i] + 0.5f + dist[2]) * grid_stride[i];
      d.y1 = (grid_y[i] + 0.5f + dist[3]) * grid_stride[i];
    } else {
      set_box (&d, NN_BOX_CXCYWH, data + i, n, 1.0f, 1.0f);
    }
    d.score = score;
    d.label = label;
    d.index = i;
    g_array_append_val (out, d);
  }
  g_free (grid_stride);
  g_free (grid_x);
  g_free (grid_y);
  g_free (prob);
  return TRUE;
}

gboolean
nn_detect_decode_boxes_scores (const NnDetectParams *p, const gfloat *boxes,
    const gfloat *scores, guint n, guint n_classes, GArray *out, GError **error)
{
  gfloat sx = 1.0f, sy = 1.0f;

  if (n_classes == 0) {
    set_error (error, "a scores tensor without classes");
    return FALSE;
  }
  if (p->box_normalized) {
    if (!check_input_size (p, error))
      return FALSE;
    sx = (gfloat) p->input_width;
    sy = (gfloat) p->input_height;
  }
  for (guint i = 0; i < n; i++) {
    gfloat score;
    gint label =
        best_class (p, scores + (gsize) i * n_classes, n_classes, 1, &score);

    if (label < 0 || score < p->score_threshold)
      continue;
    append_box (out, p->box_format, boxes + (gsize) i * 4, 1, sx, sy, score,
        label, i);
  }
  return TRUE;
}

gboolean
nn_detect_decode_nms_indices (const NnDetectParams *p, const gfloat *boxes,
    const gfloat *scores, guint n, guint n_classes, const gint64 *indices,
    guint k, GArray *out, GError **error)
{
  gfloat sx = 1.0f, sy = 1.0f;

  if (p->box_normalized) {
    if (!check_input_size (p, error))
      return FALSE;
    sx = (gfloat) p->input_width;
    sy = (gfloat) p->input_height;
  }
  for (guint i = 0; i < k; i++) {
    const gint64 *t = indices + 3 * (gsize) i;
    gfloat score;

    if (t[0] != 0 || t[1] < 0 || t[1] >= n_classes || t[2] < 0 || t[2] >= n) {
      set_error (error,
          "selected index %u (%" G_GINT64_FORMAT ", %" G_GINT64_FORMAT
          ", %" G_GINT64_FORMAT ") outside batch 0, %u classes, %u boxes",
          i, t[0], t[1], t[2], n_classes, n);
      return FALSE;
    }
    score = scores[(gsize) t[1] * n + (gsize) t[2]];
    if (p->activation == NN_SCORE_SIGMOID)
      score = sigmoid (score);
    if (score < p->score_threshold || (gint) t[1] == p->background_label)
      continue;
    append_box (out, p->box_format, boxes + (gsize) t[2] * 4, 1, sx, sy, score,
        (gint) t[1], (guint) t[2]);
  }
  return TRUE;
}

gfloat
nn_detection_iou (const NnDetection *a, const NnDetection *b)
{
  gfloat iw = MIN (a->x1, b->x1) - MAX (a->x0, b->x0);
  gfloat ih = MIN (a->y1, b->y1) - MAX (a->y0, b->y0);
  gfloat aa = (a->x1 - a->x0) * (a->y1 - a->y0);
  gfloat ab = (b->x1 - b->x0) * (b->y1 - b->y0);
  gfloat inter;

  if (aa <= 0.0f || ab <= 0.0f || iw <= 0.0f || ih <= 0.0f)
    return 0.0f;
  inter = iw * ih;
  return inter / (aa + ab - inter);
}
