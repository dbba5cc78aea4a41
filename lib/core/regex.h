/* A small regular-expression engine (RE2 syntax subset), matching whole
 * texts in time and memory bounded by program size x text length. Used by
 * the RegexFullMatch operator: its inference checks the pattern when a model
 * loads (lib/ir/infer_misc.c) and its kernel matches (lib/kernels/ref). It
 * knows no IR, so it lives in lib/core, where both layers may use it.
 * Thread-safe; nothing here allocates but through the caller's alloc. */
#ifndef POPRT_CORE_REGEX_H
#define POPRT_CORE_REGEX_H

#include <stddef.h>
#include <stdint.h>
#include "core/core.h"

/* A compiled regular expression. */
typedef struct poprt__regex poprt__regex;
/* Compiles pattern; alloc(ctx, size) provides its memory (scratch or an
 * arena: nothing to free). INVALID_MODEL for a malformed pattern,
 * UNSUPPORTED for one too large, OUT_OF_MEMORY when alloc returns NULL,
 * each with a message (poprt__err) that callers prefix with their context
 * (a node: poprt__node_err_last, lib/ir/op.h). */
poprt_status poprt__regex_compile(const char *pattern, void *(*alloc)(void *ctx, size_t size),
                                  void *ctx, poprt__regex **out);
/* Number of instructions of the compiled program. */
int poprt__regex_prog_size(const poprt__regex *re);
/* Matching explores each (instruction, text position) state at most once:
 * at most this many states per text, so time and memory stay bounded. */
#define POPRT__REGEX_MAX_STATES (1 << 24)
/* Scratch for texts of up to max_len bytes: the bytes of visited marks and
 * the entries of the stack. 0 when program size x (max_len + 1) exceeds
 * POPRT__REGEX_MAX_STATES. */
int poprt__regex_scratch(const poprt__regex *re, size_t max_len, size_t *visited_bytes,
                         size_t *stack_entries);
/* 1 when the whole of text matches; visited and stack as poprt__regex_scratch
 * gives for a max_len >= strlen(text). */
int poprt__regex_full_match(const poprt__regex *re, const char *text, uint8_t *visited,
                            uint32_t *stack);

#endif
