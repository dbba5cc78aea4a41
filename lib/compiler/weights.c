/* A compiled program's weights (program.h "weights"; public calls in
 * lib/api/weights.c, docs/runtime.md "Weights").
 *
 * A weight is an initializer of the model as given that reaches the
 * compiled graph as it was: the same tensor with the same value, read by a
 * node, and never an input of a node constant folding computed (its value
 * would live on in the folded result, which a write could not reach).
 * Initializers that a fusion rewrote (batch norm folded into a convolution,
 * Q/K/V weights concatenated) leave the graph under new names and are not
 * weights either; compiling with "optimize" = "0" keeps more of them.
 *
 * Writing a weight replaces the tensor's value with a copy and prepares
 * again every main-graph node that reads it (packed GEMM panels and the
 * like), under the program's write lock: steps running hold it for reading,
 * so a write waits for them and steps after it see the new value whole. */
#include <string.h>
#include "compiler/program.h"

poprt_status poprt__weights_candidates(const poprt__model *m, poprt__weight **out, size_t *n_out)
{
    const poprt__graph *g = m->graph;
    size_t n = g->initializers.len;
    poprt__weight *w = poprt__calloc(n ? n : 1, sizeof *w);
    if (!w)
        return poprt__err(POPRT_STATUS_OUT_OF_MEMORY, "out of memory listing weights");
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        poprt__tensor *t = g->initializers.items[i];
        if (t->raw && t->type.kind == POPRT__KIND_TENSOR && t->type.elem != POPRT_DTYPE_STRING) {
            w[k].t = t;
            w[k].orig = t->raw;
            w[k].nbytes = t->nbytes;
            t->fed_fold = 0;
            k++;
        }
    }
    *out = w;
    *n_out = k;
    return POPRT_OK;
}

int poprt__weights_kept(const poprt__model *m, const poprt__weight *w)
{
    const poprt__tensor *t = w->t;
    return poprt__map_get(&m->graph->by_name, t->name) == t && t->is_initializer &&
           t->raw == w->orig && !t->fed_fold && t->n_uses > 0 && t->type.rank >= 0 &&
           t->type.rank <= POPRT__MAX_RANK;
}

poprt_status poprt__weights_select(poprt__program *p, poprt__weight *cands, size_t n)
{
    size_t k = 0;
    for (size_t i = 0; cands && i < n; i++) {
        poprt__tensor *t = cands[i].t;
        if (poprt__weights_kept(p->m, &cands[i])) {
            for (int d = 0; d < t->type.rank; d++)
                cands[i].dims[d] = t->type.dims[d].value;
            cands[k++] = cands[i];
        }
    }
    p->weights = cands;
    p->n_weights = k;
    return POPRT_OK;
}

void poprt__weights_free(poprt__program *p)
{
    for (size_t i = 0; i < p->n_weights; i++)
        poprt__aligned_free(p->weights[i].copy);
    poprt__free(p->weights);
    p->weights = NULL;
    p->n_weights = 0;
}

long poprt__weight_find(const poprt__program *p, const char *name)
{
    for (size_t i = 0; i < p->n_weights; i++)
        if (!strcmp(p->weights[i].t->name, name))
            return (long)i;
    return -1;
}

poprt_status poprt__weight_read(poprt__program *p, size_t i, void *data, size_t nbytes)
{
    const poprt__tensor *t = p->weights[i].t;
    if (nbytes != t->nbytes)
        return poprt__err(POPRT_STATUS_INVALID_ARGUMENT,
                          "weight '%s' has %zu bytes, the buffer %zu", t->name, t->nbytes, nbytes);
    pthread_rwlock_rdlock(&p->wlock);
    memcpy(data, t->raw, nbytes);
    pthread_rwlock_unlock(&p->wlock);
    return POPRT_OK;
}

/* Prepares again the main-graph nodes reading t; on a failure the nodes
 * prepared so far keep the new value's data (the caller puts the old value
 * back and prepares again). */
static poprt_status prepare_readers(poprt__program *p, const poprt__tensor *t)
{
    const poprt__graph *g = p->m->graph;
    for (size_t i = 0; i < g->nodes.len; i++) {
        const poprt__node *n = g->nodes.items[i];
        for (int k = 0; k < n->n_inputs; k++)
            if (n->inputs[k] == t) {
                poprt_status st = poprt__program_prepare_node(p, i);
                if (st)
                    return poprt__err_prefix(st, "weight '%s': ", t->name);
                break;
            }
    }
    for (size_t i = 0; i < p->n_sub_states; i++) { /* If / Loop / Scan bodies reading it */
        const poprt__node *n = p->sub_states[i].node;
        for (int k = 0; k < n->n_inputs; k++)
            if (n->inputs[k] == t) {
                poprt_status st = poprt__program_prepare_sub(p, &p->sub_states[i]);
                if (st)
                    return poprt__err_prefix(st, "weight '%s': ", t->name);
                break;
            }
    }
    poprt__program_share_equal_states(p); /* readers of it that share again */
    return POPRT_OK;
}

/* Sets weight i's value to data (the original or a copy) and prepares its
 * readers; on failure the previous value and data are put back. */
static poprt_status set_value(poprt__program *p, size_t i, const void *data, void *copy)
{
    poprt__weight *w = &p->weights[i];
    const void *old_raw = w->t->raw, *old_aligned = w->t->aligned;
    void *old_copy = w->copy;
    if (old_raw == w->orig) /* an unaligned original is copied once */
        w->orig_aligned = old_aligned;
    poprt__tensor_set_data(w->t, data);
    if (data == w->orig)
        w->t->aligned = w->orig_aligned;
    w->copy = copy;
    poprt_status st = prepare_readers(p, w->t);
    if (st) {
        w->t->raw = old_raw;
        w->t->aligned = old_aligned;
        w->copy = old_copy;
        poprt__aligned_free(copy != old_copy ? copy : NULL);
        /* the readers prepared from the old value again: what they had */
        (void)prepare_readers(p, w->t);
        return st;
    }
    if (old_copy && old_copy != copy)
        poprt__aligned_free(old_copy);
    __atomic_add_fetch(&p->weights_gen, 1, __ATOMIC_RELEASE);
    return POPRT_OK;
}

/* A program whose prepared data other programs read (a runner's programs
 * for several batch sizes: poprt__program_share_states), or that reads
 * theirs: preparing a node again would free data another program runs on,
 * or leave the programs computing with different values of one weight. */
static poprt_status check_not_shared(const poprt__program *p, const poprt__tensor *t)
{
    if (!p->shares && !__atomic_load_n(&p->shared_by, __ATOMIC_ACQUIRE))
        return POPRT_OK;
    return poprt__err(POPRT_STATUS_UNSUPPORTED,
                      "weight '%s': the program shares its prepared data with another program "
                      "(a runner's batch sizes); its weights are fixed",
                      t->name);
}

poprt_status poprt__weight_write(poprt__program *p, size_t i, const void *data, size_t nbytes)
{
    const poprt__tensor *t = p->weights[i].t;
    if (p->file)
        return poprt__err(POPRT_STATUS_UNSUPPORTED,
                          "weight '%s': a program loaded from an executable file keeps its weights "
                          "(the file does not record which constants were folded from them); "
                          "compile the model to replace them",
                          t->name);
    poprt_status st = check_not_shared(p, t);
    if (st)
        return st;
    if (nbytes != t->nbytes)
        return poprt__err(POPRT_STATUS_INVALID_ARGUMENT,
                          "weight '%s' (%s) has %zu bytes, %zu given", t->name,
                          poprt__dtype_name((poprt_dtype)t->type.elem), t->nbytes, nbytes);
    if (nbytes && !data)
        return poprt__err(POPRT_STATUS_INVALID_ARGUMENT, "weight '%s': NULL data", t->name);
    void *copy = poprt__aligned_alloc(nbytes ? nbytes : 1);
    if (!copy)
        return poprt__err(POPRT_STATUS_OUT_OF_MEMORY, "weight '%s': out of memory", t->name);
    memcpy(copy, data, nbytes);
    pthread_rwlock_wrlock(&p->wlock);
    st = set_value(p, i, copy, copy);
    pthread_rwlock_unlock(&p->wlock);
    return st;
}

poprt_status poprt__weight_reset(poprt__program *p, size_t i)
{
    poprt__weight *w = &p->weights[i];
    if (!w->copy)
        return POPRT_OK;
    poprt_status st = check_not_shared(p, w->t);
    if (st)
        return st;
    pthread_rwlock_wrlock(&p->wlock);
    st = set_value(p, i, w->orig, NULL);
    pthread_rwlock_unlock(&p->wlock);
    return st;
}
