/* Pass arguments: "key=value,key=value", values may hold [a,b] lists. */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "passes/passes.h"

poprt_status poprt__pass_args_parse(const char *pass, const char *text, const char *const *known,
                                    poprt__pass_args *out)
{
    memset(out, 0, sizeof *out);
    if (!text || !*text)
        return POPRT_OK;
    size_t len = strlen(text);
    if (len >= sizeof out->buf)
        return poprt__err(POPRT_STATUS_INVALID_OPTION, "pass '%s': arguments too long", pass);
    memcpy(out->buf, text, len + 1);
    char *p = out->buf;
    while (*p) {
        if (out->n == 32)
            return poprt__err(POPRT_STATUS_INVALID_OPTION, "pass '%s': too many arguments", pass);
        /* a key is a name: letters, digits, '_', '.', '-', '/', ':' */
        char *key = p, *eq = p;
        while (*eq && (isalnum((unsigned char)*eq) || strchr("_.-/:", *eq)))
            eq++;
        if (*eq != '=' || eq == p)
            return poprt__err(POPRT_STATUS_INVALID_OPTION,
                              "pass '%s': argument '%s' is not key=value (a key is a name)", pass,
                              p);
        *eq = 0;
        char *val = eq + 1, *q = val;
        int depth = 0;
        while (*q && (depth || *q != ',')) {
            depth += *q == '[';
            depth -= *q == ']';
            if (depth < 0)
                break;
            q++;
        }
        if (depth != 0)
            return poprt__err(POPRT_STATUS_INVALID_OPTION,
                              "pass '%s': argument '%s': unbalanced [ ]", pass, key);
        if (*q)
            *q++ = 0;
        for (int i = 0; i < out->n; i++)
            if (strcmp(out->keys[i], key) == 0)
                return poprt__err(POPRT_STATUS_INVALID_OPTION,
                                  "pass '%s': argument '%s' is given twice", pass, key);
        int ok = !known;
        for (const char *const *k = known; k && *k && !ok; k++)
            ok = strcmp(*k, key) == 0;
        if (!ok)
            return poprt__err(POPRT_STATUS_INVALID_OPTION, "pass '%s': unknown argument '%s'",
                              pass, key);
        out->keys[out->n] = key;
        out->vals[out->n] = val;
        out->n++;
        p = q;
    }
    return POPRT_OK;
}

const char *poprt__pass_arg(const poprt__pass_args *a, const char *key)
{
    for (int i = a->n - 1; i >= 0; i--)
        if (strcmp(a->keys[i], key) == 0)
            return a->vals[i];
    return NULL;
}

/* The number given for key (dflt when absent): an integer (*i) or any number
 * (*d); INVALID_OPTION when malformed. */
static poprt_status arg_number(const char *pass, const poprt__pass_args *a, const char *key,
                               int integer, int64_t *i, double *d)
{
    const char *v = poprt__pass_arg(a, key);
    if (!v)
        return POPRT_OK;
    char *end;
    errno = 0;
    long long x = integer ? strtoll(v, &end, 10) : 0;
    double y = integer ? 0 : strtod(v, &end);
    if (errno || end == v || *end)
        return poprt__err(POPRT_STATUS_INVALID_OPTION, "pass '%s': argument %s='%s' is not %s",
                          pass, key, v, integer ? "an integer" : "a number");
    if (integer)
        *i = x;
    else
        *d = y;
    return POPRT_OK;
}

poprt_status poprt__pass_arg_int(const char *pass, const poprt__pass_args *a, const char *key,
                                 int64_t dflt, int64_t *out)
{
    *out = dflt;
    return arg_number(pass, a, key, 1, out, NULL);
}

poprt_status poprt__pass_arg_float(const char *pass, const poprt__pass_args *a, const char *key,
                                   double dflt, double *out)
{
    *out = dflt;
    return arg_number(pass, a, key, 0, NULL, out);
}

poprt_status poprt__pass_no_args(const char *pass, const char *args)
{
    poprt__pass_args a;
    static const char *const none[] = {NULL};
    return poprt__pass_args_parse(pass, args, none, &a);
}

poprt_status poprt__pass_only_int(const char *pass, const char *args, const char *key, int64_t dflt,
                                  int64_t *out)
{
    const char *const known[] = {key, NULL};
    poprt__pass_args a;
    poprt_status st = poprt__pass_args_parse(pass, args, known, &a);
    return st ? st : poprt__pass_arg_int(pass, &a, key, dflt, out);
}

int poprt__pass_node_names(const char *text, char *buf, size_t bufsz, const char **names, int max)
{
    if (!text || !*text)
        return 0;
    if (strlen(text) >= bufsz)
        return -1;
    strcpy(buf, text);
    char *p = buf;
    if (strncmp(p, "nodes=", 6) == 0)
        p += 6;
    else if (strchr(p, '='))
        return -1;
    if (*p == '[') {
        p++;
        char *e = strrchr(p, ']');
        if (!e)
            return -1;
        *e = 0;
    }
    int n = 0;
    while (*p) {
        char *c = strchr(p, ',');
        if (c)
            *c = 0;
        while (*p == ' ')
            p++;
        if (*p) {
            if (n == max)
                return -1;
            names[n++] = p;
        }
        if (!c)
            break;
        p = c + 1;
    }
    return n;
}
