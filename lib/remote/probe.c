/* The client side of the link-aware partitioner (issue 12 item 5): ask an
 * nnpipe server what its link and its device cost, and give both to the
 * partitioner's cost model (include/nnpipe/plan.h, NnpLink).
 *
 * One short connection: HELLO for the model (whole part), then
 *   RTT        the median of PROBE_PINGS empty PING/PONG round trips;
 *   bandwidth  one PING of probe_bytes: its time beyond one round trip is
 *              the transfer (the PONG is 8 bytes);
 *   costs      a COST query for the whole model at the client's shapes: the
 *              server specialises the same model (same digest) the same way,
 *              so its node names are the client's. */
#include <nnpipe/error.h>
#include <nnpipe/log.h>
#include <nnpipe/plan.h>
#include <nnpipe/remote.h>
#include <nnpipe/device.h>

#include "partition/partition.h"
#include "remote/remote-private.h"
#include "graph/graph-edit.h"

#include <math.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <string.h>

#define CAT "nnp-remote"
#define PROBE_PINGS 5
#define PROBE_MAX_REPLY (64u << 20)

static int
cmp_double (const void *a, const void *b)
{
  double x = *(const double *) a, y = *(const double *) b;
  return x < y ? -1 : x > y;
}

/* Send a message and wait for its answer of type `want` (ERROR: its text). */
static gboolean
ask (GIOStream *io, NnpRemoteType type, guint64 seq, const guint8 *payload, gsize size,
     NnpRemoteType want, guint8 **answer, guint32 *answer_size, const char *address, GError **error)
{
  NnpRemoteHeader h;
  guint8 *data = NULL;

  if (!nnp_remote_send (g_io_stream_get_output_stream (io), type, seq, payload, size, NULL, error)
      || !nnp_remote_recv (g_io_stream_get_input_stream (io), PROBE_MAX_REPLY, &h, &data, NULL,
                           error))
    return FALSE;
  if (h.type == NNP_REMOTE_ERROR) {
    g_autofree char *why = nnp_remote_string_parse (data, h.length, NULL);
    g_set_error (error, NNP_ERROR, NNP_ERROR_DEVICE, "server %s refused %s: %s", address,
                 nnp_remote_type_name (type), why ? why : "(no reason)");
    g_aligned_free (data);
    return FALSE;
  }
  if (h.type != want) {
    g_set_error (error, NNP_ERROR, NNP_ERROR_DEVICE, "server %s answered %s with %s", address,
                 nnp_remote_type_name (type), nnp_remote_type_name (h.type));
    g_aligned_free (data);
    return FALSE;
  }
  if (answer) {
    *answer = data;
    *answer_size = h.length;
  } else {
    g_aligned_free (data);
  }
  return TRUE;
}

gboolean
nnp_remote_probe (const char *address, const char *digest, const char *token, const char *shapes,
                  gsize probe_bytes, NnpRemoteProbe *probe, GError **error)
{
  g_autoptr (GSocketClient) client = g_socket_client_new ();
  g_autoptr (GSocketConnection) conn = NULL;
  g_autofree char *host = NULL;
  g_autofree guint8 *hello_data = NULL, *query_data = NULL, *big = NULL;
  guint8 *answer = NULL;
  guint32 answer_size = 0;
  guint16 port;
  gsize size;
  double rtt[PROBE_PINGS];
  NnpRemoteHello hello = { 0 };
  NnpRemoteCostQuery q = { 0 };
  GIOStream *io;
  gint64 t0;
  gboolean ok = FALSE;

  g_return_val_if_fail (address != NULL && digest != NULL && probe != NULL, FALSE);
  memset (probe, 0, sizeof (*probe));
  if (!nnp_remote_address_parse (address, &host, &port, error))
    return FALSE;
  g_socket_client_set_timeout (client, 10);
  conn = g_socket_client_connect_to_host (client, address, port, NULL, error);
  if (conn == NULL) {
    g_prefix_error (error, "server %s: ", address);
    return FALSE;
  }
  g_socket_set_option (g_socket_connection_get_socket (conn), IPPROTO_TCP, TCP_NODELAY, 1, NULL);
  io = G_IO_STREAM (conn);

  hello.version = NNP_REMOTE_VERSION;
  hello.digest = (char *) digest;
  hello.part_kind = NNP_REMOTE_PART_WHOLE;
  hello.part = (char *) "";
  hello.token = (char *) (token ? token : "");
  hello_data = nnp_remote_hello_encode (&hello, &size);
  if (!ask (io, NNP_REMOTE_HELLO, 0, hello_data, size, NNP_REMOTE_HELLO_OK, &answer, &answer_size,
            address, error))
    goto out;
  probe->server = nnp_remote_string_parse (answer, answer_size, NULL);
  g_clear_pointer (&answer, g_aligned_free);

  for (int i = 0; i < PROBE_PINGS; i++) {
    t0 = g_get_monotonic_time ();
    if (!ask (io, NNP_REMOTE_PING, 1 + i, NULL, 0, NNP_REMOTE_PONG, NULL, NULL, address, error))
      goto out;
    rtt[i] = (g_get_monotonic_time () - t0) / 1000.0;
  }
  qsort (rtt, PROBE_PINGS, sizeof (double), cmp_double);
  probe->rtt_ms = rtt[PROBE_PINGS / 2];
  /* bandwidth: a PING of 256 KiB, 8x larger while it takes under 20 ms (up
   * to 16 MiB): long enough to see the rate of a slow link without waiting
   * seconds, and of a fast one without timing noise */
  for (gsize bytes = probe_bytes ? probe_bytes : 256u << 10;; bytes *= 8) {
    double ms;
    g_free (big);
    big = g_malloc0 (bytes);
    t0 = g_get_monotonic_time ();
    if (!ask (io, NNP_REMOTE_PING, 100, big, bytes, NNP_REMOTE_PONG, NULL, NULL, address, error))
      goto out;
    ms = (g_get_monotonic_time () - t0) / 1000.0 - probe->rtt_ms;
    /* at least 10 us for the probe: a loopback link is "as fast as memory" */
    probe->bytes_per_s = bytes * 1e3 / MAX (ms, 0.01);
    if (probe_bytes || ms >= 20.0 || bytes >= (16u << 20))
      break;
  }

  q.part_kind = NNP_REMOTE_PART_WHOLE;
  q.part = (char *) "";
  q.shapes = (char *) (shapes ? shapes : "");
  query_data = nnp_remote_cost_query_encode (&q, &size);
  if (!ask (io, NNP_REMOTE_COST, 200, query_data, size, NNP_REMOTE_COST_REPLY, &answer,
            &answer_size, address, error))
    goto out;
  ok = nnp_remote_cost_reply_parse (answer, answer_size, &probe->costs, error);
  if (!ok)
    g_prefix_error (error, "server %s: cost reply: ", address);
  else
    NNP_INFO (CAT, "%s (%s): RTT %.3f ms, %.1f MB/s, %d node costs", address,
              probe->server ? probe->server : "?", probe->rtt_ms, probe->bytes_per_s / 1e6,
              probe->costs.n_nodes);

out:
  g_clear_pointer (&answer, g_aligned_free);
  g_io_stream_close (io, NULL, NULL);
  if (!ok)
    nnp_remote_probe_clear (probe);
  return ok;
}

void
nnp_remote_probe_clear (NnpRemoteProbe *probe)
{
  if (probe == NULL)
    return;
  g_free (probe->server);
  nnp_remote_cost_reply_clear (&probe->costs);
  memset (probe, 0, sizeof (*probe));
}

gboolean
nnp_remote_prepare_cost_model (NnpCostModel *cm, const NnpGraph *graph, const NnpDeviceSpec *dev,
                               const char *digest, const char *token, const char *shapes,
                               int window, const NnpLink *link_override, GError **error)
{
  const char *address;
  g_autofree char *first = NULL;
  NnpRemoteProbe probe;
  NnpLink link;
  g_autofree double *ms = NULL;
  guint n;
  int missing = 0;

  if ((address = nnp_device_spec_remote_address (dev->device)) == NULL)
    return TRUE; /* a local device */
  /* "a:7000|b:7000": the first host is the one the stage runs on */
  first = g_strndup (address, strcspn (address, "|"));
  if (!nnp_remote_probe (first, digest, token, shapes, 0, &probe, error))
    return FALSE;
  n = graph->nodes->len;
  ms = g_new (double, MAX (n, 1));
  for (guint i = 0; i < n; i++)
    ms[i] = INFINITY;
  for (int k = 0; k < probe.costs.n_nodes; k++) {
    NnpNode *node = nnp_graph_find_node (graph, probe.costs.names[k]);
    if (node)
      ms[node->index] = probe.costs.ms[k];
  }
  for (guint i = 0; i < n; i++)
    missing += !isfinite (ms[i]);
  if (missing == (int) n) {
    g_set_error (
        error, NNP_ERROR, NNP_ERROR_DEVICE,
        "server %s: its node costs name none of this graph's %u nodes (another specialisation?)",
        first, n);
    nnp_remote_probe_clear (&probe);
    return FALSE;
  }
  if (missing)
    NNP_INFO (CAT, "%s: %d nodes without a cost: taken as not supported there", first, missing);
  link.bytes_per_s = probe.bytes_per_s;
  link.rtt_ms = probe.rtt_ms;
  link.window = MAX (window, 1);
  if (link_override)
    link = *link_override;
  nnp_cost_model_set_link (cm, dev->device, &link);
  nnp_remote_probe_clear (&probe);
  return nnp_cost_model_set_node_costs (cm, dev, ms, (int) n, error);
}
