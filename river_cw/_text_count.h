/* Counting river's BagOfWords tokens of ASCII text, without a Python object per token.
 *
 * rcw_count_ascii(data, n, lower) scans the n ASCII characters at data (lowercased first when
 * `lower`) with rcw_scan (_text_scan.h) and counts equal tokens in an open-addressing table over
 * offsets into the scanned text: afterwards rcw_count.distinct tokens are known, the k-th
 * (first occurrence first) at rcw_count_slot(k), its characters at rcw_count.text + start.
 * The scratch space is reused across calls (the GIL is held throughout), so a key object is
 * needed only once per distinct token, by the caller (_text.c, which counts into a dict of str
 * keys).
 */
#ifndef RIVER_CW_TEXT_COUNT_H
#define RIVER_CW_TEXT_COUNT_H

#include <Python.h>
#include <stdint.h>
#include <string.h>

#include "_text_scan.h"

typedef struct {
    uint64_t hash;
    size_t start;
    size_t length;
    Py_ssize_t count;
    uint32_t stamp; /* the call that filled this slot; other stamps mean empty */
} RcwSlot;

static struct {
    const unsigned char *text; /* the scanned text: the caller's, or `lowered` */
    size_t distinct;
    unsigned char *lowered;
    size_t lowered_cap;
    RcwSlot *slots;
    size_t slots_cap; /* a power of two */
    size_t *order;    /* slot index of each distinct token, first occurrence first */
    size_t order_cap;
    uint32_t stamp;
} rcw_count;

static inline const RcwSlot *rcw_count_slot(size_t k) { return &rcw_count.slots[rcw_count.order[k]]; }

static uint64_t rcw_hash_bytes(const unsigned char *s, size_t n)
{
    uint64_t h = 1469598103934665603ULL; /* FNV-1a */
    for (size_t i = 0; i < n; i++) {
        h ^= s[i];
        h *= 1099511628211ULL;
    }
    return h ^ (h >> 29);
}

static int rcw_count_token(void *ctx, size_t start, size_t length)
{
    const unsigned char *tok = rcw_count.text + start;
    uint64_t h = rcw_hash_bytes(tok, length);
    size_t mask = rcw_count.slots_cap - 1;
    (void)ctx;
    for (size_t i = (size_t)h & mask;; i = (i + 1) & mask) {
        RcwSlot *slot = &rcw_count.slots[i];
        if (slot->stamp != rcw_count.stamp) {
            slot->stamp = rcw_count.stamp;
            slot->hash = h;
            slot->start = start;
            slot->length = length;
            slot->count = 1;
            rcw_count.order[rcw_count.distinct++] = i;
            return 0;
        }
        if (slot->hash == h && slot->length == length &&
            memcmp(rcw_count.text + slot->start, tok, length) == 0) {
            slot->count++;
            return 0;
        }
    }
}

/* Room for the tokens of an n-byte text: each token takes at least two bytes and tokens are
 * separated, so there are at most n / 3 + 1. The table stays at most half full. */
static int rcw_count_reserve(size_t n, int lower)
{
    if (lower && n > rcw_count.lowered_cap) {
        unsigned char *p = PyMem_Realloc(rcw_count.lowered, n);
        if (!p)
            return -1;
        rcw_count.lowered = p;
        rcw_count.lowered_cap = n;
    }
    size_t tokens = n / 3 + 1;
    if (tokens > rcw_count.order_cap) {
        size_t *p = PyMem_Realloc(rcw_count.order, tokens * sizeof(size_t));
        if (!p)
            return -1;
        rcw_count.order = p;
        rcw_count.order_cap = tokens;
    }
    size_t need = 16;
    while (need < 2 * tokens)
        need <<= 1;
    if (need > rcw_count.slots_cap) {
        RcwSlot *p = PyMem_Calloc(need, sizeof(RcwSlot));
        if (!p)
            return -1;
        PyMem_Free(rcw_count.slots);
        rcw_count.slots = p;
        rcw_count.slots_cap = need;
        rcw_count.stamp = 0;
    }
    if (++rcw_count.stamp == 0) { /* wrapped: forget every old stamp */
        memset(rcw_count.slots, 0, rcw_count.slots_cap * sizeof(RcwSlot));
        rcw_count.stamp = 1;
    }
    return 0;
}

/* A direct-mapped cache of the str objects of short tokens that outlives calls: a frequent word
 * is then one str, its hash computed once, in every dict (at most ~1.3 MB of str objects). */
#define RCW_KEY_CACHE_SIZE (1 << 14)
#define RCW_KEY_CACHE_LENGTH 32
static PyObject *rcw_key_cache[RCW_KEY_CACHE_SIZE];

/* The cache slot of the ASCII token tok[0:length] whose rcw_hash_bytes is h (NULL: too long to
 * be cached); *hit says whether the slot holds that token's str. */
static inline PyObject **rcw_key_slot(const unsigned char *tok, size_t length, uint64_t h,
                                      int *hit)
{
    PyObject **slot, *key;
    *hit = 0;
    if (length > RCW_KEY_CACHE_LENGTH)
        return NULL;
    slot = &rcw_key_cache[(h >> 32) & (RCW_KEY_CACHE_SIZE - 1)];
    key = *slot;
    *hit = key && (size_t)PyUnicode_GET_LENGTH(key) == length &&
           memcmp(PyUnicode_1BYTE_DATA(key), tok, length) == 0;
    return slot;
}

/* A new str of the ASCII token tok[0:length], NULL on error. */
static inline PyObject *rcw_new_key(const unsigned char *tok, size_t length)
{
    PyObject *key = PyUnicode_New((Py_ssize_t)length, 127);
    if (key)
        memcpy(PyUnicode_1BYTE_DATA(key), tok, length);
    return key;
}

/* Count the tokens of n ASCII characters; 0, or -1 with MemoryError set. */
static int rcw_count_ascii(const unsigned char *data, size_t n, int lower)
{
    if (rcw_count_reserve(n, lower) < 0) {
        PyErr_NoMemory();
        return -1;
    }
    if (lower) {
        for (size_t i = 0; i < n; i++) {
            unsigned char ch = data[i];
            rcw_count.lowered[i] = (ch >= 'A' && ch <= 'Z') ? (unsigned char)(ch + 32) : ch;
        }
        data = rcw_count.lowered;
    }
    rcw_count.text = data;
    rcw_count.distinct = 0;
    rcw_scan(PyUnicode_1BYTE_KIND, data, n, rcw_count_token, NULL);
    return 0;
}

#endif
