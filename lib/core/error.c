#include <stdio.h>
#include <string.h>
#include "core/core.h"

/* Thread-local detail message for poprt_last_error(). */
static _Thread_local char last_error[2048];

static const struct {
    int num;
    const char *text;
} status_table[] = {
#define POPRT__STATUS_ROW(name, num, text) {num, text},
    POPRT_STATUS_MAP(POPRT__STATUS_ROW)
#undef POPRT__STATUS_ROW
};

const char *poprt_status_string(poprt_status status)
{
    for (size_t i = 0; i < sizeof status_table / sizeof status_table[0]; i++)
        if (status_table[i].num == (int)status)
            return status_table[i].text;
    return "unknown status";
}

const char *poprt_last_error(void) { return last_error; }

void poprt__err_clear(void) { last_error[0] = 0; }

poprt_status poprt__err(poprt_status st, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_error, sizeof last_error, fmt, ap);
    va_end(ap);
    return st;
}

poprt_status poprt__err_prefix(poprt_status st, const char *fmt, ...)
{
    char prefix[1024], old[sizeof last_error];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(prefix, sizeof prefix, fmt, ap);
    va_end(ap);
    memcpy(old, last_error, sizeof old);
    size_t np = strlen(prefix), no = strlen(old);
    if (np > sizeof last_error - 1)
        np = sizeof last_error - 1;
    if (no > sizeof last_error - 1 - np)
        no = sizeof last_error - 1 - np;
    memcpy(last_error, prefix, np);
    memcpy(last_error + np, old, no);
    last_error[np + no] = 0;
    return st;
}
