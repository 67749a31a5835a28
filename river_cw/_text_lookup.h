/* The fused text path of the compiled diagonal engine (included by _diagonal.c).
 *
 * Diagonal.text_counts(text, lowercase, stop_words) returns the dict {token: count} that
 * river_cw.text.BagOfWords(lowercase=lowercase, stop_words=stop_words) returns for an ASCII
 * `text` with its other options at their defaults (the same tokens, counts and order: the
 * tokens are counted by rcw_count_ascii, _text_count.h), and None when it cannot promise that
 * (`text` is not an exact str of ASCII characters: the caller then takes BagOfWords' path).
 *
 * What is new is where the keys come from: a token that is already a feature of the engine is
 * given as the key object stored in the engine's table, found by CPython's hash of a str (for
 * ASCII text, _Py_HashBytes of its bytes: the hash the table stores; a cached str's own hash
 * when _text_count.h's key cache holds the token) and a comparison of the key's ASCII
 * characters (the entry's copy of a short key's), so no str object is created for it, and
 * margin(), update() and learn() then find it by identity. Only a token the engine has never
 * learned gets a new str. A key found or not changes no number: the dict is equal to
 * BagOfWords' either way.
 */
#ifndef RIVER_CW_TEXT_LOOKUP_H
#define RIVER_CW_TEXT_LOOKUP_H

#include "_text_count.h"

/* The stored str key of the ASCII token tok[0:length], whose str hash is `hash`, in any block
 * (borrowed), or NULL. */
static PyObject *text_stored_key(Diagonal *self, const unsigned char *tok, size_t length,
                                 Py_hash_t hash)
{
    for (Py_ssize_t b = 0; b < self->blocks.n; b++) {
        Table *t = &self->blocks.table[b];
        size_t mask = (size_t)t->mask, i = (size_t)hash & mask, perturb = (size_t)hash;
        for (;;) {
            int32_t ix = t->index[i];
            if (ix < 0)
                break;
            Entry *e = &t->entries[ix];
            if (e->hash == hash &&
                (e->short_key[0] != NOT_SHORT
                     ? short_key_is(e, tok, length)
                     : PyUnicode_CheckExact(e->key) && PyUnicode_IS_ASCII(e->key) &&
                           (size_t)PyUnicode_GET_LENGTH(e->key) == length &&
                           memcmp(PyUnicode_1BYTE_DATA(e->key), tok, length) == 0))
                return e->key;
            perturb >>= PERTURB_SHIFT;
            i = (i * 5 + perturb + 1) & mask;
        }
    }
    return NULL;
}

/* A new reference to the key of the ASCII token tok[0:length] (rcw_hash_bytes h): the engine's
 * own key when the token is a feature, else a new str. The cache of _text_count.h spares the
 * hash: a cached str carries its hash (CPython's, computed once), and when the engine holds the
 * same token under another object (a model loaded from a pickle), the cache takes the engine's. */
static PyObject *text_key(Diagonal *self, const unsigned char *tok, size_t length, uint64_t h)
{
    int hit;
    PyObject **slot = rcw_key_slot(tok, length, h, &hit), *stored, *key;
    Py_hash_t hash;
    if (hit) {
        hash = ((PyASCIIObject *)*slot)->hash; /* a str caches its hash (-1: not yet) */
        if (hash == -1 && (hash = PyObject_Hash(*slot)) == -1)
            return NULL;
        stored = text_stored_key(self, tok, length, hash);
        if (stored != NULL && stored != *slot)
            Py_XSETREF(*slot, Py_NewRef(stored));
        return Py_NewRef(*slot);
    }
    hash = _Py_HashBytes(tok, (Py_ssize_t)length); /* CPython's hash of an ASCII str */
    if (hash == -1)
        hash = -2;
    stored = text_stored_key(self, tok, length, hash);
    if ((key = stored ? Py_NewRef(stored) : rcw_new_key(tok, length)) != NULL && slot)
        Py_XSETREF(*slot, Py_NewRef(key));
    return key;
}

/* {t: n for t, n in counts.items() if t not in stop_words}, as BagOfWords filters; steals the
 * reference to counts */
static PyObject *text_without(PyObject *counts, PyObject *stop_words)
{
    PyObject *kept = PyDict_New(), *items = PyDict_Items(counts);
    Py_ssize_t i;
    Py_DECREF(counts);
    if (kept == NULL || items == NULL)
        goto fail;
    for (i = 0; i < PyList_GET_SIZE(items); i++) {
        PyObject *item = PyList_GET_ITEM(items, i);
        int stop = PySequence_Contains(stop_words, PyTuple_GET_ITEM(item, 0));
        if (stop < 0 ||
            (!stop && PyDict_SetItem(kept, PyTuple_GET_ITEM(item, 0), PyTuple_GET_ITEM(item, 1)) < 0))
            goto fail;
    }
    Py_DECREF(items);
    return kept;
fail:
    Py_XDECREF(items);
    Py_XDECREF(kept);
    return NULL;
}

/* text_counts(text, lowercase, stop_words) -> dict | None (see the top of this file) */
static PyObject *diagonal_text_counts(Diagonal *self, PyObject *const *args, Py_ssize_t nargs)
{
    PyObject *text, *counts;
    int lower;
    size_t k;
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "text_counts(text, lowercase, stop_words)");
        return NULL;
    }
    text = args[0];
    if ((lower = PyObject_IsTrue(args[1])) < 0)
        return NULL;
    if (!PyUnicode_CheckExact(text))
        Py_RETURN_NONE;
#if PY_VERSION_HEX < 0x030C0000
    if (PyUnicode_READY(text) < 0)
        return NULL;
#endif
    if (!PyUnicode_IS_ASCII(text))
        Py_RETURN_NONE;
    if (rcw_count_ascii(PyUnicode_1BYTE_DATA(text), (size_t)PyUnicode_GET_LENGTH(text), lower) < 0)
        return NULL;
    if ((counts = PyDict_New()) == NULL)
        return NULL;
    /* no Python code runs in this loop (every key is an exact str): the scratch space and the
     * borrowed keys stay valid */
    for (k = 0; k < rcw_count.distinct; k++) {
        const RcwSlot *slot = rcw_count_slot(k);
        const unsigned char *tok = rcw_count.text + slot->start;
        PyObject *key = text_key(self, tok, slot->length, slot->hash), *value;
        int rc;
        if (key == NULL)
            goto fail;
        if ((value = PyLong_FromSsize_t(slot->count)) == NULL) {
            Py_DECREF(key);
            goto fail;
        }
        rc = PyDict_SetItem(counts, key, value);
        Py_DECREF(key);
        Py_DECREF(value);
        if (rc < 0)
            goto fail;
    }
    return args[2] == Py_None ? counts : text_without(counts, args[2]);
fail:
    Py_DECREF(counts);
    return NULL;
}

#endif
