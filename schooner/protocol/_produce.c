/* Produce path: the records of one plain v2 record batch as columns, with no per-record objects but their bytes.
 *
 * plain_records(batch) takes one whole uncompressed batch (magic 2, its CRC already checked by the caller) and,
 * when every record has a value, no headers, and either all or none of them a key, returns
 *     (keyed, runs, fields, max_timestamp, max_index, count)
 * where runs lists (count, timestamp) for each stretch of records with one timestamp, in order; fields holds
 * each record's value, or its key then its value when keyed; max_index is the first record with the highest
 * timestamp. Any other batch (compressed, log-append time, control, headers, nulls, mixed keys, or anything
 * malformed) gives None, and the caller decodes it the general way, which also reports what is wrong.
 *
 * Why by hand: aiokafka's decoder (the general path) builds a record object and a headers list per record,
 * which the cyclic collector tracks; for the common batch that was about a third of the broker's produce
 * cost. No maintained library gives a v2 batch as columns.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

/* Every field is read a byte at a time (get_be, get_varint): nothing here depends on the CPU's byte order. */

#define HEADER_SIZE 61
#define ATTRIBUTES_AT 21
#define FIRST_TIMESTAMP_AT 27
#define COUNT_AT 57

static uint64_t get_be(const unsigned char *p, int bytes) {
    uint64_t v = 0;
    for (int i = 0; i < bytes; i++) v = (v << 8) | p[i];
    return v;
}

/* Eight bytes read as a two's complement int64 (a cast of a value past INT64_MAX is the compiler's choice in C). */
static int64_t as_int64(uint64_t u) { return u <= INT64_MAX ? (int64_t)u : -(int64_t)(uint64_t)~u - 1; }

/* A zigzag varint (Kafka's varint and varlong); 0 when it runs past end or is longer than 10 bytes. */
static int get_varint(const unsigned char **p, const unsigned char *end, int64_t *out) {
    uint64_t v = 0;
    for (int shift = 0; shift < 70; shift += 7) {
        if (*p >= end) return 0;
        unsigned char b = *(*p)++;
        v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *out = (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
            return 1;
        }
    }
    return 0;
}

/* Appends (count, timestamp) to runs; 0 on a Python error. */
static int close_run(PyObject *runs, Py_ssize_t count, int64_t timestamp) {
    PyObject *run = Py_BuildValue("(nL)", count, (long long)timestamp);
    if (run == NULL) return 0;
    int failed = PyList_Append(runs, run);
    Py_DECREF(run);
    return failed == 0;
}

static PyObject *plain_records(PyObject *self, PyObject *arg) {
    (void)self;
    Py_buffer view;
    if (PyObject_GetBuffer(arg, &view, PyBUF_SIMPLE) < 0) return NULL;
    const unsigned char *start = view.buf, *end = start + view.len;
    PyObject *runs = NULL, *fields = NULL, *result = NULL;
    if (view.len < HEADER_SIZE || start[16] != 2) goto not_plain;
    unsigned attributes = (unsigned)get_be(start + ATTRIBUTES_AT, 2);
    if (attributes & 0x6f) goto not_plain; /* compressed (bits 0-2), log-append time (3), control (5), delete horizon (6) */
    int64_t first_ts = as_int64(get_be(start + FIRST_TIMESTAMP_AT, 8));
    uint64_t count_field = get_be(start + COUNT_AT, 4);
    if (count_field == 0 || count_field > INT32_MAX) goto not_plain; /* an int32 <= 0 */
    int64_t count = (int64_t)count_field;
    if ((runs = PyList_New(0)) == NULL || (fields = PyList_New(0)) == NULL) goto error;
    const unsigned char *p = start + HEADER_SIZE;
    int keyed = -1; /* unknown until the first record */
    int64_t run_ts = 0, max_ts = 0;
    Py_ssize_t run_count = 0, max_index = 0;
    for (int64_t i = 0; i < count; i++) {
        int64_t length, ts_delta, offset_delta, key_len, value_len, headers;
        if (!get_varint(&p, end, &length) || length < 0 || length > end - p) goto not_plain;
        const unsigned char *record_end = p + length;
        if (p >= record_end) goto not_plain;
        p++; /* the record's attributes: unused */
        if (!get_varint(&p, record_end, &ts_delta) || !get_varint(&p, record_end, &offset_delta)) goto not_plain;
        if (offset_delta != i) goto not_plain; /* records numbered 0, 1, ... as producers do: a fetch may return the batch as sent */
        if (!get_varint(&p, record_end, &key_len) || key_len < -1 || key_len > record_end - p) goto not_plain;
        const unsigned char *key = p;
        if (key_len > 0) p += key_len;
        if (!get_varint(&p, record_end, &value_len) || value_len < 0 || value_len > record_end - p) goto not_plain;
        const unsigned char *value = p;
        p += value_len;
        if (!get_varint(&p, record_end, &headers) || headers != 0 || p != record_end) goto not_plain;
        int has_key = key_len >= 0;
        if (keyed < 0) keyed = has_key;
        else if (keyed != has_key) goto not_plain;
        if (has_key) {
            PyObject *k = PyBytes_FromStringAndSize((const char *)key, (Py_ssize_t)key_len);
            if (k == NULL) goto error;
            int failed = PyList_Append(fields, k);
            Py_DECREF(k);
            if (failed) goto error;
        }
        PyObject *v = PyBytes_FromStringAndSize((const char *)value, (Py_ssize_t)value_len);
        if (v == NULL) goto error;
        int failed = PyList_Append(fields, v);
        Py_DECREF(v);
        if (failed) goto error;
        /* first_ts + ts_delta past int64 (hostile values: a signed overflow in C) is left to the general path,
         * which decides what such a record's timestamp is. */
        if (ts_delta > 0 ? first_ts > INT64_MAX - ts_delta : first_ts < INT64_MIN - ts_delta) goto not_plain;
        int64_t ts = first_ts + ts_delta;
        if (i == 0 || ts > max_ts) {
            max_ts = ts;
            max_index = (Py_ssize_t)i;
        }
        if (i > 0 && ts != run_ts) {
            if (!close_run(runs, run_count, run_ts)) goto error;
            run_count = 0;
        }
        run_ts = ts;
        run_count++;
    }
    if (p != end) goto not_plain; /* bytes after the last record */
    if (!close_run(runs, run_count, run_ts)) goto error;
    result = Py_BuildValue("(OOOLnL)", keyed ? Py_True : Py_False, runs, fields, (long long)max_ts, max_index,
                           (long long)count);
    goto done;
not_plain:
    result = Py_None;
    Py_INCREF(result);
    goto done;
error:
    result = NULL;
done:
    Py_XDECREF(runs);
    Py_XDECREF(fields);
    PyBuffer_Release(&view);
    return result;
}

static PyMethodDef methods[] = {
    {"plain_records", plain_records, METH_O, "A plain v2 batch's records as (keyed, runs, fields, max_ts, max_index, count), or None."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_produce", NULL, -1, methods};

PyMODINIT_FUNC PyInit__produce(void) { return PyModule_Create(&module); }
