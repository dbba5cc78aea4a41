#include <string.h>
#include "ir/ir.h"

const poprt__attr *poprt__node_attr(const poprt__node *n, const char *name)
{
    /* kernels look their attributes up on every run: the first letter
     * settles most comparisons without a call */
    for (int i = 0; i < n->n_attrs; i++)
        if (n->attrs[i].name[0] == name[0] && strcmp(n->attrs[i].name, name) == 0)
            return &n->attrs[i];
    return NULL;
}

int64_t poprt__attr_i(const poprt__node *n, const char *name, int64_t dflt)
{
    const poprt__attr *a = poprt__node_attr(n, name);
    if (!a)
        return dflt;
    if (a->type == POPRT__ATTR_INT)
        return a->i;
    if (a->type == POPRT__ATTR_FLOAT)
        return (int64_t)a->f;
    return dflt;
}

float poprt__attr_f(const poprt__node *n, const char *name, float dflt)
{
    const poprt__attr *a = poprt__node_attr(n, name);
    if (!a)
        return dflt;
    if (a->type == POPRT__ATTR_FLOAT)
        return a->f;
    if (a->type == POPRT__ATTR_INT)
        return (float)a->i;
    return dflt;
}

const char *poprt__attr_s(const poprt__node *n, const char *name, const char *dflt)
{
    const poprt__attr *a = poprt__node_attr(n, name);
    return (a && a->type == POPRT__ATTR_STRING && a->s) ? a->s : dflt;
}

const int64_t *poprt__attr_ints(const poprt__node *n, const char *name, int64_t *count_out)
{
    const poprt__attr *a = poprt__node_attr(n, name);
    if (a && a->type == POPRT__ATTR_INTS) {
        *count_out = a->n;
        return a->ints;
    }
    *count_out = 0;
    return NULL;
}

const float *poprt__attr_floats(const poprt__node *n, const char *name, int64_t *count_out)
{
    const poprt__attr *a = poprt__node_attr(n, name);
    if (a && a->type == POPRT__ATTR_FLOATS) {
        *count_out = a->n;
        return a->floats;
    }
    *count_out = 0;
    return NULL;
}
