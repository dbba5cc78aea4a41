/* Deep copy of a model. Constant data inside a mapped file (the model's
 * blobs) is shared, with a reference on the blob; everything else is copied
 * into the new model's arena. */
#include <string.h>
#include "ir/ir.h"

typedef struct {
    poprt__model *dst;
} cl;

static int in_blob(const poprt__model *m, const void *p)
{
    for (size_t i = 0; i < m->blobs.len; i++) {
        const poprt__blob *b = m->blobs.items[i];
        if ((const char *)p >= (const char *)b->data && (const char *)p < (const char *)b->data + b->size)
            return 1;
    }
    return 0;
}

#define DUPS(x) ((x) ? poprt__arena_strdup(&d->arena, (x)) : NULL)

static poprt__graph *clone_graph(cl *c, const poprt__graph *sg, poprt__graph *parent);

/* Symbolic dim names must not point into the source model's arena. */
static poprt_status own_params(poprt__arena *a, poprt__type *t)
{
    for (; t; t = t->inner)
        for (int i = 0; i < t->rank && t->dims; i++)
            if (t->dims[i].param && !(t->dims[i].param = poprt__arena_strdup(a, t->dims[i].param)))
                return POPRT_STATUS_OUT_OF_MEMORY;
    return POPRT_OK;
}

static poprt_status clone_tensor_data(cl *c, poprt__tensor *dt, const poprt__tensor *st)
{
    poprt__model *d = c->dst;
    if (poprt__type_copy(&d->arena, &dt->type, &st->type) || own_params(&d->arena, &dt->type))
        return POPRT_STATUS_OUT_OF_MEMORY;
    dt->nbytes = st->nbytes;
    dt->is_input = st->is_input;
    dt->is_output = st->is_output;
    dt->is_initializer = st->is_initializer;
    dt->doc = DUPS(st->doc);
    if (st->raw) {
        /* blobs the clone holds too (d->blobs: the source's when the clone
         * began) are shared, the aligned copy of an unaligned raw as well */
        const void *al = __atomic_load_n(&st->aligned, __ATOMIC_ACQUIRE);
        if (in_blob(d, st->raw)) {
            poprt__tensor_set_data(dt, st->raw);
            if (al && in_blob(d, al))
                dt->aligned = al;
        } else if (st->type.elem == POPRT_DTYPE_STRING) {
            const char *const *src = st->raw; /* strings live aligned in an arena */
            size_t n = st->nbytes / sizeof(char *);
            const char **ss = poprt__arena_array(&d->arena, n ? n : 1, sizeof *ss);
            if (!ss)
                return POPRT_STATUS_OUT_OF_MEMORY;
            for (size_t i = 0; i < n; i++)
                ss[i] = DUPS(src[i] ? src[i] : "");
            poprt__tensor_set_data(dt, ss);
        } else {
            /* an arena copy is 16-byte aligned: aligned for every element type */
            size_t nb = st->nbytes ? st->nbytes : 1;
            poprt__tensor_set_data(dt, poprt__arena_memdup(&d->arena, st->raw, nb));
            if (!dt->raw)
                return POPRT_STATUS_OUT_OF_MEMORY;
        }
    }
    return POPRT_OK;
}

static poprt__tensor *map_t(cl *c, poprt__graph *dg, const poprt__tensor *st)
{
    (void)c;
    if (!st)
        return NULL;
    /* tensors of enclosing graphs were cloned first: found by name up the chain */
    return poprt__graph_find(dg, st->name);
}

static poprt_status clone_attr(cl *c, poprt__graph *dg, poprt__attr *da, const poprt__attr *sa)
{
    poprt__model *d = c->dst;
    const char *name = da->name;
    *da = *sa;
    da->name = name;
    da->ref_attr_name = DUPS(sa->ref_attr_name);
    da->s = sa->s ? poprt__arena_memdup(&d->arena, sa->s, sa->s_len + 1) : NULL;
    if (sa->t) {
        da->t = poprt__arena_alloc(&d->arena, sizeof *da->t);
        if (!da->t)
            return POPRT_STATUS_OUT_OF_MEMORY;
        da->t->name = DUPS(sa->t->name ? sa->t->name : "");
        da->t->graph = dg;
        if (clone_tensor_data(c, da->t, sa->t))
            return POPRT_STATUS_OUT_OF_MEMORY;
    }
    if (sa->g && !(da->g = clone_graph(c, sa->g, dg)))
        return POPRT_STATUS_OUT_OF_MEMORY;
    if (sa->tp) {
        da->tp = poprt__arena_alloc(&d->arena, sizeof *da->tp);
        if (!da->tp || poprt__type_copy(&d->arena, da->tp, sa->tp) || own_params(&d->arena, da->tp))
            return POPRT_STATUS_OUT_OF_MEMORY;
    }
    if (sa->tps) {
        da->tps = poprt__arena_array(&d->arena, (size_t)(sa->n ? sa->n : 1), sizeof *da->tps);
        if (!da->tps)
            return POPRT_STATUS_OUT_OF_MEMORY;
        for (int64_t i = 0; i < sa->n; i++) {
            da->tps[i] = poprt__arena_alloc(&d->arena, sizeof *da->tps[i]);
            if (!da->tps[i] || poprt__type_copy(&d->arena, da->tps[i], sa->tps[i]) ||
                own_params(&d->arena, da->tps[i]))
                return POPRT_STATUS_OUT_OF_MEMORY;
        }
    }
    if (sa->n) {
        if (sa->floats && !(da->floats = poprt__arena_memdup(&d->arena, sa->floats, (size_t)sa->n * sizeof(float))))
            return POPRT_STATUS_OUT_OF_MEMORY;
        if (sa->ints && !(da->ints = poprt__arena_memdup(&d->arena, sa->ints, (size_t)sa->n * sizeof(int64_t))))
            return POPRT_STATUS_OUT_OF_MEMORY;
        if (sa->strings) {
            da->strings = poprt__arena_array(&d->arena, (size_t)sa->n, sizeof(char *));
            da->string_lens = poprt__arena_memdup(&d->arena, sa->string_lens, (size_t)sa->n * sizeof(size_t));
            if (!da->strings || !da->string_lens)
                return POPRT_STATUS_OUT_OF_MEMORY;
            for (int64_t i = 0; i < sa->n; i++)
                da->strings[i] = poprt__arena_memdup(&d->arena, sa->strings[i], sa->string_lens[i] + 1);
        }
        if (sa->graphs) {
            da->graphs = poprt__arena_array(&d->arena, (size_t)sa->n, sizeof(poprt__graph *));
            if (!da->graphs)
                return POPRT_STATUS_OUT_OF_MEMORY;
            for (int64_t i = 0; i < sa->n; i++)
                if (!(da->graphs[i] = clone_graph(c, sa->graphs[i], dg)))
                    return POPRT_STATUS_OUT_OF_MEMORY;
        }
        if (sa->tensors) {
            da->tensors = poprt__arena_array(&d->arena, (size_t)sa->n, sizeof(poprt__tensor *));
            if (!da->tensors)
                return POPRT_STATUS_OUT_OF_MEMORY;
            for (int64_t i = 0; i < sa->n; i++) {
                poprt__tensor *t = poprt__arena_alloc(&d->arena, sizeof *t);
                if (!t)
                    return POPRT_STATUS_OUT_OF_MEMORY;
                t->name = DUPS(sa->tensors[i]->name ? sa->tensors[i]->name : "");
                t->graph = dg;
                if (clone_tensor_data(c, t, sa->tensors[i]))
                    return POPRT_STATUS_OUT_OF_MEMORY;
                da->tensors[i] = t;
            }
        }
    }
    return POPRT_OK;
}

static poprt__graph *clone_graph(cl *c, const poprt__graph *sg, poprt__graph *parent)
{
    poprt__model *d = c->dst;
    poprt__graph *dg = parent ? poprt__graph_new(d, parent, sg->name) : d->graph;
    if (!dg)
        return NULL;
    dg->name = DUPS(sg->name);
    dg->doc = DUPS(sg->doc);
    /* all tensors in their original order, so ids match */
    for (size_t i = 0; i < sg->tensors.len; i++) {
        const poprt__tensor *st = sg->tensors.items[i];
        poprt__tensor *dt = poprt__graph_tensor(dg, st->name);
        if (!dt || clone_tensor_data(c, dt, st))
            return NULL;
    }
    for (size_t i = 0; i < sg->inputs.len; i++)
        if (poprt__vec_push(&dg->inputs, poprt__graph_find(dg, ((poprt__tensor *)sg->inputs.items[i])->name)))
            return NULL;
    for (size_t i = 0; i < sg->outputs.len; i++)
        if (poprt__graph_add_output(dg, map_t(c, dg, sg->outputs.items[i])))
            return NULL;
    for (size_t i = 0; i < sg->initializers.len; i++)
        if (poprt__vec_push(&dg->initializers, poprt__graph_find(dg, ((poprt__tensor *)sg->initializers.items[i])->name)))
            return NULL;
    for (size_t i = 0; i < sg->nodes.len; i++) {
        const poprt__node *sn = sg->nodes.items[i];
        poprt__node *dn = poprt__graph_add_node(dg, sn->op_type, sn->domain, sn->name, sn->n_inputs, sn->n_outputs);
        if (!dn)
            return NULL;
        dn->doc = DUPS(sn->doc);
        dn->overload = DUPS(sn->overload ? sn->overload : "");
        dn->op = sn->op;
        dn->kernel = sn->kernel;
        dn->schema = sn->schema;
        dn->opset = sn->opset;
        for (int k = 0; k < sn->n_inputs; k++)
            poprt__node_set_input(dn, k, map_t(c, dg, sn->inputs[k]));
        for (int k = 0; k < sn->n_outputs; k++) {
            dn->outputs[k] = map_t(c, dg, sn->outputs[k]);
            if (dn->outputs[k]) {
                dn->outputs[k]->producer = dn;
                dn->outputs[k]->producer_slot = k;
            }
        }
        for (int a = 0; a < sn->n_attrs; a++) {
            poprt__attr *da = poprt__node_add_attr(dn, sn->attrs[a].name, sn->attrs[a].type);
            if (!da || clone_attr(c, dg, da, &sn->attrs[a]))
                return NULL;
        }
        dn->n_meta = sn->n_meta;
        if (sn->n_meta) {
            dn->meta_keys = poprt__arena_array(&d->arena, (size_t)sn->n_meta, sizeof(char *));
            dn->meta_vals = poprt__arena_array(&d->arena, (size_t)sn->n_meta, sizeof(char *));
            if (!dn->meta_keys || !dn->meta_vals)
                return NULL;
            for (int k = 0; k < sn->n_meta; k++) {
                dn->meta_keys[k] = DUPS(sn->meta_keys[k]);
                dn->meta_vals[k] = DUPS(sn->meta_vals[k]);
            }
        }
    }
    return dg;
}

poprt_status poprt__model_clone(const poprt__model *s, poprt__model **out)
{
    poprt__model *d;
    poprt_status st = poprt__model_new(&d);
    if (st)
        return st;
    cl c = {.dst = d};
    /* s->lock: another thread's poprt__tensor_data may add to s->blobs */
    pthread_mutex_lock((pthread_mutex_t *)&s->lock);
    for (size_t i = 0; i < s->blobs.len; i++) {
        poprt__blob_ref(s->blobs.items[i]);
        if (poprt__vec_push(&d->blobs, s->blobs.items[i])) {
            poprt__blob_unref(s->blobs.items[i]);
            pthread_mutex_unlock((pthread_mutex_t *)&s->lock);
            goto oom;
        }
    }
    pthread_mutex_unlock((pthread_mutex_t *)&s->lock);
    d->limits = s->limits;
    d->eval = s->eval; /* copies a pass makes evaluate as the model does */
    d->ir_version = s->ir_version;
    d->producer_name = DUPS(s->producer_name);
    d->producer_version = DUPS(s->producer_version);
    d->domain = DUPS(s->domain);
    d->doc = DUPS(s->doc);
    d->model_version = s->model_version;
    d->path = DUPS(s->path);
    d->dir = DUPS(s->dir);
    d->uid_counter = s->uid_counter;
    d->n_opsets = s->n_opsets;
    d->opsets = poprt__arena_array(&d->arena, (size_t)(s->n_opsets ? s->n_opsets : 1), sizeof *d->opsets);
    if (!d->opsets)
        goto oom;
    for (int i = 0; i < s->n_opsets; i++) {
        d->opsets[i].domain = DUPS(s->opsets[i].domain ? s->opsets[i].domain : "");
        d->opsets[i].version = s->opsets[i].version;
    }
    d->n_meta = s->n_meta;
    if (s->n_meta) {
        d->meta_keys = poprt__arena_array(&d->arena, (size_t)s->n_meta, sizeof(char *));
        d->meta_vals = poprt__arena_array(&d->arena, (size_t)s->n_meta, sizeof(char *));
        if (!d->meta_keys || !d->meta_vals)
            goto oom;
        for (int i = 0; i < s->n_meta; i++) {
            d->meta_keys[i] = DUPS(s->meta_keys[i]);
            d->meta_vals[i] = DUPS(s->meta_vals[i]);
        }
    }
    if (!clone_graph(&c, s->graph, NULL))
        goto oom;
    d->n_functions = s->n_functions;
    if (s->n_functions) {
        d->functions = poprt__arena_array(&d->arena, (size_t)s->n_functions, sizeof *d->functions);
        if (!d->functions)
            goto oom;
        for (int i = 0; i < s->n_functions; i++) {
            const poprt__function *sf = &s->functions[i];
            poprt__function *df = &d->functions[i];
            *df = *sf;
            df->name = DUPS(sf->name);
            df->overload = DUPS(sf->overload ? sf->overload : "");
            df->attr_names = poprt__arena_array(&d->arena, (size_t)sf->n_attr_names + 1, sizeof(char *));
            df->opsets = poprt__arena_array(&d->arena, (size_t)sf->n_opsets + 1, sizeof *df->opsets);
            df->attr_defaults = poprt__arena_array(&d->arena, (size_t)sf->n_attr_defaults + 1, sizeof *df->attr_defaults);
            if (!df->attr_names || !df->opsets || !df->attr_defaults)
                goto oom;
            for (int k = 0; k < sf->n_attr_names; k++)
                df->attr_names[k] = DUPS(sf->attr_names[k]);
            for (int k = 0; k < sf->n_opsets; k++) {
                df->opsets[k].domain = DUPS(sf->opsets[k].domain ? sf->opsets[k].domain : "");
                df->opsets[k].version = sf->opsets[k].version;
            }
            for (int k = 0; k < sf->n_attr_defaults; k++) {
                df->attr_defaults[k].name = DUPS(sf->attr_defaults[k].name);
                if (clone_attr(&c, d->graph, &df->attr_defaults[k], &sf->attr_defaults[k]))
                    goto oom;
            }
            df->domain = DUPS(sf->domain ? sf->domain : "");
            df->body = poprt__graph_new(d, NULL, sf->body ? sf->body->name : "");
            if (!df->body)
                goto oom;
            /* the body is cloned as a top-level graph of its own */
            poprt__graph *saved = d->graph;
            d->graph = df->body;
            poprt__graph *b = clone_graph(&c, sf->body, NULL);
            d->graph = saved;
            if (!b)
                goto oom;
        }
    }
    if (d->arena.failed) /* a DUPS above */
        goto oom;
    *out = d;
    return POPRT_OK;
oom:
    poprt__model_free(d);
    return poprt__err(POPRT_STATUS_OUT_OF_MEMORY, "out of memory copying the model");
}
