/* nnpipe plugin: finding an icon at the start of a text line's crop (see
 * nncropicon.h). */
#include "nncropicon.h"

#include <math.h>
#include <string.h>

/* the word rule of nncropicon.h, in units of the ink's height */
#define CLOSE_GAP 0.25
#define MIN_WIDTH 0.75
#define MAX_WIDTH 1.35
/* set apart */
#define MIN_HEIGHT 0.85
#define MIN_GAP 0.5
#define GAP_OVER_WORDS 1.5
#define MIN_GAP_TWO_WORDS 0.7
/* a widget beside its label: above the label's top and below its bottom */
#define WIDGET_ABOVE 0.05
#define WIDGET_BELOW 0.02
#define WIDGET_GAP 0.4
/* a filled box */
#define FILLED_HEIGHT 0.85
#define FILLED_SHARE 0.75
#define FILLED_GAP 0.35
/* ink: farther from the background than this share of the crop's 97th
 * percentile difference, and than MIN_INK levels; no icon is looked for
 * in a crop with less contrast than MIN_CONTRAST levels */
#define INK_SHARE 0.4
#define MIN_INK 20.0
#define MIN_CONTRAST 40.0

typedef struct
{
  gint start, end; /* columns [start, end) */
} Run;

/* The @q quantile of @n levels in [0, 255] (a histogram of whole levels:
 * no sort of the crop's thousands of samples). */
static gfloat
quantile (const gfloat *vals, gsize n, gdouble q)
{
  guint64 hist[256] = { 0 }, rank, seen = 0;

  for (gsize i = 0; i < n; i++)
    hist[(gint) CLAMP (vals[i] + 0.5f, 0.0f, 255.0f)]++;
  rank = (guint64) (q * (n - 1));
  for (gint b = 0; b < 256; b++) {
    seen += hist[b];
    if (seen > rank)
      return (gfloat) b;
  }
  return 255.0f;
}

/* rows [*top, *bottom) holding ink in columns [c0, c1); FALSE if none */
static gboolean
ink_rows (const guint8 *ink, gint height, gint used, gint c0, gint c1,
    gint *top, gint *bottom)
{
  *top = -1;
  *bottom = -1;
  for (gint v = 0; v < height; v++)
    for (gint u = c0; u < c1; u++)
      if (ink[(gsize) v * used + u]) {
        if (*top < 0)
          *top = v;
        *bottom = v + 1;
        break;
      }
  return *top >= 0;
}

gint
nn_crop_find_icon (const gfloat *t, gint height, gint width, gint used,
    const gfloat mul[3], const gfloat add[3])
{
  gsize plane = (gsize) width * height, n = (gsize) used * height;
  gfloat *gray, *diff, bg, hi, level;
  guint8 *ink;
  Run *words;
  gint n_words = 0, top, bottom, top1, bottom1, top2, bottom2, cut = 0;
  gdouble th, w1, h1, g1, median = 0, filled;
  gsize n_ink = 0;
  gboolean apart, widget;
  guint n_border = 0;

  g_return_val_if_fail (t != NULL && mul != NULL && add != NULL, 0);
  if (height < 4 || used < 4 || used > width)
    return 0;
  for (gint c = 0; c < 3; c++)
    if (mul[c] == 0)
      return 0;

  gray = g_new (gfloat, n);
  diff = g_new (gfloat, MAX (n, 2 * (gsize) (used + height))); /* border too */
  ink = g_new0 (guint8, n);
  words = g_new (Run, used);

  /* the 8-bit grey level, the background (median of the border) */
  for (gint v = 0; v < height; v++)
    for (gint u = 0; u < used; u++) {
      gsize o = (gsize) v * width + u;
      gfloat g = 0;

      for (gint c = 0; c < 3; c++)
        g += (t[o + c * plane] - add[c]) / mul[c];
      gray[(gsize) v * used + u] = g / 3;
    }
  for (gint u = 0; u < used; u++) {
    diff[n_border++] = gray[u];
    diff[n_border++] = gray[(gsize) (height - 1) * used + u];
  }
  for (gint v = 1; v < height - 1; v++) {
    diff[n_border++] = gray[(gsize) v * used];
    diff[n_border++] = gray[(gsize) v * used + used - 1];
  }
  bg = quantile (diff, n_border, 0.5);

  /* ink */
  for (gsize i = 0; i < n; i++)
    diff[i] = fabsf (gray[i] - bg);
  hi = quantile (diff, n, 0.97);
  if (hi < MIN_CONTRAST)
    goto done;
  level = MAX (MIN_INK, INK_SHARE * hi);
  for (gsize i = 0; i < n; i++)
    ink[i] = fabsf (gray[i] - bg) > level;

  /* the ink's height, then its words: runs of ink columns, short gaps
   * closed */
  if (!ink_rows (ink, height, used, 0, used, &top, &bottom))
    goto done;
  th = bottom - top;
  for (gint u = 0; u < used;) {
    gint end;

    if (!ink_rows (ink, height, used, u, u + 1, &top, &bottom)) {
      u++;
      continue;
    }
    for (end = u + 1; end < used
         && ink_rows (ink, height, used, end, end + 1, &top, &bottom);
         end++)
      ;
    if (n_words > 0 && u - words[n_words - 1].end <= CLOSE_GAP * th)
      words[n_words - 1].end = end;
    else
      words[n_words++] = (Run){ u, end };
    u = end;
  }
  if (n_words < 2)
    goto done;

  /* the first word against the rules: its size, how much of its box is
   * ink, where it stands against the rest of the line */
  ink_rows (ink, height, used, words[0].start, words[0].end, &top1, &bottom1);
  ink_rows (ink, height, used, words[1].start, words[n_words - 1].end, &top2,
      &bottom2);
  for (gint v = top1; v < bottom1; v++)
    for (gint u = words[0].start; u < words[0].end; u++)
      n_ink += ink[(gsize) v * used + u];
  w1 = (words[0].end - words[0].start) / th;
  h1 = (bottom1 - top1) / th;
  g1 = (words[1].start - words[0].end) / th;
  filled = (gdouble) n_ink
      / ((gsize) (bottom1 - top1) * (gsize) (words[0].end - words[0].start));
  if (n_words > 2) {
    gdouble *gaps = g_new (gdouble, n_words - 2);

    for (gint i = 1; i < n_words - 1; i++)
      gaps[i - 1] = (words[i + 1].start - words[i].end) / th;
    for (gint i = 1; i < n_words - 2; i++) /* insertion sort: few words */
      for (gint j = i; j > 0 && gaps[j - 1] > gaps[j]; j--) {
        gdouble x = gaps[j];

        gaps[j] = gaps[j - 1];
        gaps[j - 1] = x;
      }
    median = gaps[(n_words - 2) / 2];
    g_free (gaps);
  }
  apart = h1 >= MIN_HEIGHT && g1 >= MIN_GAP
      && (n_words > 2 ? g1 >= GAP_OVER_WORDS * median
                      : g1 >= MIN_GAP_TWO_WORDS);
  widget = (top2 - top1) >= WIDGET_ABOVE * th
      && (bottom1 - bottom2) >= MAX (1.0, WIDGET_BELOW * th)
      && g1 >= WIDGET_GAP;
  if (w1 >= MIN_WIDTH && w1 <= MAX_WIDTH
      && (apart || widget
          || (h1 >= FILLED_HEIGHT && filled >= FILLED_SHARE
              && g1 >= FILLED_GAP)))
    cut = (words[0].end + words[1].start) / 2;

done:
  g_free (words);
  g_free (ink);
  g_free (diff);
  g_free (gray);
  return cut;
}

void
nn_crop_shift_left (gfloat *t, gint height, gint width, gint used, gint from)
{
  gsize plane = (gsize) width * height;

  g_return_if_fail (t != NULL);
  g_return_if_fail (from >= 0 && from <= used && used <= width);

  for (gint c = 0; c < 3; c++)
    for (gint v = 0; v < height; v++) {
      gfloat *row = t + c * plane + (gsize) v * width;

      memmove (row, row + from, (gsize) (used - from) * sizeof (gfloat));
      for (gint u = used - from; u < used; u++)
        row[u] = 0.0f;
    }
}
