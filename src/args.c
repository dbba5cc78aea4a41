/* poprt: the command line. The options follow Graphcore PopRT's CLI; those of
 * its options that libpoprt does not implement yet are rejected by name. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

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

void cli_usage(FILE *f) {
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
        "  --serve_concurrency N Requests in flight in the closed loop. Default 16.\n"
        "  --runner_options KEY=VAL,...\n"
        "                        Runner options: replicas, cores_per_replica, max_batch,\n"
        "                        batch_timeout_us, batch_sizes, queue_size, ... (see\n"
        "                        poprt_runner_create in poprt.h).\n"
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
int cli_parse_args(int argc, char **argv, cli *c) {
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
                cli_errmsg("unrecognized arguments: %s", arg);
                return EXIT_USAGE;
            }
            memcpy(name, arg + 2, n);
            name[n] = 0;
            inline_val = eq ? eq + 1 : NULL;
        } else {
            cli_usage(stderr);
            cli_errmsg("unrecognized arguments: %s", arg);
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
        else if (!strcmp(name, "serve_bench"))
            flag = &c->serve_bench;
        if (flag) {
            if (inline_val) {
                cli_errmsg("argument --%s: ignored explicit argument '%s'", name, inline_val);
                return EXIT_USAGE;
            }
            *flag = 1;
            continue;
        }
        if (is_unsupported(name)) {
            cli_errmsg("option --%s is not supported yet", name);
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
            "serve_rate", "serve_seconds", "serve_concurrency", "runner_options",
        };
        int known = 0;
        for (size_t k = 0; k < sizeof valued / sizeof *valued; k++)
            known |= !strcmp(name, valued[k]);
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
                strcmp(val, "fp8_weight")) {
                cli_errmsg("argument --precision: invalid choice: '%s' (choose from 'fp32', "
                           "'fp16', 'fp8', 'fp8_weight')",
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
        } else if (!strcmp(name, "serialize_matmul") || !strcmp(name, "serialize_matmul_add")) {
            /* nargs='+': KEY=VAL words up to the next option */
            char **dst = name[16] ? &c->serialize_matmul_add : &c->serialize_matmul;
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
                cli_errmsg("argument --fp8_target_cosine: invalid value '%s' (expected a number in "
                           "(0, 1])",
                           val);
                return EXIT_USAGE;
            }
            c->fp8_target_cosine = val;
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
}
