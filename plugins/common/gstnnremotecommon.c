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

GTlsDatabase *
gst_nn_remote_tls_database (const gchar *ca_file, GError **error)
{
  /* GIO wants the anchor file's absolute path */
  gchar *abs = g_canonicalize_filename (ca_file, NULL);
  GTlsDatabase *db = NULL;

  if (!g_file_test (abs, G_FILE_TEST_IS_REGULAR))
    g_set_error (error, G_IO_ERROR, G_IO_ERROR_NOT_FOUND,
        "CA file '%s' does not exist", ca_file);
  else
    db = g_tls_file_database_new (abs, error);
  g_free (abs);
  return db;
}

gchar *
gst_nn_remote_tls_flags_text (GTlsCertificateFlags flags)
{
  static const struct
  {
    GTlsCertificateFlags flag;
    const gchar *text;
  } names[] = {
    { G_TLS_CERTIFICATE_UNKNOWN_CA,
        "it is not signed by a CA this side trusts" },
    { G_TLS_CERTIFICATE_BAD_IDENTITY,
        "it is not for the host name or IP connected to" },
    { G_TLS_CERTIFICATE_NOT_ACTIVATED, "it is not valid yet" },
    { G_TLS_CERTIFICATE_EXPIRED, "it has expired" },
    { G_TLS_CERTIFICATE_REVOKED, "it has been revoked" },
    { G_TLS_CERTIFICATE_INSECURE, "its algorithm is insecure" },
    { G_TLS_CERTIFICATE_GENERIC_ERROR, "it is invalid" },
  };
  GString *s = g_string_new (NULL);

  for (guint i = 0; i < G_N_ELEMENTS (names); i++)
    if (flags & names[i].flag)
      g_string_append_printf (s, "%s%s", s->len ? ", " : "", names[i].text);
  return g_string_free (s, FALSE);
}

gboolean
gst_nn_remote_tls_on_accept_certificate (GTlsConnection *conn,
    GTlsCertificate *peer_cert, GTlsCertificateFlags errors, gpointer data)
{
  *(GTlsCertificateFlags *) data = errors;
  /* a server connection asks even when the chain checked out */
  return errors == 0;
}

GIOStream *
gst_nn_remote_tls_client (GIOStream *base, const gchar *host, guint16 port,
    const gchar *ca_file, const gchar *cert_file, const gchar *key_file,
    GCancellable *cancellable, GError **error)
{
  GSocketConnectable *id = g_network_address_new (host, port);
  GIOStream *tls = g_tls_client_connection_new (base, id, error);
  GTlsCertificateFlags bad = 0;
  GError *err = NULL;

  g_object_unref (id);
  if (tls == NULL) {
    g_prefix_error (error, "TLS: ");
    return NULL;
  }
  if (ca_file && ca_file[0]) {
    GTlsDatabase *db = gst_nn_remote_tls_database (ca_file, error);

    if (db == NULL) {
      g_prefix_error (error, "TLS: ");
      g_object_unref (tls);
      return NULL;
    }
    g_tls_connection_set_database (G_TLS_CONNECTION (tls), db);
    g_object_unref (db);
  }
  if (cert_file && cert_file[0]) {
    GTlsCertificate *cert =
        gst_nn_remote_tls_certificate_load (cert_file, key_file, error);

    if (cert == NULL) {
      g_prefix_error (error, "TLS: ");
      g_object_unref (tls);
      return NULL;
    }
    g_tls_connection_set_certificate (G_TLS_CONNECTION (tls), cert);
    g_object_unref (cert);
  }
  g_signal_connect (tls, "accept-certificate",
      G_CALLBACK (gst_nn_remote_tls_on_accept_certificate), &bad);
  if (g_tls_connection_handshake (G_TLS_CONNECTION (tls), cancellable, &err)) {
    g_signal_handlers_disconnect_by_func (tls,
        gst_nn_remote_tls_on_accept_certificate, &bad);
    return tls;
  }
  g_signal_handlers_disconnect_by_func (tls,
      gst_nn_remote_tls_on_accept_certificate, &bad);
  g_object_unref (tls);
  /* the reason a person can act on first, GIO's words after */
  if (bad) {
    gchar *why = gst_nn_remote_tls_flags_text (bad);

    g_set_error (error, G_TLS_ERROR, G_TLS_ERROR_BAD_CERTIFICATE,
        "TLS: the server %s:%u's certificate is refused: %s (tls-ca-file) (%s)",
        host, port, why, err->message);
    g_free (why);
    g_error_free (err);
  } else {
    gst_nn_remote_tls_error_explain (&err, host, port);
    g_propagate_error (error, err);
  }
  return NULL;
}

gboolean
gst_nn_remote_tls_error_explain (GError **error, const gchar *host,
    guint16 port)
{
  GError *err = *error;
  gchar *text;

  if (err == NULL || err->domain != G_TLS_ERROR)
    return FALSE;
  if (err->code == G_TLS_ERROR_NOT_TLS)
    text = g_strdup_printf (
        "TLS: the server %s:%u does not talk TLS (set tls=false, or start it with a certificate) (%s)",
        host, port, err->message);
  else if (err->code == G_TLS_ERROR_CERTIFICATE_REQUIRED)
    text = g_strdup_printf (
        "TLS: the server %s:%u wants a client certificate its CA signed (set tls-certificate and tls-key) (%s)",
        host, port, err->message);
  else if (err->code == G_TLS_ERROR_EOF)
    text = g_strdup_printf (
        "TLS: the server %s:%u closed the connection after the handshake (did it refuse this client's certificate? tls-certificate) (%s)",
        host, port, err->message);
  else if (err->code == G_TLS_ERROR_BAD_CERTIFICATE)
    text = g_strdup_printf (
        "TLS: the server %s:%u refused this client's certificate (not signed by the CA it trusts?) (%s)",
        host, port, err->message);
  else
    text = g_strdup_printf ("TLS: %s", err->message);
  g_free (err->message);
  err->message = text;
  return TRUE;
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

/* ------------------------------------------------------------ frame caps */

/* The caps text of a FRAME or RESULT comes from the peer: it is read here
 * rather than by gst_caps_from_string(), which makes every field name it
 * meets a GQuark for the life of the process (a peer could grow the
 * server's memory with made-up names) and leaks on some malformed text
 * (an unterminated list, GStreamer 1.22).  Only what tensor caps are made
 * of is read: "other/tensors" or "other/tensor", an optional
 * "(memory:SystemMemory)", and fields NAME=[(TYPE)]VALUE; the fields of
 * tensor caps are kept, others skipped (their names are never interned). */

typedef struct
{
  const gchar *p, *end;
  GError **error;
  const gchar *text; /* for messages */
} CapsReader;

static gboolean
caps_fail (CapsReader *r, const gchar *why)
{
  g_set_error (r->error, NNP_ERROR, NNP_ERROR_PARSE, "frame caps '%.200s': %s",
      r->text, why);
  return FALSE;
}

static void
caps_skip_space (CapsReader *r)
{
  while (r->p < r->end && g_ascii_isspace (*r->p))
    r->p++;
}

/* A name (structure, field, type): letters, digits and -_/:. */
static gchar *
caps_name (CapsReader *r)
{
  const gchar *start = r->p;

  while (r->p < r->end
      && (g_ascii_isalnum (*r->p) || strchr ("-_/:.+", *r->p) != NULL))
    r->p++;
  return r->p > start ? g_strndup (start, r->p - start) : NULL;
}

/* A value: "quoted" (with \ escapes) or bare up to , or ; (with \
 * escapes).  NULL for a list, range or array, or a bad quote. */
static gchar *
caps_value (CapsReader *r)
{
  GString *v = g_string_new (NULL);
  gboolean quoted = r->p < r->end && *r->p == '"';

  if (r->p < r->end && strchr ("{[<", *r->p)) {
    g_string_free (v, TRUE);
    caps_fail (r, "not fixed caps (a list, range or array)");
    return NULL;
  }
  if (quoted)
    r->p++;
  while (r->p < r->end) {
    gchar c = *r->p;

    if (quoted && c == '"')
      break;
    if (!quoted && (c == ',' || c == ';' || g_ascii_isspace (c)))
      break;
    if (c == '\\' && r->p + 1 < r->end)
      c = *++r->p;
    g_string_append_c (v, c);
    r->p++;
  }
  if (quoted) {
    if (r->p >= r->end) {
      g_string_free (v, TRUE);
      caps_fail (r, "a quoted value does not end");
      return NULL;
    }
    r->p++;
  }
  return g_string_free (v, FALSE);
}

static gboolean
caps_int (const gchar *v, gint *out)
{
  gchar *end = NULL;
  gint64 n = g_ascii_strtoll (v, &end, 10);

  if (end == v || *end != '\0' || n < G_MININT || n > G_MAXINT)
    return FALSE;
  *out = (gint) n;
  return TRUE;
}

/* The tensor infos a caps text describes. */
static gboolean
caps_read (const gchar *text, GstNnTensorsInfo *info, GError **error)
{
  CapsReader r = { text, text + strlen (text), error, text };
  GstStructure *st;
  gchar *name;
  gboolean ok = TRUE;

  caps_skip_space (&r);
  name = caps_name (&r);
  if (name == NULL
      || (strcmp (name, GST_NN_TENSORS_MEDIA_TYPE) != 0
          && strcmp (name, GST_NN_TENSOR_MEDIA_TYPE) != 0)) {
    gchar *msg = g_strdup_printf ("caps are %.64s, not other/tensors",
        name ? name : "(nothing)");

    caps_fail (&r, msg);
    g_free (msg);
    g_free (name);
    return FALSE;
  }
  st = gst_structure_new_empty (name);
  g_free (name);
  if (r.p < r.end && *r.p == '(') {
    const gchar *close = memchr (r.p, ')', r.end - r.p);
    gchar *feature = close ? g_strndup (r.p + 1, close - r.p - 1) : NULL;

    if (feature == NULL || strcmp (feature, "memory:SystemMemory") != 0) {
      gchar *msg = g_strdup_printf (
          "caps feature (%.64s): tensors travel in system memory",
          feature ? feature : "unterminated");

      ok = caps_fail (&r, msg);
      g_free (msg);
    }
    g_free (feature);
    r.p = close ? close + 1 : r.end;
  }
  while (ok) {
    gchar *field, *type = NULL, *value;

    caps_skip_space (&r);
    if (r.p >= r.end || *r.p == ';')
      break;
    if (*r.p != ',') {
      ok = caps_fail (&r, "a ',' was expected between fields");
      break;
    }
    r.p++;
    caps_skip_space (&r);
    field = caps_name (&r);
    caps_skip_space (&r);
    if (field == NULL || r.p >= r.end || *r.p != '=') {
      g_free (field);
      ok = caps_fail (&r, "a field is not NAME=VALUE");
      break;
    }
    r.p++;
    caps_skip_space (&r);
    if (r.p < r.end && *r.p == '(') {
      r.p++;
      type = caps_name (&r);
      if (type == NULL || r.p >= r.end || *r.p != ')') {
        g_free (field);
        g_free (type);
        ok = caps_fail (&r, "a field's type is not (TYPE)");
        break;
      }
      r.p++;
    }
    value = caps_value (&r);
    if (value == NULL) {
      g_free (field);
      g_free (type);
      ok = FALSE;
      break;
    }
    /* the fields of tensor caps, each of its one type */
    if (strcmp (field, "framerate") == 0) {
      gchar *slash = strchr (value, '/');
      gint n = -1, d = 0;

      if (slash)
        *slash = '\0';
      if ((type && strcmp (type, "fraction") != 0) || slash == NULL
          || !caps_int (value, &n) || !caps_int (slash + 1, &d) || n < 0
          || d <= 0)
        ok = caps_fail (&r, "framerate is not a fraction >= 0/1");
      else
        gst_structure_set (st, "framerate", GST_TYPE_FRACTION, n, d, NULL);
    } else if (strcmp (field, "num_tensors") == 0) {
      gint n;

      if ((type && strcmp (type, "int") != 0 && strcmp (type, "i") != 0)
          || !caps_int (value, &n))
        ok = caps_fail (&r, "num_tensors is not an integer");
      else
        gst_structure_set (st, "num_tensors", G_TYPE_INT, n, NULL);
    } else if (strcmp (field, "format") == 0 || strcmp (field, "types") == 0
        || strcmp (field, "dimensions") == 0 || strcmp (field, "type") == 0
        || strcmp (field, "dimension") == 0) {
      if (type && strcmp (type, "string") != 0 && strcmp (type, "s") != 0) {
        gchar *msg = g_strdup_printf ("%s is not a string", field);

        ok = caps_fail (&r, msg);
        g_free (msg);
      } else {
        /* the field name is one of ours: an interned constant */
        gst_structure_set (st, field, G_TYPE_STRING, value, NULL);
      }
    }
    g_free (field);
    g_free (type);
    g_free (value);
  }
  if (ok && r.p < r.end && *r.p == ';') {
    r.p++;
    caps_skip_space (&r);
    if (r.p < r.end)
      ok = caps_fail (&r, "not fixed caps (more than one structure)");
  }
  if (ok)
    ok = gst_nn_tensors_info_from_structure (info, st, error);
  gst_structure_free (st);
  return ok;
}

GstCaps *
gst_nn_remote_frame_caps (const NnpRemoteFrame *frame, GError **error)
{
  GstNnTensorsInfo info;

  if (strlen (frame->caps) > GST_NN_REMOTE_MAX_CAPS) {
    g_set_error (error, NNP_ERROR, NNP_ERROR_PARSE,
        "frame caps of %" G_GSIZE_FORMAT " bytes (at most %d)",
        strlen (frame->caps), GST_NN_REMOTE_MAX_CAPS);
    return NULL;
  }
  if (!caps_read (frame->caps, &info, error))
    return NULL;
  if ((gint) info.n_tensors != frame->n_tensors)
    goto mismatch;
  for (gint i = 0; i < frame->n_tensors; i++) {
    if (info.tensors[i].dtype != frame->tensors[i].dtype
        || !gst_nn_shape_is_compatible (&info.tensors[i].shape,
            &frame->tensors[i].shape))
      goto mismatch;
  }
  /* what goes on is rebuilt from the parsed tensors: no field, feature or
   * form the stage was not made for */
  return gst_nn_tensors_info_to_caps (&info);

mismatch:
  g_set_error (error, NNP_ERROR, NNP_ERROR_PARSE,
      "frame caps '%.200s' do not describe its %d tensors", frame->caps,
      frame->n_tensors);
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
