/* libnnpipe: version and error domain. */
#include <nnpipe/nnpipe.h>

G_DEFINE_QUARK (nnp - error - quark, nnp_error)

const char *
nnp_version (void)
{
  return NNP_VERSION;
}
