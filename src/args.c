/* poprt: the command line. The options follow Graphcore PopRT's CLI, all of
 * them taken: implemented where they mean something on a CPU, accepted with
 * one warning where they steer only the IPU. */
#include <ctype.h>
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

/* Options of the reference CLI that steer the IPU only: accepted (so that
 * a PopRT script goes on) with one warning saying why they do nothing on a
 * CPU. args: 0 a flag, 1 one value, 2 KEY=VAL words. */
static const struct ipu_only {
    const char *name;
    int args;
    const char *why;
} ipu_only_options[] = {
    {"ipu_version", 1, "it selects the IPU generation; libpoprt runs on this CPU and picks its "
                       "kernels (AVX2, AVX-512) when the session is created"},
    {"num_io_tiles", 1, "IPU tiles reserved for input/output (OverlapIO); a CPU has no tiles and "
                        "reads inputs in place"},
    {"available_memory_proportion", 1, "it budgets IPU tile memory for MatMul/Conv/Gemm "
                                       "temporaries; on a CPU the memory plan sizes the arena"},
    {"optimize_internal_exchange_code", 0, "a CPU has no IPU exchange code"},
    {"fold_periodic_initializer", 0, "it saves IPU always-live memory; on a CPU initializers "
                                     "stay in the mapped model file"},
    {"perf_tuner", 0, "PopRT does not implement it either"},
    {"popart_options", 2, "these are PopART (IPU runtime) session options; libpoprt's session "
                          "options are --threads, --batches_per_step and the API's "
                          "poprt_options_set"},
    {"compiler_options", 2, "these are PopRT's IPU compiler options; libpoprt's compiler takes "
                            "its options through the API's poprt_options_set"},
    {"enable_compress_pattern", 0, "it replaces Compress with the IPU's MaskCompress op (IPU "
                                   "programs need static shapes); libpoprt runs Compress itself "
                                   "with its data-dependent output shape"},
    {"enable_merge_if", 0, "merging If nodes that share a condition saves IPU control-flow "
                           "programs; on a CPU an If costs one branch dispatch and libpoprt has "
                           "no such pass"},
};

/* Flags: the cli field each sets. */
static const struct {
    const char *name;
    size_t offset;
} flag_options[] = {
    {"help", offsetof(cli, help)},
    {"version", offsetof(cli, version)},
    {"show", offsetof(cli, show)},
    {"list_all_passes", offsetof(cli, list_passes)},
    {"run", offsetof(cli, run)},
    {"check", offsetof(cli, check)},
    {"profile", offsetof(cli, profile)},
    {"precision_compare", offsetof(cli, precision_compare)},
    {"serve_bench", offsetof(cli, serve_bench)},
    {"enable_8bits_io", offsetof(cli, enable_8bits_io)},
    {"enable_erf_gelu", offsetof(cli, enable_erf_gelu)},
    {"disable_fast_norm", offsetof(cli, disable_fast_norm)},
    {"infer_shape_ahead", offsetof(cli, infer_shape_ahead)},
    {"only_manual_sharding", offsetof(cli, only_manual_sharding)},
    {"enable_insert_remap", offsetof(cli, enable_insert_remap)},
    {"disable_compilation_progress_bar", offsetof(cli, no_progress_bar)},
    {"calibrate", offsetof(cli, calibrate)},
    {"keep_fp32_patterns", offsetof(cli, keep_fp32_patterns)},
    {"int8_reduce_range", offsetof(cli, int8_reduce_range)},
};

/* Options that take a value (export_popef's is optional). */
static const char *const valued_options[] = {
    "input_model", "output_dir", "output_model", "export_popef", "custom_library_so_paths",
    "passes",  "skip_passes",
    "input_shape", "batch_size", "batch_axis",   "iters",         "threads",
    "batches_per_step", "logging_level", "precision", "framework",
    "convert_version", "remove_outputs", "checkpoints", "fp16_skip_op_types",
    "fp8_skip_op_names", "fp8_params", "calibration_loss_type", "calibration_data",
    "input_data", "output_data", "compare", "compare_rtol", "compare_atol", "fill",
    "num_of_layers_keep_fp16", "fp8_target_cosine", "bf16_target_cosine", "manual_sharding_config", "merge_matmul",
    "merge_matmul_add", "merge_moe", "serialize_matmul", "serialize_matmul_add",
    "serve_rate", "serve_seconds", "serve_concurrency", "runner_options",
    "max_tensor_size", "remap_mode", "pack_args", "print_completion",
    "config_yaml", "custom_pass_config", "custom_shape_inference", "data_preprocess",
    /* pictures and profiles */
    "dot", "profile_output",
};

void cli_each_option(void (*fn)(const char *name, int takes_value, void *user), void *user) {
    for (size_t k = 0; k < sizeof flag_options / sizeof *flag_options; k++)
        fn(flag_options[k].name, 0, user);
    for (size_t k = 0; k < sizeof valued_options / sizeof *valued_options; k++)
        fn(valued_options[k], 1, user);
    for (size_t k = 0; k < sizeof ipu_only_options / sizeof *ipu_only_options; k++)
        fn(ipu_only_options[k].name, ipu_only_options[k].args != 0, user);
}

void cli_usage(FILE *f) {
    fprintf(f,
            "usage: poprt [-h] [-v] [-i INPUT_MODEL] [--output_dir OUTPUT_DIR]\n"
            "             [--output_model OUTPUT_MODEL] [--show] [--list_all_passes]\n"
            "             [--passes PASSES] [--skip_passes SKIP_PASSES]\n"
            "             [--input_shape NAME=D1,D2,... [NAME=D1,D2,... ...]]\n"
            "             [--batch_size BATCH_SIZE] [--batch_axis BATCH_AXIS]\n"
            "             [--convert_version CONVERT_VERSION]\n"
            "             [--precision {fp32,fp16,fp8,fp8_weight,int8,int8_static,bf16}] [--fp16_skip_op_types TYPES]\n"
            "             [--keep_fp32_patterns] [--int8_reduce_range]\n"
            "             [--fp8_skip_op_names NAMES] [--fp8_params FP8_PARAMS]\n"
            "             [--calibration_loss_type {mse,mae,snr,kld,cos_dist,gptq}]\n"
            "             [--calibration_data DIR] [--data_preprocess DIR] [--calibrate]\n"
            "             [--num_of_layers_keep_fp16 N] [--fp8_target_cosine C] [--bf16_target_cosine C]\n"
            "             [--precision_compare]\n"
            "             [--remove_outputs NAMES] [--checkpoints NAMES]\n"
            "             [--merge_matmul NAMES] [--merge_matmul_add NAMES] [--merge_moe NAMES]\n"
            "             [--serialize_matmul KEY=VAL [KEY=VAL ...]]\n"
            "             [--serialize_matmul_add KEY=VAL [KEY=VAL ...]]\n"
            "             [--manual_sharding_config CONFIG] [--only_manual_sharding]\n"
            "             [--enable_8bits_io] [--enable_erf_gelu] [--disable_fast_norm]\n"
            "             [--infer_shape_ahead] [--max_tensor_size BYTES]\n"
            "             [--pack_args KEY=VAL [KEY=VAL ...]]\n"
            "             [--enable_insert_remap] [--remap_mode MODE]\n"
            "             [--disable_compilation_progress_bar]\n"
            "             [--print_completion {bash,zsh,fish}]\n"
            "             [--export_popef [POPEF]] [--custom_library_so_paths PLUGIN]\n"
            "             [--custom_pass_config PLUGIN] [--custom_shape_inference PLUGINS]\n"
            "             [--config_yaml CONFIG_YAML]\n"
            "             [--framework {onnx}] [--check] [--run] [--profile]\n"
            "             [--profile_output FILE] [--dot FILE]\n"
            "             [--iters ITERS] [--threads THREADS]\n"
            "             [--input_data PATH] [--output_data PATH] [--compare PATH]\n"
            "             [--compare_rtol RTOL] [--compare_atol ATOL] [--fill NAME=VALUE]\n"
            "             [--serve_bench] [--serve_rate RATE] [--serve_seconds SECONDS]\n"
            "             [--serve_concurrency N] [--runner_options KEY=VAL,...]\n"
            "             [--batches_per_step BATCHES_PER_STEP]\n"
            "             [--logging_level {DEBUG,INFO,WARNING,ERROR,CRITICAL}]\n");
}

void cli_help(void) {
    cli_usage(stdout);
    printf(
        "\n"
        "poprt is a tool to help quickly deploy ONNX models on CPUs with libpoprt.\n"
        "\n"
        "Named arguments:\n"
        "  -h, --help            show this help message and exit\n"
        "  -v, --version         show the version of poprt and libpoprt and exit\n"
        "  -i INPUT_MODEL, --input_model INPUT_MODEL\n"
        "                        Set the path of the original ONNX model.\n"
        "  --output_dir OUTPUT_DIR\n"
        "                        Set the output directory where the converted model\n"
        "                        files are saved. Default current directory.\n"
        "  --export_popef [POPEF]\n"
        "                        Compile the converted model and write it as an executable\n"
        "                        file: without POPEF (as PopRT) OUTPUT_DIR/executable.popef,\n"
        "                        beside the converted model; with POPEF that path (and the\n"
        "                        converted model only when --output_dir/--output_model is\n"
        "                        given). -i FILE.popef shows (--show) or runs (--run) one.\n"
        "  --custom_library_so_paths PLUGIN\n"
        "                        Paths of the custom shared library with custom ops/passes\n"
        "                        (repeat the option for several; see docs/plugins.md).\n"
        "  --custom_pass_config CUSTOM_PASS_CONFIG\n"
        "                        A plugin adding passes: a shared object exporting\n"
        "                        poprt_plugin_init (PopRT's is a Python file) or a text\n"
        "                        file listing such objects. Its passes are listed by\n"
        "                        --list_all_passes and run by --passes.\n"
        "  --custom_shape_inference CUSTOM_SHAPE_INFERENCE\n"
        "                        Comma-separated plugins (as above) registering custom\n"
        "                        operators' shape functions, which shape inference and\n"
        "                        every pass use; an operator registered without a\n"
        "                        compute callback converts but cannot run.\n"
        "  --config_yaml CONFIG_YAML\n"
        "                        Read options from a YAML mapping of long option names\n"
        "                        to values (lists, and NAME: VALUE maps for the KEY=VAL\n"
        "                        options); options on the command line replace the\n"
        "                        file's. See docs/cli.md.\n"
        "  --output_model OUTPUT_MODEL\n"
        "                        Set the name of the converted ONNX model. This will be\n"
        "                        placed in the --output_dir directory (an absolute\n"
        "                        path is used as given). Default:\n"
        "                        <input name>.optimized.onnx.\n"
        "  --show                Show the input and output information of the model,\n"
        "                        its nodes per op type and its parameter bytes.\n"
        "  --dot FILE            (libpoprt) Write the converted graph as Graphviz DOT:\n"
        "                        nodes with their op types (and the nodes a pass fused\n"
        "                        into them), edges with tensor types and shapes.\n"
        "                        Render with: dot -Tsvg FILE -o graph.svg.\n"
        "  --list_all_passes     List all passes. Refer to --passes.\n"
        "  --passes PASSES       Set the passes to be used during conversion, for\n"
        "                        example: --passes \"pre_scale,fuse_attention\". Refer to\n"
        "                        --list_all_passes which is able to show all available\n"
        "                        passes. Default: the default passes the library has.\n"
        "  --skip_passes SKIP_PASSES\n"
        "                        Comma-separated passes not to run.\n"
        "  --input_shape NAME=D1,D2,... [NAME=D1,D2,... ...]\n"
        "                        Set the input shape of the model. If the model input\n"
        "                        is variable, we recommend setting the model input\n"
        "                        shape. For example: --input_shape input_ids=1,512\n"
        "                        attention_mask=1,512. May be repeated.\n"
        "  --batch_size BATCH_SIZE\n"
        "                        Set the batch size for all inputs. Works with the\n"
        "                        batch_axis parameter.\n"
        "  --batch_axis BATCH_AXIS\n"
        "                        Specify the batch axis for all inputs. Works with the\n"
        "                        batch_size parameter. Default: 0.\n"
        "  --convert_version CONVERT_VERSION\n"
        "                        Convert the opset version of the ONNX model to\n"
        "                        CONVERT_VERSION (7..27). Default 11; by default a model\n"
        "                        that cannot be converted keeps its opset.\n"
        "  --precision {fp32,fp16,fp8,fp8_weight,int8,int8_static,bf16}\n"
        "                        Quantize the model to the specified precision.\n"
        "                        Default fp32. int8: dynamic quantization of MatMul,\n"
        "                        Gemm and Conv as ONNX Runtime's quantize_dynamic\n"
        "                        writes it (pass float_to_int8). int8_static: QDQ\n"
        "                        static quantization, activation ranges calibrated on\n"
        "                        --calibration_data (pass float_to_int8_static).\n"
        "                        bf16: the model file\n"
        "                        stays float32; the sessions this command makes\n"
        "                        (--run, --export, --serve_bench, ...) multiply in\n"
        "                        bfloat16 (option matmul_precision) where the CPU can.\n"
        "  --fp16_skip_op_types FP16_SKIP_OP_TYPES\n"
        "                        Comma-separated op types kept in float32 with fp16.\n"
        "  --keep_fp32_patterns  Keep overflow-prone nodes in float32 with fp16:\n"
        "                        libpoprt's float_to_half always does (nodes whose\n"
        "                        values exceed max_abs on sample data). Warned without\n"
        "                        --precision fp16.\n"
        "  --int8_reduce_range   With int8 or int8_static: weights quantized to 7 bits\n"
        "                        ([-63, 63] per channel, ONNX Runtime's reduce_range):\n"
        "                        a little coarser, and multiplied exactly at twice the\n"
        "                        rate on CPUs without VNNI. Warned with another\n"
        "                        precision.\n"
        "  --fp8_skip_op_names FP8_SKIP_OP_NAMES\n"
        "                        Comma-separated node names kept in higher precision\n"
        "                        with fp8, for example \"Conv_1,Conv_2\".\n"
        "  --fp8_params FP8_PARAMS\n"
        "                        input_format,weight_format,input_scale,weight_scale.\n"
        "                        Default \"F143,F143,-1,-1\".\n"
        "  --calibration_loss_type {mse,mae,snr,kld,cos_dist,gptq}\n"
        "                        Calibration method for fp8 (gptq: fp8_weight only).\n"
        "                        Default kld.\n"
        "  --calibration_data DIR\n"
        "                        Samples for fp8 calibration and the fp16 overflow\n"
        "                        check: folders of input_K.pb (docs/calibration.md),\n"
        "                        or an .npz / a folder of NAME.npy (one sample), a\n"
        "                        folder of .npz files or of such folders (one sample\n"
        "                        each). Default: random inputs.\n"
        "  --data_preprocess DATA_PREPROCESS\n"
        "                        PopRT's calibration data (a pickle there): here a\n"
        "                        calibration folder, as --calibration_data; a pickle\n"
        "                        is refused (only Python reads one).\n"
        "  --calibrate           Calibrate the fp8 scales on the samples of\n"
        "                        --calibration_data or --data_preprocess, which it\n"
        "                        requires (without it fp8 falls back to random inputs,\n"
        "                        with a warning). Warned without --precision fp8.\n"
        "  --num_of_layers_keep_fp16 NUM_OF_LAYERS_KEEP_FP16\n"
        "                        Layers whose fp8 error moves the outputs most, kept in\n"
        "                        fp16. Default 0.\n"
        "  --fp8_target_cosine FP8_TARGET_COSINE\n"
        "                        (libpoprt) Keep in fp16 the fewest layers with which\n"
        "                        every calibration sample's outputs keep this cosine\n"
        "                        similarity to fp32's. Default: off.\n"
        "  --bf16_target_cosine BF16_TARGET_COSINE\n"
        "                        (libpoprt) With --precision bf16: keep float32 products\n"
        "                        in the fewest Conv/MatMul/Gemm nodes with which every\n"
        "                        calibration sample's outputs keep this cosine\n"
        "                        similarity to fp32's (pass bf16_fallback; samples from\n"
        "                        --calibration_data). Default: off.\n"
        "  --precision_compare   Report the per-layer precision of Conv/MatMul/Gemm\n"
        "                        between the original and the converted model (fp8): a\n"
        "                        table on stdout, also written to OUTPUT_DIR/\n"
        "                        precision_compare.txt and .csv. Samples:\n"
        "                        --calibration_data, else --input_data, else random.\n"
        "  --remove_outputs REMOVE_OUTPUTS\n"
        "                        Remove these comma-separated outputs and the nodes only\n"
        "                        they need.\n"
        "  --checkpoints CHECKPOINTS\n"
        "                        Add these comma-separated intermediate tensors to the\n"
        "                        outputs (to debug precision).\n"
        "  --merge_matmul MERGE_MATMUL\n"
        "                        Merge MatMuls sharing an input: MatMul_1,MatMul_2.\n"
        "  --merge_matmul_add MERGE_MATMUL_ADD\n"
        "                        Merge MatMul/Add pairs: MatMul_1,Add_1,MatMul_2,Add_2.\n"
        "  --merge_moe MERGE_MOE\n"
        "                        Merge Mixture-of-Experts experts named by their first\n"
        "                        and last nodes: MatMul_1,Add_1,MatMul_2,Add_2.\n"
        "  --serialize_matmul KEY=VAL [KEY=VAL ...]\n"
        "                        OP_NAME=FACTOR[/MODE[/KEEP_PRECISION]], MODE one of\n"
        "                        input_channels, output_channels (default),\n"
        "                        reducing_dim, none.\n"
        "  --serialize_matmul_add KEY=VAL [KEY=VAL ...]\n"
        "                        MATMUL_NAME/ADD_NAME=FACTOR.\n"
        "  --manual_sharding_config MANUAL_SHARDING_CONFIG\n"
        "                        Sharding and pipelining config file (annotates nodes).\n"
        "  --only_manual_sharding\n"
        "                        Only annotate the model with --manual_sharding_config\n"
        "                        (no other pass runs).\n"
        "  --enable_8bits_io     Image inputs (rank-4 float) become uint8 with a Cast in\n"
        "                        the model (pass eight_bits_io): a quarter of the input\n"
        "                        bytes.\n"
        "  --enable_erf_gelu     Replace Erf Gelu patterns with Gelu (pass\n"
        "                        erf_gelu_pattern; among the default passes already).\n"
        "  --disable_fast_norm   Do not replace norms by FastNorm (skips\n"
        "                        replace_groupnorm_with_fast_norm).\n"
        "  --infer_shape_ahead   Infer shapes (with --input_shape's) before every other\n"
        "                        pass.\n"
        "  --max_tensor_size BYTES\n"
        "                        Largest tensor constant folding may create; -1: no\n"
        "                        limit (the default).\n"
        "  --pack_args KEY=VAL [KEY=VAL ...]\n"
        "                        Run packed_transformer with these arguments\n"
        "                        (max_valid_num=N, segment_max_size, ...): attention\n"
        "                        computed over each sequence's valid tokens only.\n"
        "  --enable_insert_remap, --remap_mode MODE\n"
        "                        IPU tile remapping: no effect on a CPU (warned);\n"
        "                        MODE (before_|after_<op>) is checked.\n"
        "  --disable_compilation_progress_bar\n"
        "                        Show no progress bar. Without it, jobs longer than a\n"
        "                        second (passes, fp8 calibration, compiling, --run's\n"
        "                        runs, --serve_bench) draw one on stderr when it is a\n"
        "                        terminal.\n"
        "  --print_completion {bash,zsh,fish}\n"
        "                        Print a shell completion script, e.g.\n"
        "                        eval \"$(poprt --print_completion bash)\".\n"
        "  --framework {onnx}    Specify frontend to load input model. Default: onnx.\n"
        "  --check               Compare the converted model with the original on\n"
        "                        made-up data (or --input_data), then run it once.\n"
        "  --run                 Run the converted model with random data (or\n"
        "                        --input_data, --fill): prints each output's shape,\n"
        "                        dtype and values, and the median latency.\n"
        "  --iters ITERS         Timed runs for --run, after one warm-up run. Default 10.\n"
        "  --profile             (libpoprt) With --run or --check: time each node, write\n"
        "                        a Chrome trace (open in ui.perfetto.dev or\n"
        "                        chrome://tracing: one slice per node and run, with op\n"
        "                        type, shapes, kernel and thread, and the compile steps)\n"
        "                        and log the totals per operator type at INFO (per node\n"
        "                        at DEBUG).\n"
        "  --profile_output FILE (libpoprt) Where --profile writes the trace (implies\n"
        "                        --profile). Default OUTPUT_DIR/profile.json.\n"
        "  --threads THREADS     Worker threads per run. Default 1.\n");
    cli_data_help();
    printf(
        "  --serve_bench         (libpoprt) Serve the converted model with a runner\n"
        "                        (docs/runtime.md) under a load of one-row requests with\n"
        "                        random inputs; print throughput, latency p50/p90/p99 and\n"
        "                        the runner's statistics. --threads sets its\n"
        "                        cores_per_replica.\n"
        "  --serve_rate RATE     Requests a second arriving at Poisson times (an open\n"
        "                        loop); 0: a closed loop of --serve_concurrency\n"
        "                        requests in flight. Default 0.\n"
        "  --serve_seconds SECONDS\n"
        "                        How long the load lasts. Default 5.\n"
        "  --serve_concurrency N\n"
        "                        Requests in flight in the closed loop. Default 16.\n"
        "  --runner_options KEY=VAL,...\n"
        "                        Runner options: replicas, cores_per_replica, max_batch,\n"
        "                        batch_timeout_us, batch_sizes, queue_size, ... (see\n"
        "                        poprt_runner_create in poprt.h).\n"
        "  --batches_per_step BATCHES_PER_STEP\n"
        "                        Set the number of mini-batches to perform on the\n"
        "                        device before returning to the host. Default: 1.\n"
        "  --logging_level {DEBUG,INFO,WARNING,ERROR,CRITICAL}\n"
        "                        Set the logging level. Default WARNING.\n");
    /* PopRT's IPU-only options: in the list (so that the manual page has
     * them), each with why it does nothing here */
    for (size_t i = 0; i < sizeof ipu_only_options / sizeof *ipu_only_options; i++) {
        const char *name = ipu_only_options[i].name;
        char head[120];
        int len = snprintf(head, sizeof head, "  --%s", name);
        if (ipu_only_options[i].args == 2) {
            strcat(head, " KEY=VAL [KEY=VAL ...]");
        } else if (!strcmp(name, "ipu_version")) {
            strcat(head, " {ipu2,ipu21}");
        } else if (ipu_only_options[i].args == 1) { /* --num_io_tiles NUM_IO_TILES */
            head[len++] = ' ';
            for (size_t k = 0; name[k]; k++)
                head[len++] = (char)toupper((unsigned char)name[k]);
            head[len] = 0;
        }
        /* the description from column 24, on the option's line when it fits */
        int col = 24;
        if (strlen(head) <= 22)
            printf("%-24s", head);
        else
            printf("%s\n%24s", head, "");
        char why[400];
        snprintf(why, sizeof why, "No effect on a CPU (one warning): %s.", ipu_only_options[i].why);
        for (char *save = NULL, *w = strtok_r(why, " ", &save); w; w = strtok_r(NULL, " ", &save)) {
            if (col > 24 && col + 1 + (int)strlen(w) > 78) {
                printf("\n%24s", "");
                col = 24;
            }
            col += printf("%s%s", col > 24 ? " " : "", w);
        }
        printf("\n");
    }
    printf(
        "\n"
        "Without --show, --check or --run, -i converts the model: it runs the passes\n"
        "and saves the result to OUTPUT_DIR/OUTPUT_MODEL. With them it converts only\n"
        "when --output_dir or --output_model is given. The default passes are\n"
        "convert_version, then the registered ones of:\n"
        "  ");
    int col0 = 2;
    for (size_t i = 0; i < cli_num_default_passes; i++) {
        int w = (int)strlen(cli_default_passes[i]) + 2;
        if (col0 + w > 78) {
            printf("\n  ");
            col0 = 2;
        }
        printf("%s%s", cli_default_passes[i],
               i + 1 < cli_num_default_passes ? ", " : "");
        col0 += w;
    }
    printf("\n"
        "then the precision passes (float_to_half, float_to_fp8).\n"
        "\n"
        "Every option of PopRT's CLI is taken: implemented where it has a meaning on\n"
        "a CPU; those that steer only the IPU print one warning saying why they do\n"
        "nothing (listed above as such). PopRT's tf2onnx sub-command is refused:\n"
        "libpoprt reads ONNX only (convert with the tf2onnx Python package).\n");
}

/* ------------------------------------------------------------ arguments */

static int parse_i64(const char *s, int64_t *out) {
    char *end;
    if (!s || !*s)
        return 0;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || *end)
        return 0;
    *out = v;
    return 1;
}

/* "name=d1,d2,..." (an empty dim list gives a scalar). */
static int parse_shape(const char *arg, shape_arg *out) {
    const char *eq = strrchr(arg, '=');
    if (!eq || eq == arg)
        return 0;
    out->name = strndup(arg, (size_t)(eq - arg));
    if (!out->name)
        return 0;
    out->rank = 0;
    const char *p = eq + 1;
    while (*p) {
        char *end;
        errno = 0;
        long long v = strtoll(p, &end, 10);
        if (end == p || errno || v < 0 || out->rank >= 64 || (*end && *end != ','))
            return 0;
        out->dims[out->rank++] = v;
        p = *end ? end + 1 : end;
        if (*end == ',' && !*p)
            return 0;
    }
    return 1;
}

static const struct ipu_only *ipu_only(const char *name) {
    for (size_t i = 0; i < sizeof ipu_only_options / sizeof *ipu_only_options; i++)
        if (!strcmp(name, ipu_only_options[i].name))
            return &ipu_only_options[i];
    return NULL;
}

/* nargs='+' KEY=VAL words from val up to the next option, appended to *dst
 * joined by ','; *i advances over the words taken. */
static int key_val_words(const char *name, const char *val, int inline_val, int argc, char **argv,
                         int *i, char **dst) {
    for (;;) {
        if (!strchr(val, '=')) {
            cli_errmsg("argument --%s: invalid value '%s' (expected KEY=VAL)", name, val);
            return EXIT_USAGE;
        }
        size_t old = *dst ? strlen(*dst) : 0;
        char *s2 = realloc(*dst, old + strlen(val) + 2);
        if (!s2) {
            cli_errmsg("out of memory");
            return EXIT_FAILURE;
        }
        if (old)
            s2[old++] = ',';
        strcpy(s2 + old, val);
        *dst = s2;
        if (inline_val || *i + 1 >= argc || argv[*i + 1][0] == '-' || !strchr(argv[*i + 1], '='))
            return 0;
        val = argv[++*i];
    }
}

int cli_option_word(const char *arg, char name[128], const char **inline_val) {
    *inline_val = NULL;
    if (!strcmp(arg, "-h")) {
        strcpy(name, "help");
    } else if (!strcmp(arg, "-v")) {
        strcpy(name, "version");
    } else if (!strncmp(arg, "-i", 2)) {
        strcpy(name, "input_model");
        *inline_val = arg[2] ? arg + 2 : NULL;
    } else if (!strncmp(arg, "--", 2) && arg[2]) {
        const char *eq = strchr(arg + 2, '=');
        size_t n = eq ? (size_t)(eq - arg - 2) : strlen(arg + 2);
        if (n >= 128)
            return 0;
        memcpy(name, arg + 2, n);
        name[n] = 0;
        *inline_val = eq ? eq + 1 : NULL;
    } else {
        return 0;
    }
    return 1;
}

int cli_option_kind(const char *name) {
    for (size_t k = 0; k < sizeof flag_options / sizeof *flag_options; k++)
        if (!strcmp(name, flag_options[k].name))
            return CLI_OPT_FLAG;
    const struct ipu_only *ipu = ipu_only(name);
    if (ipu)
        return ipu->args == 0 ? CLI_OPT_FLAG : ipu->args == 1 ? CLI_OPT_VALUE : CLI_OPT_KEYVAL;
    if (!strcmp(name, "export_popef"))
        return CLI_OPT_FLAG_OR_VALUE;
    if (!strcmp(name, "custom_library_so_paths"))
        return CLI_OPT_LIST;
    if (!strcmp(name, "input_shape") || !strcmp(name, "pack_args") ||
        !strncmp(name, "serialize_matmul", 16))
        return CLI_OPT_KEYVAL;
    for (size_t k = 0; k < sizeof valued_options / sizeof *valued_options; k++)
        if (!strcmp(name, valued_options[k]))
            return CLI_OPT_VALUE;
    return CLI_OPT_UNKNOWN;
}

/* Returns 0 on success, EXIT_USAGE after printing the error. */
int cli_parse_args(int argc, char **argv, cli *c) {
    if (argc > 1 && !strcmp(argv[1], "tf2onnx")) {
        cli_errmsg("the tf2onnx sub-command converts TensorFlow models, which libpoprt does not "
                   "read: convert with the tf2onnx Python package (python3 -m tf2onnx.convert) "
                   "and give the .onnx file to -i");
        return EXIT_USAGE;
    }
    /* --config_yaml first: its values are the defaults the command line's
     * own options replace */
    const char *config = NULL;
    for (int i = 1; i < argc; i++) {
        char name[128];
        const char *inline_val;
        if (cli_option_word(argv[i], name, &inline_val) && !strcmp(name, "config_yaml"))
            config = inline_val ? inline_val : i + 1 < argc ? argv[i + 1] : NULL;
    }
    int rc = config ? cli_config_load(config, argc, argv, c) : 0;
    return rc ? rc : cli_parse_words(argc, argv, c);
}

int cli_parse_words(int argc, char **argv, cli *c) {
    for (int i = 1; i < argc; i++) {
        char *arg = argv[i];
        char name[128];
        const char *inline_val = NULL;
        if (!cli_option_word(arg, name, &inline_val)) {
            if (strncmp(arg, "--", 2) || !arg[2])
                cli_usage(stderr);
            cli_errmsg("unrecognized arguments: %s", arg);
            return EXIT_USAGE;
        }

        /* flags */
        int *flag = NULL;
        for (size_t k = 0; k < sizeof flag_options / sizeof *flag_options && !flag; k++)
            if (!strcmp(name, flag_options[k].name))
                flag = (int *)((char *)c + flag_options[k].offset);
        if (flag) {
            if (inline_val) {
                cli_errmsg("argument --%s: ignored explicit argument '%s'", name, inline_val);
                return EXIT_USAGE;
            }
            *flag = 1;
            continue;
        }
        const struct ipu_only *ipu = ipu_only(name);
        if (ipu) {
            if (ipu->args == 0 && inline_val) {
                cli_errmsg("argument --%s: ignored explicit argument '%s'", name, inline_val);
                return EXIT_USAGE;
            }
            const char *v = inline_val;
            if (ipu->args && !v) {
                if (i + 1 >= argc || (argv[i + 1][0] == '-' && argv[i + 1][1] &&
                                      !(argv[i + 1][1] >= '0' && argv[i + 1][1] <= '9'))) {
                    cli_errmsg("argument --%s: expected %s", name,
                               ipu->args == 2 ? "at least one argument" : "one argument");
                    return EXIT_USAGE;
                }
                v = argv[++i];
            }
            if (!strcmp(name, "ipu_version") && strcmp(v, "ipu2") && strcmp(v, "ipu21")) {
                cli_errmsg("argument --ipu_version: invalid choice: '%s' (choose from 'ipu2', "
                           "'ipu21')",
                           v);
                return EXIT_USAGE;
            }
            char *ignored = NULL;
            if (ipu->args == 2) {
                int rc = key_val_words(name, v, inline_val != NULL, argc, argv, &i, &ignored);
                if (rc)
                    return rc;
            }
            fprintf(stderr, "%s: warning: --%s%s%s has no effect on a CPU: %s\n", CLI_PROG, name,
                    ignored ? " " : "", ignored ? ignored : "", ipu->why);
            free(ignored);
            continue;
        }

        /* PopRT's --export_popef is a flag (the file goes into --output_dir);
         * libpoprt's form with a path stays: a following word that is not
         * an option is the path */
        if (!strcmp(name, "export_popef") && !inline_val &&
            (i + 1 >= argc || argv[i + 1][0] == '-')) {
            c->export_popef_in_dir = 1;
            continue;
        }
        int known = 0;
        for (size_t k = 0; k < sizeof valued_options / sizeof *valued_options; k++)
            known |= !strcmp(name, valued_options[k]);
        if (!known) {
            cli_usage(stderr);
            cli_errmsg("unrecognized arguments: %s", arg);
            return EXIT_USAGE;
        }
        const char *val = inline_val;
        if (!val) {
            if (i + 1 >= argc || (argv[i + 1][0] == '-' && argv[i + 1][1] != 0 &&
                                  !(argv[i + 1][1] >= '0' && argv[i + 1][1] <= '9'))) {
                cli_errmsg("argument --%s: expected %s", name,
                           !strcmp(name, "input_shape") ? "at least one argument" : "one argument");
                return EXIT_USAGE;
            }
            val = argv[++i];
        }

        int data_rc;
        if (cli_data_arg(c, name, val, &data_rc)) { /* inputs.c's options */
            if (data_rc)
                return data_rc;
        } else if (!strcmp(name, "input_model")) {
            c->input_model = val;
        } else if (!strcmp(name, "output_dir")) {
            c->output_dir = val;
        } else if (!strcmp(name, "output_model")) {
            c->output_model = val;
        } else if (!strcmp(name, "export_popef")) {
            c->export_popef = val;
        } else if (!strcmp(name, "custom_library_so_paths")) {
            if (c->n_plugins == 16) {
                cli_errmsg("argument --custom_library_so_paths: at most 16 plugins");
                return EXIT_USAGE;
            }
            c->plugins[c->n_plugins++] = val;
        } else if (!strcmp(name, "passes")) {
            c->passes = val;
        } else if (!strcmp(name, "skip_passes")) {
            c->skip_passes = val;
        } else if (!strcmp(name, "input_shape")) {
            /* argparse's nargs='+': NAME=DIMS words up to the next option. */
            for (;;) {
                shape_arg *s = realloc(c->shapes, (c->n_shapes + 1) * sizeof *s);
                if (!s) {
                    cli_errmsg("out of memory");
                    return EXIT_FAILURE;
                }
                c->shapes = s;
                memset(&s[c->n_shapes], 0, sizeof *s);
                if (!parse_shape(val, &s[c->n_shapes])) {
                    free(s[c->n_shapes].name);
                    cli_errmsg(
                        "argument --input_shape: invalid value '%s' (expected NAME=D1,D2,...)",
                        val);
                    return EXIT_USAGE;
                }
                c->n_shapes++;
                if (inline_val || i + 1 >= argc || argv[i + 1][0] == '-' ||
                    !strchr(argv[i + 1], '='))
                    break;
                val = argv[++i];
            }
        } else if (!strcmp(name, "batch_size") || !strcmp(name, "batch_axis") ||
                   !strcmp(name, "iters")) {
            int64_t v;
            int64_t min = !strcmp(name, "batch_axis") ? 0 : 1;
            if (!parse_i64(val, &v) || v < min) {
                cli_errmsg("argument --%s: invalid value '%s' (expected an integer >= %lld)", name,
                           val, (long long)min);
                return EXIT_USAGE;
            }
            if (name[0] == 'i')
                c->iters = v;
            else if (!strcmp(name, "batch_size"))
                c->batch_size = v;
            else
                c->batch_axis = v;
        } else if (!strcmp(name, "threads") || !strcmp(name, "batches_per_step")) {
            int64_t v;
            if (!parse_i64(val, &v) || v < 1) {
                cli_errmsg("argument --%s: invalid value '%s' (expected an integer >= 1)", name,
                           val);
                return EXIT_USAGE;
            }
            if (name[0] == 't')
                c->threads = val;
            else
                c->batches_per_step = val;
        } else if (!strcmp(name, "logging_level")) {
            if (poprt_log_level_parse(val, &c->log_level) != POPRT_OK) {
                cli_errmsg("argument --logging_level: invalid choice: '%s' (choose from 'DEBUG', "
                           "'INFO', 'WARNING', 'ERROR', 'CRITICAL')",
                           val);
                return EXIT_USAGE;
            }
        } else if (!strcmp(name, "precision")) {
            if (strcmp(val, "fp32") && strcmp(val, "fp16") && strcmp(val, "fp8") &&
                strcmp(val, "fp8_weight") && strcmp(val, "int8") && strcmp(val, "int8_static") &&
                strcmp(val, "bf16")) {
                cli_errmsg("argument --precision: invalid choice: '%s' (choose from 'fp32', "
                           "'fp16', 'fp8', 'fp8_weight', 'int8', 'int8_static', 'bf16')",
                           val);
                return EXIT_USAGE;
            }
            c->precision = val;
        } else if (!strcmp(name, "convert_version") || !strcmp(name, "num_of_layers_keep_fp16")) {
            int64_t v;
            int cv = name[0] == 'c';
            if (!parse_i64(val, &v) || v < (cv ? 1 : 0)) {
                cli_errmsg("argument --%s: invalid value '%s' (expected an integer >= %d)", name,
                           val, cv ? 1 : 0);
                return EXIT_USAGE;
            }
            *(cv ? &c->convert_version : &c->num_of_layers_keep_fp16) = val;
        } else if (!strcmp(name, "calibration_loss_type")) {
            static const char *const losses[] = {"mse", "mae", "snr", "kld", "cos_dist", "gptq"};
            int ok = 0;
            for (size_t k = 0; k < sizeof losses / sizeof *losses; k++)
                ok |= !strcmp(val, losses[k]);
            if (!ok) {
                cli_errmsg("argument --calibration_loss_type: invalid choice: '%s' (choose from "
                           "'mse', 'mae', 'snr', 'kld', 'cos_dist', 'gptq')",
                           val);
                return EXIT_USAGE;
            }
            c->calibration_loss_type = val;
        } else if (!strcmp(name, "serialize_matmul") || !strcmp(name, "serialize_matmul_add") ||
                   !strcmp(name, "pack_args")) {
            /* nargs='+': KEY=VAL words up to the next option */
            char **dst = name[0] == 'p'  ? &c->pack_args
                         : name[16]      ? &c->serialize_matmul_add
                                         : &c->serialize_matmul;
            int rc = key_val_words(name, val, inline_val != NULL, argc, argv, &i, dst);
            if (rc)
                return rc;
        } else if (!strcmp(name, "max_tensor_size")) {
            int64_t v;
            if (!parse_i64(val, &v) || v < -1) {
                cli_errmsg("argument --max_tensor_size: invalid value '%s' (expected bytes, or -1 "
                           "for no limit)",
                           val);
                return EXIT_USAGE;
            }
            c->max_tensor_size = val;
        } else if (!strcmp(name, "remap_mode")) {
            c->remap_mode = val;
        } else if (!strcmp(name, "print_completion")) {
            if (strcmp(val, "bash") && strcmp(val, "zsh") && strcmp(val, "fish")) {
                cli_errmsg("argument --print_completion: invalid choice: '%s' (choose from "
                           "'bash', 'zsh', 'fish')",
                           val);
                return EXIT_USAGE;
            }
            c->print_completion = val;
        } else if (!strcmp(name, "remove_outputs")) {
            c->remove_outputs = val;
        } else if (!strcmp(name, "checkpoints")) {
            c->checkpoints = val;
        } else if (!strcmp(name, "fp16_skip_op_types")) {
            c->fp16_skip_op_types = val;
        } else if (!strcmp(name, "fp8_skip_op_names")) {
            c->fp8_skip_op_names = val;
        } else if (!strcmp(name, "fp8_params")) {
            c->fp8_params = val;
        } else if (!strcmp(name, "calibration_data")) {
            c->calibration_data = val;
        } else if (!strcmp(name, "fp8_target_cosine") || !strcmp(name, "bf16_target_cosine")) {
            char *end;
            double v = strtod(val, &end);
            if (end == val || *end || !(v > 0 && v <= 1)) {
                cli_errmsg("argument --%s: invalid value '%s' (expected a number in (0, 1])", name,
                           val);
                return EXIT_USAGE;
            }
            if (name[0] == 'f')
                c->fp8_target_cosine = val;
            else
                c->bf16_target_cosine = val;
        } else if (!strcmp(name, "serve_rate") || !strcmp(name, "serve_seconds")) {
            char *end;
            double v = strtod(val, &end);
            int rate = name[6] == 'r';
            if (end == val || *end || !(rate ? v >= 0 && v <= 1e7 : v > 0 && v <= 86400)) {
                cli_errmsg("argument --%s: invalid value '%s' (expected %s)", name, val,
                           rate ? "requests per second in [0, 1e7]"
                                : "seconds in (0, 86400]");
                return EXIT_USAGE;
            }
            *(rate ? &c->serve_rate : &c->serve_seconds) = v;
        } else if (!strcmp(name, "serve_concurrency")) {
            int64_t v;
            if (!parse_i64(val, &v) || v < 1 || v > 4096) {
                cli_errmsg("argument --serve_concurrency: invalid value '%s' (expected an integer "
                           "in 1..4096)",
                           val);
                return EXIT_USAGE;
            }
            c->serve_concurrency = (int)v;
        } else if (!strcmp(name, "runner_options")) {
            c->runner_options = val;
        } else if (!strcmp(name, "dot")) {
            c->dot = val;
        } else if (!strcmp(name, "profile_output")) {
            c->profile_output = val;
            c->profile = 1;
        } else if (!strcmp(name, "manual_sharding_config")) {
            c->manual_sharding_config = val;
        } else if (!strcmp(name, "merge_matmul")) {
            c->merge_matmul = val;
        } else if (!strcmp(name, "merge_matmul_add")) {
            c->merge_matmul_add = val;
        } else if (!strcmp(name, "merge_moe")) {
            c->merge_moe = val;
        } else if (!strcmp(name, "config_yaml")) {
            c->config_yaml = val;
        } else if (!strcmp(name, "custom_pass_config")) {
            c->custom_pass_config = val;
        } else if (!strcmp(name, "custom_shape_inference")) {
            c->custom_shape_inference = val;
        } else if (!strcmp(name, "data_preprocess")) {
            c->data_preprocess = val;
        } else if (!strcmp(name, "framework")) {
            if (strcmp(val, "onnx")) {
                cli_errmsg("option --framework %s is not supported yet (only onnx)", val);
                return EXIT_USAGE;
            }
        }
    }
    return 0;
}

void cli_args_free(cli *c) {
    for (size_t k = 0; k < c->n_shapes; k++)
        free(c->shapes[k].name);
    free(c->shapes);
    free(c->serialize_matmul);
    free(c->serialize_matmul_add);
    free(c->pack_args);
    for (size_t k = 0; k < c->n_owned; k++)
        free(c->owned[k]);
    free(c->owned);
}
