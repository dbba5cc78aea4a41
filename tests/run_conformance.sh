#!/bin/sh
# Meson wrapper for the conformance suite:
#   run_conformance.sh ONNX_CONFORMANCE_EXE [COLON:SEPARATED:DIRS]
# The folders come from POPRT_CONFORMANCE_DIRS when set, else from the
# second argument (meson option -Dconformance_dirs). Folders that do not exist
# are left out; with none left the suite is skipped (exit 77, meson's SKIP).
# The runner's own exit status is passed on: 0, or 1 when POPRT_CONFORMANCE_EXPECT
# (a minimum pass count, passed as --expect-pass) is not reached, or when the
# results disagree with tests/conformance_known_failures.txt.
set -u
runner=$1
dirs=${POPRT_CONFORMANCE_DIRS:-${2:-}}

set --
old_ifs=$IFS
IFS=:
for d in $dirs; do
    [ -n "$d" ] && [ -d "$d" ] && set -- "$@" "$d"
done
IFS=$old_ifs

if [ "$#" -eq 0 ]; then
    echo "SKIP conformance: no test folders (set -Dconformance_dirs=... or POPRT_CONFORMANCE_DIRS)"
    echo "0 passed, 0 failed, 1 skipped"
    exit 77
fi
known=$(dirname "$0")/conformance_known_failures.txt
if [ -n "${POPRT_CONFORMANCE_EXPECT:-}" ]; then
    exec "$runner" --known-failures "$known" --expect-pass "$POPRT_CONFORMANCE_EXPECT" "$@"
fi
exec "$runner" --known-failures "$known" "$@"
