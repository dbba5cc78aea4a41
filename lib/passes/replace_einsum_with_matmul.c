/* replace_einsum_with_matmul: two-operand Einsum with exactly one summed
 * label, no repeated labels within an operand and no label summed away from
 * one operand alone (every "batched matrix product" such as
 * "bhqd,bhkd->bhqk", "bij,bjk->bik", "bnd,dh->bnh", "...ij,...jk->...ik")
 * becomes Transpose / Unsqueeze -> MatMul -> Squeeze / Transpose, so it runs
 * on the tuned MatMul kernels. Leading ellipses are supported when the input
 * ranks are known. */
#include <string.h>
#include "passes/rewrite.h"

#define MAXL 26

typedef struct term {
    int ell;      /* starts with "..." */
    int n;        /* named labels */
    char l[POPRT__MAX_RANK];
} term;

/* Parses "...abc" (ellipsis only at the start); 0 when unsupported. */
static int parse_term(const char *s, size_t len, term *t)
{
    memset(t, 0, sizeof *t);
    if (len >= 3 && strncmp(s, "...", 3) == 0) {
        t->ell = 1;
        s += 3;
        len -= 3;
    }
    for (size_t i = 0; i < len; i++) {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) || t->n == POPRT__MAX_RANK)
            return 0;
        for (int k = 0; k < t->n; k++)
            if (t->l[k] == c)
                return 0; /* diagonal */
        t->l[t->n++] = c;
    }
    return 1;
}

static int find(const term *t, char c)
{
    for (int i = 0; i < t->n; i++)
        if (t->l[i] == c)
            return i;
    return -1;
}

/* The rewrite plan for one Einsum. */
typedef struct plan {
    term a, b, o;
    int ea, eb;           /* ellipsis ranks */
    char batch[POPRT__MAX_RANK], aex[POPRT__MAX_RANK], bex[POPRT__MAX_RANK];
    int nb, na, nbx;
    char m, n, k;         /* 0: absent (m, n) */
} plan;

static int make_plan(const poprt__node *node, plan *p)
{
    const char *eq = poprt__attr_s(node, "equation", NULL);
    if (!eq || node->n_inputs != 2 || !node->inputs[0] || !node->inputs[1])
        return 0;
    char buf[128];
    size_t L = 0;
    for (const char *q = eq; *q && L + 1 < sizeof buf; q++)
        if (*q != ' ')
            buf[L++] = *q;
    buf[L] = 0;
    const char *arrow = strstr(buf, "->"), *comma = strchr(buf, ',');
    const char *end_b = arrow ? arrow : buf + L;
    if (!comma || comma > end_b || strchr(comma + 1, ','))
        return 0;
    memset(p, 0, sizeof *p);
    if (!parse_term(buf, (size_t)(comma - buf), &p->a) ||
        !parse_term(comma + 1, (size_t)(end_b - comma - 1), &p->b))
        return 0;
    if (arrow) {
        if (!parse_term(arrow + 2, strlen(arrow + 2), &p->o))
            return 0;
    } else {
        /* implicit output: labels used once, in alphabetical order */
        p->o.ell = p->a.ell || p->b.ell;
        for (int c = 0; c < 128; c++) {
            int uses = (find(&p->a, (char)c) >= 0) + (find(&p->b, (char)c) >= 0);
            if (c && uses == 1 && p->o.n < POPRT__MAX_RANK)
                p->o.l[p->o.n++] = (char)c;
        }
    }
    const poprt__type *ta = &node->inputs[0]->type, *tb = &node->inputs[1]->type;
    if (ta->kind != POPRT__KIND_TENSOR || tb->kind != POPRT__KIND_TENSOR)
        return 0;
    if (p->a.ell || p->b.ell || p->o.ell) {
        if (!p->o.ell || ta->rank < 0 || tb->rank < 0)
            return 0;
        p->ea = p->a.ell ? ta->rank - p->a.n : 0;
        p->eb = p->b.ell ? tb->rank - p->b.n : 0;
        if (p->ea < 0 || p->eb < 0)
            return 0;
    } else if ((ta->rank >= 0 && ta->rank != p->a.n) || (tb->rank >= 0 && tb->rank != p->b.n)) {
        return 0;
    }
    int nk = 0;
    for (int i = 0; i < p->a.n; i++) {
        char c = p->a.l[i];
        int inb = find(&p->b, c) >= 0, ino = find(&p->o, c) >= 0;
        if (inb && !ino) {
            p->k = c;
            nk++;
        } else if (!inb && !ino)
            return 0; /* summed over one operand only */
    }
    for (int i = 0; i < p->b.n; i++)
        if (find(&p->a, p->b.l[i]) < 0 && find(&p->o, p->b.l[i]) < 0)
            return 0;
    if (nk != 1)
        return 0;
    /* output labels in output order: batch / A-only / B-only */
    char aonly[POPRT__MAX_RANK], bonly[POPRT__MAX_RANK];
    int nao = 0, nbo = 0;
    for (int i = 0; i < p->o.n; i++) {
        char c = p->o.l[i];
        int ina = find(&p->a, c) >= 0, inb = find(&p->b, c) >= 0;
        if (ina && inb)
            p->batch[p->nb++] = c;
        else if (ina)
            aonly[nao++] = c;
        else if (inb)
            bonly[nbo++] = c;
        else
            return 0;
    }
    if (nao) {
        p->m = aonly[nao - 1];
        memcpy(p->aex, aonly, (size_t)(nao - 1));
        p->na = nao - 1;
    }
    if (nbo) {
        p->n = bonly[nbo - 1];
        memcpy(p->bex, bonly, (size_t)(nbo - 1));
        p->nbx = nbo - 1;
    }
    int e = p->ea > p->eb ? p->ea : p->eb;
    if (e + p->nb + p->na + p->nbx + 2 > POPRT__MAX_RANK)
        return 0;
    return 1;
}

static int identity(const int64_t *perm, int n)
{
    for (int i = 0; i < n; i++)
        if (perm[i] != i)
            return 0;
    return 1;
}

static poprt__tensor *transpose(poprt__graph *g, poprt__tensor *x, const int64_t *perm, int n,
                                int *oom)
{
    if (identity(perm, n))
        return x;
    poprt__node *t = poprt__rw_node1(g, "Transpose", "", 1, &x, NULL, "einsum_t");
    if (!t || poprt__rw_attr_ints(t, "perm", n, perm)) {
        *oom = 1;
        return NULL;
    }
    return t->outputs[0];
}

static poprt__tensor *unsqueeze(poprt__graph *g, poprt__tensor *x, const int64_t *axes, int n, int *oom)
{
    if (!n)
        return x;
    poprt__node *u = poprt__rw_axes_node(g, "Unsqueeze", x, n, axes, NULL);
    if (!u) {
        *oom = 1;
        return NULL;
    }
    return u->outputs[0];
}

/* Operand x with labels t (after e ellipsis dims) laid out as
 * [ell, batch, own-extra, (1 x other-extra), row, col]; own_first says
 * whether own extras come before the other's (A) or after (B). */
static poprt__tensor *operand(poprt__graph *g, poprt__tensor *x, const term *t, int e,
                              const plan *p, int is_a, int *oom)
{
    int64_t perm[POPRT__MAX_RANK], axes[POPRT__MAX_RANK];
    int np = 0, nax = 0;
    for (int i = 0; i < e; i++)
        perm[np++] = i;
    for (int i = 0; i < p->nb; i++)
        perm[np++] = e + find(t, p->batch[i]);
    const char *own = is_a ? p->aex : p->bex;
    int nown = is_a ? p->na : p->nbx, nother = is_a ? p->nbx : p->na;
    int before = np; /* position where the extras start */
    for (int i = 0; i < nown; i++)
        perm[np++] = e + find(t, own[i]);
    char row = is_a ? p->m : p->k, col = is_a ? p->k : p->n;
    if (row)
        perm[np++] = e + find(t, row);
    if (col)
        perm[np++] = e + find(t, col);
    poprt__tensor *y = transpose(g, x, perm, np, oom);
    if (!y)
        return NULL;
    /* final layout positions of the inserted 1-dims */
    int pos_other = is_a ? before + nown : before;
    for (int i = 0; i < nother; i++)
        axes[nax++] = pos_other + i;
    int final_rank = np + nother + (row ? 0 : 1) + (col ? 0 : 1);
    if (!row)
        axes[nax++] = final_rank - 2;
    if (!col)
        axes[nax++] = final_rank - 1;
    /* sort axes ascending (they already are except when other-extras follow) */
    for (int i = 1; i < nax; i++)
        for (int j = i; j > 0 && axes[j - 1] > axes[j]; j--) {
            int64_t tmp = axes[j];
            axes[j] = axes[j - 1];
            axes[j - 1] = tmp;
        }
    return unsqueeze(g, y, axes, nax, oom);
}

static poprt_status rewrite(poprt__graph *g, poprt__node *node, const void *ctx, int *done)
{
    (void)ctx;
    plan p;
    if (!make_plan(node, &p) || !node->outputs[0])
        return POPRT_OK;
    int oom = 0, e = p.ea > p.eb ? p.ea : p.eb;
    poprt__tensor *a = operand(g, node->inputs[0], &p.a, p.ea, &p, 1, &oom);
    poprt__tensor *b = oom ? NULL : operand(g, node->inputs[1], &p.b, p.eb, &p, 0, &oom);
    if (oom)
        return poprt__rw_oom();
    /* result labels: [ell, batch, aex, bex, m?, n?] */
    char res[POPRT__MAX_RANK];
    int nr = 0;
    memcpy(res + nr, p.batch, (size_t)p.nb);
    nr += p.nb;
    memcpy(res + nr, p.aex, (size_t)p.na);
    nr += p.na;
    memcpy(res + nr, p.bex, (size_t)p.nbx);
    nr += p.nbx;
    if (p.m)
        res[nr++] = p.m;
    if (p.n)
        res[nr++] = p.n;
    int64_t perm[POPRT__MAX_RANK];
    for (int k = 0; k < e; k++)
        perm[k] = k;
    for (int k = 0; k < p.o.n; k++)
        for (int r = 0; r < nr; r++)
            if (res[r] == p.o.l[k])
                perm[e + k] = e + r;
    int need_t = !identity(perm, e + p.o.n);
    int64_t sq[2];
    int nsq = 0, R = e + p.nb + p.na + p.nbx + 2;
    if (!p.m)
        sq[nsq++] = R - 2;
    if (!p.n)
        sq[nsq++] = R - 1;
    poprt__tensor *y = node->outputs[0];
    poprt__tensor *ins[2] = {a, b};
    poprt__node *mm =
        poprt__rw_node1(g, "MatMul", "", 2, ins, (nsq || need_t) ? NULL : y, "einsum_mm");
    if (!mm)
        return poprt__rw_oom();
    poprt__tensor *r = mm->outputs[0];
    if (nsq) {
        poprt__node *s = poprt__rw_axes_node(g, "Squeeze", r, nsq, sq, need_t ? NULL : y);
        if (!s)
            return poprt__rw_oom();
        r = s->outputs[0];
    }
    if (need_t) {
        poprt__node *t = poprt__rw_node1(g, "Transpose", "", 1, &r, y, NULL);
        if (!t || poprt__rw_attr_ints(t, "perm", e + p.o.n, perm))
            return poprt__rw_oom();
    }
    poprt__graph_remove_node(g, node);
    *done = 1;
    return POPRT_OK;
}

static const poprt__rw_node_pass pass = {"replace_einsum_with_matmul", "Einsum", rewrite};

static poprt_status run(poprt__model *m, const char *args, int *changed)
{
    return poprt__rw_run_nodes(&pass, m, args, changed);
}

const poprt__pass poprt__pass_replace_einsum_with_matmul = {
    "replace_einsum_with_matmul",
    "replace two-operand Einsum with one contracted label by Transpose/Unsqueeze + MatMul", run};
