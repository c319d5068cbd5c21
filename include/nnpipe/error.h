/* nnpipe: error domain shared by every libnnpipe function that can fail on
 * user input (a model, a shape, a plan, a device).
 *
 * Convention: such functions take `GError **error` last and return FALSE or
 * NULL on failure.  Messages are one line and name what failed and where,
 * e.g. "node 'conv_12' (Conv): input 1 has 3 dims, expected 4". */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

#define NNP_ERROR (nnp_error_quark ())
GQuark nnp_error_quark (void);

typedef enum {
  NNP_ERROR_FAILED,      /* anything else */
  NNP_ERROR_IO,          /* a file could not be read or written */
  NNP_ERROR_PARSE,       /* corrupt or malformed model / tensor / plan bytes */
  NNP_ERROR_UNSUPPORTED, /* valid ONNX we do not implement (op, dtype, attribute) */
  NNP_ERROR_INVALID,     /* inconsistent model or arguments (shapes, names, missing weight) */
  NNP_ERROR_DEVICE,      /* a device is missing or failed */
  NNP_ERROR_PLAN,        /* a malformed or impossible stage plan */
} NnpErrorCode;

G_END_DECLS
