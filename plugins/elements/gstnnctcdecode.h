/* GStreamer nnpipe plugin: nnctcdecode, CTC text recogniser output -> text
 * on the original frame. */
#pragma once

#include <gst/gst.h>

#include "gstnndecoder.h"

G_BEGIN_DECLS

#define GST_TYPE_NN_CTC_DECODE (gst_nn_ctc_decode_get_type ())
G_DECLARE_FINAL_TYPE (GstNnCtcDecode, gst_nn_ctc_decode, GST, NN_CTC_DECODE,
    GstNnDecoder)

GST_ELEMENT_REGISTER_DECLARE (nnctcdecode);

/* Greedy CTC decoding of a T x C row-major score matrix (exposed for the
 * tests): per step the best class, repeats merged, @blank dropped.
 * @classes[i] is the UTF-8 string of class i (NULL entries decode to "").
 * Returns the text (free with g_free) and the mean best score of the kept
 * steps in @score (0 when none). */
gchar *gst_nn_ctc_greedy_decode (const gfloat *scores, gint steps,
    gint n_classes, gint blank, const gchar *const *classes, gdouble *score);

G_END_DECLS
