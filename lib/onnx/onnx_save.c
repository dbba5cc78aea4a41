/* poprt__model -> ModelProto bytes, with nanopb encode callbacks that stream
 * fields straight from the IR (tensor data is written once, into the final
 * buffer). Everything goes into one file: constants as raw_data in ONNX
 * packing (sub-byte types re-packed), strings in string_data. */
#include <string.h>
#include <pb_encode.h>
#include "onnx/onnx.h"
#include "onnx/onnx.pb.h"
#include "ir/dtype.h"

/* Set by a callback that fails for a reason other than the stream. */
typedef struct sctx {
    poprt_status st;
    const poprt__onnx_placer *placer; /* constants placed in a weights section */
} sctx;

static _Thread_local sctx *g_ctx;

static bool fail(poprt_status st)
{
    if (g_ctx && !g_ctx->st)
        g_ctx->st = st;
    return false;
}

#define SET(cbf, fn, argp)             \
    do {                               \
        (cbf).funcs.encode = fn;       \
        (cbf).arg = (void *)(argp);    \
    } while (0)

static bool enc_str(pb_ostream_t *s, const pb_field_t *f, void *const *arg)
{
    const char *v = *arg;
    return pb_encode_tag_for_field(s, f) && pb_encode_string(s, (const pb_byte_t *)v, strlen(v));
}

/* Singular strings are written only when non-empty. */
#define SET_STR(cbf, v)                \
    do {                               \
        if ((v) && *(v))               \
            SET(cbf, enc_str, v);      \
    } while (0)

typedef struct blist {
    const void *p;
    size_t n;
} blist;

/* ---- types and value infos ---------------------------------------------------- */

static bool enc_type_cb(pb_ostream_t *s, const pb_field_t *f, void *const *arg);

static bool enc_dims_cb(pb_ostream_t *s, const pb_field_t *f, void *const *arg)
{
    const poprt__type *t = *arg;
    for (int i = 0; i < t->rank; i++) {
        onnx_TensorShapeProto_Dimension d;
        memset(&d, 0, sizeof d);
        if (t->dims[i].value >= 0) {
            d.has_dim_value = true;
            d.dim_value = t->dims[i].value;
        } else if (t->dims[i].param && *t->dims[i].param) {
            SET(d.dim_param, enc_str, t->dims[i].param);
        }
        if (!pb_encode_tag_for_field(s, f) || !pb_encode_submessage(s, onnx_TensorShapeProto_Dimension_fields, &d))
            return false;
    }
    return true;
}

static bool enc_shape_cb(pb_ostream_t *s, const pb_field_t *f, void *const *arg)
{
    onnx_TensorShapeProto sh;
    memset(&sh, 0, sizeof sh);
    SET(sh.dim, enc_dims_cb, *arg);
    return pb_encode_tag_for_field(s, f) && pb_encode_submessage(s, onnx_TensorShapeProto_fields, &sh);
}

static bool enc_tensor_type_cb(pb_ostream_t *s, const pb_field_t *f, void *const *arg)
{
    const poprt__type *t = *arg;
    onnx_TypeProto_Tensor tt; /* same layout of fields as SparseTensor */
    memset(&tt, 0, sizeof tt);
    if (t->elem) {
        tt.has_elem_type = true;
        tt.elem_type = t->elem;
    }
    if (t->rank >= 0)
        SET(tt.shape, enc_shape_cb, t);
    return pb_encode_tag_for_field(s, f) && pb_encode_submessage(s, onnx_TypeProto_Tensor_fields, &tt);
}

static bool enc_inner_cb(pb_ostream_t *s, const pb_field_t *f, void *const *arg)
{
    const poprt__type *t = *arg;
    onnx_TypeProto_Sequence sq; /* Optional has the same single field */
    memset(&sq, 0, sizeof sq);
    if (t->inner)
        SET(sq.elem_type, enc_type_cb, t->inner);
    return pb_encode_tag_for_field(s, f) && pb_encode_submessage(s, onnx_TypeProto_Sequence_fields, &sq);
}

static bool enc_map_cb(pb_ostream_t *s, const pb_field_t *f, void *const *arg)
{
    const poprt__type *t = *arg;
    onnx_TypeProto_Map mp;
    memset(&mp, 0, sizeof mp);
    mp.has_key_type = true;
    mp.key_type = t->elem;
    if (t->inner)
        SET(mp.value_type, enc_type_cb, t->inner);
    return pb_encode_tag_for_field(s, f) && pb_encode_submessage(s, onnx_TypeProto_Map_fields, &mp);
}

static void fill_type(onnx_TypeProto *tp, const poprt__type *t)
{
    memset(tp, 0, sizeof *tp);
    switch (t->kind) {
    case POPRT__KIND_TENSOR:
        SET(tp->tensor_type, enc_tensor_type_cb, t);
        break;
    case POPRT__KIND_SPARSE:
        SET(tp->sparse_tensor_type, enc_tensor_type_cb, t);
        break;
    case POPRT__KIND_SEQUENCE:
        SET(tp->sequence_type, enc_inner_cb, t);
        break;
    case POPRT__KIND_OPTIONAL:
        SET(tp->optional_type, enc_inner_cb, t);
        break;
    case POPRT__KIND_MAP:
        SET(tp->map_type, enc_map_cb, t);
        break;
    default:
        break;
    }
}

static bool enc_type_cb(pb_ostream_t *s, const pb_field_t *f, void *const *arg)
{
    onnx_TypeProto tp;
    fill_type(&tp, *arg);
    return pb_encode_tag_for_field(s, f) && pb_encode_submessage(s, onnx_TypeProto_fields, &tp);
}

static int type_known(const poprt__type *t)
{
    return t->kind != POPRT__KIND_UNKNOWN && !(t->kind == POPRT__KIND_TENSOR && t->elem == 0);
}

static bool enc_vinfo(pb_ostream_t *s, const pb_field_t *f, const poprt__tensor *t)
{
    onnx_ValueInfoProto vi;
    memset(&vi, 0, sizeof vi);
    SET(vi.name, enc_str, t->name);
    if (type_known(&t->type))
        SET(vi.type, enc_type_cb, &t->type);
    SET_STR(vi.doc_string, t->doc);
    return pb_encode_tag_for_field(s, f) && pb_encode_submessage(s, onnx_ValueInfoProto_fields, &vi);
}

/* arg: poprt__vec of poprt__tensor * */
static bool enc_vinfo_vec_cb(pb_ostream_t *s, const pb_field_t *f, void *const *arg)
{
    const poprt__vec *v = *arg;
    for (size_t i = 0; i < v->len; i++)
        if (!enc_vinfo(s, f, v->items[i]))
            return false;
    return true;
}

/* ---- tensors ------------------------------------------------------------------ */

static bool enc_tdims_cb(pb_ostream_t *s, const pb_field_t *f, void *const *arg)
{
    const poprt__type *t = *arg;
    pb_ostream_t sz = PB_OSTREAM_SIZING;
    for (int i = 0; i < t->rank; i++)
        pb_encode_varint(&sz, (uint64_t)t->dims[i].value);
    if (!pb_encode_tag(s, PB_WT_STRING, f->tag) || !pb_encode_varint(s, sz.bytes_written))
        return false;
    for (int i = 0; i < t->rank; i++)
        if (!pb_encode_varint(s, (uint64_t)t->dims[i].value))
            return false;
    return true;
}

static bool enc_raw_cb(pb_ostream_t *s, const pb_field_t *f, void *const *arg)
{
    const poprt__tensor *t = *arg;
    int32_t dt = t->type.elem;
    int64_t numel = poprt__type_numel(&t->type);
    int bits = poprt__onnx_packed_bits(dt);
    if (!pb_encode_tag_for_field(s, f))
        return false;
    if (!bits)
        return pb_encode_string(s, t->raw, t->nbytes);
    /* one element per byte -> ONNX packing, low bits first */
    size_t n = (size_t)(((uint64_t)numel * (uint64_t)bits + 7) / 8);
    uint8_t *buf = poprt__calloc(n ? n : 1, 1);
    if (!buf)
        return fail(poprt__err(POPRT_STATUS_OUT_OF_MEMORY, "out of memory saving tensor '%s'", t->name));
    int per = 8 / bits;
    uint8_t mask = (uint8_t)((1u << bits) - 1u);
    const uint8_t *src = t->raw; /* bytes: any alignment */
    for (int64_t i = 0; i < numel; i++)
        buf[i / per] = (uint8_t)(buf[i / per] | ((src[i] & mask) << ((i % per) * bits)));
    bool ok = pb_encode_string(s, buf, n);
    poprt__free(buf);
    return ok;
}

static bool enc_strings_data_cb(pb_ostream_t *s, const pb_field_t *f, void *const *arg)
{
    const poprt__tensor *t = *arg;
    int64_t numel = poprt__type_numel(&t->type);
    const char *const *v = t->raw; /* strings are never unaligned */
    for (int64_t i = 0; i < numel; i++) {
        const char *x = v[i] ? v[i] : "";
        if (!pb_encode_tag_for_field(s, f) || !pb_encode_string(s, (const pb_byte_t *)x, strlen(x)))
            return false;
    }
    return true;
}

/* Checks that a constant's data matches its type before it is written. */
static int tensor_ok(const poprt__tensor *t)
{
    int64_t numel = poprt__type_numel(&t->type);
    size_t esz = poprt__dtype_size(t->type.elem), need;
    if (t->type.kind != POPRT__KIND_TENSOR || numel < 0 || !esz || !t->raw ||
        !poprt__mul_size((size_t)numel, esz, &need) || need != t->nbytes) {
        fail(poprt__err(POPRT_STATUS_INVALID_MODEL, "tensor '%s': constant data does not match its type",
                        t->name ? t->name : ""));
        return 0;
    }
    return 1;
}

static bool enc_kv_cb(pb_ostream_t *s, const pb_field_t *f, void *const *arg);

static void fill_tensor(onnx_TensorProto *tp, const poprt__tensor *t)
{
    memset(tp, 0, sizeof *tp);
    if (t->type.rank > 0)
        SET(tp->dims, enc_tdims_cb, &t->type);
    tp->has_data_type = true;
    tp->data_type = t->type.elem;
    SET_STR(tp->name, t->name);
    SET_STR(tp->doc_string, t->doc);
    const poprt__onnx_placer *pl = g_ctx ? g_ctx->placer : NULL;
    if (pl && t->type.elem != POPRT_DTYPE_STRING && !poprt__onnx_packed_bits(t->type.elem)) {
        const poprt__onnx_place *where = pl->find(pl->ctx, t);
        if (where) {
            tp->has_data_location = true;
            tp->data_location = 1;
            SET(tp->external_data, enc_kv_cb, &where->kv);
            return;
        }
    }
    if (t->type.elem == POPRT_DTYPE_STRING)
        SET(tp->string_data, enc_strings_data_cb, t);
    else
        SET(tp->raw_data, enc_raw_cb, t);
}

static bool enc_tensor(pb_ostream_t *s, const pb_field_t *f, const poprt__tensor *t)
{
    if (!tensor_ok(t))
        return false;
    onnx_TensorProto tp;
    fill_tensor(&tp, t);
    return pb_encode_tag_for_field(s, f) && pb_encode_submessage(s, onnx_TensorProto_fields, &tp);
}

/* Sparse attributes are held dense; they are written back as a sparse
 * tensor listing every element (linear indices), which is exact. */
typedef struct sparse_arg {
    const poprt__tensor *t;
    poprt__tensor values, indices;
    poprt__dim vdim, idim;
} sparse_arg;

static bool enc_tensor_cb(pb_ostream_t *s, const pb_field_t *f, void *const *arg)
{
    return enc_tensor(s, f, *arg);
}

static bool enc_sparse(pb_ostream_t *s, const pb_field_t *f, const poprt__tensor *t)
{
    if (!tensor_ok(t))
        return false;
    int64_t numel = poprt__type_numel(&t->type);
    int64_t *idx = poprt__malloc((size_t)(numel ? numel : 1) * sizeof *idx);
    if (!idx)
        return fail(poprt__err(POPRT_STATUS_OUT_OF_MEMORY, "out of memory saving tensor '%s'", t->name));
    for (int64_t i = 0; i < numel; i++)
        idx[i] = i;
    sparse_arg a;
    memset(&a, 0, sizeof a);
    a.vdim.value = a.idim.value = numel;
    a.values = *t;
    a.values.type.rank = 1;
    a.values.type.dims = &a.vdim;
    a.indices.name = "";
    a.indices.type.kind = POPRT__KIND_TENSOR;
    a.indices.type.elem = POPRT_DTYPE_INT64;
    a.indices.type.rank = 1;
    a.indices.type.dims = &a.idim;
    a.indices.raw = idx;
    a.indices.nbytes = (size_t)numel * sizeof *idx;
    onnx_SparseTensorProto sp;
    memset(&sp, 0, sizeof sp);
    SET(sp.values, enc_tensor_cb, &a.values);
    SET(sp.indices, enc_tensor_cb, &a.indices);
    if (t->type.rank > 0)
        SET(sp.dims, enc_tdims_cb, &t->type);
    bool ok = pb_encode_tag_for_field(s, f) && pb_encode_submessage(s, onnx_SparseTensorProto_fields, &sp);
    poprt__free(idx);
    return ok;
}

/* ---- graphs, nodes, attributes ----------------------------------------------- */

static bool enc_graph(pb_ostream_t *s, const pb_field_t *f, const poprt__graph *g);

static bool enc_graph_cb(pb_ostream_t *s, const pb_field_t *f, void *const *arg)
{
    return enc_graph(s, f, *arg);
}

static bool enc_floats_cb(pb_ostream_t *s, const pb_field_t *f, void *const *arg)
{
    const poprt__attr *a = *arg;
    return pb_encode_tag(s, PB_WT_STRING, f->tag) &&
           pb_encode_string(s, (const pb_byte_t *)a->floats, (size_t)a->n * sizeof(float));
}

static bool enc_ints_cb(pb_ostream_t *s, const pb_field_t *f, void *const *arg)
{
    const poprt__attr *a = *arg;
    pb_ostream_t sz = PB_OSTREAM_SIZING;
    for (int64_t i = 0; i < a->n; i++)
        pb_encode_varint(&sz, (uint64_t)a->ints[i]);
    if (!pb_encode_tag(s, PB_WT_STRING, f->tag) || !pb_encode_varint(s, sz.bytes_written))
        return false;
    for (int64_t i = 0; i < a->n; i++)
        if (!pb_encode_varint(s, (uint64_t)a->ints[i]))
            return false;
    return true;
}

static bool enc_s_cb(pb_ostream_t *s, const pb_field_t *f, void *const *arg)
{
    const poprt__attr *a = *arg;
    return pb_encode_tag_for_field(s, f) && pb_encode_string(s, (const pb_byte_t *)a->s, a->s_len);
}

static bool enc_strings_cb(pb_ostream_t *s, const pb_field_t *f, void *const *arg)
{
    const poprt__attr *a = *arg;
    for (int64_t i = 0; i < a->n; i++) {
        size_t n = a->string_lens ? a->string_lens[i] : strlen(a->strings[i]);
        if (!pb_encode_tag_for_field(s, f) || !pb_encode_string(s, (const pb_byte_t *)a->strings[i], n))
            return false;
    }
    return true;
}

static bool enc_tensors_cb(pb_ostream_t *s, const pb_field_t *f, void *const *arg)
{
    const poprt__attr *a = *arg;
    for (int64_t i = 0; i < a->n; i++)
        if (!(a->type == POPRT__ATTR_SPARSE_TENSORS ? enc_sparse(s, f, a->tensors[i]) : enc_tensor(s, f, a->tensors[i])))
            return false;
    return true;
}

static bool enc_sparse_cb(pb_ostream_t *s, const pb_field_t *f, void *const *arg)
{
    return enc_sparse(s, f, *arg);
}

static bool enc_graphs_cb(pb_ostream_t *s, const pb_field_t *f, void *const *arg)
{
    const poprt__attr *a = *arg;
    for (int64_t i = 0; i < a->n; i++)
        if (!enc_graph(s, f, a->graphs[i]))
            return false;
    return true;
}

static bool enc_tps_cb(pb_ostream_t *s, const pb_field_t *f, void *const *arg)
{
    const poprt__attr *a = *arg;
    for (int64_t i = 0; i < a->n; i++) {
        onnx_TypeProto tp;
        fill_type(&tp, a->tps[i]);
        if (!pb_encode_tag_for_field(s, f) || !pb_encode_submessage(s, onnx_TypeProto_fields, &tp))
            return false;
    }
    return true;
}

static bool enc_attr(pb_ostream_t *s, const pb_field_t *f, const poprt__attr *a)
{
    onnx_AttributeProto ap;
    memset(&ap, 0, sizeof ap);
    SET(ap.name, enc_str, a->name);
    ap.has_type = true;
    ap.type = (int32_t)a->type;
    SET_STR(ap.ref_attr_name, a->ref_attr_name);
    SET_STR(ap.doc_string, a->doc);
    if (!a->ref_attr_name || !*a->ref_attr_name) {
        switch (a->type) {
        case POPRT__ATTR_FLOAT:
            ap.has_f = true;
            ap.f = a->f;
            break;
        case POPRT__ATTR_INT:
            ap.has_i = true;
            ap.i = a->i;
            break;
        case POPRT__ATTR_STRING:
            SET(ap.s, enc_s_cb, a);
            break;
        case POPRT__ATTR_TENSOR:
            if (a->t)
                SET(ap.t, enc_tensor_cb, a->t);
            break;
        case POPRT__ATTR_SPARSE_TENSOR:
            if (a->t)
                SET(ap.sparse_tensor, enc_sparse_cb, a->t);
            break;
        case POPRT__ATTR_GRAPH:
            if (a->g)
                SET(ap.g, enc_graph_cb, a->g);
            break;
        case POPRT__ATTR_TYPE_PROTO:
            if (a->tp)
                SET(ap.tp, enc_type_cb, a->tp);
            break;
        case POPRT__ATTR_FLOATS:
            if (a->n)
                SET(ap.floats, enc_floats_cb, a);
            break;
        case POPRT__ATTR_INTS:
            if (a->n)
                SET(ap.ints, enc_ints_cb, a);
            break;
        case POPRT__ATTR_STRINGS:
            SET(ap.strings, enc_strings_cb, a);
            break;
        case POPRT__ATTR_TENSORS:
            SET(ap.tensors, enc_tensors_cb, a);
            break;
        case POPRT__ATTR_SPARSE_TENSORS:
            SET(ap.sparse_tensors, enc_tensors_cb, a);
            break;
        case POPRT__ATTR_GRAPHS:
            SET(ap.graphs, enc_graphs_cb, a);
            break;
        case POPRT__ATTR_TYPE_PROTOS:
            SET(ap.type_protos, enc_tps_cb, a);
            break;
        default:
            break;
        }
    }
    return pb_encode_tag_for_field(s, f) && pb_encode_submessage(s, onnx_AttributeProto_fields, &ap);
}

typedef struct tlist {
    poprt__tensor *const *v;
    int n;
} tlist;

static bool enc_names_cb(pb_ostream_t *s, const pb_field_t *f, void *const *arg)
{
    const tlist *l = *arg;
    for (int i = 0; i < l->n; i++) {
        const char *name = l->v[i] ? l->v[i]->name : "";
        if (!pb_encode_tag_for_field(s, f) || !pb_encode_string(s, (const pb_byte_t *)name, strlen(name)))
            return false;
    }
    return true;
}

static bool enc_node_attrs_cb(pb_ostream_t *s, const pb_field_t *f, void *const *arg)
{
    const poprt__node *n = *arg;
    for (int i = 0; i < n->n_attrs; i++)
        if (!enc_attr(s, f, &n->attrs[i]))
            return false;
    return true;
}


static bool enc_kv_cb(pb_ostream_t *s, const pb_field_t *f, void *const *arg)
{
    const poprt__onnx_kv *l = *arg;
    for (int i = 0; i < l->n; i++) {
        onnx_StringStringEntryProto e;
        memset(&e, 0, sizeof e);
        SET(e.key, enc_str, l->keys[i] ? l->keys[i] : "");
        SET(e.value, enc_str, l->vals[i] ? l->vals[i] : "");
        if (!pb_encode_tag_for_field(s, f) || !pb_encode_submessage(s, onnx_StringStringEntryProto_fields, &e))
            return false;
    }
    return true;
}

static bool enc_node(pb_ostream_t *s, const pb_field_t *f, const poprt__node *n)
{
    onnx_NodeProto np;
    memset(&np, 0, sizeof np);
    tlist in = {n->inputs, n->n_inputs}, out = {n->outputs, n->n_outputs};
    poprt__onnx_kv meta = {n->n_meta, n->meta_keys, n->meta_vals};
    SET(np.input, enc_names_cb, &in);
    SET(np.output, enc_names_cb, &out);
    SET_STR(np.name, n->name);
    SET(np.op_type, enc_str, n->op_type);
    if (n->n_attrs)
        SET(np.attribute, enc_node_attrs_cb, n);
    SET_STR(np.doc_string, n->doc);
    SET_STR(np.domain, n->domain);
    SET_STR(np.overload, n->overload);
    if (n->n_meta)
        SET(np.metadata_props, enc_kv_cb, &meta);
    return pb_encode_tag_for_field(s, f) && pb_encode_submessage(s, onnx_NodeProto_fields, &np);
}

static bool enc_nodes_cb(pb_ostream_t *s, const pb_field_t *f, void *const *arg)
{
    const poprt__vec *v = *arg;
    for (size_t i = 0; i < v->len; i++)
        if (!enc_node(s, f, v->items[i]))
            return false;
    return true;
}

/* What a graph writes besides its nodes: initializers (listed ones with
 * data, then constants of g made by passes that something still reads) and
 * value_info for typed intermediate tensors. */
typedef struct gsave {
    const poprt__graph *g;
    poprt__map seen;
    poprt__vec inits, vinfo;
    int oom;
} gsave;

static void add_init(gsave *gs, poprt__tensor *t)
{
    if (!t || t->graph != gs->g || !t->raw || t->producer || poprt__map_get(&gs->seen, t->name))
        return;
    if (poprt__map_put(&gs->seen, t->name, t) || poprt__vec_push(&gs->inits, t))
        gs->oom = 1;
}

static void collect_uses(gsave *gs, const poprt__graph *h)
{
    for (size_t i = 0; i < h->nodes.len; i++) {
        const poprt__node *n = h->nodes.items[i];
        for (int k = 0; k < n->n_inputs; k++)
            add_init(gs, n->inputs[k]);
        for (int k = 0; k < n->n_attrs; k++) {
            const poprt__attr *a = &n->attrs[k];
            if (a->type == POPRT__ATTR_GRAPH && a->g)
                collect_uses(gs, a->g);
            if (a->type == POPRT__ATTR_GRAPHS)
                for (int64_t j = 0; j < a->n; j++)
                    collect_uses(gs, a->graphs[j]);
        }
    }
    for (size_t i = 0; i < h->outputs.len; i++)
        add_init(gs, h->outputs.items[i]);
}

static int gsave_init(gsave *gs, const poprt__graph *g)
{
    memset(gs, 0, sizeof *gs);
    gs->g = g;
    for (size_t i = 0; i < g->initializers.len; i++)
        add_init(gs, g->initializers.items[i]);
    collect_uses(gs, g);
    for (size_t i = 0; i < g->nodes.len && !gs->oom; i++) {
        const poprt__node *n = g->nodes.items[i];
        for (int k = 0; k < n->n_outputs; k++) {
            poprt__tensor *t = n->outputs[k];
            if (t && t->graph == g && !t->is_output && type_known(&t->type) && !poprt__map_get(&gs->seen, t->name)) {
                if (poprt__map_put(&gs->seen, t->name, t) || poprt__vec_push(&gs->vinfo, t))
                    gs->oom = 1;
            }
        }
    }
    return !gs->oom;
}

static void gsave_free(gsave *gs)
{
    poprt__map_free(&gs->seen);
    poprt__vec_free(&gs->inits);
    poprt__vec_free(&gs->vinfo);
}

static bool enc_inits_cb(pb_ostream_t *s, const pb_field_t *f, void *const *arg)
{
    const poprt__vec *v = *arg;
    for (size_t i = 0; i < v->len; i++)
        if (!enc_tensor(s, f, v->items[i]))
            return false;
    return true;
}

static void fill_graph(onnx_GraphProto *gp, const poprt__graph *g, gsave *gs)
{
    memset(gp, 0, sizeof *gp);
    SET(gp->node, enc_nodes_cb, &g->nodes);
    SET_STR(gp->name, g->name);
    SET(gp->initializer, enc_inits_cb, &gs->inits);
    SET_STR(gp->doc_string, g->doc);
    SET(gp->input, enc_vinfo_vec_cb, &g->inputs);
    SET(gp->output, enc_vinfo_vec_cb, &g->outputs);
    SET(gp->value_info, enc_vinfo_vec_cb, &gs->vinfo);
}

static bool enc_graph(pb_ostream_t *s, const pb_field_t *f, const poprt__graph *g)
{
    gsave gs;
    if (!gsave_init(&gs, g)) {
        gsave_free(&gs);
        return fail(poprt__err(POPRT_STATUS_OUT_OF_MEMORY, "out of memory saving graph '%s'", g->name));
    }
    onnx_GraphProto gp;
    fill_graph(&gp, g, &gs);
    bool ok = pb_encode_tag_for_field(s, f) && pb_encode_submessage(s, onnx_GraphProto_fields, &gp);
    gsave_free(&gs);
    return ok;
}

/* ---- functions and the model ------------------------------------------------- */

typedef struct opsets_arg {
    int n;
    const poprt__opset *v;
} opsets_arg;

static bool enc_opsets_cb(pb_ostream_t *s, const pb_field_t *f, void *const *arg)
{
    const opsets_arg *l = *arg;
    for (int i = 0; i < l->n; i++) {
        onnx_OperatorSetIdProto op;
        memset(&op, 0, sizeof op);
        SET_STR(op.domain, l->v[i].domain);
        op.has_version = true;
        op.version = l->v[i].version;
        if (!pb_encode_tag_for_field(s, f) || !pb_encode_submessage(s, onnx_OperatorSetIdProto_fields, &op))
            return false;
    }
    return true;
}

typedef struct cstrs {
    int n;
    const char *const *v;
} cstrs;

static bool enc_cstrs_cb(pb_ostream_t *s, const pb_field_t *f, void *const *arg)
{
    const cstrs *l = *arg;
    for (int i = 0; i < l->n; i++)
        if (!pb_encode_tag_for_field(s, f) || !pb_encode_string(s, (const pb_byte_t *)l->v[i], strlen(l->v[i])))
            return false;
    return true;
}

static bool enc_fattrs_cb(pb_ostream_t *s, const pb_field_t *f, void *const *arg)
{
    const poprt__function *fn = *arg;
    for (int i = 0; i < fn->n_attr_defaults; i++)
        if (!enc_attr(s, f, &fn->attr_defaults[i]))
            return false;
    return true;
}

static bool enc_function(pb_ostream_t *s, const pb_field_t *f, const poprt__function *fn)
{
    const poprt__graph *g = fn->body;
    gsave gs;
    if (!gsave_init(&gs, g)) {
        gsave_free(&gs);
        return fail(poprt__err(POPRT_STATUS_OUT_OF_MEMORY, "out of memory saving function '%s'", fn->name));
    }
    tlist in = {(poprt__tensor *const *)g->inputs.items, (int)g->inputs.len};
    tlist out = {(poprt__tensor *const *)g->outputs.items, (int)g->outputs.len};
    cstrs an = {fn->n_attr_names, fn->attr_names};
    opsets_arg os = {fn->n_opsets, fn->opsets};
    onnx_FunctionProto fp;
    memset(&fp, 0, sizeof fp);
    SET(fp.name, enc_str, fn->name ? fn->name : "");
    SET(fp.input, enc_names_cb, &in);
    SET(fp.output, enc_names_cb, &out);
    if (an.n)
        SET(fp.attribute, enc_cstrs_cb, &an);
    SET(fp.node, enc_nodes_cb, &g->nodes);
    SET_STR(fp.doc_string, g->doc);
    if (os.n)
        SET(fp.opset_import, enc_opsets_cb, &os);
    SET_STR(fp.domain, fn->domain);
    if (fn->n_attr_defaults)
        SET(fp.attribute_proto, enc_fattrs_cb, fn);
    if (gs.vinfo.len)
        SET(fp.value_info, enc_vinfo_vec_cb, &gs.vinfo);
    SET_STR(fp.overload, fn->overload);
    bool ok = pb_encode_tag_for_field(s, f) && pb_encode_submessage(s, onnx_FunctionProto_fields, &fp);
    gsave_free(&gs);
    return ok;
}

static bool enc_functions_cb(pb_ostream_t *s, const pb_field_t *f, void *const *arg)
{
    const poprt__model *m = *arg;
    for (int i = 0; i < m->n_functions; i++)
        if (!enc_function(s, f, &m->functions[i]))
            return false;
    return true;
}

/* Sizes then encodes msg into a new buffer (*data, poprt__malloc'd). */
static poprt_status encode_message(const pb_msgdesc_t *fields, const void *msg, const char *what,
                                   const sctx *ctx, void **data, size_t *size)
{
    size_t n = 0;
    void *buf = NULL;
    if (!pb_get_encoded_size(&n, fields, msg))
        return ctx->st ? ctx->st : poprt__err(POPRT_STATUS_INTERNAL, "encoding %s failed", what);
    if (!(buf = poprt__malloc(n ? n : 1)))
        return poprt__err(POPRT_STATUS_OUT_OF_MEMORY, "out of memory encoding a %s (%zu bytes)", what, n);
    pb_ostream_t s = pb_ostream_from_buffer(buf, n);
    if (!pb_encode(&s, fields, msg) || s.bytes_written != n) {
        poprt__free(buf);
        return ctx->st ? ctx->st
                       : poprt__err(POPRT_STATUS_INTERNAL, "encoding %s failed: %s", what, PB_GET_ERROR(&s));
    }
    *data = buf;
    *size = n;
    return POPRT_OK;
}

poprt_status poprt__onnx_save(const poprt__model *m, void **data, size_t *size)
{
    return poprt__onnx_save_placed(m, NULL, data, size);
}

poprt_status poprt__onnx_save_placed(const poprt__model *m, const poprt__onnx_placer *placer,
                                     void **data, size_t *size)
{
    if (!m || !m->graph || !data || !size)
        return poprt__err(POPRT_STATUS_INVALID_ARGUMENT, "poprt__onnx_save: NULL argument");
    sctx ctx = {POPRT_OK, placer};
    sctx *saved = g_ctx;
    g_ctx = &ctx;
    opsets_arg os = {m->n_opsets, m->opsets};
    poprt__onnx_kv meta = {m->n_meta, m->meta_keys, m->meta_vals};
    onnx_ModelProto mp;
    memset(&mp, 0, sizeof mp);
    /* the version the model has, even none: a default of 8 made an
     * unversioned model without opset imports invalid when read back */
    mp.has_ir_version = m->ir_version != 0;
    mp.ir_version = m->ir_version;
    SET_STR(mp.producer_name, m->producer_name);
    SET_STR(mp.producer_version, m->producer_version);
    SET_STR(mp.domain, m->domain);
    if (m->model_version) {
        mp.has_model_version = true;
        mp.model_version = m->model_version;
    }
    SET_STR(mp.doc_string, m->doc);
    SET(mp.graph, enc_graph_cb, m->graph);
    if (os.n)
        SET(mp.opset_import, enc_opsets_cb, &os);
    if (meta.n)
        SET(mp.metadata_props, enc_kv_cb, &meta);
    if (m->n_functions)
        SET(mp.functions, enc_functions_cb, m);

    poprt_status st = encode_message(onnx_ModelProto_fields, &mp, "ModelProto", &ctx, data, size);
    g_ctx = saved;
    return st;
}

poprt_status poprt__onnx_encode_tensor(const poprt__tensor *t, void **data, size_t *size)
{
    if (!t || !data || !size)
        return poprt__err(POPRT_STATUS_INVALID_ARGUMENT, "poprt__onnx_encode_tensor: NULL argument");
    sctx ctx = {POPRT_OK, NULL};
    sctx *saved = g_ctx;
    g_ctx = &ctx;
    poprt_status st;
    if (!tensor_ok(t)) {
        st = ctx.st;
    } else {
        onnx_TensorProto tp;
        fill_tensor(&tp, t);
        st = encode_message(onnx_TensorProto_fields, &tp, "TensorProto", &ctx, data, size);
    }
    g_ctx = saved;
    return st;
}
