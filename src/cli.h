/* poprt: what the files of the tool share. Each file does one job:
 *   main.c      the dispatcher: one command line, one job
 *   args.c      the option table, parsing, help text, usage errors
 *   messages.c  error lines and library log lines on stderr
 *   show.c      --show (models and executables), --list_all_passes
 *   convert.c   the conversion: input shapes, the pass pipeline, saving
 *   run.c       compiling, exporting, running, checking, timing, reporting
 *   serve.c     --serve_bench: a runner under an open or closed load
 *   completion.c --print_completion: shell completion from the option table
 *   config.c    files that configure the tool: --config_yaml, the plugin
 *               files of --custom_pass_config / --custom_shape_inference
 *   inputs.c    the inputs of the runs (--input_data, --fill, random values
 *               in the model's index ranges), --output_data, --compare
 *   data.c, npy.c, zip.c  the tensor files those read and write (data.h)
 *   progress.c  the progress bar on stderr
 *   dot.c       --dot: the converted graph as Graphviz DOT
 *   profile.c   --profile_output: the session's trace written to a file
 * The tool is a client of the public API (poprt/poprt.h) only. */
#ifndef POPRT_CLI_H
#define POPRT_CLI_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "poprt/poprt.h"

/* Exit status: 0 success, EXIT_FAILURE (1) a failure while doing the job
 * (bad model file, pass or run failure), EXIT_USAGE bad command-line usage. */
#define EXIT_USAGE 2

/* The name error and warning lines start with. */
#define CLI_PROG "poprt"

/* --input_shape NAME=D1,D2,... */
typedef struct shape_arg {
    char *name;
    int64_t dims[64];
    int rank;
} shape_arg;

/* The command line, parsed. Strings point into argv, but for those
 * cli_args_free frees. */
typedef struct cli {
    const char *input_model;
    const char *output_dir;
    const char *output_model;
    const char *export_popef; /* write the compiled session here */
    int export_popef_in_dir;  /* --export_popef without a path: OUTPUT_DIR/executable.popef */
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
    const char *bf16_target_cosine; /* libpoprt: nodes kept float32 under --precision bf16 */
    const char *calibration_data; /* folder of samples for fp8 calibration */
    const char *manual_sharding_config, *merge_matmul, *merge_matmul_add, *merge_moe;
    char *serialize_matmul, *serialize_matmul_add; /* KEY=VAL words joined by ',' */
    int serve_bench;            /* --serve_bench: the model served by a runner under load */
    double serve_rate;          /* requests/s offered (Poisson); 0: closed loop */
    double serve_seconds;       /* how long the load lasts */
    int serve_concurrency;      /* requests in flight in the closed loop */
    const char *runner_options; /* KEY=VAL,... for poprt_runner_create */
    /* PopRT's flags that map to passes */
    int enable_8bits_io, enable_erf_gelu, disable_fast_norm, infer_shape_ahead;
    int only_manual_sharding, enable_insert_remap;
    int no_progress_bar;          /* --disable_compilation_progress_bar: no progress bar */
    const char *max_tensor_size;  /* constant_folding max_tensor_size */
    const char *remap_mode;       /* auto_insert_remap remap_mode */
    char *pack_args;              /* packed_transformer arguments, KEY=VAL joined by ',' */
    const char *print_completion; /* bash, zsh or fish */
    const char *config_yaml;      /* options read from a YAML file (config.c) */
    const char *custom_pass_config;     /* plugin (or list of plugins) adding passes */
    const char *custom_shape_inference; /* comma-separated plugins adding shape functions */
    const char *data_preprocess;  /* PopRT's calibration data: a calibration folder here */
    int calibrate;                /* fp8: calibrate on given data, never on random inputs */
    int keep_fp32_patterns;       /* fp16: keep overflow-prone nodes float32 (always done) */
    int int8_reduce_range;        /* int8, int8_static: weights in 7 bits (reduce_range=1) */
    char **owned;                 /* strings the options above may point into (YAML) */
    size_t n_owned;
    /* the runs' inputs and outputs (inputs.c) */
    const char *input_data, *output_data, *compare;
    double compare_rtol, compare_atol;
    const char *fills[64]; /* --fill NAME=VALUE, in order */
    int n_fills;
    struct cli_inputs *inputs; /* set by main.c's job: what the runs bind */
    const char *check_data;    /* set by main.c's job: data=DIR of --check/--precision_compare */
    /* pictures and profiles (dot.c, profile.c) */
    const char *dot;            /* --dot FILE: the converted graph as Graphviz DOT */
    const char *profile_output; /* --profile_output FILE: the trace of --profile */
} cli;

/* ---- args.c */

/* Parses argv into c (which the caller set to its defaults): the options of
 * --config_yaml's file first, then those of the command line, which replace
 * the file's. Returns 0, or EXIT_USAGE / EXIT_FAILURE after printing the
 * error. */
int cli_parse_args(int argc, char **argv, cli *c);
/* Parses the option words argv[1..argc) into c (no --config_yaml file). */
int cli_parse_words(int argc, char **argv, cli *c);
/* Whether arg is an option word: its long name into name ("input_model"
 * for -i) and the value given with it (--name=VALUE, -iPATH) or NULL. */
int cli_option_word(const char *arg, char name[128], const char **inline_val);
/* How an option takes its value (CLI_OPT_*; CLI_OPT_UNKNOWN: no such option). */
enum {
    CLI_OPT_UNKNOWN,
    CLI_OPT_FLAG,          /* no value */
    CLI_OPT_VALUE,         /* one value */
    CLI_OPT_LIST,          /* one value per occurrence, repeatable (plugin paths) */
    CLI_OPT_KEYVAL,        /* KEY=VAL words (--input_shape NAME=DIMS, --pack_args K=V) */
    CLI_OPT_FLAG_OR_VALUE, /* --export_popef [PATH] */
};
int cli_option_kind(const char *name);
/* Frees what cli_parse_args allocated in c. */
void cli_args_free(cli *c);
/* The usage synopsis, to f. */
void cli_usage(FILE *f);
/* The synopsis and every option, to stdout (--help). */
void cli_help(void);
/* Calls fn for every long option the tool takes (name without "--"). */
void cli_each_option(void (*fn)(const char *name, int takes_value, void *user), void *user);

/* ---- config.c */

/* --config_yaml FILE: parses the options the file sets into c, leaving out
 * those the command line argv also gives. Errors name the file, the line
 * and the key. */
int cli_config_load(const char *path, int argc, char **argv, cli *c);
/* Loads the plugins of --custom_pass_config and --custom_shape_inference. */
int cli_load_plugin_files(const cli *c);
/* Checks and resolves --data_preprocess, --calibrate, --keep_fp32_patterns. */
int cli_check_precision_options(cli *c);
/* ---- inputs.c */

/* The options of inputs.c (--input_data, --output_data, --compare,
 * --compare_rtol, --compare_atol, --fill): 1 when name is one of them, with
 * *rc 0 or the usage error's status after printing it. */
int cli_data_arg(cli *c, const char *name, const char *val, int *rc);
/* Their lines of --help. */
void cli_data_help(void);

/* ---- completion.c */

/* --print_completion: the completion script for shell to stdout. */
int cli_print_completion(const char *shell);

/* ---- messages.c */

/* "poprt: error: <message>" on stderr. */
void cli_errmsg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Text put before every error message until cleared (NULL): the file, line
 * and key of --config_yaml whose value is being parsed. */
void cli_error_context(const char *prefix);
/* One error line naming what failed, the status and the library's detail;
 * returns EXIT_FAILURE. */
int cli_fail(poprt_status st, const char *what);
/* The library's log callback: "poprt [LEVEL] message" on stderr. */
void cli_log_to_stderr(poprt_log_level level, const char *message, void *user);

/* ---- progress.c */

/* Sets the bar up: drawn only when stderr is a terminal and not disabled
 * (--disable_compilation_progress_bar); installs the library's callback. */
void cli_progress_setup(int disabled);
/* A job of total steps (0: the library's reports measure it) begins; the
 * bar shows once it has run for a second. */
void cli_progress_begin(const char *job, uint64_t total);
/* done steps of the job are over; item (may be NULL) is the next one. */
void cli_progress_step(uint64_t done, const char *item);
/* The job is over: the bar is cleared. */
void cli_progress_end(void);
/* Clears the bar before a line is written to stderr (it is drawn again at
 * the next report). */
void cli_progress_clear(void);
/* The library's progress callback. */
void cli_progress_library(const char *phase, const char *item, uint64_t done, uint64_t total,
                          void *user);

/* ---- dot.c */

/* --dot: m as Graphviz DOT to c->dot. */
int cli_write_dot(const cli *c, const poprt_model *m);

/* ---- profile.c */

/* The trace file --profile writes: --profile_output, else
 * OUTPUT_DIR/profile.json. */
const char *cli_profile_path(const cli *c, char *buf, size_t size);
/* Writes s's profile trace there and says so on stdout. */
int cli_write_profile(const cli *c, const poprt_session *s);

/* ---- show.c */

/* --show of a model: opset, node count, inputs and outputs, then the count
 * of nodes per op type and the initializers' bytes. */
int cli_show_model(const char *path, const poprt_model *m);
/* --show of an executable file: its inputs, outputs and arena size. */
int cli_show_session(const char *path, const poprt_session *s);
/* --list_all_passes: the registered passes with their descriptions. */
int cli_list_passes(void);

/* ---- convert.c */

/* The default passes (without --passes), in order; the help lists them. */
extern const char *const cli_default_passes[];
extern const size_t cli_num_default_passes;
/* Applies --batch_size / --batch_axis and --input_shape to m. */
int cli_apply_shapes(const cli *c, poprt_model *m);
/* Creates dir and its parents (0, or -1 with errno). */
int cli_mkdirs(const char *dir);
/* Runs the pass pipeline of c on m; with save, writes the converted model
 * and prints the summary (nodes_before: m's node count as loaded). */
int cli_convert(const cli *c, poprt_model *m, int save, size_t nodes_before);

/* ---- run.c */

/* Compiles m into a session, writes it with --export_popef, and runs it with
 * --run / --check. */
int cli_compile_and_run(const cli *c, const poprt_model *m, const poprt_options *opts);
/* Binds the inputs of c->inputs (random when NULL) to s, runs it (--run: a warm-up and --iters timed
 * runs; --check: once) and prints the results. Takes ownership of s. */
int cli_run_session(const cli *c, poprt_session *s);
/* Fills n elements of dtype with a deterministic pseudo-random stream
 * (seed): floats in [-1, 1), integers 0..3, bools 0/1. */
void cli_fill_random(void *buf, poprt_dtype dt, size_t n, uint32_t seed);
/* Element i of buf as a double / stored from a double (rounded to the
 * dtype); 0 when the dtype has no numeric reading here (float8, strings). */
int cli_load_elem(const void *buf, poprt_dtype dt, size_t i, double *out);
/* "tensor", "sequence", "optional", "map", "sequence of maps" (run.c). */
const char *cli_value_kind_name(poprt_value_kind kind);
int cli_store_elem(void *buf, poprt_dtype dt, size_t i, double v);

/* ---- serve.c */

/* --serve_bench: serves m with a runner under the load c describes and
 * prints throughput, latency and the runner's statistics. */
int cli_serve_bench(const cli *c, const poprt_model *m);

#endif
