/* fuse_consecutive_unsqueeze: Unsqueeze(Unsqueeze(x, a1), a2) becomes
 * Unsqueeze(x, a): a2 are positions of the final result, and a1 (positions
 * in the intermediate) move to the final positions not taken by a2. The
 * fuse_consecutive_* family (families.h) does the rest. */
#include "passes/families.h"

static int axes(int64_t r, int64_t *a1, int64_t n1, int64_t *a2, int64_t n2)
{
    if (r + n1 + n2 > POPRT__MAX_RANK)
        return 0;
    int64_t rm = r + n1, rf = rm + n2, ok = 1;
    int taken[POPRT__MAX_RANK] = {0};
    for (int64_t k = 0; k < n2 && ok; k++) {
        a2[k] = a2[k] < 0 ? a2[k] + rf : a2[k];
        ok &= a2[k] >= 0 && a2[k] < rf && !taken[a2[k]];
        if (ok)
            taken[a2[k]] = 1;
    }
    /* free[j]: final position of intermediate axis j */
    int64_t freep[POPRT__MAX_RANK], nf = 0;
    for (int64_t d = 0; d < rf && ok; d++)
        if (!taken[d])
            freep[nf++] = d;
    for (int64_t k = 0; k < n1 && ok; k++) {
        int64_t v = a1[k] < 0 ? a1[k] + rm : a1[k];
        ok &= v >= 0 && v < rm && nf == rm;
        if (ok)
            a1[k] = freep[v];
    }
    return (int)ok;
}

static const poprt__consecutive unsqueeze = {"Unsqueeze", NULL, axes};

static poprt_status run(poprt__model *m, const char *args, int *changed)
{
    (void)args;
    return poprt__fuse_consecutive(&unsqueeze, m, changed);
}

const poprt__pass poprt__pass_fuse_consecutive_unsqueeze = {
    "fuse_consecutive_unsqueeze", "merge two consecutive Unsqueezes with known axes into one", run};
