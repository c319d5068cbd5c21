/* libnnpipe: ONNX TensorProto -> NnpTensor (weights, Constant values,
 * tensor attributes), for the loader (loader.c) and
 * nnp_tensor_from_onnx_bytes().  Untrusted input as in loader.c: every count
 * is checked against the bytes that carry it before anything is allocated. */
#include "onnx/loader.h"
#include "onnx/model-private.h"

#include <nnpipe/model.h>

#include <string.h>

/* TensorProto */
enum {
  TENSOR_DIMS = 1,
  TENSOR_DATA_TYPE = 2,
  TENSOR_SEGMENT = 3,
  TENSOR_FLOAT_DATA = 4,
  TENSOR_INT32_DATA = 5,
  TENSOR_STRING_DATA = 6,
  TENSOR_INT64_DATA = 7,
  TENSOR_NAME = 8,
  TENSOR_RAW_DATA = 9,
  TENSOR_DOUBLE_DATA = 10,
  TENSOR_UINT64_DATA = 11,
  TENSOR_EXTERNAL_DATA = 13,
  TENSOR_DATA_LOCATION = 14,
};

/* ONNX data type names, also for the codes NnpDType does not cover. */
const char *
nnp_onnx_dtype_name (int64_t code)
{
  static const char *const names[] = {
    "undefined",      "float32",    "uint8",          "int8",       "uint16",   "int16",
    "int32",          "int64",      "string",         "bool",       "float16",  "float64",
    "uint32",         "uint64",     "complex64",      "complex128", "bfloat16", "float8e4m3fn",
    "float8e4m3fnuz", "float8e5m2", "float8e5m2fnuz", "uint4",      "int4",
  };
  if (code >= 0 && code < (int64_t) G_N_ELEMENTS (names))
    return names[code];
  return "unknown";
}

/* ---------------------------------------------------------------------------
 * TensorProto */

typedef struct {
  gsize count[TENSOR_DATA_LOCATION + 1]; /* values seen per typed data field */
} TensorCounts;

/* Which typed field carries values of this dtype (0: none). */
static int
typed_field_for (NnpDType dtype)
{
  switch (dtype) {
    case NNP_DTYPE_FLOAT32: return TENSOR_FLOAT_DATA;
    case NNP_DTYPE_INT32:
    case NNP_DTYPE_INT16:
    case NNP_DTYPE_INT8:
    case NNP_DTYPE_UINT16:
    case NNP_DTYPE_UINT8:
    case NNP_DTYPE_BOOL:
    case NNP_DTYPE_FLOAT16:
    case NNP_DTYPE_BFLOAT16: return TENSOR_INT32_DATA;
    case NNP_DTYPE_INT64: return TENSOR_INT64_DATA;
    case NNP_DTYPE_FLOAT64: return TENSOR_DOUBLE_DATA;
    case NNP_DTYPE_UINT32:
    case NNP_DTYPE_UINT64: return TENSOR_UINT64_DATA;
    default: return 0;
  }
}

static NnpWireType
typed_field_wire (int field)
{
  switch (field) {
    case TENSOR_FLOAT_DATA: return NNP_WIRE_FIXED32;
    case TENSOR_DOUBLE_DATA: return NNP_WIRE_FIXED64;
    default: return NNP_WIRE_VARINT;
  }
}

static void
store_value (guint8 *dst, gsize i, NnpDType dtype, guint64 v)
{
  switch (dtype) {
    case NNP_DTYPE_FLOAT32:
    case NNP_DTYPE_INT32:
    case NNP_DTYPE_UINT32: {
      guint32 x = (guint32) v;
      memcpy (dst + 4 * i, &x, 4);
      break;
    }
    case NNP_DTYPE_INT16:
    case NNP_DTYPE_UINT16:
    case NNP_DTYPE_FLOAT16:
    case NNP_DTYPE_BFLOAT16: {
      guint16 x = (guint16) v;
      memcpy (dst + 2 * i, &x, 2);
      break;
    }
    case NNP_DTYPE_INT8:
    case NNP_DTYPE_UINT8: dst[i] = (guint8) v; break;
    case NNP_DTYPE_BOOL: dst[i] = v != 0; break;
    default: /* INT64, UINT64, FLOAT64 */ memcpy (dst + 8 * i, &v, 8); break;
  }
}

#if G_BYTE_ORDER == G_BIG_ENDIAN
static void
swap_to_host (guint8 *data, gsize nbytes, gsize esize)
{
  for (gsize off = 0; off + esize <= nbytes; off += esize)
    for (gsize a = 0, b = esize - 1; a < b; a++, b--) {
      guint8 t = data[off + a];
      data[off + a] = data[off + b];
      data[off + b] = t;
    }
}
#endif

/* Parse the TensorProto in `msg` (a LEN field read from parent).  With
 * placeholder_ok, a tensor of a dtype nnpipe cannot hold (string, complex...)
 * becomes a data-less placeholder carrying that dtype code (ops reject it when
 * used); otherwise that is NNP_ERROR_UNSUPPORTED.  *name_out (may be NULL)
 * receives the tensor's name (owned). */
NnpTensor *
nnp_onnx_parse_tensor (const NnpWireReader *parent, const NnpWireField *msg,
                       gboolean placeholder_ok, const char *what, char **name_out, GError **error)
{
  NnpWireReader r;
  NnpWireField f;
  TensorCounts counts = { { 0 } };
  g_autofree char *name = NULL;
  int64_t dims[NNP_MAX_RANK];
  int rank = 0;
  gboolean too_many_dims = FALSE, external = FALSE, segment = FALSE, has_raw = FALSE;
  int64_t data_type = 0;
  const guint8 *raw = NULL;
  gsize raw_len = 0, esize;
  NnpShape shape;
  int64_t numel;
  int typed;
  NnpTensor *t;
  int rc;

  nnp_wire_reader_sub (&r, parent, msg);
  while ((rc = nnp_wire_next (&r, &f, error)) > 0) {
    NnpWireRepeated it;
    guint64 v;

    switch (f.number) {
      case TENSOR_DIMS:
        if (!nnp_wire_repeated_init (&it, &f, NNP_WIRE_VARINT, error))
          goto failed;
        while (nnp_wire_repeated_next (&it, &v)) {
          if ((int64_t) v < 0) {
            g_set_error (error, NNP_ERROR, NNP_ERROR_PARSE, "negative dim %" G_GINT64_FORMAT,
                         (int64_t) v);
            goto failed;
          }
          if (rank < NNP_MAX_RANK)
            dims[rank++] = (int64_t) v;
          else
            too_many_dims = TRUE;
        }
        break;
      case TENSOR_DATA_TYPE:
        if (!nnp_wire_get_int64 (&f, &data_type, error))
          goto failed;
        break;
      case TENSOR_SEGMENT: segment = TRUE; break;
      case TENSOR_FLOAT_DATA:
      case TENSOR_INT32_DATA:
      case TENSOR_INT64_DATA:
      case TENSOR_DOUBLE_DATA:
      case TENSOR_UINT64_DATA:
        if (!nnp_wire_repeated_init (&it, &f, typed_field_wire (f.number), error))
          goto failed;
        counts.count[f.number] += it.count;
        break;
      case TENSOR_STRING_DATA:
        if (!nnp_wire_expect (&f, NNP_WIRE_LEN, error))
          goto failed;
        counts.count[f.number]++;
        break;
      case TENSOR_NAME:
        if (!nnp_wire_get_string (&f, &name, error))
          goto failed;
        break;
      case TENSOR_RAW_DATA:
        if (!nnp_wire_expect (&f, NNP_WIRE_LEN, error))
          goto failed;
        raw = f.data;
        raw_len = f.len;
        has_raw = TRUE;
        break;
      case TENSOR_EXTERNAL_DATA: external = TRUE; break;
      case TENSOR_DATA_LOCATION: {
        int64_t loc;
        if (!nnp_wire_get_int64 (&f, &loc, error))
          goto failed;
        if (loc != 0)
          external = TRUE;
        break;
      }
      default: break;
    }
  }
  if (rc < 0)
    goto failed;

  if (external) {
    if (name)
      g_set_error (error, NNP_ERROR, NNP_ERROR_UNSUPPORTED,
                   "tensor '%s' uses external data (not supported)", name);
    else
      g_set_error (error, NNP_ERROR, NNP_ERROR_UNSUPPORTED, "%s uses external data (not supported)",
                   what);
    return NULL;
  }
  if (segment) {
    g_set_error (error, NNP_ERROR, NNP_ERROR_UNSUPPORTED, "is segmented (not supported)");
    goto failed;
  }
  if (too_many_dims) {
    g_set_error (error, NNP_ERROR, NNP_ERROR_UNSUPPORTED, "has more than %d dims", NNP_MAX_RANK);
    goto failed;
  }
  nnp_shape_set (&shape, rank, dims);
  numel = nnp_shape_numel (&shape);
  if (numel < 0) {
    g_set_error (error, NNP_ERROR, NNP_ERROR_PARSE, "element count overflows");
    goto failed;
  }

  esize = data_type > 0 && data_type <= G_MAXINT ? nnp_dtype_size ((NnpDType) data_type) : 0;
  if (esize == 0) {
    if (placeholder_ok && data_type > 0 && data_type <= G_MAXINT) {
      /* dtype-only placeholder: nbytes 0, data NULL */
      if (name_out)
        *name_out = g_steal_pointer (&name);
      return nnp_tensor_new_wrapped ((NnpDType) data_type, &shape, NULL, NULL, NULL);
    }
    g_set_error (error, NNP_ERROR, data_type == 0 ? NNP_ERROR_PARSE : NNP_ERROR_UNSUPPORTED,
                 "has %s data type %" G_GINT64_FORMAT " (%s)",
                 data_type == 0 ? "no" : "unsupported", data_type, nnp_onnx_dtype_name (data_type));
    goto failed;
  }

  typed = typed_field_for ((NnpDType) data_type);
  for (int k = 0; k <= TENSOR_DATA_LOCATION; k++)
    if (counts.count[k] && k != typed) {
      g_set_error (error, NNP_ERROR, NNP_ERROR_PARSE, "%s tensor carries values in field %d",
                   nnp_onnx_dtype_name (data_type), k);
      goto failed;
    }

  if (has_raw) {
    if (counts.count[typed]) {
      g_set_error (error, NNP_ERROR, NNP_ERROR_PARSE, "has both raw_data and typed data");
      goto failed;
    }
    if ((guint64) numel > raw_len / esize || (gsize) numel * esize != raw_len) {
      g_autofree char *s = nnp_shape_to_string (&shape);
      g_set_error (error, NNP_ERROR, NNP_ERROR_PARSE,
                   "raw_data has %" G_GSIZE_FORMAT
                   " bytes, shape %s of %s needs %" G_GUINT64_FORMAT,
                   raw_len, s, nnp_onnx_dtype_name (data_type), (guint64) numel * esize);
      goto failed;
    }
  } else if (counts.count[typed] != (guint64) numel) {
    g_autofree char *s = nnp_shape_to_string (&shape);
    g_set_error (error, NNP_ERROR, NNP_ERROR_PARSE,
                 "has %" G_GSIZE_FORMAT " values, shape %s needs %" G_GINT64_FORMAT,
                 counts.count[typed], s, numel);
    goto failed;
  }

  /* numel * esize is now bounded by 8x the message size */
  t = nnp_tensor_new ((NnpDType) data_type, &shape, error);
  if (t == NULL)
    goto failed;
  if (has_raw) {
    if (raw_len)
      memcpy (t->data, raw, raw_len);
#if G_BYTE_ORDER == G_BIG_ENDIAN
    swap_to_host (t->data, raw_len, esize);
#endif
  } else if (numel > 0) {
    gsize i = 0;

    nnp_wire_reader_sub (&r, parent, msg);
    while (nnp_wire_next (&r, &f, NULL) > 0) {
      NnpWireRepeated it;
      guint64 v;

      if ((int) f.number != typed
          || !nnp_wire_repeated_init (&it, &f, typed_field_wire (typed), NULL))
        continue;
      if (G_BYTE_ORDER == G_LITTLE_ENDIAN && it.data && it.elem != NNP_WIRE_VARINT
          && esize == (it.elem == NNP_WIRE_FIXED32 ? 4u : 8u) && it.count <= (gsize) numel - i) {
        memcpy ((guint8 *) t->data + i * esize, it.data, it.count * esize);
        i += it.count;
        continue;
      }
      while (i < (gsize) numel && nnp_wire_repeated_next (&it, &v))
        store_value (t->data, i++, (NnpDType) data_type, v);
    }
  }
  if (name_out)
    *name_out = g_steal_pointer (&name);
  return t;

failed:
  if (name)
    g_prefix_error (error, "tensor '%s': ", name);
  else
    g_prefix_error (error, "%s: ", what);
  return NULL;
}

NnpTensor *
nnp_tensor_from_onnx_bytes (const guint8 *data, gsize size, char **name_out, GError **error)
{
  NnpWireReader r;
  NnpWireField whole = { 0 };

  g_return_val_if_fail (data != NULL || size == 0, NULL);
  nnp_wire_reader_init (&r, data, size);
  whole.type = NNP_WIRE_LEN;
  whole.data = data;
  whole.len = size;
  return nnp_onnx_parse_tensor (&r, &whole, FALSE, "TensorProto", name_out, error);
}
