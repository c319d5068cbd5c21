/* libnnpipe (internal): a protobuf wire-format writer, the counterpart of
 * wire.h.  Appends fields to a GByteArray; a nested message is built in its
 * own GByteArray and appended with nnp_wire_put_message().  Only what the
 * ONNX writer needs: varints, fixed32 floats, length-delimited bytes and
 * packed repeated int64 / float. */
#pragma once

#include <glib.h>
#include <stdint.h>

G_BEGIN_DECLS

void nnp_wire_put_varint (GByteArray *buf, guint64 v);
/* A VARINT field (int64 values are written as their two's complement, as
 * protobuf does: negative values take 10 bytes). */
void nnp_wire_put_int (GByteArray *buf, guint32 field, int64_t v);
/* A FIXED32 field holding a float. */
void nnp_wire_put_float (GByteArray *buf, guint32 field, float v);
/* A LEN field with these bytes. */
void nnp_wire_put_bytes (GByteArray *buf, guint32 field, const void *data, gsize len);
/* A LEN field with a string (without its NUL); NULL is written as "". */
void nnp_wire_put_string (GByteArray *buf, guint32 field, const char *s);
/* A LEN field holding a nested message built in `sub`. */
void nnp_wire_put_message (GByteArray *buf, guint32 field, const GByteArray *sub);
/* Packed repeated int64 (varints) / float (fixed32); nothing when n == 0. */
void nnp_wire_put_packed_int64 (GByteArray *buf, guint32 field, const int64_t *v, gsize n);
void nnp_wire_put_packed_float (GByteArray *buf, guint32 field, const float *v, gsize n);

G_END_DECLS
