#!/bin/sh
# compile_kernels.sh SRC.cu OUT.so [EXTRA g++ FLAGS...]
#
# Compiles an emitted CUDA translation unit (snugc compile --dump-cuda DIR
# writes DIR/<model>.cu) as host C++ for the simulator (snug-cudasim):
#   g++ -x c++ -std=c++17 -O1 -fPIC -shared -DSNUG_CUDA_SIM
#       -include tests/cudasim/CudaSim.h SRC.cu -o OUT.so
# CudaSim.h provides the CUDA built-ins and the block scheduler
# (snug_cudasim_launch); every kernel's SYM_sim thunk is exported.
#
# Without extra flags the header is used precompiled (2-3x faster for small
# models): the .gch is cached per header contents and compiler under
# $SNUG_CUDASIM_PCH_DIR (default ${TMPDIR:-/tmp}/snug-cudasim-pch-$UID);
# SNUG_CUDASIM_PCH=0 turns that off.
#   CXX                    the compiler (default g++)
#   SNUG_CUDASIM_CXXFLAGS  extra flags, like the arguments after OUT.so (e.g.
#                          "-g -O0" to debug a kernel in gdb,
#                          "-fsanitize=address,undefined" to check it)
set -eu
if [ $# -lt 2 ]; then
  echo "usage: compile_kernels.sh SRC.cu OUT.so [g++ flags...]" >&2
  exit 2
fi
src=$1
out=$2
shift 2
here=$(cd "$(dirname "$0")" && pwd)
cxx=${CXX:-g++}
extra="${SNUG_CUDASIM_CXXFLAGS:-} $*"
flags="-std=c++17 -O1 -fPIC -DSNUG_CUDA_SIM"
header="$here/CudaSim.h"

# The precompiled header: DIR/KEY/CudaSim.h{,.gch}, KEY from the header's
# and the compiler's identity; built in a private directory and renamed into
# place, so concurrent builds never see half a file.
if [ "${SNUG_CUDASIM_PCH:-1}" != 0 ] && [ -z "$(echo "$extra" | tr -d ' ')" ]; then
  cache=${SNUG_CUDASIM_PCH_DIR:-${TMPDIR:-/tmp}/snug-cudasim-pch-$(id -u)}
  key=$( { cat "$header"; "$cxx" --version 2>&1; echo "$flags"; } | cksum | tr ' ' '-')
  if [ ! -f "$cache/$key/CudaSim.h.gch" ] && mkdir -p "$cache" 2>/dev/null; then
    tmp=$(mktemp -d "$cache/tmp.XXXXXX" 2>/dev/null) || tmp=
    if [ -n "$tmp" ]; then
      cp "$header" "$tmp/CudaSim.h"
      # shellcheck disable=SC2086
      if "$cxx" -x c++-header $flags "$tmp/CudaSim.h" -o "$tmp/CudaSim.h.gch" \
          2>/dev/null && mv -T "$tmp" "$cache/$key" 2>/dev/null; then
        # Headers of other versions, unused for a day, go.
        find "$cache" -mindepth 1 -maxdepth 1 -mtime +0 ! -name "$key" \
          -exec rm -rf {} + 2>/dev/null || :
      else
        rm -rf "$tmp"
      fi
    fi
  fi
  if [ -f "$cache/$key/CudaSim.h.gch" ]; then
    header="$cache/$key/CudaSim.h"
  fi
fi

# shellcheck disable=SC2086
exec "$cxx" -x c++ $flags -shared -include "$header" $extra -o "$out" "$src"
