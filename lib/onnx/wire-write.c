/* libnnpipe: protobuf wire-format writer (see wire-write.h). */
#include "onnx/wire-write.h"
#include "onnx/wire.h"

#include <string.h>

void
nnp_wire_put_varint (GByteArray *buf, guint64 v)
{
  guint8 tmp[10];
  guint n = 0;

  do {
    guint8 b = v & 0x7f;
    v >>= 7;
    tmp[n++] = v ? (b | 0x80) : b;
  } while (v);
  g_byte_array_append (buf, tmp, n);
}

static void
put_tag (GByteArray *buf, guint32 field, NnpWireType type)
{
  nnp_wire_put_varint (buf, ((guint64) field << 3) | (guint64) type);
}

void
nnp_wire_put_int (GByteArray *buf, guint32 field, int64_t v)
{
  put_tag (buf, field, NNP_WIRE_VARINT);
  nnp_wire_put_varint (buf, (guint64) v);
}

void
nnp_wire_put_float (GByteArray *buf, guint32 field, float v)
{
  guint32 bits;

  memcpy (&bits, &v, 4);
  bits = GUINT32_TO_LE (bits);
  put_tag (buf, field, NNP_WIRE_FIXED32);
  g_byte_array_append (buf, (const guint8 *) &bits, 4);
}

void
nnp_wire_put_bytes (GByteArray *buf, guint32 field, const void *data, gsize len)
{
  put_tag (buf, field, NNP_WIRE_LEN);
  nnp_wire_put_varint (buf, len);
  if (len > 0)
    g_byte_array_append (buf, data, (guint) len);
}

void
nnp_wire_put_string (GByteArray *buf, guint32 field, const char *s)
{
  nnp_wire_put_bytes (buf, field, s ? s : "", s ? strlen (s) : 0);
}

void
nnp_wire_put_message (GByteArray *buf, guint32 field, const GByteArray *sub)
{
  nnp_wire_put_bytes (buf, field, sub->data, sub->len);
}

void
nnp_wire_put_packed_int64 (GByteArray *buf, guint32 field, const int64_t *v, gsize n)
{
  g_autoptr (GByteArray) sub = NULL;

  if (n == 0)
    return;
  sub = g_byte_array_new ();
  for (gsize i = 0; i < n; i++)
    nnp_wire_put_varint (sub, (guint64) v[i]);
  nnp_wire_put_message (buf, field, sub);
}

void
nnp_wire_put_packed_float (GByteArray *buf, guint32 field, const float *v, gsize n)
{
  if (n == 0)
    return;
  put_tag (buf, field, NNP_WIRE_LEN);
  nnp_wire_put_varint (buf, n * 4);
  for (gsize i = 0; i < n; i++) {
    guint32 bits;
    memcpy (&bits, &v[i], 4);
    bits = GUINT32_TO_LE (bits);
    g_byte_array_append (buf, (const guint8 *) &bits, 4);
  }
}
