#!/bin/sh
# Rewrites tests/abi/libpoprt.abi from a build (default build/) with
# libabigail's abidw. Run it when the public ABI changes on purpose.
#   tests/abi/update_baseline.sh [BUILD_DIR]
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$root/build}
lib=$(ls "$build"/lib/libpoprt.so.*.*.* | head -n 1)
abidw --headers-dir "$root/include/poprt" --no-corpus-path --drop-private-types \
    --no-show-locs "$lib" >"$root/tests/abi/libpoprt.abi"
echo "wrote tests/abi/libpoprt.abi from $lib"
