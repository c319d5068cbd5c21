/* nnpipe plugin: normalising the text a recogniser read (see
 * nntextnorm.h). */
#include "nntextnorm.h"

#include <string.h>

/* Han, kana, Hangul and the CJK letters of the symbols block (々〆〇) */
static gboolean
is_cjk_letter (gunichar c)
{
  return (c >= 0x3005 && c <= 0x3007) || (c >= 0x3040 && c <= 0x30ff)
      || (c >= 0x3130 && c <= 0x318f) || (c >= 0x3400 && c <= 0x4dbf)
      || (c >= 0x4e00 && c <= 0x9fff) || (c >= 0xac00 && c <= 0xd7af)
      || (c >= 0x1100 && c <= 0x11ff) || (c >= 0xf900 && c <= 0xfaff)
      || (c >= 0x20000 && c <= 0x3ffff);
}

static gboolean
is_latin_alnum (gunichar c)
{
  if (c >= 0xff01 && c <= 0xff5e)
    c -= 0xfee0; /* full-width form */
  return c < 0x80 && g_ascii_isalnum ((gchar) c);
}

gboolean
nn_text_is_latin (const gchar *text)
{
  gboolean alnum = FALSE;

  g_return_val_if_fail (text != NULL, FALSE);

  for (const gchar *p = text; *p; p = g_utf8_next_char (p)) {
    gunichar c = g_utf8_get_char (p);

    if (is_cjk_letter (c))
      return FALSE;
    alnum = alnum || is_latin_alnum (c);
  }
  return alnum;
}

/* The plain form of c on a Latin line (c itself to keep it). */
static gunichar
plain_form (gunichar c)
{
  if (c >= 0xff01 && c <= 0xff5e)
    return c - 0xfee0;
  switch (c) {
    case 0x3000:
      return ' ';
    case 0x3001:
    case 0xfe51:
      return ',';
    case 0x3002:
      return '.';
    case 0x2236:
      return ':';
    case 0x300c:
    case 0x300d:
    case 0x300e:
    case 0x300f:
      return '"';
    case 0x3010:
    case 0x3016:
      return '[';
    case 0x3011:
    case 0x3017:
      return ']';
    case 0x3014:
      return '(';
    case 0x3015:
      return ')';
    case 0x3008:
      return '<';
    case 0x3009:
      return '>';
    case 0x300a:
      return 0x00ab;
    case 0x300b:
      return 0x00bb;
    case 0xffe0:
      return 0x00a2;
    case 0xffe1:
      return 0x00a3;
    case 0xffe5:
      return 0x00a5;
    default:
      return c;
  }
}

gchar *
nn_text_normalize_latin (const gchar *text)
{
  GString *out;

  g_return_val_if_fail (text != NULL, NULL);

  if (!nn_text_is_latin (text))
    return g_strdup (text);
  out = g_string_sized_new (strlen (text));
  for (const gchar *p = text; *p; p = g_utf8_next_char (p)) {
    g_string_append_unichar (out, plain_form (g_utf8_get_char (p)));
  }
  return g_string_free (out, FALSE);
}
