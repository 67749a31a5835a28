/* Counting river's BagOfWords tokens, without a Python object per token.
 *
 * rcw_count_ascii(data, n, lower) counts the tokens of n ASCII characters in one pass that
 * lowercases (when `lower`), finds the tokens (as _text_scan.h's scanner finds them) and hashes
 * each; rcw_count_text(kind, data, n) counts those of a str's data of any kind, found by
 * rcw_scan. Equal tokens are counted in an open-addressing table over offsets into the text:
 * afterwards rcw_count.distinct tokens are known, the k-th (first occurrence first) at
 * rcw_count_slot(k), its characters at rcw_count.text + start * rcw_count.kind. The scratch
 * space is reused across calls (the GIL is held throughout), so a key object is needed only
 * once per distinct token, by the caller (_text.c, which counts into a dict of str keys).
 */
#ifndef RIVER_CW_TEXT_COUNT_H
#define RIVER_CW_TEXT_COUNT_H

#include <Python.h>
#include <stdint.h>
#include <string.h>

#include "_text_scan.h"

typedef struct {
    uint64_t hash;
    size_t start;  /* in characters */
    size_t length; /* in characters */
    Py_ssize_t count;
    uint32_t stamp; /* the call that filled this slot; other stamps mean empty */
} RcwSlot;

static struct {
    const unsigned char *text; /* the scanned text: the caller's, or `copy` */
    int kind;                  /* bytes per character of text */
    size_t distinct;
    unsigned char *copy; /* an ASCII text's token characters as rcw_scan_ascii wrote them */
    size_t copy_cap;
    RcwSlot *slots;
    size_t slots_cap; /* a power of two */
    size_t *order;    /* slot index of each distinct token, first occurrence first */
    size_t order_cap;
    uint32_t stamp;
} rcw_count;

static inline const RcwSlot *rcw_count_slot(size_t k) { return &rcw_count.slots[rcw_count.order[k]]; }

/* The hash of a token's bytes: FNV-1a, byte by byte (rcw_hash_step), then mixed (rcw_hash_end) */
#define RCW_HASH_START 1469598103934665603ULL
static inline uint64_t rcw_hash_step(uint64_t h, unsigned char byte) { return (h ^ byte) * 1099511628211ULL; }
static inline uint64_t rcw_hash_end(uint64_t h) { return h ^ (h >> 29); }

/* Count the token of `length` characters at character `start` of rcw_count.text, whose hash
 * is h. */
static void rcw_count_token(size_t start, size_t length, uint64_t h)
{
    const int kind = rcw_count.kind;
    const unsigned char *tok = rcw_count.text + start * kind;
    size_t mask = rcw_count.slots_cap - 1;
    for (size_t i = (size_t)h & mask;; i = (i + 1) & mask) {
        RcwSlot *slot = &rcw_count.slots[i];
        if (slot->stamp != rcw_count.stamp) {
            slot->stamp = rcw_count.stamp;
            slot->hash = h;
            slot->start = start;
            slot->length = length;
            slot->count = 1;
            rcw_count.order[rcw_count.distinct++] = i;
            return;
        }
        if (slot->hash == h && slot->length == length &&
            memcmp(rcw_count.text + slot->start * kind, tok, length * kind) == 0) {
            slot->count++;
            return;
        }
    }
}

/* Room for the tokens of an n-character text (and its copy when `copied`): each token
 * takes at least two characters and tokens are separated, so there are at most n / 3 + 1. The
 * table stays at most half full. 0, or -1 with MemoryError set. */
static int rcw_count_reserve(size_t n, int copied)
{
    if (copied && n > rcw_count.copy_cap) {
        unsigned char *p = PyMem_Realloc(rcw_count.copy, n);
        if (!p)
            goto no_memory;
        rcw_count.copy = p;
        rcw_count.copy_cap = n;
    }
    size_t tokens = n / 3 + 1;
    if (tokens > rcw_count.order_cap) {
        size_t *p = PyMem_Realloc(rcw_count.order, tokens * sizeof(size_t));
        if (!p)
            goto no_memory;
        rcw_count.order = p;
        rcw_count.order_cap = tokens;
    }
    size_t need = 16;
    while (need < 2 * tokens)
        need <<= 1;
    if (need > rcw_count.slots_cap) {
        RcwSlot *p = PyMem_Calloc(need, sizeof(RcwSlot));
        if (!p)
            goto no_memory;
        PyMem_Free(rcw_count.slots);
        rcw_count.slots = p;
        rcw_count.slots_cap = need;
        rcw_count.stamp = 0;
    }
    if (++rcw_count.stamp == 0) { /* wrapped: forget every old stamp */
        memset(rcw_count.slots, 0, rcw_count.slots_cap * sizeof(RcwSlot));
        rcw_count.stamp = 1;
    }
    rcw_count.distinct = 0;
    return 0;
no_memory:
    PyErr_NoMemory();
    return -1;
}

/* What the one pass of rcw_count_ascii writes of each ASCII character: a word character (\w)
 * as it is (rcw_ascii_as_is) or lowercased (rcw_ascii_lowered), the hyphen as '-', 0 for any
 * other character. */
static unsigned char rcw_ascii_as_is[128], rcw_ascii_lowered[128];

static void rcw_ascii_tables(void)
{
    for (int ch = 0; ch < 128; ch++) {
        unsigned char token_char = rcw_text_class[ch] ? (unsigned char)ch : 0;
        rcw_ascii_as_is[ch] = token_char;
        rcw_ascii_lowered[ch] = token_char >= 'A' && token_char <= 'Z' ? token_char + 32 : token_char;
    }
}

/* The one pass of rcw_count_ascii, through one of the tables above: a run of word characters and
 * hyphens starts at a word character (leading hyphens are skipped as they come) and its token
 * ends at its last word character, whose running hash is the token's. Each character of a run is
 * written to `out` as the table has it: the text the tokens' offsets then point into. */
static void rcw_scan_ascii(const unsigned char *data, size_t n, const unsigned char *table,
                           unsigned char *out)
{
    size_t i = 0;
    while (i < n) {
        unsigned char ch = table[data[i]];
        if (ch == 0 || ch == '-') {
            i++;
            continue;
        }
        size_t start = i, end = i;
        uint64_t h = RCW_HASH_START, token_hash = h;
        do {
            out[i] = ch;
            h = rcw_hash_step(h, ch);
            if (ch != '-') {
                token_hash = h;
                end = i + 1;
            }
        } while (++i < n && (ch = table[data[i]]) != 0);
        if (end - start >= 2)
            rcw_count_token(start, end - start, rcw_hash_end(token_hash));
    }
}

/* Count the tokens of n ASCII characters (bytes below 128), lowercased first when `lower`;
 * 0, or -1 with MemoryError set. */
static int rcw_count_ascii(const unsigned char *data, size_t n, int lower)
{
    if (rcw_count_reserve(n, 1) < 0)
        return -1;
    rcw_count.text = rcw_count.copy;
    rcw_count.kind = 1;
    rcw_scan_ascii(data, n, lower ? rcw_ascii_lowered : rcw_ascii_as_is, rcw_count.copy);
    return 0;
}

/* rcw_scan's sink for rcw_count_text: the token's bytes hashed, then counted */
static int rcw_count_sink(void *ctx, size_t start, size_t length)
{
    const unsigned char *tok = rcw_count.text + start * rcw_count.kind;
    uint64_t h = RCW_HASH_START;
    (void)ctx;
    for (size_t i = 0; i < length * rcw_count.kind; i++)
        h = rcw_hash_step(h, tok[i]);
    rcw_count_token(start, length, rcw_hash_end(h));
    return 0;
}

/* Count the tokens of the n characters of str data of the given kind, as they are (river's
 * preprocessing applied); 0, or -1 with MemoryError set. */
static int rcw_count_text(int kind, const void *data, size_t n)
{
    if (rcw_count_reserve(n, 0) < 0)
        return -1;
    rcw_count.text = data;
    rcw_count.kind = kind;
    switch (kind) { /* rcw_scan inlined for each constant kind */
    case PyUnicode_1BYTE_KIND:
        rcw_scan(PyUnicode_1BYTE_KIND, data, n, rcw_count_sink, NULL);
        break;
    case PyUnicode_2BYTE_KIND:
        rcw_scan(PyUnicode_2BYTE_KIND, data, n, rcw_count_sink, NULL);
        break;
    default:
        rcw_scan(PyUnicode_4BYTE_KIND, data, n, rcw_count_sink, NULL);
    }
    return 0;
}

/* A direct-mapped cache of the str objects of short tokens that outlives calls: a frequent word
 * is then one str, its hash computed once, in every dict, the same object a model holds as its
 * feature's name (the table 512 KB, at most ~5 MB of str objects; on Enron's mails, 53,000 words in
 * 4,000, text in to learned costs 3% fewer instructions than with 2**14 slots) */
#define RCW_KEY_CACHE_SIZE (1 << 16)
#define RCW_KEY_CACHE_LENGTH 32
static PyObject *rcw_key_cache[RCW_KEY_CACHE_SIZE];

/* The cache slot of the ASCII token tok[0:length] whose hash is h (NULL: too long to
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

#endif
