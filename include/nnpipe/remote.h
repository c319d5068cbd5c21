/* nnpipe: the remote-stage wire format (docs/remote.md, "Wire format").
 *
 * A connection carries messages, each a 24-byte header followed by `length`
 * payload bytes.  All integers are little-endian.
 *
 *   offset size  field
 *        0    4  magic "NNPR"
 *        4    2  protocol version (NNP_REMOTE_VERSION)
 *        6    1  message type (NnpRemoteType)
 *        7    1  flags (0; reserved)
 *        8    8  sequence number (FRAME/RESULT: the frame's; others: echoed)
 *       16    4  payload length in bytes (<= the receiver's limit)
 *       20    4  reserved, 0
 *
 * Payloads are made of u8/u32/u64/f64 and strings (u32 length + bytes, no
 * NUL, valid UTF-8, at most NNP_REMOTE_MAX_STRING bytes).  The parsers check
 * every length against the bytes that are left and every count against its
 * limit before allocating anything, and fail with one clear GError line
 * (NNP_ERROR_PARSE) on malformed input.  Nothing here knows GStreamer; the
 * I/O helpers use GIO streams (plain TCP or TLS). */
#pragma once

#include <gio/gio.h>
#include <glib.h>
#include <nnpipe/plan.h>
#include <nnpipe/tensor.h>

G_BEGIN_DECLS

#define NNP_REMOTE_MAGIC "NNPR"
#define NNP_REMOTE_VERSION 1
#define NNP_REMOTE_HEADER_SIZE 24
#define NNP_REMOTE_MAX_TENSORS 16
#define NNP_REMOTE_MAX_STRING (1u << 20)
/* default limit of a payload (receivers may set a smaller or larger one) */
#define NNP_REMOTE_DEFAULT_MAX_PAYLOAD (256u << 20)
/* tensor data offsets in FRAME/RESULT payloads are multiples of this */
#define NNP_REMOTE_ALIGN 64

typedef enum {
  NNP_REMOTE_HELLO = 1,      /* client -> server: NnpRemoteHello */
  NNP_REMOTE_HELLO_OK = 2,   /* server -> client: string (server description) */
  NNP_REMOTE_ERROR = 3,      /* either way: string (the reason); the sender then closes */
  NNP_REMOTE_FRAME = 4,      /* client -> server: NnpRemoteFrame, seq = frame number */
  NNP_REMOTE_RESULT = 5,     /* server -> client: NnpRemoteFrame, seq of its FRAME */
  NNP_REMOTE_PING = 6,       /* client -> server: any bytes (a bandwidth probe) */
  NNP_REMOTE_PONG = 7,       /* server -> client: u64 bytes received, same seq */
  NNP_REMOTE_COST = 8,       /* client -> server: NnpRemoteCostQuery */
  NNP_REMOTE_COST_REPLY = 9, /* server -> client: NnpRemoteCostReply */
} NnpRemoteType;

/* "HELLO", "FRAME", ...; "unknown" otherwise */
const char *nnp_remote_type_name (int type);

typedef struct {
  guint16 version;
  guint8 type;
  guint8 flags;
  guint64 seq;
  guint32 length;
} NnpRemoteHeader;


/* Which part of the model a client asks for. */
typedef enum {
  NNP_REMOTE_PART_WHOLE = 0, /* the whole model */
  NNP_REMOTE_PART_NODES = 1, /* part = an nnstage nodes= string ("a,b,c", "first..last") */
  NNP_REMOTE_PART_PLAN = 2,  /* part = a plan (JSON), stage = the stage to run */
} NnpRemotePartKind;

typedef struct {
  guint32 version;  /* NNP_REMOTE_VERSION of the client */
  char *digest;     /* SHA-256 of the model file, hex */
  guint8 part_kind; /* NnpRemotePartKind */
  char *part;       /* "" for WHOLE */
  guint32 stage;    /* PLAN: the stage index */
  char *token;      /* shared secret, "" for none */
} NnpRemoteHello;

/* Encoded payload (g_free), length in *size. */
guint8 *nnp_remote_hello_encode (const NnpRemoteHello *hello, gsize *size);
gboolean nnp_remote_hello_parse (const guint8 *data, gsize size, NnpRemoteHello *hello,
                                 GError **error);
void nnp_remote_hello_clear (NnpRemoteHello *hello);

/* One tensor of a FRAME or RESULT.  After parsing, `data` points into the
 * payload (borrowed) at a multiple of NNP_REMOTE_ALIGN bytes from its start. */
typedef struct {
  NnpDType dtype;
  NnpShape shape; /* ONNX order, every dim known */
  gsize nbytes;   /* numel * dtype size */
  gsize offset;   /* of the data in the payload */
  const guint8 *data;
} NnpRemoteTensor;

typedef struct {
  char *caps;    /* the GStreamer caps of the tensors (other/tensors), owned */
  char *shapes;  /* the model input shapes the tensors come from, as nnstage's
                       * shapes query answers them ("1x3x48x160;1x4"), or "";
                       * owned.  A later part needs them to specialise the model */
  int n_tensors; /* 1..NNP_REMOTE_MAX_TENSORS */
  NnpRemoteTensor tensors[NNP_REMOTE_MAX_TENSORS];
} NnpRemoteFrame;

/* Parse a FRAME/RESULT payload: the caps and shapes strings, the tensor count (1..16),
 * each tensor's dtype (a known one), rank (0..NNP_MAX_RANK), dims (1..2^40
 * each, numel * size must be the stated byte count), data offset (aligned,
 * after the descriptors and the previous tensor's data) and byte count (within
 * the payload). */
gboolean nnp_remote_frame_parse (const guint8 *data, gsize size, NnpRemoteFrame *frame,
                                 GError **error);
void nnp_remote_frame_clear (NnpRemoteFrame *frame);


/* One string payload (HELLO_OK, ERROR). */
guint8 *nnp_remote_string_encode (const char *text, gsize *size);
char *nnp_remote_string_parse (const guint8 *data, gsize size, GError **error);

/* ---- I/O over GIO streams (blocking; cancellable may be NULL) ---- */

/* Write one message: header + payload (payload may be NULL when size is 0). */
gboolean nnp_remote_send (GOutputStream *out, NnpRemoteType type, guint64 seq,
                          const guint8 *payload, gsize size, GCancellable *cancellable,
                          GError **error);
/* Write a FRAME or RESULT without copying the tensors' data. */
gboolean nnp_remote_send_frame (GOutputStream *out, NnpRemoteType type, guint64 seq,
                                const char *caps, const char *shapes, int n_tensors,
                                NnpRemoteTensor *tensors, GCancellable *cancellable,
                                GError **error);
/* Parse NNP_REMOTE_HEADER_SIZE bytes.  Checks the magic, the version (a
 * different one: NNP_ERROR_UNSUPPORTED "protocol version 7, this side speaks
 * 1"), the type, the reserved fields and length <= max_payload. */
gboolean nnp_remote_header_parse (const guint8 *data, guint32 max_payload, NnpRemoteHeader *header,
                                  GError **error);
/* Read one message.  The payload (NNP_REMOTE_ALIGN-aligned, free with
 * g_aligned_free(); NULL when empty) is allocated only after the header has
 * been checked against max_payload.  A connection closed before a header:
 * FALSE with NNP_ERROR_IO "connection closed". */
gboolean nnp_remote_recv (GInputStream *in, guint32 max_payload, NnpRemoteHeader *header,
                          guint8 **payload, GCancellable *cancellable, GError **error);

/* The server's side of COST: `query` is a COST payload (`size` bytes).  Specialises
 * the model at `model_path` for the query's input shapes, takes the part's nodes (the
 * whole graph for WHOLE; the plan's stage; a nodes= list: names or "first..last"
 * topological indices/names) and predicts each node on `device` (a device spec,
 * "cpu:1"; NULL for "cpu") with the partitioner's cost model (profiled and cached like
 * nnpipe split's).  Returns the COST_REPLY payload (g_free, *reply_size bytes); NULL
 * with NNP_ERROR_PARSE naming the fault for a malformed query, with the reason prefixed
 * "COST: " for one that cannot be answered (unknown part or node, bad shapes, ...). */
guint8 *nnp_remote_cost_reply (const char *model_path, const char *device, const guint8 *query,
                               gsize size, gsize *reply_size, GError **error);

/* ---- the link-aware partitioner's questions (lib/remote/probe.c) ---- */


G_END_DECLS
