/* The feature table of the compiled engines (river_cw/_engines/_diagonal.c, _arrowhead.c, _rda.c), one per
 * weight block; an engine's blocks (their order and layout, Blocks) and its marks (what was
 * written since a point in time). A table is open addressing keyed by the feature object and its
 * hash, entries kept in insertion order (the order of a dict, and of the Python engines' dicts),
 * probed as CPython's dict probes. Keys compare by identity, then (for str) by length and bytes,
 * then with ==. An entry keeps a copy of a short str key's characters: a probe with an equal key
 * of another object (each example's tokens are new str objects) then reads the entry alone, never
 * the stored key object, which lies anywhere on the heap (on long streams that read cost more
 * than the rest of the lookup). How x is read (a key's hash, a value) is the input layer's
 * (_input.h).
 *
 * The includer defines RCW_ENTRY_PAYLOAD, the fields an entry carries beside its key and hash,
 * before including this header, and fills them in after `table_push`.
 */
#ifndef RIVER_CW_TABLE_H
#define RIVER_CW_TABLE_H

#include <Python.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "_inline.h"
#include "_token_counts.h"

#ifndef RCW_ENTRY_PAYLOAD
#error "define RCW_ENTRY_PAYLOAD (the fields of an entry) before including _table.h"
#endif

#define SHORT_KEY 15        /* the longest str key an entry copies */
#define NOT_SHORT UINT8_MAX /* short_key[0] of an entry whose key it does not copy */

/* an entry's numbers as one struct, as a mark copies and compares them */
typedef struct {
    RCW_ENTRY_PAYLOAD
} Payload;

typedef struct {
    PyObject *key;
    Py_hash_t hash;
    /* a key that is exactly a compact ASCII str of at most SHORT_KEY characters: its length,
     * then its characters, zero-padded; any other key: NOT_SHORT */
    uint8_t short_key[SHORT_KEY + 1];
    union { /* the payload's fields by name (e->mean), or all of them (e->payload) */
        struct {
            RCW_ENTRY_PAYLOAD
        };
        Payload payload;
    };
} Entry;

/* *buf (room for *cap items of `size` bytes) grown, where it is smaller, to room for n + n / 2 + 8
 * items; 0, or -1 (MemoryError raised, *buf as it was) */
static int rcw_grow(void **buf, Py_ssize_t *cap, Py_ssize_t n, size_t size) {
    void *p;
    Py_ssize_t c;
    if (n <= *cap) return 0;
    c = n + n / 2 + 8;
    if ((p = PyMem_Realloc(*buf, size * c)) == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    *buf = p;
    *cap = c;
    return 0;
}

typedef struct {
    int32_t *index; /* -1: empty; else the entry's position */
    Entry *entries;
    Py_ssize_t mask; /* index size - 1 (a power of two) */
    Py_ssize_t used, cap;
    long long id; /* names the block in layout snapshots */
    /* a mark (see "marks" below): of the first `tracked` entries, their payload then (`shadow`)
     * and which were written since (`touched` per entry, `written` the list of them); tracked 0:
     * no mark */
    Payload *shadow;
    uint8_t *touched;
    Py_ssize_t *written;
    Py_ssize_t tracked, nwritten;
} Table;

/* an entry of t is written: noted if a mark tracks it (one comparison when none does) */
static RCW_ALWAYS_INLINE void table_note(Table *t, Py_ssize_t ix) {
    if (ix < t->tracked && !t->touched[ix]) {
        t->touched[ix] = 1;
        t->written[t->nwritten++] = ix;
    }
}

/* t's mark dropped */
static void table_unmark(Table *t) {
    PyMem_Free(t->shadow);
    PyMem_Free(t->touched);
    PyMem_Free(t->written);
    t->shadow = NULL;
    t->touched = NULL;
    t->written = NULL;
    t->tracked = t->nwritten = 0;
}

#define PERTURB_SHIFT 5

static int table_init(Table *t) {
    Py_ssize_t size = 8;
    t->index = PyMem_Malloc(sizeof(int32_t) * size);
    t->entries = PyMem_Malloc(sizeof(Entry) * 5);
    if (t->index == NULL || t->entries == NULL) {
        PyMem_Free(t->index);
        PyMem_Free(t->entries);
        t->index = NULL;
        t->entries = NULL;
        PyErr_NoMemory();
        return -1;
    }
    memset(t->index, 0xff, sizeof(int32_t) * size);
    t->mask = size - 1;
    t->used = 0;
    t->cap = 5;
    t->shadow = NULL;
    t->touched = NULL;
    t->written = NULL;
    t->tracked = t->nwritten = 0;
    return 0;
}

static void table_free(Table *t) {
    Py_ssize_t i;
    if (t->entries != NULL)
        for (i = 0; i < t->used; i++) Py_CLEAR(t->entries[i].key);
    PyMem_Free(t->index);
    PyMem_Free(t->entries);
    t->index = NULL;
    t->entries = NULL;
    t->used = t->cap = 0;
    table_unmark(t);
}

/* whether the n bytes at p and q are equal, inline: words compared, the last ones overlapping
 * (the keys of a table hit are short, and equal nearly always: their hashes are) */
static inline int bytes_equal(const unsigned char *p, const unsigned char *q, size_t n) {
    uint64_t a, b;
    uint32_t c, d;
    uint16_t e, f;
    size_t i;
    if (n >= 8) {
        for (i = 0; i + 8 < n; i += 8) {
            memcpy(&a, p + i, 8);
            memcpy(&b, q + i, 8);
            if (a != b) return 0;
        }
        memcpy(&a, p + n - 8, 8);
        memcpy(&b, q + n - 8, 8);
        return a == b;
    }
    if (n >= 4) {
        memcpy(&c, p, 4);
        memcpy(&d, q, 4);
        if (c != d) return 0;
        memcpy(&c, p + n - 4, 4);
        memcpy(&d, q + n - 4, 4);
        return c == d;
    }
    if (n >= 2) {
        memcpy(&e, p, 2);
        memcpy(&f, q, 2);
        if (e != f) return 0;
        memcpy(&e, p + n - 2, 2);
        memcpy(&f, q + n - 2, 2);
        return e == f;
    }
    return n == 0 || *p == *q;
}

static RCW_ALWAYS_INLINE int keys_equal_fast(PyObject *a, PyObject *b) {
    /* 1 equal, 0 different, -1 unknown (needs ==) */
    if (a == b) return 1;
    if (PyUnicode_CheckExact(a) && PyUnicode_CheckExact(b)) {
        Py_ssize_t n = PyUnicode_GET_LENGTH(a);
        int kind;
        if (n != PyUnicode_GET_LENGTH(b)) return 0;
        if (PyUnicode_IS_COMPACT_ASCII(a) && PyUnicode_IS_COMPACT_ASCII(b))
            return bytes_equal((const unsigned char *)((PyASCIIObject *)a + 1),
                               (const unsigned char *)((PyASCIIObject *)b + 1), (size_t)n);
        kind = PyUnicode_KIND(a);
        return kind == PyUnicode_KIND(b) &&
               memcmp(PyUnicode_DATA(a), PyUnicode_DATA(b), (size_t)n * kind) == 0;
    }
    return -1;
}

/* whether key is exactly a compact ASCII str; then its characters are its data's bytes */
static RCW_ALWAYS_INLINE int ascii_key(PyObject *key) {
    return PyUnicode_CheckExact(key) && PyUnicode_IS_COMPACT_ASCII(key);
}

/* whether e, whose key is short (short_key[0] != NOT_SHORT), holds the ASCII str chars[0:n] */
static RCW_ALWAYS_INLINE int short_key_is(const Entry *e, const unsigned char *chars, size_t n) {
    return e->short_key[0] == n && bytes_equal(e->short_key + 1, chars, n);
}

/* keys_equal_fast(e->key, key), from e's copy of a short key where it has one */
static RCW_ALWAYS_INLINE int entry_key_equal_fast(const Entry *e, PyObject *key) {
    if (e->key == key) return 1;
    if (e->short_key[0] != NOT_SHORT && ascii_key(key)) /* two ASCII str: equal when their */
        return short_key_is(e, (const unsigned char *)((PyASCIIObject *)key + 1), /* chars are */
                            (size_t)PyUnicode_GET_LENGTH(key));
    return keys_equal_fast(e->key, key);
}

/* `stored == key` by Python's ==: 1, 0 or -1 (an error) */
static int keys_equal_slow(PyObject *stored, PyObject *key) {
    int eq;
    Py_INCREF(stored);
    eq = PyObject_RichCompareBool(stored, key, Py_EQ);
    Py_DECREF(stored);
    return eq;
}

/* position of `key` in t->entries, -1 when absent, -2 on error (raised by ==) */
static inline __attribute__((always_inline)) Py_ssize_t table_find(Table *t, PyObject *key,
                                                                Py_hash_t hash) {
    size_t mask = (size_t)t->mask, i = (size_t)hash & mask, perturb = (size_t)hash;
    for (;;) {
        int32_t ix = t->index[i];
        if (ix < 0) return -1;
        Entry *e = &t->entries[ix];
        if (e->hash == hash) {
            int eq = entry_key_equal_fast(e, key);
            if (eq < 0 && (eq = keys_equal_slow(e->key, key)) < 0) return -2;
            if (eq) return ix;
        }
        perturb >>= PERTURB_SHIFT;
        i = (i * 5 + perturb + 1) & mask;
    }
}

/* Start loading what table_find reads for each key of x, a TokenCounts (river_cw._text: exact
 * str keys), before a pass looks them up: the index slots of the keys whose hash is known, then
 * the entries those slots name. A text's keys are a sample of a large vocabulary, each found in a
 * line of the table no other key of the text shares: looked up one after another, each lookup
 * waited for its own misses (on Enron's mails, half of a score's time); started together, the
 * loads overlap. A key is hashed by its first lookup (a new word, whose slot is loaded then). */
static RCW_ALWAYS_INLINE void table_prefetch_tokens(const Table *t, PyObject *x) {
    PyObject *const *pairs = ((const RcwTokenCounts *)x)->pairs;
    const Py_ssize_t n = Py_SIZE(x);
    const size_t mask = (size_t)t->mask;
    Py_ssize_t i;
    for (i = 0; i < n; i++) {
        Py_hash_t h = ((PyASCIIObject *)pairs[2 * i])->hash;
        if (h != -1) RCW_PREFETCH(&t->index[(size_t)h & mask]);
    }
    for (i = 0; i < n; i++) {
        Py_hash_t h = ((PyASCIIObject *)pairs[2 * i])->hash;
        int32_t ix;
        if (h != -1 && (ix = t->index[(size_t)h & mask]) >= 0) {
            RCW_PREFETCH(&t->entries[ix].hash);
            RCW_PREFETCH(&t->entries[ix].payload);
        }
    }
}

static void index_place(int32_t *index, size_t mask, Py_hash_t hash, int32_t ix) {
    size_t i = (size_t)hash & mask, perturb = (size_t)hash;
    while (index[i] >= 0) {
        perturb >>= PERTURB_SHIFT;
        i = (i * 5 + perturb + 1) & mask;
    }
    index[i] = ix;
}

/* room for `extra` more entries (load at most 2/3); 0 or -1 (memory) */
static int table_reserve(Table *t, Py_ssize_t extra) {
    Py_ssize_t need = t->used + extra;
    if (need > INT32_MAX / 2) {
        PyErr_SetString(PyExc_OverflowError, "too many features in one weight block");
        return -1;
    }
    if (need > t->cap) {
        Py_ssize_t cap = t->cap;
        while (cap < need) cap += cap / 2 + 4;
        Entry *e = PyMem_Realloc(t->entries, sizeof(Entry) * cap);
        if (e == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        t->entries = e;
        t->cap = cap;
    }
    if (3 * need > 2 * (t->mask + 1)) {
        Py_ssize_t size = t->mask + 1, i;
        while (3 * need > 2 * size) size *= 2;
        int32_t *index = PyMem_Malloc(sizeof(int32_t) * size);
        if (index == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        memset(index, 0xff, sizeof(int32_t) * size);
        for (i = 0; i < t->used; i++) index_place(index, size - 1, t->entries[i].hash, (int32_t)i);
        PyMem_Free(t->index);
        t->index = index;
        t->mask = size - 1;
    }
    return 0;
}

/* append a key known to be absent (room reserved), taking a new reference; the includer fills
 * in the returned entry's payload */
static inline Entry *table_push(Table *t, PyObject *key, Py_hash_t hash) {
    Entry *e = &t->entries[t->used];
    Py_ssize_t n;
    Py_INCREF(key);
    e->key = key;
    e->hash = hash;
    memset(e->short_key, 0, sizeof e->short_key);
    if (ascii_key(key) && (n = PyUnicode_GET_LENGTH(key)) <= SHORT_KEY) {
        e->short_key[0] = (uint8_t)n;
        memcpy(e->short_key + 1, (PyASCIIObject *)key + 1, (size_t)n);
    } else
        e->short_key[0] = NOT_SHORT;
    index_place(t->index, (size_t)t->mask, hash, (int32_t)t->used);
    t->used++;
    return e;
}

/* ---------------------------------------------------------------------------------------- */
/* an engine's weight blocks: its tables in order, each with an id no other block of the engine
 * had, so that a layout (the ids in order) names the blocks across changes                    */

typedef struct {
    Table *table; /* the blocks, in order */
    Py_ssize_t n, cap;
    long long next_id;
} Blocks;

/* room for n blocks; 0 or -1 (memory) */
static int blocks_reserve(Blocks *b, Py_ssize_t n) {
    return rcw_grow((void **)&b->table, &b->cap, n, sizeof(Table));
}

/* t, a new empty block with the next id; 0 or -1 (memory) */
static int block_init(Blocks *b, Table *t) {
    if (table_init(t) < 0) return -1;
    t->id = b->next_id++;
    return 0;
}

/* a new engine's blocks: one empty block; 0 or -1 (memory) */
static int blocks_init(Blocks *b) {
    if (blocks_reserve(b, 1) < 0 || block_init(b, &b->table[0]) < 0) return -1;
    b->n = 1;
    return 0;
}

/* every block's keys visited (the engine's tp_traverse) */
static int blocks_traverse(const Blocks *b, visitproc visit, void *arg) {
    Py_ssize_t k, i;
    for (k = 0; k < b->n; k++)
        for (i = 0; i < b->table[k].used; i++) Py_VISIT(b->table[k].entries[i].key);
    return 0;
}

/* every block freed (the engine's tp_clear; the array itself stays for its tp_dealloc) */
static void blocks_clear(Blocks *b) {
    Py_ssize_t k;
    for (k = 0; k < b->n; k++) table_free(&b->table[k]);
    b->n = 0;
}

/* the blocks replaced by `n` tables built apart (set_blocks builds them first, so that a bad
 * block leaves the engine as it was); the blocks own them from then on. 0, or -1 (memory: the
 * blocks unchanged, the tables still the caller's) */
static inline int blocks_replace(Blocks *b, Table *tables, Py_ssize_t n) {
    if (blocks_reserve(b, n ? n : 1) < 0) return -1;
    blocks_clear(b);
    memcpy(b->table, tables, sizeof(Table) * n);
    b->n = n;
    return 0;
}

/* a new empty block at position `at` (0: in front, b->n: at the end); 0 or -1 (memory) */
static int blocks_insert(Blocks *b, Py_ssize_t at) {
    Table t;
    if (blocks_reserve(b, b->n + 1) < 0 || block_init(b, &t) < 0) return -1;
    memmove(&b->table[at + 1], &b->table[at], sizeof(Table) * (b->n - at));
    b->table[at] = t;
    b->n++;
    return 0;
}

/* the bytes the blocks hold (their array, and each table's index and entries), for __sizeof__ */
static Py_ssize_t blocks_bytes(const Blocks *b) {
    Py_ssize_t size = sizeof(Table) * b->cap, i;
    for (i = 0; i < b->n; i++)
        size += sizeof(int32_t) * (b->table[i].mask + 1) + sizeof(Entry) * b->table[i].cap;
    return size;
}

/* the layout: a tuple of the blocks' ids, in order */
static PyObject *blocks_layout(const Blocks *b) {
    PyObject *out = PyTuple_New(b->n);
    Py_ssize_t i;
    for (i = 0; out != NULL && i < b->n; i++) {
        PyObject *id = PyLong_FromLongLong(b->table[i].id);
        if (id == NULL)
            Py_CLEAR(out);
        else
            PyTuple_SET_ITEM(out, i, id);
    }
    return out;
}

/* the ids of a layout (a sequence of ints) into a new PyMem array of *n; NULL with an error */
static long long *layout_ids(PyObject *layout, Py_ssize_t *n) {
    PyObject *seq;
    long long *ids;
    Py_ssize_t i;
    if ((seq = PySequence_Fast(layout, "a layout is a tuple of block ids")) == NULL) return NULL;
    *n = PySequence_Fast_GET_SIZE(seq);
    if ((ids = PyMem_Malloc(sizeof(long long) * (*n ? *n : 1))) == NULL) {
        Py_DECREF(seq);
        PyErr_NoMemory();
        return NULL;
    }
    for (i = 0; i < *n; i++)
        if ((ids[i] = PyLong_AsLongLong(PySequence_Fast_GET_ITEM(seq, i))) == -1 &&
            PyErr_Occurred()) {
            Py_DECREF(seq);
            PyMem_Free(ids);
            return NULL;
        }
    Py_DECREF(seq);
    return ids;
}

/* the blocks in the order of `ids` (each an existing block's, at most once), the others freed;
 * 0, or -1 with an error and nothing changed (ValueError: not a layout of these blocks) */
static int blocks_arrange(Blocks *b, const long long *ids, Py_ssize_t n) {
    Table *tables = PyMem_Calloc(n ? n : 1, sizeof(Table));
    char *kept = PyMem_Calloc(b->n ? b->n : 1, 1);
    Py_ssize_t i, k;
    if (tables == NULL || kept == NULL) {
        PyMem_Free(tables);
        PyMem_Free(kept);
        PyErr_NoMemory();
        return -1;
    }
    for (i = 0; i < n; i++) {
        for (k = 0; k < b->n && (b->table[k].id != ids[i] || kept[k]); k++)
            ;
        if (k == b->n) {
            PyMem_Free(tables);
            PyMem_Free(kept);
            PyErr_SetString(PyExc_ValueError, "not a layout of this engine's blocks");
            return -1;
        }
        kept[k] = 1;
        tables[i] = b->table[k];
    }
    for (k = 0; k < b->n; k++)
        if (!kept[k]) table_free(&b->table[k]);
    memcpy(b->table, tables, sizeof(Table) * n);
    b->n = n;
    PyMem_Free(tables);
    PyMem_Free(kept);
    return 0;
}

/* the blocks of an earlier `blocks_layout`, in its order, the blocks added since freed (a failed
 * learn wrote nothing into them); 0, or -1 with an error and nothing changed */
static int blocks_restore(Blocks *b, PyObject *layout) {
    Py_ssize_t n;
    long long *ids;
    int r;
    if ((ids = layout_ids(layout, &n)) == NULL) return -1;
    r = blocks_arrange(b, ids, n);
    PyMem_Free(ids);
    return r;
}

/* the ids of the blocks in `order` (a permutation of the block indices, as reorder takes it)
 * into a new PyMem array of *n; NULL with an error. Calls each index's __index__: the caller
 * leaves its engine free meanwhile. */
static inline long long *order_ids(const Blocks *b, PyObject *order, Py_ssize_t *n) {
    PyObject *seq;
    Py_ssize_t i, k;
    long long *ids;
    if ((seq = PySequence_Fast(order, "order must be a list of block indices")) == NULL)
        return NULL;
    *n = PySequence_Fast_GET_SIZE(seq);
    if ((ids = PyMem_Malloc(sizeof(long long) * (*n ? *n : 1))) == NULL) {
        Py_DECREF(seq);
        PyErr_NoMemory();
        return NULL;
    }
    for (i = 0; i < *n; i++) {
        k = PyNumber_AsSsize_t(PySequence_Fast_GET_ITEM(seq, i), PyExc_IndexError);
        if (k == -1 && PyErr_Occurred()) break;
        if (k < 0) k += b->n;
        if (k < 0 || k >= b->n) {
            PyErr_SetString(PyExc_IndexError, "list index out of range");
            break;
        }
        ids[i] = b->table[k].id;
    }
    Py_DECREF(seq);
    if (!PyErr_Occurred() && *n != b->n)
        PyErr_SetString(PyExc_ValueError, "order must be a permutation of the blocks");
    if (PyErr_Occurred()) {
        PyMem_Free(ids);
        return NULL;
    }
    return ids;
}

/* ---------------------------------------------------------------------------------------- */
/* marks: the entries written since a point in time, for an engine's `mark` and `changed` (see
 * river_cw._engines.gaussian.DiagonalGaussian.changed). After a mark, each table notes the entries it
 * writes (table_note, at every write); the next mark copies only those and the entries appended
 * since, and `changed` compares only those with the copy, so that both cost in proportion to the
 * entries written, not to the model. A mark holds while the blocks keep their layout: the engine
 * counts its reshapes (blocks added, replaced, reordered or restored; entries rewritten without
 * a note, as by negate), and a mark taken at another count is none. */

typedef struct {
    int taken;         /* a mark was taken, */
    uint64_t reshaped; /* when the engine's count of reshapes was this */
} Mark;

/* t's mark taken now: its entries' payloads copied; from the previous mark, if it still holds
 * (`incremental`), only the entries written or appended since. 0, or -1 with MemoryError and no
 * mark */
static inline int table_mark(Table *t, int incremental) {
    Py_ssize_t n = t->used, from = 0, k, i;
    if (incremental && t->shadow != NULL) {
        for (k = 0; k < t->nwritten; k++) {
            i = t->written[k];
            t->shadow[i] = t->entries[i].payload;
            t->touched[i] = 0;
        }
        t->nwritten = 0;
        from = t->tracked;
    } else
        table_unmark(t);
    if (n > from || t->shadow == NULL) {
        Py_ssize_t size = n ? n : 1;
        void *p;
        if ((p = PyMem_Realloc(t->shadow, sizeof(Payload) * size)) == NULL) goto nomemory;
        t->shadow = p;
        if ((p = PyMem_Realloc(t->touched, size)) == NULL) goto nomemory;
        t->touched = p;
        if ((p = PyMem_Realloc(t->written, sizeof(Py_ssize_t) * size)) == NULL) goto nomemory;
        t->written = p;
        for (i = from; i < n; i++) {
            t->shadow[i] = t->entries[i].payload;
            t->touched[i] = 0;
        }
    }
    t->tracked = n;
    return 0;
nomemory:
    table_unmark(t);
    PyErr_NoMemory();
    return -1;
}

/* every block's mark taken now, the engine's count of reshapes being `reshaped`; 0, or -1 with
 * MemoryError and no mark */
static inline int blocks_mark(Blocks *b, Mark *mark, uint64_t reshaped) {
    int incremental = mark->taken && mark->reshaped == reshaped;
    Py_ssize_t k;
    mark->taken = 0;
    for (k = 0; k < b->n; k++)
        if (table_mark(&b->table[k], incremental) < 0) {
            for (k = 0; k < b->n; k++) table_unmark(&b->table[k]);
            return -1;
        }
    mark->taken = 1;
    mark->reshaped = reshaped;
    return 0;
}

static inline int compare_positions(const void *a, const void *b) {
    Py_ssize_t x = *(const Py_ssize_t *)a, y = *(const Py_ssize_t *)b;
    return (x > y) - (x < y);
}

/* an entry's numbers as `changed` gives them (a new reference, or NULL with an error); `engine`
 * is what the engine handed blocks_changed */
typedef PyObject *(*EntryNumbers)(const Entry *e, const void *engine);

/* e's numbers into d under its key; 0 or -1 */
static inline int put_numbers(PyObject *d, const Entry *e, EntryNumbers numbers,
                              const void *engine) {
    PyObject *w = numbers(e, engine);
    int r;
    if (w == NULL) return -1;
    r = PyDict_SetItem(d, e->key, w);
    Py_DECREF(w);
    return r;
}

/* `changed`: per block, {feature: numbers(entry)} of the entries appended since the mark or whose
 * payload differs from the mark's copy bit for bit, in table order (a new list); None without a
 * mark that holds at the engine's count of reshapes `reshaped`; NULL with an error */
static inline PyObject *blocks_changed(Blocks *b, const Mark *mark, uint64_t reshaped,
                                       EntryNumbers numbers, const void *engine) {
    PyObject *out, *d;
    Py_ssize_t k, j, i;
    if (!mark->taken || mark->reshaped != reshaped) Py_RETURN_NONE;
    if ((out = PyList_New(b->n)) == NULL) return NULL;
    for (k = 0; k < b->n; k++) {
        Table *t = &b->table[k];
        if ((d = PyDict_New()) == NULL) goto fail;
        PyList_SET_ITEM(out, k, d);
        qsort(t->written, (size_t)t->nwritten, sizeof(Py_ssize_t), compare_positions);
        for (j = 0; j < t->nwritten; j++) {
            const Entry *e = &t->entries[i = t->written[j]];
            if (memcmp(&e->payload, &t->shadow[i], sizeof(Payload)) != 0 &&
                put_numbers(d, e, numbers, engine) < 0)
                goto fail;
        }
        for (i = t->tracked; i < t->used; i++)
            if (put_numbers(d, &t->entries[i], numbers, engine) < 0) goto fail;
    }
    return out;
fail:
    Py_DECREF(out);
    return NULL;
}

/* the bytes the blocks' marks hold (as table_mark allocates), for __sizeof__ */
static inline Py_ssize_t blocks_mark_bytes(const Blocks *b) {
    Py_ssize_t size = 0, k;
    for (k = 0; k < b->n; k++)
        if (b->table[k].shadow != NULL)
            size += (sizeof(Payload) + 1 + sizeof(Py_ssize_t)) * Py_MAX(b->table[k].tracked, 1);
    return size;
}

#endif
