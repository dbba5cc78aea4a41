#include <stdio.h>
#include <string.h>
#include "core/core.h"

/* Thread-local detail message for poprt__last_error(). */
static _Thread_local char last_error[4096];

static const struct {
    int num;
    const char *text;
} status_table[] = {
#define POPRT__STATUS_ROW(name, num, text) {num, text},
    POPRT_STATUS_MAP(POPRT__STATUS_ROW)
#undef POPRT__STATUS_ROW
};

const char *poprt__status_string(poprt_status status)
{
    for (size_t i = 0; i < sizeof status_table / sizeof status_table[0]; i++)
        if (status_table[i].num == (int)status)
            return status_table[i].text;
    return "unknown status";
}

const char *poprt__last_error(void) { return last_error; }

void poprt__err_clear(void) { last_error[0] = 0; }

poprt_status poprt__err(poprt_status st, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_error, sizeof last_error, fmt, ap);
    va_end(ap);
    return st;
}

/* The message a failure ends with (the cause) is the part a reader needs
 * most, and prefixes pile up in front of it as the error travels out of
 * nested graphs: when prefix and message do not fit together, the middle
 * gives way, the outermost context and the cause stay. */
#define KEEP_HEAD 512

poprt_status poprt__err_prefix(poprt_status st, const char *fmt, ...)
{
    char prefix[1024], old[sizeof last_error];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(prefix, sizeof prefix, fmt, ap);
    va_end(ap);
    memcpy(old, last_error, sizeof old);
    const size_t cap = sizeof last_error - 1, np = strlen(prefix), no = strlen(old);
    if (np + no <= cap) {
        memcpy(last_error, prefix, np);
        memcpy(last_error + np, old, no + 1);
        return st;
    }
    static const char cut[] = " [...] ";
    const size_t cn = sizeof cut - 1;
    /* head: the start of prefix + old, at most KEEP_HEAD bytes */
    size_t head = KEEP_HEAD, tail = cap - KEEP_HEAD - cn;
    size_t len = 0;
    for (size_t i = 0; i < head; i++)
        last_error[len++] = i < np ? prefix[i] : old[i - np];
    memcpy(last_error + len, cut, cn);
    len += cn;
    /* tail: the end of prefix + old (old is at least as long as tail here
     * unless the prefix itself is long) */
    size_t total = np + no;
    for (size_t i = total - tail; i < total; i++)
        last_error[len++] = i < np ? prefix[i] : old[i - np];
    last_error[len] = 0;
    return st;
}
