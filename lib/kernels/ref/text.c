/* Reference kernels of the 'text' group: StringNormalizer, StringConcat,
 * StringSplit, RegexFullMatch (the engine: lib/core/regex.h). */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include "core/regex.h"
#include "kernels/ref/text.h"
#include "kernels/ref/util.h"

static int qm_ieq(const char *a, const char *b)
{
    for (; *a && *b; a++, b++)
        if (tolower((unsigned char)*a) != tolower((unsigned char)*b))
            return 0;
    return *a == *b;
}

poprt_status poprt__ref_string_normalizer(poprt__kctx *k)
{
    const poprt__tval *x = poprt__kin(k, 0);
    poprt_status st = poprt__ref_need(k, x && x->dtype == POPRT_DTYPE_STRING && (x->rank == 1 || x->rank == 2));
    if (st)
        return st;
    if (x->rank == 2 && x->dims[0] != 1)
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_SHAPE_MISMATCH, "input must be [C] or [1, C]");
    const char *act = poprt__attr_s(k->node, "case_change_action", "NONE");
    const int upper = strcmp(act, "UPPER") == 0, lower = strcmp(act, "LOWER") == 0;
    const int sensitive = (int)poprt__attr_i(k->node, "is_case_sensitive", 0);
    const poprt__attr *sw = poprt__node_attr(k->node, "stopwords");
    const char *const *xs = x->data;
    const int64_t n = x->numel;
    const char **keep = poprt__kctx_scratch(k, (size_t)(n + 1) * sizeof *keep);
    if (!keep)
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_OUT_OF_MEMORY, "out of scratch memory");
    int64_t m = 0;
    for (int64_t i = 0; i < n; i++) {
        int stop = 0;
        for (int64_t j = 0; sw && j < sw->n && !stop; j++)
            stop = sensitive ? strcmp(xs[i], sw->strings[j]) == 0 : qm_ieq(xs[i], sw->strings[j]);
        if (!stop)
            keep[m++] = xs[i];
    }
    int64_t od[2] = {1, m ? m : 1}; /* all removed: one empty string */
    if ((st = poprt__kctx_alloc_output(k, 0, POPRT_DTYPE_STRING, x->rank,
                                       x->rank == 2 ? od : od + 1)))
        return st;
    poprt__tval *y = poprt__kout(k, 0);
    if (!y)
        return POPRT_OK;
    char **ys = y->data;
    if (!m) {
        ys[0] = poprt__kctx_strdup(k, "", 0);
        return ys[0] ? POPRT_OK
                     : POPRT__NODE_ERR(k->node, POPRT_STATUS_OUT_OF_MEMORY, "out of memory");
    }
    for (int64_t i = 0; i < m; i++) {
        size_t len = strlen(keep[i]);
        char *s = poprt__kctx_strdup(k, keep[i], len);
        if (!s)
            return POPRT__NODE_ERR(k->node, POPRT_STATUS_OUT_OF_MEMORY, "out of memory");
        for (size_t c = 0; c < len; c++)
            if (upper)
                s[c] = (char)toupper((unsigned char)s[c]);
            else if (lower)
                s[c] = (char)tolower((unsigned char)s[c]);
        ys[i] = s;
    }
    return POPRT_OK;
}

poprt_status poprt__ref_string_concat(poprt__kctx *k)
{
    const poprt__tval *a = poprt__kin(k, 0), *b = poprt__kin(k, 1);
    poprt__tval *y = poprt__kout(k, 0);
    poprt_status st = poprt__ref_need(k, a && b && y);
    if (st)
        return st;
    int64_t sa[POPRT__MAX_RANK], sb[POPRT__MAX_RANK], idx[POPRT__MAX_RANK] = {0};
    poprt__bcast_strides(a, y->rank, y->dims, sa);
    poprt__bcast_strides(b, y->rank, y->dims, sb);
    const char *const *as = a->data, *const *bs = b->data;
    char **ys = y->data;
    for (int64_t i = 0; i < y->numel; i++) {
        int64_t ia = 0, ib = 0;
        for (int d = 0; d < y->rank; d++) {
            ia += idx[d] * sa[d];
            ib += idx[d] * sb[d];
        }
        size_t la = strlen(as[ia]), lb = strlen(bs[ib]);
        char *s = poprt__kctx_strdup(k, as[ia], la + lb);
        if (!s)
            return POPRT__NODE_ERR(k->node, POPRT_STATUS_OUT_OF_MEMORY, "out of memory");
        memcpy(s + la, bs[ib], lb);
        s[la + lb] = '\0';
        ys[i] = s;
        for (int d = y->rank - 1; d >= 0; d--)
            if (++idx[d] < y->dims[d])
                break;
            else
                idx[d] = 0;
    }
    return POPRT_OK;
}

/* Splits s; calls out(ctx, piece, len) per substring; returns the count. */
static int64_t qm_split(const char *s, const char *delim, int64_t maxsplit, char **outs,
                        poprt__kctx *k, int *oom)
{
    int64_t n = 0, splits = 0;
    size_t dl = delim ? strlen(delim) : 0;
    const char *p = s;
    if (!dl) {
        /* runs of whitespace separate; leading/trailing whitespace is dropped */
        while (*p) {
            while (*p && isspace((unsigned char)*p))
                p++;
            if (!*p)
                break;
            const char *e = p;
            if (maxsplit >= 0 && splits >= maxsplit)
                e = p + strlen(p);
            else
                while (*e && !isspace((unsigned char)*e))
                    e++;
            if (maxsplit >= 0 && splits >= maxsplit) {
                /* the rest, trailing whitespace removed */
                while (e > p && isspace((unsigned char)e[-1]))
                    e--;
            }
            if (outs && !(outs[n] = poprt__kctx_strdup(k, p, (size_t)(e - p))))
                *oom = 1;
            n++;
            splits++;
            p = e;
        }
        return n;
    }
    for (;;) {
        const char *e = (maxsplit >= 0 && splits >= maxsplit) ? NULL : strstr(p, delim);
        if (!e)
            e = p + strlen(p);
        if (outs && !(outs[n] = poprt__kctx_strdup(k, p, (size_t)(e - p))))
            *oom = 1;
        n++;
        if (!*e)
            break;
        p = e + dl;
        splits++;
    }
    return n;
}

poprt_status poprt__ref_string_split(poprt__kctx *k)
{
    const poprt__tval *x = poprt__kin(k, 0);
    poprt_status st = poprt__ref_need(k, x && x->dtype == POPRT_DTYPE_STRING && x->rank < POPRT__MAX_RANK);
    if (st)
        return st;
    const char *delim = poprt__attr_s(k->node, "delimiter", "");
    const poprt__attr *ma = poprt__node_attr(k->node, "maxsplit");
    const int64_t maxsplit = ma ? ma->i : -1;
    const char *const *xs = x->data;
    int64_t most = 0;
    int oom = 0;
    for (int64_t i = 0; i < x->numel; i++) {
        int64_t c = qm_split(xs[i], delim, maxsplit, NULL, k, &oom);
        most = c > most ? c : most;
    }
    int64_t od[POPRT__MAX_RANK];
    memcpy(od, x->dims, (size_t)x->rank * sizeof *od);
    od[x->rank] = most;
    if ((st = poprt__kctx_alloc_output(k, 0, POPRT_DTYPE_STRING, x->rank + 1, od)) ||
        (st = poprt__kctx_alloc_output(k, 1, POPRT_DTYPE_INT64, x->rank, od)))
        return st;
    poprt__tval *y = poprt__kout(k, 0), *z = poprt__kout(k, 1);
    char **tmp = poprt__kctx_scratch(k, (size_t)(most + 1) * sizeof *tmp);
    char *empty = poprt__kctx_strdup(k, "", 0);
    if (!tmp || !empty)
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_OUT_OF_MEMORY, "out of memory");
    for (int64_t i = 0; i < x->numel; i++) {
        int64_t c = qm_split(xs[i], delim, maxsplit, tmp, k, &oom);
        if (oom)
            return POPRT__NODE_ERR(k->node, POPRT_STATUS_OUT_OF_MEMORY, "out of memory");
        if (y)
            for (int64_t j = 0; j < most; j++)
                ((char **)y->data)[i * most + j] = j < c ? tmp[j] : empty;
        if (z)
            ((int64_t *)z->data)[i] = c;
    }
    return POPRT_OK;
}

static void *qm_scratch_alloc(void *ctx, size_t n) { return poprt__kctx_scratch(ctx, n); }

poprt_status poprt__ref_regex_full_match(poprt__kctx *k)
{
    const poprt__tval *x = poprt__kin(k, 0);
    poprt__tval *y = poprt__kout(k, 0);
    poprt_status st = poprt__ref_need(k, x && y && x->dtype == POPRT_DTYPE_STRING);
    if (st)
        return st;
    poprt__regex *re;
    if ((st = poprt__regex_compile(poprt__attr_s(k->node, "pattern", ""), qm_scratch_alloc, k,
                                   &re)))
        return poprt__node_err_last(k->node, st);
    const char *const *xs = x->data;
    size_t most = 0;
    for (int64_t i = 0; i < x->numel; i++) {
        size_t l = strlen(xs[i]);
        most = l > most ? l : most;
    }
    size_t n_visited, n_stack;
    if (!poprt__regex_scratch(re, most, &n_visited, &n_stack))
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_RUNTIME_ERROR,
                               "pattern of %d instructions on a %zu-byte string: more than %d "
                               "match states",
                               poprt__regex_prog_size(re), most, POPRT__REGEX_MAX_STATES);
    uint8_t *visited = poprt__kctx_scratch(k, n_visited);
    uint32_t *stack = poprt__kctx_scratch(k, n_stack * sizeof *stack);
    if (!visited || !stack)
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_OUT_OF_MEMORY, "out of scratch memory");
    uint8_t *yb = y->data;
    for (int64_t i = 0; i < x->numel; i++)
        yb[i] = (uint8_t)poprt__regex_full_match(re, xs[i], visited, stack);
    return POPRT_OK;
}
