/* poprt: the conversion. Input shapes are fixed (--input_shape,
 * --batch_size), the pass pipeline runs, each pass with its own pass
 * manager, and the converted model is saved with a summary of what each pass
 * did. */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"

/* The default pipeline (without --passes), after convert_version: those of
 * these passes the library registers, in this order. A default pass that
 * fails is skipped (the model stays as it was before it) and reported. */
const char *const cli_default_passes[] = {
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
const size_t cli_num_default_passes = sizeof cli_default_passes / sizeof *cli_default_passes;

/* --------------------------------------------------------------- shapes */

int cli_apply_shapes(const cli *c, poprt_model *m) {
    poprt_status st;
    if (c->batch_size > 0) {
        int64_t axis = c->batch_axis >= 0 ? c->batch_axis : 0;
        size_t n = poprt_model_num_inputs(m);
        for (size_t k = 0; k < n; k++) {
            poprt_value_info vi = {.size = sizeof vi};
            if ((st = poprt_model_input(m, k, &vi)) != POPRT_OK)
                return cli_fail(st, "cannot describe the model");
            if (vi.kind != POPRT_VALUE_TENSOR)
                continue;
            if (vi.rank < 0) {
                cli_errmsg("--batch_size: input '%s' has an unknown rank; use --input_shape",
                           vi.name);
                return EXIT_FAILURE;
            }
            if (vi.rank > 64) {
                cli_errmsg("--batch_size: input '%s' has rank %d (at most 64 supported)", vi.name,
                           vi.rank);
                return EXIT_FAILURE;
            }
            if (axis >= vi.rank) {
                cli_errmsg("--batch_axis %lld: input '%s' has rank %d", (long long)axis, vi.name,
                           vi.rank);
                return EXIT_FAILURE;
            }
            int64_t dims[64];
            for (int d = 0; d < vi.rank; d++)
                dims[d] = vi.dims[d] >= 0 ? vi.dims[d] : 1;
            dims[axis] = c->batch_size;
            for (int d = 0; d < vi.rank; d++)
                if (vi.dims[d] < 0 && d != axis) {
                    cli_errmsg("--batch_size: input '%s' has another unknown dim (%d); use "
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
                return cli_fail(st, what);
            }
            free(name);
        }
    } else if (c->batch_axis >= 0) {
        cli_errmsg("--batch_axis needs --batch_size");
        return EXIT_USAGE;
    }
    for (size_t k = 0; k < c->n_shapes; k++) {
        st = poprt_model_set_input_shape(m, c->shapes[k].name, c->shapes[k].dims,
                                         c->shapes[k].rank);
        if (st != POPRT_OK) {
            char what[300];
            snprintf(what, sizeof what, "--input_shape %s", c->shapes[k].name);
            return cli_fail(st, what);
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

static int has_step(const pipeline *p, const char *name) {
    for (size_t i = 0; i < p->n; i++)
        if (!strcmp(p->s[i].name, name))
            return 1;
    return 0;
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
    cli_errmsg("%s: unknown pass '%s' (see --list_all_passes)", x->opt, name);
    return EXIT_USAGE;
}

static int skip_pass(const char *name, void *user) {
    name_ctx *x = user;
    int known = pass_registered(name, x->names, x->n);
    if (!known) {
        cli_errmsg("%s: unknown pass '%s' (see --list_all_passes)", x->opt, name);
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

/* --precision_compare's report: OUTPUT_DIR/precision_compare.txt (the
 * table) and .csv; the folder is created. */
static int precision_report_paths(const cli *c, char *txt, char *csv) {
    const char *dir = c->output_dir ? c->output_dir : ".";
    const char *sep = dir[0] && dir[strlen(dir) - 1] == '/' ? "" : "/";
    if ((size_t)snprintf(txt, PATH_MAX, "%s%sprecision_compare.txt", dir, sep) >= PATH_MAX ||
        (size_t)snprintf(csv, PATH_MAX, "%s%sprecision_compare.csv", dir, sep) >= PATH_MAX) {
        cli_errmsg("--output_dir '%s': path too long", dir);
        return EXIT_FAILURE;
    }
    if (cli_mkdirs(dir) != 0) {
        cli_errmsg("cannot create the output directory '%s': %s", dir, strerror(errno));
        return EXIT_FAILURE;
    }
    return 0;
}

/* Prints the table --precision_compare wrote. */
static int print_precision_report(const cli *c) {
    char txt[PATH_MAX], csv[PATH_MAX];
    if (precision_report_paths(c, txt, csv))
        return EXIT_FAILURE;
    FILE *f = fopen(txt, "r");
    if (!f) {
        /* the pass writes nothing when it skipped (a warning said why) */
        printf("precision_compare: no report (see the warnings above)\n");
        return 0;
    }
    printf("precision_compare: per-layer error of the converted model against %s "
           "(cos distance 0: exact)\n",
           c->input_model);
    char line[1024];
    int rows = -1;
    while (fgets(line, sizeof line, f)) {
        fputs(line, stdout);
        rows++;
    }
    fclose(f);
    if (rows <= 0)
        printf("(no Conv, MatMul or Gemm node in both models)\n");
    printf("precision_compare: report written to %s and %s\n", txt, csv);
    return 0;
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
        return cli_fail(st, "cannot list the passes");
    int fp8 = c->precision && !strncmp(c->precision, "fp8", 3);
    int rc = 0;
    if (c->only_manual_sharding) { /* PopRT's: the sharding annotations and nothing else */
        if (!c->manual_sharding_config) {
            cli_errmsg("--only_manual_sharding needs --manual_sharding_config");
            return EXIT_USAGE;
        }
        if (add_step(p, "manual_sharding", "--only_manual_sharding", 0, "config=%s",
                     c->manual_sharding_config))
            return cli_fail(POPRT_STATUS_OUT_OF_MEMORY, "cannot build the pass list");
        return 0;
    }
    if (c->infer_shape_ahead) /* shapes fixed by --input_shape, inferred before anything */
        rc |= add_step(p, "shape_inference", "--infer_shape_ahead", 0, NULL);
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
        return cli_fail(POPRT_STATUS_OUT_OF_MEMORY, "cannot build the pass list");
    if (c->passes) {
        name_ctx x = {"--passes", names, n, p};
        if ((rc = for_each_name(c->passes, add_user_pass, &x)) != 0)
            return rc;
    } else {
        for (size_t i = 0; i < cli_num_default_passes; i++)
            if (pass_registered(cli_default_passes[i], names, n))
                rc |= add_step(p, cli_default_passes[i], NULL, 1, NULL);
    }
    if (c->enable_erf_gelu && !has_step(p, "erf_gelu_pattern"))
        rc |= add_step(p, "erf_gelu_pattern", "--enable_erf_gelu", 0, NULL);
    if (c->pack_args)
        rc |= add_step(p, "packed_transformer", "--pack_args", 0, "%s", c->pack_args);
    if (c->enable_8bits_io)
        rc |= add_step(p, "eight_bits_io", "--enable_8bits_io", 0, NULL);
    if (c->enable_insert_remap) {
        fprintf(stderr, "%s: warning: --enable_insert_remap has no effect on a CPU: IPU tile "
                        "remapping; the pass auto_insert_remap only checks --remap_mode\n",
                CLI_PROG);
        rc |= c->remap_mode ? add_step(p, "auto_insert_remap", "--enable_insert_remap", 0,
                                       "remap_mode=%s", c->remap_mode)
                            : add_step(p, "auto_insert_remap", "--enable_insert_remap", 0, NULL);
    }
    /* --max_tensor_size bounds every constant folding of the pipeline */
    for (size_t i = 0; c->max_tensor_size && i < p->n; i++)
        if (!strcmp(p->s[i].name, "constant_folding") && !p->s[i].args) {
            size_t len = strlen(c->max_tensor_size) + 17;
            if (!(p->s[i].args = malloc(len)))
                rc = 1;
            else
                snprintf(p->s[i].args, len, "max_tensor_size=%s", c->max_tensor_size);
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
    } else if (c->precision && !strcmp(c->precision, "int8")) {
        rc |= add_step(p, "float_to_int8", "--precision int8", 0, "%s",
                       c->int8_reduce_range ? "reduce_range=1" : "");
    } else if (c->precision && !strcmp(c->precision, "int8_static")) {
        rc |= add_step(p, "float_to_int8_static", "--precision int8_static", 0, "%s%s%s",
                       c->calibration_data ? "data=" : "",
                       c->calibration_data ? c->calibration_data : "",
                       !c->int8_reduce_range ? "" : c->calibration_data ? ",reduce_range=1"
                                                                       : "reduce_range=1");
    } else if (c->precision && !strcmp(c->precision, "bf16") && c->bf16_target_cosine) {
        rc |= add_step(p, "bf16_fallback", "--bf16_target_cosine", 0, "target_cosine=%s%s%s",
                       c->bf16_target_cosine, c->calibration_data ? ",calibration=" : "",
                       c->calibration_data ? c->calibration_data : "");
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
    if (c->precision_compare) {
        /* the report goes into --output_dir, as PopRT's; its samples are
         * the calibration data, else the run's inputs, else random */
        char txt[PATH_MAX], csv[PATH_MAX];
        const char *data = c->calibration_data ? c->calibration_data : c->check_data;
        if (precision_report_paths(c, txt, csv))
            return EXIT_FAILURE;
        remove(txt); /* a report of an earlier run must not pass for this one's */
        remove(csv);
        rc |= add_step(p, "layer_precision_compare", "--precision_compare", 0,
                       "origin=%s,output=%s,csv=%s%s%s", c->input_model, txt, csv,
                       data ? ",data=" : "", data ? data : "");
    }
    if (c->check)
        rc |= add_step(p, "check_with_fake_data", "--check", 0, "origin=%s,tolerance=%s%s%s",
                       c->input_model,
                       fp8                                               ? "0.25"
                       : c->precision && !strncmp(c->precision, "int8", 4) ? "0.05"
                       : c->precision && !strcmp(c->precision, "fp16") ? "0.02"
                                                                       : "0.001",
                       c->check_data ? ",data=" : "", c->check_data ? c->check_data : "");
    if (rc)
        return cli_fail(POPRT_STATUS_OUT_OF_MEMORY, "cannot build the pass list");
    /* passes an option needs must exist */
    for (size_t i = 0; i < p->n; i++)
        if (p->s[i].why && !pass_registered(p->s[i].name, names, n)) {
            cli_errmsg("%s needs the pass '%s', which this libpoprt does not have", p->s[i].why,
                       p->s[i].name);
            return EXIT_FAILURE;
        }
    /* PopRT's fast_norm replaces norms by an IPU kernel; libpoprt's
     * FastNorm pass is the only one that makes one */
    for (size_t i = 0; c->disable_fast_norm && i < p->n; i++)
        if (!strcmp(p->s[i].name, "replace_groupnorm_with_fast_norm"))
            p->s[i].state = STEP_SKIPPED;
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
    size_t total = 0, done = 0;
    for (size_t i = 0; i < p->n; i++)
        total += p->s[i].state != STEP_SKIPPED;
    cli_progress_begin("converting", total);
    int rc = 0;
    for (size_t i = 0; i < p->n && !rc; i++) {
        step *s = &p->s[i];
        if (s->state == STEP_SKIPPED)
            continue;
        cli_progress_step(done++, s->name);
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
            rc = cli_fail(st, what);
            break;
        }
        s->error = strdup(poprt_last_error());
        if (strcmp(s->name, "convert_version") != 0) {
            cli_progress_clear();
            fprintf(stderr, "%s: warning: default pass '%s' failed and was skipped: %s\n", CLI_PROG,
                    s->name, s->error ? s->error : "");
        }
    }
    cli_progress_end();
    return rc;
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

int cli_mkdirs(const char *dir) {
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
    if (model[0] == '/') /* an absolute --output_model is the path itself (PopRT joins the two
                          * with os.path.join, which keeps an absolute second part) */
        return model;
    size_t len = strlen(dir) + strlen(model) + 2;
    char *path = malloc(len);
    if (path) {
        size_t dl = strlen(dir);
        snprintf(path, len, "%s%s%s", dir, dl && dir[dl - 1] == '/' ? "" : "/", model);
    }
    free(model);
    return path;
}

/* Writes the converted model and prints the summary of the conversion. */
static int save_model(const cli *c, poprt_model *m, const pipeline *pipe, int64_t opset_before,
                      size_t nodes_before) {
    char *out = output_path(c);
    if (!out)
        return cli_fail(POPRT_STATUS_OUT_OF_MEMORY, "cannot build the output path");
    int rc = 0;
    poprt_status st;
    const char *dir = c->output_dir ? c->output_dir : "./";
    if (cli_mkdirs(dir) != 0) {
        cli_errmsg("cannot create the output directory '%s': %s", dir, strerror(errno));
        rc = EXIT_FAILURE;
        goto done;
    }
    if ((st = poprt_model_save(m, out)) != POPRT_OK) {
        char what[PATH_MAX + 32];
        snprintf(what, sizeof what, "cannot save '%s'", out);
        rc = cli_fail(st, what);
        goto done;
    }
    size_t n_run = 0, n_changed = 0;
    for (size_t i = 0; i < pipe->n; i++) {
        n_run += pipe->s[i].state != STEP_SKIPPED;
        n_changed += pipe->s[i].state == STEP_CHANGED;
    }
    print_summary(pipe, opset_before, poprt_model_opset(m));
    printf("nodes: %zu -> %zu\n", nodes_before, poprt_model_num_nodes(m));
    printf("output: %s\n", out);
    printf("converted %s -> %s (%zu nodes -> %zu nodes; %zu passes run, %zu changed the "
           "model)\n",
           c->input_model, out, nodes_before, poprt_model_num_nodes(m), n_run, n_changed);
done:
    free(out);
    return rc;
}

/* ---------------------------------------------------------- conversion */

int cli_convert(const cli *c, poprt_model *m, int save, size_t nodes_before) {
    pipeline pipe = {0};
    int64_t opset_before = poprt_model_opset(m);
    int rc = build_pipeline(c, &pipe);
    if (!rc)
        rc = run_pipeline(&pipe, m);
    if (!rc && c->precision_compare)
        rc = print_precision_report(c);
    if (!rc && save)
        rc = save_model(c, m, &pipe, opset_before, nodes_before);
    pipeline_free(&pipe);
    return rc;
}
