/* Einsum equation parsing (see einsum.h). */
#include <string.h>
#include "ir/einsum.h"

#define EINSUM_ELL 52 /* label ids of ellipsis dims start here */

static int einsum_label(char ch)
{
    if (ch >= 'a' && ch <= 'z')
        return ch - 'a';
    if (ch >= 'A' && ch <= 'Z')
        return 26 + ch - 'A';
    return -1;
}

int poprt__einsum_parse(const char *eq, int n_in, const int *ranks, poprt__einsum *e)
{
    char buf[512];
    size_t len = 0;
    for (const char *p = eq; *p; p++)
        if (*p != ' ' && len + 1 < sizeof buf)
            buf[len++] = *p;
    buf[len] = 0;
    memset(e, 0, sizeof *e);
    if (n_in < 1 || n_in > POPRT__EINSUM_MAX_IN)
        return 0;
    e->n_in = n_in;
    char *arrow = strstr(buf, "->");
    char *rhs = NULL;
    if (arrow) {
        *arrow = 0;
        rhs = arrow + 2;
    }
    /* pass 1: letters per term and ellipsis ranks */
    int max_ell = 0, term = 0;
    const char *p = buf;
    int counts[64] = {0};
    for (;;) {
        if (term >= n_in)
            return 0;
        int letters = 0, has_ell = 0;
        const char *q = p;
        for (; *q && *q != ','; q++) {
            if (*q == '.') {
                if (has_ell || strncmp(q, "...", 3))
                    return 0;
                has_ell = 1;
                q += 2;
            } else if (einsum_label(*q) >= 0) {
                letters++;
            } else {
                return 0;
            }
        }
        int er = has_ell ? ranks[term] - letters : 0;
        if (er < 0 || (!has_ell && ranks[term] != letters) || er > 12)
            return 0;
        if (er > max_ell)
            max_ell = er;
        /* pass 2 over the term: label ids per dim */
        int d = 0;
        for (const char *r = p; r < q; r++) {
            if (*r == '.') {
                for (int i = 0; i < er; i++)
                    e->lab[term][d++] = EINSUM_ELL + 12 - er + i; /* right-aligned */
                r += 2;
            } else {
                int l = einsum_label(*r);
                e->lab[term][d++] = l;
                counts[l]++;
            }
        }
        e->rank[term] = d;
        term++;
        if (!*q)
            break;
        p = q + 1;
    }
    if (term != n_in)
        return 0;
    e->n_labels = 64;
    if (rhs) {
        int seen_ell = 0;
        for (const char *r = rhs; *r; r++) {
            if (*r == '.') {
                if (seen_ell || strncmp(r, "...", 3))
                    return 0;
                seen_ell = 1;
                for (int i = 0; i < max_ell; i++)
                    e->out_lab[e->out_rank++] = EINSUM_ELL + 12 - max_ell + i;
                r += 2;
            } else {
                int l = einsum_label(*r);
                if (l < 0 || counts[l] == 0 || e->out_rank >= POPRT__MAX_RANK)
                    return 0;
                for (int i = 0; i < e->out_rank; i++)
                    if (e->out_lab[i] == l)
                        return 0;
                e->out_lab[e->out_rank++] = l;
            }
        }
    } else {
        for (int i = 0; i < max_ell; i++)
            e->out_lab[e->out_rank++] = EINSUM_ELL + 12 - max_ell + i;
        for (int l = 0; l < 52; l++)
            if (counts[l] == 1) {
                if (e->out_rank >= POPRT__MAX_RANK)
                    return 0;
                e->out_lab[e->out_rank++] = l;
            }
    }
    return 1;
}
