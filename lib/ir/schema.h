/* Operator schemas as the ONNX specification writes them, for validation:
 * for each (domain, operator, since_version) the formal inputs and outputs,
 * the type constraints they are bound to, and the attributes with their
 * types. The data lives in the .schemas files of lib/ir/schemas/; the build turns it
 * into a table (gen_schemas.py). This is separate from poprt__op (op.h),
 * which says what libpoprt implements: a node must satisfy both. */
#ifndef POPRT_IR_SCHEMA_H
#define POPRT_IR_SCHEMA_H

#include <stddef.h>
#include <stdint.h>
#include "ir/op.h"

/* A set of value types: one mask per kind of value, bit d standing for
 * element type d (poprt_dtype numbers). */
typedef struct poprt__typeset {
    uint32_t m[8];
} poprt__typeset;
enum {
    POPRT__TS_TENSOR = 0,      /* tensor(E) (also sparse_tensor(E)) */
    POPRT__TS_SEQ = 1,         /* seq(tensor(E)) */
    POPRT__TS_OPT_TENSOR = 2,  /* optional(tensor(E)) */
    POPRT__TS_OPT_SEQ = 3,     /* optional(seq(tensor(E))) */
    POPRT__TS_MAP_STR = 4,     /* map(string, E) */
    POPRT__TS_MAP_I64 = 5,     /* map(int64, E) */
    POPRT__TS_SEQ_MAP_STR = 6, /* seq(map(string, E)) */
    POPRT__TS_SEQ_MAP_I64 = 7  /* seq(map(int64, E)) */
};

/* How a formal parameter takes actual values. */
enum {
    POPRT__FORMAL_SINGLE = 0,
    POPRT__FORMAL_OPTIONAL = 1,
    POPRT__FORMAL_VARIADIC = 2, /* homogeneous: every value has the same type */
    POPRT__FORMAL_HETERO = 3    /* heterogeneous: each value its own type of the set */
};

typedef struct poprt__formal {
    const char *name;
    uint8_t param; /* index into the schema's params */
    uint8_t how;
} poprt__formal;

typedef struct poprt__attr_decl {
    const char *name;
    uint8_t type; /* poprt__attr_type */
    uint8_t required;
} poprt__attr_decl;

typedef struct poprt__schema {
    const char *domain; /* "" for ai.onnx */
    const char *name;
    int since;
    uint8_t n_in, n_out, n_attrs, n_params;
    const poprt__formal *in, *out;
    const poprt__attr_decl *attrs;
    const uint16_t *params; /* indexes into poprt__typesets */
} poprt__schema;

/* The generated table, sorted by (domain, name, since). */
extern const poprt__typeset poprt__typesets[];
extern const poprt__schema poprt__schemas[];
extern const size_t poprt__n_schemas;

/* The schema in force for (domain, op_type) at `opset` (the newest whose
 * since_version <= opset), or NULL when the table has none (user operators,
 * operators the table does not describe). "ai.onnx" and "" are the same. */
const poprt__schema *poprt__schema_find(const char *domain, const char *op_type, int64_t opset);

/* Checks n's attributes against its schema: no name twice, every attribute
 * declared, of the declared type, required ones present. INVALID_MODEL
 * naming the node and the attribute. Nodes without a schema pass. */
poprt_status poprt__schema_check_attrs(const poprt__node *n);

/* Checks the known value types of an inference context's inputs (and, with
 * outputs set, of its outputs) against the node's schema: each in its type
 * constraint, values bound to one type parameter of the same type, required
 * inputs present. INVALID_MODEL naming node, input/output and types. */
poprt_status poprt__schema_check_types(const poprt__infer_ctx *c, int outputs);

/* "tensor(float)", "seq(tensor(int64))": a type's ONNX spelling, into buf. */
const char *poprt__type_spelling(const poprt__type *t, char *buf, size_t size);

#endif
