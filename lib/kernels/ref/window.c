/* Sliding windows lifted to 3-D (see window.h). */
#include "kernels/ref/window.h"

int poprt__geom3_lift(const poprt__nn_geom *g, poprt__geom3 *o)
{
    if (g->nsp > 3)
        return 0;
    int off = 3 - g->nsp;
    for (int i = 0; i < 3; i++) {
        int j = i - off;
        o->in[i] = j < 0 ? 1 : g->in[j];
        o->out[i] = j < 0 ? 1 : g->out[j];
        o->k[i] = j < 0 ? 1 : g->k[j];
        o->s[i] = j < 0 ? 1 : g->s[j];
        o->d[i] = j < 0 ? 1 : g->d[j];
        o->pb[i] = j < 0 ? 0 : g->pb[j];
        o->pe[i] = j < 0 ? 0 : g->pe[j];
    }
    o->in_sz = o->in[0] * o->in[1] * o->in[2];
    o->out_sz = o->out[0] * o->out[1] * o->out[2];
    o->k_sz = o->k[0] * o->k[1] * o->k[2];
    return 1;
}
