/* libFuzzer harness: the remote server's own code (plugins/elements/
 * gstnnserver*.c) under a hostile client, through a real TCP connection
 * (docs/remote.md, "Running a server exposed to a network").
 *
 * At start a server listens on 127.0.0.1 (any free port) for the model
 * tests/data/small.onnx (x: 1x3x8x8 -> y) with two parts: the whole model
 * and nodes "0..2"; one thread per part plays its stage: it pops the frames
 * the server queued and checks what a stage relies on (the reason nnpipe
 * serve once exited: issue 19 D1), then sends each back as its result.
 *
 * Each input is one conversation; its first byte chooses what the rest is:
 *   0  a FRAME payload, after a valid HELLO for the whole model
 *   1  a FRAME payload, after a valid HELLO for nodes "0..2"
 *   2  a HELLO payload, then a valid FRAME
 *   3  raw bytes after a valid HELLO (any messages)
 * (seeds: tests/fuzz/make-server-seeds.py).  The harness sends it, closes
 * its side and reads until the server closes.  Violations (abort):
 *   - a frame reaches a stage with caps that are not one fixed other/tensors
 *     structure equal to its canonical form (gst_nn_tensors_info_to_caps of
 *     its own info), outside the stage's template caps, with memories that
 *     do not match the caps, or (whole model) that the model's part refuses;
 *   - the server answers something else than HELLO-OK, RESULT, PONG,
 *     COST-REPLY and ERROR, or a malformed header;
 *   - a critical or a warning of our code (g_return_if_fail).
 * After each input the harness waits until the server has no connection
 * left, so each input is checked alone (leaks included). */
#include "gstnnserver-private.h"
#include "fuzz-common.h"
#include "gstnnmodelcaps.h"
#include "gstnntensorcaps.h"

#include <errno.h>
#include <gio/gio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

int LLVMFuzzerInitialize (int *argc, char ***argv);
int LLVMFuzzerTestOneInput (const guint8 *data, size_t size);

/* nnstage's category, which gstnnmodelcaps.c logs to (the element is not
 * linked here) */
GST_DEBUG_CATEGORY (gst_nn_stage_debug);

static GstNnServer *whole, *nodes;
static guint port;
static NnpPart *whole_part;
static gchar *digest;

static void
violation (const char *what, const gchar *detail)
{
  g_printerr ("fuzz-server: %s: %s\n", what, detail ? detail : "");
  abort ();
}

/* What a stage relies on, checked on each frame the server lets through. */
static void
check_frame (GstNnServerFrame *f, gboolean is_whole)
{
  GstCaps *tmpl = gst_caps_from_string (GST_NN_TENSORS_CAPS_TEMPLATE), *canon;
  GstNnTensorsInfo info;
  GError *err = NULL;
  gchar *str = gst_caps_to_string (f->caps);

  if (gst_caps_get_size (f->caps) != 1 || !gst_caps_is_fixed (f->caps))
    violation ("a frame with caps that are not fixed reached the stage", str);
  if (!gst_nn_tensors_info_from_caps (&info, f->caps, &err))
    violation ("a frame with caps that do not parse reached the stage", err->message);
  canon = gst_nn_tensors_info_to_caps (&info);
  if (!gst_caps_is_equal (canon, f->caps))
    violation ("a frame with caps that are not canonical reached the stage", str);
  if (!gst_caps_can_intersect (tmpl, f->caps))
    violation ("a frame with caps outside the template reached the stage", str);
  if (gst_buffer_n_memory (f->buffer) != info.n_tensors)
    violation ("a frame's memories do not match its caps", str);
  for (guint i = 0; i < info.n_tensors; i++)
    if (gst_buffer_peek_memory (f->buffer, i)->size
        != gst_nn_tensor_info_get_size (&info.tensors[i]))
      violation ("a tensor's bytes do not match its caps", str);
  if (is_whole) {
    gchar *upstream[2] = { f->shapes && f->shapes[0] ? f->shapes : NULL, NULL };
    NnpPartSpec *spec = gst_nn_part_spec_for_info (whole_part, &info, upstream, &err);

    if (spec == NULL)
      violation ("a frame the model refuses reached the stage", err->message);
    nnp_part_spec_unref (spec);
  }
  gst_caps_unref (canon);
  gst_caps_unref (tmpl);
  g_free (str);
}

/* A part's stage: pops, checks, answers with the frame itself. */
static gpointer
stage_thread (gpointer data)
{
  GstNnServer *ep = data;
  GstNnServerFrame *f;

  while ((f = gst_nn_server_pop (ep)) != NULL) {
    GstNnServerMeta *meta = gst_buffer_get_nn_server_meta (f->buffer);
    gchar *caps = gst_caps_to_string (f->caps);

    check_frame (f, ep == whole);
    gst_nn_server_send_result (port, meta, caps, f->buffer);
    g_free (caps);
    gst_nn_server_frame_free (f);
  }
  return NULL;
}

static void warm_up (void);
static void spawn_pool_threads (void);

int
LLVMFuzzerInitialize (int *argc, char ***argv)
{
  GstNnServerConfig config = { 0 };
  NnpPartOptions o = { 0 };
  GError *err = NULL;
  NnpModel *model;

  /* the server's threads (a GThreadPool's, per client) free into GSlice's
   * per-thread magazines, which read as leaks (GLib 2.74: 2032 bytes
   * "allocated by g_slice_free1" after 43,000 inputs of seed 1), and slices
   * a leak would leave hide inside its slabs.  GSlice reads G_SLICE once,
   * before this runs: set, the process starts again (run.sh sets it too). */
  if (g_strcmp0 (g_getenv ("G_SLICE"), "always-malloc") != 0) {
    g_setenv ("G_SLICE", "always-malloc", TRUE);
    execv ("/proc/self/exe", *argv);
    violation ("cannot run again with G_SLICE=always-malloc", g_strerror (errno));
  }
  /* no plugin is needed (no element here): none is loaded (their class
   * inits intern strings whose blocks GLib later drops) */
  g_setenv ("GST_REGISTRY_DISABLE", "yes", TRUE);
  /* the server's connections run on GLib's thread pool, whose spare
   * threads exit while later inputs run; a thread's blocks that its exit is
   * freeing read as a leak when the check stops it half way (2032 bytes of
   * g_malloc0, about once in 43,000 inputs of seed 1 when the machine is
   * busy): spare threads are kept */
  g_thread_pool_set_max_unused_threads (-1);
  g_thread_pool_set_max_idle_time (0);
  g_log_set_default_handler (nnp_fuzz_log_handler, NULL);
  gst_init (argc, argv);
  GST_DEBUG_CATEGORY_INIT (gst_nn_stage_debug, "nnstage", 0, "nnstage (fuzz-server)");
  model = nnp_model_load (NNP_FUZZ_SMALL_MODEL, &err);
  if (model == NULL)
    violation ("cannot load the model", err->message);
  digest = g_strdup (nnp_model_get_digest (model));
  o.device = "cpu";
  o.cache_size = 4;
  whole_part = nnp_part_new (model, &o, &err);
  if (whole_part == NULL)
    violation ("cannot make the model's part", err->message);
  nnp_model_unref (model);
  config.host = g_strdup ("127.0.0.1");
  config.model = g_strdup (NNP_FUZZ_SMALL_MODEL);
  config.digest = g_strdup (digest);
  config.device = g_strdup ("cpu");
  config.part = g_strdup ("");
  config.max_payload = 1u << 20;
  config.max_queue = 4;
  /* one address makes every input: no limit of it may refuse the next */
  config.max_per_address = 1024;
  whole = gst_nn_server_start (&config, NULL, &err);
  if (whole == NULL)
    violation ("cannot start the server", err->message);
  port = gst_nn_server_get_port (whole);
  g_free (config.part);
  config.part = g_strdup ("0..2");
  config.port = port;
  nodes = gst_nn_server_start (&config, NULL, &err);
  if (nodes == NULL)
    violation ("cannot serve the second part", err->message);
  gst_nn_server_config_clear (&config);
  g_thread_unref (g_thread_new ("stage-whole", stage_thread, whole));
  g_thread_unref (g_thread_new ("stage-nodes", stage_thread, nodes));
  spawn_pool_threads ();
  warm_up ();
  return 0;
}

/* What a GMemoryOutputStream holds, as a byte array. */
static GByteArray *
stream_bytes (GOutputStream *out)
{
  GByteArray *a = g_byte_array_new ();
  GMemoryOutputStream *mem = G_MEMORY_OUTPUT_STREAM (out);

  g_byte_array_append (a, g_memory_output_stream_get_data (mem),
                       (guint) g_memory_output_stream_get_data_size (mem));
  g_object_unref (out);
  return a;
}

/* One message as the public writer lays it out. */
static GByteArray *
message (NnpRemoteType type, guint64 seq, const guint8 *payload, gsize size)
{
  GOutputStream *out = g_memory_output_stream_new_resizable ();

  if (!nnp_remote_send (out, type, seq, payload, size, NULL, NULL))
    violation ("cannot lay out a message", "");
  return stream_bytes (out);
}

static GByteArray *
hello (const gchar *part)
{
  NnpRemoteHello h = { NNP_REMOTE_VERSION,          digest, part ? NNP_REMOTE_PART_NODES : 0,
                       (char *) (part ? part : ""), 0,      (char *) "" };
  gsize size;
  guint8 *p = nnp_remote_hello_encode (&h, &size);
  GByteArray *a = message (NNP_REMOTE_HELLO, 0, p, size);

  g_free (p);
  return a;
}

/* A valid FRAME of zeros for the whole model (x: 1x3x8x8). */
static GByteArray *
good_frame (void)
{
  static guint8 zeros[3 * 8 * 8 * 4];
  NnpRemoteTensor t = { 0 };
  GOutputStream *out = g_memory_output_stream_new_resizable ();

  t.dtype = NNP_DTYPE_FLOAT32;
  t.shape.rank = 4;
  t.shape.dims[0] = 1;
  t.shape.dims[1] = 3;
  t.shape.dims[2] = 8;
  t.shape.dims[3] = 8;
  t.nbytes = sizeof zeros;
  t.data = zeros;
  if (!nnp_remote_send_frame (
          out, NNP_REMOTE_FRAME, 1,
          "other/tensors,format=static,num_tensors=1,types=float32,dimensions=8:8:3:1,framerate=0/1",
          "", 1, &t, NULL, NULL))
    violation ("cannot lay out a frame", "");
  return stream_bytes (out);
}

/* Read what the server says until it closes; check each message. */
static void
read_answers (GSocket *sock)
{
  GByteArray *in = g_byte_array_new ();
  guint8 buf[65536];
  gssize n;

  g_socket_set_timeout (sock, 8);
  while ((n = g_socket_receive (sock, (gchar *) buf, sizeof buf, NULL, NULL)) > 0)
    g_byte_array_append (in, buf, (guint) n);
  for (gsize at = 0; at + NNP_REMOTE_HEADER_SIZE <= in->len;) {
    NnpRemoteHeader h;
    GError *err = NULL;

    if (!nnp_remote_header_parse (in->data + at, G_MAXUINT32, &h, &err))
      violation ("the server sent a bad header", err->message);
    if (h.type != NNP_REMOTE_HELLO_OK && h.type != NNP_REMOTE_RESULT && h.type != NNP_REMOTE_PONG
        && h.type != NNP_REMOTE_COST_REPLY && h.type != NNP_REMOTE_ERROR)
      violation ("the server sent an unexpected message", nnp_remote_type_name (h.type));
    at += NNP_REMOTE_HEADER_SIZE + h.length;
  }
  g_byte_array_unref (in);
}

/* Until the server has no connection: each input is checked alone. */
static void
wait_idle (void)
{
  Listener *l = whole->l;

  g_mutex_lock (&l->lock);
  while (l->n_conns > 0 || l->running > 0) {
    gint64 until = g_get_monotonic_time () + 10 * G_TIME_SPAN_MILLISECOND;
    g_cond_wait_until (&l->cond, &l->lock, until);
  }
  g_mutex_unlock (&l->lock);
}

/* A plain socket connected to the server (no proxy resolver, libproxy or
 * dconf, in the way). */
static GSocket *
connect_server (void)
{
  GInetAddress *ia = g_inet_address_new_loopback (G_SOCKET_FAMILY_IPV4);
  GSocketAddress *sa = g_inet_socket_address_new (ia, (guint16) port);
  GSocket *sock =
      g_socket_new (G_SOCKET_FAMILY_IPV4, G_SOCKET_TYPE_STREAM, G_SOCKET_PROTOCOL_TCP, NULL);

  if (sock == NULL || !g_socket_connect (sock, sa, NULL, NULL))
    violation ("cannot connect to the server", "127.0.0.1");
  g_object_unref (sa);
  g_object_unref (ia);
  return sock;
}

int
LLVMFuzzerTestOneInput (const guint8 *data, size_t size)
{
  GByteArray *send, *m;
  GSocket *sock;

  if (size < 1)
    return 0;
  send = g_byte_array_new ();
  switch (data[0] % 4) {
    case 0:
    case 1:
      m = hello (data[0] % 4 == 1 ? "0..2" : NULL);
      g_byte_array_append (send, m->data, m->len);
      g_byte_array_unref (m);
      m = message (NNP_REMOTE_FRAME, 1, data + 1, size - 1);
      break;
    case 2:
      m = message (NNP_REMOTE_HELLO, 0, data + 1, size - 1);
      g_byte_array_append (send, m->data, m->len);
      g_byte_array_unref (m);
      m = good_frame ();
      break;
    default:
      m = hello (NULL);
      g_byte_array_append (send, m->data, m->len);
      g_byte_array_unref (m);
      m = g_byte_array_new ();
      g_byte_array_append (m, data + 1, size - 1);
      break;
  }
  g_byte_array_append (send, m->data, m->len);
  g_byte_array_unref (m);

  sock = connect_server ();
  /* the server may close early (an ERROR): a short write is fine */
  for (gsize at = 0; at < send->len;) {
    gssize n = g_socket_send (sock, (const gchar *) send->data + at, send->len - at, NULL, NULL);
    if (n <= 0)
      break;
    at += (gsize) n;
  }
  g_socket_shutdown (sock, FALSE, TRUE, NULL);
  read_answers (sock);
  g_socket_close (sock, NULL);
  g_object_unref (sock);
  g_byte_array_unref (send);
  wait_idle ();
  return 0;
}

/* The server's connections run on GIO's thread pool; a connection that
 * arrives while the previous one's thread is between its end and its wait
 * for the next gets a new thread, and that thread's first GSlice block
 * (its 2,032-byte magazine table, g_malloc0) read as a leak in the input
 * where it appeared (LeakSanitizer, once in 40,000-130,000 inputs of seed 1:
 * the CI's failure of 2026-11-28, reproduced with its whole stack).  Here
 * SPARE connections are held open together first, so that as many pool
 * threads exist, each with its table, and wait for work once they close:
 * an input's connection then always finds a waiting thread. */
#define SPARE 6

static void
spawn_pool_threads (void)
{
  GSocket *socks[SPARE];
  Listener *l = whole->l;

  for (int i = 0; i < SPARE; i++)
    socks[i] = connect_server ();
  /* every connection on a thread of its own */
  g_mutex_lock (&l->lock);
  while (l->running < SPARE) {
    gint64 until = g_get_monotonic_time () + 10 * G_TIME_SPAN_MILLISECOND;
    g_cond_wait_until (&l->cond, &l->lock, until);
  }
  g_mutex_unlock (&l->lock);
  for (int i = 0; i < SPARE; i++) {
    g_socket_close (socks[i], NULL);
    g_object_unref (socks[i]);
  }
  wait_idle ();
}

/* GLib and GStreamer allocate some things once, at their first use (quark
 * blocks, a code path's first GType): the seeds are run once here, before
 * the leak checks count. */
static void
warm_up (void)
{
  GDir *dir = g_dir_open (NNP_FUZZ_SERVER_SEEDS, 0, NULL);
  const gchar *name;

  if (dir == NULL)
    violation ("no seeds", NNP_FUZZ_SERVER_SEEDS);
  while ((name = g_dir_read_name (dir)) != NULL) {
    gchar *path = g_build_filename (NNP_FUZZ_SERVER_SEEDS, name, NULL);
    gchar *data = NULL;
    gsize size = 0;

    if (g_file_get_contents (path, &data, &size, NULL))
      LLVMFuzzerTestOneInput ((const guint8 *) data, size);
    g_free (data);
    g_free (path);
  }
  g_dir_close (dir);
}
