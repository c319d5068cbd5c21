/* libFuzzer harness: the remote-stage wire format (lib/remote/wire.c,
 * docs/remote.md "Wire format").
 *
 * The input is what a peer could send on a connection: it is read message
 * by message with nnp_remote_recv() from a memory stream (header checks,
 * the payload limit of 64 KiB before allocating), and each payload goes to
 * the parser of its type (HELLO, FRAME/RESULT, COST, COST-REPLY, strings).
 * Every parser must succeed or fail with a one-line error; a FRAME that
 * parses must survive a round trip (encode, parse, same tensors and bytes),
 * and so must a HELLO, a COST query and a COST-REPLY.  The whole input also
 * goes to each payload parser directly (no header), and to
 * nnp_remote_address_parse() as text. */
#include "fuzz-common.h"
#include "remote/remote-private.h"

#include <nnpipe/remote.h>
#include <nnpipe/device.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput (const guint8 *data, size_t size);

#define MAX_PAYLOAD (64u << 10)

static void
violation (const char *what)
{
  g_printerr ("remote wire: %s\n", what);
  abort ();
}

static void
check (const char *where, gboolean ok, GError **error)
{
  NnpFuzzCounts c = { 0 };

  if (!nnp_fuzz_check_error (where, 0, ok, *error, &c))
    abort ();
  g_clear_error (error);
}

/* Encode a parsed frame again and parse that: the same frame. */
static void
frame_round_trip (const NnpRemoteFrame *f)
{
  NnpRemoteTensor t[NNP_REMOTE_MAX_TENSORS];
  NnpRemoteFrame again;
  GError *error = NULL;
  gsize head_size;
  guint32 payload_size;
  guint8 *head, *buf;

  memcpy (t, f->tensors, sizeof t);
  head = nnp_remote_frame_encode_head (NNP_REMOTE_RESULT, 7, f->caps, f->shapes, f->n_tensors, t,
                                       &head_size, &payload_size, &error);
  if (head == NULL)
    violation ("a parsed frame does not encode");
  buf = g_malloc0 (payload_size);
  memcpy (buf, head + NNP_REMOTE_HEADER_SIZE, head_size - NNP_REMOTE_HEADER_SIZE);
  for (int i = 0; i < f->n_tensors; i++)
    memcpy (buf + t[i].offset, f->tensors[i].data, t[i].nbytes);
  if (!nnp_remote_frame_parse (buf, payload_size, &again, &error)) {
    g_printerr ("%s\n", error->message);
    violation ("a re-encoded frame does not parse");
  }
  if (again.n_tensors != f->n_tensors || strcmp (again.caps, f->caps) != 0
      || strcmp (again.shapes, f->shapes) != 0)
    violation ("a re-encoded frame differs");
  for (int i = 0; i < f->n_tensors; i++) {
    if (again.tensors[i].dtype != f->tensors[i].dtype
        || again.tensors[i].nbytes != f->tensors[i].nbytes
        || again.tensors[i].shape.rank != f->tensors[i].shape.rank
        || memcmp (again.tensors[i].shape.dims, f->tensors[i].shape.dims,
                   sizeof (int64_t) * (gsize) f->tensors[i].shape.rank)
               != 0
        || memcmp (again.tensors[i].data, f->tensors[i].data, f->tensors[i].nbytes) != 0)
      violation ("a re-encoded tensor differs");
  }
  nnp_remote_frame_clear (&again);
  g_free (buf);
  g_free (head);
}

/* Parse data as a payload of type (0: try every parser). */
static void
parse_payload (int type, const guint8 *p, gsize n)
{
  GError *error = NULL;
  gboolean ok;
  gsize size;

  if (type == 0 || type == NNP_REMOTE_HELLO) {
    NnpRemoteHello h, h2;
    ok = nnp_remote_hello_parse (p, n, &h, &error);
    check ("hello", ok, &error);
    if (ok) {
      guint8 *e = nnp_remote_hello_encode (&h, &size);
      if (!nnp_remote_hello_parse (e, size, &h2, NULL) || strcmp (h.part, h2.part) != 0
          || strcmp (h.digest, h2.digest) != 0 || h.stage != h2.stage)
        violation ("HELLO round trip");
      nnp_remote_hello_clear (&h2);
      nnp_remote_hello_clear (&h);
      g_free (e);
    }
  }
  if (type == 0 || type == NNP_REMOTE_FRAME || type == NNP_REMOTE_RESULT) {
    NnpRemoteFrame f;
    ok = nnp_remote_frame_parse (p, n, &f, &error);
    check ("frame", ok, &error);
    if (ok) {
      frame_round_trip (&f);
      nnp_remote_frame_clear (&f);
    }
  }
  if (type == 0 || type == NNP_REMOTE_COST) {
    NnpRemoteCostQuery q, q2;
    ok = nnp_remote_cost_query_parse (p, n, &q, &error);
    check ("cost query", ok, &error);
    if (ok) {
      guint8 *e = nnp_remote_cost_query_encode (&q, &size);
      if (!nnp_remote_cost_query_parse (e, size, &q2, NULL) || strcmp (q.shapes, q2.shapes) != 0)
        violation ("COST round trip");
      nnp_remote_cost_query_clear (&q2);
      nnp_remote_cost_query_clear (&q);
      g_free (e);
    }
  }
  if (type == 0 || type == NNP_REMOTE_COST_REPLY) {
    NnpRemoteCostReply r, r2;
    ok = nnp_remote_cost_reply_parse (p, n, &r, &error);
    check ("cost reply", ok, &error);
    if (ok) {
      guint8 *e = nnp_remote_cost_reply_encode (&r, &size);
      if (!nnp_remote_cost_reply_parse (e, size, &r2, NULL) || r.n_nodes != r2.n_nodes)
        violation ("COST-REPLY round trip");
      nnp_remote_cost_reply_clear (&r2);
      nnp_remote_cost_reply_clear (&r);
      g_free (e);
    }
  }
  if (type == 0 || type == NNP_REMOTE_ERROR || type == NNP_REMOTE_HELLO_OK) {
    char *s = nnp_remote_string_parse (p, n, &error);
    check ("string", s != NULL, &error);
    g_free (s);
  }
}

int
LLVMFuzzerTestOneInput (const guint8 *data, size_t size)
{
  GInputStream *in = g_memory_input_stream_new_from_data (data, (gssize) size, NULL);
  GError *error = NULL;
  char *text, *host = NULL;
  guint16 port;
  gboolean ok;

  /* the stream, message by message */
  for (int k = 0; k < 64; k++) {
    NnpRemoteHeader h;
    guint8 *payload = NULL;

    ok = nnp_remote_recv (in, MAX_PAYLOAD, &h, &payload, NULL, &error);
    check ("recv", ok, &error);
    if (!ok)
      break;
    if (h.length > MAX_PAYLOAD)
      violation ("a payload over the limit was read");
    parse_payload (h.type, payload, h.length);
    g_aligned_free (payload);
  }
  g_object_unref (in);

  /* every parser on the raw bytes */
  parse_payload (0, data, size);

  text = g_strndup ((const char *) data, MIN (size, 256));
  ok = nnp_remote_address_parse (text, &host, &port, &error);
  check ("address", ok, &error);
  if (ok && (host == NULL || port == 0))
    violation ("address parsed to nothing");
  g_free (host);
  g_free (text);
  return 0;
}
