/* nnpipe: a loaded ONNX model.
 *
 * An NnpModel is immutable and refcounted.  nnp_model_load() keeps a
 * process-wide cache keyed by file identity (device, inode, size, mtime), so
 * every element and stage of a process that names the same file shares one
 * copy of the graph and weights. */
#pragma once

#include <glib.h>
#include <nnpipe/error.h>
#include <nnpipe/graph.h>

G_BEGIN_DECLS

typedef struct _NnpModel NnpModel;

/* Load (or return the cached) model at path.  Errors: NNP_ERROR_IO (cannot
 * read), NNP_ERROR_PARSE (not a valid ONNX protobuf), NNP_ERROR_UNSUPPORTED
 * (external data, unknown ops: all listed in one message, opset out of
 * 7..18), NNP_ERROR_INVALID (a node input nothing produces, a cycle).
 * Every message starts with the file name. */
NnpModel *nnp_model_load (const char *path, GError **error);
NnpModel *nnp_model_ref (NnpModel *model);
void nnp_model_unref (NnpModel *model);

/* The original graph: symbolic dims, Constant nodes in place.  Owned by the
 * model: ref it to keep it, never modify it. */
NnpGraph *nnp_model_get_graph (NnpModel *model);
const char *nnp_model_get_name (NnpModel *model); /* path or the name given */
/* Hex SHA-256 of the model bytes (cache keys for profiles and plans). */
const char *nnp_model_get_digest (NnpModel *model);


G_DEFINE_AUTOPTR_CLEANUP_FUNC (NnpModel, nnp_model_unref)

G_END_DECLS
