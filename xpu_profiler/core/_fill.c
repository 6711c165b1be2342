/*
 * fill(fmt, values) -> bytes | None: ``fmt % tuple(values)`` for templates of %d (int values
 * that fit 64 bits), %s (bytes values) and %%, in two passes over the template (its length,
 * then the text) with no Python object per value. Anything else (another conversion, a value
 * of another type, too few or too many values) returns None and the caller uses Python's own
 * ``%``, which is the reference: the same bytes, or its error.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static const char PAIRS[] =
    "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
    "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
    "8081828384858687888990919293949596979899";

/* how many bytes v takes in decimal (its sign included) */
static int width(long long v) {
    unsigned long long u = v < 0 ? 0ULL - (unsigned long long)v : (unsigned long long)v;
    int n = 1;
    while (u >= 10) {
        u /= 10;
        n++;
    }
    return n + (v < 0);
}

/* v in decimal ending at end (width(v) bytes before it), two digits a step */
static void decimal(long long v, char *end) {
    unsigned long long u = v < 0 ? 0ULL - (unsigned long long)v : (unsigned long long)v;
    char *p = end;
    while (u >= 100) {
        unsigned r = (unsigned)(u % 100);
        u /= 100;
        *--p = PAIRS[2 * r + 1];
        *--p = PAIRS[2 * r];
    }
    if (u >= 10) {
        *--p = PAIRS[2 * u + 1];
        *--p = PAIRS[2 * u];
    } else {
        *--p = (char)('0' + u);
    }
    if (v < 0) *--p = '-';
}

static PyObject *fill(PyObject *self, PyObject *args) {
    (void)self;
    Py_buffer fmt;
    PyObject *seq;
    if (!PyArg_ParseTuple(args, "y*O", &fmt, &seq)) return NULL;
    PyObject *fast = PySequence_Fast(seq, "values must be a sequence");
    if (!fast) {
        PyBuffer_Release(&fmt);
        return NULL;
    }
    Py_ssize_t n = PySequence_Fast_GET_SIZE(fast);
    PyObject **items = PySequence_Fast_ITEMS(fast);
    const char *f = (const char *)fmt.buf;
    Py_ssize_t len = fmt.len;
    long long *ints = n ? malloc((size_t)n * sizeof(long long)) : NULL;
    PyObject *result = NULL;
    if (n && !ints) {
        PyErr_NoMemory();
        goto done;
    }
    /* pass 1: check every conversion and value, and count the text's bytes */
    Py_ssize_t size = 0, k = 0;
    for (Py_ssize_t i = 0; i < len; i++) {
        const char *pct = memchr(f + i, '%', (size_t)(len - i)); /* the literal run, at once */
        if (!pct) {
            size += len - i;
            break;
        }
        size += (pct - f) - i;
        i = pct - f;
        if (++i >= len) goto decline;
        char c = f[i];
        if (c == '%') {
            size++;
        } else if (c == 'd') {
            if (k >= n || !PyLong_CheckExact(items[k])) goto decline;
            int overflow = 0;
            long long v = PyLong_AsLongLongAndOverflow(items[k], &overflow);
            if (overflow || (v == -1 && PyErr_Occurred())) {
                PyErr_Clear();
                goto decline;
            }
            ints[k++] = v;
            size += width(v);
        } else if (c == 's') {
            if (k >= n || !PyBytes_CheckExact(items[k])) goto decline;
            size += PyBytes_GET_SIZE(items[k]);
            k++;
        } else {
            goto decline;
        }
    }
    if (k != n) goto decline;
    /* pass 2: the text */
    result = PyBytes_FromStringAndSize(NULL, size);
    if (!result) goto done;
    char *o = PyBytes_AS_STRING(result);
    k = 0;
    for (Py_ssize_t i = 0; i < len; i++) {
        const char *pct = memchr(f + i, '%', (size_t)(len - i));
        size_t run = pct ? (size_t)((pct - f) - i) : (size_t)(len - i);
        memcpy(o, f + i, run);
        o += run;
        if (!pct) break;
        i = pct - f;
        char c = f[++i];
        if (c == '%') {
            *o++ = '%';
        } else if (c == 'd') {
            long long v = ints[k++];
            o += width(v);
            decimal(v, o);
        } else {
            Py_ssize_t m = PyBytes_GET_SIZE(items[k]);
            memcpy(o, PyBytes_AS_STRING(items[k]), (size_t)m);
            o += m;
            k++;
        }
    }
    goto done;
decline:
    result = Py_None;
    Py_INCREF(result);
done:
    free(ints);
    Py_DECREF(fast);
    PyBuffer_Release(&fmt);
    return result;
}

static PyMethodDef METHODS[] = {
    {"fill", fill, METH_VARARGS,
     "fill(fmt, values) -> bytes | None: fmt % tuple(values) for %d (ints), %s (bytes) and %%; None "
     "where Python's own % must do it."},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef MODULE = {PyModuleDef_HEAD_INIT, "_fill", "Template filling in C.", -1, METHODS,
                                    NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__fill(void) { return PyModule_Create(&MODULE); }
