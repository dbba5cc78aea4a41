/* poprt: describing what the tool is given: --show of a model or of an
 * executable file, and --list_all_passes. */
#include <stdio.h>

#include "cli.h"

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

int cli_show_model(const char *path, const poprt_model *m) {
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
                return cli_fail(st, "cannot describe the model");
            printf("  %s: %s%s ", vi.name, kind_prefix(vi.kind), poprt_dtype_name(vi.dtype));
            print_dims(stdout, &vi);
            putchar('\n');
        }
    }
    return 0;
}

/* Describes a compiled session (an executable file's inputs and outputs). */
int cli_show_session(const char *path, const poprt_session *s) {
    printf("executable: %s\n", path);
    for (int io = 0; io < 2; io++) {
        size_t n = io ? poprt_session_num_outputs(s) : poprt_session_num_inputs(s);
        for (size_t k = 0; k < n; k++) {
            poprt_value_info vi = {.size = sizeof vi};
            poprt_status st = io ? poprt_session_output(s, k, &vi) : poprt_session_input(s, k, &vi);
            if (st != POPRT_OK)
                return cli_fail(st, "cannot describe the executable");
            printf("%s %s: %s ", io ? "output" : "input", vi.name, poprt_dtype_name(vi.dtype));
            print_dims(stdout, &vi);
            printf("\n");
        }
    }
    printf("arena bytes: %zu\n", poprt_session_arena_bytes(s));
    return 0;
}


int cli_list_passes(void) {
    const char *const *names;
    size_t n;
    poprt_status st = poprt_pass_list(&names, &n);
    if (st != POPRT_OK)
        return cli_fail(st, "cannot list the passes");
    for (size_t i = 0; i < n; i++) {
        const char *text = NULL;
        if (poprt_pass_describe(names[i], &text) == POPRT_OK && text && text[0])
            printf("%-36s %s\n", names[i], text);
        else
            printf("%s\n", names[i]);
    }
    return 0;
}
