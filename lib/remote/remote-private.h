/* libnnpipe internal: the remote stages' wire format and client
 * (lib/remote/), what only the library and its tests use. */
#pragma once

#include <nnpipe/remote.h>
#include "partition/partition.h"
#include <nnpipe/device.h>
#include <nnpipe/specialize.h>

G_BEGIN_DECLS

typedef struct {
  guint8 part_kind; /* as in HELLO */
  char *part;
  guint32 stage;
  char *shapes; /* input shapes, "x=1,3,640,640;y=1,4" ("" = the model's static ones):
                 * nnp_remote_shapes_text() writes them */
} NnpRemoteCostQuery;

/* The COST payload (lib/remote/wire.c); parse fails with NNP_ERROR_PARSE naming the fault. */
guint8 *nnp_remote_cost_query_encode (const NnpRemoteCostQuery *query, gsize *size);
gboolean nnp_remote_cost_query_parse (const guint8 *data, gsize size, NnpRemoteCostQuery *query,
                                      GError **error);
void nnp_remote_cost_query_clear (NnpRemoteCostQuery *query);

typedef struct {
  char *device; /* the server's device ("cpu:1") */
  int n_nodes;
  char **names; /* node names of the specialised graph, in topological order */
  double *ms;   /* predicted milliseconds of each node on the server's device */
} NnpRemoteCostReply;

/* The COST_REPLY payload. */
guint8 *nnp_remote_cost_reply_encode (const NnpRemoteCostReply *reply, gsize *size);
gboolean nnp_remote_cost_reply_parse (const guint8 *data, gsize size, NnpRemoteCostReply *reply,
                                      GError **error);
void nnp_remote_cost_reply_clear (NnpRemoteCostReply *reply);

/* nnp_remote_cost_reply() on a parsed query (lib/remote/cost.c). */
gboolean nnp_remote_cost_answer (const char *model_path, const char *device,
                                 const NnpRemoteCostQuery *query, NnpRemoteCostReply *reply,
                                 GError **error);

typedef struct {
  char *server;             /* the server's HELLO_OK text (its device) */
  double rtt_ms;            /* median of 5 empty PING round trips */
  double bytes_per_s;       /* a PING of 256 KiB..16 MiB beyond one round trip */
  NnpRemoteCostReply costs; /* node costs of the whole model on the server's device */
} NnpRemoteProbe;

/* Write NNP_REMOTE_HEADER_SIZE bytes: the header of a message of `length` payload bytes. */
void nnp_remote_header_write (guint8 *out, NnpRemoteType type, guint64 seq, guint32 length);
/* Lay out a frame: fills each tensor's `offset` and returns the head (header
 * + caps + descriptors + padding, g_free) to write before the data; *head_size
 * is its length, *payload_size the payload's (FALSE when it exceeds 4 GiB). */
guint8 *nnp_remote_frame_encode_head (NnpRemoteType type, guint64 seq, const char *caps,
                                      const char *shapes, int n_tensors, NnpRemoteTensor *tensors,
                                      gsize *head_size, guint32 *payload_size, GError **error);
/* The input shapes of a COST query, "x=1,3,640,640;y=1,4" ("" for none):
 * the one writer of the form the server's answer reads.  New string. */
char *nnp_remote_shapes_text (const NnpInputShape *shapes, int n_shapes);
/* Connect to the server at `address` ("host:port"), say HELLO for the model
 * of `digest` (whole part, `token` or NULL), measure the link and ask the
 * node costs of the whole model at `shapes` (nnp_remote_shapes_text(), ""
 * for the model's static shapes).  probe_bytes = 0: the bandwidth probe grows
 * from 256 KiB (8x) until it takes 20 ms, up to 16 MiB.  NNP_ERROR_DEVICE
 * when the server refuses (its reason), the socket's error when it cannot be
 * reached.  Clear with nnp_remote_probe_clear(). */
gboolean nnp_remote_probe (const char *address, const char *digest, const char *token,
                           const char *shapes, gsize probe_bytes, NnpRemoteProbe *probe,
                           GError **error);
/* Free what a probe holds (the server text, the costs). */
void nnp_remote_probe_clear (NnpRemoteProbe *probe);
/* For a remote device spec: probe its server (nnp_remote_probe) and give the
 * cost model its link (window = frames in flight; link_override, when not
 * NULL, replaces the measured link) and its node costs mapped by name onto
 * `graph` (the cost model's graph; nodes the server did not cost: not
 * supported there).  A local device: nothing, TRUE. */
gboolean nnp_remote_prepare_cost_model (NnpCostModel *cm, const NnpGraph *graph,
                                        const NnpDeviceSpec *dev, const char *digest,
                                        const char *token, const char *shapes, int window,
                                        const NnpLink *link_override, GError **error);

G_END_DECLS
