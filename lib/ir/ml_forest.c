/* Tree ensembles of ai.onnx.ml read into one checked form (ir/ml_geom.h). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ir/ml_geom.h"
#include "ir/op.h"
#include "ir/dtype.h"

#define BAD(...) POPRT__NODE_ERR(n, POPRT_STATUS_INVALID_MODEL, __VA_ARGS__)

int poprt__ml_post_code(const char *s)
{
    static const char *const names[] = {"NONE", "SOFTMAX", "LOGISTIC", "SOFTMAX_ZERO", "PROBIT"};
    for (int i = 0; i < 5; i++)
        if (strcmp(s, names[i]) == 0)
            return i;
    return -1;
}

int poprt__ml_agg_code(const char *s)
{
    static const char *const names[] = {"AVERAGE", "SUM", "MIN", "MAX"};
    for (int i = 0; i < 4; i++)
        if (strcmp(s, names[i]) == 0)
            return i;
    return -1;
}

/* A numeric list attribute: FLOATS, or a TENSOR (the *_as_tensor forms and
 * TreeEnsemble's tensors). */
typedef struct numlist {
    int64_t n;
    const float *f;
    const poprt__tensor *t;
    const char *name; /* the attribute that gave it */
} numlist;

static double nl_get(const numlist *l, int64_t i)
{
    return l->f ? (double)l->f[i] : poprt__load_f64(poprt__tensor_data(l->t), l->t->type.elem, i);
}

static poprt_status tensor_list(const poprt__node *n, const poprt__attr *a, numlist *l)
{
    const poprt__tensor *t = a->t;
    int64_t m = t ? poprt__type_numel(&t->type) : -1;
    if (a->type != POPRT__ATTR_TENSOR || !t || m < 0 || (m > 0 && !t->raw) ||
        (!poprt__dtype_is_float(t->type.elem) && !poprt__dtype_is_int(t->type.elem)))
        return BAD("attribute '%s' must be a numeric tensor", a->name);
    l->t = t;
    l->n = m;
    l->name = a->name;
    return POPRT_OK;
}

/* name (floats) or tname (tensor), not both; absent: n = 0, name NULL. */
static poprt_status get_nums(const poprt__node *n, const char *name, const char *tname, numlist *l)
{
    memset(l, 0, sizeof *l);
    const poprt__attr *a = name ? poprt__node_attr(n, name) : NULL;
    const poprt__attr *b = tname ? poprt__node_attr(n, tname) : NULL;
    if (a && b)
        return BAD("attributes '%s' and '%s' are both set", name, tname);
    if (b)
        return tensor_list(n, b, l);
    if (!a)
        return POPRT_OK;
    if (a->type != POPRT__ATTR_FLOATS)
        return BAD("attribute '%s' must be a list of floats", name);
    l->f = a->floats;
    l->n = a->n;
    l->name = name;
    return POPRT_OK;
}

static int nl_double(const numlist *l) { return l->t && l->t->type.elem == POPRT_DTYPE_DOUBLE; }

/* An ints attribute that must have `want` entries (want < 0: any; absent
 * counts as 0 entries). */
static poprt_status get_ints(const poprt__node *n, const char *name, int64_t want,
                             const char *want_from, const int64_t **v, int64_t *count)
{
    const poprt__attr *a = poprt__node_attr(n, name);
    *v = NULL;
    *count = 0;
    if (a && a->type != POPRT__ATTR_INTS)
        return BAD("attribute '%s' must be a list of ints", name);
    if (a) {
        *v = a->ints;
        *count = a->n;
    }
    if (want >= 0 && *count != want)
        return BAD("attribute '%s' has %lld entries, '%s' has %lld", name, (long long)*count,
                   want_from, (long long)want);
    return POPRT_OK;
}

static poprt_status want_len(const poprt__node *n, const numlist *l, const char *name,
                             int64_t want, const char *want_from)
{
    if (l->n != want)
        return BAD("attribute '%s' has %lld entries, '%s' has %lld", l->name ? l->name : name,
                   (long long)l->n, want_from, (long long)want);
    return POPRT_OK;
}

/* (tree id, node id) -> node index: the nodes sorted by (tree id, node id),
 * cut into one group per tree; node ids 0, 1, 2, ... (the usual numbering)
 * are found by position, others by binary search within their tree. */
typedef struct tnkey {
    int64_t tree, id, idx;
} tnkey;

typedef struct tgroup {
    int64_t tree;
    int64_t start, count;
    int dense; /* ids are keys[start].id + 0, 1, ... */
} tgroup;

static int cmp_key(const void *pa, const void *pb)
{
    const tnkey *a = pa, *b = pb;
    if (a->tree != b->tree)
        return a->tree < b->tree ? -1 : 1;
    if (a->id != b->id)
        return a->id < b->id ? -1 : 1;
    return a->idx < b->idx ? -1 : a->idx > b->idx;
}

/* Node index of id in group g, or -1. */
static int64_t group_find(const tnkey *k, const tgroup *g, int64_t id)
{
    if (g->dense) { /* unsigned: ids may be anywhere in int64 */
        uint64_t p = (uint64_t)id - (uint64_t)k[g->start].id;
        return p < (uint64_t)g->count ? k[g->start + (int64_t)p].idx : -1;
    }
    int64_t lo = g->start, hi = g->start + g->count;
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2;
        if (k[mid].id < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < g->start + g->count && k[lo].id == id ? k[lo].idx : -1;
}

/* The group of a tree id, or NULL. */
static const tgroup *tree_group(const tgroup *g, int64_t ng, int64_t tree)
{
    int64_t lo = 0, hi = ng;
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2;
        if (g[mid].tree < tree)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < ng && g[lo].tree == tree ? &g[lo] : NULL;
}

/* Carves the forest's arrays (and the parser's temporaries) out of one block. */
typedef struct carver {
    unsigned char *p;
    size_t used, size;
} carver;

static void *carve(carver *c, int64_t count, size_t elem)
{
    size_t n = ((size_t)count * elem + 7) & ~(size_t)7;
    void *r = c->p ? c->p + c->used : NULL;
    c->used += n;
    return r;
}

typedef struct temps {
    tnkey *keys;
    tgroup *groups;
    uint8_t *state;
    int32_t *stack;
    int32_t *ndepth, *nsize;
} temps;

/* Lays out (or, with c->p NULL, measures) the arrays for the given counts. */
static void layout(carver *c, poprt__forest *f, temps *t, int64_t n_keys)
{
    const int64_t T = f->n_trees, N = f->n_nodes, W = f->n_weights;
    f->root = carve(c, T, 8);
    f->depth = carve(c, T, 8);
    f->size = carve(c, T, 8);
    f->mode = carve(c, N, 1);
    f->nan_true = carve(c, N, 1);
    f->feature = carve(c, N, 4);
    f->value = carve(c, N, 8);
    f->yes = carve(c, N, 4);
    f->no = carve(c, N, 4);
    f->set_first = carve(c, N, 4);
    f->set_count = carve(c, N, 4);
    f->w_first = carve(c, N, 4);
    f->w_count = carve(c, N, 4);
    f->w_target = carve(c, W, 4);
    f->w_value = carve(c, W, 8);
    f->members = carve(c, f->n_members, 8);
    f->base = carve(c, f->n_base, 8);
    t->keys = carve(c, n_keys, sizeof(tnkey));
    t->groups = carve(c, n_keys, sizeof(tgroup));
    t->state = carve(c, N, 1);
    t->stack = carve(c, 2 * N + 2, 4);
    t->ndepth = carve(c, N, 4);
    t->nsize = carve(c, N, 4);
}

static poprt_status alloc_forest(const poprt__node *n, poprt__forest *f, temps *t,
                                 int64_t n_keys, poprt__forest_alloc_fn alloc, void *ctx)
{
    /* node indexes are 32-bit; two of them per node on the walk's stack */
    const int64_t lim = INT32_MAX / 2 - 2;
    if (f->n_nodes > lim || f->n_weights > lim || f->n_members > lim || f->n_trees > lim ||
        n_keys > lim)
        return POPRT__NODE_ERR(n, POPRT_STATUS_UNSUPPORTED, "tree ensemble too large");
    carver c = {NULL, 0, 0};
    layout(&c, f, t, n_keys);
    c.p = alloc(ctx, c.used ? c.used : 8);
    if (!c.p)
        return POPRT__NODE_ERR(n, POPRT_STATUS_OUT_OF_MEMORY, "out of memory for the trees");
    c.size = c.used;
    c.used = 0;
    f->block = c.p;
    layout(&c, f, t, n_keys);
    return POPRT_OK;
}

/* Groups the weights by node: w_first / w_count, and the (target, value)
 * pairs in node order (each node's in attribute order). node_of[k] is the
 * node of weight k; target[k] / value(k) its target and value. */
static void group_weights(poprt__forest *f, const int32_t *node_of, const int32_t *target,
                          const numlist *value)
{
    for (int64_t i = 0; i < f->n_nodes; i++)
        f->w_count[i] = 0;
    for (int64_t k = 0; k < f->n_weights; k++)
        f->w_count[node_of[k]]++;
    int32_t at = 0;
    for (int64_t i = 0; i < f->n_nodes; i++) {
        f->w_first[i] = at;
        at += f->w_count[i];
        f->w_count[i] = 0;
    }
    for (int64_t k = 0; k < f->n_weights; k++) {
        int32_t i = node_of[k], j = f->w_first[i] + f->w_count[i]++;
        f->w_target[j] = target[k];
        f->w_value[j] = nl_get(value, k);
    }
}

/* Walks every tree from its root: cycles, depth and unshared size. */
static poprt_status walk_trees(const poprt__node *n, poprt__forest *f, temps *t,
                               const char *child_attrs)
{
    memset(t->state, 0, (size_t)f->n_nodes);
    for (int64_t tr = 0; tr < f->n_trees; tr++) {
        int64_t sp = 0;
        t->stack[sp++] = (int32_t)f->root[tr];
        while (sp > 0) {
            int32_t v = t->stack[sp - 1];
            if (t->state[v] == 2) {
                sp--;
                continue;
            }
            if (f->mode[v] == POPRT__TREE_LEAF) {
                t->ndepth[v] = 0;
                t->nsize[v] = 1;
                t->state[v] = 2;
                sp--;
                continue;
            }
            if (t->state[v] == 0) {
                t->state[v] = 1;
                const int32_t ch[2] = {f->yes[v], f->no[v]};
                for (int c = 0; c < 2; c++) {
                    if (t->state[ch[c]] == 1)
                        return BAD("attributes %s: tree %lld has a cycle through node %lld",
                                   child_attrs, (long long)tr, (long long)ch[c]);
                    if (t->state[ch[c]] == 0)
                        t->stack[sp++] = ch[c];
                }
                continue;
            }
            int32_t a = f->yes[v], b = f->no[v];
            t->ndepth[v] = 1 + (t->ndepth[a] > t->ndepth[b] ? t->ndepth[a] : t->ndepth[b]);
            int64_t s = 1 + (int64_t)t->nsize[a] + t->nsize[b];
            t->nsize[v] = s > INT32_MAX ? INT32_MAX : (int32_t)s;
            t->state[v] = 2;
            sp--;
        }
        f->depth[tr] = t->ndepth[f->root[tr]];
        f->size[tr] = t->nsize[f->root[tr]];
    }
    return POPRT_OK;
}

static poprt_status check_feature(const poprt__node *n, const char *attr, int64_t i,
                                  int64_t fid, int64_t n_features, poprt__forest *f)
{
    if (fid < 0 || fid >= INT32_MAX || (n_features >= 0 && fid >= n_features))
        return BAD("attribute '%s' entry %lld is feature %lld, the input has %lld", attr,
                   (long long)i, (long long)fid, (long long)n_features);
    if (fid > f->max_feature)
        f->max_feature = fid;
    return POPRT_OK;
}

static poprt_status read_base(const poprt__node *n, poprt__forest *f, const numlist *base)
{
    for (int64_t i = 0; i < f->n_base; i++)
        f->base[i] = nl_get(base, i);
    (void)n;
    return POPRT_OK;
}

/* ---- TreeEnsembleRegressor / TreeEnsembleClassifier, versions 1 and 3 ---- */

static const char *const mode_names[] = {"LEAF",      "BRANCH_LEQ", "BRANCH_LT", "BRANCH_GTE",
                                         "BRANCH_GT", "BRANCH_EQ",  "BRANCH_NEQ"};

static poprt_status parse_v3(const poprt__node *n, int64_t n_features,
                             poprt__forest_alloc_fn alloc, void *ctx, poprt__forest *f)
{
    const int cls = strcmp(n->op_type, "TreeEnsembleClassifier") == 0;
    const char *pre = cls ? "class" : "target";
    char a_tree[32], a_node[32], a_id[32], a_w[32], a_wt[48];
    snprintf(a_tree, sizeof a_tree, "%s_treeids", pre);
    snprintf(a_node, sizeof a_node, "%s_nodeids", pre);
    snprintf(a_id, sizeof a_id, "%s_ids", pre);
    snprintf(a_w, sizeof a_w, "%s_weights", pre);
    snprintf(a_wt, sizeof a_wt, "%s_weights_as_tensor", pre);
    const int64_t *treeids, *nodeids, *fids, *yes, *no, *track, *wtree, *wnode, *wid;
    int64_t nn, c, nw;
    poprt_status st;
    if ((st = get_ints(n, "nodes_treeids", -1, NULL, &treeids, &nn)) ||
        (st = get_ints(n, "nodes_nodeids", nn, "nodes_treeids", &nodeids, &c)) ||
        (st = get_ints(n, "nodes_featureids", nn, "nodes_treeids", &fids, &c)) ||
        (st = get_ints(n, "nodes_truenodeids", nn, "nodes_treeids", &yes, &c)) ||
        (st = get_ints(n, "nodes_falsenodeids", nn, "nodes_treeids", &no, &c)) ||
        (st = get_ints(n, "nodes_missing_value_tracks_true", -1, NULL, &track, &c)))
        return st;
    if (c != 0 && c != nn)
        return BAD("attribute 'nodes_missing_value_tracks_true' has %lld entries, "
                   "'nodes_treeids' has %lld", (long long)c, (long long)nn);
    const poprt__attr *modes = poprt__node_attr(n, "nodes_modes");
    if (nn && (!modes || modes->type != POPRT__ATTR_STRINGS || modes->n != nn))
        return BAD("attribute 'nodes_modes' must have as many strings as 'nodes_treeids' (%lld)",
                   (long long)nn);
    numlist values, weights, base, hit;
    if ((st = get_nums(n, "nodes_values", "nodes_values_as_tensor", &values)) ||
        (st = want_len(n, &values, "nodes_values", nn, "nodes_treeids")) ||
        (st = get_nums(n, "nodes_hitrates", "nodes_hitrates_as_tensor", &hit)) ||
        (hit.n && (st = want_len(n, &hit, "nodes_hitrates", nn, "nodes_treeids"))) ||
        (st = get_ints(n, a_tree, -1, NULL, &wtree, &nw)) ||
        (st = get_ints(n, a_node, nw, a_tree, &wnode, &c)) ||
        (st = get_ints(n, a_id, nw, a_tree, &wid, &c)) ||
        (st = get_nums(n, a_w, a_wt, &weights)) ||
        (st = want_len(n, &weights, a_w, nw, a_tree)) ||
        (st = get_nums(n, "base_values", "base_values_as_tensor", &base)))
        return st;
    memset(f, 0, sizeof *f);
    f->classifier = cls;
    f->value_double = nl_double(&values);
    f->post = poprt__ml_post_code(poprt__attr_s(n, "post_transform", "NONE"));
    if (f->post < 0)
        return BAD("attribute 'post_transform' is '%s'", poprt__attr_s(n, "post_transform", ""));
    f->agg = POPRT__AGG_SUM;
    if (!cls) {
        f->agg = poprt__ml_agg_code(poprt__attr_s(n, "aggregate_function", "SUM"));
        if (f->agg < 0)
            return BAD("attribute 'aggregate_function' is '%s'",
                       poprt__attr_s(n, "aggregate_function", ""));
        int64_t most = 0; /* n_targets by default: the largest target id + 1 */
        for (int64_t k = 0; k < nw; k++)
            most = wid[k] >= most && wid[k] < INT32_MAX ? wid[k] + 1 : most;
        f->n_targets = poprt__attr_i(n, "n_targets", most > 0 ? most : 1);
        if (f->n_targets < 1 || f->n_targets > INT32_MAX)
            return BAD("attribute 'n_targets' is %lld", (long long)f->n_targets);
    } else {
        int64_t ni, ns;
        const int64_t *li;
        if ((st = get_ints(n, "classlabels_int64s", -1, NULL, &li, &ni)))
            return st;
        const poprt__attr *ls = poprt__node_attr(n, "classlabels_strings");
        if (ls && ls->type != POPRT__ATTR_STRINGS)
            return BAD("attribute 'classlabels_strings' must be a list of strings");
        ns = ls ? ls->n : 0;
        if ((ni > 0) == (ns > 0))
            return BAD("exactly one of 'classlabels_int64s' and 'classlabels_strings' must be set");
        f->string_labels = ns > 0;
        f->n_targets = ni + ns;
        if (f->n_targets > INT32_MAX)
            return BAD("too many class labels");
    }
    f->n_nodes = nn;
    f->n_weights = nw;
    f->n_base = base.n;
    if (base.n != 0 && base.n != 1 && base.n != f->n_targets)
        return BAD("attribute '%s' has %lld entries, expected 0, 1 or %lld", base.name,
                   (long long)base.n, (long long)f->n_targets);
    f->n_trees = nn; /* an upper bound until the trees are counted */
    temps t;
    if ((st = alloc_forest(n, f, &t, nn > nw ? nn : nw, alloc, ctx)))
        return st;
    read_base(n, f, &base);
    f->max_feature = -1;
    int sorted = 1;
    for (int64_t i = 0; i < nn; i++) {
        t.keys[i] = (tnkey){treeids[i], nodeids[i], i};
        sorted &= i == 0 || cmp_key(&t.keys[i - 1], &t.keys[i]) < 0;
    }
    if (!sorted) /* exporters list each tree's nodes in order: usually no sort */
        qsort(t.keys, (size_t)nn, sizeof *t.keys, cmp_key);
    f->n_trees = 0;
    for (int64_t i = 0; i < nn; i++) {
        const tnkey *k = &t.keys[i];
        if (i > 0 && k->tree == k[-1].tree && k->id == k[-1].id)
            return BAD("attribute 'nodes_nodeids': tree %lld has node id %lld twice",
                       (long long)k->tree, (long long)k->id);
        if (i == 0 || k->tree != k[-1].tree) {
            t.groups[f->n_trees] = (tgroup){k->tree, i, 0, 1};
            f->root[f->n_trees++] = k->idx;
        } else if (k->idx < f->root[f->n_trees - 1]) {
            f->root[f->n_trees - 1] = k->idx; /* the first listed node of the tree */
        }
        tgroup *g = &t.groups[f->n_trees - 1];
        g->dense &= (uint64_t)k->id == (uint64_t)t.keys[g->start].id + (uint64_t)g->count;
        g->count++;
    }
    for (int64_t gi = 0; gi < f->n_trees; gi++) {
        const tgroup *g = &t.groups[gi];
        for (int64_t p = g->start; p < g->start + g->count; p++) {
            const int64_t i = t.keys[p].idx;
            const char *m = modes->strings[i] ? modes->strings[i] : "";
            int code = -1;
            for (int k = 0; k < 7 && code < 0; k++)
                if (strcmp(m, mode_names[k]) == 0)
                    code = k;
            if (code < 0)
                return BAD("attribute 'nodes_modes' entry %lld is '%s'", (long long)i, m);
            f->mode[i] = (uint8_t)code;
            /* NaN compares unequal: BRANCH_NEQ takes the true branch, the others
             * follow nodes_missing_value_tracks_true (as TreeEnsemble 5 and
             * ONNX Runtime have it for every version) */
            f->nan_true[i] = (track && track[i] != 0) || code == POPRT__TREE_NEQ;
            f->value[i] = nl_get(&values, i);
            f->feature[i] = f->yes[i] = f->no[i] = f->set_first[i] = f->set_count[i] = 0;
            if (code == POPRT__TREE_LEAF)
                continue;
            if ((st = check_feature(n, "nodes_featureids", i, fids[i], n_features, f)))
                return st;
            f->feature[i] = (int32_t)fids[i];
            const int64_t y = group_find(t.keys, g, yes[i]), o = group_find(t.keys, g, no[i]);
            if (y < 0 || o < 0)
                return BAD("attribute '%s' entry %lld: tree %lld has no node id %lld",
                           y < 0 ? "nodes_truenodeids" : "nodes_falsenodeids", (long long)i,
                           (long long)treeids[i], (long long)(y < 0 ? yes[i] : no[i]));
            f->yes[i] = (int32_t)y;
            f->no[i] = (int32_t)o;
        }
    }
    /* the lookups need the keys intact: resolve first into w_target */
    const tgroup *g = f->n_trees ? &t.groups[0] : NULL;
    for (int64_t k = 0; k < nw; k++) {
        if (!g || g->tree != wtree[k])
            g = tree_group(t.groups, f->n_trees, wtree[k]);
        int64_t i = g ? group_find(t.keys, g, wnode[k]) : -1;
        if (i < 0)
            return BAD("attribute '%s' entry %lld: tree %lld has no node id %lld", a_node,
                       (long long)k, (long long)wtree[k], (long long)wnode[k]);
        if (wid[k] < 0 || wid[k] >= f->n_targets)
            return BAD("attribute '%s' entry %lld is %lld, expected 0..%lld", a_id, (long long)k,
                       (long long)wid[k], (long long)f->n_targets - 1);
        f->w_target[k] = (int32_t)i;
    }
    /* the keys are not needed any more: their room (24 bytes for each of
     * max(nn, nw) entries) holds the weights' nodes and targets */
    int32_t *node_of = (int32_t *)t.keys, *target = node_of + nw;
    for (int64_t k = 0; k < nw; k++) {
        node_of[k] = f->w_target[k];
        target[k] = (int32_t)wid[k];
    }
    group_weights(f, node_of, target, &weights);
    if (cls && f->n_targets <= 2 && nw > 0) {
        f->binary = 1;
        for (int64_t k = 0; k < nw; k++)
            f->binary &= wid[k] == 0;
    }
    return walk_trees(n, f, &t, "'nodes_truenodeids'/'nodes_falsenodeids'");
}

/* ---- TreeEnsemble, version 5 --------------------------------------------- */

static poprt_status parse_v5(const poprt__node *n, int64_t n_features,
                             poprt__forest_alloc_fn alloc, void *ctx, poprt__forest *f)
{
    const int64_t *roots, *fids, *yes, *yleaf, *no, *nleaf, *track, *ltgt;
    int64_t nroots, nn, nl, c;
    poprt_status st;
    numlist splits, modes, weights, mem;
    if ((st = get_ints(n, "tree_roots", -1, NULL, &roots, &nroots)) ||
        (st = get_ints(n, "nodes_featureids", -1, NULL, &fids, &nn)) ||
        (st = get_ints(n, "nodes_truenodeids", nn, "nodes_featureids", &yes, &c)) ||
        (st = get_ints(n, "nodes_trueleafs", nn, "nodes_featureids", &yleaf, &c)) ||
        (st = get_ints(n, "nodes_falsenodeids", nn, "nodes_featureids", &no, &c)) ||
        (st = get_ints(n, "nodes_falseleafs", nn, "nodes_featureids", &nleaf, &c)) ||
        (st = get_ints(n, "nodes_missing_value_tracks_true", -1, NULL, &track, &c)))
        return st;
    if (c != 0 && c != nn)
        return BAD("attribute 'nodes_missing_value_tracks_true' has %lld entries, "
                   "'nodes_featureids' has %lld", (long long)c, (long long)nn);
    if ((st = get_ints(n, "leaf_targetids", -1, NULL, &ltgt, &nl)) ||
        (st = get_nums(n, NULL, "nodes_splits", &splits)) ||
        (st = want_len(n, &splits, "nodes_splits", nn, "nodes_featureids")) ||
        (st = get_nums(n, NULL, "nodes_modes", &modes)) ||
        (st = want_len(n, &modes, "nodes_modes", nn, "nodes_featureids")) ||
        (st = get_nums(n, NULL, "leaf_weights", &weights)) ||
        (st = want_len(n, &weights, "leaf_weights", nl, "leaf_targetids")) ||
        (st = get_nums(n, NULL, "membership_values", &mem)))
        return st;
    memset(f, 0, sizeof *f);
    f->value_double = nl_double(&splits);
    f->agg = (int)poprt__attr_i(n, "aggregate_function", POPRT__AGG_SUM);
    f->post = (int)poprt__attr_i(n, "post_transform", POPRT__POST_NONE);
    if (f->agg < 0 || f->agg > 3)
        return BAD("attribute 'aggregate_function' is %d", f->agg);
    if (f->post < 0 || f->post > 4)
        return BAD("attribute 'post_transform' is %d", f->post);
    int64_t most = 0;
    for (int64_t k = 0; k < nl; k++)
        most = ltgt[k] >= most && ltgt[k] < INT32_MAX ? ltgt[k] + 1 : most;
    f->n_targets = poprt__attr_i(n, "n_targets", most > 0 ? most : 1);
    if (f->n_targets < 1 || f->n_targets > INT32_MAX)
        return BAD("attribute 'n_targets' is %lld", (long long)f->n_targets);
    f->n_trees = nroots;
    f->n_nodes = nn + nl;
    f->n_weights = nl;
    f->n_members = mem.n;
    temps t;
    if ((st = alloc_forest(n, f, &t, 0, alloc, ctx)))
        return st;
    f->max_feature = -1;
    for (int64_t k = 0; k < mem.n; k++)
        f->members[k] = nl_get(&mem, k);
    int64_t mp = 0;
    for (int64_t i = 0; i < nn; i++) {
        double m = nl_get(&modes, i);
        if (!(m >= 0 && m <= 6) || m != floor(m))
            return BAD("attribute 'nodes_modes' entry %lld is %g, expected 0..6", (long long)i, m);
        f->mode[i] = (uint8_t)(m + 1);
        f->value[i] = nl_get(&splits, i);
        f->nan_true[i] = (track && track[i] != 0) || f->mode[i] == POPRT__TREE_NEQ;
        f->w_first[i] = f->w_count[i] = 0;
        f->set_first[i] = f->set_count[i] = 0;
        if ((st = check_feature(n, "nodes_featureids", i, fids[i], n_features, f)))
            return st;
        f->feature[i] = fids[i];
        const int64_t ids[2] = {yes[i], no[i]}, leafs[2] = {yleaf[i], nleaf[i]};
        for (int s = 0; s < 2; s++) {
            int64_t lim = leafs[s] ? nl : nn;
            if (ids[s] < 0 || ids[s] >= lim)
                return BAD("attribute '%s' entry %lld is %lld, %s has %lld entries",
                           s ? "nodes_falsenodeids" : "nodes_truenodeids", (long long)i,
                           (long long)ids[s], leafs[s] ? "'leaf_targetids'" : "'nodes_featureids'",
                           (long long)lim);
            (s ? f->no : f->yes)[i] = leafs[s] ? nn + ids[s] : ids[s];
        }
        if (f->mode[i] == POPRT__TREE_MEMBER) {
            if (mp >= mem.n)
                return BAD("attribute 'membership_values' has no set for node %lld", (long long)i);
            f->set_first[i] = mp;
            while (mp < mem.n && !isnan(f->members[mp]))
                mp++;
            f->set_count[i] = mp - f->set_first[i];
            mp++; /* the NaN that ends the set */
        }
    }
    for (int64_t j = 0; j < nl; j++) {
        int64_t i = nn + j;
        if (ltgt[j] < 0 || ltgt[j] >= f->n_targets)
            return BAD("attribute 'leaf_targetids' entry %lld is %lld, expected 0..%lld",
                       (long long)j, (long long)ltgt[j], (long long)f->n_targets - 1);
        f->mode[i] = POPRT__TREE_LEAF;
        f->nan_true[i] = 0;
        f->feature[i] = f->yes[i] = f->no[i] = f->set_first[i] = f->set_count[i] = 0;
        f->value[i] = 0;
        f->w_first[i] = j;
        f->w_count[i] = 1;
        f->w_target[j] = ltgt[j];
        f->w_value[j] = nl_get(&weights, j);
    }
    for (int64_t r = 0; r < nroots; r++) {
        if (roots[r] < 0 || roots[r] >= nn)
            return BAD("attribute 'tree_roots' entry %lld is %lld, 'nodes_featureids' has %lld "
                       "entries", (long long)r, (long long)roots[r], (long long)nn);
        f->root[r] = roots[r];
    }
    return walk_trees(n, f, &t, "'nodes_truenodeids'/'nodes_falsenodeids'");
}

poprt_status poprt__forest_parse(const poprt__node *n, int64_t n_features,
                                 poprt__forest_alloc_fn alloc, void *ctx, poprt__forest *f)
{
    memset(f, 0, sizeof *f);
    if (strcmp(n->op_type, "TreeEnsemble") == 0)
        return parse_v5(n, n_features, alloc, ctx, f);
    return parse_v3(n, n_features, alloc, ctx, f);
}
