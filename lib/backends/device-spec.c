/* libnnpipe: device specs, parsed once (include/nnpipe/device.h).
 *
 * Every question asked of a device string is answered here and nowhere
 * else: its syntax ("cpu", "cpu:THREADS", "opencl:1", "remote://H:P|H:P",
 * a device list "cpu:1,opencl*2"), whether it is the host ("is this the
 * CPU?": the backend table's `host`, not a name), the address of a remote
 * stage, and whether this machine can open it.  Nothing here names a
 * particular backend: the backends' names and spellings come from the
 * registry (lib/backends/registry.c). */
#include <nnpipe/device.h>
#include <nnpipe/log.h>

#include "backend.h"
#include "backends/device-spec.h"

#include <string.h>

#define MAX_SPEC_THREADS 1024
#define MAX_REPLICAS 64
#define MAX_REMOTE_HOSTS 64

/* the scheme of a stage on an nnpipe server (docs/remote.md) */
#define REMOTE_SCHEME "remote://"
#define REMOTE_SCHEME_LEN 9

/* "cpu, cpu:THREADS (1..1024), opencl, opencl:N or opencl:NAME" */
static char *
spec_help (void)
{
  GString *s = g_string_new (NULL);

  for (int i = 0; i < nnp_backend_count (); i++) {
    const NnpBackend *b = nnp_backend_get (i);
    if (i)
      g_string_append (s, ", ");
    if (b->spec_help)
      g_string_append (s, b->spec_help);
    else
      g_string_append (s, b->name);
  }
  return g_string_free (s, FALSE);
}

static gboolean
is_remote (const char *text)
{
  while (text && g_ascii_isspace (*text))
    text++;
  return text && g_ascii_strncasecmp (text, REMOTE_SCHEME, REMOTE_SCHEME_LEN) == 0;
}

void
nnp_device_spec_info_clear (NnpDeviceSpecInfo *info)
{
  if (info == NULL)
    return;
  g_free (info->spec);
  g_free (info->arg);
  g_free (info->remote_address);
  memset (info, 0, sizeof (*info));
}

gboolean
nnp_device_spec_info_parse (const char *text, NnpDeviceSpecInfo *info, GError **error)
{
  g_autofree char *item = g_strstrip (g_strdup (text ? text : ""));
  g_autofree char *help = NULL;
  char *colon;
  const NnpBackend *backend = NULL;

  memset (info, 0, sizeof (*info));
  info->index = -1;
  if (is_remote (item)) {
    /* a stage on an nnpipe server: "remote://HOST:PORT[|HOST:PORT...]" */
    g_auto (GStrv) hosts = g_strsplit (item + REMOTE_SCHEME_LEN, "|", MAX_REMOTE_HOSTS);
    for (int i = 0; hosts[i] != NULL; i++) {
      g_autofree char *host = NULL;
      guint16 port;
      GError *err = NULL;
      if (!nnp_remote_address_parse (hosts[i], &host, &port, &err)) {
        g_set_error (error, NNP_ERROR, NNP_ERROR_INVALID, "invalid device '%s': %s", text,
                     err->message);
        g_error_free (err);
        return FALSE;
      }
    }
    memcpy (item, REMOTE_SCHEME, REMOTE_SCHEME_LEN);
    info->backend = "remote";
    info->remote_address = g_strdup (item + REMOTE_SCHEME_LEN);
    info->spec = g_steal_pointer (&item);
    return TRUE;
  }
  colon = strchr (item, ':');
  if (colon)
    *colon = '\0';
  backend = nnp_backend_find (item);
  if (backend == NULL)
    goto malformed;
  info->backend = backend->name;
  info->is_host = backend->host;
  if (colon && backend->spec_threads) {
    char *end = NULL;
    gint64 t = g_ascii_strtoll (colon + 1, &end, 10);

    if (end == colon + 1 || *end != '\0' || t < 1 || t > MAX_SPEC_THREADS)
      goto malformed;
    info->threads = (int) t;
    info->spec = g_strdup (backend->name);
  } else if (colon) {
    /* "opencl:N" / "opencl:NAME": the whole item names the device */
    char *end = NULL;
    gint64 index;

    if (colon[1] == '\0')
      goto malformed;
    info->arg = g_strdup (colon + 1);
    index = g_ascii_strtoll (info->arg, &end, 10);
    if (end != info->arg && *end == '\0' && index >= 0 && index <= G_MAXINT)
      info->index = (int) index;
    info->spec = g_strconcat (backend->name, ":", info->arg, NULL);
  } else {
    info->spec = g_strdup (backend->name);
  }
  return TRUE;

malformed:
  /* a device kind we do not know, or a known one written wrong */
  nnp_device_spec_info_clear (info);
  help = spec_help ();
  g_set_error (error, NNP_ERROR, backend ? NNP_ERROR_INVALID : NNP_ERROR_DEVICE,
               "invalid device '%s': expected %s or " REMOTE_SCHEME "HOST:PORT", text ? text : "",
               help);
  return FALSE;
}

gboolean
nnp_device_spec_parse (const char *text, char **device_out, int *threads_out, GError **error)
{
  NnpDeviceSpecInfo info;

  if (!nnp_device_spec_info_parse (text, &info, error))
    return FALSE;
  if (device_out)
    *device_out = g_steal_pointer (&info.spec);
  if (threads_out)
    *threads_out = info.threads;
  nnp_device_spec_info_clear (&info);
  return TRUE;
}

gboolean
nnp_device_spec_is_host (const char *spec)
{
  NnpDeviceSpecInfo info;
  gboolean host;

  if (spec == NULL)
    return TRUE; /* the default device */
  if (!nnp_device_spec_info_parse (spec, &info, NULL))
    return FALSE;
  host = info.is_host;
  nnp_device_spec_info_clear (&info);
  return host;
}

const char *
nnp_device_spec_remote_address (const char *spec)
{
  if (!is_remote (spec))
    return NULL;
  while (g_ascii_isspace (*spec))
    spec++;
  return spec + REMOTE_SCHEME_LEN;
}

char *
nnp_device_spec_select (const char *text, int index, const char *name, int *threads_out,
                        GError **error)
{
  g_autofree char *device = NULL;
  const NnpBackend *backend;

  if (!nnp_device_spec_parse (text, &device, threads_out, error))
    return NULL;
  if ((name == NULL || *name == '\0') && index < 0)
    return g_steal_pointer (&device);
  backend = nnp_backend_find (device);
  if (backend == NULL || backend->spec_threads || strchr (device, ':')) {
    g_set_error (
        error, NNP_ERROR, NNP_ERROR_DEVICE,
        "an index or name chooses among the devices of a backend that names them, but the device is '%s'%s",
        device, strchr (device, ':') ? ", which already names one" : "");
    return NULL;
  }
  if (name && *name)
    return g_strdup_printf ("%s:%s", backend->name, name);
  return g_strdup_printf ("%s:%d", backend->name, index);
}

gboolean
nnp_remote_address_parse (const char *text, char **host, guint16 *port, GError **error)
{
  const char *colon, *h0, *h1;
  char *end = NULL;
  guint64 p;

  *host = NULL;
  text = text ? text : "";
  while (g_ascii_isspace (*text))
    text++;
  if (text[0] == '[') {
    h0 = text + 1;
    h1 = strchr (h0, ']');
    colon = h1 ? h1 + 1 : NULL;
    if (colon && *colon != ':')
      colon = NULL;
  } else {
    h0 = text;
    colon = strrchr (text, ':');
    h1 = colon;
  }
  if (colon == NULL || h1 == h0)
    goto malformed;
  p = g_ascii_strtoull (colon + 1, &end, 10);
  while (end && g_ascii_isspace (*end))
    end++;
  if (end == colon + 1 || (end && *end) || p < 1 || p > 65535)
    goto malformed;
  *host = g_strndup (h0, h1 - h0);
  *port = (guint16) p;
  return TRUE;

malformed : {
  /* the text as C escapes: one line whatever it holds */
  g_autofree char *shown = g_strescape (text, NULL);
  g_set_error (error, NNP_ERROR, NNP_ERROR_INVALID,
               "invalid address '%.200s': expected HOST:PORT or [IPV6]:PORT, PORT 1..65535", shown);
  return FALSE;
}
}

gboolean
nnp_device_item_split_replicas (const char *item, char **device, int *replicas, GError **error)
{
  const char *star;
  char *end = NULL;
  gint64 k;

  g_return_val_if_fail (item != NULL && device != NULL && replicas != NULL, FALSE);
  star = strrchr (item, '*');
  if (star == NULL) {
    *device = g_strstrip (g_strdup (item));
    *replicas = 1;
    return TRUE;
  }
  k = g_ascii_strtoll (star + 1, &end, 10);
  while (end && g_ascii_isspace (*end))
    end++;
  if (end == star + 1 || end == NULL || *end != '\0' || k < 1 || k > MAX_REPLICAS) {
    g_set_error (error, NNP_ERROR, NNP_ERROR_PLAN,
                 "invalid replicas in '%s': expected DEVICE*K with K from 1 to %d", item,
                 MAX_REPLICAS);
    return FALSE;
  }
  *device = g_strstrip (g_strndup (item, star - item));
  *replicas = (int) k;
  return TRUE;
}
