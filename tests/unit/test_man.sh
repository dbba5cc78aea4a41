#!/bin/sh
# The manual pages (docs/man, made by docs/man/make_pages.py): every public
# function of poprt.h is on a function-group page, every option of the
# tool's usage is in poprt(1), and each page renders without a warning.
# Usage: test_man.sh SOURCE_DIR POPRT_EXE
set -u
SRC=$1
POPRT=$2
MAN_DIR="$SRC/docs/man"
fail=0
for f in $(grep -o '^POPRT_API [^(]*(' "$SRC/include/poprt/poprt.h" | grep -o 'poprt_[a-z0-9_]*($' | tr -d '('); do
    grep -q "^\\\\fB.*\\b$f(" "$MAN_DIR"/poprt_*.3 || { echo "FAIL: $f is on no page of docs/man (run docs/man/make_pages.py)"; fail=1; }
done
for o in $("$POPRT" --help | sed '/^$/q' | grep -o -- '--[a-z0-9_]*' | sort -u); do
    grep -q -- "$(echo "$o" | sed 's/-/\\\\-/g')" "$MAN_DIR/poprt.1" || { echo "FAIL: $o is not in poprt(1) (run docs/man/make_pages.py)"; fail=1; }
done
for p in "$MAN_DIR"/*.1 "$MAN_DIR"/*.3; do
    grep -q "'$(basename "$p")'" "$MAN_DIR/meson.build" || { echo "FAIL: $(basename "$p") is not installed by docs/man/meson.build"; fail=1; }
done
if command -v man >/dev/null 2>&1; then
    for p in "$MAN_DIR"/*.1 "$MAN_DIR"/*.3; do
        w=$(MANWIDTH=80 man --warnings -l "$p" 2>&1 >/dev/null)
        [ -z "$w" ] || { echo "FAIL: $p renders with warnings:"; echo "$w" | head -5; fail=1; }
    done
    echo "rendered $(ls "$MAN_DIR"/*.[13] | wc -l) pages with man --warnings"
else
    echo "SKIP part: man is not installed (Debian: man-db), pages not rendered"
fi
[ "$fail" -eq 0 ] && echo "PASS"
exit "$fail"
