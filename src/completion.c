/* poprt: --print_completion {bash,zsh,fish}, a shell completion script made
 * from the option table (args.c), so that it never lists an option the
 * tool does not take. Pass names (--passes, --skip_passes) come from the
 * installed tool at completion time (poprt --list_all_passes). */
#include <stdio.h>
#include <string.h>

#include "cli.h"

/* The fixed choices of an option, space-separated, or NULL. */
static const char *choices(const char *name) {
    static const struct {
        const char *name, *values;
    } table[] = {
        {"precision", "fp32 fp16 fp8 fp8_weight int8 int8_static bf16"},
        {"logging_level", "DEBUG INFO WARNING ERROR CRITICAL"},
        {"calibration_loss_type", "mse mae snr kld cos_dist gptq"},
        {"framework", "onnx"},
        {"ipu_version", "ipu2 ipu21"},
        {"print_completion", "bash zsh fish"},
    };
    for (size_t i = 0; i < sizeof table / sizeof *table; i++)
        if (!strcmp(name, table[i].name))
            return table[i].values;
    return NULL;
}

static void bash_word(const char *name, int takes_value, void *user) {
    (void)takes_value;
    (void)user;
    printf(" --%s", name);
}

static void bash_choice(const char *name, int takes_value, void *user) {
    (void)user;
    const char *v = takes_value ? choices(name) : NULL;
    if (v)
        printf("        --%s) COMPREPLY=($(compgen -W '%s' -- \"$cur\")); return ;;\n", name, v);
}

static void bash(void) {
    printf("# bash completion for poprt (poprt --print_completion bash)\n"
           "_poprt() {\n"
           "    local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]}\n"
           "    local opts=\"-h -v -i");
    cli_each_option(bash_word, NULL);
    printf("\"\n"
           "    case $prev in\n");
    cli_each_option(bash_choice, NULL);
    printf("        --passes|--skip_passes)\n"
           "            local head='' tail=$cur\n"
           "            compopt -o nospace 2>/dev/null\n"
           "            case $cur in *,*) head=${cur%%,*},; tail=${cur##*,} ;; esac\n"
           "            local names=$(\"${COMP_WORDS[0]}\" --list_all_passes 2>/dev/null | "
           "awk '{print $1}')\n"
           "            COMPREPLY=($(compgen -P \"$head\" -W \"$names\" -- \"$tail\")); return ;;\n"
           "        -i|--input_model|--custom_library_so_paths|--manual_sharding_config|"
           "--config_yaml|--custom_pass_config|--custom_shape_inference|--data_preprocess)\n"
           "            COMPREPLY=($(compgen -f -- \"$cur\")); return ;;\n"
           "    esac\n"
           "    if [[ $cur == -* ]]; then\n"
           "        COMPREPLY=($(compgen -W \"$opts\" -- \"$cur\"))\n"
           "    fi\n"
           "}\n"
           "complete -o default -F _poprt poprt\n");
}

static void fish_line(const char *name, int takes_value, void *user) {
    (void)user;
    const char *v = takes_value ? choices(name) : NULL;
    printf("complete -c poprt -l %s%s", name, takes_value ? " -r" : "");
    if (v)
        printf(" -x -a '%s'", v);
    else if (!strcmp(name, "passes") || !strcmp(name, "skip_passes"))
        printf(" -x -a '(poprt --list_all_passes 2>/dev/null | string replace -r \"\\\\s.*\" \"\")'");
    printf("\n");
}

static void fish(void) {
    printf("# fish completion for poprt (poprt --print_completion fish)\n"
           "complete -c poprt -s h -d 'show help'\n"
           "complete -c poprt -s v -d 'show the version'\n"
           "complete -c poprt -s i -r -d 'input model (.onnx or .popef)'\n");
    cli_each_option(fish_line, NULL);
}

int cli_print_completion(const char *shell) {
    if (!strcmp(shell, "bash")) {
        bash();
    } else if (!strcmp(shell, "zsh")) {
        /* zsh runs the bash function through its bash-completion layer */
        printf("# zsh completion for poprt (poprt --print_completion zsh)\n"
               "autoload -U +X bashcompinit && bashcompinit\n");
        bash();
    } else if (!strcmp(shell, "fish")) {
        fish();
    } else {
        cli_errmsg("argument --print_completion: invalid choice: '%s' (choose from 'bash', "
                   "'zsh', 'fish')",
                   shell);
        return EXIT_USAGE;
    }
    return 0;
}
