/* Unit tests: core (status table, errors, allocation helpers, containers). */
#include <check.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "core/core.h"

START_TEST(status_strings_match_table)
{
    /* every pinned number has its own text; unknown numbers get a fixed one */
#define ROW(name, num, text) ck_assert_str_eq(poprt_status_string(POPRT_STATUS_##name), text);
    POPRT_STATUS_MAP(ROW)
#undef ROW
    ck_assert_int_eq(POPRT_STATUS_OK, 0);
    ck_assert_int_eq(POPRT_STATUS_INVALID_MODEL, 5);
    ck_assert_int_eq(POPRT_STATUS_CANCELLED, 13);
    ck_assert_str_eq(poprt_status_string((poprt_status)999), "unknown status");
}
END_TEST

START_TEST(last_error_is_recorded_and_prefixed)
{
    poprt__err_clear();
    ck_assert_str_eq(poprt_last_error(), "");
    ck_assert_int_eq(poprt__err(POPRT_STATUS_NOT_FOUND, "tensor '%s' missing", "t0"),
                     POPRT_STATUS_NOT_FOUND);
    ck_assert_str_eq(poprt_last_error(), "tensor 't0' missing");
    poprt__err_prefix(POPRT_STATUS_NOT_FOUND, "file '%s': ", "a.onnx");
    ck_assert_str_eq(poprt_last_error(), "file 'a.onnx': tensor 't0' missing");
    /* very long messages are truncated, not overflowed */
    char big[5000];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = 0;
    poprt__err(POPRT_STATUS_INTERNAL, "%s", big);
    ck_assert_uint_lt(strlen(poprt_last_error()), sizeof big);
    poprt__err_prefix(POPRT_STATUS_INTERNAL, "%s", big);
    ck_assert_uint_lt(strlen(poprt_last_error()), sizeof big);
}
END_TEST

static void *thread_err(void *arg)
{
    poprt__err(POPRT_STATUS_IO_ERROR, "thread message");
    *(int *)arg = strcmp(poprt_last_error(), "thread message") == 0;
    return NULL;
}

START_TEST(last_error_is_thread_local)
{
    poprt__err(POPRT_STATUS_IO_ERROR, "main message");
    int ok = 0;
    pthread_t th;
    pthread_create(&th, NULL, thread_err, &ok);
    pthread_join(th, NULL);
    ck_assert_int_eq(ok, 1);
    ck_assert_str_eq(poprt_last_error(), "main message");
}
END_TEST

START_TEST(overflow_checks)
{
    size_t s;
    int64_t i;
    ck_assert_int_eq(poprt__mul_size(SIZE_MAX / 2 + 1, 2, &s), 0);
    ck_assert_int_eq(poprt__mul_size(6, 7, &s), 1);
    ck_assert_uint_eq(s, 42);
    ck_assert_int_eq(poprt__mul_i64(INT64_MAX / 3, 4, &i), 0);
    ck_assert_int_eq(poprt__mul_i64(-5, 3, &i), 1);
    ck_assert_int_eq(i, -15);
}
END_TEST

START_TEST(arena_alignment_and_zeroing)
{
    poprt__arena a;
    poprt__arena_init(&a);
    for (int i = 1; i < 200; i++) {
        unsigned char *p = poprt__arena_alloc(&a, (size_t)i * 37);
        ck_assert_ptr_nonnull(p);
        ck_assert_uint_eq((uintptr_t)p % 16, 0);
        for (int k = 0; k < i * 37; k++)
            ck_assert_uint_eq(p[k], 0);
        memset(p, 0xab, (size_t)i * 37);
    }
    void *big = poprt__arena_alloc(&a, 1 << 20);
    ck_assert_uint_eq((uintptr_t)big % 64, 0);
    ck_assert_str_eq(poprt__arena_printf(&a, "%s-%d", "n", 7), "n-7");
    ck_assert_str_eq(poprt__arena_strndup(&a, "abcdef", 3), "abc");
    ck_assert_ptr_null(poprt__arena_array(&a, SIZE_MAX / 2, 4));
    poprt__arena_free(&a);
}
END_TEST

/* What a release gives back: everything allocated after the mark (small
 * blocks in front of it, large ones behind it), nothing before it; the
 * memory is reused, so a loop of mark/alloc/release keeps total flat. */
START_TEST(arena_mark_release)
{
    poprt__arena a;
    poprt__arena_init(&a);
    char *keep = poprt__arena_strdup(&a, "kept");
    poprt__arena_mark m = poprt__arena_mark_now(&a);
    size_t base = a.total;
    for (int round = 0; round < 1000; round++) {
        for (int i = 0; i < 40; i++)
            ck_assert_ptr_nonnull(poprt__arena_alloc(&a, 3000)); /* two blocks' worth */
        ck_assert_ptr_nonnull(poprt__arena_alloc(&a, 100000));  /* a large block */
        poprt__arena_release(&a, m);
        ck_assert_uint_eq(a.total, base);
    }
    ck_assert_str_eq(keep, "kept");
    char *next = poprt__arena_strdup(&a, "next");
    ck_assert_ptr_eq(next, keep + 16); /* the mark's block continues where it stood */
    /* a mark on an empty arena releases everything */
    poprt__arena b;
    poprt__arena_init(&b);
    poprt__arena_mark e = poprt__arena_mark_now(&b);
    ck_assert_ptr_nonnull(poprt__arena_alloc(&b, 1 << 20));
    ck_assert_ptr_nonnull(poprt__arena_alloc(&b, 10));
    poprt__arena_release(&b, e);
    ck_assert_uint_eq(b.total, 0);
    ck_assert_ptr_null(b.head);
    poprt__arena_free(&b);
    poprt__arena_free(&a);
}
END_TEST

START_TEST(map_put_get_delete_grow)
{
    poprt__map m = {0};
    char keys[1000][16];
    for (int i = 0; i < 1000; i++) {
        snprintf(keys[i], sizeof keys[i], "k%d", i);
        ck_assert_int_eq(poprt__map_put(&m, keys[i], (void *)(intptr_t)(i + 1)), POPRT_OK);
    }
    for (int i = 0; i < 1000; i++)
        ck_assert_int_eq((int)(intptr_t)poprt__map_get(&m, keys[i]), i + 1);
    ck_assert_ptr_null(poprt__map_get(&m, "absent"));
    poprt__map_del(&m, "k10");
    ck_assert_ptr_null(poprt__map_get(&m, "k10"));
    ck_assert_int_eq((int)(intptr_t)poprt__map_get(&m, "k11"), 12);
    poprt__map_put(&m, "k11", (void *)(intptr_t)99);
    ck_assert_int_eq((int)(intptr_t)poprt__map_get(&m, "k11"), 99);
    poprt__map_free(&m);
}
END_TEST

START_TEST(vec_push_grows)
{
    poprt__vec v = {0};
    for (intptr_t i = 0; i < 100; i++)
        ck_assert_int_eq(poprt__vec_push(&v, (void *)i), POPRT_OK);
    ck_assert_uint_eq(v.len, 100);
    ck_assert_int_eq((int)(intptr_t)v.items[57], 57);
    poprt__vec_free(&v);
    ck_assert_uint_eq(v.len, 0);
}
END_TEST

START_TEST(blob_map_missing_file)
{
    poprt__blob *b = NULL;
    ck_assert_int_eq(poprt__blob_map_file("/nonexistent/x.onnx", &b), POPRT_STATUS_IO_ERROR);
    ck_assert_ptr_null(b);
    ck_assert_ptr_nonnull(strstr(poprt_last_error(), "/nonexistent/x.onnx"));
    ck_assert_int_eq(poprt__blob_map_file("/", &b), POPRT_STATUS_IO_ERROR);
}
END_TEST

/* Anonymous blobs are zeroed, writable, whole pages, readable once sealed;
 * dropping pages loses nothing: a file mapping reads them again, and any
 * other blob (the only copy of its bytes) is left alone. */
START_TEST(blob_anon_seal_and_drop_pages)
{
    poprt__blob *a = poprt__blob_anon(5000);
    ck_assert_ptr_nonnull(a);
    ck_assert_uint_ge(a->size, 5000);
    ck_assert_uint_eq(a->size % 4096, 0);
    unsigned char *p = a->data;
    for (size_t i = 0; i < a->size; i++)
        ck_assert_uint_eq(p[i], 0);
    for (size_t i = 0; i < a->size; i++)
        p[i] = (unsigned char)(i * 7);
    poprt__blob_seal(a);
    poprt__blob_drop_pages(a, p, a->size); /* not a file: kept */
    for (size_t i = 0; i < a->size; i++)
        ck_assert_uint_eq(p[i], (unsigned char)(i * 7));
    poprt__blob_unref(a);
    ck_assert_ptr_null(poprt__blob_anon(0));

    /* heap bytes: kept */
    unsigned char *h = poprt__aligned_alloc(3 * 4096);
    ck_assert_ptr_nonnull(h);
    for (size_t i = 0; i < 3 * 4096; i++)
        h[i] = (unsigned char)(i * 13);
    poprt__blob *hb = poprt__blob_wrap_aligned(h, 3 * 4096);
    poprt__blob_drop_pages(hb, h, 3 * 4096);
    for (size_t i = 0; i < 3 * 4096; i++)
        ck_assert_uint_eq(h[i], (unsigned char)(i * 13));
    poprt__blob_unref(hb);

    /* a mapped file (at least POPRT__MAP_MIN_BYTES): read back after the drop,
     * also for a range that starts and ends inside pages */
    char path[] = "/tmp/poprt_blob_drop_XXXXXX";
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    const size_t n = POPRT__MAP_MIN_BYTES + 12345;
    unsigned char *src = malloc(n);
    ck_assert_ptr_nonnull(src);
    for (size_t i = 0; i < n; i++)
        src[i] = (unsigned char)(i ^ (i >> 9));
    ck_assert_int_eq(write(fd, src, n), (ssize_t)n);
    close(fd);
    poprt__blob *f;
    ck_assert_int_eq(poprt__blob_map_file(path, &f), POPRT_OK);
    ck_assert_int_eq(f->mapped, 1);
    const unsigned char *q = f->data;
    ck_assert_int_eq(memcmp(q, src, n), 0); /* every page resident */
    poprt__blob_drop_pages(f, q + 100, n - 300);
    poprt__blob_drop_pages(f, q, n + 1);        /* beyond the end: nothing */
    poprt__blob_drop_pages(f, src, 4 * 4096);   /* not in the mapping: nothing */
    ck_assert_int_eq(memcmp(q, src, n), 0);
    poprt__blob_unref(f);
    unlink(path);
    free(src);
}
END_TEST

static int log_calls;
static poprt_log_level last_level;
static void log_cb(poprt_log_level level, const char *msg, void *user)
{
    (void)msg;
    log_calls += *(int *)user;
    last_level = level;
}

START_TEST(logging_goes_to_callback_only_above_level)
{
    int one = 1;
    poprt__log(POPRT_LOG_ERROR, "no callback yet");
    poprt_set_log_callback(log_cb, &one, POPRT_LOG_WARNING);
    poprt__log(POPRT_LOG_INFO, "filtered");
    ck_assert_int_eq(log_calls, 0);
    poprt__log(POPRT_LOG_ERROR, "kept %d", 1);
    ck_assert_int_eq(log_calls, 1);
    ck_assert_int_eq(last_level, POPRT_LOG_ERROR);
    poprt_set_log_callback(NULL, NULL, POPRT_LOG_WARNING);
    poprt__log(POPRT_LOG_ERROR, "removed");
    ck_assert_int_eq(log_calls, 1);
    poprt_log_level l;
    ck_assert_int_eq(poprt_log_level_parse("critical", &l), POPRT_OK);
    ck_assert_int_eq(l, POPRT_LOG_CRITICAL);
    ck_assert_int_eq(poprt_log_level_parse("LOUD", &l), POPRT_STATUS_INVALID_ARGUMENT);
    ck_assert_ptr_nonnull(strstr(poprt_last_error(), "LOUD"));
}
END_TEST

START_TEST(version_matches_macros)
{
    char want[32];
    snprintf(want, sizeof want, "%d.%d.%d", POPRT_VERSION_MAJOR, POPRT_VERSION_MINOR,
             POPRT_VERSION_PATCH);
    ck_assert_str_eq(poprt_version(), want);
    ck_assert_uint_eq(poprt_version_num(), POPRT_VERSION_NUM);
}
END_TEST

/* The bulk checksum against a plain re-statement of its definition (so the
 * vectorised clones compute the documented value), over sizes around the
 * 64-byte block and unaligned starts; any one flipped bit changes it. */
static uint64_t checksum_model(const unsigned char *p, size_t n, uint64_t seed)
{
    static const uint64_t key[8] = {
        0x9e3779b185ebca87ull, 0xc2b2ae3d27d4eb4full, 0x165667b19e3779f9ull,
        0x85ebca77c2b2ae63ull, 0x27d4eb2f165667c5ull, 0xd6e8feb86659fd93ull,
        0xa0761d6478bd642full, 0xe7037ed1a0b428dbull,
    };
    uint64_t acc[8];
    for (int i = 0; i < 8; i++)
        acc[i] = key[i] ^ (seed * 0x9e3779b185ebca87ull + (uint64_t)i);
    size_t nb = n / 64;
    for (size_t b = 0; b < nb; b++)
        for (int i = 0; i < 8; i++) {
            uint64_t w = 0;
            for (int j = 7; j >= 0; j--)
                w = (w << 8) | p[b * 64 + (size_t)i * 8 + (size_t)j];
            uint64_t k = w ^ key[i];
            acc[i] += (k & 0xffffffffu) * (k >> 32) + w;
        }
    uint64_t h = poprt__hash64(acc, sizeof acc, seed ^ (uint64_t)n);
    return poprt__hash64(p + nb * 64, n - nb * 64, h);
}

START_TEST(checksum_matches_definition_and_sees_flips)
{
    enum { MAX = 4096 + 200 };
    unsigned char *buf = malloc(MAX + 8);
    ck_assert_ptr_nonnull(buf);
    uint64_t x = 12345;
    for (size_t i = 0; i < MAX + 8; i++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        buf[i] = (unsigned char)(x >> 56);
    }
    const size_t sizes[] = {0, 1, 7, 63, 64, 65, 127, 128, 200, 1000, 4096, MAX};
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
        for (size_t off = 0; off < 4; off++)
            ck_assert_uint_eq(poprt__checksum64(buf + off, sizes[s], 3 + off),
                              checksum_model(buf + off, sizes[s], 3 + off));
    const uint64_t base = poprt__checksum64(buf, 1000, 9);
    for (size_t i = 0; i < 1000; i += 7)
        for (int bit = 0; bit < 8; bit += 3) {
            buf[i] ^= (unsigned char)(1u << bit);
            ck_assert_uint_ne(poprt__checksum64(buf, 1000, 9), base);
            buf[i] ^= (unsigned char)(1u << bit);
        }
    ck_assert_uint_eq(poprt__checksum64(buf, 1000, 9), base);
    ck_assert_uint_ne(poprt__checksum64(buf, 1000, 10), base);
    ck_assert_uint_ne(poprt__checksum64(buf, 999, 9), base);
    free(buf);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("core");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, status_strings_match_table);
    tcase_add_test(tc, last_error_is_recorded_and_prefixed);
    tcase_add_test(tc, last_error_is_thread_local);
    tcase_add_test(tc, overflow_checks);
    tcase_add_test(tc, arena_alignment_and_zeroing);
    tcase_add_test(tc, arena_mark_release);
    tcase_add_test(tc, map_put_get_delete_grow);
    tcase_add_test(tc, vec_push_grows);
    tcase_add_test(tc, blob_map_missing_file);
    tcase_add_test(tc, blob_anon_seal_and_drop_pages);
    tcase_add_test(tc, logging_goes_to_callback_only_above_level);
    tcase_add_test(tc, version_matches_macros);
    tcase_add_test(tc, checksum_matches_definition_and_sees_flips);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
