#!/bin/bash
# Fuzzes every target of tests/fuzz (docs: tests/fuzz/README.md) for a
# bounded time each, starting from its committed corpus and dictionary, in a
# clang build with libFuzzer, ASan and UBSan (build-fuzz/ of the repo).
# Fails on any finding: a crash, a sanitizer report, a leak, an input that
# runs longer than the timeout or an allocation or RSS over the limits.
# Findings are written to build-fuzz/findings/; new inputs to
# build-fuzz/fuzz-corpus/<target> (the committed corpus is not changed).
# Usage: .ci/fuzz.sh [SECONDS]   (per target; default 60)
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"
secs=${1:-60}
case $secs in
    '' | *[!0-9]*) echo "usage: .ci/fuzz.sh [SECONDS per target]" >&2; exit 2 ;;
esac
start=$(date +%s)
step() { printf '\n=== %s (%ds)\n' "$*" "$(($(date +%s) - start))"; }

# ---- clang and its libFuzzer runtime (Debian 12: clang 14)
packages=(clang libclang-rt-14-dev meson ninja-build pkg-config libnanopb-dev libcjson-dev check)
missing=()
for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
    if [ "$(id -u)" -eq 0 ]; then
        step "installing ${missing[*]}"
        apt-get update
        DEBIAN_FRONTEND=noninteractive apt-get install -y "${missing[@]}"
    else
        echo "missing Debian packages: ${missing[*]} (run as root to install them)" >&2
        exit 1
    fi
fi

# ---- build only the fuzz targets (and the library they link)
targets=(model popef pass_args options regex image)
step "build in build-fuzz/"
opts=(-Dfuzz=true -Db_lundef=false -Dwerror=true -Doptimization=1)
if [ -d build-fuzz ]; then
    CC=clang meson setup --reconfigure build-fuzz "${opts[@]}" >/dev/null
else
    CC=clang meson setup build-fuzz "${opts[@]}" >/dev/null
fi
meson compile -C build-fuzz "${targets[@]/#/fuzz_}"

# ---- each target for $secs seconds
# max_len: the largest input worth mutating (the seeds of model and popef
# are models and executables of a few KB to ~140 KB)
max_len() {
    case $1 in
        model) echo 65536 ;;
        popef) echo 160000 ;;
        image) echo 16384 ;;
        *) echo 4096 ;;
    esac
}
export ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
findings="build-fuzz/findings"
mkdir -p "$findings"
# the targets run side by side, one per core (each its own ${secs} s)
jobs=$(nproc 2>/dev/null || echo 1)
run_one() { # target: fuzzes it; its exit status goes to build-fuzz/fuzz-<target>.rc
    local t=$1 rc=0
    local work="build-fuzz/fuzz-corpus/$t"
    mkdir -p "$work"
    "build-fuzz/tests/fuzz/fuzz_$t" -max_total_time="$secs" -timeout=5 -rss_limit_mb=2048 \
        -malloc_limit_mb=2048 -max_len="$(max_len "$t")" -dict="tests/fuzz/$t.dict" \
        -artifact_prefix="$findings/$t-" -print_final_stats=1 \
        "$work" "tests/fuzz/corpus/$t" >"build-fuzz/fuzz-$t.log" 2>&1 || rc=$?
    echo "$rc" >"build-fuzz/fuzz-$t.rc"
}
step "${#targets[@]} targets for ${secs}s each, $jobs at a time"
running=0
for t in "${targets[@]}"; do
    rm -f "build-fuzz/fuzz-$t.rc"
    run_one "$t" &
    running=$((running + 1))
    if [ "$running" -ge "$jobs" ]; then
        wait -n
        running=$((running - 1))
    fi
done
wait
status=0
for t in "${targets[@]}"; do
    step "fuzz_$t"
    log="build-fuzz/fuzz-$t.log"
    rc=$(cat "build-fuzz/fuzz-$t.rc" 2>/dev/null || echo "no exit status")
    grep -E '^#[0-9]+[[:space:]]+DONE' "$log" | tail -n 1 || true
    if [ "$rc" != 0 ]; then
        echo "FAIL fuzz_$t (exit $rc): the finding and how to reproduce it:" >&2
        grep -E -A30 '^==[0-9]+==ERROR|runtime error|^fuzz: |ALARM|out-of-memory|leak' "$log" | head -n 60 >&2 || tail -n 40 "$log" >&2
        ls "$findings"/"$t"-* >&2 2>/dev/null || true
        echo "replay: build-fuzz/tests/fuzz/fuzz_$t FILE (or build/tests/fuzz/fuzz_${t}_replay FILE)" >&2
        status=1
    fi
done
step "done"
exit "$status"
