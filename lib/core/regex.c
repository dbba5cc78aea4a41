/* A small regular-expression engine (RE2 syntax subset, full match): see
 * regex.h.
 *
 * Parsed into a tree, compiled to a program (char, class, split, jmp, assertions),
 * run by a backtracking search that marks visited (pc, position) pairs, so each
 * pair is explored once: time and memory O(program x text), never exponential.
 * Supported: literals, ., [...] with ranges and negation, \d \w \s \D \W \S,
 * escapes, ^ $ \A \z \b \B, groups (...) (?:...), |, * + ? {n} {n,} {n,m} and
 * their lazy forms. Text is bytes; '.' and negated classes consume a whole
 * UTF-8 sequence. As in RE2, counted repetitions nested in one another may
 * multiply to 1000 at most ((a{100}){10} is fine, (a{1000}){2} is not): each
 * count copies its operand into the program. */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include "core/regex.h"

enum { QRX_CHAR, QRX_ANY, QRX_CLASS, QRX_BOL, QRX_EOL, QRX_WORDB, QRX_NWORDB, QRX_SPLIT, QRX_JMP,
       QRX_MATCH };
enum { QA_CHAR, QA_ANY, QA_CLASS, QA_ASSERT, QA_CAT, QA_ALT, QA_REP, QA_EMPTY };

typedef struct qrx_class {
    uint8_t bits[32];
    uint8_t non_ascii; /* matches any non-ASCII character */
} qrx_class;

typedef struct qrx_ast {
    int kind, a, b, min, max; /* CAT/ALT: children a, b; REP: child a, max -1 = inf */
    int v;                    /* CHAR: byte; CLASS: index; ASSERT: op */
    int copies; /* product of the counted repetitions on the deepest path, <= QRX_MAX_REPEAT */
} qrx_ast;

#define QRX_MAX_REPEAT 1000

typedef struct qrx_inst {
    int op, x, y, v;
} qrx_inst;

struct poprt__regex {
    qrx_inst *prog;
    int n, n_split;
    qrx_class *cls;
};

typedef struct qrx_parser {
    const char *p, *end;
    qrx_ast *nodes;
    int n, cap;
    qrx_class *cls;
    int ncls, capcls;
    const char *err;
} qrx_parser;

static int qrx_node(qrx_parser *ps, int kind, int a, int b)
{
    if (ps->n >= ps->cap) {
        ps->err = "pattern too complex";
        return -1;
    }
    qrx_ast *t = &ps->nodes[ps->n];
    memset(t, 0, sizeof *t);
    t->kind = kind;
    t->a = a;
    t->b = b;
    t->copies = 1;
    if (kind == QA_CAT || kind == QA_ALT)
        t->copies = ps->nodes[a].copies > ps->nodes[b].copies ? ps->nodes[a].copies
                                                             : ps->nodes[b].copies;
    return ps->n++;
}

static void qrx_set(qrx_class *c, int ch) { c->bits[ch >> 3] |= (uint8_t)(1u << (ch & 7)); }
static int qrx_has(const qrx_class *c, int ch) { return (c->bits[ch >> 3] >> (ch & 7)) & 1; }

static int qrx_is_word(int ch) { return ch < 128 && (isalnum(ch) || ch == '_'); }

/* Adds the class of escape letter e (d w s, or negated D W S) to c; 0 if e is not one. */
static int qrx_add_perl(qrx_class *c, int e)
{
    int neg = isupper(e), lc = tolower(e);
    if (lc != 'd' && lc != 'w' && lc != 's')
        return 0;
    for (int ch = 0; ch < 128; ch++) {
        int in = lc == 'd' ? isdigit(ch) != 0
                 : lc == 'w' ? qrx_is_word(ch)
                             : (ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r' ||
                                ch == '\f' || ch == '\v');
        if (in != neg)
            qrx_set(c, ch);
    }
    if (neg) {
        c->non_ascii = 1;
        for (int ch = 128; ch < 256; ch++)
            qrx_set(c, ch);
    }
    return 1;
}

static int qrx_escape_char(int e)
{
    switch (e) {
    case 'n': return '\n';
    case 't': return '\t';
    case 'r': return '\r';
    case 'f': return '\f';
    case 'v': return '\v';
    case 'a': return '\a';
    default: return e;
    }
}

static int qrx_new_class(qrx_parser *ps)
{
    if (ps->ncls >= ps->capcls) {
        ps->err = "too many classes";
        return -1;
    }
    memset(&ps->cls[ps->ncls], 0, sizeof ps->cls[0]);
    return ps->ncls++;
}

static int qrx_parse_alt(qrx_parser *ps);

static int qrx_parse_class(qrx_parser *ps)
{
    int ci = qrx_new_class(ps);
    if (ci < 0)
        return -1;
    qrx_class *c = &ps->cls[ci];
    int neg = 0;
    if (ps->p < ps->end && *ps->p == '^') {
        neg = 1;
        ps->p++;
    }
    int first = 1;
    while (ps->p < ps->end && (*ps->p != ']' || first)) {
        first = 0;
        int lo = (unsigned char)*ps->p++;
        if (lo == '\\') {
            if (ps->p >= ps->end)
                break;
            int e = (unsigned char)*ps->p++;
            if (qrx_add_perl(c, e))
                continue;
            lo = qrx_escape_char(e);
        } else if (lo == '[' && ps->p < ps->end && *ps->p == ':') {
            ps->err = "POSIX classes are not supported";
            return -1;
        }
        int hi = lo;
        if (ps->p + 1 < ps->end && *ps->p == '-' && ps->p[1] != ']') {
            ps->p++;
            hi = (unsigned char)*ps->p++;
            if (hi == '\\' && ps->p < ps->end)
                hi = qrx_escape_char((unsigned char)*ps->p++);
            if (hi < lo) {
                ps->err = "bad character range";
                return -1;
            }
        }
        for (int ch = lo; ch <= hi; ch++)
            qrx_set(c, ch);
    }
    if (ps->p >= ps->end) {
        ps->err = "missing ]";
        return -1;
    }
    ps->p++;
    if (neg) {
        for (int i = 0; i < 32; i++)
            c->bits[i] = (uint8_t)~c->bits[i];
        c->non_ascii = 1;
    }
    int t = qrx_node(ps, QA_CLASS, 0, 0);
    if (t >= 0)
        ps->nodes[t].v = ci;
    return t;
}

static int qrx_parse_atom(qrx_parser *ps)
{
    int ch = (unsigned char)*ps->p++;
    int t;
    switch (ch) {
    case '(': {
        if (ps->end - ps->p >= 2 && ps->p[0] == '?' && ps->p[1] == ':')
            ps->p += 2;
        else if (ps->p < ps->end && *ps->p == '?') {
            ps->err = "unsupported group syntax";
            return -1;
        }
        t = qrx_parse_alt(ps);
        if (t < 0)
            return -1;
        if (ps->p >= ps->end || *ps->p != ')') {
            ps->err = "missing )";
            return -1;
        }
        ps->p++;
        return t;
    }
    case '[': return qrx_parse_class(ps);
    case '.': return qrx_node(ps, QA_ANY, 0, 0);
    case '^':
    case '$':
        t = qrx_node(ps, QA_ASSERT, 0, 0);
        if (t >= 0)
            ps->nodes[t].v = ch == '^' ? QRX_BOL : QRX_EOL;
        return t;
    case '*':
    case '+':
    case '?':
        ps->err = "repetition without operand";
        return -1;
    case '\\': {
        if (ps->p >= ps->end) {
            ps->err = "trailing backslash";
            return -1;
        }
        int e = (unsigned char)*ps->p++;
        if (e == 'b' || e == 'B' || e == 'A' || e == 'z') {
            t = qrx_node(ps, QA_ASSERT, 0, 0);
            if (t >= 0)
                ps->nodes[t].v = e == 'b' ? QRX_WORDB : e == 'B' ? QRX_NWORDB
                                                      : e == 'A' ? QRX_BOL : QRX_EOL;
            return t;
        }
        if (tolower(e) == 'd' || tolower(e) == 'w' || tolower(e) == 's') {
            int ci = qrx_new_class(ps);
            if (ci < 0)
                return -1;
            qrx_add_perl(&ps->cls[ci], e);
            t = qrx_node(ps, QA_CLASS, 0, 0);
            if (t >= 0)
                ps->nodes[t].v = ci;
            return t;
        }
        if (e == 'x' && ps->end - ps->p >= 2 && isxdigit((unsigned char)ps->p[0]) &&
            isxdigit((unsigned char)ps->p[1])) {
            char hx[3] = {ps->p[0], ps->p[1], 0};
            ps->p += 2;
            ch = (int)strtol(hx, NULL, 16);
        } else
            ch = qrx_escape_char(e);
        break;
    }
    default: break;
    }
    t = qrx_node(ps, QA_CHAR, 0, 0);
    if (t >= 0)
        ps->nodes[t].v = ch;
    return t;
}

/* Reads {n}, {n,}, {n,m} at ps->p (just after '{'); 0 when not a quantifier. */
static int qrx_braces(qrx_parser *ps, int *mn, int *mx)
{
    const char *q = ps->p;
    long a = 0, b;
    if (q >= ps->end || !isdigit((unsigned char)*q))
        return 0;
    while (q < ps->end && isdigit((unsigned char)*q) && a <= 1000)
        a = a * 10 + (*q++ - '0');
    b = a;
    if (q < ps->end && *q == ',') {
        q++;
        if (q < ps->end && isdigit((unsigned char)*q)) {
            b = 0;
            while (q < ps->end && isdigit((unsigned char)*q) && b <= 1000)
                b = b * 10 + (*q++ - '0');
        } else
            b = -1;
    }
    if (q >= ps->end || *q != '}')
        return 0;
    if (a > 1000 || b > 1000 || (b >= 0 && b < a)) {
        ps->err = "bad repetition count";
        return -1;
    }
    ps->p = q + 1;
    *mn = (int)a;
    *mx = (int)b;
    return 1;
}

static int qrx_parse_rep(qrx_parser *ps)
{
    int t = qrx_parse_atom(ps), repeated = 0;
    while (t >= 0 && ps->p < ps->end) {
        int mn, mx;
        char c = *ps->p;
        if (c == '*' || c == '+' || c == '?') {
            ps->p++;
            mn = c == '+' ? 1 : 0;
            mx = c == '?' ? 1 : -1;
        } else if (c == '{') {
            ps->p++;
            int r = qrx_braces(ps, &mn, &mx);
            if (r < 0)
                return -1;
            if (r == 0) {
                ps->p--; /* a literal '{' */
                break;
            }
        } else
            break;
        if (repeated++) { /* as RE2 (Perl syntax): a** is an error, not a double star */
            ps->err = "bad repetition operator (a repetition of a repetition)";
            return -1;
        }
        if (ps->p < ps->end && *ps->p == '?')
            ps->p++; /* lazy: same answer for a yes/no full match */
        /* {n,m} copies its operand m times ({n,}: n times) */
        const int counted = c == '{' ? (mx < 0 ? mn : mx) : 1;
        const long copies = (long)ps->nodes[t].copies * (counted > 1 ? counted : 1);
        if (copies > QRX_MAX_REPEAT) {
            ps->err = "bad repetition operator (nested counts multiply beyond 1000)";
            return -1;
        }
        int r = qrx_node(ps, QA_REP, t, 0);
        if (r < 0)
            return -1;
        ps->nodes[r].min = mn;
        ps->nodes[r].max = mx;
        ps->nodes[r].copies = (int)copies;
        t = r;
    }
    return t;
}

static int qrx_parse_cat(qrx_parser *ps)
{
    int t = -2;
    while (ps->p < ps->end && *ps->p != '|' && *ps->p != ')') {
        int r = qrx_parse_rep(ps);
        if (r < 0)
            return -1;
        t = t == -2 ? r : qrx_node(ps, QA_CAT, t, r);
        if (t < 0)
            return -1;
    }
    return t == -2 ? qrx_node(ps, QA_EMPTY, 0, 0) : t;
}

static int qrx_parse_alt(qrx_parser *ps)
{
    int t = qrx_parse_cat(ps);
    while (t >= 0 && ps->p < ps->end && *ps->p == '|') {
        ps->p++;
        int r = qrx_parse_cat(ps);
        if (r < 0)
            return -1;
        t = qrx_node(ps, QA_ALT, t, r);
    }
    return t;
}

/* Emits node t at pc (counting only when prog is NULL); returns the next pc. */
static int qrx_emit(const qrx_parser *ps, int t, qrx_inst *prog, int pc, int limit)
{
    const qrx_ast *a = &ps->nodes[t];
    if (pc < 0 || pc > limit)
        return -1;
#define QRX_PUT(o, xx, yy, vv)                                                                     \
    do {                                                                                           \
        if (prog)                                                                                  \
            prog[pc] = (qrx_inst){(o), (xx), (yy), (vv)};                                          \
        pc++;                                                                                      \
    } while (0)
    switch (a->kind) {
    case QA_CHAR: QRX_PUT(QRX_CHAR, 0, 0, a->v); return pc;
    case QA_ANY: QRX_PUT(QRX_ANY, 0, 0, 0); return pc;
    case QA_CLASS: QRX_PUT(QRX_CLASS, 0, 0, a->v); return pc;
    case QA_ASSERT: QRX_PUT(a->v, 0, 0, 0); return pc;
    case QA_EMPTY: return pc;
    case QA_CAT: return qrx_emit(ps, a->b, prog, qrx_emit(ps, a->a, prog, pc, limit), limit);
    case QA_ALT: {
        int split = pc++;
        int l2 = qrx_emit(ps, a->a, prog, pc, limit);
        if (l2 < 0)
            return -1;
        int jmp = l2++;
        int end = qrx_emit(ps, a->b, prog, l2, limit);
        if (end < 0)
            return -1;
        if (prog) {
            prog[split] = (qrx_inst){QRX_SPLIT, split + 1, l2, 0};
            prog[jmp] = (qrx_inst){QRX_JMP, end, 0, 0};
        }
        return end;
    }
    case QA_REP: {
        /* x{n,}: n - 1 copies, then one looping copy (L: x; split L, next) */
        const int looped = a->max < 0 && a->min > 0;
        for (int i = 0; i < a->min - looped; i++)
            if ((pc = qrx_emit(ps, a->a, prog, pc, limit)) < 0)
                return -1;
        if (looped) {
            const int body = pc;
            if ((pc = qrx_emit(ps, a->a, prog, pc, limit)) < 0 || pc > limit)
                return -1;
            if (prog)
                prog[pc] = (qrx_inst){QRX_SPLIT, body, pc + 1, 0};
            return pc + 1;
        }
        if (a->max < 0) {
            int split = pc++;
            int body_end = qrx_emit(ps, a->a, prog, pc, limit);
            if (body_end < 0)
                return -1;
            if (prog) {
                prog[split] = (qrx_inst){QRX_SPLIT, split + 1, body_end + 1, 0};
                prog[body_end] = (qrx_inst){QRX_JMP, split, 0, 0};
            }
            return body_end + 1;
        }
        /* x{0,k}: each optional copy may skip straight to the end */
        const int opt = a->max - a->min, start = pc;
        for (int i = 0; i < opt; i++) {
            int split = pc++;
            pc = qrx_emit(ps, a->a, prog, pc, limit);
            if (pc < 0)
                return -1;
            if (prog)
                prog[split] = (qrx_inst){QRX_SPLIT, split + 1, -1, 0};
        }
        if (prog)
            for (int i = start; i < pc; i++)
                if (prog[i].op == QRX_SPLIT && prog[i].y == -1)
                    prog[i].y = pc;
        return pc;
    }
    default: return -1;
    }
#undef QRX_PUT
}

poprt_status poprt__regex_compile(const char *pattern, void *(*alloc)(void *ctx, size_t size),
                                  void *ctx, poprt__regex **out)
{
    size_t len = strlen(pattern);
    qrx_parser ps = {.p = pattern, .end = pattern + len};
    ps.cap = (int)(2 * len + 4);
    ps.capcls = (int)(len + 1);
    ps.nodes = alloc(ctx, (size_t)ps.cap * sizeof *ps.nodes);
    ps.cls = alloc(ctx, (size_t)ps.capcls * sizeof *ps.cls);
    poprt__regex *re = alloc(ctx, sizeof *re);
    if (!ps.nodes || !ps.cls || !re)
        return poprt__err(POPRT_STATUS_OUT_OF_MEMORY, "out of memory compiling a regex");
    int root = qrx_parse_alt(&ps);
    if (root >= 0 && ps.p != ps.end)
        ps.err = "unmatched )";
    if (root < 0 || ps.err)
        return poprt__err(POPRT_STATUS_INVALID_MODEL, "invalid pattern '%s': %s", pattern,
                          ps.err ? ps.err : "syntax error");
    const int limit = 1 << 20;
    int count = qrx_emit(&ps, root, NULL, 0, limit);
    if (count < 0 || count >= limit)
        return poprt__err(POPRT_STATUS_UNSUPPORTED, "pattern '%s' is too large", pattern);
    re->prog = alloc(ctx, (size_t)(count + 1) * sizeof *re->prog);
    if (!re->prog)
        return poprt__err(POPRT_STATUS_OUT_OF_MEMORY, "out of memory compiling a regex");
    qrx_emit(&ps, root, re->prog, 0, limit);
    re->prog[count] = (qrx_inst){QRX_MATCH, 0, 0, 0};
    re->n = count + 1;
    re->n_split = 0;
    for (int i = 0; i < count; i++)
        re->n_split += re->prog[i].op == QRX_SPLIT;
    re->cls = ps.cls;
    *out = re;
    return POPRT_OK;
}

int poprt__regex_prog_size(const poprt__regex *re) { return re->n; }

int poprt__regex_scratch(const poprt__regex *re, size_t max_len, size_t *visited_bytes,
                         size_t *stack_entries)
{
    const size_t w = max_len + 1;
    if (max_len >= POPRT__REGEX_MAX_STATES || (size_t)re->n * w > POPRT__REGEX_MAX_STATES)
        return 0;
    *visited_bytes = (size_t)re->n * w / 8 + 1;
    /* a split pushes once per text position it is first reached at */
    *stack_entries = (size_t)re->n_split * w + 1;
    return 1;
}

static size_t qrx_utf8_len(const unsigned char *s, size_t left)
{
    size_t l = s[0] < 0x80 ? 1 : (s[0] >> 5) == 6 ? 2 : (s[0] >> 4) == 14 ? 3 : (s[0] >> 3) == 30 ? 4 : 1;
    return l <= left ? l : left;
}

int poprt__regex_full_match(const poprt__regex *re, const char *text, uint8_t *visited,
                            uint32_t *stack)
{
    const unsigned char *s = (const unsigned char *)text;
    const size_t len = strlen(text), w = len + 1;
    memset(visited, 0, ((size_t)re->n * w + 7) / 8);
    /* states (pc * w + pos) stay below POPRT__REGEX_MAX_STATES < 2^32 */
    size_t sp = 0;
    stack[sp++] = 0;
    while (sp > 0) {
        const uint32_t st = stack[--sp];
        int pc = (int)(st / w);
        size_t pos = st % w;
        for (;;) {
            size_t key = (size_t)pc * w + pos;
            if (visited[key >> 3] & (1u << (key & 7)))
                break;
            visited[key >> 3] |= (uint8_t)(1u << (key & 7));
            const qrx_inst *in = &re->prog[pc];
            int ok = 1;
            switch (in->op) {
            case QRX_MATCH:
                if (pos == len)
                    return 1;
                ok = 0;
                break;
            case QRX_CHAR:
                ok = pos < len && s[pos] == in->v;
                pos++;
                break;
            case QRX_ANY:
                ok = pos < len && s[pos] != '\n';
                if (ok)
                    pos += qrx_utf8_len(s + pos, len - pos);
                break;
            case QRX_CLASS: {
                const qrx_class *c = &re->cls[in->v];
                ok = pos < len && qrx_has(c, s[pos]);
                if (ok)
                    pos += s[pos] >= 0x80 ? (c->non_ascii ? qrx_utf8_len(s + pos, len - pos) : 1) : 1;
                break;
            }
            case QRX_BOL: ok = pos == 0; break;
            case QRX_EOL: ok = pos == len; break;
            case QRX_WORDB:
            case QRX_NWORDB: {
                int a = pos > 0 && qrx_is_word(s[pos - 1]), b = pos < len && qrx_is_word(s[pos]);
                ok = (a != b) == (in->op == QRX_WORDB);
                break;
            }
            case QRX_JMP: pc = in->x; continue;
            case QRX_SPLIT:
                stack[sp++] = (uint32_t)((size_t)in->y * w + pos);
                pc = in->x;
                continue;
            default: ok = 0; break;
            }
            if (!ok)
                break;
            pc++;
        }
    }
    return 0;
}
