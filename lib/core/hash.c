/* A fast 64-bit non-cryptographic hash for checksums and cache keys: four
 * independent multiply-rotate lanes over 32-byte blocks, then a tail and a
 * final avalanche. Reads unaligned data with memcpy. */
#include <string.h>
#include "core/core.h"

#define K1 0x9e3779b185ebca87ull
#define K2 0xc2b2ae3d27d4eb4full
#define K3 0x165667b19e3779f9ull

static inline uint64_t rotl(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }

static inline uint64_t lane(uint64_t h, uint64_t w)
{
    h += w * K2;
    h = rotl(h, 31);
    return h * K1;
}

static inline uint64_t avalanche(uint64_t h)
{
    h ^= h >> 33;
    h *= K2;
    h ^= h >> 29;
    h *= K3;
    h ^= h >> 32;
    return h;
}

uint64_t poprt__hash64(const void *data, size_t n, uint64_t seed)
{
    const unsigned char *p = data;
    uint64_t a = seed + K1 + K2, b = seed + K2, c = seed, d = seed - K1;
    size_t i = 0;
    for (; i + 32 <= n; i += 32) {
        uint64_t w[4];
        memcpy(w, p + i, 32);
        a = lane(a, w[0]);
        b = lane(b, w[1]);
        c = lane(c, w[2]);
        d = lane(d, w[3]);
    }
    uint64_t h = rotl(a, 1) + rotl(b, 7) + rotl(c, 12) + rotl(d, 18) + (uint64_t)n;
    for (; i + 8 <= n; i += 8) {
        uint64_t w;
        memcpy(&w, p + i, 8);
        h = rotl(h ^ lane(0, w), 27) * K1 + K3;
    }
    for (; i < n; i++)
        h = rotl(h ^ (p[i] * K3), 11) * K1;
    return avalanche(h);
}

/* ---- bulk checksum ---------------------------------------------------------
 * Per 64-byte block, lane i (0..7) takes word w = block[i] (little endian),
 * k = w ^ key[i], and does acc[i] += lo32(k) * hi32(k) + w. Every word
 * enters its lane both linearly and through the product. Lanes are
 * folded with poprt__hash64, which also takes the tail and the length. The
 * loop is written so that the compiler vectorises it (vpmuludq); the
 * target_clones variants compute the same value. */
static const uint64_t ck_key[8] = {
    0x9e3779b185ebca87ull, 0xc2b2ae3d27d4eb4full, 0x165667b19e3779f9ull, 0x85ebca77c2b2ae63ull,
    0x27d4eb2f165667c5ull, 0xd6e8feb86659fd93ull, 0xa0761d6478bd642full, 0xe7037ed1a0b428dbull,
};

POPRT__CLONES
static void ck_blocks(const unsigned char *p, size_t nblocks, uint64_t *acc)
{
    uint64_t a[8];
    for (int i = 0; i < 8; i++)
        a[i] = acc[i];
    for (size_t b = 0; b < nblocks; b++) {
        uint64_t w[8];
        memcpy(w, p + b * 64, 64);
        for (int i = 0; i < 8; i++) {
            const uint64_t k = w[i] ^ ck_key[i];
            a[i] += (uint64_t)(uint32_t)k * (uint64_t)(uint32_t)(k >> 32) + w[i];
        }
    }
    for (int i = 0; i < 8; i++)
        acc[i] = a[i];
}

uint64_t poprt__checksum64(const void *data, size_t n, uint64_t seed)
{
    const unsigned char *p = data;
    uint64_t acc[8];
    for (int i = 0; i < 8; i++)
        acc[i] = ck_key[i] ^ (seed * K1 + (uint64_t)i);
    const size_t nb = n / 64;
    ck_blocks(p, nb, acc);
    uint64_t h = poprt__hash64(acc, sizeof acc, seed ^ (uint64_t)n);
    return poprt__hash64(p + nb * 64, n - nb * 64, h);
}
