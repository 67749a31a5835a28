/* river_cw._engines._text: river's BagOfWords token counts, in C.
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
#include "_token_counts.h"

/* A new reference to the str of the ASCII token tok[0:length] whose hash is h: the
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

/* A new reference to the str of rcw_count's k-th distinct token; an ASCII text's (`ascii`) from
 * the cache of str objects. */
static PyObject *token_key(size_t k, int ascii)
{
    const RcwSlot *slot = rcw_count_slot(k);
    const unsigned char *tok = rcw_count.text + slot->start * rcw_count.kind;
    if (ascii)
        return ascii_key(tok, slot->length, slot->hash);
    return PyUnicode_FromKindAndData(rcw_count.kind, tok, (Py_ssize_t)slot->length);
}

/* The dict {token: count} of n (token, count) pairs (borrowed), in their order. */
static PyObject *dict_of_pairs(PyObject *const *pairs, Py_ssize_t n)
{
    /* sized for its keys at once: it never resizes as it fills (_PyDict_NewPresized, in
     * cpython/dictobject.h from 3.10 to 3.13) */
    PyObject *counts = _PyDict_NewPresized(n);
    if (!counts)
        return NULL;
    for (Py_ssize_t i = 0; i < n; i++)
        if (PyDict_SetItem(counts, pairs[2 * i], pairs[2 * i + 1]) < 0) {
            Py_DECREF(counts);
            return NULL;
        }
    return counts;
}

/* ---------------------------------------------------------------------------------------- */
/* TokenCounts: the pairs of the tokens rcw_count holds (_token_counts.h)                      */

static void token_counts_dealloc(RcwTokenCounts *self)
{
    for (Py_ssize_t i = 0; i < 2 * Py_SIZE(self); i++)
        Py_XDECREF(self->pairs[i]);
    Py_XDECREF(self->as_dict);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static Py_ssize_t token_counts_length(RcwTokenCounts *self) { return Py_SIZE(self); }

/* as_dict(): the dict {token: count}, count()'s; one dict per TokenCounts, not to be changed */
static PyObject *token_counts_as_dict(RcwTokenCounts *self, PyObject *unused)
{
    if (!self->as_dict && !(self->as_dict = dict_of_pairs(self->pairs, Py_SIZE(self))))
        return NULL;
    return Py_NewRef(self->as_dict);
}

static PyMethodDef token_counts_methods[] = {
    {"as_dict", (PyCFunction)token_counts_as_dict, METH_NOARGS,
     "as_dict() -> dict: {token: count}, count()'s dict; the same dict at each call, not to be "
     "changed."},
    {NULL, NULL, 0, NULL},
};

static PySequenceMethods token_counts_as_sequence = {.sq_length = (lenfunc)token_counts_length};

static PyTypeObject TokenCountsType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "river_cw._engines._text.TokenCounts",
    .tp_doc = "A text's token counts as count() gives them, without the dict: the compiled "
              "engines read its (token, count) pairs in count()'s order; as_dict() is the dict.",
    .tp_basicsize = offsetof(RcwTokenCounts, pairs),
    .tp_itemsize = 2 * sizeof(PyObject *),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_dealloc = (destructor)token_counts_dealloc,
    .tp_as_sequence = &token_counts_as_sequence,
    .tp_methods = token_counts_methods,
};

/* The TokenCounts of the tokens rcw_count holds (`ascii`: of an ASCII text). */
static PyObject *token_counts(int ascii)
{
    Py_ssize_t n = (Py_ssize_t)rcw_count.distinct;
    RcwTokenCounts *counts = PyObject_NewVar(RcwTokenCounts, &TokenCountsType, n);
    if (!counts)
        return NULL;
    counts->as_dict = NULL;
    memset(counts->pairs, 0, 2 * (size_t)n * sizeof(PyObject *)); /* dealloc'able at any point */
    for (Py_ssize_t k = 0; k < n; k++) {
        PyObject *key = token_key((size_t)k, ascii), *value;
        if (!key || !(value = PyLong_FromSsize_t(rcw_count_slot((size_t)k)->count))) {
            Py_XDECREF(key);
            Py_DECREF(counts);
            return NULL;
        }
        counts->pairs[2 * k] = key;
        counts->pairs[2 * k + 1] = value;
    }
    return (PyObject *)counts;
}

/* ---------------------------------------------------------------------------------------- */

/* The dict {token: count} of the tokens rcw_count holds (`ascii`: of an ASCII text) */
static PyObject *counts_dict(int ascii)
{
    PyObject *counts = _PyDict_NewPresized((Py_ssize_t)rcw_count.distinct); /* see dict_of_pairs */
    if (!counts)
        return NULL;
    for (size_t k = 0; k < rcw_count.distinct; k++) {
        PyObject *key = token_key(k, ascii), *value = NULL;
        int rc = key && (value = PyLong_FromSsize_t(rcw_count_slot(k)->count))
                     ? PyDict_SetItem(counts, key, value)
                     : -1;
        Py_XDECREF(key);
        Py_XDECREF(value);
        if (rc < 0) {
            Py_DECREF(counts);
            return NULL;
        }
    }
    return counts;
}

/* The counts of the tokens rcw_count holds (`ascii`: of an ASCII text): a dict, or with
 * `as_pairs` a TokenCounts. */
static PyObject *counted(int ascii, int as_pairs)
{
    return as_pairs ? token_counts(ascii) : counts_dict(ascii);
}

/* The counts of an exact str of ASCII characters, lowercased first when `lower`. */
static PyObject *count_ascii(PyObject *text, int lower, int as_pairs)
{
    if (rcw_count_ascii(PyUnicode_1BYTE_DATA(text), (size_t)PyUnicode_GET_LENGTH(text), lower) < 0)
        return NULL;
    return counted(1, as_pairs);
}

/* The counts of an exact str that river's preprocessing was applied to. */
static PyObject *count_preprocessed(PyObject *text, int as_pairs)
{
    if (PyUnicode_IS_ASCII(text))
        return count_ascii(text, 0, as_pairs);
    if (rcw_count_text(PyUnicode_KIND(text), PyUnicode_DATA(text),
                       (size_t)PyUnicode_GET_LENGTH(text)) < 0)
        return NULL;
    return counted(0, as_pairs);
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
        PyErr_SetString(PyExc_RuntimeError, "river_cw._engines._text: unicodedata's functions are not "
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

/* count() and count_tokens(): the counts of args = (text, lowercase, strip_accents), a dict or
 * (`as_pairs`) a TokenCounts; None when text is not an exact str */
static PyObject *count_text(PyObject *const *args, Py_ssize_t nargs, int as_pairs)
{
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, as_pairs ? "count_tokens(text, lowercase, strip_accents)"
                                                  : "count(text, lowercase, strip_accents)");
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
        return count_ascii(text, lower, as_pairs);
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
    counts = count_preprocessed(lowered, as_pairs);
    Py_DECREF(lowered);
    return counts;
}

static PyObject *count(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    return count_text(args, nargs, 0);
}

static PyObject *count_tokens(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    return count_text(args, nargs, 1);
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
    {"count_tokens", (PyCFunction)(void (*)(void))count_tokens, METH_FASTCALL,
     "count_tokens(text, lowercase, strip_accents) -> TokenCounts | None: count()'s counts "
     "without the dict, for the compiled engines (TokenCounts.as_dict() is count()'s dict)."},
    {"strip_accents", strip_accents, METH_O,
     "strip_accents(text) -> str: river's strip_accents_unicode of an exact str."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "river_cw._engines._text", "river's BagOfWords token counts, in C.", -1, methods,
};

PyMODINIT_FUNC PyInit__text(void)
{
    PyObject *m;
    rcw_ascii_tables();
    if (PyType_Ready(&TokenCountsType) < 0 || !(nfkd = PyUnicode_InternFromString("NFKD")) ||
        !(m = PyModule_Create(&module)))
        return NULL;
    if (PyModule_AddObjectRef(m, "TokenCounts", (PyObject *)&TokenCountsType) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
