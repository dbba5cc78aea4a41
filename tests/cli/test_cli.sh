#!/bin/sh
# CLI tests for poprt: test_cli.sh POPRT_EXE DATA_DIR
# Each check runs the tool and looks at its exit status, stdout and stderr.
set -u
# Absolute paths: some checks run from another folder.
POPRT=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
DATA=$(cd "$2" && pwd)
TMP=$(mktemp -d "${TMPDIR:-/tmp}/poprt-cli.XXXXXX")
trap 'rm -rf "$TMP"' EXIT INT TERM
failures=0
checks=0

. "$(dirname "$0")/helpers.sh"

# values LABEL EXPECTED...: the 'first:' values printed for LABEL match
# EXPECTED within 1e-4 (abs) + 1e-4 (rel).
values() {
    label=$1
    shift
    line=$(grep -F -- "$label:" "$TMP/out" | head -n 1)
    got=$(printf '%s\n' "$line" | sed -n 's/.* first: //p' | sed 's/ \.\.\.$//')
    echo "$got" "|" "$@" | awk '{
        n = 0; for (i = 1; i <= NF && $i != "|"; i++) g[++n] = $i
        m = 0; for (i++; i <= NF; i++) e[++m] = $i
        if (n < m) exit 1
        for (i = 1; i <= m; i++) {
            d = g[i] - e[i]; if (d < 0) d = -d
            a = e[i]; if (a < 0) a = -a
            if (d > 1e-4 + 1e-4 * a) exit 1
        }
    }' || bad "values of '$label' are '$got', expected '$*'"
}

# ---- help and version
run 0 --help
has out "usage: poprt"
has out "--input_model"
has out "--output_dir"
has out "--list_all_passes"
has out "--logging_level"
run 0 -h
has out "usage: poprt"
run 0 --version
grep -Eq '^poprt [0-9]+\.[0-9]+\.[0-9]+' "$TMP/out" || bad "version line"
run 0 -v
grep -Eq '^poprt [0-9]+\.[0-9]+\.[0-9]+' "$TMP/out" || bad "version line"

# ---- usage errors: exit 2 and one error line
run 2
one_line_error
has err "nothing to do"
run 2 --no_such_option
one_line_error
has err "unrecognized arguments: --no_such_option"
run 2 stray_word
one_line_error
run 2 -i
one_line_error
has err "expected one argument"
run 2 -i "$DATA/mlp.onnx" --batch_size abc
one_line_error
has err "--batch_size"
run 2 -i "$DATA/mlp.onnx" --batch_size 0
one_line_error
run 2 -i "$DATA/mlp.onnx" --logging_level LOUD
one_line_error
has err "invalid choice"
run 2 -i "$DATA/mlp.onnx" --precision fp64
one_line_error
has err "invalid choice"
run 1 -i "$DATA/mlp.onnx" --custom_library_so_paths "$TMP/libx.so"
one_line_error
has err "plugin '$TMP/libx.so'"
# a model with a plugin's operator: unknown without the plugin, runs with it
if [ -n "${POPRT_SAMPLE_PLUGIN:-}" ]; then
    run 1 -i "$DATA/custom_op.onnx" --input_shape x=2,4 --run
    one_line_error
    has err "Scale"
    run 0 --custom_library_so_paths "$POPRT_SAMPLE_PLUGIN" -i "$DATA/custom_op.onnx" --input_shape x=2,4 --run --iters 1
    has out "output y: float [2,4]"
    run 0 --custom_library_so_paths "$POPRT_SAMPLE_PLUGIN" --list_all_passes
    has out "example_fix_batch"
fi
run 2 -i "$DATA/mlp.onnx" --calibration_loss_type l3
one_line_error
has err "invalid choice"
run 2 -i "$DATA/mlp.onnx" --convert_version x
one_line_error
run 2 -i "$DATA/mlp.onnx" --precision fp8 --fp8_target_cosine 1.5
one_line_error
has err "--fp8_target_cosine"
run 1 -i "$DATA/mlp.onnx" --output_dir "$TMP/tc" --precision fp8 --fp8_target_cosine 0.9 --num_of_layers_keep_fp16 1
one_line_error
has err "not both"
run 2 -i "$DATA/mlp.onnx" --serialize_matmul nokeyval
one_line_error
run 2 -i "$DATA/mlp.onnx" --skip_passes no_such_pass_xyz
one_line_error
has err "unknown pass 'no_such_pass_xyz'"
# PopRT's form: a flag, the executable goes into --output_dir beside the
# converted model; it runs
run 0 -i "$DATA/mlp.onnx" --export_popef --output_dir "$TMP/epd"
has out "exported: $TMP/epd/executable.popef"
[ -f "$TMP/epd/executable.popef" ] && [ -f "$TMP/epd/mlp.optimized.onnx" ] || bad "--export_popef did not write both files into --output_dir"
run 0 -i "$TMP/epd/executable.popef" --run --iters 1
has out "output y:"
run 2 -i "$TMP/epd/executable.popef" --export_popef
one_line_error
has err "compiled executable"
# compile to an executable, then show and run it: same numbers as the .onnx
run 0 -i "$DATA/mlp.onnx" --run --iters 1
grep -F "output y:" "$TMP/out" | sed 's/.* first: //' >"$TMP/onnx_values"
run 0 -i "$DATA/mlp.onnx" --export_popef "$TMP/mlp.popef"
has out "exported: $TMP/mlp.popef"
run 0 -i "$TMP/mlp.popef" --show
has out "executable: $TMP/mlp.popef"
has out "input x: float"
run 0 -i "$TMP/mlp.popef" --run --iters 2 --threads 2
grep -F "output y:" "$TMP/out" | sed 's/.* first: //' >"$TMP/popef_values"
cmp -s "$TMP/onnx_values" "$TMP/popef_values" || bad "values differ between the .onnx and the .popef run"
# a model whose activations the compiler keeps in NCHW16c on AVX-512 CPUs
# (docs/compiler.md): its .popef also runs with the kernels of a CPU without
# AVX-512 (POPRT_ISA=avx2: the convolutions convert their operands), and the
# printed values agree within 1e-4 relative (other summation orders)
run 0 -i "$DATA/conv_blocks.onnx" --run --iters 1
grep -F "output y:" "$TMP/out" | sed 's/.* first: //' >"$TMP/blocks_onnx"
run 0 -i "$DATA/conv_blocks.onnx" --export_popef "$TMP/blocks.popef"
export POPRT_ISA=avx2
run 0 -i "$TMP/blocks.popef" --run --iters 1 --threads 2
unset POPRT_ISA
grep -F "output y:" "$TMP/out" | sed 's/.* first: //' >"$TMP/blocks_avx2"
paste -d ' ' "$TMP/blocks_onnx" "$TMP/blocks_avx2" | awk '{
    n = NF / 2; if (n < 6 || $(n + 1) == "") exit 1
    for (i = 1; i <= n; i++) if ($i != "...") {
        d = $i - $(i + n); if (d < 0) d = -d
        a = $i < 0 ? -$i : $i
        if (d > 1e-4 * a + 1e-6) exit 1
    }
}' || bad "conv_blocks values differ between AVX-512 and POPRT_ISA=avx2 runs of the .popef"
run 2 -i "$TMP/mlp.popef" --output_dir "$TMP/x"
one_line_error
has err "compiled executable"
head -c 700 "$TMP/mlp.popef" >"$TMP/cut.popef"
run 1 -i "$TMP/cut.popef" --run
one_line_error
has err "cut.popef"
run 2 -i "$DATA/mlp.onnx" --config_yaml cfg.yaml
one_line_error
has err "cannot read 'cfg.yaml'" # (tests/cli/test_config.sh tests the YAML itself)
run 2 -i "$DATA/mlp.onnx" --input_shape x
one_line_error
has err "NAME=D1,D2"
run 2 -i "$DATA/mlp.onnx" --input_shape x=1,,2
one_line_error
run 2 -i "$DATA/mlp.onnx" --show=yes
one_line_error
run 2 -i "$DATA/mlp.onnx" --threads 0 --run
one_line_error
run 2 -i "$DATA/mlp.onnx" --run --passes no_such_pass_xyz
one_line_error
has err "unknown pass 'no_such_pass_xyz'"

# ---- bad files: exit 1 and one error line naming the file
run 1 -i "$TMP/missing.onnx" --show
one_line_error
has err "cannot load '$TMP/missing.onnx'"
printf 'this is not a protobuf\377\377\377' >"$TMP/garbage.onnx"
run 1 -i "$TMP/garbage.onnx" --show
one_line_error
has err "garbage.onnx"
run 1 -i "$DATA" --show
one_line_error

# ---- --show
run 0 -i "$DATA/mlp.onnx" --show
has out "opset: 13"
has out "nodes: 4"
has out "inputs (1):"
has out "  x: float [1,16]"
has out "outputs (1):"
has out "  y: float [1,10]"
[ -e "./mlp.optimized.onnx" ] && bad "--show alone wrote a model"
run 0 -i "$DATA/mlp_dynamic.onnx" --show
has out "  x: float [batch,16]"
run 0 -i "$DATA/mlp_dynamic.onnx" --show --input_shape x=3,16
has out "  x: float [3,16]"
has out "  y: float [3,10]"
run 0 -i "$DATA/mlp_dynamic.onnx" --show --batch_size 5
has out "  x: float [5,16]"
has out "  y: float [5,10]"
run 0 -i "$DATA/mlp_dynamic.onnx" --show --batch_size 5 --batch_axis 0
has out "  x: float [5,16]"
run 1 -i "$DATA/mlp_dynamic.onnx" --show --batch_size 5 --batch_axis 2
one_line_error
run 1 -i "$DATA/mlp.onnx" --show --input_shape nope=1,16
one_line_error
has err "nope"
run 1 -i "$DATA/mlp.onnx" --show --input_shape x=2,17
one_line_error
run 0 -i "$DATA/conv.onnx" --show
has out "  x: float [1,3,8,8]"
has out "  y: float [1,5]"
has out "nodes: 5"

# ---- --list_all_passes
run 0 --list_all_passes

# ---- --run: values from a float64 numpy reference of each model on the
# xorshift32 inputs (seed 42, floats in [-1, 1))
run 0 -i "$DATA/mlp.onnx" --run
has out "output y: float [1,10]"
has out "mean 0.1 "
values "output y" 0.0843322 0.0727489 0.0980678 0.121537 0.0897131 0.0741131
has out "latency: median"
has out "over 10 runs"
cp "$TMP/out" "$TMP/run1"
run 0 -i "$DATA/mlp.onnx" --run --iters 3 --threads 2
values "output y" 0.0843322 0.0727489 0.0980678 0.121537 0.0897131 0.0741131
has out "over 3 runs (threads 2"
grep -v latency "$TMP/run1" >"$TMP/a"
grep -v latency "$TMP/out" >"$TMP/b"
cmp -s "$TMP/a" "$TMP/b" || bad "--run output differs between 1 and 2 threads"
run 0 -i "$DATA/conv.onnx" --run --iters 2
has out "output y: float [1,5]"
values "output y" -0.0662965 -0.164952 0.111594 0.194601 0.722664
run 0 -i "$DATA/mlp_dynamic.onnx" --run --batch_size 4 --iters 1
has out "output y: float [4,10]"
values "output y" 0.0843322 0.0727489 0.0980678 0.121537 0.0897131 0.0741131
run 0 -i "$DATA/mlp_dynamic.onnx" --run --input_shape x=2,16 --iters 1
has out "output y: float [2,10]"
run 1 -i "$DATA/mlp_dynamic.onnx" --run
one_line_error
has err "--input_shape"
run 0 -i "$DATA/mlp.onnx" --run --batches_per_step 2 --iters 1
has out "output y: float [2,1,10]"
run 0 -i "$DATA/mlp.onnx" --check
has out "check:"
run 0 -i "$DATA/mlp.onnx" --run --iters 1 --logging_level DEBUG
run 0 -i "$DATA/mlp.onnx" --run --iters 1 --precision fp32 --framework onnx

# ---- conversion
run 0 -i "$DATA/mlp.onnx" --output_dir "$TMP/out1"
has out "converted"
[ -s "$TMP/out1/mlp.optimized.onnx" ] || bad "no $TMP/out1/mlp.optimized.onnx"
run 0 -i "$TMP/out1/mlp.optimized.onnx" --run --iters 1
values "output y" 0.0843322 0.0727489 0.0980678 0.121537 0.0897131 0.0741131
run 0 --input_model="$DATA/conv.onnx" --output_dir="$TMP/out2/deeper" --output_model=small.onnx
[ -s "$TMP/out2/deeper/small.onnx" ] || bad "no $TMP/out2/deeper/small.onnx"
run 0 -i "$TMP/out2/deeper/small.onnx" --show
has out "  y: float [1,5]"
run 0 -i "$DATA/conv.onnx" --output_model "$TMP/out2/abs.onnx"
[ -s "$TMP/out2/abs.onnx" ] || bad "an absolute --output_model was not written as given"
run 0 -i "$TMP/out2/abs.onnx" --show
has out "  y: float [1,5]"
run 0 -i "$DATA/mlp_dynamic.onnx" --input_shape x=6,16 --output_dir "$TMP/out3"
run 0 -i "$TMP/out3/mlp_dynamic.optimized.onnx" --show
has out "  x: float [6,16]"
(cd "$TMP" && "$POPRT" -i "$DATA/mlp.onnx" >/dev/null 2>&1) || bad "default conversion into ./ failed"
[ -s "$TMP/mlp.optimized.onnx" ] || { last="poprt -i mlp.onnx (in $TMP)"; bad "no ./mlp.optimized.onnx"; }
run 1 -i "$DATA/mlp.onnx" --output_dir /proc/no/such/dir
one_line_error

# ---- the default pipeline: summary, opset conversion (default 11)
run 0 -i "$DATA/mlp.onnx" --output_dir "$TMP/p1"
has out "opset: 13 -> 11"
has out "passes that changed the model: convert_version"
has out "passes without change:"
has out "nodes: 4 -> "
has out "output: $TMP/p1/mlp.optimized.onnx"
run 0 -i "$TMP/p1/mlp.optimized.onnx" --show
has out "opset: 11"
run 0 -i "$TMP/p1/mlp.optimized.onnx" --run --iters 1
values "output y" 0.0843322 0.0727489 0.0980678 0.121537 0.0897131 0.0741131
run 0 -i "$DATA/mlp.onnx" --output_dir "$TMP/p2" --convert_version 17
has out "opset: 13 -> 17"
run 0 -i "$TMP/p2/mlp.optimized.onnx" --run --iters 1
values "output y" 0.0843322 0.0727489 0.0980678 0.121537 0.0897131 0.0741131
run 0 -i "$DATA/mlp.onnx" --output_dir "$TMP/p3" --skip_passes convert_version
has out "opset: 13"
has out "skipped (--skip_passes): convert_version"
run 0 -i "$DATA/mlp.onnx" --output_dir "$TMP/p4" --passes constant_folding
hasnt out "convert_version"
run 0 -i "$DATA/mlp.onnx" --output_dir "$TMP/p4" --passes constant_folding --convert_version 12
has out "opset: 13 -> 12"
run 1 -i "$DATA/mlp.onnx" --output_dir "$TMP/p5" --convert_version 99
hasnt out "converted"

# ---- options that map to passes
run 0 -i "$DATA/mlp.onnx" --output_dir "$TMP/p6" --precision fp16 --check
has out "float_to_half"
has out "check:"
run 0 -i "$TMP/p6/mlp.optimized.onnx" --run --iters 1
has out "output y: float [1,10]"
run 0 -i "$DATA/mlp.onnx" --output_dir "$TMP/p6i" --precision int8 --check
has out "float_to_int8"
run 0 -i "$TMP/p6i/mlp.optimized.onnx" --show
has out "MatMulInteger"
has out "DynamicQuantizeLinear"
run 0 -i "$TMP/p6i/mlp.optimized.onnx" --run --iters 1
has out "output y: float [1,10]"
run 0 -i "$DATA/mlp.onnx" --output_dir "$TMP/p6s" --precision int8_static --convert_version 13 --check
has out "float_to_int8_static"
run 0 -i "$TMP/p6s/mlp.optimized.onnx" --show
has out "QuantizeLinear"
has out "DequantizeLinear"
run 0 -i "$TMP/p6s/mlp.optimized.onnx" --run --iters 1
has out "output y: float [1,10]"
# bf16: arithmetic only, the model stays float32 (no quantizing pass)
run 0 -i "$DATA/mlp.onnx" --precision bf16 --run --iters 1
has out "output y: float [1,10]"
hasnt out "float_to_"
# its executable file keeps the choice; on a CPU without AVX512-BF16 (here
# POPRT_ISA=avx2) it runs in float32: the float32 model's values exactly
run 0 -i "$DATA/mlp.onnx" --precision bf16 --export_popef "$TMP/mlp_bf16.popef"
has out "exported: $TMP/mlp_bf16.popef"
run 0 -i "$TMP/mlp_bf16.popef" --run --iters 1
has out "output y: float [1,10]"
if grep -qw avx512_bf16 /proc/cpuinfo 2>/dev/null; then
    grep -F "output y:" "$TMP/out" | sed 's/.* first: //' >"$TMP/bf16_values"
    cmp -s "$TMP/onnx_values" "$TMP/bf16_values" &&
        bad "the bfloat16 .popef gives the float32 values on a CPU with AVX512-BF16"
fi
export POPRT_ISA=avx2
run 0 -i "$DATA/mlp.onnx" --run --iters 1
grep -F "output y:" "$TMP/out" | sed 's/.* first: //' >"$TMP/avx2_f32_values"
run 0 -i "$TMP/mlp_bf16.popef" --run --iters 1
grep -F "output y:" "$TMP/out" | sed 's/.* first: //' >"$TMP/avx2_bf16_values"
unset POPRT_ISA
cmp -s "$TMP/avx2_f32_values" "$TMP/avx2_bf16_values" ||
    bad "a bfloat16 .popef on a CPU without AVX512-BF16 does not give the float32 values"
# made on a CPU with AMX (the AMX variant's packed weights), run where only
# AVX512-BF16 is allowed: prepared again for that variant, the values of a
# bfloat16 session compiled there (not float32's)
if grep -qw amx_bf16 /proc/cpuinfo 2>/dev/null && grep -qw avx512_bf16 /proc/cpuinfo; then
    export POPRT_ISA=avx512
    run 0 -i "$DATA/mlp.onnx" --precision bf16 --run --iters 1
    grep -F "output y:" "$TMP/out" | sed 's/.* first: //' >"$TMP/avx512_bf16_direct"
    run 0 -i "$TMP/mlp_bf16.popef" --run --iters 1
    grep -F "output y:" "$TMP/out" | sed 's/.* first: //' >"$TMP/avx512_bf16_popef"
    unset POPRT_ISA
    cmp -s "$TMP/avx512_bf16_direct" "$TMP/avx512_bf16_popef" ||
        bad "an AMX bfloat16 .popef under POPRT_ISA=avx512 does not give AVX512-BF16's values"
    cmp -s "$TMP/onnx_values" "$TMP/avx512_bf16_popef" &&
        bad "an AMX bfloat16 .popef under POPRT_ISA=avx512 gives the float32 values"
fi
# --profile: kernel times per operator type at INFO
run 0 -i "$DATA/mlp.onnx" --run --iters 2 --profile
has err "profile: Gemm"
has err "ms in kernels over all runs"
# no run (an input dim left unknown): the error, no profile of zeros after it
run 1 -i "$DATA/mlp_dynamic.onnx" --run --iters 2 --profile
has err "unknown dim 0"
hasnt err "in kernels over all runs"
# all layers kept (target 1): no float8 left; the logged choice says so
run 0 -i "$DATA/conv.onnx" --output_dir "$TMP/p6c" --precision fp8 --fp8_target_cosine 1 --logging_level INFO
has err "kept unquantized for an output cosine >= 1"
# --bf16_target_cosine: pass bf16_fallback (target 1 keeps every node float32
# where the CPU has bfloat16 kernels; without them none is needed); checked
# value; warned without --precision bf16
run 0 -i "$DATA/conv.onnx" --output_dir "$TMP/p6b" --precision bf16 --bf16_target_cosine 1 --logging_level INFO
has err "bf16_fallback: "
run 2 -i "$DATA/conv.onnx" --precision bf16 --bf16_target_cosine 1.5
has err "--bf16_target_cosine"
run 0 -i "$DATA/conv.onnx" --output_dir "$TMP/p6w" --bf16_target_cosine 0.9
has err "no effect without --precision bf16"
run 0 -i "$DATA/conv.onnx" --output_dir "$TMP/p7" --checkpoints r
has out "add_checkpoints"
run 0 -i "$TMP/p7/conv.optimized.onnx" --show
has out "outputs (2):"
run 0 -i "$TMP/p7/conv.optimized.onnx" --output_dir "$TMP/p8" --remove_outputs r
has out "remove_outputs"
run 0 -i "$TMP/p8/conv.optimized.optimized.onnx" --show
has out "outputs (1):"
run 1 -i "$DATA/mlp.onnx" --output_dir "$TMP/p9" --remove_outputs y
one_line_error
has err "--remove_outputs"
run 1 -i "$DATA/mlp.onnx" --output_dir "$TMP/p9" --remove_outputs nope
one_line_error
has err "nope"

# ---- --serve_bench: a runner under load; every request completes, the
# runner's statistics are printed, batching forms batches of more than one
run 0 -i "$DATA/mlp_dynamic.onnx" --serve_bench --serve_seconds 0.3 --serve_concurrency 8 --runner_options max_batch=4,batch_timeout_us=500
has out "0 failed, 0 dropped"
has out "runner: "
awk '/^runner: /{ for (i = 1; i <= NF; i++) if ($i == "mean") b = $(i + 2) + 0 } END { exit !(b > 1) }' "$TMP/out" || bad "batching formed no batch of more than one request"
run 0 -i "$DATA/mlp.onnx" --serve_bench --serve_seconds 0.3 --serve_rate 500
has out "offered 500.0 requests/s"
has out "latency: p50"
run 1 -i "$DATA/mlp_dynamic.onnx" --serve_bench --serve_seconds 0.2 --runner_options max_batch=4,nonsense_key=1
one_line_error
has err "nonsense_key"
run 2 -i "$DATA/mlp.onnx" --serve_bench --serve_rate -1
one_line_error
has err "--serve_rate"

# ---- PopRT's flags: IPU-only ones accepted with one warning each, the
# others mapped to passes and effective
run 0 -i "$DATA/mlp.onnx" --output_dir "$TMP/ipu" --ipu_version ipu21 --num_io_tiles 32 --available_memory_proportion 0.3 --optimize_internal_exchange_code --fold_periodic_initializer --perf_tuner --popart_options enableStochasticRounding=true partialsTypeMatMuls=half --compiler_options num_ipus=1
for f in ipu_version num_io_tiles available_memory_proportion optimize_internal_exchange_code fold_periodic_initializer perf_tuner popart_options compiler_options; do
    [ "$(grep -c "warning: --$f.* has no effect on a CPU" "$TMP/err")" -eq 1 ] || bad "not one warning for --$f"
done
has err "--popart_options enableStochasticRounding=true,partialsTypeMatMuls=half has no effect"
has out "converted"
run 2 -i "$DATA/mlp.onnx" --ipu_version ipu3
one_line_error
has err "invalid choice: 'ipu3'"
run 2 -i "$DATA/mlp.onnx" --popart_options
one_line_error
run 0 -i "$DATA/conv.onnx" --output_dir "$TMP/e8" --enable_8bits_io
has out "eight_bits_io"
run 0 -i "$TMP/e8/conv.optimized.onnx" --show
has out "x: uint8 [1,3,8,8]"
run 0 -i "$DATA/mlp.onnx" --output_dir "$TMP/eg" --passes eliminate_identity --enable_erf_gelu --infer_shape_ahead --disable_fast_norm --disable_compilation_progress_bar
has out "shape_inference"
has out "erf_gelu_pattern"
run 0 -i "$DATA/folding.onnx" --output_dir "$TMP/mt"
has out "changed the model: convert_version, constant_folding"
run 0 -i "$DATA/folding.onnx" --output_dir "$TMP/mt" --max_tensor_size 16
has out "changed the model: convert_version"
hasnt out "changed the model: convert_version, constant_folding"
run 2 -i "$DATA/mlp.onnx" --max_tensor_size -2
one_line_error
has err "--max_tensor_size"
run 0 -i "$DATA/mlp.onnx" --output_dir "$TMP/pk" --pack_args max_valid_num=50 enable_double_batch_unpack=false segment_max_size=13+51
has out "packed_transformer"
run 1 -i "$DATA/mlp.onnx" --output_dir "$TMP/pk2" --pack_args nonsense=1
one_line_error
has err "nonsense"
run 0 -i "$DATA/mlp.onnx" --output_dir "$TMP/rm" --enable_insert_remap --remap_mode after_matmul
has err "--enable_insert_remap has no effect on a CPU"
has out "auto_insert_remap"
run 1 -i "$DATA/mlp.onnx" --output_dir "$TMP/rm2" --enable_insert_remap --remap_mode sideways
one_line_error
has err "sideways"
printf '{"sharding": {"fc2": 1}}' >"$TMP/shard.json"
run 0 -i "$DATA/mlp.onnx" --output_dir "$TMP/ms" --only_manual_sharding --manual_sharding_config "$TMP/shard.json"
has out "manual_sharding"
has out "1 passes run"
run 2 -i "$DATA/mlp.onnx" --output_dir "$TMP/ms2" --only_manual_sharding
one_line_error
has err "--manual_sharding_config"

# ---- --print_completion: the bash script completes flags, choices and pass
# names (from the tool itself); every option of the usage text is in it
run 0 --print_completion bash
cp "$TMP/out" "$TMP/poprt.bash"
complete_words() { # WORDS...: what _poprt offers for the last word
    bash -c 'source "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _poprt; printf "%s\n" "${COMPREPLY[@]}"' _ "$TMP/poprt.bash" "$@"
}
complete_words "$POPRT" --expo | grep -qx -- "--export_popef" || bad "bash completion lacks --export_popef"
complete_words "$POPRT" -i m.onnx --precision fp8 | sort | tr '\n' ' ' | grep -qx "fp8 fp8_weight " || bad "bash completion of --precision fp8"
complete_words "$POPRT" --passes eliminate_iden | grep -qx "eliminate_identity" || bad "bash completion of a pass name"
complete_words "$POPRT" --passes constant_folding,fuse_bn_into_c | grep -qx "constant_folding,fuse_bn_into_conv" || bad "bash completion of a second pass name"
run 0 --help
for o in $(sed '/^$/q' "$TMP/out" | grep -o -- '--[a-z0-9_]*' | sort -u); do
    grep -q -- " $o[ \"]" "$TMP/poprt.bash" || bad "bash completion lacks $o of --help"
done
run 0 --print_completion zsh
has out "bashcompinit"
run 0 --print_completion fish
has out "complete -c poprt -l export_popef"
has out "complete -c poprt -l precision -r -x -a 'fp32 fp16 fp8 fp8_weight int8 int8_static bf16'"
run 2 --print_completion tcsh
one_line_error
has err "invalid choice: 'tcsh'"

# --run prints map and sequence-of-map outputs entry by entry (a classifier
# with ZipMap, its first data set: row 0's probabilities of scikit-learn are
# 9.99e-06, 0.97633, 0.023660); a map input is refused by name
ML="$DATA/ml/sk_logistic_regression_zipmap"
run 0 -i "$ML/model.onnx" --run --input_data "$ML/test_data_set_0"
has out "output output_probability: sequence of 30 maps"
has out '[0] map(string, float) of 3: {"cat": 9.99'
has out '"dog": 0.9763'
has out '"emu": 0.02365'
has out "... (22 more)"
run 0 -i "$DATA/ml/sk_random_forest_zipmap/model.onnx" --run --input_shape X=2,5
has out "output output_probability: sequence of 2 maps"
has out "[1] map(int64, float) of 3: {10: "
run 1 -i "$DATA/ml/sk_dict_vectorizer_logistic/model.onnx" --run
one_line_error
has err "input 'X' is a map; --run makes only tensor inputs"
run 0 -i "$DATA/ml/sk_dict_vectorizer_logistic/model.onnx" --show
has out "X: map(string, float)"
has out "output_probability: sequence of map(int64, float)"
run 0 -i "$DATA/ml/sk_dict_vectorizer_logistic/model.onnx" --export_popef "$TMP/dv.popef"
run 0 -i "$TMP/dv.popef" --show
has out "input X: map(string, float)"

echo "$checks checks, $failures failures"
[ "$failures" -eq 0 ]
