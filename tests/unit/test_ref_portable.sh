#!/bin/sh
# lib/kernels/ref is the portable oracle (../shared/DESIGN.md): plain C, no
# SIMD intrinsics and no ISA choice. The vectorised math it computes with
# comes in its kernel context (poprt__kctx_vmath); choosing belongs to the
# binder and to lib/kernels/x86. Fails naming file:line for each
#   #include of anything under x86/ (kernels/x86/...), or of <*intrin.h>
#   intrinsic names and vector types: _mm*_..., __m64/128/256/512*, __mmask*
#   run-time CPU questions: __builtin_cpu_*, cpu_has, cpu_features,
#     isa_first, vmath_best, the POPRT_ISA variable
#   compile-time ISA choice: target / target_clones attributes,
#     POPRT__CLONES, #pragma GCC target, #pragma clang attribute
# in the code of every .c, .h, .inc and .def file under it. Comments are
# blanked first (string literals are kept: getenv("POPRT_ISA") counts).
#   test_ref_portable.sh LIB_DIR
set -u
ref=$1/kernels/ref
if [ ! -d "$ref" ]; then
    echo "FAIL: no directory $ref"
    exit 1
fi

# The file with its comments replaced by spaces, line for line.
strip_comments() {
    awk '
    BEGIN { incomment = 0 }
    {
        line = $0; out = ""; n = length(line); i = 1; quote = ""
        while (i <= n) {
            c = substr(line, i, 1); c2 = substr(line, i, 2)
            if (incomment) {
                if (c2 == "*/") { incomment = 0; out = out "  "; i += 2 }
                else { out = out " "; i++ }
            } else if (quote != "") {
                if (c == "\\") { out = out substr(line, i, 2); i += 2; continue }
                if (c == quote) quote = ""
                out = out c; i++
            } else if (c2 == "/*") { incomment = 1; out = out "  "; i += 2 }
            else if (c2 == "//") { break }
            else { if (c == "\"" || c == "\047") quote = c; out = out c; i++ }
        }
        print out
    }' "$1"
}

patterns='
^[[:space:]]*#[[:space:]]*include[[:space:]]*["<]([^">]*/)?x86/|includes from x86/
^[[:space:]]*#[[:space:]]*include[[:space:]]*<[A-Za-z0-9_]*intrin\.h>|includes an intrinsics header
(^|[^A-Za-z0-9_])_mm[0-9]*_|uses an _mm intrinsic
(^|[^A-Za-z0-9_])__m(64|128|256|512|mask)|uses a vector type
__builtin_cpu_|asks the CPU (__builtin_cpu_*)
cpu_has|asks the CPU (cpu_has)
cpu_features|asks the CPU (cpu_features)
isa_first|picks from a kernel list (isa_first)
vmath_best|picks a vmath table (vmath_best)
POPRT_ISA|reads POPRT_ISA
target_clones|compiles ISA clones (target_clones)
POPRT__CLONES|compiles ISA clones (POPRT__CLONES)
__attribute__[[:space:]]*\(\([[:space:]]*(__)?target(__)?[[:space:]]*\(|sets a target attribute
^[[:space:]]*#[[:space:]]*pragma[[:space:]]+GCC[[:space:]]+(push_options[[:space:]]*$|target)|sets a target pragma
^[[:space:]]*#[[:space:]]*pragma[[:space:]]+clang[[:space:]]+attribute|sets a clang attribute pragma
'

bad=0
files=0
tmp=${TMPDIR:-/tmp}/ref_portable.$$
trap 'rm -f "$tmp"' EXIT
for f in $(find "$ref" -type f \( -name '*.[ch]' -o -name '*.inc' -o -name '*.def' \) | sort); do
    files=$((files + 1))
    strip_comments "$f" >"$tmp"
    old_ifs=$IFS
    IFS='
'
    for p in $patterns; do
        re=${p%|*}
        what=${p##*|}
        for hit in $(grep -nE "$re" "$tmp" | cut -d: -f1); do
            echo "FAIL: ${f#$1/}:$hit $what"
            bad=$((bad + 1))
        done
    done
    IFS=$old_ifs
done
if [ "$files" -eq 0 ]; then
    echo "FAIL: no source files under $ref"
    exit 1
fi
if [ "$bad" -ne 0 ]; then
    echo "$bad ISA choice(s) in $files files of kernels/ref: it must stay portable C"
    exit 1
fi
echo "PASS: $files files of kernels/ref: no x86 include, intrinsic, CPU question or ISA choice"
