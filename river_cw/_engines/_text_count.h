/* Counting river's BagOfWords tokens, without a Python object per token.
 *
 * rcw_count_ascii(data, n, lower) counts the tokens of n ASCII characters in one pass that
 * lowercases (when `lower`) and finds the tokens (as _text_scan.h's scanner finds them), each
 * hashed by its words as it is found; rcw_count_text(kind, data, n) counts those of a str's data
 * of any kind, found by rcw_scan. Equal tokens are counted in an open-addressing table over
 * offsets into the text: afterwards rcw_count.distinct tokens are known, the k-th (first
 * occurrence first) at rcw_count_slot(k), its characters at rcw_count.text + start *
 * rcw_count.kind. The scratch space is reused across calls (the GIL is held throughout), so a key
 * object is needed only once per distinct token, by the caller (_text.c, which counts into a dict
 * of str keys).
 */
#ifndef RIVER_CW_TEXT_COUNT_H
#define RIVER_CW_TEXT_COUNT_H

#include <Python.h>
#include <stdint.h>
#include <string.h>

#include "_text_scan.h"

/* A distinct token of the text counted last, in first-occurrence order. */
typedef struct {
    uint64_t hash;
    size_t start;  /* in characters */
    size_t length; /* in characters */
    Py_ssize_t count;
} RcwSlot;

/* The tokens are found through an open-addressing index over `slots`, sized for the tokens met so
 * far rather than for the longest text ever counted: it starts at RCW_INDEX_START entries (or
 * fewer for a short text) and doubles, rebuilt from `slots`, when half full, so a mail's hundred
 * distinct tokens are found in a few KB that stay in the L1 cache (an index sized for the
 * longest text, 228,377 characters on Enron, sent every token to a random line of 10 MB). An
 * entry is 0 (empty) or the token's position in `slots` plus one, low, and the top half of its
 * hash, high: a probe that meets another token rarely reads its slot. */
#define RCW_INDEX_START 256

static struct {
    const unsigned char *text; /* the scanned text: the caller's, or `copy` */
    int kind;                  /* bytes per character of text */
    size_t distinct;
    unsigned char *copy; /* an ASCII text's token characters as rcw_scan_ascii wrote them */
    size_t copy_cap;
    RcwSlot *slots; /* the distinct tokens, first occurrence first */
    size_t slots_cap;
    uint64_t *index;  /* entries [0, index_size) in use */
    size_t index_cap; /* a power of two */
    size_t index_size; /* a power of two, at most index_cap */
} rcw_count;

static inline const RcwSlot *rcw_count_slot(size_t k) { return &rcw_count.slots[k]; }

/* The hash of a token's bytes in a text of any kind (rcw_count_sink): FNV-1a, byte by byte
 * (rcw_hash_step), then mixed (rcw_hash_end) */
#define RCW_HASH_START 1469598103934665603ULL
static inline uint64_t rcw_hash_step(uint64_t h, unsigned char byte) { return (h ^ byte) * 1099511628211ULL; }
static inline uint64_t rcw_hash_end(uint64_t h) { return h ^ (h >> 29); }

/* The bytes an ASCII token's reader may read past its end: its text (`copy`, or a key's
 * characters in token_key) is followed by RCW_PAD readable bytes, so that it is read in words. */
#define RCW_PAD 8

/* The n >= 1 bytes at p, followed by RCW_PAD readable bytes, as a word: its last 1 to 8 bytes,
 * those that follow them shifted out (the same word whatever follows) */
static RCW_ALWAYS_INLINE uint64_t rcw_last_word(const unsigned char *p, size_t n)
{
    uint64_t w;
    memcpy(&w, p, 8);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    return w >> (8 * (8 - n));
#else
    return w << (8 * (8 - n));
#endif
}

/* The hash of an ASCII token's n >= 1 bytes at p, followed by RCW_PAD readable bytes: its
 * 8-byte words, each multiplied in, then MurmurHash3's finalizer (fmix64), whose every bit
 * depends on every bit of the input (the counting table takes the low bits, the cache of keys
 * the high ones). A word a multiply, where FNV-1a's byte a multiply was one chain through the
 * text as long as the text (4 cycles a character). */
static RCW_ALWAYS_INLINE uint64_t rcw_hash_padded(const unsigned char *p, size_t n)
{
    const uint64_t k = 0x9E3779B97F4A7C15ULL;
    uint64_t h = (uint64_t)n * k, w;
    for (; n > 8; n -= 8, p += 8) {
        memcpy(&w, p, 8);
        h = (h ^ w) * k;
        h ^= h >> 29;
    }
    h = (h ^ rcw_last_word(p, n)) * k;
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdULL;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ULL;
    return h ^ (h >> 33);
}

/* Whether the n >= 1 bytes at p and q, each followed by RCW_PAD readable bytes, are equal: read
 * in words, without memcmp's call and its branches on the length (a token's length changes at
 * each call). */
static RCW_ALWAYS_INLINE int rcw_same_padded(const unsigned char *p, const unsigned char *q,
                                             size_t n)
{
    uint64_t a, b;
    for (; n > 8; n -= 8, p += 8, q += 8) {
        memcpy(&a, p, 8);
        memcpy(&b, q, 8);
        if (a != b)
            return 0;
    }
    return rcw_last_word(p, n) == rcw_last_word(q, n);
}

/* A direct-mapped cache of the str objects of short tokens that outlives calls: a frequent word
 * is then one str, its hash computed once, in every dict, the same object a model holds as its
 * feature's name (the table 512 KB, at most ~5 MB of str objects; on Enron's mails, 53,000 words in
 * 4,000, text in to learned costs 3% fewer instructions than with 2**14 slots) */
#define RCW_KEY_CACHE_SIZE (1 << 16)
#define RCW_KEY_CACHE_LENGTH 32
static PyObject *rcw_key_cache[RCW_KEY_CACHE_SIZE];

/* The index entry of slot k, whose hash is h */
static inline uint64_t rcw_index_entry(size_t k, uint64_t h)
{
    return (h & 0xFFFFFFFF00000000ULL) | (uint64_t)(k + 1);
}

/* Double the index (room for it is reserved) and place every slot again. */
static void rcw_index_grow(void)
{
    size_t size = rcw_count.index_size * 2, mask = size - 1;
    memset(rcw_count.index, 0, size * sizeof(uint64_t));
    for (size_t k = 0; k < rcw_count.distinct; k++) {
        uint64_t h = rcw_count.slots[k].hash;
        size_t i = (size_t)h & mask;
        while (rcw_count.index[i])
            i = (i + 1) & mask;
        rcw_count.index[i] = rcw_index_entry(k, h);
    }
    rcw_count.index_size = size;
}

/* Count the token of `length` characters at character `start` of rcw_count.text, whose hash
 * is h; `ascii` (a constant where it is inlined): the text is an ASCII text's copy, its tokens
 * compared in words (rcw_same_padded). Inlined into the ASCII scan, whose every token it counts
 * (a call's saved registers were a quarter of its instructions). */
static RCW_ALWAYS_INLINE void rcw_count_token(size_t start, size_t length, uint64_t h, int ascii)
{
    const int kind = ascii ? 1 : rcw_count.kind;
    const unsigned char *tok = rcw_count.text + start * kind;
    const uint64_t high = h & 0xFFFFFFFF00000000ULL;
    const size_t mask = rcw_count.index_size - 1;
    for (size_t i = (size_t)h & mask;; i = (i + 1) & mask) {
        uint64_t entry = rcw_count.index[i];
        if (!entry) {
            size_t k = rcw_count.distinct++;
            RcwSlot *slot = &rcw_count.slots[k];
            slot->hash = h;
            slot->start = start;
            slot->length = length;
            slot->count = 1;
            rcw_count.index[i] = rcw_index_entry(k, h);
            /* its key's cache slot (see rcw_key_slot), loaded while the scan goes on */
            RCW_PREFETCH(&rcw_key_cache[(h >> 32) & (RCW_KEY_CACHE_SIZE - 1)]);
            if (2 * rcw_count.distinct > rcw_count.index_size)
                rcw_index_grow();
            return;
        }
        if ((entry & 0xFFFFFFFF00000000ULL) == high) {
            RcwSlot *slot = &rcw_count.slots[(uint32_t)entry - 1];
            const unsigned char *seen = rcw_count.text + slot->start * kind;
            if (slot->hash == h && slot->length == length &&
                (ascii ? rcw_same_padded(seen, tok, length)
                       : memcmp(seen, tok, length * kind) == 0)) {
                slot->count++;
                return;
            }
        }
    }
}

/* Room for the tokens of an n-character text (and its copy when `copied`): each token
 * takes at least two characters and tokens are separated, so there are at most n / 3 + 1, and
 * an index at most half full; the index is then cleared at its starting size. 0, or -1 with
 * MemoryError set. */
static int rcw_count_reserve(size_t n, int copied)
{
    if (copied && n > rcw_count.copy_cap) {
        unsigned char *p = PyMem_Realloc(rcw_count.copy, n + RCW_PAD);
        if (!p)
            goto no_memory;
        memset(p, 0, n + RCW_PAD); /* every byte a word may read defined */
        rcw_count.copy = p;
        rcw_count.copy_cap = n;
    }
    size_t tokens = n / 3 + 1;
    if (tokens >= UINT32_MAX / 2) { /* the index holds a slot's position in 32 bits */
        PyErr_SetString(PyExc_OverflowError, "text too long to count its tokens");
        return -1;
    }
    if (tokens > rcw_count.slots_cap) {
        RcwSlot *p = PyMem_Realloc(rcw_count.slots, tokens * sizeof(RcwSlot));
        if (!p)
            goto no_memory;
        rcw_count.slots = p;
        rcw_count.slots_cap = tokens;
    }
    size_t need = 16;
    while (need < 2 * tokens)
        need <<= 1;
    if (need > rcw_count.index_cap) {
        uint64_t *p = PyMem_Realloc(rcw_count.index, need * sizeof(uint64_t));
        if (!p)
            goto no_memory;
        rcw_count.index = p;
        rcw_count.index_cap = need;
    }
    rcw_count.index_size = need < RCW_INDEX_START ? need : RCW_INDEX_START;
    memset(rcw_count.index, 0, rcw_count.index_size * sizeof(uint64_t));
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
 * ends at its last word character. Each character of a run is written to `out` as the table has
 * it: the text the tokens' offsets then point into, where each token is hashed once found. A
 * run's word characters are read by a loop of their own (every one of them is above '-' in the
 * tables), its hyphens, rare, by the outer one. */
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
        size_t start = i, end;
        for (;;) {
            do
                out[i] = ch;
            while (++i < n && (ch = table[data[i]]) > '-');
            end = i; /* after a word character */
            while (i < n && ch == '-') /* hyphens inside the run, or after its token */
                if (++i < n)
                    ch = table[data[i]];
            if (i == n || ch == 0) /* the run ended */
                break;
            for (size_t j = end; j < i; j++) /* hyphens, then a word character: the run goes on */
                out[j] = '-';
        }
        if (end - start >= 2)
            rcw_count_token(start, end - start, rcw_hash_padded(out + start, end - start), 1);
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
    rcw_count_token(start, length, rcw_hash_end(h), 0);
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
