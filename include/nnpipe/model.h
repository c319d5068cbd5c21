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
/* Parse a model from memory (not cached).  `name` is used in messages. */
NnpModel *nnp_model_load_from_bytes (const guint8 *data, gsize size, const char *name,
                                     GError **error);
NnpModel *nnp_model_ref (NnpModel *model);
void nnp_model_unref (NnpModel *model);

/* The original graph: symbolic dims, Constant nodes in place.  Owned by the
 * model: ref it to keep it, never modify it. */
NnpGraph *nnp_model_get_graph (NnpModel *model);
const char *nnp_model_get_name (NnpModel *model); /* path or the name given */
/* Hex SHA-256 of the model bytes (cache keys for profiles and plans). */
const char *nnp_model_get_digest (NnpModel *model);
const char *nnp_model_get_producer (NnpModel *model); /* producer_name, may be "" */
int64_t nnp_model_get_ir_version (NnpModel *model);

/* The concrete shape of one graph input. */
typedef struct {
  const char *name;
  NnpShape shape;
} NnpInputShape;

typedef enum {
  NNP_SPECIALIZE_DEFAULT = 0,
  NNP_SPECIALIZE_NO_FUSION = 1 << 0, /* keep BatchNormalization and activations as nodes */
} NnpSpecializeFlags;

/* Make an executable graph for concrete input shapes: infer every shape,
 * fold constants (Constant nodes, shape arithmetic), remove dead nodes and,
 * unless NO_FUSION, fold BatchNormalization into Conv and fuse activations.
 * Inputs not named in `shapes` must have static declared shapes.  Returns a
 * new graph (caller owns the reference) whose values all have static shapes.
 * Error messages start with the model name, as the loader's do. */
NnpGraph *nnp_model_specialize (NnpModel *model, const NnpInputShape *shapes, int n_shapes,
                                NnpSpecializeFlags flags, GError **error);

/* The one key of a set of input shapes (+ specialisation flags), used for
 * every cache keyed by shapes (profiles, plans, specialised graphs):
 * "x=1x3x640x640,y=1x4" in the given order (nnp_shape_to_string() of each),
 * "static" for none, "-nofusion" appended with NNP_SPECIALIZE_NO_FUSION.
 * New string (g_free). */
char *nnp_shapes_key (const NnpInputShape *shapes, int n_shapes, NnpSpecializeFlags flags);
/* Parse a key back: at most max_shapes shapes; each name must be a
 * non-constant input of graph (shapes[i].name points into graph); *flags
 * (when not NULL) gets NNP_SPECIALIZE_NO_FUSION for a "-nofusion" key.
 * FALSE + NNP_ERROR_INVALID naming the bad item. */
gboolean nnp_shapes_from_key (const NnpGraph *graph, const char *key, NnpInputShape *shapes,
                              int max_shapes, int *n_shapes, NnpSpecializeFlags *flags,
                              GError **error);

/* The same on any graph (used by tests that build graphs by hand). */
NnpGraph *nnp_graph_specialize (const NnpGraph *graph, const NnpInputShape *shapes, int n_shapes,
                                NnpSpecializeFlags flags, GError **error);

/* Read one serialized ONNX TensorProto (a .pb file of the conformance suite). */
NnpTensor *nnp_tensor_from_onnx_bytes (const guint8 *data, gsize size, char **name_out,
                                       GError **error);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (NnpModel, nnp_model_unref)

G_END_DECLS
