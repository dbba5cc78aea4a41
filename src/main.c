/* poprt: command-line tool for libpoprt, in the manner of Graphcore PopRT's
 * `poprt` CLI. It is a client of the public API (poprt/poprt.h) only.
 *
 * Exit status: 0 success, 1 a failure while doing the job (bad model file,
 * pass or run failure), 2 bad command-line usage. */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>

#include "poprt/poprt.h"

#define EXIT_USAGE 2

/* The default pipeline (without --passes), after convert_version: those of
 * these passes the library registers, in this order. A default pass that
 * fails is skipped (the model stays as it was before it) and reported. */
static const char *const default_passes[] = {
    "shape_inference",
    "eliminate_identity",       "eliminate_nop_cast",         "eliminate_nop_reshape",
    "eliminate_nop_transpose",  "eliminate_nop_expand",       "eliminate_nop_flatten",
    "eliminate_nop_pad",        "eliminate_nop_arithmetic",   "eliminate_nop_if",
    "fuse_consecutive_cast",    "fuse_consecutive_reshape",   "fuse_consecutive_transpose",
    "fuse_consecutive_squeeze", "fuse_consecutive_unsqueeze", "constant_folding",
    "fuse_bn_into_conv",        "fuse_bn_into_gemm",          "layer_norm_pattern",
    "erf_gelu_pattern",         "gelu_pattern",               "fused_attention",
    "eliminate_deadend",        "eliminate_unused_initializer",
    "eliminate_duplicate_initializer",
};

/* Options of the reference CLI that libpoprt does not implement yet: they
 * are rejected by name rather than ignored. */
static const char *const unsupported_options[] = {
    "available_memory_proportion", "calibrate", "compiler_options", "config_yaml",
    "custom_pass_config", "custom_shape_inference",
    "data_preprocess", "disable_compilation_progress_bar", "disable_fast_norm",
    "enable_8bits_io", "enable_compress_pattern", "enable_erf_gelu", "enable_insert_remap",
    "enable_merge_if", "fold_periodic_initializer", "infer_shape_ahead",
    "ipu_version", "keep_fp32_patterns", "max_tensor_size", "num_io_tiles",
    "only_manual_sharding", "optimize_internal_exchange_code", "pack_args", "perf_tuner",
    "popart_options", "print_completion", "remap_mode",
};

typedef struct shape_arg {
    char *name;
    int64_t dims[64];
    int rank;
} shape_arg;

typedef struct cli {
    const char *input_model;
    const char *output_dir;
    const char *output_model;
    const char *export_popef; /* write the compiled session here */
    const char *plugins[16];  /* --custom_library_so_paths, in order */
    int n_plugins;
    const char *passes;
    const char *skip_passes;
    shape_arg *shapes;
    size_t n_shapes;
    int64_t batch_size;  /* -1: not given */
    int64_t batch_axis;  /* -1: not given */
    int64_t iters;
    const char *threads;
    const char *batches_per_step;
    poprt_log_level log_level;
    int show, list_passes, run, check, version, help, precision_compare, profile;
    const char *convert_version; /* NULL: the default (11), applied only without --passes */
    const char *precision;       /* fp32, fp16, fp8, fp8_weight */
    const char *remove_outputs, *checkpoints, *fp16_skip_op_types, *fp8_skip_op_names;
    const char *fp8_params, *calibration_loss_type, *num_of_layers_keep_fp16;
    const char *fp8_target_cosine; /* libpoprt: layers kept in fp16 chosen by accuracy */
    const char *calibration_data; /* folder of samples for fp8 calibration */
    const char *manual_sharding_config, *merge_matmul, *merge_matmul_add, *merge_moe;
    char *serialize_matmul, *serialize_matmul_add; /* KEY=VAL words joined by ',' */
} cli;

static const char *prog = "poprt";

static void errmsg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void errmsg(const char *fmt, ...) {
    va_list ap;
    fprintf(stderr, "%s: error: ", prog);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

/* One line naming the failed call's status and the library's detail. */
static int fail(poprt_status st, const char *what) {
    const char *detail = poprt_last_error();
    if (detail && detail[0])
        errmsg("%s: %s: %s", what, poprt_status_string(st), detail);
    else
        errmsg("%s: %s", what, poprt_status_string(st));
    return EXIT_FAILURE;
}

static void usage(FILE *f) {
    fprintf(f,
            "usage: poprt [-h] [-v] [-i INPUT_MODEL] [--output_dir OUTPUT_DIR]\n"
            "             [--output_model OUTPUT_MODEL] [--show] [--list_all_passes]\n"
            "             [--passes PASSES] [--skip_passes SKIP_PASSES]\n"
            "             [--input_shape NAME=D1,D2,... [NAME=D1,D2,... ...]]\n"
            "             [--batch_size BATCH_SIZE] [--batch_axis BATCH_AXIS]\n"
            "             [--convert_version CONVERT_VERSION]\n"
            "             [--precision {fp32,fp16,fp8,fp8_weight}] [--fp16_skip_op_types TYPES]\n"
            "             [--fp8_skip_op_names NAMES] [--fp8_params FP8_PARAMS]\n"
            "             [--calibration_loss_type {mse,mae,snr,kld,cos_dist,gptq}]\n"
            "             [--calibration_data DIR]\n"
            "             [--num_of_layers_keep_fp16 N] [--fp8_target_cosine C]\n"
            "             [--precision_compare]\n"
            "             [--remove_outputs NAMES] [--checkpoints NAMES]\n"
            "             [--merge_matmul NAMES] [--merge_matmul_add NAMES] [--merge_moe NAMES]\n"
            "             [--serialize_matmul KEY=VAL [KEY=VAL ...]]\n"
            "             [--serialize_matmul_add KEY=VAL [KEY=VAL ...]]\n"
            "             [--manual_sharding_config CONFIG]\n"
            "             [--export_popef POPEF] [--custom_library_so_paths PLUGIN]\n"
            "             [--framework {onnx}] [--check] [--run] [--profile]\n"
            "             [--iters ITERS] [--threads THREADS]\n"
            "             [--batches_per_step BATCHES_PER_STEP]\n"
            "             [--logging_level {DEBUG,INFO,WARNING,ERROR,CRITICAL}]\n");
}

static void help(void) {
    usage(stdout);
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
        "  --export_popef POPEF  Compile the converted model and write it as an executable\n"
        "                        file (.popef); -i FILE.popef shows (--show) or runs (--run) one.\n"
        "  --custom_library_so_paths PLUGIN\n"
        "                        Paths of the custom shared library with custom ops/passes\n"
        "                        (repeat the option for several; see docs/plugins.md).\n"
        "  --output_model OUTPUT_MODEL\n"
        "                        Set the name of the converted ONNX model. This will be\n"
        "                        placed in the --output_dir directory. Default:\n"
        "                        <input name>.optimized.onnx.\n"
        "  --show                Show the input and output information of the model.\n"
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
        "  --precision {fp32,fp16,fp8,fp8_weight}\n"
        "                        Quantize the model to the specified precision.\n"
        "                        Default fp32.\n"
        "  --fp16_skip_op_types FP16_SKIP_OP_TYPES\n"
        "                        Comma-separated op types kept in float32 with fp16.\n"
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
        "                        Samples (docs/calibration.md) for fp8 calibration and\n"
        "                        the fp16 overflow check. Default: random inputs.\n"
        "  --num_of_layers_keep_fp16 NUM_OF_LAYERS_KEEP_FP16\n"
        "                        Layers whose fp8 error moves the outputs most, kept in\n"
        "                        fp16. Default 0.\n"
        "  --fp8_target_cosine FP8_TARGET_COSINE\n"
        "                        (libpoprt) Keep in fp16 the fewest layers with which\n"
        "                        every calibration sample's outputs keep this cosine\n"
        "                        similarity to fp32's. Default: off.\n"
        "  --precision_compare   Report the per-layer precision of Conv/MatMul/Gemm\n"
        "                        between the original and the converted model (fp8).\n"
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
        "  --framework {onnx}    Specify frontend to load input model. Default: onnx.\n"
        "  --check               Use made-up data to check that the model runs.\n"
        "  --run                 Run the converted model with random data: prints each\n"
        "                        output's shape, dtype and values, and the median\n"
        "                        latency.\n"
        "  --iters ITERS         Timed runs for --run, after one warm-up run. Default 10.\n"
        "  --profile             (libpoprt) With --run: time each kernel and log the\n"
        "                        totals per operator type at INFO (per node at DEBUG).\n"
        "  --threads THREADS     Worker threads per run. Default 1.\n"
        "  --batches_per_step BATCHES_PER_STEP\n"
        "                        Set the number of mini-batches to perform on the\n"
        "                        device before returning to the host. Default: 1.\n"
        "  --logging_level {DEBUG,INFO,WARNING,ERROR,CRITICAL}\n"
        "                        Set the logging level. Default WARNING.\n"
        "\n"
        "Without --show, --check or --run, -i converts the model: it runs the passes\n"
        "and saves the result to OUTPUT_DIR/OUTPUT_MODEL. With them it converts only\n"
        "when --output_dir or --output_model is given. The default passes are\n"
        "convert_version, then the registered ones of:\n"
        "  ");
    int col0 = 2;
    for (size_t i = 0; i < sizeof default_passes / sizeof *default_passes; i++) {
        int w = (int)strlen(default_passes[i]) + 2;
        if (col0 + w > 78) {
            printf("\n  ");
            col0 = 2;
        }
        printf("%s%s", default_passes[i],
               i + 1 < sizeof default_passes / sizeof *default_passes ? ", " : "");
        col0 += w;
    }
    printf("\n"
        "then the precision passes (float_to_half, float_to_fp8).\n"
        "\n"
        "Options of PopRT's CLI that libpoprt does not implement yet are rejected:\n"
        "  ");
    int col = 2;
    for (size_t i = 0; i < sizeof unsupported_options / sizeof *unsupported_options; i++) {
        int w = (int)strlen(unsupported_options[i]) + 3;
        if (col + w > 78) {
            printf("\n  ");
            col = 2;
        }
        printf("--%s ", unsupported_options[i]);
        col += w;
    }
    printf("\n");
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

static int is_unsupported(const char *name) {
    for (size_t i = 0; i < sizeof unsupported_options / sizeof *unsupported_options; i++)
        if (!strcmp(name, unsupported_options[i]))
            return 1;
    return 0;
}

/* Returns 0 on success, EXIT_USAGE after printing the error. */
static int parse_args(int argc, char **argv, cli *c) {
    for (int i = 1; i < argc; i++) {
        char *arg = argv[i];
        char name[128];
        const char *inline_val = NULL;
        if (!strcmp(arg, "-h")) {
            strcpy(name, "help");
        } else if (!strcmp(arg, "-v")) {
            strcpy(name, "version");
        } else if (!strcmp(arg, "-i")) {
            strcpy(name, "input_model");
        } else if (!strncmp(arg, "-i", 2) && arg[0] == '-' && arg[1] == 'i') {
            strcpy(name, "input_model");
            inline_val = arg + 2;
        } else if (!strncmp(arg, "--", 2) && arg[2]) {
            const char *eq = strchr(arg + 2, '=');
            size_t n = eq ? (size_t)(eq - arg - 2) : strlen(arg + 2);
            if (n >= sizeof name) {
                errmsg("unrecognized arguments: %s", arg);
                return EXIT_USAGE;
            }
            memcpy(name, arg + 2, n);
            name[n] = 0;
            inline_val = eq ? eq + 1 : NULL;
        } else {
            usage(stderr);
            errmsg("unrecognized arguments: %s", arg);
            return EXIT_USAGE;
        }

        /* flags */
        int *flag = NULL;
        if (!strcmp(name, "help"))
            flag = &c->help;
        else if (!strcmp(name, "version"))
            flag = &c->version;
        else if (!strcmp(name, "show"))
            flag = &c->show;
        else if (!strcmp(name, "list_all_passes"))
            flag = &c->list_passes;
        else if (!strcmp(name, "run"))
            flag = &c->run;
        else if (!strcmp(name, "check"))
            flag = &c->check;
        else if (!strcmp(name, "profile"))
            flag = &c->profile;
        else if (!strcmp(name, "precision_compare"))
            flag = &c->precision_compare;
        if (flag) {
            if (inline_val) {
                errmsg("argument --%s: ignored explicit argument '%s'", name, inline_val);
                return EXIT_USAGE;
            }
            *flag = 1;
            continue;
        }
        if (is_unsupported(name)) {
            errmsg("option --%s is not supported yet", name);
            return EXIT_USAGE;
        }

        static const char *const valued[] = {
            "input_model", "output_dir", "output_model", "export_popef", "custom_library_so_paths",
            "passes",  "skip_passes",
            "input_shape", "batch_size", "batch_axis",   "iters",         "threads",
            "batches_per_step", "logging_level", "precision", "framework",
            "convert_version", "remove_outputs", "checkpoints", "fp16_skip_op_types",
            "fp8_skip_op_names", "fp8_params", "calibration_loss_type", "calibration_data",
            "num_of_layers_keep_fp16", "fp8_target_cosine", "manual_sharding_config", "merge_matmul",
            "merge_matmul_add", "merge_moe", "serialize_matmul", "serialize_matmul_add",
        };
        int known = 0;
        for (size_t k = 0; k < sizeof valued / sizeof *valued; k++)
            known |= !strcmp(name, valued[k]);
        if (!known) {
            usage(stderr);
            errmsg("unrecognized arguments: %s", arg);
            return EXIT_USAGE;
        }
        const char *val = inline_val;
        if (!val) {
            if (i + 1 >= argc || (argv[i + 1][0] == '-' && argv[i + 1][1] != 0 &&
                                  !(argv[i + 1][1] >= '0' && argv[i + 1][1] <= '9'))) {
                errmsg("argument --%s: expected %s", name,
                       !strcmp(name, "input_shape") ? "at least one argument" : "one argument");
                return EXIT_USAGE;
            }
            val = argv[++i];
        }

        if (!strcmp(name, "input_model")) {
            c->input_model = val;
        } else if (!strcmp(name, "output_dir")) {
            c->output_dir = val;
        } else if (!strcmp(name, "output_model")) {
            c->output_model = val;
        } else if (!strcmp(name, "export_popef")) {
            c->export_popef = val;
        } else if (!strcmp(name, "custom_library_so_paths")) {
            if (c->n_plugins == 16) {
                errmsg("argument --custom_library_so_paths: at most 16 plugins");
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
                    errmsg("out of memory");
                    return EXIT_FAILURE;
                }
                c->shapes = s;
                memset(&s[c->n_shapes], 0, sizeof *s);
                if (!parse_shape(val, &s[c->n_shapes])) {
                    free(s[c->n_shapes].name);
                    errmsg("argument --input_shape: invalid value '%s' (expected NAME=D1,D2,...)",
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
                errmsg("argument --%s: invalid value '%s' (expected an integer >= %lld)", name,
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
                errmsg("argument --%s: invalid value '%s' (expected an integer >= 1)", name, val);
                return EXIT_USAGE;
            }
            if (name[0] == 't')
                c->threads = val;
            else
                c->batches_per_step = val;
        } else if (!strcmp(name, "logging_level")) {
            if (poprt_log_level_parse(val, &c->log_level) != POPRT_OK) {
                errmsg("argument --logging_level: invalid choice: '%s' (choose from 'DEBUG', "
                       "'INFO', 'WARNING', 'ERROR', 'CRITICAL')",
                       val);
                return EXIT_USAGE;
            }
        } else if (!strcmp(name, "precision")) {
            if (strcmp(val, "fp32") && strcmp(val, "fp16") && strcmp(val, "fp8") &&
                strcmp(val, "fp8_weight")) {
                errmsg("argument --precision: invalid choice: '%s' (choose from 'fp32', "
                       "'fp16', 'fp8', 'fp8_weight')",
                       val);
                return EXIT_USAGE;
            }
            c->precision = val;
        } else if (!strcmp(name, "convert_version") || !strcmp(name, "num_of_layers_keep_fp16")) {
            int64_t v;
            int cv = name[0] == 'c';
            if (!parse_i64(val, &v) || v < (cv ? 1 : 0)) {
                errmsg("argument --%s: invalid value '%s' (expected an integer >= %d)", name, val,
                       cv ? 1 : 0);
                return EXIT_USAGE;
            }
            *(cv ? &c->convert_version : &c->num_of_layers_keep_fp16) = val;
        } else if (!strcmp(name, "calibration_loss_type")) {
            static const char *const losses[] = {"mse", "mae", "snr", "kld", "cos_dist", "gptq"};
            int ok = 0;
            for (size_t k = 0; k < sizeof losses / sizeof *losses; k++)
                ok |= !strcmp(val, losses[k]);
            if (!ok) {
                errmsg("argument --calibration_loss_type: invalid choice: '%s' (choose from "
                       "'mse', 'mae', 'snr', 'kld', 'cos_dist', 'gptq')",
                       val);
                return EXIT_USAGE;
            }
            c->calibration_loss_type = val;
        } else if (!strcmp(name, "serialize_matmul") || !strcmp(name, "serialize_matmul_add")) {
            /* nargs='+': KEY=VAL words up to the next option */
            char **dst = name[16] ? &c->serialize_matmul_add : &c->serialize_matmul;
            for (;;) {
                if (!strchr(val, '=')) {
                    errmsg("argument --%s: invalid value '%s' (expected KEY=VAL)", name, val);
                    return EXIT_USAGE;
                }
                size_t old = *dst ? strlen(*dst) : 0;
                char *s2 = realloc(*dst, old + strlen(val) + 2);
                if (!s2) {
                    errmsg("out of memory");
                    return EXIT_FAILURE;
                }
                if (old)
                    s2[old++] = ',';
                strcpy(s2 + old, val);
                *dst = s2;
                if (inline_val || i + 1 >= argc || argv[i + 1][0] == '-' ||
                    !strchr(argv[i + 1], '='))
                    break;
                val = argv[++i];
            }
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
        } else if (!strcmp(name, "fp8_target_cosine")) {
            char *end;
            double v = strtod(val, &end);
            if (end == val || *end || !(v > 0 && v <= 1)) {
                errmsg("argument --fp8_target_cosine: invalid value '%s' (expected a number in "
                       "(0, 1])",
                       val);
                return EXIT_USAGE;
            }
            c->fp8_target_cosine = val;
        } else if (!strcmp(name, "manual_sharding_config")) {
            c->manual_sharding_config = val;
        } else if (!strcmp(name, "merge_matmul")) {
            c->merge_matmul = val;
        } else if (!strcmp(name, "merge_matmul_add")) {
            c->merge_matmul_add = val;
        } else if (!strcmp(name, "merge_moe")) {
            c->merge_moe = val;
        } else if (!strcmp(name, "framework")) {
            if (strcmp(val, "onnx")) {
                errmsg("option --framework %s is not supported yet (only onnx)", val);
                return EXIT_USAGE;
            }
        }
    }
    return 0;
}

/* -------------------------------------------------------------- logging */

static void log_to_stderr(poprt_log_level level, const char *message, void *user) {
    (void)user;
    const char *name = level >= POPRT_LOG_CRITICAL ? "CRITICAL"
                       : level >= POPRT_LOG_ERROR  ? "ERROR"
                       : level >= POPRT_LOG_WARNING ? "WARNING"
                       : level >= POPRT_LOG_INFO    ? "INFO"
                                                    : "DEBUG";
    fprintf(stderr, "poprt [%s] %s\n", name, message);
}

/* ----------------------------------------------------------------- show */

static void print_dims(FILE *f, const poprt_value_info *vi) {
    if (vi->rank < 0) {
        fputs("[?]", f);
        return;
    }
    fputc('[', f);
    for (int d = 0; d < vi->rank; d++) {
        if (d)
            fputc(',', f);
        if (vi->dims[d] >= 0)
            fprintf(f, "%lld", (long long)vi->dims[d]);
        else if (vi->dim_params && vi->dim_params[d])
            fputs(vi->dim_params[d], f);
        else
            fputc('?', f);
    }
    fputc(']', f);
}

static const char *kind_prefix(poprt_value_kind k) {
    return k == POPRT_VALUE_SEQUENCE ? "sequence of " : k == POPRT_VALUE_OPTIONAL ? "optional " : "";
}

static int show_model(const char *path, const poprt_model *m) {
    printf("model: %s\n", path);
    printf("opset: %lld\n", (long long)poprt_model_opset(m));
    printf("nodes: %zu\n", poprt_model_num_nodes(m));
    for (int io = 0; io < 2; io++) {
        size_t n = io ? poprt_model_num_outputs(m) : poprt_model_num_inputs(m);
        printf("%s (%zu):\n", io ? "outputs" : "inputs", n);
        for (size_t k = 0; k < n; k++) {
            poprt_value_info vi = {.size = sizeof vi};
            poprt_status st = io ? poprt_model_output(m, k, &vi) : poprt_model_input(m, k, &vi);
            if (st != POPRT_OK)
                return fail(st, "cannot describe the model");
            printf("  %s: %s%s ", vi.name, kind_prefix(vi.kind), poprt_dtype_name(vi.dtype));
            print_dims(stdout, &vi);
            putchar('\n');
        }
    }
    return 0;
}

/* --------------------------------------------------------------- shapes */

static int apply_shapes(const cli *c, poprt_model *m) {
    poprt_status st;
    if (c->batch_size > 0) {
        int64_t axis = c->batch_axis >= 0 ? c->batch_axis : 0;
        size_t n = poprt_model_num_inputs(m);
        for (size_t k = 0; k < n; k++) {
            poprt_value_info vi = {.size = sizeof vi};
            if ((st = poprt_model_input(m, k, &vi)) != POPRT_OK)
                return fail(st, "cannot describe the model");
            if (vi.kind != POPRT_VALUE_TENSOR)
                continue;
            if (vi.rank < 0) {
                errmsg("--batch_size: input '%s' has an unknown rank; use --input_shape", vi.name);
                return EXIT_FAILURE;
            }
            if (vi.rank > 64) {
                errmsg("--batch_size: input '%s' has rank %d (at most 64 supported)", vi.name,
                       vi.rank);
                return EXIT_FAILURE;
            }
            if (axis >= vi.rank) {
                errmsg("--batch_axis %lld: input '%s' has rank %d", (long long)axis, vi.name,
                       vi.rank);
                return EXIT_FAILURE;
            }
            int64_t dims[64];
            for (int d = 0; d < vi.rank; d++)
                dims[d] = vi.dims[d] >= 0 ? vi.dims[d] : 1;
            dims[axis] = c->batch_size;
            for (int d = 0; d < vi.rank; d++)
                if (vi.dims[d] < 0 && d != axis) {
                    errmsg("--batch_size: input '%s' has another unknown dim (%d); use "
                           "--input_shape",
                           vi.name, d);
                    return EXIT_FAILURE;
                }
            /* set_input_shape invalidates vi; copy the name first. */
            char *name = strdup(vi.name);
            if (!name)
                return EXIT_FAILURE;
            st = poprt_model_set_input_shape(m, name, dims, vi.rank);
            if (st != POPRT_OK) {
                char what[300];
                snprintf(what, sizeof what, "--batch_size: cannot set the shape of input '%s'",
                         name);
                free(name);
                return fail(st, what);
            }
            free(name);
        }
    } else if (c->batch_axis >= 0) {
        errmsg("--batch_axis needs --batch_size");
        return EXIT_USAGE;
    }
    for (size_t k = 0; k < c->n_shapes; k++) {
        st = poprt_model_set_input_shape(m, c->shapes[k].name, c->shapes[k].dims,
                                         c->shapes[k].rank);
        if (st != POPRT_OK) {
            char what[300];
            snprintf(what, sizeof what, "--input_shape %s", c->shapes[k].name);
            return fail(st, what);
        }
    }
    return 0;
}

/* --------------------------------------------------------------- passes */

static int pass_registered(const char *name, const char *const *names, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (!strcmp(names[i], name))
            return 1;
    return 0;
}

static int list_passes(void) {
    const char *const *names;
    size_t n;
    poprt_status st = poprt_pass_list(&names, &n);
    if (st != POPRT_OK)
        return fail(st, "cannot list the passes");
    for (size_t i = 0; i < n; i++) {
        const char *text = NULL;
        if (poprt_pass_describe(names[i], &text) == POPRT_OK && text && text[0])
            printf("%-36s %s\n", names[i], text);
        else
            printf("%s\n", names[i]);
    }
    return 0;
}

/* ------------------------------------------------------------ pipeline */

/* One pass of the pipeline and what became of it. */
typedef struct step {
    const char *name;
    char *args;   /* owned; NULL: no arguments */
    const char *why; /* the option that asked for it, or NULL (default / --passes) */
    int optional; /* a default pass: a failure is reported and the pass skipped */
    int state;    /* STEP_* */
    char *error;  /* owned: why it failed */
} step;

enum { STEP_PENDING, STEP_UNCHANGED, STEP_CHANGED, STEP_FAILED, STEP_SKIPPED };

typedef struct pipeline {
    step *s;
    size_t n;
} pipeline;

static void pipeline_free(pipeline *p) {
    for (size_t i = 0; i < p->n; i++) {
        free(p->s[i].args);
        free(p->s[i].error);
    }
    free(p->s);
    p->s = NULL;
    p->n = 0;
}

/* Appends a step; args is copied (printf-style, NULL fmt: no arguments). */
static int add_step(pipeline *p, const char *name, const char *why, int optional,
                    const char *fmt, ...) __attribute__((format(printf, 5, 6)));
static int add_step(pipeline *p, const char *name, const char *why, int optional,
                    const char *fmt, ...) {
    step *s = realloc(p->s, (p->n + 1) * sizeof *s);
    if (!s)
        return -1;
    p->s = s;
    s = &p->s[p->n];
    memset(s, 0, sizeof *s);
    s->name = name;
    s->why = why;
    s->optional = optional;
    if (fmt) {
        va_list ap;
        va_start(ap, fmt);
        int len = vsnprintf(NULL, 0, fmt, ap);
        va_end(ap);
        s->args = malloc((size_t)len + 1);
        if (!s->args)
            return -1;
        va_start(ap, fmt);
        vsnprintf(s->args, (size_t)len + 1, fmt, ap);
        va_end(ap);
    }
    p->n++;
    return 0;
}

/* Calls fn(name, user) for each name of a comma-separated list. */
static int for_each_name(const char *list, int (*fn)(const char *name, void *user), void *user) {
    char *copy = strdup(list);
    if (!copy)
        return EXIT_FAILURE;
    int rc = 0;
    for (char *save = NULL, *tok = strtok_r(copy, ",", &save); tok && !rc;
         tok = strtok_r(NULL, ",", &save)) {
        while (*tok == ' ')
            tok++;
        size_t len = strlen(tok);
        while (len && tok[len - 1] == ' ')
            tok[--len] = 0;
        if (len)
            rc = fn(tok, user);
    }
    free(copy);
    return rc;
}

typedef struct name_ctx {
    const char *opt;
    const char *const *names;
    size_t n;
    pipeline *p;
} name_ctx;

static int add_user_pass(const char *name, void *user) {
    name_ctx *x = user;
    const char *const *names = x->names;
    for (size_t i = 0; i < x->n; i++)
        if (!strcmp(names[i], name))
            return add_step(x->p, names[i], NULL, 0, NULL) ? EXIT_FAILURE : 0;
    errmsg("%s: unknown pass '%s' (see --list_all_passes)", x->opt, name);
    return EXIT_USAGE;
}

static int skip_pass(const char *name, void *user) {
    name_ctx *x = user;
    int known = pass_registered(name, x->names, x->n);
    if (!known) {
        errmsg("%s: unknown pass '%s' (see --list_all_passes)", x->opt, name);
        return EXIT_USAGE;
    }
    for (size_t i = 0; i < x->p->n; i++)
        if (!strcmp(x->p->s[i].name, name))
            x->p->s[i].state = STEP_SKIPPED;
    return 0;
}

/* "a, b,c" -> "[a,b,c]" for list arguments of passes. */
static char *bracket_list(const char *list) {
    size_t n = strlen(list);
    char *out = malloc(n + 3), *o = out;
    if (!out)
        return NULL;
    *o++ = '[';
    for (const char *q = list; *q; q++)
        if (*q != ' ' && *q != '[' && *q != ']')
            *o++ = *q;
    *o++ = ']';
    *o = 0;
    return out;
}

static int add_list_step(pipeline *p, const char *name, const char *why, const char *key,
                         const char *list) {
    char *b = bracket_list(list);
    int rc = !b || add_step(p, name, why, 0, "%s=%s", key, b);
    free(b);
    return rc;
}

/* The passes a command runs, in order: convert_version, --remove_outputs,
 * --checkpoints, the default passes (or --passes), the merge and serialize
 * options, the precision passes, --manual_sharding_config,
 * --precision_compare and --check. */
static int build_pipeline(const cli *c, pipeline *p) {
    const char *const *names;
    size_t n;
    poprt_status st = poprt_pass_list(&names, &n);
    if (st != POPRT_OK)
        return fail(st, "cannot list the passes");
    int fp8 = c->precision && !strncmp(c->precision, "fp8", 3);
    int rc = 0;
    if (c->convert_version)
        rc |= add_step(p, "convert_version", "--convert_version", 0, "version=%s",
                       c->convert_version);
    else if (!c->passes)
        rc |= add_step(p, "convert_version", NULL, 1, "version=11");
    if (c->remove_outputs)
        rc |= add_step(p, "remove_outputs", "--remove_outputs", 0, "%s", c->remove_outputs);
    if (c->checkpoints)
        rc |= add_list_step(p, "add_checkpoints", "--checkpoints", "checkpoints", c->checkpoints);
    if (rc)
        return fail(POPRT_STATUS_OUT_OF_MEMORY, "cannot build the pass list");
    if (c->passes) {
        name_ctx x = {"--passes", names, n, p};
        if ((rc = for_each_name(c->passes, add_user_pass, &x)) != 0)
            return rc;
    } else {
        for (size_t i = 0; i < sizeof default_passes / sizeof *default_passes; i++)
            if (pass_registered(default_passes[i], names, n))
                rc |= add_step(p, default_passes[i], NULL, 1, NULL);
    }
    if (c->merge_matmul)
        rc |= add_step(p, "merge_matmul", "--merge_matmul", 0, "%s", c->merge_matmul);
    if (c->merge_matmul_add)
        rc |= add_step(p, "merge_matmul_add", "--merge_matmul_add", 0, "%s", c->merge_matmul_add);
    if (c->merge_moe)
        rc |= add_step(p, "merge_moe", "--merge_moe", 0, "%s", c->merge_moe);
    if (c->serialize_matmul)
        rc |= add_step(p, "serialize_matmul", "--serialize_matmul", 0, "%s", c->serialize_matmul);
    if (c->serialize_matmul_add)
        rc |= add_step(p, "serialize_matmul_add", "--serialize_matmul_add", 0, "%s",
                       c->serialize_matmul_add);
    if (c->precision && !strcmp(c->precision, "fp16")) {
        /* the samples also serve float_to_half's overflow (range) check */
        char *types = bracket_list(c->fp16_skip_op_types ? c->fp16_skip_op_types : "");
        rc |= !types || add_step(p, "float_to_half", "--precision fp16", 0, "skip_op_types=%s%s%s",
                                 types, c->calibration_data ? ",data=" : "",
                                 c->calibration_data ? c->calibration_data : "");
        free(types);
    } else if (fp8) {
        char *params = bracket_list(c->fp8_params ? c->fp8_params : "F143,F143,-1,-1");
        char *skip = bracket_list(c->fp8_skip_op_names ? c->fp8_skip_op_names : "");
        rc |= !params || !skip ||
              add_step(p, "float_to_fp8", !strcmp(c->precision, "fp8") ? "--precision fp8"
                                                                        : "--precision fp8_weight",
                       0,
                       "mode=%s,fp8_params=%s,skip_op_names=%s,loss=%s,num_of_layers_keep_fp16=%s"
                       "%s%s%s%s",
                       c->precision, params, skip,
                       c->calibration_loss_type ? c->calibration_loss_type : "kld",
                       c->num_of_layers_keep_fp16 ? c->num_of_layers_keep_fp16 : "0",
                       c->fp8_target_cosine ? ",target_cosine=" : "",
                       c->fp8_target_cosine ? c->fp8_target_cosine : "",
                       c->calibration_data ? ",calibration=" : "",
                       c->calibration_data ? c->calibration_data : "");
        free(params);
        free(skip);
    }
    if (c->manual_sharding_config)
        rc |= add_step(p, "manual_sharding", "--manual_sharding_config", 0, "config=%s",
                       c->manual_sharding_config);
    if (c->precision_compare)
        rc |= add_step(p, "layer_precision_compare", "--precision_compare", 0, "origin=%s",
                       c->input_model);
    if (c->check)
        rc |= add_step(p, "check_with_fake_data", "--check", 0, "origin=%s,tolerance=%s",
                       c->input_model,
                       fp8 ? "0.25" : c->precision && !strcmp(c->precision, "fp16") ? "0.02"
                                                                                    : "0.001");
    if (rc)
        return fail(POPRT_STATUS_OUT_OF_MEMORY, "cannot build the pass list");
    /* passes an option needs must exist */
    for (size_t i = 0; i < p->n; i++)
        if (p->s[i].why && !pass_registered(p->s[i].name, names, n)) {
            errmsg("%s needs the pass '%s', which this libpoprt does not have", p->s[i].why,
                   p->s[i].name);
            return EXIT_FAILURE;
        }
    if (c->skip_passes) {
        name_ctx x = {"--skip_passes", names, n, p};
        if ((rc = for_each_name(c->skip_passes, skip_pass, &x)) != 0)
            return rc;
    }
    return 0;
}

/* Runs each step with its own pass manager, so that each reports whether it
 * changed the model and a failing default pass leaves the model as it was
 * before it. */
static int run_pipeline(pipeline *p, poprt_model *m) {
    for (size_t i = 0; i < p->n; i++) {
        step *s = &p->s[i];
        if (s->state == STEP_SKIPPED)
            continue;
        poprt_pass_manager *pm = NULL;
        poprt_status st = poprt_pass_manager_create(&pm);
        if (st == POPRT_OK)
            st = poprt_pass_manager_add(pm, s->name, s->args);
        if (st == POPRT_OK)
            st = poprt_pass_manager_run(pm, m);
        size_t changed = poprt_pass_manager_changed(pm);
        poprt_pass_manager_free(pm);
        if (st == POPRT_OK) {
            s->state = changed ? STEP_CHANGED : STEP_UNCHANGED;
            continue;
        }
        s->state = STEP_FAILED;
        if (!s->optional) {
            char what[300];
            snprintf(what, sizeof what, "pass '%s'%s%s failed", s->name, s->why ? " for " : "",
                     s->why ? s->why : "");
            return fail(st, what);
        }
        s->error = strdup(poprt_last_error());
        if (strcmp(s->name, "convert_version") != 0)
            fprintf(stderr, "%s: warning: default pass '%s' failed and was skipped: %s\n", prog,
                    s->name, s->error ? s->error : "");
    }
    return 0;
}

/* Prints "label: a, b, c" wrapped at 100 columns. */
static void print_names(const char *label, const pipeline *p, int state) {
    int col = printf("%s:", label), any = 0;
    for (size_t i = 0; i < p->n; i++) {
        if (p->s[i].state != state)
            continue;
        int w = (int)strlen(p->s[i].name) + 2;
        if (any && col + w > 100) {
            printf(",\n   ");
            col = 3;
        } else if (any) {
            printf(",");
            col++;
        }
        col += printf(" %s", p->s[i].name);
        any = 1;
    }
    printf("%s\n", any ? "" : " none");
}

/* The summary of a conversion: what each pass did, node counts, output. */
static void print_summary(const pipeline *p, int64_t opset_before, int64_t opset_after) {
    for (size_t i = 0; i < p->n; i++)
        if (!strcmp(p->s[i].name, "convert_version")) {
            if (p->s[i].state == STEP_CHANGED)
                printf("opset: %lld -> %lld\n", (long long)opset_before, (long long)opset_after);
            else if (p->s[i].state == STEP_FAILED)
                printf("opset: kept %lld (cannot convert: %s)\n", (long long)opset_before,
                       p->s[i].error ? p->s[i].error : "");
            else
                printf("opset: %lld\n", (long long)opset_after);
        }
    print_names("passes that changed the model", p, STEP_CHANGED);
    print_names("passes without change", p, STEP_UNCHANGED);
    int any = 0;
    for (size_t i = 0; i < p->n; i++)
        any |= p->s[i].state == STEP_SKIPPED;
    if (any)
        print_names("skipped (--skip_passes)", p, STEP_SKIPPED);
    for (size_t i = 0; i < p->n; i++)
        if (p->s[i].state == STEP_FAILED && strcmp(p->s[i].name, "convert_version") != 0)
            printf("failed and skipped: %s: %s\n", p->s[i].name,
                   p->s[i].error ? p->s[i].error : "");
}

/* ----------------------------------------------------------------- save */

static int mkdirs(const char *dir) {
    char *p = strdup(dir);
    if (!p)
        return -1;
    for (char *s = p + 1;; s++) {
        if (*s == '/' || !*s) {
            char ch = *s;
            *s = 0;
            if (mkdir(p, 0777) != 0 && errno != EEXIST) {
                free(p);
                return -1;
            }
            *s = ch;
            if (!ch)
                break;
        }
    }
    free(p);
    struct stat sb;
    return stat(dir, &sb) == 0 && S_ISDIR(sb.st_mode) ? 0 : -1;
}

static char *output_path(const cli *c) {
    const char *dir = c->output_dir ? c->output_dir : "./";
    char *model = NULL;
    if (c->output_model) {
        model = strdup(c->output_model);
    } else {
        const char *base = strrchr(c->input_model, '/');
        base = base ? base + 1 : c->input_model;
        size_t n = strlen(base);
        if (n > 5 && !strcmp(base + n - 5, ".onnx"))
            n -= 5;
        model = malloc(n + 16);
        if (model)
            snprintf(model, n + 16, "%.*s.optimized.onnx", (int)n, base);
    }
    if (!model)
        return NULL;
    size_t len = strlen(dir) + strlen(model) + 2;
    char *path = malloc(len);
    if (path) {
        size_t dl = strlen(dir);
        snprintf(path, len, "%s%s%s", dir, dl && dir[dl - 1] == '/' ? "" : "/", model);
    }
    free(model);
    return path;
}

/* ------------------------------------------------------------------ run */

/* float -> IEEE half, round to nearest even. */
static uint16_t f32_to_f16(float f) {
    uint32_t x;
    memcpy(&x, &f, 4);
    uint32_t sign = (x >> 16) & 0x8000u;
    int32_t exp = (int32_t)((x >> 23) & 0xff) - 127 + 15;
    uint32_t mant = x & 0x7fffffu;
    if (((x >> 23) & 0xff) == 0xff)
        return (uint16_t)(sign | 0x7c00u | (mant ? 0x200u : 0));
    if (exp >= 31)
        return (uint16_t)(sign | 0x7c00u);
    if (exp <= 0) {
        if (exp < -10)
            return (uint16_t)sign;
        mant |= 0x800000u;
        uint32_t shift = (uint32_t)(14 - exp);
        uint32_t h = mant >> shift, rem = mant & ((1u << shift) - 1), half = 1u << (shift - 1);
        if (rem > half || (rem == half && (h & 1)))
            h++;
        return (uint16_t)(sign | h);
    }
    uint32_t h = ((uint32_t)exp << 10) | (mant >> 13), rem = mant & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1)))
        h++;
    return (uint16_t)(sign | h);
}

static float f16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, exp = (h >> 10) & 0x1f, mant = h & 0x3ffu;
    float v;
    if (exp == 0)
        v = ldexpf((float)mant, -24);
    else if (exp == 31)
        v = mant ? NAN : INFINITY;
    else
        v = ldexpf((float)(mant | 0x400u), (int)exp - 25);
    return sign ? -v : v;
}

static uint16_t f32_to_bf16(float f) {
    uint32_t x;
    memcpy(&x, &f, 4);
    x += 0x7fffu + ((x >> 16) & 1u);
    return (uint16_t)(x >> 16);
}

static float bf16_to_f32(uint16_t b) {
    uint32_t x = (uint32_t)b << 16;
    float f;
    memcpy(&f, &x, 4);
    return f;
}

/* Fills n elements of dtype with the xorshift32 stream of
 * shared/models/README.md: floats uniform in [-1, 1), integers 0..3, bools
 * 0/1. Types without a natural mapping (fp8, fp4) get zero bytes. */
static void fill_random(void *buf, poprt_dtype dt, size_t n, uint32_t seed) {
    uint32_t x = seed ? seed : 1;
    for (size_t i = 0; i < n; i++) {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        float f = (float)((double)x / 4294967296.0 * 2.0 - 1.0);
        int64_t small = (int64_t)(x % 4u);
        switch (dt) {
        case POPRT_DTYPE_FLOAT: ((float *)buf)[i] = f; break;
        case POPRT_DTYPE_DOUBLE: ((double *)buf)[i] = (double)x / 4294967296.0 * 2.0 - 1.0; break;
        case POPRT_DTYPE_FLOAT16: ((uint16_t *)buf)[i] = f32_to_f16(f); break;
        case POPRT_DTYPE_BFLOAT16: ((uint16_t *)buf)[i] = f32_to_bf16(f); break;
        case POPRT_DTYPE_INT8: case POPRT_DTYPE_UINT8: case POPRT_DTYPE_INT4:
        case POPRT_DTYPE_UINT4: case POPRT_DTYPE_INT2: case POPRT_DTYPE_UINT2:
            ((uint8_t *)buf)[i] = (uint8_t)small; break;
        case POPRT_DTYPE_BOOL: ((uint8_t *)buf)[i] = (uint8_t)(x & 1u); break;
        case POPRT_DTYPE_INT16: case POPRT_DTYPE_UINT16: ((uint16_t *)buf)[i] = (uint16_t)small; break;
        case POPRT_DTYPE_INT32: case POPRT_DTYPE_UINT32: ((uint32_t *)buf)[i] = (uint32_t)small; break;
        case POPRT_DTYPE_INT64: case POPRT_DTYPE_UINT64: ((uint64_t *)buf)[i] = (uint64_t)small; break;
        case POPRT_DTYPE_STRING: ((const char **)buf)[i] = small & 1 ? "poprt" : "cpu"; break;
        default: memset((char *)buf + i * poprt_dtype_size(dt), 0, poprt_dtype_size(dt)); break;
        }
    }
}

/* Element i as a double; 0 when the type has no numeric reading here. */
static int load_elem(const void *buf, poprt_dtype dt, size_t i, double *out) {
    switch (dt) {
    case POPRT_DTYPE_FLOAT: *out = ((const float *)buf)[i]; return 1;
    case POPRT_DTYPE_DOUBLE: *out = ((const double *)buf)[i]; return 1;
    case POPRT_DTYPE_FLOAT16: *out = f16_to_f32(((const uint16_t *)buf)[i]); return 1;
    case POPRT_DTYPE_BFLOAT16: *out = bf16_to_f32(((const uint16_t *)buf)[i]); return 1;
    case POPRT_DTYPE_INT8: case POPRT_DTYPE_INT4: case POPRT_DTYPE_INT2:
        *out = ((const int8_t *)buf)[i]; return 1;
    case POPRT_DTYPE_UINT8: case POPRT_DTYPE_UINT4: case POPRT_DTYPE_UINT2: case POPRT_DTYPE_BOOL:
        *out = ((const uint8_t *)buf)[i]; return 1;
    case POPRT_DTYPE_INT16: *out = ((const int16_t *)buf)[i]; return 1;
    case POPRT_DTYPE_UINT16: *out = ((const uint16_t *)buf)[i]; return 1;
    case POPRT_DTYPE_INT32: *out = ((const int32_t *)buf)[i]; return 1;
    case POPRT_DTYPE_UINT32: *out = ((const uint32_t *)buf)[i]; return 1;
    case POPRT_DTYPE_INT64: *out = (double)((const int64_t *)buf)[i]; return 1;
    case POPRT_DTYPE_UINT64: *out = (double)((const uint64_t *)buf)[i]; return 1;
    default: return 0;
    }
}

static void print_shape(FILE *f, const int64_t *dims, int rank) {
    fputc('[', f);
    for (int d = 0; d < rank; d++)
        fprintf(f, d ? ",%lld" : "%lld", (long long)dims[d]);
    fputc(']', f);
}

static void summarize(const char *label, poprt_dtype dt, const int64_t *dims, int rank,
                      const void *data) {
    size_t n = 1;
    for (int d = 0; d < rank; d++)
        n *= (size_t)dims[d];
    printf("%s: %s ", label, poprt_dtype_name(dt));
    print_shape(stdout, dims, rank);
    if (dt == POPRT_DTYPE_STRING) {
        printf(" first:");
        for (size_t i = 0; i < n && i < 5; i++)
            printf(" \"%s\"", ((const char *const *)data)[i] ? ((const char *const *)data)[i] : "");
        putchar('\n');
        return;
    }
    double v;
    if (n == 0 || !load_elem(data, dt, 0, &v)) {
        printf(n ? " (values not shown for this type)\n" : " (empty)\n");
        return;
    }
    double mn = INFINITY, mx = -INFINITY, sum = 0;
    size_t nan = 0;
    for (size_t i = 0; i < n; i++) {
        load_elem(data, dt, i, &v);
        if (isnan(v)) {
            nan++;
            continue;
        }
        mn = v < mn ? v : mn;
        mx = v > mx ? v : mx;
        sum += v;
    }
    if (nan == n)
        printf(" all NaN");
    else
        printf(" min %.6g max %.6g mean %.6g", mn, mx, sum / (double)(n - nan));
    if (nan && nan != n)
        printf(" (%zu NaN)", nan);
    printf(" first:");
    for (size_t i = 0; i < n && i < 6; i++) {
        load_elem(data, dt, i, &v);
        printf(" %.6g", v);
    }
    if (n > 6)
        printf(" ...");
    putchar('\n');
}

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Builds a session, binds random inputs, runs (1 warm-up + iters timed
 * runs for --run, one run for --check) and prints the results. */
/* Runs session s (taking ownership of it). */
static int run_session(const cli *c, poprt_session *s) {
    poprt_stepio *io = NULL;
    void **bufs = NULL;
    double *times = NULL;
    int rc = 0;
    poprt_status st = POPRT_OK;
    size_t n_in = poprt_session_num_inputs(s), n_out = poprt_session_num_outputs(s);
    int64_t bps = poprt_session_batches_per_step(s);
    bufs = calloc(n_in + 1, sizeof *bufs);
    if (!bufs || (st = poprt_stepio_create(&io)) != POPRT_OK) {
        rc = fail(bufs ? st : POPRT_STATUS_OUT_OF_MEMORY, "cannot create a stepio");
        goto done;
    }
    for (size_t k = 0; k < n_in && !rc; k++) {
        poprt_value_info vi = {.size = sizeof vi};
        if ((st = poprt_session_input(s, k, &vi)) != POPRT_OK) {
            rc = fail(st, "cannot describe the session");
            break;
        }
        if (vi.kind != POPRT_VALUE_TENSOR) {
            errmsg("input '%s' is a %s value; --run makes only tensor inputs", vi.name,
                   vi.kind == POPRT_VALUE_SEQUENCE ? "sequence" : "optional");
            rc = EXIT_FAILURE;
            break;
        }
        int64_t dims[65];
        int rank = 0;
        if (bps > 1)
            dims[rank++] = bps;
        if (vi.rank < 0 || vi.rank > 64) {
            errmsg("input '%s' has an unknown shape; fix it with --input_shape %s=D1,D2,...",
                   vi.name, vi.name);
            rc = EXIT_FAILURE;
            break;
        }
        size_t n = (size_t)(bps > 1 ? bps : 1);
        for (int d = 0; d < vi.rank; d++) {
            if (vi.dims[d] < 0) {
                errmsg("input '%s' has an unknown dim %d (%s); fix it with --input_shape "
                       "%s=D1,D2,... or --batch_size",
                       vi.name, d, vi.dim_params && vi.dim_params[d] ? vi.dim_params[d] : "?",
                       vi.name);
                rc = EXIT_FAILURE;
                break;
            }
            dims[rank++] = vi.dims[d];
            n *= (size_t)vi.dims[d];
        }
        if (rc)
            break;
        size_t esz = poprt_dtype_size(vi.dtype);
        if (!esz) {
            errmsg("input '%s' has dtype %s, which --run cannot make", vi.name,
                   poprt_dtype_name(vi.dtype));
            rc = EXIT_FAILURE;
            break;
        }
        bufs[k] = calloc(n ? n : 1, esz);
        if (!bufs[k]) {
            errmsg("out of memory for input '%s'", vi.name);
            rc = EXIT_FAILURE;
            break;
        }
        fill_random(bufs[k], vi.dtype, n, 42u + (uint32_t)k);
        st = poprt_stepio_set_input(io, vi.name, vi.dtype, dims, rank, bufs[k], n * esz);
        if (st != POPRT_OK)
            rc = fail(st, "cannot bind an input");
    }
    for (size_t k = 0; k < n_out && !rc; k++) {
        poprt_value_info vi = {.size = sizeof vi};
        if ((st = poprt_session_output(s, k, &vi)) != POPRT_OK ||
            (st = poprt_stepio_set_output_alloc(io, vi.name)) != POPRT_OK)
            rc = fail(st, "cannot bind an output");
    }
    if (rc)
        goto done;

    int64_t iters = c->run ? c->iters : 0;
    times = calloc((size_t)iters + 1, sizeof *times);
    if (!times) {
        rc = fail(POPRT_STATUS_OUT_OF_MEMORY, "cannot time the runs");
        goto done;
    }
    /* The first run is the warm-up (and the whole job for --check). */
    if ((st = poprt_session_run(s, io)) != POPRT_OK) {
        rc = fail(st, "run failed");
        goto done;
    }
    for (int64_t it = 0; it < iters; it++) {
        double t0 = now_ms();
        if ((st = poprt_session_run(s, io)) != POPRT_OK) {
            rc = fail(st, "run failed");
            goto done;
        }
        times[it] = now_ms() - t0;
    }

    if (c->check && !c->run)
        printf("check: the model ran on made-up data (%zu inputs, %zu outputs)\n", n_in, n_out);
    if (!c->run)
        goto done;
    for (size_t k = 0; k < n_out; k++) {
        poprt_value_info vi = {.size = sizeof vi};
        if ((st = poprt_session_output(s, k, &vi)) != POPRT_OK) {
            rc = fail(st, "cannot describe the session");
            goto done;
        }
        poprt_value_kind kind = POPRT_VALUE_TENSOR;
        int present = 1;
        size_t count = 1;
        if ((st = poprt_stepio_output_kind(io, vi.name, &kind, &present, &count)) != POPRT_OK) {
            rc = fail(st, "cannot read an output");
            goto done;
        }
        if (kind == POPRT_VALUE_TENSOR) {
            poprt_dtype dt;
            int rank;
            const int64_t *dims;
            const void *data;
            if ((st = poprt_stepio_output(io, vi.name, &dt, &rank, &dims, &data, NULL)) !=
                POPRT_OK) {
                rc = fail(st, "cannot read an output");
                goto done;
            }
            char label[512];
            snprintf(label, sizeof label, "output %s", vi.name);
            summarize(label, dt, dims, rank, data);
            continue;
        }
        if (kind == POPRT_VALUE_OPTIONAL && !present) {
            printf("output %s: optional, empty\n", vi.name);
            continue;
        }
        printf("output %s: %s of %zu tensors\n", vi.name,
               kind == POPRT_VALUE_SEQUENCE ? "sequence" : "optional", count);
        for (size_t j = 0; j < count; j++) {
            poprt_dtype dt;
            int rank;
            const int64_t *dims;
            const void *data;
            if ((st = poprt_stepio_output_item(io, vi.name, j, &dt, &rank, &dims, &data, NULL)) !=
                POPRT_OK) {
                rc = fail(st, "cannot read an output");
                goto done;
            }
            char label[512];
            snprintf(label, sizeof label, "  [%zu]", j);
            summarize(label, dt, dims, rank, data);
        }
    }
    if (iters > 0) {
        qsort(times, (size_t)iters, sizeof *times, cmp_double);
        double med = iters % 2 ? times[iters / 2]
                               : 0.5 * (times[iters / 2 - 1] + times[iters / 2]);
        printf("latency: median %.3f ms, min %.3f ms, max %.3f ms over %lld runs "
               "(threads %s, batches_per_step %lld)\n",
               med, times[0], times[iters - 1], (long long)iters, c->threads ? c->threads : "1",
               (long long)bps);
    }
done:
    if (bufs)
        for (size_t k = 0; k < n_in; k++)
            free(bufs[k]);
    free(bufs);
    free(times);
    poprt_stepio_free(io);
    poprt_session_free(s);
    return rc;
}

/* ----------------------------------------------------------------- main */

/* Describes a compiled session (an executable file's inputs and outputs). */
static int show_session(const char *path, const poprt_session *s) {
    printf("executable: %s\n", path);
    for (int io = 0; io < 2; io++) {
        size_t n = io ? poprt_session_num_outputs(s) : poprt_session_num_inputs(s);
        for (size_t k = 0; k < n; k++) {
            poprt_value_info vi = {.size = sizeof vi};
            poprt_status st = io ? poprt_session_output(s, k, &vi) : poprt_session_input(s, k, &vi);
            if (st != POPRT_OK)
                return fail(st, "cannot describe the executable");
            printf("%s %s: %s ", io ? "output" : "input", vi.name, poprt_dtype_name(vi.dtype));
            print_dims(stdout, &vi);
            printf("\n");
        }
    }
    printf("arena bytes: %zu\n", poprt_session_arena_bytes(s));
    return 0;
}

/* -i FILE.popef: an executable runs as it is; nothing converts it. */
static int executable_job(const cli *c, const poprt_options *opts) {
    if (c->output_dir || c->output_model || c->passes || c->export_popef || c->n_shapes ||
        c->batch_size >= 0 || c->convert_version || c->precision) {
        errmsg("'%s' is a compiled executable: it can be shown (--show) and run (--run), "
               "not converted",
               c->input_model);
        return EXIT_USAGE;
    }
    poprt_session *s = NULL;
    poprt_status st = poprt_session_load(c->input_model, opts, &s);
    if (st != POPRT_OK) {
        char what[PATH_MAX + 32];
        snprintf(what, sizeof what, "cannot load '%s'", c->input_model);
        return fail(st, what);
    }
    int rc = c->show ? show_session(c->input_model, s) : 0;
    if (!rc && (c->run || !c->show))
        return run_session(c, s);
    poprt_session_free(s);
    return rc;
}

static int job(const cli *c) {
    poprt_model *m = NULL;
    poprt_options *opts = NULL;
    char *out = NULL;
    pipeline pipe = {0};
    int rc;
    poprt_status st = poprt_options_create(&opts);
    if (st != POPRT_OK)
        return fail(st, "cannot create options");
    /* Session options are checked before the (possibly slow) load. */
    if (c->threads && (st = poprt_options_set(opts, "threads", c->threads)) != POPRT_OK) {
        rc = fail(st, "--threads");
        goto done;
    }
    if (c->batches_per_step &&
        (st = poprt_options_set(opts, "batches_per_step", c->batches_per_step)) != POPRT_OK) {
        rc = fail(st, "--batches_per_step");
        goto done;
    }
    if (c->profile && (st = poprt_options_set(opts, "profile", "1")) != POPRT_OK) {
        rc = fail(st, "--profile");
        goto done;
    }
    if (poprt_file_is_executable(c->input_model)) {
        rc = executable_job(c, opts);
        goto done;
    }
    st = poprt_model_load(c->input_model, &m);
    if (st != POPRT_OK) {
        char what[PATH_MAX + 32];
        snprintf(what, sizeof what, "cannot load '%s'", c->input_model);
        rc = fail(st, what);
        goto done;
    }
    size_t nodes_before = poprt_model_num_nodes(m);
    if ((rc = apply_shapes(c, m)) != 0)
        goto done;

    /* --show describes the model as loaded (with the shapes given); the
     * passes then run for a conversion and before --run / --check, so that
     * what runs is what would be saved. */
    if (c->show && (rc = show_model(c->input_model, m)) != 0)
        goto done;
    int convert = !(c->show || c->run || c->check || c->export_popef) || c->output_dir ||
                  c->output_model;
    int64_t opset_before = poprt_model_opset(m);
    if ((convert || c->run || c->check || c->passes || c->skip_passes) &&
        ((rc = build_pipeline(c, &pipe)) != 0 || (rc = run_pipeline(&pipe, m)) != 0))
        goto done;
    if (convert) {
        out = output_path(c);
        if (!out) {
            rc = fail(POPRT_STATUS_OUT_OF_MEMORY, "cannot build the output path");
            goto done;
        }
        const char *dir = c->output_dir ? c->output_dir : "./";
        if (mkdirs(dir) != 0) {
            errmsg("cannot create the output directory '%s': %s", dir, strerror(errno));
            rc = EXIT_FAILURE;
            goto done;
        }
        if ((st = poprt_model_save(m, out)) != POPRT_OK) {
            char what[PATH_MAX + 32];
            snprintf(what, sizeof what, "cannot save '%s'", out);
            rc = fail(st, what);
            goto done;
        }
        size_t n_run = 0, n_changed = 0;
        for (size_t i = 0; i < pipe.n; i++) {
            n_run += pipe.s[i].state != STEP_SKIPPED;
            n_changed += pipe.s[i].state == STEP_CHANGED;
        }
        print_summary(&pipe, opset_before, poprt_model_opset(m));
        printf("nodes: %zu -> %zu\n", nodes_before, poprt_model_num_nodes(m));
        printf("output: %s\n", out);
        printf("converted %s -> %s (%zu nodes -> %zu nodes; %zu passes run, %zu changed the "
               "model)\n",
               c->input_model, out, nodes_before, poprt_model_num_nodes(m), n_run, n_changed);
    }
    if (c->export_popef || c->run || c->check) {
        poprt_session *s = NULL;
        double t0 = now_ms();
        st = poprt_session_create(m, opts, &s);
        if (st != POPRT_OK) {
            rc = fail(st, "cannot create a session");
            goto done;
        }
        if (c->export_popef) {
            if ((st = poprt_session_export(s, c->export_popef)) != POPRT_OK) {
                char what[PATH_MAX + 32];
                snprintf(what, sizeof what, "cannot write '%s'", c->export_popef);
                rc = fail(st, what);
                poprt_session_free(s);
                goto done;
            }
            printf("exported: %s (compiled in %.1f ms)\n", c->export_popef, now_ms() - t0);
        }
        if (c->run || c->check)
            rc = run_session(c, s);
        else
            poprt_session_free(s);
    }
done:
    pipeline_free(&pipe);
    free(out);
    poprt_model_free(m);
    poprt_options_free(opts);
    return rc;
}

int main(int argc, char **argv) {
    cli c = {.batch_size = -1, .batch_axis = -1, .iters = 10, .log_level = POPRT_LOG_WARNING};
    int rc = parse_args(argc, argv, &c);
    if (rc)
        goto out;
    if (c.help) {
        help();
        goto out;
    }
    if (c.version) {
        printf("poprt %s (libpoprt %s, header %d.%d.%d)\n", poprt_version(), poprt_version(),
               POPRT_VERSION_MAJOR, POPRT_VERSION_MINOR, POPRT_VERSION_PATCH);
        goto out;
    }
    /* the profile is logged at INFO */
    poprt_set_log_callback(log_to_stderr, NULL,
                           c.profile && c.log_level > POPRT_LOG_INFO ? POPRT_LOG_INFO : c.log_level);
    /* plugins first: they add passes and operators the rest may use */
    for (int k = 0; k < c.n_plugins && !rc; k++) {
        poprt_status st = poprt_plugin_load(c.plugins[k]);
        if (st != POPRT_OK)
            rc = fail(st, "--custom_library_so_paths");
    }
    if (rc)
        goto out;
    if (c.list_passes) {
        rc = list_passes();
        if (rc || !c.input_model)
            goto out;
    }
    if (!c.input_model) {
        usage(stderr);
        errmsg("nothing to do: give -i INPUT_MODEL (or --list_all_passes, --help)");
        rc = EXIT_USAGE;
        goto out;
    }
    rc = job(&c);
out:
    for (size_t k = 0; k < c.n_shapes; k++)
        free(c.shapes[k].name);
    free(c.shapes);
    free(c.serialize_matmul);
    free(c.serialize_matmul_add);
    poprt_set_log_callback(NULL, NULL, POPRT_LOG_OFF);
    return rc;
}
