/* The malformed-model regression corpus (tests/data/malformed): each model
 * is loaded, compiled and run through the public API in a forked child with
 * a timeout, and must give the status expect.tsv names, with a message that
 * contains the expected text (the node, tensor, attribute or option at
 * fault). With --cli POPRT, `POPRT -i FILE --run --iters 1` must also exit
 * with 1 (0 for OK) and print the status and that text.
 *
 *   malformed_runner [-v] [--cli POPRT] [--timeout S] DIR
 *
 * Inputs: each session input as a tensor of its dtype, symbolic dims 2,
 * floats in [-1, 1), integers 0..3 (the CLI's --run makes the same kind of
 * values), strings "1". A crash, a timeout or a status other than the one
 * expected is a failure. Prints one line per model and a summary; exit 0
 * when every model gives what it must. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "poprt/poprt.h"

#define MSG_MAX 8192

static int verbose;

typedef struct row {
    char file[256], status[64], needle[512], what[512];
} row;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static const char *status_name(poprt_status st)
{
#define NAME(name, num, text) \
    if (st == POPRT_STATUS_##name) \
        return #name;
    POPRT_STATUS_MAP(NAME)
#undef NAME
    return "?";
}

/* Fills a buffer of n elements of dt (see the header comment). */
static void fill(void *buf, poprt_dtype dt, size_t n)
{
    static const char *one = "1";
    uint32_t x = 2463534242u;
    for (size_t i = 0; i < n; i++) {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        float f = (float)((double)x / 4294967296.0 * 2.0 - 1.0);
        unsigned small = x % 4u;
        switch (dt) {
        case POPRT_DTYPE_FLOAT: ((float *)buf)[i] = f; break;
        case POPRT_DTYPE_DOUBLE: ((double *)buf)[i] = f; break;
        case POPRT_DTYPE_INT64:
        case POPRT_DTYPE_UINT64: ((uint64_t *)buf)[i] = small; break;
        case POPRT_DTYPE_INT32:
        case POPRT_DTYPE_UINT32: ((uint32_t *)buf)[i] = small; break;
        case POPRT_DTYPE_INT16:
        case POPRT_DTYPE_UINT16: ((uint16_t *)buf)[i] = (uint16_t)small; break;
        case POPRT_DTYPE_BOOL: ((uint8_t *)buf)[i] = (uint8_t)(small & 1); break;
        case POPRT_DTYPE_STRING: ((const char **)buf)[i] = one; break;
        default:
            if (poprt_dtype_size(dt) == 1)
                ((uint8_t *)buf)[i] = (uint8_t)small;
            else
                memset((char *)buf + i * poprt_dtype_size(dt), 0, poprt_dtype_size(dt));
        }
    }
}

/* Load, compile, run: the first failing status (message in msg), or OK. */
static poprt_status run_model(const char *path, char *msg)
{
    poprt_model *m = NULL;
    poprt_session *s = NULL;
    poprt_stepio *io = NULL;
    void *bufs[64] = {0};
    size_t n_bufs = 0;
    poprt_status st = poprt_model_load(path, &m);
    if (!st)
        st = poprt_session_create(m, NULL, &s);
    if (!st)
        st = poprt_stepio_create(&io);
    for (size_t i = 0; !st && i < poprt_session_num_inputs(s) && n_bufs < 64; i++) {
        poprt_value_info vi = {.size = sizeof vi};
        st = poprt_session_input(s, i, &vi);
        if (st)
            break;
        int64_t dims[16];
        size_t n = 1;
        int rank = vi.rank < 0 ? 1 : vi.rank;
        for (int d = 0; d < rank && d < 16; d++) {
            dims[d] = vi.rank < 0 || vi.dims[d] < 0 ? 2 : vi.dims[d];
            n *= (size_t)dims[d];
        }
        size_t bytes = n * poprt_dtype_size(vi.dtype);
        void *b = calloc(n ? n : 1, poprt_dtype_size(vi.dtype) ? poprt_dtype_size(vi.dtype) : 1);
        if (!b) {
            snprintf(msg, MSG_MAX, "runner: out of memory for input '%s'", vi.name);
            return POPRT_STATUS_OUT_OF_MEMORY;
        }
        bufs[n_bufs++] = b;
        fill(b, vi.dtype, n);
        st = poprt_stepio_set_input(io, vi.name, vi.dtype, dims, rank, b, bytes);
    }
    for (size_t i = 0; !st && i < poprt_session_num_outputs(s); i++) {
        poprt_value_info vi = {.size = sizeof vi};
        st = poprt_session_output(s, i, &vi);
        if (!st)
            st = poprt_stepio_set_output_alloc(io, vi.name);
    }
    if (!st)
        st = poprt_session_run(s, io);
    snprintf(msg, MSG_MAX, "%s", st ? poprt_last_error() : "");
    poprt_stepio_free(io);
    poprt_session_free(s);
    poprt_model_free(m);
    for (size_t i = 0; i < n_bufs; i++)
        free(bufs[i]);
    return st;
}

/* Runs child(arg, fd) in a forked child, collecting what it writes to fd
 * into out. Returns 0 with the child's exit code in *rc, or 1 (out says
 * why) when it crashed or ran past the timeout. */
static int isolated(void (*child)(const void *arg, int fd), const void *arg, double timeout,
                    int *rc, char *out)
{
    int fd[2];
    if (pipe(fd) != 0)
        return snprintf(out, MSG_MAX, "pipe: %s", strerror(errno)), 1;
    pid_t pid = fork();
    if (pid < 0)
        return snprintf(out, MSG_MAX, "fork: %s", strerror(errno)), 1;
    if (pid == 0) {
        close(fd[0]);
        child(arg, fd[1]);
        _exit(0);
    }
    close(fd[1]);
    size_t len = 0;
    char buf[MSG_MAX];
    double deadline = now_s() + timeout;
    int timed_out = 0;
    for (;;) {
        int left = (int)((deadline - now_s()) * 1000);
        if (left <= 0) {
            timed_out = 1;
            break;
        }
        struct pollfd p = {.fd = fd[0], .events = POLLIN};
        int r = poll(&p, 1, left);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            timed_out = r == 0;
            break;
        }
        ssize_t k = read(fd[0], buf + len, sizeof buf - 1 - len);
        if (k <= 0 || (len += (size_t)k) >= sizeof buf - 1)
            break;
    }
    close(fd[0]);
    buf[len] = 0;
    int status = 0;
    if (timed_out)
        kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
    if (timed_out)
        return snprintf(out, MSG_MAX, "timeout after %g s", timeout), 1;
    if (WIFSIGNALED(status))
        return snprintf(out, MSG_MAX, "crashed: signal %d (%s)", WTERMSIG(status),
                        strsignal(WTERMSIG(status))), 1;
    *rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    snprintf(out, MSG_MAX, "%s", buf);
    return 0;
}

/* Child: the model through the API; writes "<status number> <message>". */
static void api_child(const void *path, int fd)
{
    char msg[MSG_MAX], line[MSG_MAX + 16];
    poprt_status s = run_model(path, msg);
    int n = snprintf(line, sizeof line, "%d %s", (int)s, msg);
    if (n > 0 && write(fd, line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1) < 0)
        _exit(3);
}

typedef struct cli_job {
    const char *cli, *path;
} cli_job;

/* Child: `POPRT -i FILE --run --iters 1`, its stderr into fd. */
static void cli_child(const void *arg, int fd)
{
    const cli_job *j = arg;
    dup2(fd, 2);
    int null = open("/dev/null", O_WRONLY);
    if (null >= 0)
        dup2(null, 1);
    execl(j->cli, j->cli, "-i", j->path, "--run", "--iters", "1", (char *)NULL);
    _exit(127);
}

/* "<number> <message>" -> *st and the message left in msg; 0 if malformed. */
static int split_status(char *msg, poprt_status *st)
{
    char *sp = strchr(msg, ' ');
    if (!sp)
        return 0;
    *st = (poprt_status)atoi(msg);
    memmove(msg, sp + 1, strlen(sp + 1) + 1);
    return 1;
}

static int parse_row(char *line, row *r)
{
    char *f[4] = {0};
    int k = 0;
    for (char *p = line; k < 4; k++) {
        f[k] = p;
        char *t = strchr(p, '\t');
        if (!t)
            break;
        *t = 0;
        p = t + 1;
    }
    if (k < 3)
        return 0;
    char *nl = strchr(f[3], '\n');
    if (nl)
        *nl = 0;
    snprintf(r->file, sizeof r->file, "%s", f[0]);
    snprintf(r->status, sizeof r->status, "%s", f[1]);
    snprintf(r->needle, sizeof r->needle, "%s", f[2]);
    snprintf(r->what, sizeof r->what, "%s", f[3]);
    return 1;
}

int main(int argc, char **argv)
{
    const char *cli = NULL, *dir = NULL;
    double timeout = 60;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-v"))
            verbose = 1;
        else if (!strcmp(argv[i], "--cli") && i + 1 < argc)
            cli = argv[++i];
        else if (!strcmp(argv[i], "--timeout") && i + 1 < argc)
            timeout = atof(argv[++i]);
        else if (!dir && argv[i][0] != '-')
            dir = argv[i];
        else {
            fprintf(stderr, "usage: malformed_runner [-v] [--cli POPRT] [--timeout S] DIR\n");
            return 2;
        }
    }
    if (!dir || !(timeout > 0)) {
        fprintf(stderr, "usage: malformed_runner [-v] [--cli POPRT] [--timeout S] DIR\n");
        return 2;
    }
    char path[4096];
    snprintf(path, sizeof path, "%s/expect.tsv", dir);
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "malformed_runner: cannot open %s: %s\n", path, strerror(errno));
        return 2;
    }
    char line[2048];
    int total = 0, failed = 0;
    while (fgets(line, sizeof line, f)) {
        row r;
        if (line[0] == '#' || line[0] == '\n' || !parse_row(line, &r))
            continue;
        total++;
        snprintf(path, sizeof path, "%s/%s", dir, r.file);
        char msg[MSG_MAX], why[MSG_MAX + 600] = "";
        poprt_status st = POPRT_OK;
        int ok_expected = !strcmp(r.status, "OK"), rc = 0;
        if (isolated(api_child, path, timeout, &rc, msg))
            snprintf(why, sizeof why, "API: %s", msg);
        else if (rc != 0 || !split_status(msg, &st))
            snprintf(why, sizeof why, "API: the child exited with %d", rc);
        else if (strcmp(status_name(st), r.status) != 0)
            snprintf(why, sizeof why, "API: status %s, expected %s: %s", status_name(st),
                     r.status, msg);
        else if (!ok_expected && !strstr(msg, r.needle))
            snprintf(why, sizeof why, "API: message lacks \"%s\": %s", r.needle, msg);
        if (!why[0] && cli) {
            cli_job job = {cli, path};
            if (isolated(cli_child, &job, timeout, &rc, msg))
                snprintf(why, sizeof why, "CLI: %s", msg);
            else if (rc != (ok_expected ? 0 : 1))
                snprintf(why, sizeof why, "CLI: exit %d: %s", rc, msg);
            else if (!ok_expected && (!strstr(msg, r.needle) || !strstr(msg, poprt_status_string(st))))
                snprintf(why, sizeof why, "CLI: output lacks \"%s\" or \"%s\": %s", r.needle,
                         poprt_status_string(st), msg);
        }
        if (why[0]) {
            failed++;
            printf("FAIL %s (%s): %s\n", r.file, r.what, why);
        } else if (verbose)
            printf("PASS %s: %s%s\n", r.file, r.status, ok_expected ? "" : "");
        if (verbose && !why[0] && !ok_expected)
            printf("     %s\n", msg);
        fflush(stdout);
    }
    fclose(f);
    printf("%d models: %d as expected, %d not\n", total, total - failed, failed);
    return failed ? 1 : 0;
}
