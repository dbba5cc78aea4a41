/* The serialize_matmul* family (families.h): cutting a MatMul (with its bias
 * Add) into pieces, and the argument handling both passes share. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "passes/families.h"

enum { SER_N, SER_M, SER_K, SER_NONE };

static int parse_mode(const char *s)
{
    if (!s || !strcmp(s, "output_channels"))
        return SER_N;
    if (!strcmp(s, "input_channels"))
        return SER_M;
    if (!strcmp(s, "reducing_dim"))
        return SER_K;
    if (!strcmp(s, "none"))
        return SER_NONE;
    return -1;
}

/* A float initializer holding rows [r0, r0+nr) x cols [c0, c0+nc) of w [.., ld]. */
static poprt__tensor *slice_const(poprt__graph *g, const poprt__tensor *t, const float *w,
                                  int64_t ld, int64_t r0, int64_t nr, int64_t c0, int64_t nc,
                                  int rank)
{
    float *v = poprt__malloc((size_t)(nr * nc + 1) * sizeof(float));
    if (!v)
        return NULL;
    for (int64_t r = 0; r < nr; r++)
        memcpy(v + r * nc, w + (r0 + r) * ld + c0, (size_t)nc * sizeof(float));
    int64_t d[2] = {nr, nc}, len = nr * nc;
    poprt__tensor *o = rank == 1 ? poprt__graph_add_const(g, t->name, POPRT_DTYPE_FLOAT, 1, &len, v,
                                                          (size_t)len * sizeof(float))
                                 : poprt__graph_add_const(g, t->name, POPRT_DTYPE_FLOAT, 2, d, v,
                                                          (size_t)(nr * nc) * sizeof(float));
    poprt__free(v);
    return o;
}

/* Split(x, axis, sizes) -> n new tensors in outs. */
static poprt_status add_split(poprt__model *m, poprt__tensor *x, int64_t axis, int n,
                              const int64_t *sizes, poprt__tensor **outs, const char *base)
{
    poprt__graph *g = m->graph;
    int new_form = poprt__model_opset(m, "") >= 13;
    poprt__node *s = poprt__rw_node(g, "Split", "", base, new_form ? 2 : 1, n);
    if (!s)
        return poprt__rw_oom();
    poprt__node_set_input(s, 0, x);
    poprt_status st;
    if (new_form) {
        int64_t nn = n;
        poprt__tensor *sz = poprt__graph_add_const(g, "split_sizes", POPRT_DTYPE_INT64, 1, &nn,
                                                   sizes, (size_t)n * sizeof(int64_t));
        if (!sz)
            return poprt__rw_oom();
        poprt__node_set_input(s, 1, sz);
    } else if ((st = poprt__rw_attr_ints(s, "split", n, sizes))) {
        return st;
    }
    if ((st = poprt__rw_attr_i(s, "axis", axis)))
        return st;
    for (int i = 0; i < n; i++) {
        if (!(outs[i] = s->outputs[i] = poprt__graph_new_tensor(g, "serialized_part")))
            return poprt__rw_oom();
        outs[i]->producer = s;
        outs[i]->producer_slot = i;
    }
    return POPRT_OK;
}

static poprt__tensor *add_node2(poprt__graph *g, const char *op, const char *base, poprt__tensor *a,
                                poprt__tensor *b)
{
    poprt__node *n = poprt__rw_node(g, op, "", base, 2, 1);
    poprt__tensor *t = poprt__graph_new_tensor(g, "serialized_out");
    if (!n || !t)
        return NULL;
    poprt__node_set_input(n, 0, a);
    poprt__node_set_input(n, 1, b);
    n->outputs[0] = t;
    t->producer = n;
    return t;
}

/* Serialises mm (and its bias Add `add` when not NULL: pieces along N
 * only). *done when the graph changed. */
static poprt_status serialize(poprt__model *m, poprt__node *mm, poprt__node *add, int64_t factor,
                              int mode, int *done)
{
    poprt__graph *g = m->graph;
    *done = 0;
    int64_t ad[POPRT__MAX_RANK], wd[POPRT__MAX_RANK], yd[POPRT__MAX_RANK], cnt;
    int ra = poprt__rw_dims(mm->inputs[0], ad), rw = poprt__rw_dims(mm->inputs[1], wd);
    int ry = poprt__rw_dims(mm->outputs[0], yd);
    const float *w = poprt__rw_f32(mm->inputs[1], POPRT__RW_ANY, &cnt);
    if (mode == SER_NONE || factor < 2 || factor > 256 || ra < 1 || ry < 1 ||
        !poprt__rw_is(mm, "MatMul"))
        return POPRT_OK;
    if (mm->outputs[0]->type.elem != POPRT_DTYPE_FLOAT)
        return POPRT_OK;
    int64_t total = mode == SER_N   ? (rw == 2 ? wd[1] : -1)
                    : mode == SER_M ? (ra >= 2 ? ad[ra - 2] : -1)
                                    : ad[ra - 1];
    if (total < factor || ((mode == SER_N || mode == SER_K) && (!w || rw != 2)) ||
        (mode == SER_M && (rw < 0 || rw > ra)))
        return POPRT_OK;
    const float *bias = NULL;
    int bslot = 0;
    if (add) {
        poprt__tensor *b = poprt__rw_other_input(add, mm->outputs[0]);
        bias = poprt__rw_f32(b, POPRT__RW_ANY, &cnt);
        if (mode != SER_N || !bias || cnt != wd[1] || b->type.rank != 1)
            return POPRT_OK;
        bslot = add->inputs[0] == b ? 0 : 1;
    }
    const int n = (int)factor;
    int64_t sizes[256], off = 0;
    for (int i = 0; i < n; i++)
        sizes[i] = total / factor + (i < total % factor);
    poprt__tensor *parts[256], *ins[256];
    poprt_status st;
    if (mode == SER_M && (st = add_split(m, mm->inputs[0], ra - 2, n, sizes, ins, mm->name)))
        return st;
    if (mode == SER_K && (st = add_split(m, mm->inputs[0], ra - 1, n, sizes, ins, mm->name)))
        return st;
    for (int i = 0; i < n; off += sizes[i], i++) {
        poprt__tensor *a = mode == SER_N ? mm->inputs[0] : ins[i];
        poprt__tensor *b =
            mode == SER_M   ? mm->inputs[1]
            : mode == SER_N ? slice_const(g, mm->inputs[1], w, wd[1], 0, wd[0], off, sizes[i], 2)
                            : slice_const(g, mm->inputs[1], w, wd[1], off, sizes[i], 0, wd[1], 2);
        if (!b || !(parts[i] = add_node2(g, "MatMul", mm->name, a, b)))
            return poprt__rw_oom();
        if (add) {
            poprt__tensor *bc = slice_const(g, add->inputs[bslot], bias, 1, off, sizes[i], 0, 1, 1);
            if (!bc || !(parts[i] = add_node2(g, "Add", add->name, parts[i], bc)))
                return poprt__rw_oom();
        }
    }
    poprt__node *last = add ? add : mm;
    poprt__node *j = poprt__rw_node(g, mode == SER_K ? "Sum" : "Concat", "", last->name, n, 1);
    if (!j)
        return poprt__rw_oom();
    for (int i = 0; i < n; i++)
        poprt__node_set_input(j, i, parts[i]);
    if (mode != SER_K && (st = poprt__rw_attr_i(j, "axis", mode == SER_N ? ry - 1 : ry - 2)))
        return st;
    poprt__rw_take_output(g, last, 0, j, 0);
    *done = 1;
    return POPRT_OK;
}

/* One MatMul (with its bias Add for the _add form) cut into f pieces. */
static poprt_status one(const poprt__serialize_kind *k, poprt__model *m, poprt__node *mm, int64_t f,
                        int mode, int *changed)
{
    poprt__node *add = NULL;
    if (k->with_add &&
        !(add = poprt__rw_is(mm, "MatMul") ? poprt__rw_reader(m->graph, mm->outputs[0], "Add")
                                           : NULL))
        return POPRT_OK;
    int done = 0;
    poprt_status st = serialize(m, mm, add, f, k->with_add ? SER_N : mode, &done);
    *changed |= done;
    return st;
}

/* The MatMul whose bias Add is named so that "MATMUL/ADD" is key, or NULL. */
static poprt__node *pair_named(const poprt__graph *g, const char *key)
{
    char pair[1024];
    for (size_t j = 0; j < g->nodes.len; j++) {
        poprt__node *n = g->nodes.items[j];
        poprt__node *ad =
            poprt__rw_is(n, "MatMul") ? poprt__rw_reader(g, n->outputs[0], "Add") : NULL;
        if (ad && snprintf(pair, sizeof pair, "%s/%s", n->name, ad->name) > 0 && !strcmp(pair, key))
            return n;
    }
    return NULL;
}

/* The reference's entry key=val: NAME=F[/MODE[/KEEP_PRECISION]] for
 * MatMuls, MATMUL_NAME/ADD_NAME=F for pairs (node names may hold '/', so
 * the whole key is matched). */
static poprt_status entry(const poprt__serialize_kind *k, const poprt__graph *g, const char *key,
                          const char *val, poprt__node **mm, int64_t *f, int *mode)
{
    char v[256], *e;
    snprintf(v, sizeof v, "%s", val);
    char *slash = k->with_add ? NULL : strchr(v, '/');
    if (slash) {
        *slash++ = 0;
        char *s2 = strchr(slash, '/');
        if (s2)
            *s2 = 0;
    }
    *mm = k->with_add ? pair_named(g, key) : poprt__rw_find_node(g, key);
    const char *num = k->with_add ? val : v;
    *f = strtoll(num, &e, 10);
    *mode = parse_mode(slash);
    if (!*mm || !poprt__rw_is(*mm, "MatMul") || e == num || *e || *mode < 0)
        return poprt__err(POPRT_STATUS_INVALID_OPTION,
                          k->with_add ? "pass '%s': '%s=%s' does not name a MatMul/Add pair with "
                                        "a factor"
                                      : "pass '%s': '%s=%s' does not name a MatMul with "
                                        "FACTOR[/MODE[/KEEP_PRECISION]]",
                          k->pass, key, val);
    return POPRT_OK;
}

poprt_status poprt__serialize_matmul(const poprt__serialize_kind *k, poprt__model *m,
                                     const char *args, int *changed)
{
    poprt__graph *g = m->graph;
    poprt__pass_args a;
    int64_t factor;
    *changed = 0;
    poprt_status st = poprt__pass_args_parse(k->pass, args, NULL, &a);
    if (st || (st = poprt__pass_arg_int(k->pass, &a, "factor", 0, &factor)))
        return st;
    int mode = k->with_add ? SER_N : parse_mode(poprt__pass_arg(&a, "mode"));
    if (mode < 0)
        return poprt__err(POPRT_STATUS_INVALID_OPTION,
                          "pass '%s': unknown mode '%s' "
                          "(input_channels, output_channels, reducing_dim, none)",
                          k->pass, poprt__pass_arg(&a, "mode"));
    int explicit_nodes = 0;
    for (int i = 0; i < a.n; i++) {
        const char *key = a.keys[i];
        if (!strcmp(key, "factor") || !strcmp(key, "nodes") ||
            (!k->with_add && (!strcmp(key, "mode") || !strcmp(key, "keep_precision"))))
            continue;
        explicit_nodes = 1;
        poprt__node *mm;
        int64_t f;
        int md;
        if ((st = entry(k, g, key, a.vals[i], &mm, &f, &md)) ||
            (st = one(k, m, mm, f, md, changed)))
            return st;
    }
    const char *nodes = poprt__pass_arg(&a, "nodes");
    if (nodes) {
        char buf[4096];
        const char *names[256];
        int nn = poprt__pass_node_names(nodes, buf, sizeof buf, names, 256);
        for (int i = 0; i < nn; i++) {
            poprt__node *mm = poprt__rw_find_node(g, names[i]);
            if (!poprt__rw_is(mm, "MatMul"))
                return poprt__err(POPRT_STATUS_INVALID_OPTION, "pass '%s': no MatMul named '%s'",
                                  k->pass, names[i]);
            if ((st = one(k, m, mm, factor, mode, changed)))
                return st;
        }
    } else if (!explicit_nodes && factor >= 2) {
        /* the MatMuls present now (the pieces made here are not cut again) */
        poprt__vec todo = {0};
        st = poprt__rw_collect(g, "MatMul", &todo);
        for (size_t i = 0; i < todo.len && !st; i++)
            st = one(k, m, todo.items[i], factor, mode, changed);
        poprt__vec_free(&todo);
        if (st)
            return st;
    }
    if (*changed)
        poprt__graph_remove_dead(g);
    return POPRT_OK;
}
