/* Exactly rounded sums for the compiled engines (river_cw._engines._diagonal, _arrowhead, _rda): the
 * result of math.fsum, bit for bit, with its errors. Include after Python.h. */
#ifndef RIVER_CW_FSUM_H
#define RIVER_CW_FSUM_H
#include <math.h>
#include <stdint.h>
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

/* ---------------------------------------------------------------------------------------- */
/* exactly rounded sums: math.fsum's algorithm (Shewchuk's partials), the fallback             */

#define NUM_PARTIALS 32

typedef struct {
    double *p;
    Py_ssize_t n, m;
    double special, inf;
    int overflow;
    double ps[NUM_PARTIALS];
} Msum;

static void msum_init(Msum *s) {
    s->p = s->ps;
    s->n = 0;
    s->m = NUM_PARTIALS;
    s->special = s->inf = 0.0;
    s->overflow = 0;
}

static void msum_free(Msum *s) {
    if (s->p != s->ps) PyMem_Free(s->p);
    s->p = s->ps;
}

/* add one term; 0 on success, -1 on memory error (overflow is recorded, raised by msum_result) */
static int msum_add(Msum *s, double x) {
    Py_ssize_t i, j;
    double y, t, hi, yr, lo, xsave = x;
    double *p = s->p;
    if (s->overflow) return 0;
    for (i = j = 0; j < s->n; j++) {
        y = p[j];
        if (fabs(x) < fabs(y)) {
            t = x;
            x = y;
            y = t;
        }
        hi = x + y;
        yr = hi - x;
        lo = y - yr;
        if (lo != 0.0) p[i++] = lo;
        x = hi;
    }
    s->n = i;
    if (x != 0.0) {
        if (!isfinite(x)) {
            if (isfinite(xsave)) {
                s->overflow = 1;
                return 0;
            }
            if (isinf(xsave)) s->inf += xsave;
            s->special += xsave;
            s->n = 0;
        } else {
            if (s->n >= s->m) {
                Py_ssize_t m = s->m * 2;
                double *q = PyMem_Malloc(sizeof(double) * m);
                if (q == NULL) {
                    PyErr_NoMemory();
                    return -1;
                }
                memcpy(q, p, sizeof(double) * s->n);
                if (p != s->ps) PyMem_Free(p);
                s->p = p = q;
                s->m = m;
            }
            p[s->n++] = x;
        }
    }
    return 0;
}

/* the exactly rounded sum, raising as math.fsum does; frees the partials */
static int msum_result(Msum *s, double *out) {
    double *p = s->p, hi, x, y, yr, lo = 0.0;
    Py_ssize_t n = s->n;
    if (s->overflow) {
        msum_free(s);
        PyErr_SetString(PyExc_OverflowError, "intermediate overflow in fsum");
        return -1;
    }
    if (s->special != 0.0) {
        msum_free(s);
        if (isnan(s->inf)) {
            PyErr_SetString(PyExc_ValueError, "-inf + inf in fsum");
            return -1;
        }
        *out = s->special;
        return 0;
    }
    hi = 0.0;
    if (n > 0) {
        hi = p[--n];
        while (n > 0) {
            x = hi;
            y = p[--n];
            hi = x + y;
            yr = hi - x;
            lo = y - yr;
            if (lo != 0.0) break;
        }
        if (n > 0 && ((lo < 0.0 && p[n - 1] < 0.0) || (lo > 0.0 && p[n - 1] > 0.0))) {
            y = lo * 2.0;
            x = hi + y;
            yr = x - hi;
            if (y == yr) hi = x;
        }
    }
    msum_free(s);
    *out = hi;
    return 0;
}

/* ---------------------------------------------------------------------------------------- */
/* exactly rounded sums, fast: a double-double accumulator certified by an error bound          */
/*
 * Each term is added to (hi, lo) with TwoSum (exact: hi + e is the true sum of hi and the term)
 * and e goes into lo with one rounding: Ogita, Rump and Oishi's Sum2 (Accurate sum and dot
 * product, SIAM J. Sci. Comput. 26(6), 2005, Algorithm 4.4). After n terms hi + lo lies within
 * gamma_{n-1}^2 sum |x_i| of the exact sum (the proof of their Proposition 4.5; gamma_k =
 * k u / (1 - k u), u = 2^-53). At the end r + t = hi + lo exactly (TwoSum again) and the exact
 * sum lies within B = 2^-105 n^2 sum |x_i| of it: twice (n u)^2 sum |x_i|, which covers gamma's
 * denominators and the roundings of the computed sum |x_i| and of B itself for any n a caller
 * can hold. When |t| + B stays below half the gap to r's neighbours on both sides, the exact sum
 * rounds to r, which is then math.fsum's result. That needs sum |x_i| < 2^1020 too: then no
 * partial sum, here or in math.fsum's partials, can overflow (and NaN or infinite terms fail
 * it). Otherwise (and whenever something is not finite) the terms go through math.fsum's own
 * algorithm (Msum) in their order, which also gives its errors (an intermediate overflow depends
 * on the order) and its handling of infinities and NaN.
 */

/* the accumulator (hi, lo) and its bound's sum |x| (size); it keeps no terms (nor counts them:
 * the caller knows how many it added), so a caller that holds it in a local keeps it in
 * registers */
typedef struct {
    double hi, lo, size;
} DdSum;

static inline void ddsum_init(DdSum *s) { s->hi = s->lo = s->size = 0.0; }

/* add one term */
static inline void ddsum_add(DdSum *s, double x) {
    double hi = s->hi + x, b, e; /* TwoSum (Knuth): hi + e == s->hi + x exactly */
    b = hi - s->hi;
    e = (s->hi - (hi - b)) + (x - b);
    s->hi = hi;
    s->lo += e;
    s->size += fabs(x);
}

/* the gap from |r| (finite, non-zero) to its neighbour towards zero and away from it */
static inline void neighbour_gaps(double r, double *below, double *above) {
    double a = fabs(r), next;
    uint64_t bits;
    memcpy(&bits, &a, sizeof bits);
    bits -= 1;
    memcpy(&next, &bits, sizeof next);
    *below = a - next;
    bits += 2;
    memcpy(&next, &bits, sizeof next);
    *above = next - a;
}

/* 1 when the error bound certifies the accumulator's rounding as the exactly rounded sum
 * (then *out is math.fsum's result), else 0 (only the terms can tell); n: at least the number
 * of terms added */
static inline int ddsum_certified(const DdSum *s, Py_ssize_t n, double *out) {
    double r, b, t, bound, below, above;
    r = s->hi + s->lo;
    b = r - s->hi;
    t = (s->hi - (r - b)) + (s->lo - b);
    bound = s->size * ((double)n * (double)n) * 0x1p-105;
    /* the common case first: both gaps are at least |r| 2^-53 (|r| = 2^k: the gap below is
     * 2^(k-53), and the gaps only grow up to 2^(k+1); a subnormal's are 2^-1074), so this
     * implies the test below (a t or a bound not finite fails it) */
    if (s->size < 0x1p1020 && fabs(t) + bound < fabs(r) * 0x1p-54) {
        *out = r;
        return 1;
    }
    if (s->size < 0x1p1020 && isfinite(t) && isfinite(bound)) {
        if (r == 0.0) {
            if (bound == 0.0 && t == 0.0) {
                *out = 0.0;
                return 1;
            }
        } else {
            neighbour_gaps(r, &below, &above);
            if (r < 0.0) t = -t; /* t towards |r|'s side */
            if (t + bound < 0.5 * above && bound - t < 0.5 * below) {
                *out = r;
                return 1;
            }
        }
    }
    return 0;
}

/* 1 when the accumulator's hi + lo is exactly the sum of its n terms, judged from `tiny`, the
 * smallest magnitude among its non-zero terms (inf: none; a smaller one, as ddpair_least_add's
 * may be, only refuses more), and then *out = hi + lo rounded once, to nearest with ties to even
 * as math.fsum rounds: its result, ties included (a sum exactly halfway between two doubles,
 * which no error bound certifies). Else 0. Why: every term is a multiple of q, the ulp of the
 * smallest non-zero term (q > tiny 2^-53), and so is every hi, every TwoSum error e (exact) and
 * lo while its additions are exact; |lo| never exceeds sum |e| <= n u (1 + n u) sum |x|
 * (u = 2^-53), which n sum|x| 2^-51 <= tiny keeps below 2^53 q: each lo + e is then a double,
 * the addition exact, and hi + lo the sum. A sum over two lanes (ddlanes_sum) is judged alike:
 * its second lane's hi and lo are multiples of q too. */
static inline int ddsum_exact(const DdSum *s, Py_ssize_t n, double tiny, double *out) {
    if (!(s->size < 0x1p1020 && isfinite(s->hi) && isfinite(s->lo))) return 0;
    if (!((double)n * s->size * 0x1p-51 <= tiny)) return 0;
    *out = s->hi + s->lo;
    return 1;
}

/* Two accumulators side by side, a margin's mean sum and its variance sum: each lane does
 * exactly ddsum_add's operations, so each ends bit for bit as its own DdSum would. With GCC's or
 * clang's vector extensions one SSE2 (or NEON) instruction does both lanes' operation; elsewhere
 * they are two DdSums. */
#if defined(__GNUC__) || defined(__clang__)
typedef double rcw_v2d __attribute__((vector_size(16)));
typedef int64_t rcw_v2i __attribute__((vector_size(16)));

typedef struct {
    rcw_v2d hi, lo, size;
} DdPair;

static inline void ddpair_init(DdPair *s) {
    s->hi = s->lo = s->size = (rcw_v2d){0.0, 0.0};
}

/* two accumulators started with the terms a and b: ddpair_init then ddpair_add(s, a, b), bit for
 * bit where they are finite (TwoSum of 0.0 and x is 0.0 + x, with the error +0.0) */
static inline void ddpair_start(DdPair *s, double a, double b) {
    const rcw_v2i magnitude = {INT64_MAX, INT64_MAX};
    rcw_v2d x = {a, b};
    s->hi = (rcw_v2d){0.0, 0.0} + x;
    s->lo = (rcw_v2d){0.0, 0.0};
    s->size = (rcw_v2d)((rcw_v2i)x & magnitude);
}

/* add the terms a (to the first sum) and b (to the second) */
static inline void ddpair_add(DdPair *s, double a, double b) {
    const rcw_v2i magnitude = {INT64_MAX, INT64_MAX}; /* fabs: the sign bit cleared */
    rcw_v2d x = {a, b}, hi = s->hi + x, d = hi - s->hi;
    s->lo += (s->hi - (hi - d)) + (x - d);
    s->hi = hi;
    s->size += (rcw_v2d)((rcw_v2i)x & magnitude);
}

/* the two accumulators, apart */
static inline void ddpair_split(const DdPair *s, DdSum *a, DdSum *b) {
    a->hi = s->hi[0];
    a->lo = s->lo[0];
    a->size = s->size[0];
    b->hi = s->hi[1];
    b->lo = s->lo[1];
    b->size = s->size[1];
}

/* two accumulators side by side, from apart */
static inline void ddpair_join(DdPair *s, const DdSum *a, const DdSum *b) {
    s->hi = (rcw_v2d){a->hi, b->hi};
    s->lo = (rcw_v2d){a->lo, b->lo};
    s->size = (rcw_v2d){a->size, b->size};
}

/* The smallest magnitude among the terms of each of a pair's sums (ddsum_exact's tiny), kept
 * beside them: ddpair_least_add is ddpair_add that keeps it too (one SSE2 minpd). A zero term
 * makes its lane's 0, which ddsum_exact refuses (the terms are then read again); after a NaN
 * term a lane's may exceed its least, but the sum's size is then NaN, which it refuses too. */
typedef rcw_v2d DdLeast;

static inline void ddleast_init(DdLeast *l) { *l = (rcw_v2d){INFINITY, INFINITY}; }

static inline void ddpair_least_add(DdPair *s, DdLeast *l, double a, double b) {
    const rcw_v2i magnitude = {INT64_MAX, INT64_MAX};
    rcw_v2d size = (rcw_v2d)((rcw_v2i)(rcw_v2d){a, b} & magnitude); /* ddpair_add's too */
    ddpair_add(s, a, b);
#if defined(__SSE2__)
    *l = (rcw_v2d)_mm_min_pd((__m128d)*l, (__m128d)size);
#else
    rcw_v2i less = size < *l;
    *l = (rcw_v2d)(((rcw_v2i)size & less) | ((rcw_v2i)*l & ~less));
#endif
}

/* the two lanes' least magnitudes, apart */
static inline void ddleast_split(const DdLeast *l, double *a, double *b) {
    *a = (*l)[0];
    *b = (*l)[1];
}
#else
typedef struct {
    DdSum a, b;
} DdPair;

static inline void ddpair_init(DdPair *s) {
    ddsum_init(&s->a);
    ddsum_init(&s->b);
}

static inline void ddpair_add(DdPair *s, double a, double b) {
    ddsum_add(&s->a, a);
    ddsum_add(&s->b, b);
}

static inline void ddpair_start(DdPair *s, double a, double b) {
    ddpair_init(s);
    ddpair_add(s, a, b);
}

static inline void ddpair_split(const DdPair *s, DdSum *a, DdSum *b) {
    *a = s->a;
    *b = s->b;
}

static inline void ddpair_join(DdPair *s, const DdSum *a, const DdSum *b) {
    s->a = *a;
    s->b = *b;
}

typedef struct {
    double a, b;
} DdLeast;

static inline void ddleast_init(DdLeast *l) { l->a = l->b = INFINITY; }

static inline void ddpair_least_add(DdPair *s, DdLeast *l, double a, double b) {
    ddpair_add(s, a, b);
    if (fabs(a) < l->a) l->a = fabs(a);
    if (fabs(b) < l->b) l->b = fabs(b);
}

static inline void ddleast_split(const DdLeast *l, double *a, double *b) {
    *a = l->a;
    *b = l->b;
}
#endif

/* One accumulator in a pair's first lane, its second lane zero: ddsum_add's operations, bit for
 * bit, as one pair's (under SSE2 a lone sum beside a pair costs more as scalar operations, which
 * GCC packs and unpacks, than as the vector ones); ddlane_of starts it from a DdSum, ddlane_sum
 * gives it back */
static inline void ddlane_add(DdPair *s, double x) { ddpair_add(s, x, 0.0); }

static inline void ddlane_of(DdPair *s, const DdSum *a) {
    DdSum zero;
    ddsum_init(&zero);
    ddpair_join(s, a, &zero);
}

static inline DdSum ddlane_sum(const DdPair *s) {
    DdSum a, zero;
    ddpair_split(s, &a, &zero);
    return a;
}

/* One sum over a pair's two lanes (two of its terms per vector operation where ddlane_add takes
 * one, each term in either lane): ddlanes_sum ends it as one DdSum, the second lane's hi added
 * to the first as one more term, its lo to the first's lo, and its size counted too. Its bound
 * (ddsum_certified) given the n terms plus DDLANES_TERMS covers both lanes: hi + lo differs
 * from the sum only by the roundings in lo, which adds up every TwoSum error of both lanes and
 * of the merge (at most n + 1 numbers, of magnitudes summing to at most gamma_n times the
 * sizes) in a tree of additions instead of a chain, which errs by at most gamma_n times their
 * magnitudes as the chain does; the exactly rounded sum it certifies is the sum's, whichever
 * lane took which term. */
#define DDLANES_TERMS 2

static inline DdSum ddlanes_sum(const DdPair *s) {
    DdSum first, second;
    ddpair_split(s, &first, &second);
    ddsum_add(&first, second.hi);
    first.lo += second.lo;
    first.size += second.size;
    return first;
}

#define FSUM_INLINE 64

/* an exactly rounded sum that keeps its terms: the accumulator, and math.fsum's algorithm over
 * the terms where the accumulator is not certified */
typedef struct {
    DdSum acc;
    double *terms;
    Py_ssize_t n, cap;
    double inline_terms[FSUM_INLINE];
} Fsum;

static inline void fsum_init(Fsum *s) {
    ddsum_init(&s->acc);
    s->terms = s->inline_terms;
    s->n = 0;
    s->cap = FSUM_INLINE;
}

static void fsum_free(Fsum *s) {
    if (s->terms != s->inline_terms) PyMem_Free(s->terms);
    s->terms = s->inline_terms;
}

/* add one term; 0 on success, -1 on memory error */
static inline int fsum_add(Fsum *s, double x) {
    if (s->n == s->cap) {
        Py_ssize_t cap = 2 * s->cap;
        double *q = PyMem_Malloc(sizeof(double) * cap);
        if (q == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        memcpy(q, s->terms, sizeof(double) * s->n);
        if (s->terms != s->inline_terms) PyMem_Free(s->terms);
        s->terms = q;
        s->cap = cap;
    }
    s->terms[s->n++] = x;
    ddsum_add(&s->acc, x);
    return 0;
}

/* A triple-length accumulator for sums whose terms cancel to far below their size (the value of
 * a Newton step near its root), where Fsum's double-double bound often cannot certify: hi + lo
 * carries the sum exactly but for `tail`, the only rounded part. It also certifies a sum that
 * falls exactly halfway between two doubles (as a few terms of different exponents often do),
 * which no error bound can: there the tail stayed 0 and hi + lo is the sum. */
typedef struct {
    double hi, lo, tail, err, size;
} Sum3;

static inline void sum3_init(Sum3 *s) { s->hi = s->lo = s->tail = s->err = s->size = 0.0; }

/* add x: TwoSum twice (hi + e and lo + f exact), then the tail with the only rounding, of at
 * most 2^-53 |tail| */
static inline void sum3_add(Sum3 *s, double x) {
    double hi = s->hi + x, b = hi - s->hi, e = (s->hi - (hi - b)) + (x - b);
    double lo = s->lo + e, c = lo - s->lo, f = (s->lo - (lo - c)) + (e - c);
    s->hi = hi;
    s->lo = lo;
    s->tail += f;
    s->err += fabs(s->tail);
    s->size += fabs(x);
}

/* 1 when the bound certifies r = hi + lo (rounded) as the exactly rounded sum, into *out: the
 * sum is r + u within 2^-53 (sum |tail| + |u|), u = (r's tail) + tail rounded; that bound
 * (doubled, for its own rounding) must keep it within half the gaps to r's neighbours, and
 * sum |x| < 2^1020 rules out any overflow, here or in math.fsum. Where every f was 0 (err 0:
 * each tail was 0) hi + lo is the sum exactly, and r, rounded to nearest with ties to even as
 * math.fsum rounds, is its result, ties included. Else 0. */
static inline int sum3_certified(const Sum3 *s, double *out) {
    double r = s->hi + s->lo, b = r - s->hi, t = (s->hi - (r - b)) + (s->lo - b), u, bound;
    double below, above;
    u = t + s->tail;
    bound = (s->err + fabs(u)) * 0x1p-52;
    if (!(s->size < 0x1p1020 && isfinite(u) && isfinite(bound))) return 0;
    if (s->err == 0.0) {
        *out = r;
        return 1;
    }
    if (r == 0.0) return 0;
    neighbour_gaps(r, &below, &above);
    if (r < 0.0) u = -u; /* u towards |r|'s side */
    if (u + bound < 0.5 * above && bound - u < 0.5 * below) {
        *out = r;
        return 1;
    }
    return 0;
}

/* the exactly rounded sum, raising as math.fsum does; frees the kept terms */
static inline int fsum_result(Fsum *s, double *out) {
    Msum slow;
    Py_ssize_t i;
    if (ddsum_certified(&s->acc, s->n, out)) {
        fsum_free(s);
        return 0;
    }
    msum_init(&slow);
    for (i = 0; i < s->n; i++)
        if (msum_add(&slow, s->terms[i]) < 0) {
            msum_free(&slow);
            fsum_free(s);
            return -1;
        }
    fsum_free(s);
    return msum_result(&slow, out);
}

#endif
