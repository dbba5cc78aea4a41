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
