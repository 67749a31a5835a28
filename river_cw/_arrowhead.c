/* The compiled arrowhead Gaussian engine: the interface and the numbers of
 * river_cw.arrowhead.ArrowheadGaussian (the readable reference, with the derivation), bit for
 * bit.
 *
 * Each weight block is a feature table (_table.h) whose entries hold a feature's (a_j, k_j, c_j):
 * given the root b (the intercept), its weight is a_j + k_j b + e_j with e_j ~ N(0, c_j). The
 * root's own (mu_b, S) is the entry of the root's key in the same table (its a and k), written
 * where the reference writes it, so that every block keeps the reference's dict order; a pass
 * finds it with one probe. A pass over x computes three exactly rounded sums per block
 * (benchmarks/README.md, "The compiled port of the arrowhead"): G = sum k_j x_j + x_b, the score
 * sum a_j x_j + G mu_b and the features' variance sum c_j x_j^2, each a certified double-double
 * sum (_fsum.h); where its bound cannot certify one (a sum exactly halfway between two doubles,
 * say), a triple-length pass over the same terms, then math.fsum's own algorithm (coords_fsum).
 * An update computes every new value first and writes them only if all are finite.
 * Compile with -ffp-contract=off: the operation order is the reference's.
 *
 * The engine joins the shell (_shell.h: the object's head, re-entry, layout, marks, changes, the
 * blocks' state, lifecycle, connect) with its payload and kernels. Its paths are the diagonal
 * engine's (see the glossary at the head of _shell.h): `learn`,
 * the general path, with the rule's step in Python and forgetting; `learn_native`, the lean
 * path, a binary model's learn_one with the rule's native step (_steps.h); `score_native`, a
 * binary model's predict_one and predict_proba_one in one call; `score_rows`, predict_many and
 * predict_proba_many in one call (as Diagonal.score_rows, _csr.h the parts both share). There are
 * no exact schemes and no learn_rows: learn_many runs the lean path row by row. Every
 * write of an entry is noted (table_note), so that a mark and `changed` cost what was written
 * since (_table.h's marks).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "_csr.h"
#include "_fsum.h"
#include "_input.h"
#include "_steps.h"

/* a feature's (a_j, k_j, c_j); the root's entry holds (mu_b, S) in a and k, and 0 in c */
#define RCW_ENTRY_PAYLOAD double a, k, c;
#include "_table.h"

#define SAFE_BOUND 1e300 /* far enough from float64's limit for a step's rounding */
enum { PASS_OK = 0, PASS_ERROR = -1, PASS_GENERAL = -2 };

/* a feature of x in a pair's block: its entry (-1: new, then its key, a reference, and hash),
 * its value and the conditional variance the margin read (forgotten; the prior's when new) */
typedef struct {
    Py_ssize_t ix;
    double x, c;
    PyObject *key;
    Py_hash_t hash;
} Coord;

/* one (block, sign) of the difference vector, as its pass left it */
typedef struct {
    Py_ssize_t block;
    double sign;
    Py_ssize_t first, end, nseen, nnew; /* its coordinates [first, end): learned, new */
    Py_ssize_t root;                    /* the root's entry, -1 while not stored */
    double x_b, mu_b, S, G, score;      /* S forgotten where x_b is non-zero */
} Pair;

/* the engine's payload, after the shell's head (_shell.h) */
#define RCW_ENGINE_PAYLOAD                                                                       \
    /* the model state */                                                                        \
    double prior, root_variance;                                                                 \
    PyObject *root;                                                                              \
    Py_hash_t root_hash;                                                                         \
    double a_bound, k_bound, c_bound; /* bounds of every feature's |a_j|, |k_j| and c_j */       \
    /* the margin scratch: the last margin's coordinates and pairs, the update's new values */   \
    Coord *coords;                                                                               \
    Py_ssize_t ncoords, coords_cap, nkeyed; /* nkeyed: the coordinates holding a key */          \
    double *scratch;                        /* (a, k, c) per coordinate */                       \
    Py_ssize_t scratch_cap;                                                                      \
    Pair pairs[2];                                                                               \
    int npairs;                                                                                  \
    double v;    /* the margin's variance */                                                     \
    DdSum c_acc; /* the sum of its terms c_j x_j^2, for update's rho (variance_but_root) */      \
    /* the lean cache: learn_native's spec, parsed while the model hands the same object */      \
    PyObject *lean_spec;                                                                         \
    rcw_step step;                                                                               \
    double params[RCW_MAX_PARAMS];                                                               \
    int drop;        /* the scheme: "drop" (1) or "project" (0) */                               \
    double lean_x_b; /* 1.0 with an intercept, else 0.0 */
#define RCW_ENGINE_NAME "arrowhead"
#define RCW_MODULE_NAME "river_cw._arrowhead"
#define RCW_BAD_INPUT_VALUE_ERROR 1 /* river_cw.arrowhead names fsum's ValueError (inf - inf) */
#define RCW_ENGINE_HOOKS(X) X(token_counts, hook_token_counts) /* TokenCounts' type */
#define RCW_SHELL_WEIGHTS
#define RCW_NUMBERS_DOC "{feature: (a, k, c)} and {root: (mu_b, S)}"
#define RCW_BLOCKS_DOC                                                                           \
    "The state: a list (one per block) of dicts feature -> [a, k, c], root -> [mu_b, S] "        \
    "(copies)."
#include "_shell.h"

typedef Engine Arrowhead; /* the shell's object with the arrowhead's payload */

/* river_cw.gaussian.forget: 1/s <- keep/s + rest */
static inline double forget(double s, double keep, double rest) {
    return s / (keep + rest * s);
}

/* the coordinates from `first` on dropped (their keys released) */
static void drop_coords(Arrowhead *self, Py_ssize_t first) {
    Py_ssize_t i;
    for (i = first; self->nkeyed > 0 && i < self->ncoords; i++)
        if (self->coords[i].key != NULL) {
            Py_CLEAR(self->coords[i].key);
            self->nkeyed--;
        }
    self->ncoords = first;
}

/* the margin scratch emptied: no margin to update */
static void release_margin(Arrowhead *self) {
    drop_coords(self, 0);
    self->npairs = 0;
    token_drop(self);
}

/* ---------------------------------------------------------------------------------------- */
/* a pass over x for one block: its coordinates and its three sums                            */

/* the terms of a pass's sums: a coordinate's a_j x_j (the score's) and k_j x_j (G's), learned
 * coordinates only, and c_j x_j^2 (the variance's) */
enum { TERM_A, TERM_K, TERM_C };

/* 1 with coordinate c's `which` term (of block t) into *term, 0 where it has none */
static inline int coord_term(const Table *t, const Coord *c, int which, double *term) {
    if (which == TERM_C)
        *term = c->c * (c->x * c->x);
    else if (c->ix < 0)
        return 0;
    else
        *term = (which == TERM_K ? t->entries[c->ix].k : t->entries[c->ix].a) * c->x;
    return 1;
}

/* The exactly rounded sum of the `which` terms of the coordinates of pairs[0 .. npairs-1], in
 * x's order, then of `more` terms `last`, where the double-double's bound does not certify it:
 * a triple-length accumulator's sum where it certifies it (as it does for a sum exactly halfway
 * between two doubles, which a few terms often give: _fsum.h's Sum3), else math.fsum's
 * algorithm over the terms. 0, or -1 with fsum's error */
static int coords_fsum(Arrowhead *self, const Pair *pairs, int npairs, int which,
                       const double *last, int more, double *out) {
    Sum3 s3;
    Msum s;
    Py_ssize_t i;
    double term;
    int k;
    sum3_init(&s3);
    for (k = 0; k < npairs; k++)
        for (i = pairs[k].first; i < pairs[k].end; i++)
            if (coord_term(&self->blocks.table[pairs[k].block], &self->coords[i], which, &term))
                sum3_add(&s3, term);
    for (k = 0; k < more; k++) sum3_add(&s3, last[k]);
    if (sum3_certified(&s3, out)) return 0;
    msum_init(&s);
    for (k = 0; k < npairs; k++)
        for (i = pairs[k].first; i < pairs[k].end; i++)
            if (coord_term(&self->blocks.table[pairs[k].block], &self->coords[i], which, &term) &&
                msum_add(&s, term) < 0)
                goto fail;
    for (k = 0; k < more; k++)
        if (msum_add(&s, last[k]) < 0) goto fail;
    return msum_result(&s, out);
fail:
    msum_free(&s);
    return -1;
}

/* the exactly rounded sum of acc's n terms, the pair's `which` terms then `last` */
static inline int pair_sum(Arrowhead *self, const Pair *p, DdSum *acc, int which, double last,
                           double *out) {
    ddsum_add(acc, last);
    if (ddsum_certified(acc, p->nseen + 1, out)) return 0;
    return coords_fsum(self, p, 1, which, &last, 1, out);
}

/* One pass over x (a dict, or in the lean mode a TokenCounts: _token_counts.h) for the pair p (its block and sign set): its coordinates appended to
 * the scratch, the terms c_j x_j^2 added to *c_acc, G and the score, the root's (mu_b, S) with S
 * forgotten where x holds the root (nothing is written). lean: x's values read as plain values
 * (_table.h; any other value, or the root among x's keys, is the general path's case) and the
 * root's value x_b as the caller set it in p; else x_b is the root's value in x, 0 without it.
 * PASS_OK; PASS_ERROR with the error (a bad x named; the coordinates dropped); PASS_GENERAL (lean
 * only): the general path's case, no error set. */
static RCW_ALWAYS_INLINE int pass_pair(Arrowhead *self, Pair *p, PyObject *x, double keep,
                                        double rest, int lean,
                     DdSum *c_acc) {
    Table *t = &self->blocks.table[p->block];
    PyObject *key, *value, *root = self->root;
    Py_ssize_t pos = 0, ix, first = self->ncoords, n = first, nseen = 0, nnew = 0;
    Py_hash_t h;
    double xf, unknown = 0.0, prior = self->prior;
    DdPair ak;         /* the terms a_j x_j and k_j x_j */
    DdSum cs = *c_acc; /* the terms c_j x_j^2, in a local (registers) until the end */
    DdSum a_acc, k_acc;
    Coord *coords;
    int forgetting = keep != 1.0;
    if (rcw_grow((void **)&self->coords, &self->coords_cap, first + rcw_x_size(x),
                 sizeof(Coord)) < 0)
        return PASS_ERROR;
    coords = self->coords;
    p->first = first;
    if (!lean) p->x_b = 0.0;
    ddpair_init(&ak);
    const rcw_next_item next = rcw_x_next(x);
    while (next(x, &pos, &key, &value)) {
        Coord *c;
        if (key == root) {
            if (lean) goto general;
            if (value_of(value, &p->x_b) < 0) goto bad;
            continue;
        }
        if (lean) {
            if (plain_value(value, &xf)) goto general;
        } else if (value_of(value, &xf) < 0)
            goto bad;
        if ((h = key_hash(key)) == -1 || (ix = table_find(t, key, h)) == -2) goto bad;
        if (ix < 0) {
            double x2 = xf * xf;
            unknown += xf; /* touched so that bad values surface here too */
            if (x2 == 0.0) continue; /* a zero feature value teaches nothing: store nothing */
            ddsum_add(&cs, prior * x2);
            c = &coords[n++];
            c->ix = -1;
            c->c = prior;
            c->key = Py_NewRef(key);
            c->hash = h;
            self->nkeyed++;
            nnew++;
        } else {
            const Entry *e = &t->entries[ix];
            double cj = forgetting && xf != 0.0 ? forget(e->c, keep, rest) : e->c;
            ddpair_add(&ak, e->a * xf, e->k * xf);
            ddsum_add(&cs, cj * (xf * xf));
            c = &coords[n++];
            c->ix = ix;
            c->c = cj;
            c->key = NULL;
            nseen++;
        }
        c->x = xf;
    }
    *c_acc = cs;
    self->ncoords = p->end = n;
    p->nseen = nseen;
    p->nnew = nnew;
    if ((p->root = table_find(t, root, self->root_hash)) == -2) goto bad;
    p->mu_b = p->root < 0 ? 0.0 : t->entries[p->root].a;
    p->S = p->root < 0 ? self->root_variance : t->entries[p->root].k;
    if (forgetting && p->x_b != 0.0)
        p->S = forget(p->S, keep, rest * (prior / self->root_variance));
    ddpair_split(&ak, &a_acc, &k_acc);
    if (pair_sum(self, p, &k_acc, TERM_K, p->x_b, &p->G) < 0 ||
        pair_sum(self, p, &a_acc, TERM_A, p->G * p->mu_b, &p->score) < 0)
        goto bad;
    if (!isfinite(p->score + unknown)) {
        if (lean) goto general;
        drop_coords(self, first);
        raise_bad_input(x);
        return PASS_ERROR;
    }
    return PASS_OK;
bad:
    self->ncoords = n > self->ncoords ? n : self->ncoords; /* the keys held, to release */
    if (lean) {
        if (!rcw_error_recoverable()) goto fail;
        PyErr_Clear();
        goto general;
    }
    bad_or_propagate(x);
fail:
    drop_coords(self, first);
    return PASS_ERROR;
general:
    self->ncoords = n > self->ncoords ? n : self->ncoords;
    drop_coords(self, first);
    return PASS_GENERAL;
}

/* total where the bound does not certify the sum: coords_fsum, or inf beyond float64 */
static int total_fsum(Arrowhead *self, const Pair *pairs, int npairs, const double *roots,
                      int more, double *out) {
    if (coords_fsum(self, pairs, npairs, TERM_C, roots, more, out) == 0) return 0;
    if (!PyErr_ExceptionMatches(PyExc_OverflowError)) return -1;
    PyErr_Clear(); /* the terms are >= 0: beyond float64 in any order */
    *out = INFINITY;
    return 0;
}

/* The reference's _total of the terms c_j x_j^2 of pairs[0 .. npairs-1] in x's order, then the
 * given root terms: the exactly rounded sum of acc (those n terms) and `more` of `roots`, or inf
 * where it is beyond float64. 0, or -1 (memory) */
static RCW_ALWAYS_INLINE int total(Arrowhead *self, const Pair *pairs, int npairs, DdSum acc,
                                   Py_ssize_t n, const double *roots, int more, double *out) {
    int k;
    for (k = 0; k < more; k++) ddsum_add(&acc, roots[k]);
    if (ddsum_certified(&acc, n + more, out)) return 0;
    return total_fsum(self, pairs, npairs, roots, more, out);
}

/* ---------------------------------------------------------------------------------------- */
/* the margin                                                                                 */

/* a pair's root term of the margin's variance, G^2 S */
static inline double root_term(const Pair *p) { return p->G * p->G * p->S; }

/* The margin of x along the pairs set in the scratch (self->npairs): every pair's pass, m = the
 * exactly rounded sum of sign * score, and v; with forgetting, the forgotten variances written
 * once x is valid. PASS_OK with the margin numbered; PASS_ERROR with the error, nothing changed;
 * PASS_GENERAL (lean): the general path's case. */
static RCW_ALWAYS_INLINE int margin_of(Arrowhead *self, PyObject *x, double keep, double rest,
                                        int lean, double *m) {
    double roots[2];
    int k, r;
    ddsum_init(&self->c_acc);
    drop_coords(self, 0);
    token_drop(self);
    for (k = 0; k < self->npairs; k++)
        if ((r = pass_pair(self, &self->pairs[k], x, keep, rest, lean, &self->c_acc)) != PASS_OK)
            goto fail;
    /* m: math.fsum of at most two finite terms is their sum rounded once, from +0.0 (fsum's
     * exact zero is +0.0), and raises where that is beyond float64 */
    *m = 0.0;
    for (k = 0; k < self->npairs; k++) {
        *m += self->pairs[k].sign * self->pairs[k].score;
        roots[k] = root_term(&self->pairs[k]);
    }
    if (!isfinite(*m)) {
        r = lean ? PASS_GENERAL : PASS_ERROR;
        if (!lean) PyErr_SetString(PyExc_OverflowError, "intermediate overflow in fsum");
        goto fail;
    }
    if (total(self, self->pairs, self->npairs, self->c_acc, self->ncoords, roots, self->npairs,
              &self->v) < 0) {
        r = PASS_ERROR;
        goto fail;
    }
    if (!isfinite(self->v)) {
        r = lean ? PASS_GENERAL : PASS_ERROR;
        if (!lean) raise_bad_input(x);
        goto fail;
    }
    if (keep != 1.0) { /* the forgotten variances, the root's inserted where it is new */
        for (k = 0; k < self->npairs; k++) {
            Pair *p = &self->pairs[k];
            if (p->x_b != 0.0 && p->root < 0 &&
                table_reserve(&self->blocks.table[p->block], 1) < 0) {
                r = PASS_ERROR;
                goto fail;
            }
        }
        for (k = 0; k < self->npairs; k++) {
            Pair *p = &self->pairs[k];
            Table *t = &self->blocks.table[p->block];
            Py_ssize_t i;
            for (i = p->first; i < p->end; i++)
                if (self->coords[i].ix >= 0) {
                    t->entries[self->coords[i].ix].c = self->coords[i].c;
                    table_note(t, self->coords[i].ix);
                }
            if (p->x_b != 0.0) {
                if (p->root < 0) {
                    Entry *e = table_push(t, self->root, self->root_hash);
                    e->a = p->mu_b;
                    e->c = 0.0;
                    p->root = t->used - 1;
                }
                t->entries[p->root].k = p->S;
                table_note(t, p->root);
            }
        }
        self->generation++;
    }
    token_take(self);
    return PASS_OK;
fail:
    release_margin(self);
    return r;
}

/* ---------------------------------------------------------------------------------------- */
/* the update                                                                                 */

/* the margin's variance but pair k's root term (the reference's `_total(others)` for pair k's
 * rho): every pair's c terms, then the other pair's root term; 0, or -1 (memory) */
static int variance_but_root(Arrowhead *self, int k, double *out) {
    double other = self->npairs == 2 ? root_term(&self->pairs[1 - k]) : 0.0;
    return total(self, self->pairs, self->npairs, self->c_acc, self->ncoords, &other,
                 self->npairs - 1, out);
}

/* a pair's step on its coordinates (see update_with) */
typedef struct {
    double sign, shift, tilt, rho, gamma;
} PairStep;

/* one coordinate's new (a, k, c) into out, from its (a, k) (0 for a new feature), its
 * conditional variance c (the margin's) and its value x: the reference's operations in its
 * order; one home for both paths of `update` */
static RCW_ALWAYS_INLINE void step_weight(const PairStep *s, double a, double k, double c,
                                         double x, int drop, double *out) {
    double cx = c * x, f;
    out[0] = a + s->shift * (s->sign * cx);
    out[1] = k - s->tilt * cx;
    if (drop) {
        f = 1.0 - s->rho * (x * cx);
        out[2] = c * (f > 0.0 ? f : 0.0);
    } else
        out[2] = c / (1.0 + s->gamma * (x * cx));
}

/* a coordinate's entry, to be written: its own (noted), or (new) one appended with its key from
 * (0, 0, c), room reserved (the table takes its own reference to the key) */
static RCW_ALWAYS_INLINE Entry *entry_of(Arrowhead *self, Table *t, Coord *c) {
    Entry *e;
    if (c->ix >= 0) {
        table_note(t, c->ix);
        return &t->entries[c->ix];
    }
    e = table_push(t, c->key, c->hash);
    Py_CLEAR(c->key);
    self->nkeyed--;
    e->a = e->k = 0.0;
    e->c = c->c;
    return e;
}

/* The step (alpha, gamma) on the last margin (see the module docstring of river_cw.arrowhead):
 * per pair the root's new (mu_b, S) and every coordinate's new (a, k, c), written only if all are
 * finite. 1 applied, 0 refused (float64 cannot express it: nothing written), -1 an error (memory).
 *
 * The bounds make the common case one pass: with gamma >= 0 no c_j grows, and since c_j <=
 * c_bound and c_j x_j^2 <= v, |c_j x_j| <= sqrt(c_bound v), so no a_j moves by more than |shift|
 * sqrt(c_bound v) nor any k_j by more than |tilt| sqrt(c_bound v). While a_bound and k_bound
 * (bounds of every feature's |a_j| and |k_j|) stay far from float64's limit after such a move,
 * every new value is finite and each goes straight into its entry; otherwise every value is
 * computed first and written only if all are finite (the reference's order of work). */
static RCW_ALWAYS_INLINE int update_with(Arrowhead *self, double alpha, double gamma, int drop) {
    double root[2][2], reach, moves_a = 0.0, moves_k = 0.0;
    PairStep steps[2];
    Py_ssize_t i;
    int k, in_place;
    for (k = 0; k < self->npairs; k++) {
        const Pair *p = &self->pairs[k];
        PairStep *s = &steps[k];
        double den, g;
        if (variance_but_root(self, k, &den) < 0) return -1;
        if ((den = 1.0 + gamma * den) == 0.0) return 0; /* Python's ZeroDivisionError */
        s->sign = p->sign;
        s->gamma = gamma;
        s->rho = gamma / den;
        g = p->sign * p->G;
        root[k][0] = p->mu_b + alpha * (p->S * g);
        if ((den = 1.0 + s->rho * (p->G * p->G * p->S)) == 0.0) return 0;
        root[k][1] = p->S / den;
        s->shift = alpha + s->rho * g * root[k][0];
        s->tilt = s->rho * p->G;
        if (!(isfinite(root[k][0]) && isfinite(root[k][1]))) return 0;
        if (fabs(s->shift) > moves_a) moves_a = fabs(s->shift);
        if (fabs(s->tilt) > moves_k) moves_k = fabs(s->tilt);
    }
    reach = sqrt(self->c_bound * self->v);
    in_place = gamma >= 0.0 && self->a_bound + moves_a * reach < SAFE_BOUND &&
               self->k_bound + moves_k * reach < SAFE_BOUND;
    if (!in_place) { /* every value computed first */
        if (rcw_grow((void **)&self->scratch, &self->scratch_cap, self->ncoords,
                     3 * sizeof(double)) < 0)
            return -1;
        for (k = 0; k < self->npairs; k++) {
            const Pair *p = &self->pairs[k];
            const Table *t = &self->blocks.table[p->block];
            for (i = p->first; i < p->end; i++) {
                const Coord *c = &self->coords[i];
                const Entry *e = c->ix < 0 ? NULL : &t->entries[c->ix];
                double *out = &self->scratch[3 * i]; /* a zero divisor: not finite */
                step_weight(&steps[k], e ? e->a : 0.0, e ? e->k : 0.0, c->c, c->x, drop, out);
                if (!(isfinite(out[0]) && isfinite(out[1]) && isfinite(out[2]))) return 0;
            }
        }
    }
    for (k = 0; k < self->npairs; k++) { /* room for the new features and a new root */
        const Pair *p = &self->pairs[k];
        if (table_reserve(&self->blocks.table[p->block],
                          p->nnew + (p->root < 0 && p->x_b != 0.0)) < 0)
            return -1;
    }
    for (k = 0; k < self->npairs; k++) {
        const Pair *p = &self->pairs[k];
        const PairStep s = steps[k];
        Table *t = &self->blocks.table[p->block];
        Coord *c = &self->coords[p->first], *end = &self->coords[p->end];
        Entry *e = p->root < 0 ? NULL : &t->entries[p->root];
        if (e == NULL && p->x_b != 0.0) { /* the root stored, before the new features */
            e = table_push(t, self->root, self->root_hash);
            e->c = 0.0;
        } else if (e != NULL)
            table_note(t, p->root);
        if (e != NULL) {
            e->a = root[k][0];
            e->k = root[k][1];
        }
        if (in_place)
            for (; c < end; c++) {
                double w[3];
                e = entry_of(self, t, c);
                step_weight(&s, e->a, e->k, c->c, c->x, drop, w);
                e->a = w[0];
                e->k = w[1];
                e->c = w[2];
            }
        else {
            const double *w = &self->scratch[3 * p->first];
            for (; c < end; c++, w += 3) {
                e = entry_of(self, t, c);
                e->a = w[0];
                e->k = w[1];
                e->c = w[2];
                if (fabs(w[0]) > self->a_bound) self->a_bound = fabs(w[0]);
                if (fabs(w[1]) > self->k_bound) self->k_bound = fabs(w[1]);
            }
        }
    }
    if (in_place) {
        self->a_bound += moves_a * reach;
        self->k_bound += moves_k * reach;
    }
    self->generation++;
    return 1;
}

/* update_with, compiled once per scheme */
static int update(Arrowhead *self, double alpha, double gamma, int drop) {
    return drop ? update_with(self, alpha, gamma, 1) : update_with(self, alpha, gamma, 0);
}

/* learn's pairs (rcw_pairs) into the scratch: how many, or -1 with an error */
static int set_pairs(Arrowhead *self, PyObject *pairs) {
    Py_ssize_t block[2];
    double sign[2];
    int n = rcw_pairs(pairs, self->blocks.n, block, sign), k;
    for (k = 0; k < n; k++) {
        self->pairs[k].block = block[k];
        self->pairs[k].sign = sign[k];
    }
    self->npairs = n < 0 ? 0 : n;
    return n;
}

/* ---------------------------------------------------------------------------------------- */
/* learn: the general path                                                                    */

/* learn(x, pairs, step, scheme, w, keep=1.0, rest=0.0) -> 0, 1 or 2: the reference's learn
 * (river_cw.gaussian._learn): margin, the rule's step (Python, called with the engine free)
 * and update with `scheme`, "project" or "drop" (the arrowhead has no exact scheme: the
 * models refuse one, and so does the engine) */
static PyObject *engine_learn(Arrowhead *self, PyObject *const *args, Py_ssize_t nargs) {
    PyObject *x, *scheme = NULL;
    double keep, rest, m, alpha, gamma;
    uint64_t token;
    int outcome, drop, n;
    if (learn_args(args, nargs, &keep, &rest) < 0) return NULL;
    if (args[3] == Py_None) {
        PyErr_SetString(PyExc_ValueError, "the arrowhead engine's scheme is 'project' or 'drop'");
        return NULL;
    }
    drop = !(PyUnicode_Check(args[3]) && PyUnicode_CompareWithASCIIString(args[3], "project") == 0);
    if (enter(self) < 0) return NULL;
    release_margin(self);
    if ((n = set_pairs(self, args[1])) < 0 || (x = as_dict(args[0])) == NULL) {
        self->npairs = 0;
        leave(self);
        return NULL;
    }
    outcome = margin_of(self, x, keep, rest, 0, &m);
    Py_DECREF(x);
    token = self->token.last;
    leave(self); /* the step is Python's: it may call the engine */
    if (outcome != PASS_OK) return NULL;
    if (self->v <= 0.0) { /* no non-zero feature, or all their variance is spent */
        release_margin(self);
        return PyLong_FromLong(LEARN_NOTHING);
    }
    outcome = rule_step(args[2], args[3], m, self->v, NULL, args[4], &alpha, &gamma, &scheme);
    Py_XDECREF(scheme); /* args[3]'s */
    if (outcome == LEARN_APPLIED) {
        if (enter(self) < 0) return NULL;
        if (token_check(self, token) < 0) {
            leave(self);
            return NULL;
        }
        outcome = update(self, alpha, gamma, drop);
        if (outcome >= 0) outcome = outcome ? LEARN_APPLIED : LEARN_SKIPPED;
        release_margin(self);
        leave(self);
    }
    return outcome < 0 ? NULL : PyLong_FromLong(outcome);
}

/* ---------------------------------------------------------------------------------------- */
/* learn_native: the lean path                                                                */

/* learn_native's `lean` = (step, scheme, intercept) into the lean cache: step = (name, params),
 * a rule's `_step` in C (_steps.h); scheme "project" or "drop"; intercept None or the engine's
 * root. 0, or -1 with an error */
static int parse_lean(Arrowhead *self, PyObject *lean) {
    PyObject *scheme, *intercept;
    double params[RCW_MAX_PARAMS];
    rcw_step found;
    int drop;
    if (!PyTuple_Check(lean) || PyTuple_GET_SIZE(lean) != 3) {
        PyErr_SetString(PyExc_TypeError,
                        "learn_native's lean is ((name, (params...)), scheme, intercept)");
        return -1;
    }
    scheme = PyTuple_GET_ITEM(lean, 1);
    intercept = PyTuple_GET_ITEM(lean, 2);
    if ((found = rcw_parse_step(PyTuple_GET_ITEM(lean, 0), params)) == NULL) return -1;
    if (PyUnicode_Check(scheme) && PyUnicode_CompareWithASCIIString(scheme, "project") == 0)
        drop = 0;
    else if (PyUnicode_Check(scheme) && PyUnicode_CompareWithASCIIString(scheme, "drop") == 0)
        drop = 1;
    else {
        PyErr_SetString(PyExc_ValueError, "learn_native's scheme is 'project' or 'drop'");
        return -1;
    }
    if (intercept != Py_None && intercept != self->root) {
        PyErr_SetString(PyExc_ValueError, "learn_native's intercept is None or the root");
        return -1;
    }
    Py_XSETREF(self->lean_spec, Py_NewRef(lean));
    self->step = found;
    memcpy(self->params, params, sizeof params);
    self->drop = drop;
    self->lean_x_b = intercept == Py_None ? 0.0 : 1.0;
    return 0;
}

/* learn_native(x, y, w, class_index, lean) -> 0 (learned, or nothing to learn), 2 (skipped:
 * float64 cannot express the step) or -1 (the general path's case: nothing changed, no error
 * set): `learn` of a binary model (one block) for a known label y (block 1's sign is +1) and a
 * float weight w > 0, x's values read as river_cw.validation.as_floats reads them and the
 * intercept (when lean names it) as the root with x_b = 1.0, as GaussianClassifier._features
 * appends it; the rule's step in C. -1 as well for any other model, label, weight or x. */
static PyObject *engine_learn_native(Arrowhead *self, PyObject *const *args,
                                     Py_ssize_t nargs) {
    double w, m, alpha, gamma;
    int outcome, r;
    if (nargs != 5 || !PyDict_Check(args[3])) {
        PyErr_SetString(PyExc_TypeError, "learn_native(x, y, w, class_index, lean)");
        return NULL;
    }
    if ((outcome = rcw_binary_case(args, self->blocks.n, &w, &self->pairs[0].sign)) <= 0)
        return outcome < 0 ? NULL : PyLong_FromLong(-1);
    if (args[4] != self->lean_spec && parse_lean(self, args[4]) < 0) {
        if (!PyErr_ExceptionMatches(PyExc_OverflowError)) return NULL;
        PyErr_Clear(); /* a parameter beyond float64: the Python step's case */
        return PyLong_FromLong(-1);
    }
    if (enter(self) < 0) return NULL;
    self->pairs[0].block = 0;
    self->pairs[0].x_b = self->lean_x_b;
    self->npairs = 1;
    outcome = margin_of(self, args[0], 1.0, 0.0, 1, &m);
    if (outcome == PASS_OK) {
        outcome = LEARN_NOTHING;
        if (self->v > 0.0) { /* else no non-zero feature, or all their variance is spent */
            r = self->step(self->params, m, self->v, w, &alpha, &gamma);
            if (r > 0) /* applied (1), refused (0) or an error (-1) */
                r = update(self, alpha, gamma, self->drop) - 1;
            if (r < -1)
                outcome = PASS_ERROR;
            else if (r < 0)
                outcome = LEARN_SKIPPED;
        }
    }
    release_margin(self);
    leave(self);
    if (outcome == PASS_ERROR) return NULL;
    return PyLong_FromLong(outcome == PASS_GENERAL ? -1 : outcome);
}

/* ---------------------------------------------------------------------------------------- */
/* predicting                                                                                 */

/* The score of block b for x, sum_j a_j x_j + G mu_b, and where `variance` is not NULL its
 * variance, the exactly rounded sum of the c_j x_j^2 and G^2 S (inf beyond float64): the pass of
 * a pair (b, +1) over x (pass_pair, lean or not, with the root's x_b as there), its coordinates
 * appended to the scratch for the caller to drop. PASS_OK, PASS_ERROR with the error, or
 * PASS_GENERAL (lean): the general path's case, no error set. One home for scores,
 * score_variances and score_native, so that they give the same numbers. */
static RCW_ALWAYS_INLINE int block_score(Arrowhead *self, Py_ssize_t b, PyObject *x, int lean,
                                         double x_b, double *score, double *variance) {
    Pair p = {.block = b, .sign = 1.0, .x_b = x_b};
    DdSum c_acc;
    double root;
    int r;
    ddsum_init(&c_acc);
    if ((r = pass_pair(self, &p, x, 1.0, 0.0, lean, &c_acc)) != PASS_OK) return r;
    *score = p.score;
    if (variance == NULL) return PASS_OK;
    root = root_term(&p);
    return total(self, &p, 1, c_acc, p.end - p.first, &root, 1, variance) < 0 ? PASS_ERROR
                                                                              : PASS_OK;
}

/* Every block's score of x (block_score) into a new list, or (variances) its variance. A bad x
 * raises, every value touched. The margin scratch is left as it was (a rule's step may predict
 * between margin and update). */
static PyObject *per_block(Arrowhead *self, PyObject *x_in, int variances) {
    PyObject *x, *out = NULL, *f;
    Py_ssize_t b, mark;
    double score, variance;
    if (enter(self) < 0) return NULL;
    mark = self->ncoords;
    if ((x = as_dict(x_in)) == NULL || (out = PyList_New(self->blocks.n)) == NULL) goto done;
    for (b = 0; b < self->blocks.n; b++) {
        int r = block_score(self, b, x, 0, 0.0, &score, variances ? &variance : NULL);
        drop_coords(self, mark);
        if (r != PASS_OK || (f = PyFloat_FromDouble(variances ? variance : score)) == NULL) {
            Py_CLEAR(out);
            goto done;
        }
        PyList_SET_ITEM(out, b, f);
    }
done:
    Py_XDECREF(x);
    leave(self);
    return out;
}

/* scores(x): mu_b . x for every block b */
static PyObject *engine_scores(Arrowhead *self, PyObject *x) { return per_block(self, x, 0); }

/* score_variances(x): the variance of every block's score, G^2 S + sum c_j x_j^2 */
static PyObject *engine_score_variances(Arrowhead *self, PyObject *x) {
    return per_block(self, x, 1);
}

/* score_native(x, intercept, variance) -> m, or (m, v) when `variance` is true: the score of a
 * binary model (one block) and its variance, the numbers scores() and score_variances() give
 * for x with the intercept (None, or the root) appended as GaussianClassifier._features appends
 * it: predict_one and predict_proba_one in one call. None, nothing raised, where the general path
 * (scores, score_variances) must serve: an engine of several blocks, x neither an exact dict
 * nor a TokenCounts (_token_counts.h), a value other than a float, an int within float64 or a bool, the root among x's keys, an error of
 * a key's hash or ==, a score beyond float64 (scores() raises what it raises). As
 * Diagonal.score_native; the margin scratch is left as it was. */
static PyObject *engine_score_native(Arrowhead *self, PyObject *const *args,
                                     Py_ssize_t nargs) {
    double m, v;
    Py_ssize_t mark;
    int r, variance;
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "score_native(x, intercept, variance)");
        return NULL;
    }
    if (args[1] != Py_None && args[1] != self->root) {
        PyErr_SetString(PyExc_ValueError, "score_native's intercept is None or the root");
        return NULL;
    }
    if ((variance = PyObject_IsTrue(args[2])) < 0) return NULL;
    if (!rcw_x_readable(args[0]) || self->blocks.n != 1) Py_RETURN_NONE;
    if (enter(self) < 0) return NULL;
    mark = self->ncoords;
    r = block_score(self, 0, args[0], 1, args[1] == Py_None ? 0.0 : 1.0, &m,
                    variance ? &v : NULL);
    drop_coords(self, mark);
    leave(self);
    if (r != PASS_OK) return r == PASS_GENERAL ? Py_NewRef(Py_None) : NULL;
    return variance ? Py_BuildValue("dd", m, v) : PyFloat_FromDouble(m);
}

/* Row i of the CSR batch c as the dict river_cw.batch.Rows.row(i) makes of it (a new reference),
 * for block_score to read: each stored column's name (features[j], or the int j) with its value
 * as a float, in the stored order. NULL with no error set where the general path must serve the
 * row (a column outside the matrix or stored twice in the row, a name whose hash or == raised);
 * NULL with an error that must propagate. seen[j]: the last row (+ 1) that held column j. */
static PyObject *csr_row(const RcwCsr *c, Py_ssize_t i, Py_ssize_t *seen) {
    /* sized for its entries at once: it never resizes as it fills (as _text.c's counts) */
    PyObject *row = _PyDict_NewPresized(c->indptr[i + 1] - c->indptr[i]), *key, *value;
    Py_ssize_t l;
    int rc;
    if (row == NULL) return NULL;
    for (l = c->indptr[i]; l < c->indptr[i + 1]; l++) {
        Py_ssize_t j = c->indices[l];
        if (j < 0 || j >= c->ncols || seen[j] == i + 1) goto general;
        seen[j] = i + 1;
        key = c->features == Py_None ? PyLong_FromSsize_t(j)
                                     : Py_NewRef(PyList_GET_ITEM(c->features, j));
        value = PyFloat_FromDouble(c->data[l]);
        rc = key == NULL || value == NULL ? -1 : PyDict_SetItem(row, key, value);
        Py_XDECREF(key);
        Py_XDECREF(value);
        if (rc < 0) {
            if (rcw_error_recoverable())
                PyErr_Clear(); /* the general path meets it again and raises it */
            goto general;
        }
    }
    return row;
general:
    Py_DECREF(row);
    return NULL;
}

/* row i of a score_rows call (rcw_row_score): block_score's lean score, as score_native's, of the
 * dict row or of the CSR row's dict (csr_row); 0 where score_native gives None */
static int row_score(void *engine, const RcwScoreRows *s, Py_ssize_t i, double *m, double *v) {
    Arrowhead *self = engine;
    Py_ssize_t mark = self->ncoords;
    PyObject *row;
    int r;
    if (self->blocks.n != 1) return 0;
    row = s->is_csr ? csr_row(&s->csr, i, s->seen) : Py_NewRef(PyList_GET_ITEM(s->rows, i));
    if (row == NULL) return PyErr_Occurred() ? -1 : 0;
    r = !rcw_x_readable(row) ? PASS_GENERAL
                             : block_score(self, 0, row, 1, s->intercept == Py_None ? 0.0 : 1.0,
                                           m, s->erfc != NULL ? v : NULL);
    drop_coords(self, mark);
    Py_DECREF(row);
    return r == PASS_OK ? 1 : r == PASS_GENERAL ? 0 : -1;
}

/* score_rows(rows, intercept, proba) -> list: per row of a binary engine (one block), the score
 * m that score_native(row, intercept, ...) gives, or with proba = (first, second, temperature,
 * erfc) the probabilities of its two labels made of m and its variance (rcw_binary_proba); None
 * where score_native gives None (the general path serves the row and raises there what
 * predict_one raises), and for every row of an engine of several blocks. rows: a list of dicts,
 * or CSR arrays (data, indices, indptr, features, ncols), each row read as the dict
 * Rows.row(i) (csr_row), a ValueError when two of their columns are named alike
 * (Rows.check_names; _csr.h). Diagonal.score_rows' contract (_batch.h): both serve
 * GaussianClassifier._native_scores. Every score is block_score's, lean, as score_native's. */
static PyObject *engine_score_rows(Arrowhead *self, PyObject *args) {
    RcwScoreRows s;
    PyObject *out = NULL;
    if (rcw_score_rows_open(args, &s) < 0) return NULL;
    if (s.intercept != Py_None && s.intercept != self->root)
        PyErr_SetString(PyExc_ValueError, "score_rows' intercept is None or the root");
    else if (enter(self) == 0) {
        out = rcw_score_rows_list(&s, row_score, self);
        leave(self);
    }
    rcw_score_rows_close(&s);
    return out;
}

/* ---------------------------------------------------------------------------------------- */
/* the blocks' views                                                                          */

/* the views' context of block t: its root's (mu_b, S), its entry's or the prior's (0,
 * root_variance) */
static void view_context(const Arrowhead *self, const Table *t, double *ctx) {
    Py_ssize_t i;
    for (i = 0; i < t->used; i++)
        if (t->entries[i].key == self->root) {
            ctx[0] = t->entries[i].a;
            ctx[1] = t->entries[i].k;
            return;
        }
    ctx[0] = 0.0;
    ctx[1] = self->root_variance;
}

/* an entry's mean mu_j = a_j + k_j mu_b or marginal variance c_j + k_j k_j S (the root's own
 * mu_b and S), given its block's (mu_b, S) */
static double entry_view(const Arrowhead *self, const Entry *e, const double *ctx, int variance) {
    if (e->key == self->root) return variance ? e->k : e->a;
    return variance ? e->c + e->k * e->k * ctx[1] : e->a + e->k * ctx[0];
}

static PyObject *arrowhead_get_root_variance(Arrowhead *self, void *closure) {
    return PyFloat_FromDouble(self->root_variance);
}

static PyObject *arrowhead_get_root(Arrowhead *self, void *closure) {
    return Py_NewRef(self->root);
}

/* ---------------------------------------------------------------------------------------- */
/* the shell's hooks (_shell.h) and the type                                                  */

static void payload_drop_margin(Arrowhead *self) { release_margin(self); }

static int payload_traverse(Arrowhead *self, visitproc visit, void *arg) {
    Py_ssize_t i;
    for (i = 0; i < self->ncoords; i++) Py_VISIT(self->coords[i].key);
    Py_VISIT(self->root);
    Py_VISIT(self->lean_spec);
    return 0;
}

/* the root stays until dealloc: every method reads it */
static void payload_clear(Arrowhead *self) { Py_CLEAR(self->lean_spec); }

static void payload_free(Arrowhead *self) {
    Py_CLEAR(self->root);
    PyMem_Free(self->coords);
    PyMem_Free(self->scratch);
}

static Py_ssize_t payload_bytes(const Arrowhead *self) {
    return sizeof(Coord) * self->coords_cap + 3 * sizeof(double) * self->scratch_cap;
}

/* block 0's a_j and mu_b negated */
static void entry_negate(Entry *e) { e->a = -e->a; }

/* an entry's numbers, a feature's (a_j, k_j, c_j) or the root's (mu_b, S), as a new list (the
 * `blocks` state) or tuple (`changed`); NULL with an error */
static PyObject *entry_numbers(const Arrowhead *self, const Entry *e, int as_list) {
    if (e->key == self->root) return Py_BuildValue(as_list ? "[dd]" : "(dd)", e->a, e->k);
    return Py_BuildValue(as_list ? "[ddd]" : "(ddd)", e->a, e->k, e->c);
}

/* a weight given as its numbers: a feature's three, the root's two (its entry holds 0 in c) */
static int entry_read(Arrowhead *self, PyObject *key, PyObject *w, Payload *out) {
    double numbers[3] = {0.0, 0.0, 0.0};
    if (read_numbers(w, key == self->root ? 2 : 3, numbers,
                     "a weight is (a, k, c), the root's (mu_b, S)") < 0)
        return -1;
    out->a = numbers[0];
    out->k = numbers[1];
    out->c = numbers[2];
    return 0;
}

/* the bounds of update grown to hold e (a feature's: the root's numbers have none) */
static void entry_written(Arrowhead *self, const Entry *e) {
    if (e->key == self->root) return;
    if (fabs(e->a) > self->a_bound) self->a_bound = fabs(e->a);
    if (fabs(e->k) > self->k_bound) self->k_bound = fabs(e->k);
    if (e->c > self->c_bound) self->c_bound = e->c;
}

/* the blocks replaced: the bounds of update made anew from the entries (the Python engine has
 * none; the diagonal's mean_bound is its caller's, see reset_bound) */
static void payload_replaced(Arrowhead *self) {
    Py_ssize_t b, i;
    self->a_bound = self->k_bound = 0.0;
    self->c_bound = self->prior;
    for (b = 0; b < self->blocks.n; b++)
        for (i = 0; i < self->blocks.table[b].used; i++)
            entry_written(self, &self->blocks.table[b].entries[i]);
}

/* Arrowhead(initial_variance, root, root_variance=None) */
static PyObject *engine_new(PyTypeObject *type, PyObject *args, PyObject *kwds) {
    static char *kwlist[] = {"initial_variance", "root", "root_variance", NULL};
    PyObject *root, *root_variance = Py_None;
    double prior;
    Arrowhead *self;
    Py_hash_t h;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "dO|O", kwlist, &prior, &root, &root_variance))
        return NULL;
    if ((h = PyObject_Hash(root)) == -1) return NULL;
    if ((self = engine_alloc(type)) == NULL) return NULL;
    self->prior = self->root_variance = self->c_bound = prior;
    self->root = Py_NewRef(root);
    self->root_hash = h;
    if (root_variance != Py_None &&
        (self->root_variance = PyFloat_AsDouble(root_variance)) == -1.0 && PyErr_Occurred()) {
        Py_DECREF(self);
        return NULL;
    }
    return (PyObject *)self;
}

static PyMethodDef engine_methods[] = {RCW_SHELL_METHODS{NULL}};

static PyGetSetDef engine_getset[] = {
    {"root", (getter)arrowhead_get_root, NULL, "The root's feature name (the intercept).", NULL},
    {"root_variance", (getter)arrowhead_get_root_variance, NULL, "The root's prior variance.",
     NULL},
    RCW_SHELL_GETSET
    {NULL},
};

RCW_SHELL_TYPE(ArrowheadType, "river_cw._arrowhead.Arrowhead", Py_TPFLAGS_BASETYPE,
               "The compiled arrowhead Gaussian engine (see river_cw.arrowhead).");

RCW_SHELL_MODULE(
    "The compiled arrowhead Gaussian engine of river_cw (optional; see river_cw.arrowhead).");

PyMODINIT_FUNC PyInit__arrowhead(void) {
    return shell_module(&moduledef, &ArrowheadType, "Arrowhead");
}
