#!/bin/sh
# fp8 calibration of a text detector on synthetic document pages
# (text_pages.py) instead of noise: calibrates on pages 1-8, checks on
# held-out pages 77-82, whose expected outputs are the float32 model's
# in ONNX Runtime; the converted models also run in ONNX Runtime with its
# graph optimiser off (it mishandles float8 Q/DQ pairs, see
# check_converted.sh), which gives the models' own results.
#
# usage: tests/ort/fp8_text_pages.sh POPRT OUT_DIR [MODEL_DIR]
#   MODEL_DIR default ../shared/models/ppocr_v4_det; ORT_NODE_MODULES as in
#   check_converted.sh; PYTHON (default /usr/bin/python3) needs numpy + onnx.
# Prints: scheme, loss (and layers kept in fp16: a count,
# --num_of_layers_keep_fp16, or "cos>=C", --fp8_target_cosine C), then per
# held-out page "OK max_abs max_rel cosine".
set -eu
[ $# -ge 2 ] || { echo "usage: $0 POPRT OUT_DIR [MODEL_DIR]" >&2; exit 2; }
poprt=$1; out=$2
here=$(cd "$(dirname "$0")" && pwd)
model=${3:-$here/../../../shared/models/ppocr_v4_det}/model.onnx
py=${PYTHON:-/usr/bin/python3}
"$py" "$here/text_pages.py" "$out/calib" 1,2,3,4,5,6,7,8
"$py" "$here/text_pages.py" "$out/check" 77,78,79,80,81,82
for d in "$out/check"/sample_*; do
    node "$here/check_converted.js" "$model" "$d" --write-expected >/dev/null
done
printf '%-11s %-14s %s\n' scheme loss "held-out pages 77-82: ORT (max_abs max_rel cosine)"
# scheme:loss[:N layers kept in fp16 | :cC, the fewest for cosine >= C]
for cfg in fp8:kld fp8:mse fp8:mae fp8:kld:4 fp8:kld:12 fp8:kld:c0.99 fp8:kld:c0.995 \
        fp8_weight:kld fp8_weight:gptq; do
    p=${cfg%%:*}; rest=${cfg#*:}; loss=${rest%%:*}; keep=0
    case $rest in *:*) keep=${rest#*:} ;; esac
    case $keep in
    c*) set -- --fp8_target_cosine "${keep#c}" ;;
    *) set -- --num_of_layers_keep_fp16 "$keep" ;;
    esac
    o="$out/$p-$loss-$keep"
    mkdir -p "$o"
    "$poprt" -i "$model" --output_dir "$o" --output_model model.onnx --precision "$p" \
        --calibration_data "$out/calib" --calibration_loss_type "$loss" "$@" \
        --logging_level INFO >"$o/convert.log" 2>&1 ||
        { printf '%-11s %-9s CONVERT FAILED: %s\n' "$p" "$loss" "$(tail -n 1 "$o/convert.log")"; continue; }
    case $keep in
    0) ;;
    c*) loss="$loss, $(sed -n 's/.*: \([0-9]*\) of [0-9]* quantized nodes kept.*/\1/p' "$o/convert.log") fp16 (cos>=${keep#c})" ;;
    *) loss="$loss, $keep fp16" ;;
    esac

    r=""
    for d in "$out/check"/sample_*; do
        r="$r | $(node "$here/check_converted.js" "$o/model.onnx" "$d" --opt disabled)"
    done
    printf '%-11s %-14s %s\n' "$p" "$loss" "${r# | }"
done
