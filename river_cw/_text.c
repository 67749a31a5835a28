/* river_cw._text: river's BagOfWords token counts, in C.
 *
 * count(text, lowercase, strip_accents) returns the dict {token: count} that river's
 * feature_extraction.BagOfWords(lowercase=lowercase, strip_accents=strip_accents) returns for
 * `text` with its other options at their defaults, keys in first-occurrence order as
 * collections.Counter gives them; None when `text` is not an exact str (river's code then runs).
 * ASCII text (which river's accent stripping leaves as it is) is lowercased and counted at once.
 * Other text goes through river's preprocessing done in C: strip_accents_unicode (NFKD, by the
 * unicodedata module's C code, then every combining character dropped), str.lower, and its
 * tokens are found with the character classes of Python's re module.
 *
 * strip_accents(text) is river's strip_accents_unicode(text) for an exact str.
 *
 * Tokens are counted by _text_count.h (ASCII text in one pass that lowercases, finds and hashes
 * its tokens; other text by _text_scan.h's scanner), so a key is needed only once per distinct
 * token; keys of short ASCII tokens come from its cache of str objects, so a frequent word is
 * one str, its hash computed once, in every dict.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#include "_text_count.h"

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

/* The dict {token: count} of the tokens rcw_count holds, first occurrence first; keys of an
 * ASCII text (`ascii`) from the cache of str objects. */
static PyObject *counts_dict(int ascii)
{
    /* sized for its keys at once: it never resizes as it fills (_PyDict_NewPresized, in
     * cpython/dictobject.h from 3.10 to 3.13) */
    PyObject *counts = _PyDict_NewPresized((Py_ssize_t)rcw_count.distinct);
    if (!counts)
        return NULL;
    for (size_t k = 0; k < rcw_count.distinct; k++) {
        const RcwSlot *slot = rcw_count_slot(k);
        const unsigned char *tok = rcw_count.text + slot->start * rcw_count.kind;
        PyObject *key = ascii ? ascii_key(tok, slot->length, slot->hash)
                              : PyUnicode_FromKindAndData(rcw_count.kind, tok,
                                                          (Py_ssize_t)slot->length);
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

/* The counts of an exact str of ASCII characters, lowercased first when `lower`. */
static PyObject *count_ascii(PyObject *text, int lower)
{
    if (rcw_count_ascii(PyUnicode_1BYTE_DATA(text), (size_t)PyUnicode_GET_LENGTH(text), lower) < 0)
        return NULL;
    return counts_dict(1);
}

/* The counts of an exact str that river's preprocessing was applied to. */
static PyObject *count_preprocessed(PyObject *text)
{
    if (PyUnicode_IS_ASCII(text))
        return count_ascii(text, 0);
    if (rcw_count_text(PyUnicode_KIND(text), PyUnicode_DATA(text),
                       (size_t)PyUnicode_GET_LENGTH(text)) < 0)
        return NULL;
    return counts_dict(0);
}

/* unicodedata.normalize and unicodedata.combining, handed over by river_cw.text (connect): the C
 * imports no Python module */
static PyObject *normalize = NULL, *combining = NULL, *nfkd = NULL;

/* What unicodedata.combining says of each code point, 2 bits each, filled in as characters are
 * met: 0 not asked yet, 1 not combining, 2 combining. Allocated at the first non-ASCII text. */
static unsigned char *combining_known = NULL;

/* 1 when the character is combining (unicodedata.combining(ch) != 0), 0 when not, -1 on error */
static int is_combining(Py_UCS4 ch)
{
    if (ch < 128) /* no ASCII character combines */
        return 0;
    if (!combining_known && !(combining_known = PyMem_Calloc(0x110000 / 4, 1))) {
        PyErr_NoMemory();
        return -1;
    }
    unsigned char *byte = &combining_known[ch / 4];
    int shift = (int)(ch % 4) * 2, known = (*byte >> shift) & 3;
    if (known)
        return known == 2;
    PyObject *c = PyUnicode_FromOrdinal((int)ch), *klass;
    if (!c)
        return -1;
    klass = PyObject_CallOneArg(combining, c);
    Py_DECREF(c);
    if (!klass)
        return -1;
    int nonzero = PyObject_IsTrue(klass);
    Py_DECREF(klass);
    if (nonzero < 0)
        return -1;
    *byte |= (unsigned char)((nonzero ? 2 : 1) << shift);
    return nonzero;
}

/* river's strip_accents_unicode of an exact str that is not ASCII (a new reference): NFKD, then
 * the combining characters dropped */
static PyObject *strip_non_ascii(PyObject *text)
{
    PyObject *args[2] = {nfkd, text}, *out = NULL;
    if (!normalize || !combining) {
        PyErr_SetString(PyExc_RuntimeError, "river_cw._text: unicodedata's functions are not "
                                            "connected (importing river_cw connects them)");
        return NULL;
    }
    PyObject *normal = PyObject_Vectorcall(normalize, args, 2, NULL);
    if (!normal)
        return NULL;
    Py_ssize_t n = PyUnicode_GET_LENGTH(normal), kept = 0;
    int kind = PyUnicode_KIND(normal);
    const void *data = PyUnicode_DATA(normal);
    Py_UCS4 *buffer = PyMem_Malloc((size_t)(n ? n : 1) * sizeof(Py_UCS4));
    if (!buffer) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_UCS4 ch = PyUnicode_READ(kind, data, i);
        int drop = is_combining(ch);
        if (drop < 0)
            goto done;
        if (!drop)
            buffer[kept++] = ch;
    }
    out = PyUnicode_FromKindAndData(PyUnicode_4BYTE_KIND, buffer, kept);
done:
    PyMem_Free(buffer);
    Py_DECREF(normal);
    return out;
}

static PyObject *count(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "count(text, lowercase, strip_accents)");
        return NULL;
    }
    PyObject *text = args[0];
    int lower = PyObject_IsTrue(args[1]), strip = PyObject_IsTrue(args[2]);
    int is_str = exact_str(text);
    if (lower < 0 || strip < 0 || is_str < 0)
        return NULL;
    if (!is_str)
        Py_RETURN_NONE;
    if (PyUnicode_IS_ASCII(text))
        return count_ascii(text, lower);
    PyObject *stripped = strip ? strip_non_ascii(text) : Py_NewRef(text), *lowered, *counts;
    if (!stripped)
        return NULL;
    if (!lower)
        lowered = stripped;
    else {
        lowered = PyObject_CallMethod(stripped, "lower", NULL);
        Py_DECREF(stripped);
        if (!lowered)
            return NULL;
    }
    counts = count_preprocessed(lowered);
    Py_DECREF(lowered);
    return counts;
}

static PyObject *strip_accents(PyObject *self, PyObject *text)
{
    int is_str = exact_str(text);
    if (is_str <= 0) {
        if (!is_str)
            PyErr_SetString(PyExc_TypeError, "strip_accents takes an exact str");
        return NULL;
    }
    return PyUnicode_IS_ASCII(text) ? Py_NewRef(text) : strip_non_ascii(text);
}

static PyObject *connect(PyObject *self, PyObject *args, PyObject *kwargs)
{
    static char *names[] = {"normalize", "combining", NULL};
    PyObject *n, *c;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "$OO", names, &n, &c))
        return NULL;
    Py_XSETREF(normalize, Py_NewRef(n));
    Py_XSETREF(combining, Py_NewRef(c));
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"connect", (PyCFunction)(void (*)(void))connect, METH_VARARGS | METH_KEYWORDS,
     "connect(*, normalize, combining): unicodedata's functions, for the accent stripping."},
    {"count", (PyCFunction)(void (*)(void))count, METH_FASTCALL,
     "count(text, lowercase, strip_accents) -> dict | None: river's BagOfWords token counts of "
     "text with those options and the default tokenizer, None when text is not an exact str."},
    {"strip_accents", strip_accents, METH_O,
     "strip_accents(text) -> str: river's strip_accents_unicode of an exact str."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "river_cw._text", "river's BagOfWords token counts, in C.", -1, methods,
};

PyMODINIT_FUNC PyInit__text(void)
{
    rcw_ascii_tables();
    nfkd = PyUnicode_InternFromString("NFKD");
    if (!nfkd)
        return NULL;
    return PyModule_Create(&module);
}
