/* RESP for a long command whose arguments are all bytes, and the extent of a reply in a buffer.
 *
 * pack_bytes(args) returns the command as RESP (`*N\r\n` then `$len\r\narg\r\n` for each), or None when an
 * argument is not bytes, for the caller's general encoder. Why by hand: an append sends one argument per record;
 * hiredis.pack_command spent 70-160 ns on each, and the list-join encoder of resp.py about 55.
 *
 * reply_scan(buf, pos, stack) walks a reply without making objects of it, so that the lane can hand a fetch's
 * XRANGE reply on as the bytes it came in (hiredis has no way to say where a reply ends without parsing it into
 * objects, which cost the broker more than encoding the records). xrange_summary(reply) reads the entry count
 * and the last ID of such a reply.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <string.h>

/* Text and bytes only: nothing here depends on the CPU's byte order. */

static int digits(Py_ssize_t n) {
    int d = 1;
    while (n >= 10) {
        n /= 10;
        d++;
    }
    return d;
}

static char *put_header(char *p, char kind, Py_ssize_t n) {
    *p++ = kind;
    int d = digits(n);
    for (int i = d - 1; i >= 0; i--) {
        p[i] = (char)('0' + n % 10);
        n /= 10;
    }
    p += d;
    *p++ = '\r';
    *p++ = '\n';
    return p;
}

static PyObject *pack_bytes(PyObject *self, PyObject *arg) {
    (void)self;
    PyObject *seq = PySequence_Fast(arg, "pack_bytes takes a list or tuple");
    if (seq == NULL) return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    PyObject **items = PySequence_Fast_ITEMS(seq);
    Py_ssize_t size = 1 + digits(n) + 2;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (!PyBytes_CheckExact(items[i])) {
            Py_DECREF(seq);
            Py_RETURN_NONE;
        }
        Py_ssize_t len = PyBytes_GET_SIZE(items[i]);
        /* One bytes object may appear many times in the list, so the total can pass Py_ssize_t where no single
         * argument does: refused, as an allocation that large would be. */
        Py_ssize_t more = 1 + digits(len) + 2 + 2;
        if (len > PY_SSIZE_T_MAX - more || size > PY_SSIZE_T_MAX - more - len) {
            Py_DECREF(seq);
            return PyErr_NoMemory();
        }
        size += more + len;
    }
    PyObject *out = PyBytes_FromStringAndSize(NULL, size);
    if (out == NULL) {
        Py_DECREF(seq);
        return NULL;
    }
    char *p = PyBytes_AS_STRING(out);
    p = put_header(p, '*', n);
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_ssize_t len = PyBytes_GET_SIZE(items[i]);
        p = put_header(p, '$', len);
        memcpy(p, PyBytes_AS_STRING(items[i]), (size_t)len);
        p += len;
        *p++ = '\r';
        *p++ = '\n';
    }
    Py_DECREF(seq);
    return out;
}

/* ---- reading replies: every length is checked against the buffer before it is used ---- */

#define MAX_DEPTH 64

/* The line at p (without its CRLF) in *len; the position after the CRLF, or -1 if the line is not all there. */
static Py_ssize_t line_end(const char *buf, Py_ssize_t n, Py_ssize_t p, Py_ssize_t *len) {
    const char *nl = memchr(buf + p, '\n', (size_t)(n - p));
    if (nl == NULL) return -1;
    Py_ssize_t at = nl - buf;
    if (at == p || buf[at - 1] != '\r') return -2; /* a bare LF: not RESP */
    *len = at - 1 - p;
    return at + 1;
}

/* The length or count after the type byte at p ("-1" or up to 18 digits, then CRLF) in *v; the position after
 * the CRLF, -1 if the line is not all there, -2 if it is not such a line. Read in place: a memchr per line cost
 * more than the digits. */
static Py_ssize_t number_line(const char *buf, Py_ssize_t n, Py_ssize_t p, long long *v) {
    Py_ssize_t i = p + 1;
    int neg = i < n && buf[i] == '-';
    i += neg;
    long long x = 0;
    Py_ssize_t start = i;
    for (; i < n && buf[i] >= '0' && buf[i] <= '9'; i++) {
        if (i - start == 18) return -2;
        x = x * 10 + (buf[i] - '0');
    }
    if (i >= n) return -1;
    if (i == start || buf[i] != '\r' || (neg && x != 1)) return -2;
    if (i + 1 >= n) return -1;
    if (buf[i + 1] != '\n') return -2;
    *v = neg ? -x : x;
    return i + 2;
}

/* Walks elements from pos with depth counts owed (stack[0] outermost). Returns the position after the last whole
 * element, -1 for bytes that are not RESP (or nested past MAX_DEPTH). *depth comes back 0 when the reply ended. */
static Py_ssize_t scan(const char *buf, Py_ssize_t n, Py_ssize_t pos, long long *stack, int *depth) {
    while (*depth > 0) {
        if (stack[*depth - 1] == 0) {
            (*depth)--;
            continue;
        }
        if (pos >= n) return pos;
        char kind = buf[pos];
        long long count = 0, size;
        Py_ssize_t next, len;
        switch (kind) {
        case '+': case '-': case ':': case '_': case ',': case '#': case '(':
            next = line_end(buf, n, pos, &len);
            break;
        case '$': case '=': case '!':
            next = number_line(buf, n, pos, &size);
            if (next >= 0) {
                if (size == -1 && kind != '$') return -1;
                if (size >= 0) {
                    if (size > n - next || n - next - size < 2) return pos; /* the bulk and its CRLF: not all here */
                    if (buf[next + size] != '\r' || buf[next + size + 1] != '\n') return -1;
                    next += (Py_ssize_t)size + 2;
                }
            }
            break;
        case '*': case '~': case '>': case '%': case '|':
            next = number_line(buf, n, pos, &count);
            if (next >= 0) {
                if (count == -1 && kind != '*') return -1;
                if (kind == '%' || kind == '|') count *= 2;
            }
            break;
        default:
            return -1;
        }
        if (next == -2) return -1;
        if (next == -1) return pos;
        pos = next;
        if (kind != '|') stack[*depth - 1]--; /* an attribute comes before the element it describes */
        if (count > 0) {
            if (*depth == MAX_DEPTH) return -1;
            stack[(*depth)++] = count;
        }
    }
    return pos;
}

/* reply_scan(buf, pos, stack) -> pos: see the top of this file. stack (a list of ints) is updated in place. */
static PyObject *reply_scan(PyObject *self, PyObject *args) {
    (void)self;
    Py_buffer view;
    Py_ssize_t pos;
    PyObject *list;
    if (!PyArg_ParseTuple(args, "y*nO!", &view, &pos, &PyList_Type, &list)) return NULL;
    long long stack[MAX_DEPTH];
    Py_ssize_t d = PyList_GET_SIZE(list);
    PyObject *result = NULL;
    if (pos < 0 || pos > view.len || d > MAX_DEPTH) {
        PyErr_SetString(PyExc_ValueError, "position outside the buffer, or a stack too deep");
        goto done;
    }
    for (Py_ssize_t i = 0; i < d; i++) {
        stack[i] = PyLong_AsLongLong(PyList_GET_ITEM(list, i));
        if (stack[i] < 0) {
            if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "a negative count");
            goto done;
        }
    }
    int depth = (int)d;
    Py_ssize_t end = scan(view.buf, view.len, pos, stack, &depth);
    if (end < 0) {
        PyErr_SetString(PyExc_ValueError, "not a RESP reply");
        goto done;
    }
    for (int i = 0; i < depth; i++) {
        PyObject *v = PyLong_FromLongLong(stack[i]);
        if (v == NULL) goto done;
        if (i < PyList_GET_SIZE(list)) {
            if (PyList_SetItem(list, i, v) < 0) goto done;
        } else if (PyList_Append(list, v) < 0) {
            Py_DECREF(v);
            goto done;
        } else {
            Py_DECREF(v);
        }
    }
    if (PyList_SetSlice(list, depth, PyList_GET_SIZE(list), NULL) < 0) goto done;
    result = PyLong_FromSsize_t(end);
done:
    PyBuffer_Release(&view);
    return result;
}

/* The bulk string at *p ("$len\r\n...\r\n"): its bytes in *s and *len, and *p moved past it. 0 if it is not one. */
static int take_bulk(const char *buf, Py_ssize_t n, Py_ssize_t *p, const char **s, Py_ssize_t *len) {
    long long size;
    if (*p >= n || buf[*p] != '$') return 0;
    Py_ssize_t next = number_line(buf, n, *p, &size);
    if (next < 0 || size < 0 || size > n - next || n - next - size < 2) return 0;
    *s = buf + next;
    *len = (Py_ssize_t)size;
    *p = next + (Py_ssize_t)size + 2;
    return 1;
}

/* The count "<kind>N\r\n" at *p, *p moved past it; -1 if it is not one. */
static long long take_count(const char *buf, Py_ssize_t n, Py_ssize_t *p, char kind) {
    long long v;
    if (*p >= n || buf[*p] != kind) return -1;
    Py_ssize_t next = number_line(buf, n, *p, &v);
    if (next < 0 || v < 0) return -1;
    *p = next;
    return v;
}

/* xrange_summary(reply) -> (entries, last ID or None), or None if the bytes are not one whole XRANGE reply. */
static PyObject *xrange_summary(PyObject *self, PyObject *arg) {
    (void)self;
    Py_buffer view;
    if (PyObject_GetBuffer(arg, &view, PyBUF_SIMPLE) < 0) return NULL;
    const char *buf = view.buf, *id = NULL;
    Py_ssize_t n = view.len, p = 0, id_len = 0;
    long long count = take_count(buf, n, &p, '*');
    for (long long i = 0; count >= 0 && i < count; i++) {
        long long fields;
        if (take_count(buf, n, &p, '*') != 2 || !take_bulk(buf, n, &p, &id, &id_len) ||
            (fields = take_count(buf, n, &p, '*')) < 0) {
            count = -1;
            break;
        }
        const char *s;
        Py_ssize_t len;
        for (long long f = 0; f < fields; f++) {
            if (!take_bulk(buf, n, &p, &s, &len)) {
                count = -1;
                break;
            }
        }
    }
    PyObject *out;
    if (count < 0 || p != n)
        out = Py_NewRef(Py_None);
    else if (id == NULL)
        out = Py_BuildValue("LO", count, Py_None);
    else
        out = Py_BuildValue("Ly#", count, id, id_len);
    PyBuffer_Release(&view);
    return out;
}

static PyMethodDef methods[] = {
    {"pack_bytes", pack_bytes, METH_O, "A command of bytes arguments as RESP, or None if one is not bytes."},
    {"reply_scan", reply_scan, METH_VARARGS, "Walks a RESP reply in a buffer; see _resp.c."},
    {"xrange_summary", xrange_summary, METH_O, "(entries, last ID) of an XRANGE reply's RESP, or None."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_resp", NULL, -1, methods};

PyMODINIT_FUNC PyInit__resp(void) { return PyModule_Create(&module); }
