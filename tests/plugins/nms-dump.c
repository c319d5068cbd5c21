/* nms-dump: nnpipe's NMS (plugins/post/nnnms.c) on the inputs of an ONNX
 * NonMaxSuppression, printed as its selected_indices, one "batch class box"
 * line each, in ONNX's order (class by class, in selection order).
 *
 *   nms-dump N C IOU SCORE_THRESHOLD MAX_PER_CLASS BOXES.raw SCORES.raw
 *
 * BOXES.raw: float32 [1, N, 4] (y0, x0, y1, x1, corners in either order:
 * center_point_box = 0), SCORES.raw: float32 [1, C, N].  Used by
 * nms-vs-ort.py against ONNX Runtime. */
#include "nnnms.h"

#include <stdio.h>
#include <stdlib.h>

static gfloat *
read_floats (const gchar *path, gsize count)
{
  gchar *data = NULL;
  gsize len = 0;
  GError *error = NULL;

  if (!g_file_get_contents (path, &data, &len, &error)) {
    g_printerr ("nms-dump: %s\n", error->message);
    exit (1);
  }
  if (len != count * sizeof (gfloat)) {
    g_printerr ("nms-dump: %s has %" G_GSIZE_FORMAT " bytes, expected %" G_GSIZE_FORMAT "\n", path,
                len, count * sizeof (gfloat));
    exit (1);
  }
  return (gfloat *) data;
}

int
main (int argc, char **argv)
{
  guint n, c;
  gdouble thr;
  NnNmsParams p = { NN_NMS_HARD, 0.5, FALSE, 0, 0 };
  gfloat *boxes, *scores;
  GArray *dets;

  if (argc != 8) {
    g_printerr ("usage: nms-dump N C IOU SCORE_THRESHOLD MAX_PER_CLASS BOXES.raw SCORES.raw\n");
    return 2;
  }
  n = (guint) atoi (argv[1]);
  c = (guint) atoi (argv[2]);
  p.iou_threshold = g_ascii_strtod (argv[3], NULL);
  thr = g_ascii_strtod (argv[4], NULL);
  p.max_per_class = (guint) atoi (argv[5]);
  boxes = read_floats (argv[6], (gsize) n * 4);
  scores = read_floats (argv[7], (gsize) n * c);

  dets = g_array_new (FALSE, FALSE, sizeof (NnDetection));
  for (guint k = 0; k < c; k++)
    for (guint i = 0; i < n; i++) {
      const gfloat *b = boxes + 4 * (gsize) i;
      NnDetection d = { 0 };

      /* ONNX keeps a box when its score is above the threshold */
      if (!(scores[(gsize) k * n + i] > (gfloat) thr))
        continue;
      d.y0 = MIN (b[0], b[2]);
      d.y1 = MAX (b[0], b[2]);
      d.x0 = MIN (b[1], b[3]);
      d.x1 = MAX (b[1], b[3]);
      d.score = scores[(gsize) k * n + i];
      d.label = (gint) k;
      d.index = i;
      g_array_append_val (dets, d);
    }
  nn_nms (dets, &p);
  /* the survivors are in score order, which within a class is the
   * selection order */
  for (guint k = 0; k < c; k++)
    for (guint j = 0; j < dets->len; j++) {
      const NnDetection *d = &g_array_index (dets, NnDetection, j);

      if (d->label == (gint) k)
        printf ("0 %d %u\n", d->label, d->index);
    }
  g_array_unref (dets);
  g_free (boxes);
  g_free (scores);
  return 0;
}
