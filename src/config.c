/* poprt: the files that configure the tool rather than hold a model.
 *
 * --config_yaml FILE: PopRT's YAML config, a mapping from option names (the
 * long names, without "--") to their values. Each key becomes the option
 * words the command line would have (run: true -> --run; input_shape:
 * {x: [1, 4]} -> --input_shape=x=1,4) and goes through the same parser, so a
 * key means exactly what its option means. Options the command line gives
 * replace the file's: their keys are left out. The parser is Debian's libyaml
 * (only the tool links it; the library reads no YAML).
 *
 * --custom_pass_config / --custom_shape_inference: PopRT's are Python
 * files; here each names a plugin (a shared object exporting
 * poprt_plugin_init, docs/plugins.md) or a text file listing plugins.
 *
 * --data_preprocess, --calibrate, --keep_fp32_patterns, --int8_reduce_range: checked against the
 * precision options once every option is known. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <yaml.h>

#include "cli.h"

/* ------------------------------------------------------------- YAML */

typedef struct loader {
    const char *path;
    yaml_document_t *doc;
    const yaml_node_t *root; /* the mapping of options */
    int argc;
    char **argv; /* the command line: its options are not read from the file */
    cli *c;
    char **words; /* the option words of one key; words[0] is a placeholder */
    int n_words;
} loader;

static const char *scalar(const yaml_node_t *n) {
    return n && n->type == YAML_SCALAR_NODE ? (const char *)n->data.scalar.value : NULL;
}

static int line_of(const yaml_node_t *n) { return (int)n->start_mark.line + 1; }

/* YAML 1.1's null and booleans (as PyYAML's safe_load reads them), for
 * plain scalars only: a quoted "true" is a string. */
static int is_plain(const yaml_node_t *n) {
    return n->type == YAML_SCALAR_NODE && n->data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
}

static int is_null(const yaml_node_t *n) {
    static const char *const nulls[] = {"", "~", "null", "Null", "NULL"};
    for (size_t i = 0; is_plain(n) && i < sizeof nulls / sizeof *nulls; i++)
        if (!strcmp(scalar(n), nulls[i]))
            return 1;
    return 0;
}

/* 1 true, 0 false, -1 not a boolean. */
static int boolean(const yaml_node_t *n) {
    static const char *const yes[] = {"true", "True", "TRUE", "yes", "Yes", "YES", "on", "On", "ON"};
    static const char *const no[] = {"false", "False", "FALSE", "no", "No", "NO", "off", "Off", "OFF"};
    for (size_t i = 0; is_plain(n) && i < sizeof yes / sizeof *yes; i++) {
        if (!strcmp(scalar(n), yes[i]))
            return 1;
        if (!strcmp(scalar(n), no[i]))
            return 0;
    }
    return -1;
}

/* What a node is, for a type error: 'text', a list, a mapping. */
static const char *describe(const yaml_node_t *n, char *buf, size_t size) {
    if (n->type == YAML_SEQUENCE_NODE)
        return "a list";
    if (n->type == YAML_MAPPING_NODE)
        return "a mapping";
    snprintf(buf, size, "'%.60s%s'%s", scalar(n), strlen(scalar(n)) > 60 ? "..." : "",
             is_plain(n) ? "" : " (quoted: a string)");
    return buf;
}

/* The option nearest an unknown key (at most 2 edits), for "did you mean". */
typedef struct nearest {
    const char *key, *best;
    size_t best_distance;
} nearest;

static size_t edit_distance(const char *a, const char *b) {
    size_t la = strlen(a), lb = strlen(b), row[128];
    if (lb >= sizeof row / sizeof *row)
        return (size_t)-1;
    for (size_t j = 0; j <= lb; j++)
        row[j] = j;
    for (size_t i = 1; i <= la; i++) {
        size_t diag = row[0];
        row[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t up = row[j];
            size_t best = diag + (a[i - 1] != b[j - 1]);
            if (up + 1 < best)
                best = up + 1;
            if (row[j - 1] + 1 < best)
                best = row[j - 1] + 1;
            row[j] = best;
            diag = up;
        }
    }
    return row[lb];
}

static void consider(const char *name, int takes_value, void *user) {
    (void)takes_value;
    nearest *n = user;
    size_t d = edit_distance(n->key, name);
    if (d <= 2 && d < n->best_distance) {
        n->best = name;
        n->best_distance = d;
    }
}

static int type_error(const loader *l, const char *key, const yaml_node_t *n, const char *want) {
    char buf[128];
    cli_errmsg("%s:%d: key '%s': expected %s, got %s", l->path, line_of(n), key, want,
               describe(n, buf, sizeof buf));
    return EXIT_USAGE;
}

/* Appends "--name=value" (value NULL: "--name") to the key's words. */
static int add_word(loader *l, const char *name, const char *value) {
    char **w = realloc(l->words, (size_t)(l->n_words + 1) * sizeof *w);
    if (!w)
        return -1;
    l->words = w;
    size_t len = strlen(name) + (value ? strlen(value) : 0) + 4;
    if (!(w[l->n_words] = malloc(len)))
        return -1;
    snprintf(w[l->n_words], len, "--%s%s%s", name, value ? "=" : "", value ? value : "");
    l->n_words++;
    return 0;
}

/* A scalar's text, or a list of scalars joined by ',' (malloc'd); NULL with
 * *bad set to the offending node when n is neither. */
static char *joined(const yaml_node_t *n, yaml_document_t *doc, const yaml_node_t **bad) {
    *bad = NULL;
    if (n->type == YAML_SCALAR_NODE)
        return strdup(is_null(n) ? "" : scalar(n));
    if (n->type != YAML_SEQUENCE_NODE) {
        *bad = n;
        return NULL;
    }
    size_t len = 1;
    for (yaml_node_item_t *it = n->data.sequence.items.start; it < n->data.sequence.items.top;
         it++) {
        const yaml_node_t *e = yaml_document_get_node(doc, *it);
        if (!scalar(e)) {
            *bad = e;
            return NULL;
        }
        len += strlen(scalar(e)) + 1;
    }
    char *out = malloc(len), *o = out;
    if (!out)
        return NULL;
    for (yaml_node_item_t *it = n->data.sequence.items.start; it < n->data.sequence.items.top;
         it++) {
        const char *v = scalar(yaml_document_get_node(doc, *it));
        o += sprintf(o, "%s%s", o == out ? "" : ",", v);
    }
    *o = 0;
    return out;
}

/* Each scalar of the list v as a word ("--key=item"); what: an item's kind,
 * for the error. */
static int add_items(loader *l, const char *key, const yaml_node_t *v, const char *what) {
    for (yaml_node_item_t *it = v->data.sequence.items.start; it < v->data.sequence.items.top;
         it++) {
        const yaml_node_t *e = yaml_document_get_node(l->doc, *it);
        if (!scalar(e))
            return type_error(l, key, e, what);
        if (add_word(l, key, scalar(e)))
            return -1;
    }
    return 0;
}

/* The words of one key: a flag, a value (a list joins with ','), KEY=VAL
 * words (a mapping, a list of words or one string of them), or a list of
 * paths. Returns 0, -1 out of memory, or EXIT_USAGE after the message. */
static int key_words(loader *l, const char *key, int kind, const yaml_node_t *v) {
    const yaml_node_t *bad;
    int b = boolean(v);
    switch (kind) {
    case CLI_OPT_FLAG:
        if (b < 0)
            return type_error(l, key, v, "true or false");
        return b ? add_word(l, key, NULL) : 0;
    case CLI_OPT_FLAG_OR_VALUE:
        if (b >= 0)
            return b ? add_word(l, key, NULL) : 0;
        if (!scalar(v))
            return type_error(l, key, v, "true, false or a path");
        return add_word(l, key, scalar(v));
    case CLI_OPT_VALUE: {
        char *s = joined(v, l->doc, &bad);
        if (!s)
            return bad ? type_error(l, key, bad, "a value or a list of values") : -1;
        int rc = add_word(l, key, s);
        free(s);
        return rc;
    }
    case CLI_OPT_LIST:
        if (scalar(v))
            return add_word(l, key, scalar(v));
        if (v->type != YAML_SEQUENCE_NODE)
            return type_error(l, key, v, "a path or a list of paths");
        return add_items(l, key, v, "a path");
    default: /* CLI_OPT_KEYVAL */
        break;
    }
    if (v->type == YAML_MAPPING_NODE) { /* NAME: value or list -> NAME=value,... */
        for (yaml_node_pair_t *p = v->data.mapping.pairs.start; p < v->data.mapping.pairs.top;
             p++) {
            const yaml_node_t *k = yaml_document_get_node(l->doc, p->key);
            const yaml_node_t *e = yaml_document_get_node(l->doc, p->value);
            if (!scalar(k))
                return type_error(l, key, k, "a name");
            char *s = joined(e, l->doc, &bad);
            if (!s)
                return bad ? type_error(l, key, bad, "a value or a list of values") : -1;
            size_t len = strlen(scalar(k)) + strlen(s) + 2;
            char *word = malloc(len);
            int rc = -1;
            if (word) {
                snprintf(word, len, "%s=%s", scalar(k), s);
                rc = add_word(l, key, word);
            }
            free(word);
            free(s);
            if (rc)
                return rc;
        }
        return 0;
    }
    if (v->type == YAML_SEQUENCE_NODE) /* [NAME=value, ...] */
        return add_items(l, key, v, "a KEY=VAL word");
    /* "a=1,2 b=3": the words as the command line has them */
    char *copy = strdup(scalar(v));
    int rc = copy ? 0 : -1;
    for (char *save = NULL, *tok = copy ? strtok_r(copy, " \t", &save) : NULL; tok && !rc;
         tok = strtok_r(NULL, " \t", &save))
        rc = add_word(l, key, tok);
    free(copy);
    return rc;
}

/* Whether the command line gives option name. */
static int on_command_line(const loader *l, const char *name) {
    for (int i = 1; i < l->argc; i++) {
        char n[128];
        const char *inline_val;
        if (cli_option_word(l->argv[i], n, &inline_val) && !strcmp(n, name))
            return 1;
    }
    return 0;
}

/* Keeps the words (the parsed options may point into them) in c. */
static int keep_words(loader *l) {
    char **o = realloc(l->c->owned, (l->c->n_owned + (size_t)l->n_words) * sizeof *o);
    if (!o)
        return -1;
    l->c->owned = o;
    for (int i = 1; i < l->n_words; i++)
        o[l->c->n_owned++] = l->words[i];
    l->n_words = 1;
    return 0;
}

static int load_key(loader *l, const yaml_node_pair_t *pair) {
    const yaml_node_t *k = yaml_document_get_node(l->doc, pair->key);
    const yaml_node_t *v = yaml_document_get_node(l->doc, pair->value);
    const char *key = scalar(k);
    char buf[128];
    if (!key || !*key) {
        cli_errmsg("%s:%d: expected an option name as the key, got %s", l->path, line_of(k),
                   key ? "''" : describe(k, buf, sizeof buf));
        return EXIT_USAGE;
    }
    for (const yaml_node_pair_t *p = l->root->data.mapping.pairs.start; p < pair; p++)
        if (scalar(yaml_document_get_node(l->doc, p->key)) &&
            !strcmp(scalar(yaml_document_get_node(l->doc, p->key)), key)) {
            cli_errmsg("%s:%d: key '%s' given twice (first on line %d)", l->path, line_of(k), key,
                       line_of(yaml_document_get_node(l->doc, p->key)));
            return EXIT_USAGE;
        }
    int kind = cli_option_kind(key);
    if (!strcmp(key, "config_yaml")) {
        cli_errmsg("%s:%d: key 'config_yaml': a config file cannot name another", l->path,
                   line_of(k));
        return EXIT_USAGE;
    }
    if (kind == CLI_OPT_UNKNOWN) {
        nearest n = {key, NULL, (size_t)-1};
        cli_each_option(consider, &n);
        cli_errmsg("%s:%d: unknown key '%s' (%s%s%s)", l->path, line_of(k), key,
                   n.best ? "did you mean '" : "keys are the long option names of poprt --help",
                   n.best ? n.best : "", n.best ? "'?" : "");
        return EXIT_USAGE;
    }
    if (is_null(v))
        return 0; /* PopRT's None: the option's default */
    int rc = key_words(l, key, kind, v);
    if (rc < 0) {
        cli_errmsg("%s: out of memory", l->path);
        return EXIT_FAILURE;
    }
    if (!rc && on_command_line(l, key)) { /* its type checked; the command line's value wins */
        while (l->n_words > 1)
            free(l->words[--l->n_words]);
        return 0;
    }
    if (rc || l->n_words == 1)
        return rc;
    char context[PATH_MAX + 160];
    snprintf(context, sizeof context, "%s:%d: key '%s': ", l->path, line_of(k), key);
    cli_error_context(context);
    rc = cli_parse_words(l->n_words, l->words, l->c);
    cli_error_context(NULL);
    if (keep_words(l)) {
        cli_errmsg("%s: out of memory", l->path);
        return EXIT_FAILURE;
    }
    return rc;
}

int cli_config_load(const char *path, int argc, char **argv, cli *c) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        cli_errmsg("--config_yaml: cannot read '%s': %s", path, strerror(errno));
        return EXIT_USAGE;
    }
    yaml_parser_t parser;
    yaml_document_t doc, next;
    if (!yaml_parser_initialize(&parser)) {
        fclose(f);
        cli_errmsg("--config_yaml: out of memory");
        return EXIT_FAILURE;
    }
    yaml_parser_set_input_file(&parser, f);
    int rc = 0, loaded = yaml_parser_load(&parser, &doc), parsed = loaded;
    if (loaded && yaml_document_get_root_node(&doc)) { /* a second document is an error */
        if ((parsed = yaml_parser_load(&parser, &next)) != 0) {
            if (yaml_document_get_root_node(&next)) {
                cli_errmsg("%s:%d: a second YAML document: the config is one mapping", path,
                           line_of(yaml_document_get_root_node(&next)));
                rc = EXIT_USAGE;
            }
            yaml_document_delete(&next);
        }
    }
    if (!parsed) {
        if (parser.error == YAML_MEMORY_ERROR)
            cli_errmsg("%s: out of memory", path);
        else if (parser.error == YAML_READER_ERROR)
            cli_errmsg("%s: invalid YAML: %s at byte %zu", path,
                       parser.problem ? parser.problem : "unreadable text", parser.problem_offset);
        else if (parser.context) /* "while parsing a flow sequence" and where it began */
            cli_errmsg("%s:%d:%d: invalid YAML: %s %s (from line %d)", path,
                       (int)parser.problem_mark.line + 1, (int)parser.problem_mark.column + 1,
                       parser.problem ? parser.problem : "syntax error", parser.context,
                       (int)parser.context_mark.line + 1);
        else
            cli_errmsg("%s:%d:%d: invalid YAML: %s", path, (int)parser.problem_mark.line + 1,
                       (int)parser.problem_mark.column + 1,
                       parser.problem ? parser.problem : "syntax error");
        rc = parser.error == YAML_MEMORY_ERROR ? EXIT_FAILURE : EXIT_USAGE;
    }
    yaml_node_t *root = !rc ? yaml_document_get_root_node(&doc) : NULL;
    if (root && !(root->type == YAML_MAPPING_NODE || is_null(root))) {
        char buf[128];
        cli_errmsg("%s:%d: expected a mapping of option names to values, got %s", path,
                   line_of(root), describe(root, buf, sizeof buf));
        rc = EXIT_USAGE;
    } else if (root && root->type == YAML_MAPPING_NODE) {
        loader l = {path, &doc, root, argc, argv, c, malloc(sizeof(char *)), 1};
        if (!l.words) {
            cli_errmsg("%s: out of memory", path);
            rc = EXIT_FAILURE;
        } else {
            l.words[0] = (char *)"config";
            for (yaml_node_pair_t *p = root->data.mapping.pairs.start;
                 !rc && p < root->data.mapping.pairs.top; p++)
                rc = load_key(&l, p);
            for (int i = 1; i < l.n_words; i++)
                free(l.words[i]);
            free(l.words);
        }
    }
    if (loaded)
        yaml_document_delete(&doc);
    yaml_parser_delete(&parser);
    fclose(f);
    return rc;
}

/* ---------------------------------------------------------- plugins */

/* Loads one plugin file: a shared object, or a text file listing shared
 * objects (one path a line, relative to the list's folder; '#' comments). */
static int load_plugin_file(const char *path, const char *opt) {
    char what[PATH_MAX + 64];
    snprintf(what, sizeof what, "%s '%s'", opt, path);
    FILE *f = fopen(path, "rb");
    if (!f) {
        cli_errmsg("%s: %s", what, strerror(errno));
        return EXIT_FAILURE;
    }
    static char text[1 << 16]; /* a list: its first 64 KiB */
    size_t got = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[got] = 0;
    size_t n = strlen(path);
    if (got >= 4 && !memcmp(text, "\x7f" "ELF", 4)) {
        poprt_status st = poprt_plugin_load(path);
        return st == POPRT_OK ? 0 : cli_fail(st, what);
    }
    if (n > 3 && !strcmp(path + n - 3, ".py")) {
        cli_errmsg("%s: a Python file: PopRT runs Python here, libpoprt loads C plugins (a shared "
                   "object exporting poprt_plugin_init, docs/plugins.md) or a text file listing "
                   "them",
                   what);
        return EXIT_USAGE;
    }
    int is_text = got < sizeof text - 1;
    for (size_t i = 0; i < got; i++) { /* control characters: not a list */
        unsigned char ch = (unsigned char)text[i];
        if ((ch < 0x20 && ch != '\t' && ch != '\r' && ch != '\n') || ch == 0x7f)
            is_text = 0;
    }
    if (!is_text) {
        cli_errmsg("%s: neither a shared object nor a text list of plugin paths", what);
        return EXIT_USAGE;
    }
    /* one path a line; relative ones from the list's folder */
    const char *slash = strrchr(path, '/');
    int dir_len = slash ? (int)(slash - path) + 1 : 0, loaded = 0, lineno = 0;
    for (char *line = text, *next; line && *line; line = next) {
        lineno++;
        next = strchr(line, '\n');
        if (next)
            *next++ = 0;
        while (*line == ' ' || *line == '\t')
            line++;
        size_t len = strlen(line);
        while (len && strchr(" \t\r", line[len - 1]))
            line[--len] = 0;
        if (!*line || *line == '#')
            continue;
        char plugin[2 * PATH_MAX], where[PATH_MAX + 80];
        snprintf(plugin, sizeof plugin, "%.*s%s%s", *line == '/' ? 0 : dir_len, path,
                 *line == '/' || dir_len ? "" : "./", line);
        poprt_status st = poprt_plugin_load(plugin);
        if (st != POPRT_OK) {
            snprintf(where, sizeof where, "%s (%s:%d)", what, path, lineno);
            return cli_fail(st, where);
        }
        loaded++;
    }
    if (!loaded) {
        cli_errmsg("%s: lists no plugin", what);
        return EXIT_USAGE;
    }
    return 0;
}

static size_t num_passes(void) {
    const char *const *names;
    size_t n = 0;
    return poprt_pass_list(&names, &n) == POPRT_OK ? n : 0;
}

int cli_load_plugin_files(const cli *c) {
    if (c->custom_pass_config) {
        size_t before = num_passes();
        int rc = load_plugin_file(c->custom_pass_config, "--custom_pass_config");
        if (rc)
            return rc;
        if (num_passes() == before) {
            cli_errmsg("--custom_pass_config '%s': its plugins registered no pass",
                       c->custom_pass_config);
            return EXIT_FAILURE;
        }
    }
    if (!c->custom_shape_inference)
        return 0;
    /* "a.so,b.so" as PopRT's "a.py,b.py" */
    char *list = strdup(c->custom_shape_inference);
    int rc = list ? 0 : EXIT_FAILURE;
    for (char *save = NULL, *tok = list ? strtok_r(list, ",", &save) : NULL; tok && !rc;
         tok = strtok_r(NULL, ",", &save))
        rc = load_plugin_file(tok, "--custom_shape_inference");
    free(list);
    return rc;
}

/* ----------------------------------------------- precision options */

int cli_check_precision_options(cli *c) {
    int fp8 = c->precision && !strncmp(c->precision, "fp8", 3);
    if (c->data_preprocess) {
        /* PopRT's pickle of {input name: ndarray}; here a calibration folder */
        const char *d = c->data_preprocess;
        size_t n = strlen(d);
        struct stat sb;
        if (stat(d, &sb) != 0) {
            cli_errmsg("--data_preprocess '%s': %s", d, strerror(errno));
            return EXIT_FAILURE;
        }
        if (!S_ISDIR(sb.st_mode)) {
            int pickle = (n > 4 && !strcmp(d + n - 4, ".pkl")) ||
                         (n > 7 && !strcmp(d + n - 7, ".pickle"));
            FILE *f = pickle ? NULL : fopen(d, "rb");
            if (f) {
                pickle = fgetc(f) == 0x80; /* pickle protocol 2 and later */
                fclose(f);
            }
            cli_errmsg("--data_preprocess '%s': %s; give a calibration folder (one "
                       "sub-folder of input_K.pb TensorProto files per sample, "
                       "docs/calibration.md shows how to write one from Python)",
                       d, pickle ? "a Python pickle, which only Python can read (unpickling runs "
                                   "Python code)"
                                 : "not a folder");
            return EXIT_USAGE;
        }
        if (c->calibration_data && strcmp(c->calibration_data, d)) {
            cli_errmsg("--data_preprocess '%s' and --calibration_data '%s': give one folder of "
                       "calibration samples",
                       d, c->calibration_data);
            return EXIT_USAGE;
        }
        c->calibration_data = d;
    }
    if (c->calibrate && fp8 && !c->calibration_data) {
        cli_errmsg("--calibrate needs calibration samples: --calibration_data DIR or "
                   "--data_preprocess DIR (without --calibrate, fp8 is calibrated on random "
                   "inputs, with a warning)");
        return EXIT_USAGE;
    }
    if (c->calibrate && !fp8)
        fprintf(stderr, "%s: warning: --calibrate has no effect without --precision fp8 or "
                        "fp8_weight: only fp8 scales are calibrated\n",
                CLI_PROG);
    if (c->bf16_target_cosine && !(c->precision && !strcmp(c->precision, "bf16")))
        fprintf(stderr, "%s: warning: --bf16_target_cosine has no effect without --precision "
                        "bf16: it keeps bfloat16's most sensitive nodes in float32\n",
                CLI_PROG);
    if (c->int8_reduce_range && !(c->precision && !strncmp(c->precision, "int8", 4)))
        fprintf(stderr, "%s: warning: --int8_reduce_range has no effect without --precision "
                        "int8 or int8_static: it quantizes their weights to 7 bits\n",
                CLI_PROG);
    if (c->keep_fp32_patterns && !(c->precision && !strcmp(c->precision, "fp16")))
        fprintf(stderr, "%s: warning: --keep_fp32_patterns has no effect without --precision "
                        "fp16: it keeps float16's overflow-prone nodes in float32\n",
                CLI_PROG);
    return 0;
}
