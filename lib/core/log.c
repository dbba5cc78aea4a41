#include <stdio.h>
#include <strings.h>
#include <pthread.h>
#include "core/core.h"

static pthread_mutex_t log_mu = PTHREAD_MUTEX_INITIALIZER;
static poprt_log_fn log_fn;
static void *log_user;
static int log_min = POPRT_LOG_WARNING;

void poprt__log_set_callback(poprt_log_fn fn, void *user, poprt_log_level min_level)
{
    pthread_mutex_lock(&log_mu);
    log_fn = fn;
    log_user = user;
    __atomic_store_n(&log_min, (int)min_level, __ATOMIC_RELAXED);
    pthread_mutex_unlock(&log_mu);
}

int poprt__log_enabled(poprt_log_level level)
{
    return log_fn && (int)level >= __atomic_load_n(&log_min, __ATOMIC_RELAXED);
}

void poprt__log(poprt_log_level level, const char *fmt, ...)
{
    if (!poprt__log_enabled(level))
        return;
    char msg[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    pthread_mutex_lock(&log_mu);
    poprt_log_fn fn = log_fn;
    void *user = log_user;
    pthread_mutex_unlock(&log_mu);
    if (fn)
        fn(level, msg, user);
}

poprt_status poprt__log_level_parse(const char *name, poprt_log_level *level_out)
{
    static const struct {
        const char *name;
        poprt_log_level level;
    } names[] = {{"DEBUG", POPRT_LOG_DEBUG},   {"INFO", POPRT_LOG_INFO},
                 {"WARNING", POPRT_LOG_WARNING}, {"ERROR", POPRT_LOG_ERROR},
                 {"CRITICAL", POPRT_LOG_CRITICAL}, {"OFF", POPRT_LOG_OFF}};
    if (!name || !level_out)
        return poprt__err(POPRT_STATUS_INVALID_ARGUMENT, "poprt_log_level_parse: NULL argument");
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strcasecmp(name, names[i].name) == 0) {
            *level_out = names[i].level;
            return POPRT_OK;
        }
    return poprt__err(POPRT_STATUS_INVALID_ARGUMENT,
                      "logging level '%s': expected DEBUG, INFO, WARNING, ERROR or CRITICAL", name);
}

#define POPRT__STR2(x) #x
#define POPRT__STR(x) POPRT__STR2(x)
const char *poprt__version(void)
{
    return POPRT__STR(POPRT_VERSION_MAJOR) "." POPRT__STR(POPRT_VERSION_MINOR) "." POPRT__STR(
        POPRT_VERSION_PATCH);
}
