/* The executable file (.popef): layout shared by the writer and reader.
 *
 *   [0, 512)      header: magic, format version, library version, file size,
 *                 the CPU features its prepared blobs use, the model hash,
 *                 a table of sections (kind, offset, size, hash) and a hash
 *                 of the header itself
 *   META          JSON: library version, options, inputs, outputs, arena size
 *   PROGRAM       the compiled graph as ONNX, constants as external data at
 *                 location "@weights"
 *   WEIGHTS       constants in the runtime layout, page-aligned section,
 *                 64-byte aligned tensors: used in place through mmap, so
 *                 sessions and processes share them
 *   STATES        prepare() blobs per node: u64 count, then count entries
 *                 {u64 node index, u64 name hash, u64 offset, u64 size},
 *                 then the data (64-byte aligned)
 * All integers little-endian. The header carries a poprt__hash64 of itself;
 * each section's hash is the poprt__hash64 of the poprt__checksum64 of its
 * 4 MiB chunks (format 2), which the reader checks on as many threads as
 * the session's "threads" option gives. Constants are written only if a
 * node or graph output reads them, or the model lists them. */
#ifndef POPRT_POPEF_H
#define POPRT_POPEF_H

#include <stddef.h>
#include <stdint.h>
#include "poprt/poprt.h"

#define POPRT__POPEF_MAGIC "\x89POPEF\r\n"
#define POPRT__POPEF_FORMAT 2
#define POPRT__POPEF_HEADER 512
#define POPRT__POPEF_MAX_SECTIONS 8

enum {
    POPRT__POPEF_META = 1,
    POPRT__POPEF_PROGRAM = 2,
    POPRT__POPEF_WEIGHTS = 3,
    POPRT__POPEF_STATES = 4
};

typedef struct poprt__popef_section {
    uint32_t kind;
    uint32_t reserved;
    uint64_t offset;
    uint64_t size;
    uint64_t hash;
} poprt__popef_section;

typedef struct poprt__popef_header {
    char magic[8];
    uint32_t format;
    uint32_t header_size;
    uint64_t file_size;
    uint32_t lib_major, lib_minor, lib_patch, n_sections;
    uint64_t isa;
    uint64_t model_hash;
    uint64_t reserved[2];
    poprt__popef_section sections[POPRT__POPEF_MAX_SECTIONS];
    uint64_t header_hash; /* over all bytes before this field */
} poprt__popef_header;

/* The hash of one section (see above), computed on up to `threads` threads
 * (1: this one). Returns 0 and sets *out, or -1 when out of memory. */
int poprt__popef_section_hash(const void *data, uint64_t size, uint32_t kind, int threads,
                              uint64_t *out);

#endif
