#!/bin/sh
# Export test: the dynamic symbols libpoprt.so defines must be exactly the
# functions the public headers (poprt.h and experimental.h, given as
# HEADER[:HEADER...]) declare with POPRT_API, and
# docs/symbols-in-versions must list exactly those, each with a version no
# later than the project's.
#   test_api_exports.sh LIBPOPRT_SO HEADERS SYMBOLS_IN_VERSIONS PROJECT_VERSION
set -u
lib=$1
headers=$(echo "$2" | tr ':' ' ')
versions=$3
project=$4
tmp=$(mktemp -d "${TMPDIR:-/tmp}/poprt-exports.XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM
status=0

# Declarations start with "POPRT_API <type> name(" at the start of a line.
# shellcheck disable=SC2086 # one word per header
grep -hE '^POPRT_API ' $headers |
    sed -E 's/^POPRT_API[^(]*[^a-zA-Z0-9_(]([a-zA-Z_][a-zA-Z0-9_]*)\(.*/\1/' |
    sort -u >"$tmp/header"
if [ ! -s "$tmp/header" ]; then
    echo "FAIL: no POPRT_API declarations found in $headers"
    exit 1
fi
if grep -v '^poprt_' "$tmp/header" >"$tmp/badname"; then
    echo "FAIL: public functions without the poprt_ prefix:"
    sed 's/^/  /' "$tmp/badname"
    status=1
fi

# Defined dynamic symbols, without any version suffix.
nm -D --defined-only "$lib" >"$tmp/nm" || { echo "FAIL: nm -D $lib"; exit 1; }
awk 'NF >= 3 { sub(/@.*/, "", $3); print $3 }' "$tmp/nm" | sort -u >"$tmp/lib"

if ! diff -u "$tmp/header" "$tmp/lib" >"$tmp/diff"; then
    echo "FAIL: exports of $lib differ from the POPRT_API functions of $headers"
    echo "  (- only in the header, + only exported by the library)"
    grep -E '^[-+][a-zA-Z_]' "$tmp/diff" | sed 's/^/  /'
    status=1
fi
# Every dynamic symbol, of any type (absolute version-node symbols too),
# starts with poprt_.
if awk 'NF >= 3 && $3 !~ /^poprt_/ { print "  " $3; bad = 1 } END { exit !bad }' "$tmp/nm"; then
    echo "FAIL: dynamic symbols without the poprt_ prefix (above)"
    status=1
fi

# docs/symbols-in-versions: "name version [removed version]" lines; '#'
# comments and blank lines. Removed functions keep their line.
awk '!/^[[:space:]]*(#|$)/ && $3 != "removed" { print $1 }' "$versions" | sort >"$tmp/listed_all"
sort -u "$tmp/listed_all" >"$tmp/listed"
if ! cmp -s "$tmp/listed_all" "$tmp/listed"; then
    echo "FAIL: $versions lists a symbol twice:"
    uniq -d "$tmp/listed_all" | sed 's/^/  /'
    status=1
fi
if ! diff -u "$tmp/header" "$tmp/listed" >"$tmp/diff2"; then
    echo "FAIL: $versions differs from the POPRT_API functions of $headers"
    echo "  (- missing from $versions, + listed but not in the header)"
    grep -E '^[-+][a-zA-Z_]' "$tmp/diff2" | sed 's/^/  /'
    status=1
fi
# Versions are MAJOR.MINOR.PATCH and not later than the project's.
awk -v project="$project" '
function num(v,   p) { split(v, p, "."); return p[1] * 1000000 + p[2] * 1000 + p[3] }
!/^[[:space:]]*(#|$)/ {
    if (NF < 2 || $2 !~ /^[0-9]+\.[0-9]+\.[0-9]+$/ || (NF > 2 && ($3 != "removed" || $4 !~ /^[0-9]+\.[0-9]+\.[0-9]+$/))) { print "  bad line: " $0; bad = 1; next }
    if (num($2) > num(project)) { print "  " $1 " arrives in " $2 ", after " project; bad = 1 }
}
END { exit !bad }' "$versions" >"$tmp/vbad" && {
    echo "FAIL: $versions:"
    cat "$tmp/vbad"
    status=1
}

if [ "$status" -eq 0 ]; then
    echo "PASS: $(wc -l <"$tmp/header") public functions: header, $lib and $versions agree"
fi
exit "$status"
