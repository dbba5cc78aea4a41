#!/bin/sh
# CLI tests for poprt's configuration files and PopRT's remaining flags:
# --config_yaml (the same result as the same flags; errors naming file, line
# and key; the command line replacing the file's values), the plugins of
# --custom_pass_config / --custom_shape_inference, --data_preprocess,
# --calibrate, the flags accepted with a warning, and every flag of the
# reference CLI (../shared/reference/poprt-cli.txt) in --help and accepted.
# Usage: test_config.sh POPRT_EXE DATA_DIR [REFERENCE_CLI_TXT]
# Environment: POPRT_SAMPLE_PLUGIN, POPRT_SHAPE_PLUGIN (tests/plugin).
set -u
POPRT=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
DATA=$(cd "$2" && pwd)
REF=${3:-}
SAMPLE=${POPRT_SAMPLE_PLUGIN:-}
SHAPE=${POPRT_SHAPE_PLUGIN:-}
TMP=$(mktemp -d "${TMPDIR:-/tmp}/poprt-config.XXXXXX")
trap 'rm -rf "$TMP"' EXIT INT TERM
failures=0
checks=0

run() { # EXPECTED_STATUS ARGS...: keeps $TMP/out and $TMP/err
    want=$1
    shift
    checks=$((checks + 1))
    "$POPRT" "$@" >"$TMP/out" 2>"$TMP/err"
    got=$?
    last="poprt $*"
    [ "$got" -eq "$want" ] || bad "exit status $got, expected $want"
}

bad() {
    failures=$((failures + 1))
    echo "FAIL: $last: $1"
    echo "  stdout:"; sed 's/^/    /' "$TMP/out"
    echo "  stderr:"; sed 's/^/    /' "$TMP/err"
}

has() { grep -qF -- "$2" "$TMP/$1" || bad "$1 lacks '$2'"; }
hasnt() { ! grep -qF -- "$2" "$TMP/$1" || bad "$1 has '$2'"; }
# one_error TEXT: stderr is exactly one "poprt: error: ..." line containing TEXT
one_error() {
    [ "$(grep -c '^poprt: error: ' "$TMP/err")" -eq 1 ] || bad "not exactly one error line"
    has err "$1"
}
# same A B: files A and B are byte-identical
same() { cmp -s "$1" "$2" || bad "$1 and $2 differ"; }

[ -n "$SAMPLE" ] && [ -n "$SHAPE" ] || { echo "FAIL: POPRT_SAMPLE_PLUGIN / POPRT_SHAPE_PLUGIN not set"; exit 1; }
cd "$TMP" || exit 1

# ---- --config_yaml gives what the same flags give: byte-identical models,
# identical --run outputs. Every kind of value: a path, a flag, a number, a
# list joined by commas, NAME: [dims] and NAME: VALUE maps, a list of paths,
# an IPU-only option (warned) and a null (the default).
BERT="$DATA/bert_tiny.onnx"
MM=/encoder/layer.0/attention/output/dense/MatMul
cat >cfg.yaml <<EOF
# a PopRT config
input_model: $BERT
output_dir: $TMP/from_yaml
input_shape:
  input_ids: [1, 24]
  attention_mask: [1, 24]
  token_type_ids: [1, 24]
passes: [shape_inference, constant_folding, layer_norm_pattern]
precision: fp16
fp16_skip_op_types: [Softmax, Erf]
keep_fp32_patterns: yes
serialize_matmul:
  $MM: 2
checkpoints: [/encoder/layer.0/attention/output/dense/MatMul_output_0]
max_tensor_size: -1
custom_library_so_paths: [$SAMPLE]
num_io_tiles: 8
popart_options: {enableStochasticRounding: true}
fp8_skip_op_names: ~
EOF
run 0 --config_yaml cfg.yaml
has out "output: $TMP/from_yaml/bert_tiny.optimized.onnx"
has err "--num_io_tiles has no effect on a CPU"
has err "--popart_options enableStochasticRounding=true has no effect on a CPU"
flags_convert() { # OUTPUT_DIR BATCH PRECISION: cfg.yaml's conversion as flags
    run 0 -i "$BERT" --output_dir "$1" \
        --input_shape input_ids="$2",24 attention_mask="$2",24 token_type_ids="$2",24 \
        --passes shape_inference,constant_folding,layer_norm_pattern --precision "$3" \
        --fp16_skip_op_types Softmax,Erf --keep_fp32_patterns --serialize_matmul "$MM=2" \
        --checkpoints /encoder/layer.0/attention/output/dense/MatMul_output_0 --max_tensor_size -1 \
        --custom_library_so_paths "$SAMPLE" --num_io_tiles 8 \
        --popart_options enableStochasticRounding=true
}
flags_convert "$TMP/from_flags" 1 fp16
same "$TMP/from_yaml/bert_tiny.optimized.onnx" "$TMP/from_flags/bert_tiny.optimized.onnx"
# the same conversion run: identical outputs
cat >run.yaml <<EOF
input_model: $DATA/mlp_dynamic.onnx
input_shape: x=3,16
run: true
iters: 1
precision: fp16
EOF
run 0 --config_yaml run.yaml
grep '^output' "$TMP/out" >yaml_run.txt
run 0 -i "$DATA/mlp_dynamic.onnx" --input_shape x=3,16 --run --iters 1 --precision fp16
grep '^output' "$TMP/out" >flags_run.txt
[ -s yaml_run.txt ] && cmp -s yaml_run.txt flags_run.txt || { last="--run from YAML"; bad "outputs differ from the flags'"; }
# --export_popef as a flag (into --output_dir) and as a path
printf 'input_model: %s\noutput_dir: %s\nexport_popef: true\n' "$DATA/mlp.onnx" "$TMP/popef_dir" >popef.yaml
run 0 --config_yaml popef.yaml
[ -s "$TMP/popef_dir/executable.popef" ] || bad "no $TMP/popef_dir/executable.popef"
printf 'input_model: %s\nexport_popef: %s\n' "$DATA/mlp.onnx" "$TMP/p.popef" >popef2.yaml
run 0 --config_yaml popef2.yaml
[ -s "$TMP/p.popef" ] || bad "no $TMP/p.popef"

# ---- the command line replaces the file's values (not appended to them)
run 0 --config_yaml cfg.yaml --precision fp32 --output_dir "$TMP/override" \
    --input_shape input_ids=2,24 attention_mask=2,24 token_type_ids=2,24
flags_convert "$TMP/override_flags" 2 fp32
same "$TMP/override/bert_tiny.optimized.onnx" "$TMP/override_flags/bert_tiny.optimized.onnx"
run 0 -i "$TMP/override/bert_tiny.optimized.onnx" --show
has out "input_ids: int64 [2,24]"
# --config_yaml=FILE, and an empty file sets nothing
: >empty.yaml
run 0 --config_yaml=empty.yaml -i "$DATA/mlp.onnx" --show
has out "x: float [1,16]"

# ---- errors name the file, the line and the key; exit status 2
yaml_error() { # LINE TEXT YAML: the config's error is one line with FILE:LINE and TEXT
    printf '%s\n' "$3" >bad.yaml
    run 2 --config_yaml bad.yaml -i "$DATA/mlp.onnx" --show
    one_error "bad.yaml:$1"
    has err "$2"
}
yaml_error 2 "unknown key 'precison' (did you mean 'precision'?)" "$(printf 'show: true\nprecison: fp16')"
yaml_error 1 "unknown key 'zzz'" "zzz: 1"
yaml_error 2 "key 'check': expected true or false, got 'maybe'" "$(printf 'run: false\ncheck: maybe')"
# a key the command line gives is type-checked, its value not used
yaml_error 1 "key 'show': expected true or false, got 'maybe'" "show: maybe"
yaml_error 1 "key 'run': expected true or false, got 'true' (quoted: a string)" 'run: "true"'
yaml_error 1 "key 'output_dir': expected a value or a list of values, got a mapping" "output_dir: {a: 1}"
yaml_error 3 "key 'input_shape': expected a value or a list of values, got a mapping" "$(printf 'input_shape:\n  x:\n    a: 1')"
yaml_error 1 "key 'export_popef': expected true, false or a path, got a list" "export_popef: [a]"
yaml_error 1 "key 'custom_library_so_paths': expected a path, got a list" "custom_library_so_paths: [[a]]"
yaml_error 1 "key 'precision': argument --precision: invalid choice: 'fp64'" "precision: fp64"
yaml_error 2 "key 'batch_size': argument --batch_size: invalid value 'abc'" "$(printf 'show: true\nbatch_size: abc')"
yaml_error 3 "key 'run' given twice (first on line 1)" "$(printf 'run: true\nshow: true\nrun: false')"
yaml_error 1 "key 'config_yaml': a config file cannot name another" "config_yaml: other.yaml"
yaml_error 1 "expected a mapping of option names to values, got a list" "$(printf -- '- run\n- show')"
yaml_error 3 "invalid YAML: did not find expected ',' or ']' while parsing a flow sequence (from line 2)" "$(printf 'run: true\nshow: [1, 2')"
yaml_error 2 "invalid YAML: found undefined alias" "$(printf 'run: true\nshow: *nothing')"
yaml_error 4 "a second YAML document" "$(printf -- '---\nrun: true\n---\nshow: true')"
run 2 --config_yaml missing.yaml -i "$DATA/mlp.onnx"
one_error "--config_yaml: cannot read 'missing.yaml'"

# ---- --custom_pass_config: a plugin (or a list of plugins) whose passes
# --list_all_passes shows and --passes runs
run 0 --custom_pass_config "$SAMPLE" --list_all_passes
has out "example_fix_batch"
run 0 -i "$DATA/mlp_dynamic.onnx" --custom_pass_config "$SAMPLE" --passes example_fix_batch --output_dir "$TMP/fixed"
run 0 -i "$TMP/fixed/mlp_dynamic.optimized.onnx" --show
has out "x: float [1,16]" # the plugin's pass fixed the symbolic batch
mkdir -p lists
printf '# the passes of the sample plugin\n\n%s\n' "$SAMPLE" >lists/passes.txt
run 0 --custom_pass_config lists/passes.txt --list_all_passes
has out "example_fix_batch"
printf 'missing_plugin.so\n' >lists/bad.txt
run 1 --custom_pass_config lists/bad.txt --list_all_passes
one_error "lists/missing_plugin.so"
has err "lists/bad.txt:1"
echo 'x = 1' >pass.py
run 2 --custom_pass_config pass.py --list_all_passes
one_error "a Python file"
run 1 --custom_pass_config "$SHAPE" --list_all_passes
one_error "registered no pass"
head -c 64 /dev/zero >zeros
run 2 --custom_pass_config zeros --list_all_passes
one_error "neither a shared object nor a text list"

# ---- --custom_shape_inference: an operator with a shape function only
run 1 -i "$DATA/custom_shape.onnx" --input_shape x=2,4 --show
has err "Repeat2"
run 0 -i "$DATA/custom_shape.onnx" --custom_shape_inference "$SHAPE" --input_shape x=2,4 --output_dir "$TMP/shaped"
run 0 -i "$TMP/shaped/custom_shape.optimized.onnx" --custom_shape_inference "$SHAPE" --show
has out "y: float [2,8]" # inferred by the plugin's shape function
run 1 -i "$TMP/shaped/custom_shape.optimized.onnx" --custom_shape_inference "$SHAPE" --run
one_error "no kernel"
has err "repeat2"

# ---- --data_preprocess (a calibration folder) and --calibrate
# three samples of mlp.onnx's x (float [1,16]), each one serialized
# TensorProto written byte by byte: dims 1 and 16 (field 1), data_type FLOAT
# (field 2), name "x" (field 8), 64 bytes of raw_data (field 9), the floats
# 0.5, -0.25, 0.75, -1 rotated per sample
for s in 0 1 2; do
    mkdir -p "$TMP/calib/sample_00$s"
    {
        printf '\010\001\010\020\020\001\102\001x\112\100'
        for i in 1 2 3 4; do
            case $s in
            0) printf '\0\0\0\077\0\0\200\276\0\0\100\077\0\0\200\277' ;;
            1) printf '\0\0\200\276\0\0\100\077\0\0\200\277\0\0\0\077' ;;
            2) printf '\0\0\100\077\0\0\200\277\0\0\0\077\0\0\200\276' ;;
            esac
        done
    } >"$TMP/calib/sample_00$s/input_0.pb"
done
run 2 -i "$DATA/mlp.onnx" --precision fp8 --calibrate --output_dir "$TMP/c0"
one_error "--calibrate needs calibration samples"
run 0 -i "$DATA/mlp.onnx" --precision fp8 --calibrate --data_preprocess "$TMP/calib" --output_dir "$TMP/c1"
hasnt err "random"
run 0 -i "$DATA/mlp.onnx" --precision fp8 --calibration_data "$TMP/calib" --output_dir "$TMP/c2"
same "$TMP/c1/mlp.optimized.onnx" "$TMP/c2/mlp.optimized.onnx"
run 0 -i "$DATA/mlp.onnx" --precision fp8 --output_dir "$TMP/c3" # random samples
has err "random"
! cmp -s "$TMP/c1/mlp.optimized.onnx" "$TMP/c3/mlp.optimized.onnx" || bad "the samples changed nothing"
printf '\200\004}\224.' >data.pkl
run 2 -i "$DATA/mlp.onnx" --precision fp8 --data_preprocess data.pkl
one_error "a Python pickle"
run 2 -i "$DATA/mlp.onnx" --precision fp8 --data_preprocess "$TMP/calib" --calibration_data "$DATA"
one_error "give one folder"

# ---- flags with no CPU effect: accepted, one warning each, result unchanged
run 0 -i "$DATA/mlp.onnx" --output_dir "$TMP/plain"
run 0 -i "$DATA/mlp.onnx" --output_dir "$TMP/warned" --calibrate --keep_fp32_patterns \
    --enable_compress_pattern --enable_merge_if --int8_reduce_range
same "$TMP/plain/mlp.optimized.onnx" "$TMP/warned/mlp.optimized.onnx"
for f in calibrate keep_fp32_patterns enable_compress_pattern enable_merge_if int8_reduce_range; do
    [ "$(grep -c -- "warning: --$f has no effect" "$TMP/err")" -eq 1 ] || bad "not one warning for --$f"
done
run 0 -i "$DATA/mlp.onnx" --output_dir "$TMP/fp16" --precision fp16 --keep_fp32_patterns
hasnt err "keep_fp32_patterns"
# --int8_reduce_range with int8: no warning, and a different (7-bit) file
run 0 -i "$DATA/mlp.onnx" --output_dir "$TMP/i8" --precision int8
run 0 -i "$DATA/mlp.onnx" --output_dir "$TMP/i7" --precision int8 --int8_reduce_range
hasnt err "int8_reduce_range"
if cmp -s "$TMP/i8/mlp.optimized.onnx" "$TMP/i7/mlp.optimized.onnx"; then
    bad "--int8_reduce_range did not change the int8 file"
fi

# ---- every flag of the reference CLI is in --help and accepted
if [ -z "$REF" ] || [ ! -f "$REF" ]; then
    echo "SKIP part: the reference CLI text (../shared/reference/poprt-cli.txt) is absent"
else
    # a valid value for each option that takes one
    value_of() {
        case $1 in
        available_memory_proportion) echo 0.3 ;; batch_size) echo 1 ;; batch_axis) echo 0 ;;
        batches_per_step) echo 1 ;; calibration_loss_type) echo kld ;; checkpoints) echo y ;;
        compiler_options | popart_options) echo a=1 ;; config_yaml) echo "$TMP/empty.yaml" ;;
        convert_version) echo 11 ;; custom_library_so_paths | custom_pass_config) echo "$SAMPLE" ;;
        custom_shape_inference) echo "$SHAPE" ;; data_preprocess) echo "$TMP/calib" ;;
        fp16_skip_op_types) echo Gelu ;; fp8_skip_op_names) echo Conv_1 ;;
        fp8_params) echo F143,F143,-1,-1 ;; framework) echo onnx ;; input_model) echo m.onnx ;;
        input_shape) echo x=1,16 ;; ipu_version) echo ipu21 ;; logging_level) echo WARNING ;;
        manual_sharding_config) echo shard.yaml ;; max_tensor_size) echo -1 ;;
        num_io_tiles | num_of_layers_keep_fp16) echo 0 ;; output_dir) echo out ;;
        output_model) echo m.onnx ;; pack_args) echo max_valid_num=50 ;; passes | skip_passes) echo a ;;
        precision) echo fp16 ;; print_completion) echo bash ;; remap_mode) echo after_matmul ;;
        remove_outputs) echo y ;; serialize_matmul) echo MatMul_1=4 ;;
        serialize_matmul_add) echo MatMul_1/Add_2=4 ;; merge_matmul) echo a,b ;;
        merge_matmul_add | merge_moe) echo a,b,c,d ;;
        esac
    }
    # the flags the reference names (--x in its synopsis, -x in its text;
    # not those of its tf2onnx sub-command, refused below),
    # and those whose descriptions its text keeps without their names
    flags=$( (sed '/Sub-commands/q' "$REF" | LC_ALL=C grep -o -E -- '(--|–)[a-z][a-z0-9_]*' |
        LC_ALL=C sed 's/^\(--\|–\)//'
        printf '%s\n' calibrate check disable_compilation_progress_bar disable_fast_norm \
            enable_8bits_io enable_merge_if enable_compress_pattern enable_erf_gelu \
            enable_insert_remap export_popef fold_periodic_initializer keep_fp32_patterns \
            infer_shape_ahead input_shape list_all_passes only_manual_sharding \
            optimize_internal_exchange_code perf_tuner precision_compare run show version) |
        sort -u)
    "$POPRT" --help >help.txt 2>&1
    n=0
    for f in $flags; do
        n=$((n + 1))
        grep -qF -- "--$f" help.txt || { last="poprt --help"; bad "--$f is not in --help"; }
        v=$(value_of "$f")
        if [ -n "$v" ]; then
            run 0 "--$f" "$v" --help
        else
            run 0 "--$f" --help
        fi
        hasnt err "error"
    done
    [ "$n" -ge 60 ] || { last="$REF"; bad "only $n flags found in the reference"; }
    echo "$n reference flags in --help and accepted"
fi
run 2 tf2onnx --saved_model -i model_dir
one_error "tf2onnx sub-command converts TensorFlow models"

echo "$checks checks, $failures failures"
[ "$failures" -eq 0 ]
