/* Stream entries -> uncompressed Kafka record batches (magic 2), in one pass with no per-record objects.
 *
 * encode_plain() takes a raw XRANGE reply ([[id, [field, value, ...]], ...], as hiredis gives it) and
 * builds batches of plain (non-transactional) records. It stops at the first entry it does not handle
 * (a transactional record or marker, malformed headers, an odd timestamp, a header name that is not UTF-8, an
 * unexpected type), so that the Python encoder (schooner/broker/fetch_codec.py) takes that entry; the
 * output is byte for byte what the Python encoder builds for the same batches. encode_resp() does the same
 * from the reply's RESP bytes as Redis sent them (the read lane hands a fetch's XRANGE reply on unparsed):
 * making hiredis's objects of a reply and freeing them cost the broker three times the encoding.
 *
 * The entry layout is docs/key-layout.md's: fields key, value, timestamp (decimal ms) and headers (for
 * each header: uint32 BE name length, name, int32 BE value length or -1, value); other fields are skipped.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

/* Every multi-byte value is read and written a byte at a time (put_be, load_le64, the header scan), so the
 * output does not depend on the CPU's byte order. */

#define HEADER_SIZE 61
#define RECORD_OVERHEAD 24
#define MAX_OFFSET_DELTA 2147483647LL

/* ---- CRC-32C (Castagnoli), reflected polynomial 0x82F63B78 ---- */
static uint32_t crc_table[8][256];

static void crc_init(void) {
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++) c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
        crc_table[0][i] = c;
    }
    for (uint32_t i = 0; i < 256; i++)
        for (int t = 1; t < 8; t++) crc_table[t][i] = (crc_table[t - 1][i] >> 8) ^ crc_table[0][crc_table[t - 1][i] & 0xff];
}

/* Eight bytes as a little-endian number on any CPU: the first byte is the low one, the one that meets the
 * running CRC. (A memcpy into a uint64_t gave the wrong CRC on a big-endian host; compilers turn this into one
 * load where the host is little-endian.) */
static uint64_t load_le64(const unsigned char *p) {
    uint64_t w = 0;
    for (int i = 7; i >= 0; i--) w = (w << 8) | p[i];
    return w;
}

static uint32_t crc32c(const unsigned char *p, size_t n) {
    uint32_t c = 0xffffffffu;
    while (n >= 8) { /* slicing by 8 */
        uint64_t w = load_le64(p) ^ c;
        c = crc_table[7][w & 0xff] ^ crc_table[6][(w >> 8) & 0xff] ^ crc_table[5][(w >> 16) & 0xff] ^
            crc_table[4][(w >> 24) & 0xff] ^ crc_table[3][(w >> 32) & 0xff] ^ crc_table[2][(w >> 40) & 0xff] ^
            crc_table[1][(w >> 48) & 0xff] ^ crc_table[0][w >> 56];
        p += 8;
        n -= 8;
    }
    while (n--) c = (c >> 8) ^ crc_table[0][(c ^ *p++) & 0xff];
    return c ^ 0xffffffffu;
}

/* ---- a growable output buffer ---- */
typedef struct {
    unsigned char *data;
    size_t len, cap;
} Buf;

static int buf_reserve(Buf *b, size_t more) {
    if (b->len + more <= b->cap) return 0;
    size_t cap = b->cap ? b->cap : 65536;
    while (cap < b->len + more) cap *= 2;
    unsigned char *d = PyMem_Realloc(b->data, cap);
    if (!d) { PyErr_NoMemory(); return -1; }
    b->data = d;
    b->cap = cap;
    return 0;
}

/* Zigzag in unsigned arithmetic: a right shift of a negative int64 is the compiler's choice in C. */
static uint64_t zigzag(int64_t v) { return ((uint64_t)v << 1) ^ (0 - ((uint64_t)v >> 63)); }

static size_t varint_size(int64_t v) {
    uint64_t z = zigzag(v);
    size_t n = 1;
    while (z >= 0x80) { z >>= 7; n++; }
    return n;
}

static unsigned char *put_varint(unsigned char *p, int64_t v) { /* zigzag, as Kafka's records use */
    uint64_t z = zigzag(v);
    while (z >= 0x80) { *p++ = (unsigned char)(z | 0x80); z >>= 7; }
    *p++ = (unsigned char)z;
    return p;
}

static unsigned char *put_be(unsigned char *p, uint64_t v, int bytes) {
    for (int i = bytes - 1; i >= 0; i--) *p++ = (unsigned char)(v >> (8 * i));
    return p;
}

/* ---- one entry, parsed in place ---- */
typedef struct {
    int64_t offset, timestamp;
    const char *key, *value, *headers;
    Py_ssize_t key_len, value_len, headers_len; /* -1: the field is absent (null) */
    Py_ssize_t header_count, headers_out;       /* headers as Kafka encodes them */
} Entry;

static int parse_u64(const char *s, Py_ssize_t n, uint64_t *out) {
    if (n <= 0 || n > 20) return 0;
    uint64_t v = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9') return 0;
        uint64_t d = (uint64_t)(s[i] - '0');
        if (v > (UINT64_MAX - d) / 10) return 0;
        v = v * 10 + d;
    }
    *out = v;
    return 1;
}

/* Whether n bytes are UTF-8 as Python's strict decoder reads it (no overlongs, no surrogates): such a
 * header name goes through Python's decode and encode unchanged. */
static int valid_utf8(const unsigned char *p, size_t n) {
    size_t i = 0;
    while (i < n) {
        unsigned char c = p[i];
        if (c < 0x80) { i++; continue; }
        size_t len;
        uint32_t cp;
        if (c >= 0xC2 && c <= 0xDF) { len = 2; cp = c & 0x1F; }
        else if (c >= 0xE0 && c <= 0xEF) { len = 3; cp = c & 0x0F; }
        else if (c >= 0xF0 && c <= 0xF4) { len = 4; cp = c & 0x07; }
        else return 0;
        if (i + len > n) return 0;
        for (size_t k = 1; k < len; k++) {
            if ((p[i + k] & 0xC0) != 0x80) return 0;
            cp = (cp << 6) | (p[i + k] & 0x3F);
        }
        if ((len == 3 && (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF))) || (len == 4 && (cp < 0x10000 || cp > 0x10FFFF)))
            return 0;
        i += len;
    }
    return 1;
}

/* Four bytes read as a two's complement int32 (a cast of a value past INT32_MAX is the compiler's choice in C). */
static int32_t as_int32(uint32_t u) { return u <= INT32_MAX ? (int32_t)u : -(int32_t)(uint32_t)~u - 1; }

/* Kafka's size of the stored headers, or 0 if they are not well formed (the Python path decides then). */
static int scan_headers(Entry *e) {
    const unsigned char *p = (const unsigned char *)e->headers, *end = p + e->headers_len;
    Py_ssize_t count = 0, out = 0;
    while (p < end) {
        if (end - p < 4) return 0;
        uint32_t name_len = (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
        p += 4;
        /* Compared without adding to name_len, which a 32-bit size_t would wrap; Kafka's name length is an int32. */
        if (name_len > INT32_MAX || (size_t)(end - p) < 4 || (size_t)(end - p) - 4 < (size_t)name_len) return 0;
        if (!valid_utf8(p, name_len)) return 0; /* Python's decoder would replace bytes in it */
        p += name_len;
        int32_t value_len = as_int32((uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3]);
        p += 4;
        if (value_len < -1 || (value_len > 0 && end - p < value_len)) return 0;
        if (value_len > 0) p += value_len;
        out += varint_size(name_len) + name_len + varint_size(value_len < 0 ? -1 : value_len) + (value_len > 0 ? value_len : 0);
        count++;
    }
    e->header_count = count;
    e->headers_out = out;
    return 1;
}

static unsigned char *put_headers(unsigned char *p, const Entry *e) {
    const unsigned char *h = (const unsigned char *)e->headers, *end = h + e->headers_len;
    while (h < end) {
        uint32_t name_len = (uint32_t)h[0] << 24 | (uint32_t)h[1] << 16 | (uint32_t)h[2] << 8 | h[3];
        h += 4;
        p = put_varint(p, name_len);
        memcpy(p, h, name_len);
        p += name_len;
        h += name_len;
        int32_t value_len = as_int32((uint32_t)h[0] << 24 | (uint32_t)h[1] << 16 | (uint32_t)h[2] << 8 | h[3]);
        h += 4;
        p = put_varint(p, value_len < 0 ? -1 : value_len);
        if (value_len > 0) { memcpy(p, h, value_len); p += value_len; h += value_len; }
    }
    return p;
}

#define NAME_IS(s, n, lit) ((n) == (Py_ssize_t)sizeof(lit) - 1 && memcmp((s), (lit), sizeof(lit) - 1) == 0)

/* The offset of entry ID s[0..n) ("ms-seq") into e, its ms in *ms_out; 0 if it is not one this encoder takes. */
static int take_id(const char *s, Py_ssize_t len, int bits, int64_t shift, Entry *e, uint64_t *ms_out) {
    const char *dash = memchr(s, '-', (size_t)len);
    uint64_t ms, seq;
    if (!dash || !parse_u64(s, dash - s, &ms) || !parse_u64(dash + 1, len - (dash - s) - 1, &seq)) return 0;
    uint64_t n;
    if (bits >= 64) {
        if (ms != 0) return 0;
        n = seq;
    } else {
        if (ms >= (UINT64_C(1) << (63 - bits)) || seq >= (UINT64_C(1) << bits)) return 0;
        n = (ms << bits) | seq;
    }
    if (n > (uint64_t)INT64_MAX) return 0;
    /* n - shift must stay an int64: shift is 0 or 1 from the topic's codec, but a negative one would overflow. */
    if (shift < 0 && (int64_t)n > INT64_MAX + shift) return 0;
    e->offset = (int64_t)n - shift;
    e->timestamp = -1;
    e->key = e->value = e->headers = NULL;
    e->key_len = e->value_len = e->headers_len = -1;
    e->header_count = e->headers_out = 0;
    *ms_out = ms;
    return 1;
}

/* One field of the entry; 0 if the entry is not one this encoder takes. */
static int take_field(Entry *e, const char *ns, Py_ssize_t nl, const char *vs, Py_ssize_t vl) {
    if (NAME_IS(ns, nl, "value")) {
        e->value = vs;
        e->value_len = vl;
    } else if (NAME_IS(ns, nl, "key")) {
        e->key = vs;
        e->key_len = vl;
    } else if (NAME_IS(ns, nl, "timestamp")) {
        uint64_t ts;
        if (!parse_u64(vs, vl, &ts) || ts > (uint64_t)INT64_MAX) return 0; /* negative: Python's path */
        e->timestamp = (int64_t)ts;
    } else if (NAME_IS(ns, nl, "headers")) {
        e->headers = vs;
        e->headers_len = vl;
    } else if (NAME_IS(ns, nl, "txn") || NAME_IS(ns, nl, "control")) {
        return 0;
    }
    return 1;
}

static int finish_entry(Entry *e, uint64_t ms) {
    if (e->timestamp < 0) e->timestamp = (int64_t)ms; /* no timestamp field: the ID's ms */
    return !e->headers || scan_headers(e);
}

/* 1: a plain entry of a list as hiredis gives it, parsed; 0: not one this encoder takes. */
static int parse_entry(PyObject *item, int bits, int64_t shift, Entry *e) {
    if (!PyList_CheckExact(item) && !PyTuple_CheckExact(item)) return 0;
    if (PySequence_Fast_GET_SIZE(item) != 2) return 0;
    PyObject *id = PySequence_Fast_GET_ITEM(item, 0), *fields = PySequence_Fast_GET_ITEM(item, 1);
    if (!PyBytes_CheckExact(id) || (!PyList_CheckExact(fields) && !PyTuple_CheckExact(fields))) return 0;
    uint64_t ms;
    if (!take_id(PyBytes_AS_STRING(id), PyBytes_GET_SIZE(id), bits, shift, e, &ms)) return 0;
    Py_ssize_t count = PySequence_Fast_GET_SIZE(fields);
    PyObject **items = PySequence_Fast_ITEMS(fields);
    for (Py_ssize_t i = 0; i + 1 < count; i += 2) {
        PyObject *name = items[i], *val = items[i + 1];
        if (!PyBytes_CheckExact(name) || !PyBytes_CheckExact(val)) return 0;
        if (!take_field(e, PyBytes_AS_STRING(name), PyBytes_GET_SIZE(name), PyBytes_AS_STRING(val),
                        PyBytes_GET_SIZE(val)))
            return 0;
    }
    return finish_entry(e, ms);
}

/* ---- an entry of an XRANGE reply's RESP bytes: every length is checked against the buffer ---- */

/* The number of "<kind>N\r\n" at *p (N >= 0, up to 18 digits), *p moved past it; -1 if it is not one. */
static long long resp_count(const char *buf, Py_ssize_t n, Py_ssize_t *p, char kind) {
    Py_ssize_t at = *p;
    if (at >= n || buf[at] != kind) return -1;
    long long v = 0;
    Py_ssize_t i = at + 1, digits = 0;
    for (; i < n && buf[i] >= '0' && buf[i] <= '9'; i++, digits++) {
        if (digits == 18) return -1;
        v = v * 10 + (buf[i] - '0');
    }
    if (digits == 0 || n - i < 2 || buf[i] != '\r' || buf[i + 1] != '\n') return -1;
    *p = i + 2;
    return v;
}

static int resp_bulk(const char *buf, Py_ssize_t n, Py_ssize_t *p, const char **s, Py_ssize_t *len) {
    Py_ssize_t at = *p;
    long long size = resp_count(buf, n, &at, '$');
    if (size < 0 || size > n - at || n - at - size < 2 || buf[at + size] != '\r' || buf[at + size + 1] != '\n')
        return 0;
    *s = buf + at;
    *len = (Py_ssize_t)size;
    *p = at + (Py_ssize_t)size + 2;
    return 1;
}

/* 1: the plain entry at *p parsed, *next after it; 0: not one this encoder takes (or not RESP). */
static int parse_resp_entry(const char *buf, Py_ssize_t n, Py_ssize_t p, int bits, int64_t shift, Entry *e,
                            Py_ssize_t *next, const char **id_out, Py_ssize_t *id_len_out) {
    const char *id, *ns, *vs;
    Py_ssize_t id_len, nl, vl;
    uint64_t ms;
    if (resp_count(buf, n, &p, '*') != 2 || !resp_bulk(buf, n, &p, &id, &id_len)) return 0;
    long long fields = resp_count(buf, n, &p, '*');
    if (fields < 0 || !take_id(id, id_len, bits, shift, e, &ms)) return 0;
    for (long long f = 0; f + 1 < fields; f += 2) {
        if (!resp_bulk(buf, n, &p, &ns, &nl) || !resp_bulk(buf, n, &p, &vs, &vl) || !take_field(e, ns, nl, vs, vl))
            return 0;
    }
    if (fields % 2 && !resp_bulk(buf, n, &p, &ns, &nl)) return 0; /* an odd field out, as the list path skips it */
    *next = p;
    *id_out = id;
    *id_len_out = id_len;
    return finish_entry(e, ms);
}

/* Where the entries come from: a list (hiredis's objects) or the reply's RESP bytes. */
typedef struct {
    PyObject *list; /* NULL: the bytes */
    const char *buf;
    Py_ssize_t len;
    Py_ssize_t index;  /* of the next entry */
    Py_ssize_t count;  /* entries in all */
    Py_ssize_t pos;    /* of the next entry in the bytes */
    Py_ssize_t next;   /* after the entry just parsed */
    const char *id;    /* its ID, in the bytes */
    Py_ssize_t id_len;
    const char *last_id; /* the ID of the last entry taken (NULL: none yet) */
    Py_ssize_t last_id_len;
} Source;

static int source_entry(Source *src, int bits, int64_t shift, Entry *e) {
    if (src->index >= src->count) return 0;
    if (src->list) return parse_entry(PyList_GET_ITEM(src->list, src->index), bits, shift, e);
    return parse_resp_entry(src->buf, src->len, src->pos, bits, shift, e, &src->next, &src->id, &src->id_len);
}

static void source_advance(Source *src) {
    src->index++;
    src->pos = src->next;
    src->last_id = src->id;
    src->last_id_len = src->id_len;
}

/* ---- the batch being built ---- */
typedef struct {
    size_t start; /* where its header begins in the buffer */
    int64_t base, first_ts, max_ts, last_delta;
    int32_t count;
} Batch;

static void close_batch(Buf *b, Batch *t, int timestamp_type) {
    unsigned char *h = b->data + t->start;
    size_t size = b->len - t->start;
    unsigned char *p = put_be(h, (uint64_t)t->base, 8);
    p = put_be(p, (uint64_t)(size - 12), 4);
    p = put_be(p, 0, 4); /* partition leader epoch */
    *p++ = 2;            /* magic */
    unsigned char *crc_at = p;
    p += 4;
    p = put_be(p, timestamp_type ? 0x08 : 0, 2); /* attributes: no codec, not transactional */
    p = put_be(p, (uint64_t)t->last_delta, 4);
    p = put_be(p, (uint64_t)t->first_ts, 8);
    p = put_be(p, (uint64_t)t->max_ts, 8);
    p = put_be(p, (uint64_t)-1, 8); /* producer id */
    p = put_be(p, (uint64_t)-1, 2); /* producer epoch */
    p = put_be(p, (uint64_t)-1, 4); /* base sequence */
    put_be(p, (uint64_t)t->count, 4);
    put_be(crc_at, crc32c(h + 21, size - 21), 4);
}

/* The batches of the entries of src, from its index on; see encode_plain for the arguments. Returns
 * (bytes, records, payload, used, full), src left at the first entry not taken. */
static PyObject *encode_from(Source *src, int bits, long long shift, int log_append_time, long long max_bytes,
                             long long used, long long counted, long long batch_target) {
    Buf b = {NULL, 0, 0};
    Batch t = {0, 0, 0, 0, 0, 0};
    int open = 0, full = 0;
    long long batch_size = 0, payload = 0, count = 0;
    Entry e;
    for (;; source_advance(src)) {
        if (!source_entry(src, bits, (int64_t)shift, &e)) break;
        /* XRANGE gives ascending IDs. An entry at or below the last one (a hostile reply) is left to Python, so
         * that here an offset delta is never negative and e.offset - t.base cannot overflow. */
        if (open && e.offset <= t.base + t.last_delta) break;
        long long size = RECORD_OVERHEAD + (e.key_len > 0 ? e.key_len : 0) + (e.value_len > 0 ? e.value_len : 0);
        int opens = !open || e.offset - t.base > MAX_OFFSET_DELTA || batch_size >= batch_target ||
                    (log_append_time && e.timestamp != t.first_ts);
        /* Both timestamps are in [0, INT64_MAX] (parse_entry), so their difference fits an int64. */
        int64_t ts_delta = opens ? 0 : e.timestamp - t.first_ts, off_delta = opens ? 0 : e.offset - t.base;
        size_t body = 1 + varint_size(ts_delta) + varint_size(off_delta) + varint_size(e.key_len) +
                      (e.key_len > 0 ? e.key_len : 0) + varint_size(e.value_len) + (e.value_len > 0 ? e.value_len : 0) +
                      varint_size(e.header_count) + e.headers_out;
        /* A record's length is a varint int32, and so is the batch's length field: a record that would pass
         * either (values of gigabytes) ends the run here, for the Python encoder to judge. */
        size_t batch_bytes = (opens ? HEADER_SIZE : b.len - t.start) + body + varint_size((int64_t)body);
        if (body > (size_t)INT32_MAX || batch_bytes - 12 > (size_t)INT32_MAX) break;
        long long cost = opens ? size + HEADER_SIZE : size;
        /* used + cost in a long long: past its range it is past any max_bytes; for the first record, where the
         * budget does not apply, the sum could not be returned. */
        if (used > LLONG_MAX - cost) {
            if (counted + count) {
                full = 1;
                break;
            }
            PyErr_SetString(PyExc_OverflowError, "the bytes used overflow a long long");
            goto fail;
        }
        if ((counted + count) && used + cost > max_bytes) {
            full = 1;
            break;
        }
        used += cost;
        if (opens) {
            if (open) close_batch(&b, &t, log_append_time);
            if (buf_reserve(&b, HEADER_SIZE) < 0) goto fail;
            t.start = b.len;
            b.len += HEADER_SIZE;
            t.base = e.offset;
            t.first_ts = t.max_ts = e.timestamp;
            t.count = 0;
            batch_size = 0;
            open = 1;
        }
        if (buf_reserve(&b, body + 10) < 0) goto fail;
        unsigned char *p = put_varint(b.data + b.len, (int64_t)body);
        *p++ = 0; /* record attributes */
        p = put_varint(p, ts_delta);
        p = put_varint(p, off_delta);
        p = put_varint(p, e.key_len);
        if (e.key_len > 0) { memcpy(p, e.key, e.key_len); p += e.key_len; }
        p = put_varint(p, e.value_len);
        if (e.value_len > 0) { memcpy(p, e.value, e.value_len); p += e.value_len; }
        p = put_varint(p, e.header_count);
        if (e.headers) p = put_headers(p, &e);
        b.len = p - b.data;
        if (e.timestamp > t.max_ts) t.max_ts = e.timestamp;
        t.last_delta = off_delta;
        t.count++;
        batch_size += size;
        payload += size;
        count++;
    }
    if (open) close_batch(&b, &t, log_append_time);
    PyObject *out = PyBytes_FromStringAndSize((const char *)b.data, (Py_ssize_t)b.len);
    PyMem_Free(b.data);
    if (!out) return NULL;
    return Py_BuildValue("NLLLO", out, count, payload, used, full ? Py_True : Py_False);
fail:
    PyMem_Free(b.data);
    return NULL;
}

/* encode_plain(entries, start, bits, shift, log_append_time, max_bytes, used, counted, batch_target)
 *   -> (bytes, next index, records, payload, used, full)
 * entries: a raw XRANGE reply as hiredis parses it. used: the estimated bytes the response holds
 * (fetch_codec.py's budget rule: a record costs RECORD_OVERHEAD plus its key and value, a batch HEADER_SIZE
 * more); counted: its records; full: stopped because max_bytes would be passed. */
static PyObject *encode_plain(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *entries;
    Py_ssize_t start;
    int bits, log_append_time;
    long long shift, max_bytes, used, counted, batch_target;
    if (!PyArg_ParseTuple(args, "O!niLpLLLL", &PyList_Type, &entries, &start, &bits, &shift, &log_append_time,
                          &max_bytes, &used, &counted, &batch_target))
        return NULL;
    /* A negative start would read before the list, and a negative bits shift by more than 63 (undefined): both
     * refused, as the Python encoder refuses a negative shift count. */
    if (start < 0) {
        PyErr_SetString(PyExc_IndexError, "start is negative");
        return NULL;
    }
    if (bits < 0) {
        PyErr_SetString(PyExc_ValueError, "negative shift count");
        return NULL;
    }
    Source src = {.list = entries, .index = start, .count = PyList_GET_SIZE(entries)};
    PyObject *r = encode_from(&src, bits, shift, log_append_time, max_bytes, used, counted, batch_target);
    if (!r) return NULL;
    PyObject *out = Py_BuildValue("OnOOOO", PyTuple_GET_ITEM(r, 0), src.index, PyTuple_GET_ITEM(r, 1),
                                  PyTuple_GET_ITEM(r, 2), PyTuple_GET_ITEM(r, 3), PyTuple_GET_ITEM(r, 4));
    Py_DECREF(r);
    return out;
}

/* encode_resp(reply, pos, index, count, bits, shift, log_append_time, max_bytes, used, counted, batch_target)
 *   -> (bytes, next pos, next index, records, payload, used, full, ID of the last entry taken or None)
 * reply: an XRANGE reply's RESP bytes (count entries), pos the byte position of entry `index` in it; the rest as
 * encode_plain. Stops at the first entry it does not take, as encode_plain, and at bytes that are not an entry. */
static PyObject *encode_resp(PyObject *self, PyObject *args) {
    (void)self;
    Py_buffer view;
    Py_ssize_t pos, index, count;
    int bits, log_append_time;
    long long shift, max_bytes, used, counted, batch_target;
    if (!PyArg_ParseTuple(args, "y*nnniLpLLLL", &view, &pos, &index, &count, &bits, &shift, &log_append_time,
                          &max_bytes, &used, &counted, &batch_target))
        return NULL;
    PyObject *out = NULL;
    if (pos < 0 || pos > view.len || index < 0 || count < index) {
        PyErr_SetString(PyExc_IndexError, "position or index outside the reply");
        goto done;
    }
    if (bits < 0) {
        PyErr_SetString(PyExc_ValueError, "negative shift count");
        goto done;
    }
    Source src = {.buf = view.buf, .len = view.len, .index = index, .count = count, .pos = pos, .next = pos};
    PyObject *r = encode_from(&src, bits, shift, log_append_time, max_bytes, used, counted, batch_target);
    if (!r) goto done;
    PyObject *last = src.last_id ? PyBytes_FromStringAndSize(src.last_id, src.last_id_len) : Py_NewRef(Py_None);
    if (last)
        out = Py_BuildValue("OnnOOOON", PyTuple_GET_ITEM(r, 0), src.pos, src.index, PyTuple_GET_ITEM(r, 1),
                            PyTuple_GET_ITEM(r, 2), PyTuple_GET_ITEM(r, 3), PyTuple_GET_ITEM(r, 4), last);
    Py_DECREF(r);
done:
    PyBuffer_Release(&view);
    return out;
}

static PyObject *py_crc32c(PyObject *self, PyObject *arg) {
    Py_buffer view;
    if (PyObject_GetBuffer(arg, &view, PyBUF_SIMPLE) < 0) return NULL;
    uint32_t c = crc32c(view.buf, (size_t)view.len);
    PyBuffer_Release(&view);
    return PyLong_FromUnsignedLong(c);
}

static PyMethodDef methods[] = {
    {"encode_plain", encode_plain, METH_VARARGS, "Plain stream entries -> uncompressed v2 record batches."},
    {"encode_resp", encode_resp, METH_VARARGS, "encode_plain of an XRANGE reply's RESP bytes."},
    {"crc32c", py_crc32c, METH_O, "CRC-32C of a buffer."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_batch", NULL, -1, methods};

PyMODINIT_FUNC PyInit__batch(void) {
    crc_init();
    return PyModule_Create(&module);
}
