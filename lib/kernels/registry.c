/* The kernel registry: lib/kernels/registry.def as a table sorted once by
 * (op_type, domain, since_version) for lookups, and the kernels of user
 * operators (poprt_op_register) in a list behind a mutex. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include "kernels/kernel.h"
#include "kernels/ref/attention.h"
#include "kernels/ref/cast.h"
#include "kernels/ref/control.h"
#include "kernels/ref/conv.h"
#include "kernels/ref/elementwise.h"
#include "kernels/ref/gemm.h"
#include "kernels/ref/graphcore.h"
#include "kernels/ref/image.h"
#include "kernels/ref/linalg.h"
#include "kernels/ref/loss.h"
#include "kernels/ref/ml.h"
#include "kernels/ref/norm.h"
#include "kernels/ref/object_detection.h"
#include "kernels/ref/pool.h"
#include "kernels/ref/poprt_compiled.h"
#include "kernels/ref/poprt_fused.h"
#include "kernels/ref/poprt_replace.h"
#include "kernels/ref/quant.h"
#include "kernels/ref/random.h"
#include "kernels/ref/reduce.h"
#include "kernels/ref/rnn.h"
#include "kernels/ref/sequence.h"
#include "kernels/ref/signal.h"
#include "kernels/ref/tensor.h"
#include "kernels/ref/text.h"
#include "kernels/ref/training.h"
#include "kernels/x86/attention.h"
#include "kernels/x86/conv.h"
#include "kernels/x86/gemm_ops.h"
#include "kernels/x86/pool_ops.h"
#include "kernels/x86/quant_ops.h"
#include "kernels/x86/vmath.h"

static const poprt__kernel builtin[] = {
#define POPRT__KERNEL_BYTES(domain, name, since, run, prepare, bytes_in) \
    {domain, name, since, run, prepare, #run, bytes_in},
#define POPRT__KERNEL(domain, name, since, run, prepare) \
    POPRT__KERNEL_BYTES(domain, name, since, run, prepare, 0u)
#include "kernels/registry.def"
#undef POPRT__KERNEL
#undef POPRT__KERNEL_BYTES
};
#define N_BUILTIN (sizeof builtin / sizeof builtin[0])

static const poprt__kernel *sorted[N_BUILTIN];
static pthread_once_t sorted_once = PTHREAD_ONCE_INIT;

static int cmp_name(const void *a, const void *b)
{
    return strcmp((*(const poprt__kernel *const *)a)->name,
                  (*(const poprt__kernel *const *)b)->name);
}

static void sort_builtin(void)
{
    for (size_t i = 0; i < N_BUILTIN; i++)
        sorted[i] = &builtin[i];
    qsort(sorted, N_BUILTIN, sizeof *sorted, cmp_name);
}

/* "" and "ai.onnx" name one domain */
static int same_domain(const char *a, const char *b)
{
    if (!a || strcmp(a, "ai.onnx") == 0)
        a = "";
    if (!b || strcmp(b, "ai.onnx") == 0)
        b = "";
    return strcmp(a, b) == 0;
}

/* the newer of best and k when k applies at opset */
static const poprt__kernel *better(const poprt__kernel *best, const poprt__kernel *k,
                                   const char *domain, int64_t opset)
{
    if (!same_domain(k->domain, domain) || (opset > 0 && k->since_version > opset))
        return best;
    return !best || k->since_version > best->since_version ? k : best;
}

typedef struct user_kernel {
    poprt__kernel k;
    struct user_kernel *next;
} user_kernel;

static pthread_mutex_t users_mu = PTHREAD_MUTEX_INITIALIZER;
static user_kernel *users;

const poprt__kernel *poprt__kernel_find(const char *domain, const char *op_type, int64_t opset)
{
    pthread_once(&sorted_once, sort_builtin);
    size_t lo = 0, hi = N_BUILTIN;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (strcmp(sorted[mid]->name, op_type) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    const poprt__kernel *best = NULL;
    for (size_t i = lo; i < N_BUILTIN && strcmp(sorted[i]->name, op_type) == 0; i++)
        best = better(best, sorted[i], domain, opset);
    if (best)
        return best;
    pthread_mutex_lock(&users_mu);
    for (const user_kernel *u = users; u; u = u->next)
        if (strcmp(u->k.name, op_type) == 0)
            best = better(best, &u->k, domain, opset);
    pthread_mutex_unlock(&users_mu);
    return best;
}

const poprt__kernel *poprt__kernel_all(size_t *count_out)
{
    *count_out = N_BUILTIN;
    return builtin;
}

poprt_status poprt__kernel_register_user(const char *domain, const char *name, int since_version,
                                         poprt__kernel_fn run)
{
    user_kernel *u = poprt__calloc(1, sizeof *u);
    if (!u)
        return poprt__err(POPRT_STATUS_OUT_OF_MEMORY, "out of memory registering a kernel");
    u->k = (poprt__kernel){domain, name, since_version, run, NULL, "user", 0u};
    pthread_mutex_lock(&users_mu);
    for (const user_kernel *o = users; o; o = o->next)
        if (strcmp(o->k.domain, domain) == 0 && strcmp(o->k.name, name) == 0 &&
            o->k.since_version == since_version) {
            pthread_mutex_unlock(&users_mu);
            poprt__free(u);
            return poprt__err(POPRT_STATUS_INVALID_ARGUMENT,
                              "a kernel for %s.%s version %d is already registered", domain, name,
                              since_version);
        }
    u->next = users;
    users = u;
    pthread_mutex_unlock(&users_mu);
    return POPRT_OK;
}

const poprt__vmath_variant *poprt__kernels_vmath(void)
{
    return poprt__vmath_best();
}

void poprt__kernels_bind(poprt__graph *g)
{
    for (size_t i = 0; i < g->nodes.len; i++) {
        poprt__node *n = g->nodes.items[i];
        n->kernel = poprt__kernel_find(n->domain, n->op_type, n->opset);
        for (int a = 0; a < n->n_attrs; a++) {
            poprt__attr *at = &n->attrs[a];
            if (at->type == POPRT__ATTR_GRAPH && at->g)
                poprt__kernels_bind(at->g);
            for (int64_t k = 0; at->type == POPRT__ATTR_GRAPHS && k < at->n; k++)
                if (at->graphs[k])
                    poprt__kernels_bind(at->graphs[k]);
        }
    }
}
