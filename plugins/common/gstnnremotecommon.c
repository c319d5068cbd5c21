/* GStreamer nnpipe plugin: what nnremote and the server elements share
 * (see gstnnremotecommon.h, docs/remote.md). */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "gstnnremotecommon.h"
#include "gstnntensorcaps.h"

#include <nnpipe/nnpipe.h>
#include <string.h>

/* ------------------------------------------------------------ hosts */

gchar **
gst_nn_remote_hosts_parse (const gchar *list, GError **error)
{
  const gchar *text = list ? list : "";
  gchar **addrs;
  guint n;

  if (nnp_device_spec_remote_address (text))
    text = nnp_device_spec_remote_address (text);
  addrs = g_strsplit (text, "|", 64);
  n = g_strv_length (addrs);
  for (guint i = 0; i < n; i++) {
    gchar *host = NULL;
    const gchar *addr;
    guint16 port;

    g_strstrip (addrs[i]);
    addr = nnp_device_spec_remote_address (addrs[i]);
    if (addr)
      memmove (addrs[i], addr, strlen (addr) + 1);
    if (!nnp_remote_address_parse (addrs[i], &host, &port, error)) {
      g_strfreev (addrs);
      return NULL;
    }
    g_free (host);
  }
  if (n == 0) {
    g_set_error (error, NNP_ERROR, NNP_ERROR_INVALID, "no host in '%s'",
        list ? list : "");
    g_strfreev (addrs);
    return NULL;
  }
  return addrs;
}

/* ------------------------------------------------------------ TLS, token */

GTlsCertificate *
gst_nn_remote_tls_certificate_load (const gchar *cert_file,
    const gchar *key_file, GError **error)
{
  GTlsCertificate *cert = key_file && key_file[0]
      ? g_tls_certificate_new_from_files (cert_file, key_file, error)
      : g_tls_certificate_new_from_file (cert_file, error);

  if (cert == NULL)
    g_prefix_error (error, "TLS certificate '%s': ", cert_file);
  return cert;
}

GIOStream *
gst_nn_remote_tls_client (GIOStream *base, const gchar *host, guint16 port,
    const gchar *ca_file, GCancellable *cancellable, GError **error)
{
  GSocketConnectable *id = g_network_address_new (host, port);
  GIOStream *tls = g_tls_client_connection_new (base, id, error);

  g_object_unref (id);
  if (tls && ca_file && ca_file[0]) {
    GTlsDatabase *db = g_tls_file_database_new (ca_file, error);

    if (db == NULL) {
      g_clear_object (&tls);
    } else {
      g_tls_connection_set_database (G_TLS_CONNECTION (tls), db);
      g_object_unref (db);
    }
  }
  if (tls == NULL
      || !g_tls_connection_handshake (G_TLS_CONNECTION (tls), cancellable,
          error)) {
    g_prefix_error (error, "TLS: ");
    g_clear_object (&tls);
  }
  return tls;
}

gboolean
gst_nn_remote_token_ok (const gchar *expected, const gchar *got)
{
  gsize n, m;
  guint diff;

  if (expected == NULL || expected[0] == '\0')
    return TRUE;
  got = got ? got : "";
  n = strlen (expected);
  m = strlen (got);
  /* every byte of the expected token is looked at, whatever matches */
  diff = n != m;
  for (gsize i = 0; i < n; i++)
    diff |= (guint) (expected[i] ^ (i < m ? got[i] : 0));
  return diff == 0;
}

/* ------------------------------------------------------------ frames <-> buffers */

GstBuffer *
gst_nn_remote_frame_to_buffer (const NnpRemoteFrame *frame, guint8 *payload,
    gsize payload_size)
{
  /* the payload lives as long as any of the memories wrapping it */
  GBytes *holder = g_bytes_new_with_free_func (payload, payload_size,
      (GDestroyNotify) g_aligned_free, payload);
  GstBuffer *buf = gst_buffer_new ();

  for (gint i = 0; i < frame->n_tensors; i++) {
    const NnpRemoteTensor *t = &frame->tensors[i];

    gst_buffer_append_memory (buf,
        gst_memory_new_wrapped (GST_MEMORY_FLAG_READONLY, payload, payload_size,
            t->offset, t->nbytes, g_bytes_ref (holder),
            (GDestroyNotify) g_bytes_unref));
  }
  g_bytes_unref (holder);
  return buf;
}

GstCaps *
gst_nn_remote_frame_caps (const NnpRemoteFrame *frame, GError **error)
{
  GstNnTensorsInfo info;
  GstCaps *caps = gst_caps_from_string (frame->caps);

  if (caps == NULL || !gst_caps_is_fixed (caps)) {
    g_set_error (error, NNP_ERROR, NNP_ERROR_PARSE,
        "frame caps '%.200s' are not fixed caps", frame->caps);
    gst_clear_caps (&caps);
    return NULL;
  }
  if (!gst_nn_tensors_info_from_caps (&info, caps, error)) {
    gst_caps_unref (caps);
    return NULL;
  }
  if ((gint) info.n_tensors != frame->n_tensors)
    goto mismatch;
  for (gint i = 0; i < frame->n_tensors; i++) {
    if (info.tensors[i].dtype != frame->tensors[i].dtype
        || !gst_nn_shape_is_compatible (&info.tensors[i].shape,
            &frame->tensors[i].shape))
      goto mismatch;
  }
  return caps;

mismatch:
  g_set_error (error, NNP_ERROR, NNP_ERROR_PARSE,
      "frame caps '%.200s' do not describe its %d tensors", frame->caps,
      frame->n_tensors);
  gst_caps_unref (caps);
  return NULL;
}

gboolean
gst_nn_remote_tensors_map (GstBuffer *buffer, GstCaps *caps,
    NnpRemoteTensor *tensors, gint *n_tensors, GstMapInfo *maps, gint *n_maps,
    GError **error)
{
  GstNnTensorsInfo info;
  guint n_mem = gst_buffer_n_memory (buffer);
  gboolean per_memory;
  gsize total, at = 0;

  if (!gst_nn_tensors_info_from_caps (&info, caps, error))
    return FALSE;
  total = gst_nn_tensors_info_get_size (&info);
  per_memory = n_mem == info.n_tensors;
  for (guint i = 0; per_memory && i < n_mem; i++)
    per_memory = gst_buffer_peek_memory (buffer, i)->size
        == gst_nn_tensor_info_get_size (&info.tensors[i]);
  if (!per_memory && gst_buffer_get_size (buffer) != total) {
    g_set_error (error, NNP_ERROR, NNP_ERROR_INVALID,
        "buffer of %" G_GSIZE_FORMAT " bytes for tensors of %" G_GSIZE_FORMAT
        " bytes",
        gst_buffer_get_size (buffer), total);
    return FALSE;
  }
  if (!per_memory) {
    if (!gst_buffer_map (buffer, &maps[0], GST_MAP_READ))
      goto map_failed;
    *n_maps = -1;
  } else {
    for (guint i = 0; i < n_mem; i++) {
      if (!gst_memory_map (gst_buffer_peek_memory (buffer, i), &maps[i],
              GST_MAP_READ)) {
        gst_nn_remote_tensors_unmap (buffer, maps, (gint) i);
        goto map_failed;
      }
    }
    *n_maps = (gint) n_mem;
  }
  for (guint i = 0; i < info.n_tensors; i++) {
    NnpRemoteTensor *t = &tensors[i];

    t->dtype = info.tensors[i].dtype;
    t->shape = info.tensors[i].shape;
    t->nbytes = gst_nn_tensor_info_get_size (&info.tensors[i]);
    t->data = per_memory ? maps[i].data : maps[0].data + at;
    at += t->nbytes;
  }
  *n_tensors = (gint) info.n_tensors;
  return TRUE;

map_failed:
  g_set_error (error, NNP_ERROR, NNP_ERROR_IO, "cannot map the buffer");
  return FALSE;
}

void
gst_nn_remote_tensors_unmap (GstBuffer *buffer, GstMapInfo *maps, gint n_maps)
{
  if (n_maps < 0) {
    gst_buffer_unmap (buffer, &maps[0]);
    return;
  }
  for (gint i = 0; i < n_maps; i++)
    gst_memory_unmap (maps[i].memory, &maps[i]);
}
