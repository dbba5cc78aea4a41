/* poprt: command-line tool for libpoprt, in the manner of Graphcore PopRT's
 * `poprt` CLI. It is a client of the public API (poprt/poprt.h) only.
 *
 * This file parses the command line and does its one job: help, version,
 * the pass list, or a model (converted, shown, run) or an executable file
 * (shown, run). The jobs themselves live in the files cli.h lists.
 *
 * Exit status: 0 success, 1 a failure while doing the job (bad model file,
 * pass or run failure), 2 bad command-line usage. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "data.h"

/* -i FILE.popef: an executable runs as it is; nothing converts it. */
static int executable_job(const cli *c, const poprt_options *opts) {
    if (c->serve_bench) {
        cli_errmsg("'%s' is a compiled executable: --serve_bench serves ONNX models (a runner "
                   "compiles one program per batch size)",
                   c->input_model);
        return EXIT_USAGE;
    }
    if (c->output_dir || c->output_model || c->passes || c->export_popef ||
        c->export_popef_in_dir || c->n_shapes ||
        c->batch_size >= 0 || c->convert_version || c->precision || c->dot) {
        cli_errmsg("'%s' is a compiled executable: it can be shown (--show) and run (--run), "
                   "not converted",
                   c->input_model);
        return EXIT_USAGE;
    }
    poprt_session *s = NULL;
    cli_progress_begin("loading", 0);
    poprt_status st = poprt_session_load(c->input_model, opts, &s);
    cli_progress_end();
    if (st != POPRT_OK) {
        char what[PATH_MAX + 32];
        snprintf(what, sizeof what, "cannot load '%s'", c->input_model);
        return cli_fail(st, what);
    }
    cli with_inputs = *c;
    int rc = cli_inputs_from_session(c, s, &with_inputs.inputs);
    if (!rc && c->show)
        rc = cli_show_session(c->input_model, s);
    if (!rc && (c->run || !c->show)) {
        rc = cli_run_session(&with_inputs, s);
        s = NULL;
    }
    poprt_session_free(s);
    cli_inputs_free(with_inputs.inputs);
    return rc;
}

static int job(const cli *c_in) {
    cli with_popef = *c_in; /* --export_popef's path, when it goes into --output_dir */
    const cli *c = &with_popef;
    char popef[PATH_MAX];
    if (c_in->export_popef_in_dir) {
        const char *dir = c_in->output_dir ? c_in->output_dir : ".";
        size_t dl = strlen(dir);
        if ((size_t)snprintf(popef, sizeof popef, "%s%sexecutable.popef", dir,
                             dl && dir[dl - 1] == '/' ? "" : "/") >= sizeof popef) {
            cli_errmsg("--output_dir '%s': path too long", dir);
            return EXIT_USAGE;
        }
        with_popef.export_popef = popef;
    }
    poprt_model *m = NULL;
    poprt_options *opts = NULL;
    char *calibration_tmp = NULL; /* .npy / .npz calibration samples as .pb files */
    int rc;
    poprt_status st = poprt_options_create(&opts);
    if (st != POPRT_OK)
        return cli_fail(st, "cannot create options");
    /* Session options are checked before the (possibly slow) load. */
    if (c->threads && (st = poprt_options_set(opts, "threads", c->threads)) != POPRT_OK) {
        rc = cli_fail(st, "--threads");
        goto done;
    }
    if (c->batches_per_step &&
        (st = poprt_options_set(opts, "batches_per_step", c->batches_per_step)) != POPRT_OK) {
        rc = cli_fail(st, "--batches_per_step");
        goto done;
    }
    if (c->profile && (st = poprt_options_set(opts, "profile", "1")) != POPRT_OK) {
        rc = cli_fail(st, "--profile");
        goto done;
    }
    /* bf16 is arithmetic, not storage: the file stays float32 (other ONNX
     * runtimes run it), the sessions multiply in bfloat16 */
    if (c->precision && !strcmp(c->precision, "bf16") &&
        (st = poprt_options_set(opts, "matmul_precision", "bfloat16")) != POPRT_OK) {
        rc = cli_fail(st, "--precision bf16");
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
        rc = cli_fail(st, what);
        goto done;
    }
    size_t nodes_before = poprt_model_num_nodes(m);
    if ((rc = cli_apply_shapes(c, m)) != 0)
        goto done;
    /* the runs' inputs, before the passes change the graph they are read
     * from; the passes that take data get them as folders of .pb files */
    if ((rc = cli_inputs_from_model(c, m, &with_popef.inputs)) != 0)
        goto done;
    if ((c->check || c->precision_compare) && cli_inputs_given(c->inputs) &&
        (rc = cli_inputs_pb_dir(with_popef.inputs, m, &with_popef.check_data)) != 0)
        goto done;
    if (c->calibration_data &&
        (rc = cli_calibration_dir(c->inputs, m, c->calibration_data, &calibration_tmp)) != 0)
        goto done;
    if (calibration_tmp)
        with_popef.calibration_data = calibration_tmp;

    /* --show describes the model as loaded (with the shapes given); the
     * passes then run for a conversion and before --run / --check, so that
     * what runs is what would be saved. */
    if (c->show && (rc = cli_show_model(c->input_model, m)) != 0)
        goto done;
    /* PopRT's --export_popef converts too: both files go to --output_dir */
    int convert = !(c->show || c->run || c->check || c->export_popef || c->serve_bench ||
                    c->dot) ||
                  c->output_dir || c->output_model || c->export_popef_in_dir;
    if ((convert || c->run || c->check || c->serve_bench || c->passes || c->skip_passes ||
         c->dot) &&
        (rc = cli_convert(c, m, convert, nodes_before)) != 0)
        goto done;
    if (c->dot && (rc = cli_write_dot(c, m)) != 0)
        goto done;
    if (c->export_popef || c->run || c->check)
        rc = cli_compile_and_run(c, m, opts);
    if (!rc && c->serve_bench)
        rc = cli_serve_bench(c, m);
done:
    poprt_model_free(m);
    poprt_options_free(opts);
    cli_inputs_free(with_popef.inputs);
    cli_remove_tmp(calibration_tmp);
    return rc;
}

int main(int argc, char **argv) {
    cli c = {.batch_size = -1, .batch_axis = -1, .iters = 10, .log_level = POPRT_LOG_WARNING,
             .serve_seconds = 5, .serve_concurrency = 16,
             .compare_rtol = 1e-3, .compare_atol = 1e-5};
    int rc = cli_parse_args(argc, argv, &c);
    if (rc)
        goto out;
    if (c.help) {
        cli_help();
        goto out;
    }
    if (c.print_completion) {
        rc = cli_print_completion(c.print_completion);
        goto out;
    }
    if (c.version) {
        printf("poprt %s (libpoprt %s, header %d.%d.%d)\n", poprt_version(), poprt_version(),
               POPRT_VERSION_MAJOR, POPRT_VERSION_MINOR, POPRT_VERSION_PATCH);
        goto out;
    }
    /* the profile is logged at INFO */
    poprt_set_log_callback(cli_log_to_stderr, NULL,
                           c.profile && c.log_level > POPRT_LOG_INFO ? POPRT_LOG_INFO : c.log_level);
    cli_progress_setup(c.no_progress_bar);
    /* plugins first: they add passes and operators the rest may use */
    for (int k = 0; k < c.n_plugins && !rc; k++) {
        poprt_status st = poprt_plugin_load(c.plugins[k]);
        if (st != POPRT_OK)
            rc = cli_fail(st, "--custom_library_so_paths");
    }
    if (!rc)
        rc = cli_load_plugin_files(&c);
    if (!rc)
        rc = cli_check_precision_options(&c);
    if (rc)
        goto out;
    if (c.list_passes) {
        rc = cli_list_passes();
        if (rc || !c.input_model)
            goto out;
    }
    if (!c.input_model) {
        cli_usage(stderr);
        cli_errmsg("nothing to do: give -i INPUT_MODEL (or --list_all_passes, --help)");
        rc = EXIT_USAGE;
        goto out;
    }
    rc = job(&c);
out:
    cli_args_free(&c);
    cli_progress_end();
    poprt_set_progress_callback(NULL, NULL);
    poprt_set_log_callback(NULL, NULL, POPRT_LOG_OFF);
    return rc;
}

