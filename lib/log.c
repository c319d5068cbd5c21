/* libnnpipe: logging through named categories (see include/nnpipe/log.h). */
#include <nnpipe/log.h>

#include <stdarg.h>

static NnpLogHandler log_handler;
static gpointer log_handler_data;
static gint log_threshold = -1; /* -1: not decided yet (see default_threshold) */

static NnpLogLevel
default_threshold (void)
{
  return g_getenv ("G_MESSAGES_DEBUG") ? NNP_LOG_TRACE : NNP_LOG_WARNING;
}

void
nnp_log_set_threshold (NnpLogLevel level)
{
  g_atomic_int_set (&log_threshold, (gint) level);
}

NnpLogLevel
nnp_log_get_threshold (void)
{
  gint t = g_atomic_int_get (&log_threshold);

  if (t < 0) {
    t = (gint) default_threshold ();
    g_atomic_int_set (&log_threshold, t);
  }
  return (NnpLogLevel) t;
}

void
nnp_log_set_handler (NnpLogHandler handler, gpointer user_data)
{
  log_handler = handler;
  log_handler_data = user_data;
}

static GLogLevelFlags
to_glib_level (NnpLogLevel level)
{
  switch (level) {
    case NNP_LOG_ERROR: return G_LOG_LEVEL_CRITICAL; /* G_LOG_LEVEL_ERROR would abort */
    case NNP_LOG_WARNING: return G_LOG_LEVEL_WARNING;
    case NNP_LOG_INFO: return G_LOG_LEVEL_INFO;
    default: return G_LOG_LEVEL_DEBUG;
  }
}

void
nnp_log_full (const char *category, NnpLogLevel level, const char *file, int line, const char *func,
              const char *format, ...)
{
  va_list args;
  char *message;

  if ((gint) level > (gint) nnp_log_get_threshold ())
    return;
  va_start (args, format);
  message = g_strdup_vprintf (format, args);
  va_end (args);

  if (log_handler)
    log_handler (category, level, file, line, func, message, log_handler_data);
  else
    g_log (category, to_glib_level (level), "%s", message);
  g_free (message);
}
