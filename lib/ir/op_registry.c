#include <pthread.h>
#include <string.h>
#include "ir/op.h"

static const poprt__op *const *const families[] = {
    poprt__ops_elementwise, poprt__ops_cast,     poprt__ops_tensor,
    poprt__ops_nn,          poprt__ops_reduce,   poprt__ops_control,
    poprt__ops_sequence,    poprt__ops_quant,    poprt__ops_misc,
    poprt__ops_poprt_fused, poprt__ops_poprt_replace, poprt__ops_poprt_compiled,
};

static int same_domain(const char *a, const char *b)
{
    if (!a || strcmp(a, "ai.onnx") == 0)
        a = "";
    if (!b || strcmp(b, "ai.onnx") == 0)
        b = "";
    return strcmp(a, b) == 0;
}

const poprt__op *poprt__op_find(const char *domain, const char *op_type, int64_t opset)
{
    const poprt__op *best = NULL;
    for (size_t f = 0; f < sizeof families / sizeof families[0]; f++)
        for (const poprt__op *const *p = families[f]; *p; p++) {
            const poprt__op *op = *p;
            if (strcmp(op->name, op_type) != 0 || !same_domain(op->domain, domain))
                continue;
            if (opset > 0 && op->since_version > opset)
                continue;
            /* several schemas of one op: the newest that applies */
            if (!best || op->since_version > best->since_version)
                best = op;
        }
    return best ? best : poprt__user_op_find(domain, op_type, opset);
}

static const poprt__op *all_ops[4096];
static size_t n_all_ops;
static pthread_once_t all_once = PTHREAD_ONCE_INIT;

static void collect_all(void)
{
    size_t k = 0;
    for (size_t f = 0; f < sizeof families / sizeof families[0]; f++)
        for (const poprt__op *const *p = families[f]; *p && k < 4096; p++)
            all_ops[k++] = *p;
    n_all_ops = k;
}

const poprt__op *const *poprt__op_all(size_t *count_out)
{
    pthread_once(&all_once, collect_all);
    *count_out = n_all_ops;
    return all_ops;
}
