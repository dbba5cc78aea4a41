#!/bin/sh
# Every cJSON function the library calls is either wrapped by test_alloc_fail
# (it allocates) or known not to allocate.
# Usage: alloc_fail_cjson.sh LIBRARY.a WRAPPED... -- NOT_ALLOCATING...
set -eu
lib=$1
shift
known=" "
for f in "$@"; do
    [ "$f" = "--" ] || known="$known$f "
done
status=0
for f in $(nm -u "$lib" | sed -n 's/^ *U \(cJSON_[A-Za-z0-9_]*\)$/\1/p' | sort -u); do
    case "$known" in
    *" $f "*) ;;
    *) echo "the library calls $f: add it to cjson_allocating (and a __wrap_ in test_alloc_fail.c) or to cjson_not_allocating in tests/meson.build" >&2
       status=1 ;;
    esac
done
exit $status
