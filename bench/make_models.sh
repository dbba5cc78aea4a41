#!/usr/bin/env bash
# Lays out every benchmark model folder under one directory (default build/bench-models):
#   <name>            symlink to ../shared/models/<name> for each shared model that has model.onnx
#   minilm_l6/        generated model.onnx + links to the shared test_data_set_* (inputs and outputs)
#   bert_base/        generated model.onnx (bert_base preset) + test_data_set_0 holding minilm_l6's
#                     inputs only (same input names and shapes [1,128]; no reference outputs)
#   tree_ensemble_500x8/  a TreeEnsembleRegressor of 500 full trees of depth 8 over 50 features,
#                     10,000 rows, expected output from NumPy (bench/make_tree_model.py)
#   lstm_t64_h256/, gru_bi_t100_b4/, lstm_t200_h512/  one LSTM / GRU node each, expected outputs
#                     from NumPy (bench/make_rnn_models.py)
# so that `build/bench/model_bench --ort build/bench-models` runs them all.
#
# usage: bench/make_models.sh [-o OUT_DIR] [--no-bert]
# needs: python3 with onnx + numpy (Debian: apt-get install python3-onnx); default /usr/bin/python3, set PYTHON
# for another one.
# Generation takes about a minute (bert_base writes 438 MB); existing files of the expected size are kept.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(dirname "$HERE")
SHARED=${POPRT_SHARED_MODELS:-$(cd "$ROOT/../shared/models" && pwd)}
OUT=$ROOT/build/bench-models
BERT=1
while [ $# -gt 0 ]; do
  case $1 in
    -o) OUT=$2; shift 2 ;;
    --no-bert) BERT=0; shift ;;
    *) echo "usage: $0 [-o OUT_DIR] [--no-bert]" >&2; exit 2 ;;
  esac
done
if [ -z "${PYTHON:-}" ]; then # the system python has python3-onnx; a venv python3 on PATH may not
  if [ -x /usr/bin/python3 ]; then PYTHON=/usr/bin/python3; else PYTHON=python3; fi
fi
GEN=$SHARED/gen_transformer.py
mkdir -p "$OUT"

for d in "$SHARED"/*/; do
  name=$(basename "$d")
  [ -f "$d/model.onnx" ] || continue
  ln -sfn "$SHARED/$name" "$OUT/$name"
done

gen() { # gen PRESET FILE
  if [ -s "$2" ]; then echo "kept $2" >&2; return; fi
  echo "generating $2 (--preset $1) ..." >&2
  "$PYTHON" "$GEN" --preset "$1" --out "$2.tmp"
  mv "$2.tmp" "$2"
}

mkdir -p "$OUT/minilm_l6"
gen minilm "$OUT/minilm_l6/model.onnx"
for s in "$SHARED"/minilm_l6/test_data_set_*; do
  ln -sfn "$s" "$OUT/minilm_l6/$(basename "$s")"
done

if [ "$BERT" = 1 ]; then
  mkdir -p "$OUT/bert_base/test_data_set_0"
  gen bert_base "$OUT/bert_base/model.onnx"
  for f in "$SHARED"/minilm_l6/test_data_set_0/input_*.pb; do
    ln -sfn "$f" "$OUT/bert_base/test_data_set_0/$(basename "$f")"
  done
fi
if [ ! -s "$OUT/tree_ensemble_500x8/model.onnx" ]; then
  echo "generating $OUT/tree_ensemble_500x8 ..." >&2
  "$PYTHON" "$HERE/make_tree_model.py" "$OUT/tree_ensemble_500x8" >&2
fi
if [ ! -s "$OUT/lstm_t200_h512/model.onnx" ]; then
  echo "generating the recurrent models (bench/make_rnn_models.py) ..." >&2
  "$PYTHON" "$HERE/make_rnn_models.py" "$OUT" >&2
fi
ls -l "$OUT" >&2
