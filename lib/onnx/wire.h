/* libnnpipe (internal): a bounds-checked protobuf wire-format reader.
 *
 * Just enough protobuf to read ONNX: no code generator, no reflection.  A
 * reader walks one message's bytes field by field; every length is checked
 * against the bytes that remain, so no input can make it read out of bounds.
 * Nothing here allocates except nnp_wire_get_string().
 *
 * Errors (NNP_ERROR_PARSE) name the byte offset from the start of the buffer
 * the outermost reader was made on; callers prefix where they were. */
#pragma once

#include <glib.h>
#include <stdint.h>
#include <string.h>

G_BEGIN_DECLS

typedef enum {
  NNP_WIRE_VARINT = 0,
  NNP_WIRE_FIXED64 = 1,
  NNP_WIRE_LEN = 2,
  NNP_WIRE_START_GROUP = 3, /* rejected */
  NNP_WIRE_END_GROUP = 4,   /* rejected */
  NNP_WIRE_FIXED32 = 5,
} NnpWireType;

typedef struct {
  const guint8 *base; /* start of the outermost buffer (offsets in messages) */
  const guint8 *pos;
  const guint8 *end;
} NnpWireReader;

/* One field as read by nnp_wire_next().  Borrowed pointers into the buffer. */
typedef struct {
  guint32 number;
  NnpWireType type;
  guint64 value;      /* VARINT, FIXED32 (low 32 bits), FIXED64 */
  const guint8 *data; /* LEN: payload */
  gsize len;          /* LEN: payload size */
  gsize offset;       /* offset of the tag from reader->base */
} NnpWireField;

/* A reader over data[0..size). */
void nnp_wire_reader_init (NnpWireReader *reader, const guint8 *data, gsize size);
/* A reader over the payload of a LEN field read from parent (same base). */
void nnp_wire_reader_sub (NnpWireReader *sub, const NnpWireReader *parent,
                          const NnpWireField *field);

/* Read the next field.  Returns 1 with *field filled, 0 at the end of the
 * message, -1 with error set on malformed bytes (bad tag, varint longer than
 * 10 bytes or overflowing 64 bits, truncation, length past the end, groups,
 * wire types 6 and 7). */
int nnp_wire_next (NnpWireReader *reader, NnpWireField *field, GError **error);

/* Typed accessors: fail (NNP_ERROR_PARSE) when the wire type does not match. */
gboolean nnp_wire_expect (const NnpWireField *field, NnpWireType type, GError **error);
gboolean nnp_wire_get_int64 (const NnpWireField *field, int64_t *out, GError **error);
gboolean nnp_wire_get_float (const NnpWireField *field, float *out, GError **error);
/* A string field as a new NUL-terminated copy (replacing and freeing *out).
 * For names: rejects control characters (NUL, newline...) and invalid UTF-8,
 * since names end up in one-line messages. */
gboolean nnp_wire_get_string (const NnpWireField *field, char **out, GError **error);
/* The same for free text (producer_name): control characters become spaces. */
gboolean nnp_wire_get_text (const NnpWireField *field, char **out, GError **error);

/* Decode one varint at *p (not past end): advances *p.  FALSE when truncated,
 * longer than 10 bytes or overflowing 64 bits. */
static inline gboolean
nnp_wire_read_varint (const guint8 **p, const guint8 *end, guint64 *out)
{
  const guint8 *q = *p;
  guint64 v = 0;

  for (int shift = 0; shift < 70; shift += 7) {
    guint8 b;

    if (q >= end)
      return FALSE;
    b = *q++;
    if (shift == 63 && b > 1)
      return FALSE; /* 10th byte may only carry the top bit */
    v |= (guint64) (b & 0x7f) << shift;
    if ((b & 0x80) == 0) {
      *p = q;
      *out = v;
      return TRUE;
    }
  }
  return FALSE;
}

/* Values of one occurrence of a repeated scalar field, packed (one LEN field)
 * or not (one scalar field).  `elem` is the element's wire type (VARINT,
 * FIXED32 or FIXED64).  nnp_wire_repeated_init() validates the whole payload,
 * so nnp_wire_repeated_next() cannot fail before `count` values. */
typedef struct {
  NnpWireType elem;
  gsize count;        /* number of values */
  const guint8 *data; /* packed payload (NULL for a single unpacked value) */
  const guint8 *pos, *end;
  guint64 single;
  gboolean single_left;
} NnpWireRepeated;

gboolean nnp_wire_repeated_init (NnpWireRepeated *it, const NnpWireField *field, NnpWireType elem,
                                 GError **error);

static inline gboolean
nnp_wire_repeated_next (NnpWireRepeated *it, guint64 *out)
{
  if (it->data == NULL) {
    if (!it->single_left)
      return FALSE;
    it->single_left = FALSE;
    *out = it->single;
    return TRUE;
  }
  if (it->pos >= it->end)
    return FALSE;
  switch (it->elem) {
    case NNP_WIRE_FIXED32: {
      guint32 v;
      memcpy (&v, it->pos, 4);
      it->pos += 4;
      *out = GUINT32_FROM_LE (v);
      return TRUE;
    }
    case NNP_WIRE_FIXED64: {
      guint64 v;
      memcpy (&v, it->pos, 8);
      it->pos += 8;
      *out = GUINT64_FROM_LE (v);
      return TRUE;
    }
    default: return nnp_wire_read_varint (&it->pos, it->end, out);
  }
}

G_END_DECLS
