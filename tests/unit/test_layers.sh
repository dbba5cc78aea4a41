#!/bin/sh
# The layers of lib/ (../shared/DESIGN.md, README.md's layout table): each
# may include the layers listed before it, never one after it. Checks every
# #include "<layer>/..." of every file under lib/ and fails naming each
# upward include. The public header (poprt/poprt.h) is every layer's.
#   test_layers.sh LIB_DIR
set -u
lib=$1
order="core ir kernels onnx passes compiler runtime api"
rank() {
    i=0
    for l in $order; do
        i=$((i + 1))
        [ "$l" = "$1" ] && { echo "$i"; return; }
    done
    echo 0
}
bad=0
files=0
for dir in $order; do
    own=$(rank "$dir")
    for f in $(find "$lib/$dir" -name '*.[ch]' -o -name '*.inc' -o -name '*.def' | sort); do
        files=$((files + 1))
        for inc in $(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([a-z_]*\)\/.*".*/\1/p' "$f"); do
            [ "$inc" = poprt ] && continue
            r=$(rank "$inc")
            if [ "$r" -eq 0 ]; then
                echo "FAIL: ${f#$lib/} includes from '$inc/', which is not a layer"
                bad=$((bad + 1))
            elif [ "$r" -gt "$own" ]; then
                echo "FAIL: ${f#$lib/} ($dir) includes $inc/ (a layer after it in the order)"
                bad=$((bad + 1))
            fi
        done
    done
done
if [ "$bad" -ne 0 ]; then
    echo "$bad upward include(s) in $files files (order: $order)"
    exit 1
fi
echo "PASS: $files files of lib/ include only their own layer and the ones before it ($order)"
