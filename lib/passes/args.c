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

poprt_status poprt__pass_arg_int(const char *pass, const poprt__pass_args *a, const char *key,
                                 int64_t dflt, int64_t *out)
{
    const char *v = poprt__pass_arg(a, key);
    if (!v) {
        *out = dflt;
        return POPRT_OK;
    }
    char *end;
    errno = 0;
    long long x = strtoll(v, &end, 10);
    if (errno || end == v || *end)
        return poprt__err(POPRT_STATUS_INVALID_OPTION,
                          "pass '%s': argument %s='%s' is not an integer", pass, key, v);
    *out = x;
    return POPRT_OK;
}

poprt_status poprt__pass_arg_float(const char *pass, const poprt__pass_args *a, const char *key,
                                   double dflt, double *out)
{
    const char *v = poprt__pass_arg(a, key);
    if (!v) {
        *out = dflt;
        return POPRT_OK;
    }
    char *end;
    errno = 0;
    double x = strtod(v, &end);
    if (errno || end == v || *end)
        return poprt__err(POPRT_STATUS_INVALID_OPTION,
                          "pass '%s': argument %s='%s' is not a number", pass, key, v);
    *out = x;
    return POPRT_OK;
}
