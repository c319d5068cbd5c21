/* nnpipe: logging.  The library never prints; it logs through named
 * categories ("nnp-graph", "nnp-onnx", "nnp-exec", "nnp-partition", "nnp-cpu",
 * "nnp-opencl").  By default messages go to g_log() with the category as the
 * log domain (G_MESSAGES_DEBUG=nnp-graph shows them).  The GStreamer plugin
 * installs a handler that forwards each category to a GstDebugCategory of the
 * same name, so GST_DEBUG=nnp*:6 tells the whole story. */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

typedef enum {
  NNP_LOG_ERROR = 1,
  NNP_LOG_WARNING = 2,
  NNP_LOG_INFO = 4,
  NNP_LOG_DEBUG = 5,
  NNP_LOG_TRACE = 7,
} NnpLogLevel; /* numbered as GstDebugLevel */

typedef void (*NnpLogHandler) (const char *category, NnpLogLevel level, const char *file, int line,
                               const char *func, const char *message, gpointer user_data);

/* Install a handler (NULL restores the default).  Not thread-safe against
 * concurrent logging: call it once at start-up (the plugin does in plugin_init). */
void nnp_log_set_handler (NnpLogHandler handler, gpointer user_data);
/* Messages above `level` are dropped before they are formatted (so logging
 * costs nothing when nobody listens).  Default: NNP_LOG_WARNING, or
 * NNP_LOG_TRACE when G_MESSAGES_DEBUG is set.  The plugin sets it to the
 * most verbose threshold of its nnp-* GStreamer debug categories. */
void nnp_log_set_threshold (NnpLogLevel level);
NnpLogLevel nnp_log_get_threshold (void);
void nnp_log_full (const char *category, NnpLogLevel level, const char *file, int line,
                   const char *func, const char *format, ...) G_GNUC_PRINTF (6, 7);

#define NNP_LOG(cat, level, ...) \
  nnp_log_full ((cat), (level), __FILE__, __LINE__, G_STRFUNC, __VA_ARGS__)
#define NNP_ERROR_LOG(cat, ...) NNP_LOG (cat, NNP_LOG_ERROR, __VA_ARGS__)
#define NNP_WARNING(cat, ...) NNP_LOG (cat, NNP_LOG_WARNING, __VA_ARGS__)
#define NNP_INFO(cat, ...) NNP_LOG (cat, NNP_LOG_INFO, __VA_ARGS__)
#define NNP_DEBUG(cat, ...) NNP_LOG (cat, NNP_LOG_DEBUG, __VA_ARGS__)
#define NNP_TRACE(cat, ...) NNP_LOG (cat, NNP_LOG_TRACE, __VA_ARGS__)

G_END_DECLS
