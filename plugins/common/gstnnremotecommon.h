/* GStreamer nnpipe plugin: what the two ends of a remote stage share
 * (nnremote on the client, nnserversrc/nnserversink on the server;
 * docs/remote.md): host lists, TLS set-up, the token check, and tensors
 * between GstBuffers and the wire's FRAME/RESULT messages. */
#pragma once

#include <gst/gst.h>
#include <nnpipe/remote.h>

G_BEGIN_DECLS

/* "a:7000|b:7000" (an optional "remote://" prefix on the list or on each
 * entry, spaces around entries ignored) as a NULL-terminated array of
 * "host:port" (g_strfreev), each checked by nnp_remote_address_parse().
 * NULL + error naming the bad entry, or for an empty list. */
gchar **gst_nn_remote_hosts_parse (const gchar *list, GError **error);

/* The server's certificate: cert_file holds the PEM certificate, and the
 * key too when key_file is NULL or "".  New ref or NULL + error naming the
 * file. */
GTlsCertificate *gst_nn_remote_tls_certificate_load (const gchar *cert_file,
    const gchar *key_file, GError **error);

/* A TLS database of the CA certificates in ca_file (GIO wants an absolute
 * path: a relative one is taken from the working directory).  New ref or
 * NULL + error naming the file. */
GTlsDatabase *gst_nn_remote_tls_database (const gchar *ca_file, GError **error);

/* The client's TLS over base (a connected socket, not taken): checks the
 * server's certificate for host:port against ca_file (NULL or "": the
 * system's trust store), shows cert_file/key_file (PEM, may be NULL) when
 * the server asks for a client certificate, and does the handshake.  The
 * TLS stream (new ref) or NULL + error prefixed "TLS: " whose message says
 * first what to change (an untrusted, expired or wrong-name certificate, a
 * server without TLS, a client certificate needed), then GIO's words. */
GIOStream *gst_nn_remote_tls_client (GIOStream *base, const gchar *host,
    guint16 port, const gchar *ca_file, const gchar *cert_file,
    const gchar *key_file, GCancellable *cancellable, GError **error);

/* The errors of a peer certificate in words ("it has expired, ..."). */
gchar *gst_nn_remote_tls_flags_text (GTlsCertificateFlags flags);
/* GTlsConnection::accept-certificate handler: stores the errors in
 * *(GTlsCertificateFlags *) data and accepts the certificate only without
 * errors (glib-networking asks a server connection even then). */
gboolean gst_nn_remote_tls_on_accept_certificate (GTlsConnection *conn,
    GTlsCertificate *peer_cert, GTlsCertificateFlags errors, gpointer data);

/* When *error is a TLS error (G_TLS_ERROR) met at or after the handshake
 * with host:port: rewrite its message as "TLS: " + what to change (a server
 * without TLS, a client certificate needed or refused) + GIO's words, and
 * return TRUE; else FALSE (*error unchanged). */
gboolean gst_nn_remote_tls_error_explain (GError **error, const gchar *host,
    guint16 port);

/* Whether a HELLO's token is the expected one (no token expected: any).
 * Compares in constant time for tokens of the expected length. */
gboolean gst_nn_remote_token_ok (const gchar *expected, const gchar *got);

/* Wrap the tensors of a parsed FRAME/RESULT as a buffer (one memory per
 * tensor, no copy): takes payload (g_aligned_free'd with the last memory). */
GstBuffer *gst_nn_remote_frame_to_buffer (const NnpRemoteFrame *frame,
    guint8 *payload, gsize payload_size);
/* Longest caps string a frame may carry. */
#define GST_NN_REMOTE_MAX_CAPS 8192

/* Check a parsed frame's caps string (one fixed other/tensors structure in
 * system memory, a framerate >= 0/1 if any) against its tensors; the
 * canonical caps rebuilt from the parsed tensors (new ref: format=static,
 * num_tensors, types, dimensions, framerate; nothing else) or NULL + error
 * naming what is wrong. */
GstCaps *gst_nn_remote_frame_caps (const NnpRemoteFrame *frame, GError **error);
/* Describe the tensors of buffer (with fixed other/tensors caps) for
 * nnp_remote_send_frame(): maps each memory into maps[] (unmap with
 * gst_nn_remote_tensors_unmap).  FALSE + error when the sizes do not fit. */
gboolean gst_nn_remote_tensors_map (GstBuffer *buffer, GstCaps *caps,
    NnpRemoteTensor *tensors, gint *n_tensors, GstMapInfo *maps, gint *n_maps,
    GError **error);
void gst_nn_remote_tensors_unmap (GstBuffer *buffer, GstMapInfo *maps,
    gint n_maps);

G_END_DECLS
