#!/bin/sh
# meson test --wrapper of the TSan job: run the test with GLib's locks on
# pthreads (libnnp-tsan-glib-locks.so next to this build's tests/tsan/),
# unless the test sets NNP_TSAN_NO_PRELOAD (the interposer's negative control).
#   tests/tsan/preload.sh LIB TEST [ARGS...]
lib=$1
shift
if [ -z "${NNP_TSAN_NO_PRELOAD:-}" ]; then
  LD_PRELOAD=$lib
  export LD_PRELOAD
fi
exec "$@"
