/* libnnpipe: bounds-checked protobuf wire-format reader (see wire.h). */
#include "onnx/wire.h"

#include <nnpipe/error.h>

static const char *
wire_type_name (NnpWireType type)
{
  switch (type) {
    case NNP_WIRE_VARINT: return "varint";
    case NNP_WIRE_FIXED64: return "fixed64";
    case NNP_WIRE_LEN: return "length-delimited";
    case NNP_WIRE_START_GROUP:
    case NNP_WIRE_END_GROUP: return "group";
    case NNP_WIRE_FIXED32: return "fixed32";
    default: return "invalid";
  }
}

void
nnp_wire_reader_init (NnpWireReader *reader, const guint8 *data, gsize size)
{
  reader->base = data;
  reader->pos = data;
  reader->end = data ? data + size : data;
}

void
nnp_wire_reader_sub (NnpWireReader *sub, const NnpWireReader *parent, const NnpWireField *field)
{
  sub->base = parent->base;
  sub->pos = field->data;
  sub->end = field->data ? field->data + field->len : field->data;
}

int
nnp_wire_next (NnpWireReader *reader, NnpWireField *field, GError **error)
{
  const guint8 *p = reader->pos;
  gsize offset;
  guint64 tag;

  if (p == NULL || p >= reader->end)
    return 0;
  offset = (gsize) (p - reader->base);
  memset (field, 0, sizeof (*field));
  field->offset = offset;
  if (!nnp_wire_read_varint (&p, reader->end, &tag)) {
    g_set_error (error, NNP_ERROR, NNP_ERROR_PARSE, "bad field tag at byte %" G_GSIZE_FORMAT,
                 offset);
    return -1;
  }
  if ((tag >> 3) == 0 || (tag >> 3) > 0x1fffffff) {
    g_set_error (error, NNP_ERROR, NNP_ERROR_PARSE,
                 "invalid field number %" G_GUINT64_FORMAT " at byte %" G_GSIZE_FORMAT, tag >> 3,
                 offset);
    return -1;
  }
  field->number = (guint32) (tag >> 3);
  field->type = (NnpWireType) (tag & 7);

  switch (field->type) {
    case NNP_WIRE_VARINT:
      if (!nnp_wire_read_varint (&p, reader->end, &field->value))
        goto truncated;
      break;
    case NNP_WIRE_FIXED64: {
      guint64 v;
      if (reader->end - p < 8)
        goto truncated;
      memcpy (&v, p, 8);
      field->value = GUINT64_FROM_LE (v);
      p += 8;
      break;
    }
    case NNP_WIRE_FIXED32: {
      guint32 v;
      if (reader->end - p < 4)
        goto truncated;
      memcpy (&v, p, 4);
      field->value = GUINT32_FROM_LE (v);
      p += 4;
      break;
    }
    case NNP_WIRE_LEN: {
      guint64 len;
      if (!nnp_wire_read_varint (&p, reader->end, &len))
        goto truncated;
      if (len > (guint64) (reader->end - p)) {
        g_set_error (error, NNP_ERROR, NNP_ERROR_PARSE,
                     "field %u at byte %" G_GSIZE_FORMAT " claims %" G_GUINT64_FORMAT
                     " bytes, only %" G_GSIZE_FORMAT " remain",
                     field->number, offset, len, (gsize) (reader->end - p));
        return -1;
      }
      field->data = p;
      field->len = (gsize) len;
      p += len;
      break;
    }
    case NNP_WIRE_START_GROUP:
    case NNP_WIRE_END_GROUP:
      g_set_error (error, NNP_ERROR, NNP_ERROR_PARSE,
                   "field %u at byte %" G_GSIZE_FORMAT " is a group (not used by ONNX)",
                   field->number, offset);
      return -1;
    default:
      g_set_error (error, NNP_ERROR, NNP_ERROR_PARSE,
                   "field %u at byte %" G_GSIZE_FORMAT " has invalid wire type %d", field->number,
                   offset, (int) field->type);
      return -1;
  }
  reader->pos = p;
  return 1;

truncated:
  g_set_error (error, NNP_ERROR, NNP_ERROR_PARSE,
               "field %u at byte %" G_GSIZE_FORMAT " is truncated", field->number, offset);
  return -1;
}

gboolean
nnp_wire_expect (const NnpWireField *field, NnpWireType type, GError **error)
{
  if (field->type == type)
    return TRUE;
  g_set_error (error, NNP_ERROR, NNP_ERROR_PARSE,
               "field %u at byte %" G_GSIZE_FORMAT " is %s, expected %s", field->number,
               field->offset, wire_type_name (field->type), wire_type_name (type));
  return FALSE;
}

gboolean
nnp_wire_get_int64 (const NnpWireField *field, int64_t *out, GError **error)
{
  if (!nnp_wire_expect (field, NNP_WIRE_VARINT, error))
    return FALSE;
  *out = (int64_t) field->value;
  return TRUE;
}

gboolean
nnp_wire_get_float (const NnpWireField *field, float *out, GError **error)
{
  guint32 bits;

  if (!nnp_wire_expect (field, NNP_WIRE_FIXED32, error))
    return FALSE;
  bits = (guint32) field->value;
  memcpy (out, &bits, sizeof (float));
  return TRUE;
}

static gboolean
get_string (const NnpWireField *field, char **out, gboolean strict, GError **error)
{
  char *s;

  if (!nnp_wire_expect (field, NNP_WIRE_LEN, error))
    return FALSE;
  if (strict) {
    for (gsize i = 0; i < field->len; i++)
      if (field->data[i] < 0x20 || field->data[i] == 0x7f) {
        g_set_error (error, NNP_ERROR, NNP_ERROR_PARSE,
                     "string field %u at byte %" G_GSIZE_FORMAT " contains a control character",
                     field->number, field->offset);
        return FALSE;
      }
  }
  if (!g_utf8_validate_len ((const char *) field->data, field->len, NULL)) {
    g_set_error (error, NNP_ERROR, NNP_ERROR_PARSE,
                 "string field %u at byte %" G_GSIZE_FORMAT " is not valid UTF-8", field->number,
                 field->offset);
    return FALSE;
  }
  s = g_malloc (field->len + 1);
  for (gsize i = 0; i < field->len; i++)
    s[i] = field->data[i] < 0x20 || field->data[i] == 0x7f ? ' ' : (char) field->data[i];
  s[field->len] = '\0';
  g_free (*out);
  *out = s;
  return TRUE;
}

gboolean
nnp_wire_get_string (const NnpWireField *field, char **out, GError **error)
{
  return get_string (field, out, TRUE, error);
}

gboolean
nnp_wire_get_text (const NnpWireField *field, char **out, GError **error)
{
  return get_string (field, out, FALSE, error);
}

gboolean
nnp_wire_repeated_init (NnpWireRepeated *it, const NnpWireField *field, NnpWireType elem,
                        GError **error)
{
  memset (it, 0, sizeof (*it));
  it->elem = elem;
  if (field->type == elem) {
    /* unpacked: one value per field */
    it->count = 1;
    it->single = field->value;
    it->single_left = TRUE;
    return TRUE;
  }
  if (field->type != NNP_WIRE_LEN) {
    g_set_error (error, NNP_ERROR, NNP_ERROR_PARSE,
                 "repeated field %u at byte %" G_GSIZE_FORMAT " is %s, expected %s or packed",
                 field->number, field->offset, wire_type_name (field->type), wire_type_name (elem));
    return FALSE;
  }
  it->data = field->data ? field->data : (const guint8 *) "";
  it->pos = it->data;
  it->end = it->data + field->len;
  switch (elem) {
    case NNP_WIRE_FIXED32:
    case NNP_WIRE_FIXED64: {
      gsize esize = elem == NNP_WIRE_FIXED32 ? 4 : 8;
      if (field->len % esize != 0) {
        g_set_error (error, NNP_ERROR, NNP_ERROR_PARSE,
                     "packed field %u at byte %" G_GSIZE_FORMAT " has %" G_GSIZE_FORMAT
                     " bytes, not a multiple of %" G_GSIZE_FORMAT,
                     field->number, field->offset, field->len, esize);
        return FALSE;
      }
      it->count = field->len / esize;
      return TRUE;
    }
    case NNP_WIRE_VARINT: {
      /* validate every varint once so that _next() cannot fail early */
      const guint8 *p = it->data;
      gsize n = 0;
      guint64 v;

      while (p < it->end) {
        if (!nnp_wire_read_varint (&p, it->end, &v)) {
          g_set_error (error, NNP_ERROR, NNP_ERROR_PARSE,
                       "packed field %u at byte %" G_GSIZE_FORMAT " holds a malformed varint",
                       field->number, field->offset);
          return FALSE;
        }
        n++;
      }
      it->count = n;
      return TRUE;
    }
    default:
      g_set_error (error, NNP_ERROR, NNP_ERROR_PARSE, "field %u: bad element wire type",
                   field->number);
      return FALSE;
  }
}
