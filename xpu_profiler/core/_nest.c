/*
 * nested(start, end, order, max_depth) -> bool: whether intervals nest as brackets do, at most
 * max_depth deep: ``intervals._nested``'s answer from one walk with a stack of the open
 * intervals, where the numpy version sorts the 2n starts and ends and pairs them by depth.
 *
 * ``order`` visits the intervals by start, longer first at equal starts (its ``opened``
 * order); start, end and order are int64 buffers of one length, every end >= its start (the
 * caller checks). The times' order is the numpy version's: at one time, the ends of intervals
 * of non-zero length come before the starts, which come before the ends of zero-length ones;
 * of ends at one time and of one kind, the later-opened first.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>

/* whether an end (e, zero-length or not) comes before a start at s */
static inline int ends_before(int64_t e, int zero, int64_t s) { return e < s || (e == s && !zero); }

static int walk(const int64_t *start, const int64_t *end, const int64_t *order, Py_ssize_t n, Py_ssize_t max_depth) {
    Py_ssize_t cap = (max_depth < n ? max_depth : n) + 1, depth = 0;
    int64_t *ends = malloc((size_t)cap * sizeof(int64_t));
    unsigned char *zero = malloc((size_t)cap);
    if (!ends || !zero) {
        free(ends);
        free(zero);
        return -1;
    }
    int ok = 1;
    for (Py_ssize_t k = 0; k < n && ok; k++) {
        int64_t i = order[k];
        if (i < 0 || i >= n) {
            ok = -2;
            break;
        }
        int64_t s = start[i], e = end[i];
        int z = e == s;
        while (depth && ends_before(ends[depth - 1], zero[depth - 1], s)) depth--; /* closed before it opens */
        if (depth) { /* it must close before the innermost open one: by time, then kind; at a tie it was opened later */
            int64_t te = ends[depth - 1];
            int tz = zero[depth - 1];
            if (!(e < te || (e == te && (!z || tz)))) ok = 0;
        }
        if (depth >= cap - 1) ok = 0; /* deeper than max_depth */
        ends[depth] = e;
        zero[depth] = (unsigned char)z;
        depth++;
    }
    free(ends);
    free(zero);
    return ok;
}

static PyObject *nested(PyObject *self, PyObject *args) {
    Py_buffer s, e, o;
    Py_ssize_t max_depth;
    if (!PyArg_ParseTuple(args, "y*y*y*n", &s, &e, &o, &max_depth)) return NULL;
    Py_ssize_t n = s.len / (Py_ssize_t)sizeof(int64_t);
    int ok = -2;
    if (s.len == e.len && s.len == o.len && s.len % (Py_ssize_t)sizeof(int64_t) == 0 && max_depth >= 0) {
        Py_BEGIN_ALLOW_THREADS;
        ok = walk((const int64_t *)s.buf, (const int64_t *)e.buf, (const int64_t *)o.buf, n, max_depth);
        Py_END_ALLOW_THREADS;
    }
    PyBuffer_Release(&s);
    PyBuffer_Release(&e);
    PyBuffer_Release(&o);
    if (ok == -1) return PyErr_NoMemory();
    if (ok == -2) {
        PyErr_SetString(PyExc_ValueError, "nested: three int64 buffers of one length, indices in range");
        return NULL;
    }
    return PyBool_FromLong(ok);
}

static PyMethodDef METHODS[] = {
    {"nested", nested, METH_VARARGS, "Whether intervals visited in opened order nest, at most max_depth deep."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef MODULE = {PyModuleDef_HEAD_INIT, "_nest", "Interval nesting in C.", -1, METHODS,
                                    NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__nest(void) { return PyModule_Create(&MODULE); }
