/* libnnpipe: version and error domain. */
#include <nnpipe/nnpipe.h>

/* The error domain, "nnp-error-quark".  Not G_DEFINE_QUARK: its cached
 * value is a plain static read and written by whichever threads ask first
 * (a race by the letter, and ThreadSanitizer says so when two streaming
 * threads fail at once); here the cache is an atomic, and two first calls
 * both store the same quark. */
GQuark
nnp_error_quark (void)
{
  static gint cached;
  GQuark q = (GQuark) g_atomic_int_get (&cached);

  if (G_UNLIKELY (q == 0)) {
    q = g_quark_from_static_string ("nnp-error-quark");
    g_atomic_int_set (&cached, (gint) q);
  }
  return q;
}

const char *
nnp_version (void)
{
  return NNP_VERSION;
}
