/* river_cw._text: river's BagOfWords token counts, in C.
 *
 * count_ascii(text, lowercase) returns the dict {token: count} that river's
 * feature_extraction.BagOfWords(lowercase=lowercase) returns for `text` with its other options at
 * their defaults (strip_accents is the identity on ASCII text), keys in first-occurrence order as
 * collections.Counter gives them. It returns None when it cannot promise that: `text` is not an
 * exact str, or holds a character outside ASCII.
 *
 * count_preprocessed(text) returns the same dict for any str that river's preprocessing
 * (strip_accents_unicode, str.lower) has already been applied to, classifying characters as the
 * re module does; None when `text` is not an exact str.
 *
 * The tokens are counted by rcw_count_ascii (_text_count.h, over _text_scan.h's scanner), so a
 * key is needed only once per distinct token; keys of short tokens come from its cache of str
 * objects, so a frequent word is one str, its hash computed once, in every dict.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#include "_text_count.h"

static PyObject *one = NULL; /* the int 1 */

/* A new reference to the str of the ASCII token tok[0:length] whose rcw_hash_bytes is h: the
 * cached one (_text_count.h), else a new str, cached when short. */
static PyObject *ascii_key(const unsigned char *tok, size_t length, uint64_t h)
{
    int hit;
    PyObject **slot = rcw_key_slot(tok, length, h, &hit), *key;
    if (hit)
        return Py_NewRef(*slot);
    if ((key = rcw_new_key(tok, length)) != NULL && slot)
        Py_XSETREF(*slot, Py_NewRef(key));
    return key;
}

/* 1 when text is an exact str ready to read, 0 when it is not an exact str, -1 on error. */
static int exact_str(PyObject *text)
{
    if (!PyUnicode_CheckExact(text))
        return 0;
#if PY_VERSION_HEX < 0x030C0000
    if (PyUnicode_READY(text) < 0)
        return -1;
#endif
    return 1;
}

static PyObject *count_ascii(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "count_ascii(text, lowercase) takes two arguments");
        return NULL;
    }
    PyObject *text = args[0];
    int lower = PyObject_IsTrue(args[1]);
    if (lower < 0)
        return NULL;
    int is_str = exact_str(text);
    if (is_str < 0)
        return NULL;
    if (!is_str || !PyUnicode_IS_ASCII(text))
        Py_RETURN_NONE;

    if (rcw_count_ascii(PyUnicode_1BYTE_DATA(text), (size_t)PyUnicode_GET_LENGTH(text), lower) < 0)
        return NULL;

    PyObject *counts = PyDict_New();
    if (!counts)
        return NULL;
    for (size_t k = 0; k < rcw_count.distinct; k++) {
        const RcwSlot *slot = rcw_count_slot(k);
        PyObject *key = ascii_key(rcw_count.text + slot->start, slot->length, slot->hash);
        if (!key)
            goto fail;
        PyObject *value = PyLong_FromSsize_t(slot->count);
        if (!value) {
            Py_DECREF(key);
            goto fail;
        }
        int rc = PyDict_SetItem(counts, key, value);
        Py_DECREF(key);
        Py_DECREF(value);
        if (rc < 0)
            goto fail;
    }
    return counts;
fail:
    Py_DECREF(counts);
    return NULL;
}

typedef struct {
    PyObject *text;
    PyObject *counts;
} DictCounter;

static int count_in_dict(void *ctx, size_t start, size_t length)
{
    DictCounter *c = (DictCounter *)ctx;
    PyObject *key = PyUnicode_Substring(c->text, (Py_ssize_t)start, (Py_ssize_t)(start + length));
    if (!key)
        return -1;
    PyObject *old = PyDict_GetItemWithError(c->counts, key); /* borrowed */
    PyObject *value = old ? PyNumber_Add(old, one) : NULL;
    if (!old && !PyErr_Occurred()) {
        value = one;
        Py_INCREF(value);
    }
    int rc = value ? PyDict_SetItem(c->counts, key, value) : -1;
    Py_DECREF(key);
    Py_XDECREF(value);
    return rc;
}

static PyObject *count_preprocessed(PyObject *self, PyObject *text)
{
    int is_str = exact_str(text);
    if (is_str <= 0)
        return is_str < 0 ? NULL : Py_NewRef(Py_None);
    size_t n = (size_t)PyUnicode_GET_LENGTH(text);
    if (PyUnicode_IS_ASCII(text)) {
        PyObject *args[2] = {text, Py_False};
        return count_ascii(self, args, 2);
    }
    DictCounter c = {text, PyDict_New()};
    if (!c.counts)
        return NULL;
    if (rcw_scan(PyUnicode_KIND(text), PyUnicode_DATA(text), n, count_in_dict, &c)) {
        Py_DECREF(c.counts);
        return NULL;
    }
    return c.counts;
}

static PyMethodDef methods[] = {
    {"count_preprocessed", count_preprocessed, METH_O,
     "count_preprocessed(text) -> dict | None: river BagOfWords token counts of a str that "
     "river's preprocessing was applied to, None when the text is not an exact str."},
    {"count_ascii", (PyCFunction)(void (*)(void))count_ascii, METH_FASTCALL,
     "count_ascii(text, lowercase) -> dict | None: river BagOfWords token counts of ASCII text, "
     "None when the text is not an exact str of ASCII characters."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "river_cw._text",
    "river's BagOfWords token counts for ASCII text, in C.", -1, methods,
};

PyMODINIT_FUNC PyInit__text(void)
{
    one = PyLong_FromLong(1);
    return one ? PyModule_Create(&module) : NULL;
}
