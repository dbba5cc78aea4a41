#!/bin/sh
# ABI test: libpoprt.so's ABI (functions, their types, the public structs and
# enums of include/poprt) must equal the checked-in baseline
# tests/abi/libpoprt.abi, as libabigail's abidiff sees it. A change fails the
# test; when it is intended and compatible (a new function, a new enum value
# at the end), refresh the baseline with tests/abi/update_baseline.sh and say
# so in the commit. Incompatible changes need a new SONAME (docs/abi.md).
# Skipped (exit 77) when abidiff is not installed (Debian: abigail-tools).
#   check_abi.sh LIBPOPRT_SO INCLUDE_DIR BASELINE
set -u
lib=$1
headers=$2
baseline=$3
if ! command -v abidiff >/dev/null 2>&1; then
    echo "SKIP: abidiff not installed (Debian package abigail-tools)"
    exit 77
fi
out=$(abidiff --headers-dir1 "$headers" --headers-dir2 "$headers" --no-added-syms \
    "$baseline" "$lib" 2>&1)
rc=$?
echo "$out"
# abidiff's status bits: 1 error, 2 usage error, 4 ABI change, 8 incompatible change
if [ "$rc" -eq 0 ]; then
    echo "PASS: the ABI equals tests/abi/libpoprt.abi"
    exit 0
fi
if [ $((rc & 3)) -ne 0 ]; then
    echo "FAIL: abidiff could not compare (status $rc)"
elif [ $((rc & 8)) -ne 0 ]; then
    echo "FAIL: incompatible ABI change against the baseline (see above)"
else
    echo "FAIL: the ABI changed compatibly; if intended, run tests/abi/update_baseline.sh"
fi
exit 1
