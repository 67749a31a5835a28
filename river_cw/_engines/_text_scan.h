/* The token scanner of river's BagOfWords default tokenizer.
 *
 * river (feature_extraction/vectorize.py) finds tokens with the pattern (?u)\b\w[\w\-]+\b after
 * lowercasing. On ASCII text \w is [A-Za-z0-9_], so a token is found per maximal run of
 * [A-Za-z0-9_-] characters: the run with its leading and trailing hyphens removed, kept when at
 * least two characters remain. (The match starts at the run's first word character, the greedy
 * [\w-]+ takes the rest of the run and backtracks to the last word character, the only boundary
 * at or after it inside the run; a run with one word character has no match.)
 *
 * On other text (after river's accent stripping and lowercasing) the same holds with the re
 * module's \w. The scanner calls sink(ctx, start, length) for each token, in text order, with
 * offsets into the text. It allocates nothing and touches no Python object. Header-only and
 * static.
 */
#ifndef RIVER_CW_TEXT_SCAN_H
#define RIVER_CW_TEXT_SCAN_H

#include <Python.h>
#include <stddef.h>

#include "_inline.h"

/* 1: word character (\w on ASCII), 2: hyphen, 0: anything else. */
static const unsigned char rcw_text_class[128] = {
    ['0'] = 1, ['1'] = 1, ['2'] = 1, ['3'] = 1, ['4'] = 1, ['5'] = 1, ['6'] = 1, ['7'] = 1,
    ['8'] = 1, ['9'] = 1, ['_'] = 1, ['-'] = 2,
    ['a'] = 1, ['b'] = 1, ['c'] = 1, ['d'] = 1, ['e'] = 1, ['f'] = 1, ['g'] = 1, ['h'] = 1,
    ['i'] = 1, ['j'] = 1, ['k'] = 1, ['l'] = 1, ['m'] = 1, ['n'] = 1, ['o'] = 1, ['p'] = 1,
    ['q'] = 1, ['r'] = 1, ['s'] = 1, ['t'] = 1, ['u'] = 1, ['v'] = 1, ['w'] = 1, ['x'] = 1,
    ['y'] = 1, ['z'] = 1,
    ['A'] = 1, ['B'] = 1, ['C'] = 1, ['D'] = 1, ['E'] = 1, ['F'] = 1, ['G'] = 1, ['H'] = 1,
    ['I'] = 1, ['J'] = 1, ['K'] = 1, ['L'] = 1, ['M'] = 1, ['N'] = 1, ['O'] = 1, ['P'] = 1,
    ['Q'] = 1, ['R'] = 1, ['S'] = 1, ['T'] = 1, ['U'] = 1, ['V'] = 1, ['W'] = 1, ['X'] = 1,
    ['Y'] = 1, ['Z'] = 1,
};

typedef int (*rcw_token_sink)(void *ctx, size_t start, size_t length);

/* The class of a character as the re module sees \w in Unicode patterns (Modules/_sre:
 * Py_UNICODE_ISALNUM(ch) || ch == '_'), with '-' apart. */
static RCW_ALWAYS_INLINE int rcw_text_class_of(Py_UCS4 ch)
{
    if (ch < 128)
        return rcw_text_class[ch];
    return Py_UNICODE_ISALNUM(ch) ? 1 : 0;
}

/* Scan the n characters of str data of the given PyUnicode kind (1, 2 or 4 bytes each); offsets
 * count characters. Returns 0, or the first non-zero value a sink call returned (the scan stops
 * there). Always inlined, so a constant kind gets its own tight loop. */
static RCW_ALWAYS_INLINE int rcw_scan(int kind, const void *s, size_t n, rcw_token_sink sink,
                                      void *ctx)
{
    size_t i = 0;
    while (i < n) {
        if (!rcw_text_class_of(PyUnicode_READ(kind, s, i))) {
            i++;
            continue;
        }
        size_t end = i;
        while (end < n && rcw_text_class_of(PyUnicode_READ(kind, s, end)))
            end++;
        size_t a = i, b = end;
        while (a < b && PyUnicode_READ(kind, s, a) == '-')
            a++;
        while (b > a && PyUnicode_READ(kind, s, b - 1) == '-')
            b--;
        if (b - a >= 2) {
            int rc = sink(ctx, a, b - a);
            if (rc)
                return rc;
        }
        i = end;
    }
    return 0;
}

#endif
