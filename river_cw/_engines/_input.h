/* The input layer of the compiled engines (river_cw/_engines/_diagonal.c, _arrowhead.c, _rda.c): how an
 * example reaches them and how a bad one is told apart. A feature's key hashed (key_hash) and its
 * value read (plain_value on the fast paths, value_of on the general path, as float(value)); x
 * taken as a dict (as_dict), or as a TokenCounts (_token_counts.h); the pairs of a difference
 * vector (rcw_pairs); the common case of a one-call learn_one (rcw_binary_case); which pending
 * error a fast path may hand over to the general path (rcw_error_recoverable), and the hook
 * that names a bad feature (rcw_raise_bad_input). Nothing here knows the tables (_table.h) or an
 * engine's object (_shell.h).
 */
#ifndef RIVER_CW_INPUT_H
#define RIVER_CW_INPUT_H

#include <Python.h>
#include <math.h>

#include "_token_counts.h"

/* 1 when a fast path may clear the pending error, if any, and hand the example over to the
 * engine's general path, which meets it again and raises it by itself (an ordinary Exception
 * from a key's hash or ==, or from a value); 0 for what must propagate as it is: MemoryError,
 * and what is no Exception (KeyboardInterrupt, when Ctrl-C lands in a key's __hash__ or __eq__;
 * SystemExit) */
static inline int rcw_error_recoverable(void) {
    return !PyErr_Occurred() || (PyErr_ExceptionMatches(PyExc_Exception) &&
                                 !PyErr_ExceptionMatches(PyExc_MemoryError));
}

/* The common case of the engines' one-call learn_one (Diagonal.learn_native, voted RDA's
 * Engine.learn_one), from its arguments (x, y, w, class_index): x an exact dict (or a TokenCounts,
 * _token_counts.h, in an engine that imported its type), w a float in (0, inf), a binary model
 * (one weight block) and y a known label. 1 with *w and *sign (+1 for the label
 * of index 1, the second seen; -1 for the first) when it holds; 0 when the general path must
 * judge (nothing raised); -1 with the error y's hash or == raised (a TypeError only means the
 * general path's case). */
static inline int rcw_binary_case(PyObject *const *args, Py_ssize_t nblocks, double *w,
                                  double *sign) {
    PyObject *k;
    long kv;
    if (!PyFloat_CheckExact(args[2]) || !((*w = PyFloat_AS_DOUBLE(args[2])) > 0.0) ||
        !(*w < INFINITY) || !rcw_x_readable(args[0]) || nblocks != 1)
        return 0;
    if ((k = PyDict_GetItemWithError(args[3], args[1])) == NULL) { /* new label, or unhashable */
        if (PyErr_Occurred() && !PyErr_ExceptionMatches(PyExc_TypeError)) return -1;
        PyErr_Clear();
        return 0;
    }
    if (!PyLong_CheckExact(k) || (kv = PyLong_AsLong(k)) < 0 || kv > 1) {
        PyErr_Clear();
        return 0;
    }
    *sign = kv == 1 ? 1.0 : -1.0;
    return 1;
}

/* a feature's hash, read from a str's cache where it has one; -1 with the error set */
static inline Py_hash_t key_hash(PyObject *key) {
    Py_hash_t h;
    if (PyUnicode_CheckExact(key) && (h = ((PyASCIIObject *)key)->hash) != -1) return h;
    return PyObject_Hash(key);
}

/* a feature value exactly as float(value): 0 for a float, an int within float64 or a bool; 1
 * (no error set) for anything else, which the engine's general path judges */
static inline int plain_value(PyObject *value, double *out) {
    if (PyFloat_CheckExact(value)) {
        *out = PyFloat_AS_DOUBLE(value);
        return 0;
    }
    if (PyLong_CheckExact(value)) {
#if PY_VERSION_HEX >= 0x030C0000
        if (PyUnstable_Long_IsCompact((PyLongObject *)value)) { /* exact as a double */
            *out = (double)PyUnstable_Long_CompactValue((PyLongObject *)value);
            return 0;
        }
#else
        if (Py_ABS(Py_SIZE(value)) <= 1) { /* one digit (30 bits) or zero: exact as a double */
            *out = (double)(Py_SIZE(value) * (long)((PyLongObject *)value)->ob_digit[0]);
            return 0;
        }
#endif
        *out = PyLong_AsDouble(value); /* correctly rounded, as float(int) */
        if (*out == -1.0 && PyErr_Occurred()) {
            PyErr_Clear();
            return 1;
        }
        return 0;
    }
    if (PyBool_Check(value)) {
        *out = value == Py_True ? 1.0 : 0.0;
        return 0;
    }
    return 1;
}

/* x as a dict (a new reference): dicts as they are, other mappings through .items() */
static inline PyObject *as_dict(PyObject *x) {
    PyObject *d, *items;
    if (PyDict_Check(x)) {
        Py_INCREF(x);
        return x;
    }
    items = PyObject_CallMethod(x, "items", NULL);
    if (items == NULL) return NULL;
    d = PyDict_New();
    if (d != NULL && PyDict_MergeFromSeq2(d, items, 1) < 0) Py_CLEAR(d);
    Py_DECREF(items);
    return d;
}

/* a feature value as a double, as float(value) */
static inline int value_of(PyObject *v, double *out) {
    if (PyFloat_CheckExact(v)) {
        *out = PyFloat_AS_DOUBLE(v);
        return 0;
    }
    if (PyLong_CheckExact(v)) /* correctly rounded, as float(int); OverflowError beyond */
        *out = PyLong_AsDouble(v);
    else
        *out = PyFloat_AsDouble(v);
    if (*out == -1.0 && PyErr_Occurred()) return -1;
    return 0;
}


/* a difference vector's pairs, a sequence of at most two (block, sign) over nblocks blocks (a
 * negative block counts from the end, as a list index), into block[] and sign[]: how many, or -1
 * with an error (ValueError for a block named twice: the engines read and write each pair's
 * block as its label's alone, as river_cw._engines.gaussian.check_pairs) */
static inline int rcw_pairs(PyObject *pairs, Py_ssize_t nblocks, Py_ssize_t *block, double *sign) {
    Py_ssize_t npairs, k;
    if ((pairs = PySequence_Fast(pairs, "pairs must be a sequence of (block, sign)")) == NULL)
        return -1;
    npairs = PySequence_Fast_GET_SIZE(pairs);
    if (npairs > 2) {
        PyErr_SetString(PyExc_ValueError, "at most two (block, sign) pairs");
        goto fail;
    }
    for (k = 0; k < npairs; k++) {
        Py_ssize_t b;
        long s;
        if (!PyArg_ParseTuple(PySequence_Fast_GET_ITEM(pairs, k), "nl", &b, &s)) goto fail;
        if (b < 0) b += nblocks;
        if (b < 0 || b >= nblocks) {
            PyErr_SetString(PyExc_IndexError, "list index out of range");
            goto fail;
        }
        if (k == 1 && b == block[0]) {
            PyErr_Format(PyExc_ValueError,
                         "the pairs name block %zd twice: a difference vector spans the blocks "
                         "of distinct labels",
                         b);
            goto fail;
        }
        block[k] = b;
        sign[k] = (double)s;
    }
    Py_DECREF(pairs);
    return (int)npairs;
fail:
    Py_DECREF(pairs);
    return -1;
}

/* an engine's raise_bad_input hook called on x: it raises the error naming x's bad feature (or
 * reporting the overflow); NULL with that error, or with a RuntimeError naming `engine` when the
 * hook is not connected */
static inline PyObject *rcw_raise_bad_input(PyObject *hook, const char *engine, PyObject *x) {
    PyObject *r;
    if (hook == NULL) {
        PyErr_Format(PyExc_RuntimeError,
                     "%s: the hook raise_bad_input is not connected (importing river_cw connects "
                     "it)",
                     engine);
        return NULL;
    }
    r = PyObject_CallOneArg(hook, x);
    Py_XDECREF(r);
    if (r != NULL) PyErr_SetString(PyExc_RuntimeError, "raise_bad_input returned");
    return NULL;
}

#endif
