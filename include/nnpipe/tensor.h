/* nnpipe: element types, shapes and refcounted tensors. */
#pragma once

#include <glib.h>
#include <stdint.h>

G_BEGIN_DECLS

/* Numbered as ONNX TensorProto.DataType, so the loader maps them 1:1. */
typedef enum {
  NNP_DTYPE_UNDEFINED = 0,
  NNP_DTYPE_FLOAT32 = 1,
  NNP_DTYPE_UINT8 = 2,
  NNP_DTYPE_INT8 = 3,
  NNP_DTYPE_UINT16 = 4,
  NNP_DTYPE_INT16 = 5,
  NNP_DTYPE_INT32 = 6,
  NNP_DTYPE_INT64 = 7,
  NNP_DTYPE_STRING = 8, /* never materialised: rejected as unsupported */
  NNP_DTYPE_BOOL = 9,   /* one byte per element, 0 or 1 */
  NNP_DTYPE_FLOAT16 = 10,
  NNP_DTYPE_FLOAT64 = 11,
  NNP_DTYPE_UINT32 = 12,
  NNP_DTYPE_UINT64 = 13,
  NNP_DTYPE_BFLOAT16 = 16, /* the upper 16 bits of a float32 */
} NnpDType;

/* Bytes per element; 0 for UNDEFINED / STRING / unknown codes. */
gsize nnp_dtype_size (NnpDType dtype);
/* NNStreamer-style names: "float32", "int64", "uint8", "bool", ... ("undefined" otherwise). */
const char *nnp_dtype_name (NnpDType dtype);
/* Inverse of nnp_dtype_name(); NNP_DTYPE_UNDEFINED when unknown. */
NnpDType nnp_dtype_from_name (const char *name);
/* 16-bit floats (dtype NNP_DTYPE_FLOAT16 or NNP_DTYPE_BFLOAT16) <-> float32, n elements
 * (src and dst must not overlap).  float32 -> 16 bits rounds to nearest, ties to even (as
 * ONNX Runtime); a value too large becomes +-inf, NaN stays a (quiet) NaN, float16
 * subnormals are kept.  16 bits -> float32 is exact.  Uses the CPU's F16C conversions when
 * it has them (the same results).  Another dtype: a programming error (g_return). */
void nnp_half_to_f32 (NnpDType dtype, const guint16 *src, float *dst, gsize n);
void nnp_f32_to_half (NnpDType dtype, const float *src, guint16 *dst, gsize n);

#define NNP_MAX_RANK 8

/* A shape.  rank == -1 means "rank unknown"; a dim of -1 means "unknown"
 * (symbolic) and only appears before shapes are specialised. */
typedef struct {
  int rank;
  int64_t dims[NNP_MAX_RANK];
} NnpShape;

/* Build a shape from a list; returns FALSE if rank > NNP_MAX_RANK. */
gboolean nnp_shape_set (NnpShape *shape, int rank, const int64_t *dims);
/* Product of dims (1 for rank 0); -1 if rank or any dim unknown. */
int64_t nnp_shape_numel (const NnpShape *shape);
gboolean nnp_shape_equal (const NnpShape *a, const NnpShape *b);
/* TRUE when rank and every dim are known. */
gboolean nnp_shape_is_static (const NnpShape *shape);
/* "1x3x640x640", "?x3x?x?" for unknown dims, "scalar" for rank 0.  Free with g_free(). */
char *nnp_shape_to_string (const NnpShape *shape);

typedef struct _NnpDevice NnpDevice; /* include/nnpipe/device.h */

/* A tensor: dtype + shape + storage, which lives in host memory or in a
 * device's memory (a buffer of the device's backend).  Refcounted and
 * thread-safe to ref/unref.
 *
 * Host tensor (device == NULL): `data` holds nbytes bytes, 64-byte aligned
 * when nnpipe allocated it (wrapped foreign memory has whatever alignment
 * the caller gave).
 * Device tensor (device != NULL, see device.h): `data` is NULL; the bytes
 * are at byte `offset` of the backend buffer `handle` (OpenCL: a cl_mem),
 * which the tensor holds until its last unref.  Move contents between the
 * two with nnp_tensor_copy_into(); a stage (stage.h) takes either kind.
 * The public fields are read-only. */
typedef struct _NnpTensor NnpTensor;
struct _NnpTensor {
  NnpDType dtype;
  NnpShape shape;
  void *data;        /* host memory of nbytes; NULL in device memory or when nbytes == 0 */
  gsize nbytes;      /* numel * dtype size */
  NnpDevice *device; /* owned ref; NULL: host memory */
  gpointer handle;   /* device memory: the backend's buffer (held by the tensor) */
  gsize offset;      /* device memory: byte offset of element 0 in handle, a multiple
                        * of the dtype size */

  /*< private >*/
  gint ref_count;
  GDestroyNotify release; /* frees data (or the foreign owner) on last unref */
  gpointer release_data;
};

/* New zero-filled tensor owning its storage.  Returns NULL (and sets error)
 * if the shape is not static, the dtype has no size, or the size overflows. */
NnpTensor *nnp_tensor_new (NnpDType dtype, const NnpShape *shape, GError **error);
/* Wrap foreign memory (not copied).  `release(release_data)` is called when
 * the last reference goes; it may be NULL for memory the caller keeps alive
 * longer than the tensor.  `nbytes` of `data` must cover the shape. */
NnpTensor *nnp_tensor_new_wrapped (NnpDType dtype, const NnpShape *shape, void *data,
                                   GDestroyNotify release, gpointer release_data);
NnpTensor *nnp_tensor_ref (NnpTensor *tensor);
void nnp_tensor_unref (NnpTensor *tensor);
int64_t nnp_tensor_numel (const NnpTensor *tensor);

/* Fill a tensor with a deterministic pattern (test inputs, `nnpipe run`
 * without --input).  For element index i (C order, as uint32, wrapping) all
 * arithmetic is on uint32 modulo 2^32:
 *   h = i * 0x9E3779B1 + (seed + 1) * 0x85EBCA77
 *   h ^= h >> 15;  h *= 0x2C1B3C6D;  h ^= h >> 12;  h *= 0x297A2D39;  h ^= h >> 15
 *   u = h >> 8                                  (24 bits)
 * float32/float64/float16/bfloat16: u * (2 / 2^24) - 1, in [-1, 1) (16-bit floats rounded
 * to nearest even);
 * bool: u & 1;  other integer dtypes: u % 16.
 * Other dtypes are left untouched. */
void nnp_tensor_fill_pattern (NnpTensor *tensor, guint32 seed);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (NnpTensor, nnp_tensor_unref)

G_END_DECLS
