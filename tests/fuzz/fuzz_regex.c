/* fuzz_regex: the regular-expression engine of RegexFullMatch (lib/core/regex.h:
 * poprt__regex_compile, poprt__regex_scratch, poprt__regex_full_match).
 * Input: the pattern up to the first NUL byte, then texts separated by NUL
 * bytes, each matched with the scratch poprt__regex_scratch gives. A compiled pattern must also match
 * every text the same way twice (the visited marks are reset per text). */
#include <stdlib.h>
#include <string.h>
#include "fuzz.h"
#include "core/regex.h"

/* Allocations of one input, freed together (the compiler's memory comes
 * from scratch or an arena in the library). */
typedef struct pool {
    void *p[64];
    int n;
} pool;

static void *pool_alloc(void *ctx, size_t size)
{
    pool *pl = ctx;
    if (pl->n == 64)
        return NULL;
    void *p = malloc(size ? size : 1);
    if (p)
        pl->p[pl->n++] = p;
    return p;
}

static void pool_free(pool *pl)
{
    for (int i = 0; i < pl->n; i++)
        free(pl->p[i]);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);
    if (!text)
        return 0;
    memcpy(text, data, size);
    text[size] = 0;
    const size_t plen = strlen(text);
    pool pl = {.n = 0};
    poprt__regex *re = NULL;
    if (poprt__regex_compile(text, pool_alloc, &pl, &re) == POPRT_OK) {
        const char *texts[64];
        int nt = 0;
        size_t most = 0;
        for (size_t pos = plen + 1; pos <= size && nt < 64; pos += strlen(text + pos) + 1) {
            texts[nt++] = text + pos;
            most = strlen(text + pos) > most ? strlen(text + pos) : most;
        }
        size_t n_visited, n_stack;
        if (!poprt__regex_scratch(re, most, &n_visited, &n_stack))
            nt = 0; /* the kernel refuses: more than POPRT__REGEX_MAX_STATES */
        uint8_t *visited = nt ? malloc(n_visited) : NULL;
        uint32_t *stack = nt ? malloc(n_stack * sizeof *stack) : NULL;
        if (nt && (!visited || !stack))
            fz_fail("fuzz_regex", "out of memory");
        for (int i = 0; i < nt; i++) {
            int a = poprt__regex_full_match(re, texts[i], visited, stack);
            int b = poprt__regex_full_match(re, texts[i], visited, stack);
            if (a != b || (a != 0 && a != 1))
                fz_fail("poprt__regex_full_match", "two answers for one text");
        }
        free(visited);
        free(stack);
    }
    pool_free(&pl);
    free(text);
    return 0;
}
