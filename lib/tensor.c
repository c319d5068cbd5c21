/* libnnpipe: dtypes, shapes, tensors. */
#include <nnpipe/tensor.h>
#include <nnpipe/error.h>

#include "tensor-private.h"

#include <stdlib.h>
#include <string.h>

#define NNP_TENSOR_ALIGN 64

static const struct {
  NnpDType dtype;
  const char *name;
  gsize size;
} dtype_info[] = {
  { NNP_DTYPE_FLOAT32, "float32", 4 },   { NNP_DTYPE_UINT8, "uint8", 1 },
  { NNP_DTYPE_INT8, "int8", 1 },         { NNP_DTYPE_UINT16, "uint16", 2 },
  { NNP_DTYPE_INT16, "int16", 2 },       { NNP_DTYPE_INT32, "int32", 4 },
  { NNP_DTYPE_INT64, "int64", 8 },       { NNP_DTYPE_BOOL, "bool", 1 },
  { NNP_DTYPE_FLOAT16, "float16", 2 },   { NNP_DTYPE_FLOAT64, "float64", 8 },
  { NNP_DTYPE_UINT32, "uint32", 4 },     { NNP_DTYPE_UINT64, "uint64", 8 },
  { NNP_DTYPE_BFLOAT16, "bfloat16", 2 },
};

gsize
nnp_dtype_size (NnpDType dtype)
{
  for (guint i = 0; i < G_N_ELEMENTS (dtype_info); i++)
    if (dtype_info[i].dtype == dtype)
      return dtype_info[i].size;
  return 0;
}

const char *
nnp_dtype_name (NnpDType dtype)
{
  for (guint i = 0; i < G_N_ELEMENTS (dtype_info); i++)
    if (dtype_info[i].dtype == dtype)
      return dtype_info[i].name;
  return dtype == NNP_DTYPE_STRING ? "string" : "undefined";
}

NnpDType
nnp_dtype_from_name (const char *name)
{
  for (guint i = 0; name && i < G_N_ELEMENTS (dtype_info); i++)
    if (strcmp (dtype_info[i].name, name) == 0)
      return dtype_info[i].dtype;
  return NNP_DTYPE_UNDEFINED;
}

gboolean
nnp_shape_set (NnpShape *shape, int rank, const int64_t *dims)
{
  if (rank < 0 || rank > NNP_MAX_RANK)
    return FALSE;
  memset (shape, 0, sizeof (*shape));
  shape->rank = rank;
  for (int i = 0; i < rank; i++)
    shape->dims[i] = dims[i];
  return TRUE;
}

int64_t
nnp_shape_numel (const NnpShape *shape)
{
  int64_t n = 1;

  if (shape->rank < 0)
    return -1;
  for (int i = 0; i < shape->rank; i++) {
    if (shape->dims[i] < 0)
      return -1;
    if (shape->dims[i] != 0 && n > G_MAXINT64 / shape->dims[i])
      return -1;
    n *= shape->dims[i];
  }
  return n;
}

gboolean
nnp_shape_equal (const NnpShape *a, const NnpShape *b)
{
  if (a->rank != b->rank)
    return FALSE;
  for (int i = 0; i < a->rank; i++)
    if (a->dims[i] != b->dims[i])
      return FALSE;
  return TRUE;
}

gboolean
nnp_shape_is_static (const NnpShape *shape)
{
  return nnp_shape_numel (shape) >= 0;
}

char *
nnp_shape_to_string (const NnpShape *shape)
{
  GString *s;

  if (shape->rank < 0)
    return g_strdup ("?");
  if (shape->rank == 0)
    return g_strdup ("scalar");
  s = g_string_new (NULL);
  for (int i = 0; i < shape->rank; i++) {
    if (i)
      g_string_append_c (s, 'x');
    if (shape->dims[i] < 0)
      g_string_append_c (s, '?');
    else
      g_string_append_printf (s, "%" G_GINT64_FORMAT, shape->dims[i]);
  }
  return g_string_free (s, FALSE);
}

static void
aligned_release (gpointer data)
{
  free (data);
}

NnpTensor *
nnp_tensor_new (NnpDType dtype, const NnpShape *shape, GError **error)
{
  int64_t numel = nnp_shape_numel (shape);
  gsize esize = nnp_dtype_size (dtype);
  gsize nbytes, alloc;
  void *data = NULL;
  NnpTensor *t;

  if (numel < 0 || esize == 0) {
    g_autofree char *s = nnp_shape_to_string (shape);
    g_set_error (error, NNP_ERROR, NNP_ERROR_INVALID, "cannot allocate a %s tensor of shape %s",
                 nnp_dtype_name (dtype), s);
    return NULL;
  }
  if ((guint64) numel > G_MAXSIZE / esize - NNP_TENSOR_ALIGN) {
    g_set_error (error, NNP_ERROR, NNP_ERROR_INVALID,
                 "tensor of %" G_GINT64_FORMAT " elements is too large", numel);
    return NULL;
  }
  nbytes = (gsize) numel * esize;
  alloc = (nbytes + NNP_TENSOR_ALIGN - 1) / NNP_TENSOR_ALIGN * NNP_TENSOR_ALIGN;
  if (alloc == 0)
    alloc = NNP_TENSOR_ALIGN;
  if (posix_memalign (&data, NNP_TENSOR_ALIGN, alloc) != 0) {
    g_set_error (error, NNP_ERROR, NNP_ERROR_FAILED,
                 "out of memory allocating %" G_GSIZE_FORMAT " bytes", alloc);
    return NULL;
  }
  memset (data, 0, alloc);
  t = nnp_tensor_new_wrapped (dtype, shape, data, aligned_release, data);
  t->nbytes = nbytes;
  return t;
}

NnpTensor *
nnp_tensor_new_wrapped (NnpDType dtype, const NnpShape *shape, void *data, GDestroyNotify release,
                        gpointer release_data)
{
  NnpTensor *t = g_new0 (NnpTensor, 1);
  int64_t numel = nnp_shape_numel (shape);

  t->dtype = dtype;
  t->shape = *shape;
  t->data = data;
  t->nbytes = numel > 0 ? (gsize) numel * nnp_dtype_size (dtype) : 0;
  t->ref_count = 1;
  t->release = release;
  t->release_data = release_data;
  return t;
}

NnpTensor *
nnp_tensor_ref (NnpTensor *tensor)
{
  g_return_val_if_fail (tensor != NULL, NULL);
  g_atomic_int_inc (&tensor->ref_count);
  return tensor;
}

void
nnp_tensor_unref (NnpTensor *tensor)
{
  if (tensor == NULL)
    return;
  if (g_atomic_int_dec_and_test (&tensor->ref_count)) {
    if (tensor->release)
      tensor->release (tensor->release_data);
    g_free (tensor);
  }
}

NnpTensor *
nnp_tensor_copy (const NnpTensor *tensor)
{
  NnpTensor *t;

  g_return_val_if_fail (tensor != NULL, NULL);
  g_return_val_if_fail (tensor->device == NULL, NULL);
  t = nnp_tensor_new (tensor->dtype, &tensor->shape, NULL);
  if (t && tensor->nbytes)
    memcpy (t->data, tensor->data, tensor->nbytes);
  return t;
}

gboolean
nnp_tensor_is_host (const NnpTensor *tensor)
{
  g_return_val_if_fail (tensor != NULL, FALSE);
  return tensor->device == NULL;
}

int64_t
nnp_tensor_numel (const NnpTensor *tensor)
{
  return nnp_shape_numel (&tensor->shape);
}

static inline guint32
pattern_hash (guint32 i, guint32 seed)
{
  guint32 h = i * 0x9E3779B1u + (seed + 1u) * 0x85EBCA77u;

  h ^= h >> 15;
  h *= 0x2C1B3C6Du;
  h ^= h >> 12;
  h *= 0x297A2D39u;
  h ^= h >> 15;
  return h >> 8;
}

void
nnp_tensor_fill_pattern (NnpTensor *tensor, guint32 seed)
{
  int64_t n;

  g_return_if_fail (tensor != NULL);
  n = nnp_tensor_numel (tensor);
  if (n <= 0 || tensor->data == NULL)
    return;
  for (int64_t i = 0; i < n; i++) {
    guint32 u = pattern_hash ((guint32) i, seed);
    double f = (double) u * (2.0 / 16777216.0) - 1.0;

    switch (tensor->dtype) {
      case NNP_DTYPE_FLOAT32: ((float *) tensor->data)[i] = (float) f; break;
      case NNP_DTYPE_FLOAT64: ((double *) tensor->data)[i] = f; break;
      case NNP_DTYPE_FLOAT16:
      case NNP_DTYPE_BFLOAT16: {
        float x = (float) f;
        if (tensor->dtype == NNP_DTYPE_FLOAT16)
          nnp_f32_to_f16 (&x, (guint16 *) tensor->data + i, 1);
        else
          nnp_f32_to_bf16 (&x, (guint16 *) tensor->data + i, 1);
        break;
      }
      case NNP_DTYPE_BOOL: ((guint8 *) tensor->data)[i] = u & 1; break;
      case NNP_DTYPE_UINT8: ((guint8 *) tensor->data)[i] = u % 16; break;
      case NNP_DTYPE_INT8: ((gint8 *) tensor->data)[i] = u % 16; break;
      case NNP_DTYPE_UINT16: ((guint16 *) tensor->data)[i] = u % 16; break;
      case NNP_DTYPE_INT16: ((gint16 *) tensor->data)[i] = u % 16; break;
      case NNP_DTYPE_INT32: ((gint32 *) tensor->data)[i] = u % 16; break;
      case NNP_DTYPE_UINT32: ((guint32 *) tensor->data)[i] = u % 16; break;
      case NNP_DTYPE_INT64: ((gint64 *) tensor->data)[i] = u % 16; break;
      case NNP_DTYPE_UINT64: ((guint64 *) tensor->data)[i] = u % 16; break;
      default: return;
    }
  }
}
