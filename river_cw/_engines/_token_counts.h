/* A text's token counts without a dict: river_cw._engines._text.TokenCounts, read by the compiled engines.
 *
 * count_tokens(text, ...) (river_cw._engines._text) returns the (token, count) pairs the dict of count()
 * holds, in its order (first occurrence first), as one object: no dict is built for a text that a
 * binary model predicts and learns, where building it cost more than the engine's work on it
 * (issue 29). The engines' lean paths (`learn_native`, `score_native`) take x if rcw_x_readable
 * and read it by rcw_x_size and the iterator rcw_x_next chooses once per loop (PyDict_Next for a
 * dict: called through its address, a loop over a dict costs what it cost before), so the
 * numbers are the dict's to the bit; anything else still needs the dict (`as_dict()`).
 *
 * river_cw._engines._text defines the type; river_cw._tokens hands it to each engine (connect, as every
 * hook: the C imports no Python module), so that its check is one pointer comparison.
 */
#ifndef RIVER_CW_TOKEN_COUNTS_H
#define RIVER_CW_TOKEN_COUNTS_H

#include <Python.h>
#include <stddef.h>

typedef struct {
    PyObject_VAR_HEAD /* ob_size: the number of pairs */
    PyObject *as_dict; /* the dict of the same pairs, once asked for; NULL before */
    PyObject *pairs[1]; /* token, count, token, count, ... (2 * ob_size references) */
} RcwTokenCounts;

/* The type, handed over by river_cw._tokens (each engine's connect(token_counts=...)); NULL
 * before, when no x is read as token counts */
static PyTypeObject *rcw_token_counts_type = NULL;

/* Hold `type` as TokenCounts': 0, or -1 with a TypeError where it has not its layout */
static inline int rcw_token_counts_connect(PyObject *type)
{
    if (!PyType_Check(type) ||
        ((PyTypeObject *)type)->tp_basicsize != offsetof(RcwTokenCounts, pairs) ||
        ((PyTypeObject *)type)->tp_itemsize != 2 * sizeof(PyObject *)) {
        PyErr_SetString(PyExc_TypeError, "token_counts must be river_cw._engines._text.TokenCounts");
        return -1;
    }
    Py_XSETREF(rcw_token_counts_type, (PyTypeObject *)Py_NewRef(type));
    return 0;
}

static inline int rcw_is_token_counts(PyObject *x) { return Py_TYPE(x) == rcw_token_counts_type; }

/* Whether a lean path reads x as it is: an exact dict, or a TokenCounts */
static inline int rcw_x_readable(PyObject *x) { return PyDict_CheckExact(x) || rcw_is_token_counts(x); }

/* The number of features of x, a dict or a TokenCounts */
static inline Py_ssize_t rcw_x_size(PyObject *x)
{
    return rcw_is_token_counts(x) ? Py_SIZE(x) : PyDict_GET_SIZE(x);
}

/* PyDict_Next for a TokenCounts: its next (key, value), borrowed; 0 at the end */
static int rcw_token_counts_next(PyObject *x, Py_ssize_t *pos, PyObject **key, PyObject **value)
{
    if (*pos >= Py_SIZE(x))
        return 0;
    *key = ((RcwTokenCounts *)x)->pairs[2 * *pos];
    *value = ((RcwTokenCounts *)x)->pairs[2 * *pos + 1];
    ++*pos;
    return 1;
}

/* The PyDict_Next of x, a dict or a TokenCounts, chosen once before a loop over x */
typedef int (*rcw_next_item)(PyObject *x, Py_ssize_t *pos, PyObject **key, PyObject **value);
static inline rcw_next_item rcw_x_next(PyObject *x)
{
    return rcw_is_token_counts(x) ? rcw_token_counts_next : PyDict_Next;
}

#endif
