/* Image files decoded to RGB pixels for the ImageDecoder kernel (see
 * image_decode.h): BMP, PNM, uncompressed TIFF and PNG (with our own
 * inflate). A header's size is believed only when the file holds the data
 * it announces (for PNG: when its compressed data could inflate to that
 * size), and images have at most QI_MAX_PIXELS pixels, so a few bytes cannot
 * ask for gigabytes. */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include "kernels/image_decode.h"

#define QI_MAX_PIXELS ((int64_t)1 << 27)
/* deflate codes at most 258 bytes in 2 bits: no stream inflates by more */
#define QI_MAX_INFLATE_RATIO 1032

static poprt_status qi_fail(const poprt__kctx *k, const char *what)
{
    return POPRT__NODE_ERR(k->node, POPRT_STATUS_RUNTIME_ERROR, "cannot decode image: %s", what);
}

static uint32_t qi_le16(const uint8_t *p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8; }
static uint32_t qi_le32(const uint8_t *p) { return qi_le16(p) | qi_le16(p + 2) << 16; }
static uint32_t qi_be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* Dimensions an image may have: 1..65536 each, at most QI_MAX_PIXELS. */
static poprt_status qi_dims(const poprt__kctx *k, int64_t w, int64_t h)
{
    if (w <= 0 || h <= 0 || w > (1 << 16) || h > (1 << 16))
        return qi_fail(k, "bad dimensions");
    if (w * h > QI_MAX_PIXELS)
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_UNSUPPORTED,
                               "cannot decode image: %lld x %lld pixels, more than %lld",
                               (long long)w, (long long)h, (long long)QI_MAX_PIXELS);
    return POPRT_OK;
}

/* The RGB buffer, once the file is known to hold the pixels (qi_dims). */
static poprt_status qi_alloc(poprt__kctx *k, poprt__image *im, int64_t w, int64_t h)
{
    poprt_status st = qi_dims(k, w, h);
    if (st)
        return st;
    im->w = w;
    im->h = h;
    im->rgb = poprt__kctx_scratch(k, (size_t)(w * h * 3));
    return im->rgb ? POPRT_OK
                   : POPRT__NODE_ERR(k->node, POPRT_STATUS_OUT_OF_MEMORY, "out of scratch memory");
}

static poprt_status qi_bmp(poprt__kctx *k, const uint8_t *p, size_t n, poprt__image *im)
{
    if (n < 54)
        return qi_fail(k, "truncated BMP");
    uint32_t off = qi_le32(p + 10), dib = qi_le32(p + 14);
    int32_t w = (int32_t)qi_le32(p + 18), hh = (int32_t)qi_le32(p + 22);
    uint32_t bpp = qi_le16(p + 28), comp = qi_le32(p + 30);
    if ((comp != 0 && comp != 3) || (bpp != 24 && bpp != 32 && bpp != 8))
        return qi_fail(k, "unsupported BMP variant");
    int64_t h = hh < 0 ? -(int64_t)hh : hh;
    poprt_status st = qi_dims(k, w, h);
    if (st)
        return st;
    const size_t stride = ((size_t)bpp * (size_t)w + 31) / 32 * 4;
    if ((uint64_t)off + (uint64_t)stride * (uint64_t)h > n)
        return qi_fail(k, "truncated BMP pixels");
    if ((st = qi_alloc(k, im, w, h)))
        return st;
    const uint64_t pal = 14 + (uint64_t)dib; /* offset of the palette */
    for (int64_t y = 0; y < h; y++) {
        const uint8_t *row = p + off + stride * (size_t)(hh < 0 ? y : h - 1 - y);
        for (int64_t x = 0; x < w; x++) {
            const uint8_t *px;
            if (bpp == 8) {
                const uint64_t at = pal + 4 * (uint64_t)row[x];
                if (at + 3 > n)
                    return qi_fail(k, "bad BMP palette");
                px = p + at;
            } else
                px = row + (size_t)x * (bpp / 8);
            uint8_t *o = im->rgb + (y * w + x) * 3;
            o[0] = px[2];
            o[1] = px[1];
            o[2] = px[0];
        }
    }
    return POPRT_OK;
}

/* Next PNM header number (skipping whitespace and comments); -1 on error. */
static long qi_pnm_num(const uint8_t *p, size_t n, size_t *pos)
{
    while (*pos < n) {
        if (p[*pos] == '#')
            while (*pos < n && p[*pos] != '\n')
                (*pos)++;
        else if (isspace(p[*pos]))
            (*pos)++;
        else
            break;
    }
    long v = -1;
    while (*pos < n && isdigit(p[*pos]) && v < (1L << 24))
        v = (v < 0 ? 0 : v * 10) + (p[(*pos)++] - '0');
    return v;
}

static poprt_status qi_pnm(poprt__kctx *k, const uint8_t *p, size_t n, poprt__image *im)
{
    const int kind = p[1] - '0'; /* 2/5 gray, 3/6 rgb; 2/3 ascii */
    if (kind != 2 && kind != 3 && kind != 5 && kind != 6)
        return qi_fail(k, "unsupported PNM variant");
    size_t pos = 2;
    long w = qi_pnm_num(p, n, &pos), h = qi_pnm_num(p, n, &pos), mx = qi_pnm_num(p, n, &pos);
    if (w <= 0 || h <= 0 || mx <= 0 || mx > 65535 || pos >= n)
        return qi_fail(k, "bad PNM header");
    poprt_status st = qi_dims(k, w, h);
    if (st)
        return st;
    pos++; /* the single whitespace after maxval */
    const int ch = (kind == 3 || kind == 6) ? 3 : 1, wide = mx > 255;
    /* every sample takes a byte at least (two when wide) */
    if ((uint64_t)w * (uint64_t)h * (uint64_t)ch * (kind > 3 && wide ? 2u : 1u) > n - pos)
        return qi_fail(k, "truncated PNM");
    if ((st = qi_alloc(k, im, w, h)))
        return st;
    for (int64_t i = 0; i < (int64_t)w * h; i++)
        for (int c = 0; c < ch; c++) {
            long v;
            if (kind <= 3) {
                v = qi_pnm_num(p, n, &pos);
            } else if (wide) {
                v = pos + 1 < n ? (long)p[pos] << 8 | p[pos + 1] : -1;
                pos += 2;
            } else
                v = pos < n ? p[pos++] : -1;
            if (v < 0)
                return qi_fail(k, "truncated PNM");
            uint8_t b = (uint8_t)(mx == 255 ? v : (v * 255 + mx / 2) / mx);
            if (ch == 1)
                im->rgb[i * 3] = im->rgb[i * 3 + 1] = im->rgb[i * 3 + 2] = b;
            else
                im->rgb[i * 3 + c] = b;
        }
    return POPRT_OK;
}

static uint32_t qi_tiff_u(const uint8_t *p, int be, int size)
{
    if (size == 2)
        return be ? (uint32_t)p[0] << 8 | p[1] : qi_le16(p);
    return be ? qi_be32(p) : qi_le32(p);
}

/* Value i of a TIFF IFD entry (SHORT or LONG, inline or at an offset). */
static int qi_tiff_val(const uint8_t *p, size_t n, const uint8_t *e, int be, uint32_t i,
                       uint32_t *out)
{
    uint32_t type = qi_tiff_u(e + 2, be, 2), cnt = qi_tiff_u(e + 4, be, 4);
    int size = type == 3 ? 2 : type == 4 ? 4 : type == 1 ? 1 : 0;
    if (!size || i >= cnt)
        return 0;
    const uint8_t *d = e + 8;
    if ((uint64_t)cnt * (uint64_t)size > 4) {
        uint32_t off = qi_tiff_u(e + 8, be, 4);
        if ((uint64_t)off + (uint64_t)cnt * (uint64_t)size > n)
            return 0;
        d = p + off;
    }
    *out = size == 1 ? d[i] : qi_tiff_u(d + (size_t)i * (size_t)size, be, size);
    return 1;
}

static poprt_status qi_tiff(poprt__kctx *k, const uint8_t *p, size_t n, poprt__image *im)
{
    const int be = p[0] == 'M';
    uint32_t ifd = qi_tiff_u(p + 4, be, 4);
    if ((uint64_t)ifd + 2 > n)
        return qi_fail(k, "bad TIFF header");
    uint32_t cnt = qi_tiff_u(p + ifd, be, 2), w = 0, h = 0, bits = 8, comp = 1, photo = 2, spp = 1,
             rps = 0xFFFFFFFFu, planar = 1;
    const uint8_t *offs = NULL, *lens = NULL;
    if ((uint64_t)ifd + 2 + 12ull * cnt > n)
        return qi_fail(k, "truncated TIFF directory");
    for (uint32_t i = 0; i < cnt; i++) {
        const uint8_t *e = p + ifd + 2 + 12 * i;
        uint32_t tag = qi_tiff_u(e, be, 2), v = 0;
        int ok = qi_tiff_val(p, n, e, be, 0, &v);
        switch (tag) {
        case 256: w = v; break;
        case 257: h = v; break;
        case 258: bits = v; break;
        case 259: comp = v; break;
        case 262: photo = v; break;
        case 273: offs = e; break;
        case 277: spp = v; break;
        case 278: rps = v; break;
        case 279: lens = e; break;
        case 284: planar = v; break;
        default: break;
        }
        (void)ok;
    }
    if (comp != 1 || bits != 8 || planar != 1 || !offs || (spp != 1 && spp != 3 && spp != 4) ||
        (spp == 1 && photo > 1))
        return qi_fail(k, "only uncompressed 8-bit TIFF is supported");
    poprt_status st = qi_dims(k, w, h);
    if (st)
        return st;
    const size_t need = (size_t)w * h * spp;
    if (need > n) /* the strips are in the file */
        return qi_fail(k, "truncated TIFF strips");
    if ((st = qi_alloc(k, im, w, h)))
        return st;
    if (rps == 0 || rps > h)
        rps = h;
    size_t got = 0;
    uint8_t *buf = poprt__kctx_scratch(k, need + 1);
    if (!buf)
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_OUT_OF_MEMORY, "out of scratch memory");
    for (uint32_t s = 0; got < need; s++) {
        uint32_t off, len;
        if (!qi_tiff_val(p, n, offs, be, s, &off))
            return qi_fail(k, "truncated TIFF strips");
        size_t want = (size_t)rps * w * spp;
        if (lens && qi_tiff_val(p, n, lens, be, s, &len) && len < want)
            want = len;
        if (want > need - got)
            want = need - got;
        if ((uint64_t)off + want > n)
            return qi_fail(k, "TIFF strip out of range");
        memcpy(buf + got, p + off, want);
        got += want;
        if (!want)
            return qi_fail(k, "empty TIFF strip");
    }
    for (size_t i = 0; i < (size_t)w * h; i++)
        for (int c = 0; c < 3; c++) {
            uint8_t v = spp == 1 ? buf[i] : buf[i * spp + (size_t)c];
            im->rgb[i * 3 + (size_t)c] = (spp == 1 && photo == 0) ? (uint8_t)(255 - v) : v;
        }
    return POPRT_OK;
}

/* -- inflate (RFC 1951) -- */
typedef struct qi_bits {
    const uint8_t *p;
    size_t n, pos;
    uint32_t bit, nbits;
} qi_bits;

static int qi_get(qi_bits *b, uint32_t need, uint32_t *out)
{
    while (b->nbits < need) {
        if (b->pos >= b->n)
            return 0;
        b->bit |= (uint32_t)b->p[b->pos++] << b->nbits;
        b->nbits += 8;
    }
    *out = need ? b->bit & ((1u << need) - 1) : 0;
    b->bit = need < 32 ? b->bit >> need : 0;
    b->nbits -= need;
    return 1;
}

typedef struct qi_huff {
    uint16_t count[16];
    uint16_t sym[320];
} qi_huff;

static void qi_build(qi_huff *h, const uint8_t *len, int n)
{
    uint16_t offs[16];
    memset(h->count, 0, sizeof h->count);
    for (int i = 0; i < n; i++)
        h->count[len[i]]++;
    h->count[0] = 0;
    offs[1] = 0;
    for (int l = 1; l < 15; l++)
        offs[l + 1] = (uint16_t)(offs[l] + h->count[l]);
    for (int i = 0; i < n; i++)
        if (len[i])
            h->sym[offs[len[i]]++] = (uint16_t)i;
}

static int qi_decode(qi_bits *b, const qi_huff *h)
{
    int code = 0, first = 0, index = 0;
    for (int len = 1; len < 16; len++) {
        uint32_t bit;
        if (!qi_get(b, 1, &bit))
            return -1;
        code |= (int)bit;
        int count = h->count[len];
        if (code - count < first)
            return h->sym[index + (code - first)];
        index += count;
        first = (first + count) << 1;
        code <<= 1;
    }
    return -1;
}

static const uint16_t qi_lbase[29] = {3,  4,  5,  6,  7,  8,  9,  10, 11,  13,  15,  17,  19,  23, 27,
                                      31, 35, 43, 51, 59, 67, 83, 99, 115, 131, 163, 195, 227, 258};
static const uint8_t qi_lext[29] = {0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2,
                                    2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0};
static const uint16_t qi_dbase[30] = {1,    2,    3,    4,    5,    7,     9,     13,    17,  25,
                                      33,   49,   65,   97,   129,  193,   257,   385,   513, 769,
                                      1025, 1537, 2049, 3073, 4097, 6145, 8193, 12289, 16385, 24577};
static const uint8_t qi_dext[30] = {0, 0, 0, 0, 1, 1, 2, 2,  3,  3,  4,  4,  5,  5,  6,
                                    6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13};

/* Inflates a zlib stream into out (cap bytes); returns bytes written or -1. */
static int64_t qi_inflate(const uint8_t *src, size_t n, uint8_t *out, size_t cap, qi_huff *hl,
                          qi_huff *hd)
{
    if (n < 2 || (src[0] & 0x0F) != 8 || ((src[0] << 8) | src[1]) % 31)
        return -1;
    qi_bits b = {src, n, 2, 0, 0};
    size_t o = 0;
    uint32_t last = 0, type;
    while (!last) {
        if (!qi_get(&b, 1, &last) || !qi_get(&b, 2, &type))
            return -1;
        if (type == 0) {
            b.bit = b.nbits = 0;
            if (b.pos + 4 > n)
                return -1;
            size_t len = qi_le16(src + b.pos);
            b.pos += 4;
            if (b.pos + len > n || o + len > cap)
                return -1;
            memcpy(out + o, src + b.pos, len);
            b.pos += len;
            o += len;
            continue;
        }
        uint8_t lens[320];
        if (type == 1) {
            for (int i = 0; i < 288; i++)
                lens[i] = i < 144 ? 8 : i < 256 ? 9 : i < 280 ? 7 : 8;
            qi_build(hl, lens, 288);
            for (int i = 0; i < 30; i++)
                lens[i] = 5;
            qi_build(hd, lens, 30);
        } else if (type == 2) {
            static const uint8_t order[19] = {16, 17, 18, 0, 8,  7, 9,  6, 10, 5,
                                              11, 4,  12, 3, 13, 2, 14, 1, 15};
            uint32_t hlit, hdist, hclen, v;
            if (!qi_get(&b, 5, &hlit) || !qi_get(&b, 5, &hdist) || !qi_get(&b, 4, &hclen))
                return -1;
            hlit += 257;
            hdist += 1;
            hclen += 4;
            uint8_t cl[19] = {0};
            for (uint32_t i = 0; i < hclen; i++) {
                if (!qi_get(&b, 3, &v))
                    return -1;
                cl[order[i]] = (uint8_t)v;
            }
            qi_build(hl, cl, 19);
            for (uint32_t i = 0; i < hlit + hdist;) {
                int s = qi_decode(&b, hl);
                uint32_t rep = 0;
                uint8_t val = 0;
                if (s < 0)
                    return -1;
                if (s < 16) {
                    lens[i++] = (uint8_t)s;
                    continue;
                }
                if (s == 16) {
                    if (!i || !qi_get(&b, 2, &rep))
                        return -1;
                    val = lens[i - 1];
                    rep += 3;
                } else if (s == 17) {
                    if (!qi_get(&b, 3, &rep))
                        return -1;
                    rep += 3;
                } else {
                    if (!qi_get(&b, 7, &rep))
                        return -1;
                    rep += 11;
                }
                if (i + rep > hlit + hdist)
                    return -1;
                while (rep--)
                    lens[i++] = val;
            }
            qi_build(hl, lens, (int)hlit);
            qi_build(hd, lens + hlit, (int)hdist);
        } else
            return -1;
        for (;;) {
            int s = qi_decode(&b, hl);
            if (s < 0)
                return -1;
            if (s < 256) {
                if (o >= cap)
                    return -1;
                out[o++] = (uint8_t)s;
                continue;
            }
            if (s == 256)
                break;
            s -= 257;
            uint32_t e, len, dist;
            if (s >= 29 || !qi_get(&b, qi_lext[s], &e))
                return -1;
            len = qi_lbase[s] + e;
            int ds = qi_decode(&b, hd);
            if (ds < 0 || ds >= 30 || !qi_get(&b, qi_dext[ds], &e))
                return -1;
            dist = qi_dbase[ds] + e;
            if (dist > o || o + len > cap)
                return -1;
            for (uint32_t i = 0; i < len; i++, o++)
                out[o] = out[o - dist];
        }
    }
    return (int64_t)o;
}

static poprt_status qi_png(poprt__kctx *k, const uint8_t *p, size_t n, poprt__image *im)
{
    size_t pos = 8, nidat = 0;
    uint32_t w = 0, h = 0, depth = 0, ctype = 0, interlace = 0, npal = 0;
    const uint8_t *pal = NULL;
    uint8_t *idat = poprt__kctx_scratch(k, n + 1);
    if (!idat)
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_OUT_OF_MEMORY, "out of scratch memory");
    while (pos + 12 <= n) {
        uint32_t len = qi_be32(p + pos);
        const uint8_t *type = p + pos + 4, *d = p + pos + 8;
        if ((uint64_t)pos + 12 + len > n)
            return qi_fail(k, "truncated PNG chunk");
        if (!memcmp(type, "IHDR", 4) && len >= 13) {
            w = qi_be32(d);
            h = qi_be32(d + 4);
            depth = d[8];
            ctype = d[9];
            interlace = d[12];
        } else if (!memcmp(type, "PLTE", 4)) {
            pal = d;
            npal = len / 3;
        } else if (!memcmp(type, "IDAT", 4)) {
            memcpy(idat + nidat, d, len);
            nidat += len;
        } else if (!memcmp(type, "IEND", 4))
            break;
        pos += 12 + (size_t)len;
    }
    static const int chans[7] = {1, 0, 3, 1, 2, 0, 4};
    /* the depths the PNG specification allows for each colour type */
    const int sub_byte = depth == 1 || depth == 2 || depth == 4;
    const int depth_ok = ctype == 0   ? sub_byte || depth == 8 || depth == 16
                         : ctype == 3 ? sub_byte || depth == 8
                                      : depth == 8 || depth == 16;
    if (ctype > 6 || !chans[ctype] || interlace || !depth_ok)
        return qi_fail(k, "unsupported PNG variant (interlaced or unusual depth)");
    if (ctype == 3 && !pal)
        return qi_fail(k, "PNG palette missing");
    poprt_status st = qi_dims(k, w, h);
    if (st)
        return st;
    const size_t bitspp = (size_t)chans[ctype] * depth, stride = ((size_t)w * bitspp + 7) / 8;
    const size_t bpp = bitspp >= 8 ? bitspp / 8 : 1, raw_n = (stride + 1) * h;
    if ((uint64_t)raw_n > (uint64_t)nidat * QI_MAX_INFLATE_RATIO)
        return qi_fail(k, "corrupt PNG data (too little for the image's size)");
    if ((st = qi_alloc(k, im, w, h)))
        return st;
    uint8_t *raw = poprt__kctx_scratch(k, raw_n + 1);
    qi_huff *hl = poprt__kctx_scratch(k, sizeof *hl), *hd = poprt__kctx_scratch(k, sizeof *hd);
    if (!raw || !hl || !hd)
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_OUT_OF_MEMORY, "out of scratch memory");
    if (qi_inflate(idat, nidat, raw, raw_n, hl, hd) != (int64_t)raw_n)
        return qi_fail(k, "corrupt PNG data");
    /* undo the per-row filters in place */
    for (size_t y = 0; y < h; y++) {
        uint8_t *row = raw + y * (stride + 1) + 1, *up = y ? row - (stride + 1) : NULL;
        const int f = row[-1];
        for (size_t x = 0; x < stride; x++) {
            int a = x >= bpp ? row[x - bpp] : 0, b = up ? up[x] : 0,
                c = (up && x >= bpp) ? up[x - bpp] : 0;
            int v;
            switch (f) {
            case 0: v = 0; break;
            case 1: v = a; break;
            case 2: v = b; break;
            case 3: v = (a + b) / 2; break;
            case 4: {
                int pp = a + b - c, pa = abs(pp - a), pb = abs(pp - b), pc = abs(pp - c);
                v = (pa <= pb && pa <= pc) ? a : pb <= pc ? b : c;
                break;
            }
            default: return qi_fail(k, "bad PNG filter");
            }
            row[x] = (uint8_t)(row[x] + v);
        }
    }
    const size_t bps = depth == 16 ? 2 : 1; /* 16-bit samples: keep the high byte */
    for (size_t y = 0; y < h; y++) {
        const uint8_t *row = raw + y * (stride + 1) + 1;
        for (size_t x = 0; x < w; x++) {
            uint8_t *o = im->rgb + (y * w + x) * 3;
            if (depth < 8) {
                size_t bit = x * depth;
                uint32_t v = (row[bit / 8] >> (8 - depth - bit % 8)) & ((1u << depth) - 1);
                if (ctype == 3) {
                    if (v >= npal)
                        return qi_fail(k, "PNG palette index out of range");
                    memcpy(o, pal + 3 * v, 3);
                } else
                    o[0] = o[1] = o[2] = (uint8_t)(v * 255 / ((1u << depth) - 1));
                continue;
            }
            const uint8_t *px = row + x * (size_t)chans[ctype] * bps;
            if (ctype == 3) {
                if (px[0] >= npal)
                    return qi_fail(k, "PNG palette index out of range");
                memcpy(o, pal + 3 * px[0], 3);
            } else if (ctype == 0 || ctype == 4)
                o[0] = o[1] = o[2] = px[0];
            else {
                o[0] = px[0];
                o[1] = px[bps];
                o[2] = px[2 * bps];
            }
        }
    }
    return POPRT_OK;
}

poprt_status poprt__image_decode(poprt__kctx *k, const uint8_t *p, size_t n, poprt__image *im)
{
    if (n >= 8 && !memcmp(p, "\x89PNG\r\n\x1a\n", 8))
        return qi_png(k, p, n, im);
    if (n >= 2 && p[0] == 'B' && p[1] == 'M')
        return qi_bmp(k, p, n, im);
    if (n >= 3 && p[0] == 'P' && p[1] >= '1' && p[1] <= '6')
        return qi_pnm(k, p, n, im);
    if (n >= 8 && ((p[0] == 'I' && p[1] == 'I' && p[2] == 42 && p[3] == 0) ||
                   (p[0] == 'M' && p[1] == 'M' && p[2] == 0 && p[3] == 42)))
        return qi_tiff(k, p, n, im);
    return POPRT__NODE_ERR(k->node, POPRT_STATUS_UNSUPPORTED,
                           "image format not supported (BMP, PNM, PNG and uncompressed TIFF are)");
}
