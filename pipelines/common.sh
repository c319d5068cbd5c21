# Sourced by the pipelines/*.sh scripts (and benchmarks/pipeline.sh): where
# the build tree, the plugin and the models are, and the checks every
# script makes before its gst-launch line.  Set `me` (the script's name,
# for messages) before sourcing, and call `nnp_help "$@"` right after.
#
# Environment: NNP_BUILD_DIR (build tree holding plugins/, default build),
# NNP_MODELS_DIR (default .cache/models, filled by tools/fetch-models.sh).

root=$(cd "$(dirname "$0")/.." && pwd)
build=${NNP_BUILD_DIR:-$root/build}
models=${NNP_MODELS_DIR:-$root/.cache/models}

# nnp_help "$@": with -h or --help as the first argument, print the
# script's header comment (its usage) on stdout and exit 0
nnp_help () {
  case ${1:-} in
    -h|--help)
      sed -n -e '1{/^#!/d;}' -e '/^#/!q' -e 's/^# \{0,1\}//p' "$0"
      exit 0 ;;
  esac
}

# nnp_need_models FILE...: exit 2 unless every file is in $models
nnp_need_models () {
  for f in "$@"; do
    if [ ! -f "$models/$f" ]; then
      echo "$me: $models/$f is missing: run tools/fetch-models.sh" >&2
      exit 2
    fi
  done
}

# nnp_use_plugin: put the build's nnpipe plugin on GST_PLUGIN_PATH (exit 2
# when there is no plugin build)
nnp_use_plugin () {
  if [ ! -d "$build/plugins" ]; then
    echo "$me: no plugin build in $build (set NNP_BUILD_DIR)" >&2
    exit 2
  fi
  export GST_PLUGIN_PATH="$build/plugins${GST_PLUGIN_PATH:+:$GST_PLUGIN_PATH}"
}

# nnp_median: the median of the numbers on stdin, one per line (benchmarks)
nnp_median () {
  sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

# nnp_markup TEXT: TEXT escaped for textoverlay, which reads Pango markup
nnp_markup () {
  printf '%s' "$1" | sed -e 's/&/\&amp;/g' -e 's/</\&lt;/g' -e 's/>/\&gt;/g'
}

# nnp_png_sink OUTPUT.png FRAMES: sets sink and location; one frame writes
# OUTPUT.png, more OUTPUT-00000.png, OUTPUT-00001.png, ...
nnp_png_sink () {
  if [ "$2" -gt 1 ]; then
    sink=multifilesink
    location=${1%.png}-%05d.png
  else
    sink=filesink
    location=$1
  fi
}
