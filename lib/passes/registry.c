#include <stdlib.h>
#include <string.h>
#include "passes/passes.h"

static const poprt__pass *const builtins[] = {
#define POPRT__PASS(name) &poprt__pass_##name,
#include "passes/list_core.def"
#include "passes/list_transformer.def"
#include "passes/list_precision.def"
#include "passes/list_converter.def"
#undef POPRT__PASS
};

const poprt__pass *const *poprt__builtin_passes(size_t *count)
{
    *count = sizeof builtins / sizeof builtins[0];
    return builtins;
}

typedef struct user_pass {
    char *name, *description;
    poprt_pass_fn fn;
    void *user;
} user_pass;

static pthread_mutex_t reg_mu = PTHREAD_MUTEX_INITIALIZER;
static user_pass *users;
static size_t n_users;
static const char **names;
static size_t n_names;

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static int name_taken(const char *name)
{
    for (size_t i = 0; i < sizeof builtins / sizeof builtins[0]; i++)
        if (strcmp(builtins[i]->name, name) == 0)
            return 1;
    for (size_t i = 0; i < n_users; i++)
        if (strcmp(users[i].name, name) == 0)
            return 1;
    return 0;
}

poprt_status poprt__pass_register(const char *name, const char *description, poprt_pass_fn fn,
                                  void *user)
{
    pthread_mutex_lock(&reg_mu);
    poprt_status st = POPRT_OK;
    if (name_taken(name)) {
        st = poprt__err(POPRT_STATUS_INVALID_ARGUMENT, "a pass named '%s' is already registered", name);
    } else {
        user_pass *u = poprt__realloc(users, (n_users + 1) * sizeof *u);
        if (!u)
            st = poprt__err(POPRT_STATUS_OUT_OF_MEMORY, "out of memory");
        else {
            users = u;
            u[n_users].name = poprt__strdup(name);
            u[n_users].description = poprt__strdup(description ? description : "");
            u[n_users].fn = fn;
            u[n_users].user = user;
            if (!u[n_users].name || !u[n_users].description) {
                poprt__free(u[n_users].name);
                poprt__free(u[n_users].description);
                st = poprt__err(POPRT_STATUS_OUT_OF_MEMORY, "out of memory");
            } else
                n_users++;
        }
    }
    pthread_mutex_unlock(&reg_mu);
    return st;
}

poprt_status poprt__pass_list(const char *const **names_out, size_t *count_out)
{
    pthread_mutex_lock(&reg_mu);
    size_t nb = sizeof builtins / sizeof builtins[0], n = nb + n_users;
    poprt_status st = POPRT_OK;
    if (n != n_names) {
        const char **nn = poprt__realloc(names, n * sizeof *nn);
        if (!nn)
            st = poprt__err(POPRT_STATUS_OUT_OF_MEMORY, "out of memory");
        else {
            names = nn;
            for (size_t i = 0; i < nb; i++)
                names[i] = builtins[i]->name;
            for (size_t i = 0; i < n_users; i++)
                names[nb + i] = users[i].name;
            qsort(names, n, sizeof *names, cmp_str);
            n_names = n;
        }
    }
    if (!st) {
        *names_out = names;
        *count_out = n_names;
    }
    pthread_mutex_unlock(&reg_mu);
    return st;
}

poprt_status poprt__pass_describe(const char *name, const char **text_out)
{
    for (size_t i = 0; i < sizeof builtins / sizeof builtins[0]; i++)
        if (strcmp(builtins[i]->name, name) == 0) {
            *text_out = builtins[i]->description;
            return POPRT_OK;
        }
    pthread_mutex_lock(&reg_mu);
    for (size_t i = 0; i < n_users; i++)
        if (strcmp(users[i].name, name) == 0) {
            *text_out = users[i].description;
            pthread_mutex_unlock(&reg_mu);
            return POPRT_OK;
        }
    pthread_mutex_unlock(&reg_mu);
    return poprt__err(POPRT_STATUS_NOT_FOUND, "no pass named '%s'", name);
}

/* (a user pass is copied out under the lock) */
int poprt__pass_lookup(const char *name, const poprt__pass **builtin, poprt_pass_fn *fn, void **user)
{
    for (size_t i = 0; i < sizeof builtins / sizeof builtins[0]; i++)
        if (strcmp(builtins[i]->name, name) == 0) {
            *builtin = builtins[i];
            return 1;
        }
    int found = 0;
    pthread_mutex_lock(&reg_mu);
    for (size_t i = 0; i < n_users && !found; i++)
        if (strcmp(users[i].name, name) == 0) {
            *builtin = NULL;
            *fn = users[i].fn;
            *user = users[i].user;
            found = 1;
        }
    pthread_mutex_unlock(&reg_mu);
    return found;
}
