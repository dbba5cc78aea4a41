/* fuse_consecutive_squeeze: Squeeze(Squeeze(x, a1), a2) becomes
 * Squeeze(x, a) where a holds a1 and a2 mapped back to x's axes (x's rank
 * and both axes lists must be known). The fuse_consecutive_* family
 * (families.h) does the rest. */
#include "passes/families.h"

static int axes(int64_t r, int64_t *a1, int64_t n1, int64_t *a2, int64_t n2)
{
    if (n1 + n2 > r)
        return 0;
    /* kept[j]: the x axis that is axis j of the intermediate */
    int64_t kept[POPRT__MAX_RANK], nk = 0, ok = 1;
    for (int64_t k = 0; k < n1; k++) {
        a1[k] = a1[k] < 0 ? a1[k] + r : a1[k];
        ok &= a1[k] >= 0 && a1[k] < r;
    }
    for (int d = 0; d < r && ok; d++) {
        int gone = 0;
        for (int64_t k = 0; k < n1; k++)
            gone |= a1[k] == d;
        if (!gone)
            kept[nk++] = d;
    }
    for (int64_t k = 0; k < n2 && ok; k++) {
        int64_t v = a2[k] < 0 ? a2[k] + nk : a2[k];
        ok &= v >= 0 && v < nk;
        if (ok)
            a2[k] = kept[v];
    }
    return (int)ok;
}

static const poprt__consecutive squeeze = {"Squeeze", NULL, axes};

static poprt_status run(poprt__model *m, const char *args, int *changed)
{
    (void)args;
    return poprt__fuse_consecutive(&squeeze, m, changed);
}

const poprt__pass poprt__pass_fuse_consecutive_squeeze = {
    "fuse_consecutive_squeeze", "merge two consecutive Squeezes with known axes into one", run};
