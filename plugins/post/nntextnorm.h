/* nnpipe plugin: normalising the text a recogniser read.
 *
 * Pure GLib code (no GStreamer).  PaddleOCR's Chinese recogniser has both
 * the ASCII characters and their full-width forms and CJK punctuation in
 * its key list, and on Latin text it sometimes picks the latter ("Ｈｅｌｌｏ：",
 * "a、b。").  On a Latin line those map to their plain forms. */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

/* TRUE when @text (UTF-8) is Latin text: at least one Latin letter or
 * digit (ASCII or full-width) and no Han, kana or Hangul character. */
gboolean nn_text_is_latin (const gchar *text);

/* @text with, when it is Latin text (nn_text_is_latin()), the full-width
 * forms U+FF01..U+FF5E mapped to ASCII, the ideographic space to a space,
 * the full-width cent, pound and yen signs to their plain forms and the
 * CJK punctuation to its Latin counterpart (、﹑ -> ",", 。 -> ".",
 * ∶ -> ":", 「」『』 -> '"', 【】〖〗 -> "[]", 〔〕 -> "()", 〈〉 -> "<>",
 * 《》 -> "«»"); other text unchanged.  Returns a new string (g_free). */
gchar *nn_text_normalize_latin (const gchar *text);

G_END_DECLS
