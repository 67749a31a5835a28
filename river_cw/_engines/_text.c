/* river_cw._engines._text: river's BagOfWords token counts, in C.
 *
 * count(text, lowercase, strip_accents) returns the dict {token: count} that river's
 * feature_extraction.BagOfWords(lowercase=lowercase, strip_accents=strip_accents) returns for
 * `text` with its other options at their defaults, keys in first-occurrence order as
 * collections.Counter gives them; None when `text` is not an exact str (river's code then runs).
 * ASCII text (which river's accent stripping leaves as it is) is lowercased and counted at once.
 * Other text goes through river's preprocessing done in C: strip_accents_unicode (NFKD, by the
 * unicodedata module's C code, then every combining character dropped), str.lower, and its
 * tokens are found with the character classes of Python's re module; with both options (the
 * defaults) that preprocessing is applied character by character, each character's result made
 * once and kept (fold_text), unless a character strips to a capital sigma.
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
 * the cache of str objects, as is any short token of ASCII characters in another text (a word
 * next to an accented one is the str the ASCII texts hand out). */
static PyObject *token_key(size_t k, int ascii)
{
    const RcwSlot *slot = rcw_count_slot(k);
    const int kind = rcw_count.kind;
    const unsigned char *tok = rcw_count.text + slot->start * kind;
    if (ascii)
        return ascii_key(tok, slot->length, slot->hash);
    if (slot->length <= RCW_KEY_CACHE_LENGTH) {
        unsigned char bytes[RCW_KEY_CACHE_LENGTH + RCW_PAD] = {0};
        size_t i;
        for (i = 0; i < slot->length && PyUnicode_READ(kind, tok, i) < 128; i++)
            bytes[i] = (unsigned char)PyUnicode_READ(kind, tok, i);
        if (i == slot->length)
            return ascii_key(bytes, slot->length, rcw_hash_padded(bytes, slot->length));
    }
    return PyUnicode_FromKindAndData(kind, tok, (Py_ssize_t)slot->length);
}

/* Start loading the cached str objects of an ASCII text's distinct tokens (whose cache slots the
 * scan started loading), for token_key to find them: a text's words are a sample of a large
 * vocabulary, each str anywhere on the heap, read one after another otherwise. */
static RCW_ALWAYS_INLINE void prefetch_keys(void)
{
    for (size_t k = 0; k < rcw_count.distinct; k++) {
        const RcwSlot *slot = rcw_count_slot(k);
        PyObject *key;
        if (slot->length <= RCW_KEY_CACHE_LENGTH &&
            (key = rcw_key_cache[(slot->hash >> 32) & (RCW_KEY_CACHE_SIZE - 1)]) != NULL)
            RCW_PREFETCH(key);
    }
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
    if (ascii)
        prefetch_keys();
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
    if (ascii)
        prefetch_keys();
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

/* River's preprocessing with both options (accents stripped, then lowercased), code point by
 * code point. Both are a function of each character alone but for one: NFKD decomposes each
 * character by itself, then reorders runs of combining characters, which the stripping then drops
 * (whatever their order), and str.lower maps each character by itself but the capital sigma,
 * whose lowercase depends on its neighbours. So a text none of whose characters strips to a
 * capital sigma is preprocessed by mapping each character to its own stripped, lowercased
 * characters: an ASCII one by the ASCII table, another by its mapping, made once by river's own
 * functions (strip_non_ascii, str.lower) and kept. Such a text is then counted without the two
 * passes over the whole text and the two str objects they made, its tokens found as rcw_scan
 * finds them (on Enron's mails, the 3% that are not ASCII took a quarter of the counting's
 * instructions). */

/* A code point's mapping: 0 not made yet; FOLD_CONTEXT its stripped characters hold a capital
 * sigma; else its characters' position in fold_pool (high bits) and their number plus
 * FOLD_LENGTH_BASE (low FOLD_LENGTH_BITS bits). Pages of 256 code points, allocated at first
 * use. */
#define FOLD_CONTEXT 1u
#define FOLD_LENGTH_BITS 6
#define FOLD_LENGTH_BASE 2u
#define FOLD_LONGEST ((1u << FOLD_LENGTH_BITS) - 1 - FOLD_LENGTH_BASE)
static uint32_t *fold_pages[0x110000 >> 8];
static Py_UCS4 *fold_pool = NULL; /* the mappings' characters, one after another */
static size_t fold_pool_used = 0, fold_pool_cap = 0;

/* The mapping of the non-ASCII code point ch, made now where it is not yet; 0 on error. */
static uint32_t fold_of(Py_UCS4 ch)
{
    uint32_t **page = &fold_pages[ch >> 8], mapping;
    if (!*page && !(*page = PyMem_Calloc(256, sizeof(uint32_t)))) {
        PyErr_NoMemory();
        return 0;
    }
    if ((mapping = (*page)[ch & 255]) != 0)
        return mapping;
    PyObject *c = PyUnicode_FromOrdinal((int)ch), *stripped, *lowered;
    if (!c)
        return 0;
    stripped = strip_non_ascii(c);
    Py_DECREF(c);
    if (!stripped)
        return 0;
    Py_ssize_t sigma = PyUnicode_FindChar(stripped, 0x3A3, 0, PyUnicode_GET_LENGTH(stripped), 1);
    if (sigma != -1) {
        Py_DECREF(stripped);
        return sigma == -2 ? 0 : ((*page)[ch & 255] = FOLD_CONTEXT);
    }
    lowered = PyObject_CallMethod(stripped, "lower", NULL);
    Py_DECREF(stripped);
    if (!lowered)
        return 0;
    size_t n = (size_t)PyUnicode_GET_LENGTH(lowered);
    if (n > FOLD_LONGEST || fold_pool_used + n >= (1u << (32 - FOLD_LENGTH_BITS))) {
        Py_DECREF(lowered); /* longer than any mapping Unicode has: the general way */
        return (*page)[ch & 255] = FOLD_CONTEXT;
    }
    if (fold_pool_used + n > fold_pool_cap) {
        size_t cap = 2 * (fold_pool_used + n) + 64;
        Py_UCS4 *p = PyMem_Realloc(fold_pool, cap * sizeof(Py_UCS4));
        if (!p) {
            Py_DECREF(lowered);
            PyErr_NoMemory();
            return 0;
        }
        fold_pool = p;
        fold_pool_cap = cap;
    }
    for (size_t i = 0; i < n; i++)
        fold_pool[fold_pool_used + i] = PyUnicode_READ_CHAR(lowered, (Py_ssize_t)i);
    Py_DECREF(lowered);
    mapping = (uint32_t)(fold_pool_used << FOLD_LENGTH_BITS) | (uint32_t)(n + FOLD_LENGTH_BASE);
    fold_pool_used += n;
    return (*page)[ch & 255] = mapping;
}

/* The characters of an exact str that is not ASCII as river's preprocessing with both options
 * makes them, into *out (allocated here, to be freed with PyMem_Free) and *length: 1; 0 where a
 * character strips to a capital sigma (nothing allocated); -1 on error. */
static int fold_text(PyObject *text, Py_UCS4 **out, size_t *length)
{
    const int kind = PyUnicode_KIND(text);
    const void *data = PyUnicode_DATA(text);
    const size_t n = (size_t)PyUnicode_GET_LENGTH(text);
    size_t cap = n + n / 4 + 16, used = 0;
    Py_UCS4 *buffer = PyMem_Malloc(cap * sizeof(Py_UCS4));
    if (!buffer) {
        PyErr_NoMemory();
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        Py_UCS4 ch = PyUnicode_READ(kind, data, i);
        if (ch < 128) { /* NFKD and the stripping leave ASCII as it is */
            if (used == cap) {
                Py_UCS4 *p = PyMem_Realloc(buffer, 2 * cap * sizeof(Py_UCS4));
                if (!p)
                    goto no_memory;
                buffer = p;
                cap *= 2;
            }
            buffer[used++] = ch >= 'A' && ch <= 'Z' ? ch + 32 : ch;
            continue;
        }
        uint32_t mapping = fold_of(ch);
        if (mapping <= FOLD_CONTEXT) {
            PyMem_Free(buffer);
            return mapping == FOLD_CONTEXT ? 0 : -1;
        }
        size_t start = mapping >> FOLD_LENGTH_BITS,
               count = (mapping & ((1u << FOLD_LENGTH_BITS) - 1)) - FOLD_LENGTH_BASE;
        if (used + count > cap) {
            size_t bigger = 2 * (used + count);
            Py_UCS4 *p = PyMem_Realloc(buffer, bigger * sizeof(Py_UCS4));
            if (!p)
                goto no_memory;
            buffer = p;
            cap = bigger;
        }
        if (count) /* a mark that strips to nothing: the pool may not exist yet (memcpy's NULL) */
            memcpy(buffer + used, fold_pool + start, count * sizeof(Py_UCS4));
        used += count;
    }
    *out = buffer;
    *length = used;
    return 1;
no_memory:
    PyMem_Free(buffer);
    PyErr_NoMemory();
    return -1;
}

/* The counts of an exact str that is not ASCII, with both options, by code point (fold_text);
 * NULL with no error set where a character strips to a capital sigma (the general way then).
 * Where the mapped text's only characters beyond ASCII are no word characters (its accents
 * stripped, its ligatures split, a '±' or '»' left: 107 of the 126 such mails on Enron), it is
 * counted as an ASCII text is: into bytes, narrowed in place, each of those characters a space,
 * which like it separates tokens and is in none. */
static PyObject *count_folded(PyObject *text, int as_pairs)
{
    Py_UCS4 *folded;
    size_t n, i;
    int rc = fold_text(text, &folded, &n);
    if (rc <= 0)
        return NULL;
    for (i = 0; i < n && (folded[i] < 128 || !rcw_text_class_of(folded[i])); i++)
        ;
    int ascii = i == n;
    if (ascii) { /* byte i overwrites no character not yet read: character i / 4 at most */
        unsigned char *bytes = (unsigned char *)folded;
        for (i = 0; i < n; i++)
            bytes[i] = folded[i] < 128 ? (unsigned char)folded[i] : ' ';
    }
    rc = ascii ? rcw_count_ascii((unsigned char *)folded, n, 0)
               : rcw_count_text(PyUnicode_4BYTE_KIND, folded, n);
    PyObject *counts = rc < 0 ? NULL : counted(ascii, as_pairs);
    PyMem_Free(folded);
    return counts;
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
    PyObject *counts;
    if (lower && strip && ((counts = count_folded(text, as_pairs)) || PyErr_Occurred()))
        return counts;
    PyObject *stripped = strip ? strip_non_ascii(text) : Py_NewRef(text), *lowered;
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
