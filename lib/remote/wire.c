/* The remote-stage wire format (include/nnpipe/remote.h, docs/remote.md):
 * encoders, hardened parsers and blocking I/O over GIO streams.
 *
 * Every parser reads through an NnpRd cursor: each read checks the bytes
 * left first, each count is checked against its limit before anything is
 * allocated, and the first failure keeps its message (the later reads of a
 * failed cursor are no-ops), so a parser is a straight list of reads
 * followed by one check. */
#include <nnpipe/error.h>
#include <nnpipe/remote.h>

#include "remote/remote-private.h"

#include <string.h>

/* ------------------------------------------------------------ little-endian */

static void
put_u32 (guint8 *p, guint32 v)
{
  v = GUINT32_TO_LE (v);
  memcpy (p, &v, 4);
}

static void
put_u64 (guint8 *p, guint64 v)
{
  v = GUINT64_TO_LE (v);
  memcpy (p, &v, 8);
}

static guint32
get_u32 (const guint8 *p)
{
  guint32 v;
  memcpy (&v, p, 4);
  return GUINT32_FROM_LE (v);
}

static guint64
get_u64 (const guint8 *p)
{
  guint64 v;
  memcpy (&v, p, 8);
  return GUINT64_FROM_LE (v);
}

/* ------------------------------------------------------------ writer */

static void
w_u8 (GByteArray *b, guint8 v)
{
  g_byte_array_append (b, &v, 1);
}

static void
w_u32 (GByteArray *b, guint32 v)
{
  guint8 p[4];
  put_u32 (p, v);
  g_byte_array_append (b, p, 4);
}

static void
w_u64 (GByteArray *b, guint64 v)
{
  guint8 p[8];
  put_u64 (p, v);
  g_byte_array_append (b, p, 8);
}

static void
w_f64 (GByteArray *b, double v)
{
  guint64 u;
  memcpy (&u, &v, 8);
  w_u64 (b, u);
}

static void
w_str (GByteArray *b, const char *s)
{
  gsize n = s ? strlen (s) : 0;
  w_u32 (b, (guint32) n);
  if (n)
    g_byte_array_append (b, (const guint8 *) s, (guint) n);
}

static guint8 *
w_finish (GByteArray *b, gsize *size)
{
  *size = b->len;
  return g_byte_array_free (b, FALSE);
}

/* ------------------------------------------------------------ reader */

typedef struct {
  const guint8 *data;
  gsize size, pos;
  const char *what; /* "HELLO", ... for messages */
  GError *error;    /* the first failure */
} NnpRd;

static void
rd_init (NnpRd *r, const guint8 *data, gsize size, const char *what)
{
  r->data = data;
  r->size = size;
  r->pos = 0;
  r->what = what;
  r->error = NULL;
}

static void G_GNUC_PRINTF (2, 3) rd_fail (NnpRd *r, const char *fmt, ...)
{
  va_list ap;
  char *msg;

  if (r->error)
    return;
  va_start (ap, fmt);
  msg = g_strdup_vprintf (fmt, ap);
  va_end (ap);
  r->error =
      g_error_new (NNP_ERROR, NNP_ERROR_PARSE,
                   "malformed %s message at byte %" G_GSIZE_FORMAT ": %s", r->what, r->pos, msg);
  g_free (msg);
}

/* n bytes or NULL (and the cursor fails) */
static const guint8 *
rd_take (NnpRd *r, gsize n, const char *field)
{
  const guint8 *p;

  if (r->error)
    return NULL;
  if (n > r->size - r->pos) {
    rd_fail (r, "%s needs %" G_GSIZE_FORMAT " bytes, %" G_GSIZE_FORMAT " left", field, n,
             r->size - r->pos);
    return NULL;
  }
  p = r->data + r->pos;
  r->pos += n;
  return p;
}

static guint8
rd_u8 (NnpRd *r, const char *field)
{
  const guint8 *p = rd_take (r, 1, field);
  return p ? p[0] : 0;
}

static guint32
rd_u32 (NnpRd *r, const char *field)
{
  const guint8 *p = rd_take (r, 4, field);
  return p ? get_u32 (p) : 0;
}

static guint64
rd_u64 (NnpRd *r, const char *field)
{
  const guint8 *p = rd_take (r, 8, field);
  return p ? get_u64 (p) : 0;
}

static double
rd_f64 (NnpRd *r, const char *field)
{
  guint64 u = rd_u64 (r, field);
  double v;
  memcpy (&v, &u, 8);
  return v;
}

/* A string: a new NUL-terminated copy, or NULL when the cursor failed. */
static char *
rd_str (NnpRd *r, const char *field)
{
  guint32 n = rd_u32 (r, field);
  const guint8 *p;

  if (r->error)
    return NULL;
  if (n > NNP_REMOTE_MAX_STRING) {
    rd_fail (r, "%s is %u bytes long, the limit is %u", field, n, NNP_REMOTE_MAX_STRING);
    return NULL;
  }
  p = rd_take (r, n, field);
  if (p == NULL)
    return NULL;
  if (memchr (p, '\0', n) != NULL || !g_utf8_validate ((const char *) p, n, NULL)) {
    rd_fail (r, "%s is not a UTF-8 string without NUL bytes", field);
    return NULL;
  }
  return g_strndup ((const char *) p, n);
}

static gboolean
rd_end (NnpRd *r, GError **error)
{
  if (!r->error && r->pos != r->size)
    rd_fail (r, "%" G_GSIZE_FORMAT " bytes left over after the last field", r->size - r->pos);
  if (r->error) {
    g_propagate_error (error, r->error);
    r->error = NULL;
    return FALSE;
  }
  return TRUE;
}

/* ------------------------------------------------------------ header */

const char *
nnp_remote_type_name (int type)
{
  static const char *const names[] = { NULL,     "HELLO", "HELLO-OK", "ERROR", "FRAME",
                                       "RESULT", "PING",  "PONG",     "COST",  "COST-REPLY" };

  if (type >= 1 && type < (int) G_N_ELEMENTS (names))
    return names[type];
  return "unknown";
}

void
nnp_remote_header_write (guint8 *out, NnpRemoteType type, guint64 seq, guint32 length)
{
  memcpy (out, NNP_REMOTE_MAGIC, 4);
  out[4] = NNP_REMOTE_VERSION & 0xff;
  out[5] = NNP_REMOTE_VERSION >> 8;
  out[6] = (guint8) type;
  out[7] = 0;
  put_u64 (out + 8, seq);
  put_u32 (out + 16, length);
  put_u32 (out + 20, 0);
}

gboolean
nnp_remote_header_parse (const guint8 *data, guint32 max_payload, NnpRemoteHeader *header,
                         GError **error)
{
  if (memcmp (data, NNP_REMOTE_MAGIC, 4) != 0) {
    g_set_error (error, NNP_ERROR, NNP_ERROR_PARSE,
                 "not an nnpipe remote peer: bad magic %02x %02x %02x %02x (expected \"%s\")",
                 data[0], data[1], data[2], data[3], NNP_REMOTE_MAGIC);
    return FALSE;
  }
  header->version = (guint16) (data[4] | (data[5] << 8));
  header->type = data[6];
  header->flags = data[7];
  header->seq = get_u64 (data + 8);
  header->length = get_u32 (data + 16);
  if (header->version != NNP_REMOTE_VERSION) {
    g_set_error (error, NNP_ERROR, NNP_ERROR_UNSUPPORTED,
                 "protocol version %u, this side speaks version %u", header->version,
                 NNP_REMOTE_VERSION);
    return FALSE;
  }
  if (header->type < NNP_REMOTE_HELLO || header->type > NNP_REMOTE_COST_REPLY) {
    g_set_error (error, NNP_ERROR, NNP_ERROR_PARSE, "unknown message type %u", header->type);
    return FALSE;
  }
  if (header->flags != 0 || get_u32 (data + 20) != 0) {
    g_set_error (error, NNP_ERROR, NNP_ERROR_PARSE, "%s message with reserved header bits set",
                 nnp_remote_type_name (header->type));
    return FALSE;
  }
  if (header->length > max_payload) {
    g_set_error (error, NNP_ERROR, NNP_ERROR_PARSE,
                 "%s message of %u bytes is over the limit of %u bytes",
                 nnp_remote_type_name (header->type), header->length, max_payload);
    return FALSE;
  }
  return TRUE;
}

/* ------------------------------------------------------------ strings, HELLO */

/* The part of HELLO and COST: u8 kind, string part, u32 stage. */
static void
w_part (GByteArray *b, guint8 kind, const char *part, guint32 stage)
{
  w_u8 (b, kind);
  w_str (b, part);
  w_u32 (b, stage);
}

static void
rd_part (NnpRd *r, guint8 *kind, char **part, guint32 *stage)
{
  *kind = rd_u8 (r, "part kind");
  *part = rd_str (r, "part");
  *stage = rd_u32 (r, "stage");
  if (r->error)
    return;
  if (*kind > NNP_REMOTE_PART_PLAN)
    rd_fail (r, "unknown part kind %u", *kind);
  else if (*kind != NNP_REMOTE_PART_WHOLE && (*part)[0] == '\0')
    rd_fail (r, "empty part for part kind %u", *kind);
}


guint8 *
nnp_remote_string_encode (const char *text, gsize *size)
{
  GByteArray *b = g_byte_array_new ();
  w_str (b, text);
  return w_finish (b, size);
}

char *
nnp_remote_string_parse (const guint8 *data, gsize size, GError **error)
{
  NnpRd r;
  char *s;

  rd_init (&r, data, size, "string");
  s = rd_str (&r, "text");
  if (!rd_end (&r, error)) {
    g_free (s);
    return NULL;
  }
  return s;
}

guint8 *
nnp_remote_hello_encode (const NnpRemoteHello *hello, gsize *size)
{
  GByteArray *b = g_byte_array_new ();

  w_u32 (b, hello->version);
  w_str (b, hello->digest);
  w_part (b, hello->part_kind, hello->part, hello->stage);
  w_str (b, hello->token);
  return w_finish (b, size);
}

void
nnp_remote_hello_clear (NnpRemoteHello *hello)
{
  g_clear_pointer (&hello->digest, g_free);
  g_clear_pointer (&hello->part, g_free);
  g_clear_pointer (&hello->token, g_free);
}

gboolean
nnp_remote_hello_parse (const guint8 *data, gsize size, NnpRemoteHello *hello, GError **error)
{
  NnpRd r;

  memset (hello, 0, sizeof *hello);
  rd_init (&r, data, size, "HELLO");
  hello->version = rd_u32 (&r, "version");
  hello->digest = rd_str (&r, "digest");
  rd_part (&r, &hello->part_kind, &hello->part, &hello->stage);
  hello->token = rd_str (&r, "token");
  if (!r.error && hello->version != NNP_REMOTE_VERSION)
    rd_fail (&r, "client speaks protocol version %u, this server %u", hello->version,
             NNP_REMOTE_VERSION);
  if (!rd_end (&r, error)) {
    nnp_remote_hello_clear (hello);
    return FALSE;
  }
  return TRUE;
}

/* ------------------------------------------------------------ FRAME, RESULT */

#define ALIGN_UP(x) (((x) + NNP_REMOTE_ALIGN - 1) / NNP_REMOTE_ALIGN * NNP_REMOTE_ALIGN)
/* a dim above this is nonsense whatever the limit (keeps products in 64 bits) */
#define MAX_DIM ((guint64) 1 << 40)

guint8 *
nnp_remote_frame_encode_head (NnpRemoteType type, guint64 seq, const char *caps, const char *shapes,
                              int n_tensors, NnpRemoteTensor *tensors, gsize *head_size,
                              guint32 *payload_size, GError **error)
{
  GByteArray *b = g_byte_array_new ();
  guint8 hdr[NNP_REMOTE_HEADER_SIZE] = { 0 };
  gsize descr_at, pos;
  guint8 *head;

  g_return_val_if_fail (n_tensors >= 1 && n_tensors <= NNP_REMOTE_MAX_TENSORS, NULL);
  g_byte_array_append (b, hdr, sizeof hdr);
  w_str (b, caps);
  w_str (b, shapes);
  w_u32 (b, (guint32) n_tensors);
  descr_at = b->len;
  /* descriptor: dtype u8, rank u8, 2 zero bytes, dims u64 x rank, offset u64, nbytes u64 */
  pos = b->len - NNP_REMOTE_HEADER_SIZE;
  for (int i = 0; i < n_tensors; i++)
    pos += 4 + 8 * (gsize) tensors[i].shape.rank + 16;
  for (int i = 0; i < n_tensors; i++) {
    pos = ALIGN_UP (pos);
    tensors[i].offset = pos;
    pos += tensors[i].nbytes;
  }
  if (pos > G_MAXUINT32) {
    g_set_error (error, NNP_ERROR, NNP_ERROR_INVALID,
                 "a %s of %" G_GSIZE_FORMAT " bytes does not fit a message (4 GiB at most)",
                 nnp_remote_type_name (type), pos);
    g_byte_array_free (b, TRUE);
    return NULL;
  }
  for (int i = 0; i < n_tensors; i++) {
    const NnpRemoteTensor *t = &tensors[i];
    w_u8 (b, (guint8) t->dtype);
    w_u8 (b, (guint8) t->shape.rank);
    w_u8 (b, 0);
    w_u8 (b, 0);
    for (int d = 0; d < t->shape.rank; d++)
      w_u64 (b, (guint64) t->shape.dims[d]);
    w_u64 (b, t->offset);
    w_u64 (b, t->nbytes);
  }
  (void) descr_at;
  /* padding up to the first tensor */
  while (b->len - NNP_REMOTE_HEADER_SIZE < tensors[0].offset)
    w_u8 (b, 0);
  nnp_remote_header_write (b->data, type, seq, (guint32) pos);
  *payload_size = (guint32) pos;
  head = w_finish (b, head_size);
  return head;
}

void
nnp_remote_frame_clear (NnpRemoteFrame *frame)
{
  g_clear_pointer (&frame->caps, g_free);
  g_clear_pointer (&frame->shapes, g_free);
  frame->n_tensors = 0;
}

gboolean
nnp_remote_frame_parse (const guint8 *data, gsize size, NnpRemoteFrame *frame, GError **error)
{
  NnpRd r;
  guint32 n;
  gsize data_end;

  memset (frame, 0, sizeof *frame);
  rd_init (&r, data, size, "FRAME");
  frame->caps = rd_str (&r, "caps");
  frame->shapes = rd_str (&r, "shapes");
  n = rd_u32 (&r, "tensor count");
  if (!r.error && (n < 1 || n > NNP_REMOTE_MAX_TENSORS))
    rd_fail (&r, "tensor count %u is not in 1..%d", n, NNP_REMOTE_MAX_TENSORS);
  for (guint32 i = 0; i < n && !r.error; i++) {
    NnpRemoteTensor *t = &frame->tensors[i];
    guint8 dtype = rd_u8 (&r, "dtype"), rank = rd_u8 (&r, "rank");
    guint64 numel = 1, off, nbytes;
    gsize esize = nnp_dtype_size ((NnpDType) dtype);

    (void) rd_u8 (&r, "padding");
    (void) rd_u8 (&r, "padding");
    if (r.error)
      break;
    if (esize == 0) {
      rd_fail (&r, "tensor %u: unknown element type %u", i, dtype);
      break;
    }
    if (rank > NNP_MAX_RANK) {
      rd_fail (&r, "tensor %u: rank %u is over %d", i, rank, NNP_MAX_RANK);
      break;
    }
    t->dtype = (NnpDType) dtype;
    t->shape.rank = rank;
    for (int d = 0; d < rank && !r.error; d++) {
      guint64 dim = rd_u64 (&r, "dimension");
      if (r.error)
        break;
      if (dim < 1 || dim > MAX_DIM) {
        rd_fail (&r, "tensor %u: dimension %d is %" G_GUINT64_FORMAT, i, d, dim);
        break;
      }
      t->shape.dims[d] = (int64_t) dim;
      if (numel > G_MAXUINT64 / dim / esize) {
        rd_fail (&r, "tensor %u: size overflows", i);
        break;
      }
      numel *= dim;
    }
    off = rd_u64 (&r, "data offset");
    nbytes = rd_u64 (&r, "byte count");
    if (r.error)
      break;
    if (nbytes != numel * esize) {
      rd_fail (&r,
               "tensor %u: %" G_GUINT64_FORMAT " bytes for %" G_GUINT64_FORMAT
               " elements of %" G_GSIZE_FORMAT " bytes",
               i, nbytes, numel, esize);
      break;
    }
    if (off % NNP_REMOTE_ALIGN != 0 || off > size || nbytes > size - off) {
      rd_fail (&r,
               "tensor %u: data at %" G_GUINT64_FORMAT " + %" G_GUINT64_FORMAT
               " bytes is not an aligned range of the %" G_GSIZE_FORMAT "-byte payload",
               i, off, nbytes, size);
      break;
    }
    t->offset = off;
    t->nbytes = nbytes;
    t->data = data + off;
  }
  if (!r.error) {
    /* data ranges: after the descriptors, in order, not overlapping; nothing after the last */
    data_end = r.pos;
    for (guint32 i = 0; i < n; i++) {
      const NnpRemoteTensor *t = &frame->tensors[i];
      if (t->offset < data_end || t->offset - data_end >= NNP_REMOTE_ALIGN) {
        rd_fail (&r,
                 "tensor %u: data at %" G_GSIZE_FORMAT
                 ", expected the next aligned offset after %" G_GSIZE_FORMAT,
                 i, t->offset, data_end);
        break;
      }
      data_end = t->offset + t->nbytes;
    }
    if (!r.error)
      r.pos = data_end;
  }
  frame->n_tensors = r.error ? 0 : (int) n;
  if (!rd_end (&r, error)) {
    nnp_remote_frame_clear (frame);
    return FALSE;
  }
  return TRUE;
}

/* ------------------------------------------------------------ COST */

guint8 *
nnp_remote_cost_query_encode (const NnpRemoteCostQuery *query, gsize *size)
{
  GByteArray *b = g_byte_array_new ();

  w_part (b, query->part_kind, query->part, query->stage);
  w_str (b, query->shapes);
  return w_finish (b, size);
}

void
nnp_remote_cost_query_clear (NnpRemoteCostQuery *query)
{
  g_clear_pointer (&query->part, g_free);
  g_clear_pointer (&query->shapes, g_free);
}

gboolean
nnp_remote_cost_query_parse (const guint8 *data, gsize size, NnpRemoteCostQuery *query,
                             GError **error)
{
  NnpRd r;

  memset (query, 0, sizeof *query);
  rd_init (&r, data, size, "COST");
  rd_part (&r, &query->part_kind, &query->part, &query->stage);
  query->shapes = rd_str (&r, "shapes");
  if (!rd_end (&r, error)) {
    nnp_remote_cost_query_clear (query);
    return FALSE;
  }
  return TRUE;
}

guint8 *
nnp_remote_cost_reply_encode (const NnpRemoteCostReply *reply, gsize *size)
{
  GByteArray *b = g_byte_array_new ();

  w_str (b, reply->device);
  w_u32 (b, (guint32) reply->n_nodes);
  for (int i = 0; i < reply->n_nodes; i++) {
    w_str (b, reply->names[i]);
    w_f64 (b, reply->ms[i]);
  }
  return w_finish (b, size);
}

void
nnp_remote_cost_reply_clear (NnpRemoteCostReply *reply)
{
  g_clear_pointer (&reply->device, g_free);
  if (reply->names) {
    for (int i = 0; i < reply->n_nodes; i++)
      g_free (reply->names[i]);
  }
  g_clear_pointer (&reply->names, g_free);
  g_clear_pointer (&reply->ms, g_free);
  reply->n_nodes = 0;
}

gboolean
nnp_remote_cost_reply_parse (const guint8 *data, gsize size, NnpRemoteCostReply *reply,
                             GError **error)
{
  NnpRd r;
  guint32 n;

  memset (reply, 0, sizeof *reply);
  rd_init (&r, data, size, "COST-REPLY");
  reply->device = rd_str (&r, "device");
  n = rd_u32 (&r, "node count");
  /* each node takes at least 12 bytes: a count that cannot fit is refused before allocating */
  if (!r.error && n > (r.size - r.pos) / 12)
    rd_fail (&r, "%u nodes cannot fit in %" G_GSIZE_FORMAT " bytes", n, r.size - r.pos);
  if (!r.error) {
    reply->names = g_new0 (char *, n + 1);
    reply->ms = g_new0 (double, MAX (n, 1));
    for (guint32 i = 0; i < n && !r.error; i++) {
      reply->names[i] = rd_str (&r, "node name");
      reply->ms[i] = rd_f64 (&r, "node ms");
      reply->n_nodes = (int) i + 1;
      if (!r.error && !(reply->ms[i] >= 0.0))
        rd_fail (&r, "node %u: cost %g ms is not a number >= 0", i, reply->ms[i]);
    }
  }
  if (!rd_end (&r, error)) {
    nnp_remote_cost_reply_clear (reply);
    return FALSE;
  }
  return TRUE;
}

/* ------------------------------------------------------------ I/O */

gboolean
nnp_remote_send (GOutputStream *out, NnpRemoteType type, guint64 seq, const guint8 *payload,
                 gsize size, GCancellable *cancellable, GError **error)
{
  guint8 hdr[NNP_REMOTE_HEADER_SIZE];
  GOutputVector v[2] = { { hdr, sizeof hdr }, { payload, size } };

  if (size > G_MAXUINT32) {
    g_set_error (error, NNP_ERROR, NNP_ERROR_INVALID,
                 "a %s payload of %" G_GSIZE_FORMAT " bytes does not fit a message",
                 nnp_remote_type_name (type), size);
    return FALSE;
  }
  nnp_remote_header_write (hdr, type, seq, (guint32) size);
  return g_output_stream_writev_all (out, v, size ? 2 : 1, NULL, cancellable, error);
}

gboolean
nnp_remote_send_frame (GOutputStream *out, NnpRemoteType type, guint64 seq, const char *caps,
                       const char *shapes, int n_tensors, NnpRemoteTensor *tensors,
                       GCancellable *cancellable, GError **error)
{
  static const guint8 zeros[NNP_REMOTE_ALIGN] = { 0 };
  GOutputVector v[1 + 2 * NNP_REMOTE_MAX_TENSORS];
  gsize head_size, at;
  guint32 payload_size;
  guint8 *head;
  int nv = 0;
  gboolean ok;

  head = nnp_remote_frame_encode_head (type, seq, caps, shapes, n_tensors, tensors, &head_size,
                                       &payload_size, error);
  if (head == NULL)
    return FALSE;
  v[nv].buffer = head;
  v[nv++].size = head_size;
  at = tensors[0].offset;
  for (int i = 0; i < n_tensors; i++) {
    if (tensors[i].offset > at) {
      v[nv].buffer = zeros;
      v[nv++].size = tensors[i].offset - at;
    }
    v[nv].buffer = tensors[i].data;
    v[nv++].size = tensors[i].nbytes;
    at = tensors[i].offset + tensors[i].nbytes;
  }
  ok = g_output_stream_writev_all (out, v, nv, NULL, cancellable, error);
  g_free (head);
  return ok;
}

gboolean
nnp_remote_recv (GInputStream *in, guint32 max_payload, NnpRemoteHeader *header, guint8 **payload,
                 GCancellable *cancellable, GError **error)
{
  guint8 hdr[NNP_REMOTE_HEADER_SIZE];
  gsize got = 0;
  guint8 *p = NULL;

  *payload = NULL;
  if (!g_input_stream_read_all (in, hdr, sizeof hdr, &got, cancellable, error))
    return FALSE;
  if (got == 0) {
    g_set_error (error, NNP_ERROR, NNP_ERROR_IO, "connection closed");
    return FALSE;
  }
  if (got < sizeof hdr) {
    g_set_error (error, NNP_ERROR, NNP_ERROR_PARSE,
                 "connection closed in a message header (%" G_GSIZE_FORMAT " of %d bytes)", got,
                 NNP_REMOTE_HEADER_SIZE);
    return FALSE;
  }
  if (!nnp_remote_header_parse (hdr, max_payload, header, error))
    return FALSE;
  if (header->length > 0) {
    p = g_aligned_alloc (header->length, 1, NNP_REMOTE_ALIGN);
    if (!g_input_stream_read_all (in, p, header->length, &got, cancellable, error)) {
      g_aligned_free (p);
      return FALSE;
    }
    if (got < header->length) {
      g_set_error (error, NNP_ERROR, NNP_ERROR_PARSE,
                   "connection closed in a %s message (%" G_GSIZE_FORMAT " of %u bytes)",
                   nnp_remote_type_name (header->type), got, header->length);
      g_aligned_free (p);
      return FALSE;
    }
  }
  *payload = p;
  return TRUE;
}
