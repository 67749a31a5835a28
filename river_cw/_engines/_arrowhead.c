/* The compiled arrowhead Gaussian engine: the interface and the numbers of
 * river_cw._engines.arrowhead.ArrowheadGaussian (the readable reference, with the derivation), bit for
 * bit.
 *
 * Each weight block is a feature table (_table.h) whose entries hold a feature's (a_j, k_j, c_j):
 * given the root b (the intercept), its weight is a_j + k_j b + e_j with e_j ~ N(0, c_j). The
 * root's own (mu_b, S) is the entry of the root's key in the same table (its a and k), written
 * where the reference writes it, so that every block keeps the reference's dict order; a pass
 * finds it with one probe. A pass over x computes three exactly rounded sums per block
 * (benchmarks/README.md, "The compiled port of the arrowhead"): G = sum k_j x_j + x_b, the score
 * sum a_j x_j + G mu_b and the features' variance sum c_j x_j^2, each a certified double-double
 * sum (_fsum.h); where its bound cannot certify one, the terms show whether the double-double
 * is exact (a sum exactly halfway between two doubles, say; the lean CSR pass keeps their least
 * magnitudes, which show it without reading them again), else a triple-length pass over them,
 * then math.fsum's own algorithm (coords_fsum).
 * An update computes every new value first and writes them only if all are finite.
 * Compile with -ffp-contract=off: the operation order is the reference's.
 *
 * The engine joins the shell (_shell.h: the object's head, re-entry, layout, marks, changes, the
 * blocks' state, lifecycle, connect) with its payload and kernels. Its paths are the diagonal
 * engine's (see the glossary at the head of _shell.h): `learn`, the general path, with the
 * rule's step in Python and forgetting; `learn_native`, the lean path, a binary model's
 * learn_one with the rule's native step (_steps.h); `score_native`, a binary model's predict_one
 * and predict_proba_one in one call, whose pass over a text's TokenCounts stays in the scratch
 * (the scored pass, score_kept) for `learn_native` on the same counts, which then takes its
 * margin without a second pass; and the batch kernel of _batch.h, whose hooks it defines:
 * `learn_rows`, learn_many in one call (its dict rows through learn_native's path, its CSR rows
 * straight from the arrays: the lean CSR row, or the general row for the rest), and
 * `score_rows`, predict_many and predict_proba_many in one call. Every pass is one pass's
 * formulas over another source (pass_pair over a dict, pass_row over a resolved row, pass_csr
 * over the CSR arrays; coord_learned, coord_new and pair_close their common part), every margin
 * ends in margin_close and every update is update_with. The root is no feature: it is the
 * intercept's column of a row (x_b), and the rows share its numbers. There are no exact schemes.
 * Every write of an entry is noted (table_note), so that a mark and `changed` cost what was
 * written since (_table.h's marks).
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
#include "_calibration.h"

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
    double x_b, mu_b, S, G, score;      /* S forgotten where forgets_root */
    double keep, rest;   /* the forgetting of its pass (keep 1.0: none), for coord_term */
    Py_ssize_t touched;  /* its learned coordinates of non-zero value: forgotten ones */
    int forgets_root;    /* whether its pass forgot the root (forgot_root) */
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
    Py_ssize_t c_more; /* the terms c_acc took beyond them (a lean CSR row's: DDLANES_TERMS) */   \
    /* the lean cache: learn_native's spec, parsed while the model hands the same object */      \
    PyObject *lean_spec;                                                                         \
    rcw_step step;                                                                               \
    double params[RCW_MAX_PARAMS];                                                               \
    int drop;        /* the scheme: "drop" (1) or "project" (0) */                               \
    double lean_x_b; /* 1.0 with an intercept, else 0.0 */                                       \
    RcwTemperature temperature; /* the spec's calibration (_calibration.h) */                    \
    /* the centre of a lean call's x (score_native's, learn_native's: river_cw.centring), a */    \
    /* dict {feature: mean} borrowed for the call, or NULL: x's values as they are */             \
    PyObject *centre;                                                                            \
    /* the scored pass: score_native's pass over a TokenCounts, kept in the scratch (pair 0, */ \
    /* c_acc) for learn_native on the same x (scored_holds); NULL: none */                      \
    PyObject *scored;                                                                            \
    uint64_t scored_generation; /* the generation it read */                                     \
    double scored_x_b;          /* the root's x_b it read */                                     \
    /* the batch kernel's: learn_rows' CSR columns (_batch.h's batch cache), or NULL; the lean */ \
    /* CSR row whose coordinates the scratch has not laid out (pass_csr, lay_out): its stored */  \
    /* columns, values and their count (row_ind NULL: none) */                                   \
    struct BatchCache *batch;                                                                    \
    const Py_ssize_t *row_ind;                                                                   \
    const double *row_data;                                                                      \
    Py_ssize_t row_n;
#define RCW_ENGINE_NAME "arrowhead"
#define RCW_MODULE_NAME "river_cw._engines._arrowhead"
#define RCW_BAD_INPUT_VALUE_ERROR 1 /* river_cw._engines.arrowhead names fsum's ValueError (inf - inf) */
#define RCW_ENGINE_HOOKS(X) X(token_counts, hook_token_counts) /* TokenCounts' type */
#define RCW_SHELL_WEIGHTS
#define RCW_NUMBERS_DOC "{feature: (a, k, c)} and {root: (mu_b, S)}"
#define RCW_BLOCKS_DOC                                                                           \
    "The state: a list (one per block) of dicts feature -> [a, k, c], root -> [mu_b, S] "        \
    "(copies)."
#include "_shell.h"

typedef Engine Arrowhead; /* the shell's object with the arrowhead's payload */

/* score_rows' sums of a CSR row (_batch.h's csr_row_score), pass_pair's terms: a_j x_j and
 * k_j x_j of the learned features, c_j x_j^2 of every coordinate, the unseen values (touched
 * apart); the root's terms join them at the end (row_score_sums) */
typedef struct {
    DdPair ak, c; /* c: its lane (ddlane_add) */
    double unknown;
} RowScore;

/* the same sums by math.fsum's algorithm, where their bound does not certify them */
typedef struct {
    Msum a, k, c;
} RowScoreExact;

/* what a call's CSR rows share: the root's x_b (1.0 with the intercept, else 0.0) and (mu_b, S),
 * its entry's (the prior's, (0, root_variance), where it is not stored) */
typedef struct {
    double x_b, mu_b, S;
} RowScoreCall;

#include "_batch.h"

/* the batch kernel's hooks are defined below, with the predictions */

static void entry_written(Arrowhead *self, const Entry *e);

/* the keys of the coordinates from `first` on released */
static RCW_NOINLINE void drop_keys(Arrowhead *self, Py_ssize_t first) {
    Py_ssize_t i;
    for (i = first; self->nkeyed > 0 && i < self->ncoords; i++)
        if (self->coords[i].key != NULL) {
            Py_CLEAR(self->coords[i].key);
            self->nkeyed--;
        }
}

/* the coordinates from `first` on dropped (their keys released); from 0, the scored pass too */
static inline void drop_coords(Arrowhead *self, Py_ssize_t first) {
    if (self->nkeyed > 0) drop_keys(self, first);
    self->ncoords = first;
    if (first == 0 && self->scored != NULL) Py_CLEAR(self->scored);
}

/* the margin scratch emptied: no margin to update */
static inline void release_margin(Arrowhead *self) {
    self->row_ind = NULL;
    self->c_more = 0;
    drop_coords(self, 0);
    self->npairs = 0;
    token_drop(self);
}

/* ---------------------------------------------------------------------------------------- */
/* a pass over x for one block: its coordinates and its three sums                            */

/* river_cw._engines.arrowhead._forget: a touched feature's (a, k, c) forgotten into out, with
 * the root's mean mu_b: 1/c <- keep/c + rest, k/c <- keep k/c, its mean a + k mu_b kept */
static inline void forget_entry(const Entry *e, double keep, double rest, double mu_b,
                                double *out) {
    double d = keep + rest * e->c, k = keep * e->k / d;
    out[0] = e->a + (e->k - k) * mu_b;
    out[1] = k;
    out[2] = e->c / d;
}

/* whether a pass of pair p forgets coordinate c: learned, of non-zero value, p forgetting */
static inline int coord_forgotten(const Pair *p, const Coord *c) {
    return p->keep != 1.0 && c->ix >= 0 && c->x != 0.0;
}

/* the terms of a pass's sums: a coordinate's a_j x_j (the score's) and k_j x_j (G's), learned
 * coordinates only, and c_j x_j^2 (the variance's); k_j k_j' of the forgotten coordinates (the
 * root's forgetting: forgot_root) */
enum { TERM_A, TERM_K, TERM_C, TERM_KK };

/* 1 with coordinate c's `which` term (of pair p, block t) into *term, 0 where it has none; the
 * numbers the pass read (forgotten where it forgets them) */
static inline int coord_term(const Table *t, const Pair *p, const Coord *c, int which,
                             double *term) {
    double f[3];
    if (which == TERM_C) {
        *term = c->c * (c->x * c->x);
        return 1;
    }
    if (c->ix < 0) return 0;
    if (!coord_forgotten(p, c)) {
        if (which == TERM_KK) return 0;
        *term = (which == TERM_K ? t->entries[c->ix].k : t->entries[c->ix].a) * c->x;
        return 1;
    }
    forget_entry(&t->entries[c->ix], p->keep, p->rest, p->mu_b, f);
    if (which == TERM_KK)
        *term = t->entries[c->ix].k * f[1];
    else
        *term = (which == TERM_K ? f[1] : f[0]) * c->x;
    return 1;
}

/* 1 with the `which` term of the pending lean CSR row's stored entry q (pass_csr's: pair 0 of
 * block 0, nothing forgotten) into *term, 0 where it has none: coord_term's numbers for the
 * coordinate lay_out would make of it, read where the row lies */
static inline int row_term(const Arrowhead *self, Py_ssize_t q, int which, double *term) {
    const Entry *entries = self->blocks.table[0].entries;
    Py_ssize_t ix = self->batch->slot[self->row_ind[q]];
    double xf = self->row_data[q];
    if (which == TERM_C) {
        if (ix < 0 && xf * xf == 0.0) return 0; /* no coordinate */
        *term = (ix < 0 ? self->prior : entries[ix].c) * (xf * xf);
        return 1;
    }
    if (ix < 0 || which == TERM_KK) return 0;
    *term = (which == TERM_K ? entries[ix].k : entries[ix].a) * xf;
    return 1;
}

/* The `which` terms of the coordinates of pairs[0 .. npairs-1] in x's order (a pending lean CSR
 * row's read from its arrays: row_term), then `more` terms `last`, into the scratch: how many,
 * or -1 (memory) */
static Py_ssize_t gather_terms(Arrowhead *self, const Pair *pairs, int npairs, int which,
                               const double *last, int more) {
    Py_ssize_t i, n = 0, cap = self->row_ind != NULL ? self->row_n : 0;
    double *out;
    int k;
    for (k = 0; k < npairs; k++) cap += pairs[k].end - pairs[k].first;
    if (rcw_grow((void **)&self->scratch, &self->scratch_cap, cap + more, 3 * sizeof(double)) < 0)
        return -1;
    out = self->scratch;
    if (self->row_ind != NULL)
        for (i = 0; i < self->row_n; i++) n += row_term(self, i, which, &out[n]);
    else
        for (k = 0; k < npairs; k++)
            for (i = pairs[k].first; i < pairs[k].end; i++)
                n += coord_term(&self->blocks.table[pairs[k].block], &pairs[k], &self->coords[i],
                                which, &out[n]);
    for (k = 0; k < more; k++) out[n++] = last[k];
    return n;
}

/* The exactly rounded sum of the `which` terms of the coordinates of pairs[0 .. npairs-1], in
 * x's order, then of `more` terms `last` (gather_terms), where the double-double's bound does
 * not certify it: the accumulator's hi + lo where the terms show it exact (acc, of n terms, not
 * NULL: ddsum_exact, as for a sum exactly halfway between two doubles, which a few terms often
 * give), else a triple-length accumulator's sum where it certifies it (_fsum.h's Sum3), else
 * math.fsum's algorithm over the terms. The scratch holds the terms meanwhile. 0, or -1 with
 * fsum's error */
static int coords_fsum(Arrowhead *self, const Pair *pairs, int npairs, int which,
                       const double *last, int more, const DdSum *acc, Py_ssize_t n_acc,
                       double *out) {
    Sum3 s3;
    Msum s;
    Py_ssize_t i, n = gather_terms(self, pairs, npairs, which, last, more);
    const double *terms = self->scratch;
    if (n < 0) return -1;
    if (acc != NULL) {
        double tiny = INFINITY;
        for (i = 0; i < n; i++) {
            double size = fabs(terms[i]);
            if (size != 0.0 && size < tiny) tiny = size;
        }
        if (ddsum_exact(acc, n_acc, tiny, out)) return 0;
    }
    sum3_init(&s3);
    for (i = 0; i < n; i++) sum3_add(&s3, terms[i]);
    if (sum3_certified(&s3, out)) return 0;
    msum_init(&s);
    for (i = 0; i < n; i++)
        if (msum_add(&s, terms[i]) < 0) {
            msum_free(&s);
            return -1;
        }
    return msum_result(&s, out);
}

/* pair_sum where the bound does not certify the sum: the accumulator's hi + lo where the terms'
 * least magnitude `least` (0: not kept) shows it exact (ddsum_exact), else coords_fsum. A
 * function of its own, its accumulator passed by value: its callers keep theirs in registers. */
static RCW_NOINLINE int pair_sum_fsum(Arrowhead *self, const Pair *p, DdSum acc, int which,
                                      double last, double least, double *out) {
    if (ddsum_exact(&acc, p->nseen + 1, last != 0.0 && fabs(last) < least ? fabs(last) : least,
                    out))
        return 0;
    return coords_fsum(self, p, 1, which, &last, 1, &acc, p->nseen + 1, out);
}

/* the exactly rounded sum of acc's n terms, the pair's `which` terms then `last` (`added`: acc
 * took it already, as its first term: the same exactly rounded sum); `least` (NULL: not kept)
 * the smallest magnitude among the pair's terms, which shows the sum exact without reading them
 * again where the bound does not certify it */
static RCW_ALWAYS_INLINE int pair_sum(Arrowhead *self, const Pair *p, DdSum *acc, int which,
                                      double last, int added, const double *least, double *out) {
    if (!added) ddsum_add(acc, last);
    if (ddsum_certified(acc, p->nseen + 1, out)) return 0;
    return pair_sum_fsum(self, p, *acc, which, last, least != NULL ? *least : 0.0, out);
}

/* The terms of a learned feature in a pass: entry e of the pair's table, the value xf and the
 * conditional variance cj the margin reads (forgotten where the pass forgets); a_j x_j and
 * k_j x_j added to *ak (their least magnitudes kept in *least where it is not NULL:
 * ddpair_least_add), c_j x_j^2 returned (learned_ak) or added to the lane of *cs (learned_terms,
 * ddlane_add). One home for every pass (pass_pair over a dict, the batch kernel's rows:
 * pass_row, pass_csr, score_rows' row_score_add) */
static RCW_ALWAYS_INLINE double learned_ak(const Entry *e, double xf, double cj, DdPair *ak,
                                           DdLeast *least) {
    if (least != NULL)
        ddpair_least_add(ak, least, e->a * xf, e->k * xf);
    else
        ddpair_add(ak, e->a * xf, e->k * xf);
    return cj * (xf * xf);
}

static RCW_ALWAYS_INLINE void learned_terms(const Entry *e, double xf, double cj, DdPair *ak,
                                            DdPair *cs) {
    ddlane_add(cs, learned_ak(e, xf, cj, ak, NULL));
}

/* the terms of a feature not learned yet (value xf): xf touched into *unknown (so that bad values
 * surface), the prior's term c x^2 into *term (new_term) or *cs (new_terms); 0 for a zero value
 * (it teaches nothing: no term, no coordinate), else 1 */
static RCW_ALWAYS_INLINE int new_term(double prior, double xf, double *unknown, double *term) {
    double x2 = xf * xf;
    *unknown += xf;
    if (x2 == 0.0) return 0;
    *term = prior * x2;
    return 1;
}

static RCW_ALWAYS_INLINE int new_terms(double prior, double xf, double *unknown, DdPair *cs) {
    double term;
    if (!new_term(prior, xf, unknown, &term)) return 0;
    ddlane_add(cs, term);
    return 1;
}

/* learned_terms with its coordinate appended at c */
static RCW_ALWAYS_INLINE void coord_learned(Coord *c, Py_ssize_t ix, const Entry *e, double xf,
                                            double cj, DdPair *ak, DdPair *cs) {
    learned_terms(e, xf, cj, ak, cs);
    c->ix = ix;
    c->c = cj;
    c->key = NULL;
    c->x = xf;
}

/* coord_learned in a pass that forgets (p->keep < 1, p->mu_b the root's mean): a feature of
 * non-zero value forgotten first (forget_entry; its term k_j k_j' added to *kk and counted in
 * p->touched), of zero value as it is */
static RCW_ALWAYS_INLINE void coord_forgetting(Pair *p, Coord *c, Py_ssize_t ix, const Entry *e,
                                               double xf, DdPair *ak, DdPair *cs, DdSum *kk) {
    double f[3];
    if (xf == 0.0) {
        coord_learned(c, ix, e, xf, e->c, ak, cs);
        return;
    }
    forget_entry(e, p->keep, p->rest, p->mu_b, f);
    ddpair_add(ak, f[0] * xf, f[1] * xf);
    ddlane_add(cs, f[2] * (xf * xf));
    ddsum_add(kk, e->k * f[1]);
    p->touched++;
    c->ix = ix;
    c->c = f[2];
    c->key = NULL;
    c->x = xf;
}

/* the root's mean in table t (0 where it is not stored) into p->mu_b, before a pass that
 * forgets; 0, or -1 with table_find's error */
static inline int pass_root_mean(Arrowhead *self, Pair *p, Table *t) {
    Py_ssize_t ix = table_find(t, self->root, self->root_hash);
    if (ix == -2) return -1;
    p->mu_b = ix < 0 ? 0.0 : t->entries[ix].a;
    return 0;
}

/* new_terms with, where they are not zero, its coordinate appended at c (a new reference to the
 * key, with its hash h, and the prior's variance); how many (0 or 1) */
static RCW_ALWAYS_INLINE int coord_new(Arrowhead *self, Coord *c, PyObject *key, Py_hash_t h,
                                       double xf, double *unknown, DdPair *cs) {
    if (!new_terms(self->prior, xf, unknown, cs)) return 0;
    c->ix = -1;
    c->c = self->prior;
    c->key = Py_NewRef(key);
    c->hash = h;
    c->x = xf;
    self->nkeyed++;
    return 1;
}

/* The lean CSR row's coordinates (pass_csr's, pair 0) laid out in the scratch as pass_pair lays
 * a dict's out, for a checked update, which reads them; the row is then no longer pending. 0, or
 * -1 (memory) */
static RCW_NOINLINE int lay_out(Arrowhead *self) {
    const BatchCache *cache = self->batch;
    const Entry *entries = self->blocks.table[0].entries;
    Py_ssize_t q, n = 0;
    double unknown = 0.0;
    DdPair ak, cs; /* the terms again, unused: pass_csr summed them */
    if (rcw_grow((void **)&self->coords, &self->coords_cap, self->row_n, sizeof(Coord)) < 0)
        return -1;
    ddpair_init(&ak);
    ddpair_init(&cs);
    for (q = 0; q < self->row_n; q++) {
        Py_ssize_t l = self->row_ind[q], ix = cache->slot[l];
        double xf = self->row_data[q];
        if (ix < 0)
            n += coord_new(self, &self->coords[n], cache->key[l], cache->hash[l], xf, &unknown,
                           &cs);
        else
            coord_learned(&self->coords[n++], ix, &entries[ix], xf, entries[ix].c, &ak, &cs);
    }
    self->ncoords = n;
    self->row_ind = NULL;
    return 0;
}

/* The root's variance forgotten (the reference's _root), p's pass having forgotten every feature
 * its block has learned: 1/S <- keep/S + rest a / a_b + rest sum_j k_j k_j', the sum exactly
 * rounded (kk: its p->touched terms, else coords_fsum). 0, or -1 with fsum's error */
static int forget_root(Arrowhead *self, Pair *p, const DdSum *kk) {
    double sum;
    if (!ddsum_certified(kk, p->touched, &sum) &&
        coords_fsum(self, p, 1, TERM_KK, NULL, 0, kk, p->touched, &sum) < 0)
        return -1;
    p->S = p->S / (p->keep + p->S * (p->rest * (self->prior / self->root_variance) +
                                     p->rest * sum));
    p->forgets_root = 1;
    return 0;
}

/* The end of a pass for the pair p, its coordinates [first, end) counted and its root's entry
 * p->root (-1: not stored) set: the root's (mu_b, S), S forgotten where the pass forgets (kk, the
 * terms k_j k_j' of the features it forgot; NULL: it forgets nothing), x holds the root and the
 * pass forgot every feature the block has learned (forget_root), G and the score from the terms
 * in *ak (their least magnitudes in *least, NULL where not kept; `rooted`: G's lane took x_b
 * first, ddpair_start). 0, or -1 with fsum's error. */
static RCW_ALWAYS_INLINE int pair_close(Arrowhead *self, Pair *p, const Table *t, const DdPair *ak,
                                        const DdLeast *least, int rooted, const DdSum *kk) {
    DdSum a_acc, k_acc;
    double a_least, k_least;
    p->mu_b = p->root < 0 ? 0.0 : t->entries[p->root].a;
    p->S = p->root < 0 ? self->root_variance : t->entries[p->root].k;
    p->forgets_root = 0;
    if (kk != NULL && p->x_b != 0.0 && p->touched == t->used - (p->root >= 0) &&
        forget_root(self, p, kk) < 0)
        return -1;
    ddpair_split(ak, &a_acc, &k_acc);
    if (least != NULL) ddleast_split(least, &a_least, &k_least);
    if (pair_sum(self, p, &k_acc, TERM_K, p->x_b, rooted, least ? &k_least : NULL, &p->G) < 0 ||
        pair_sum(self, p, &a_acc, TERM_A, p->G * p->mu_b, 0, least ? &a_least : NULL,
                 &p->score) < 0)
        return -1;
    return 0;
}

/* One pass over x (a dict, or in the lean mode a TokenCounts: _token_counts.h) for the pair p
 * (its block and sign set): its coordinates appended to the scratch, the terms c_j x_j^2 added
 * to *c_acc, G and the score, the root's (mu_b, S); with keep < 1 the learned features of
 * non-zero value forgotten (coord_forgetting) and S where pair_close says (nothing is written). lean: x's values read as plain values (_table.h; any other value, or the
 * root among x's keys, is the general path's case) and the root's value x_b as the caller set it
 * in p; else x_b is the root's value in x, 0 without it. A lean pass with a centre (not NULL:
 * the call's, self->centre) reads each value less its feature's mean, as
 * river_cw.centring.Centring.centred subtracts it; x lacking a centred feature, or a mean not a
 * float, is the general path's case. PASS_OK; PASS_ERROR with the error (a bad x named; the
 * coordinates dropped); PASS_GENERAL (lean only): the general path's case, no error set. */
static RCW_ALWAYS_INLINE int pass_over(Arrowhead *self, Pair *p, PyObject *x, double keep,
                                       double rest, int lean, PyObject *centre, DdSum *c_acc) {
    Table *t = &self->blocks.table[p->block];
    PyObject *key, *value, *root = self->root;
    Py_ssize_t pos = 0, ix, first = self->ncoords, n = first, nseen = 0, centred = 0;
    Py_hash_t h;
    double xf, unknown = 0.0;
    DdPair ak; /* the terms a_j x_j and k_j x_j */
    DdPair cs; /* the terms c_j x_j^2 (its lane), in a local (registers) until the end */
    DdSum kk;  /* the terms k_j k_j' of the forgotten features */
    Coord *coords;
    int forgetting = keep != 1.0;
    if (rcw_grow((void **)&self->coords, &self->coords_cap, first + rcw_x_size(x),
                 sizeof(Coord)) < 0)
        return PASS_ERROR;
    coords = self->coords;
    p->first = first;
    p->keep = keep;
    p->rest = rest;
    p->touched = 0;
    if (!lean) p->x_b = 0.0;
    ddpair_init(&ak);
    ddlane_of(&cs, c_acc);
    ddsum_init(&kk);
    if (forgetting && pass_root_mean(self, p, t) < 0) goto bad;
    const rcw_next_item next = rcw_x_next(x);
    while (next(x, &pos, &key, &value)) {
        if (key == root) {
            if (lean) goto general;
            if (value_of(value, &p->x_b) < 0) goto bad;
            continue;
        }
        if (lean) {
            if (plain_value(value, &xf)) goto general;
            if (centre != NULL) {
                PyObject *mean = PyDict_GetItemWithError(centre, key);
                if (mean != NULL) {
                    if (!PyFloat_CheckExact(mean)) goto general;
                    xf = xf - PyFloat_AS_DOUBLE(mean);
                    centred++;
                } else if (PyErr_Occurred())
                    goto bad;
            }
        } else if (value_of(value, &xf) < 0)
            goto bad;
        if ((h = key_hash(key)) == -1 || (ix = table_find(t, key, h)) == -2) goto bad;
        if (ix < 0)
            n += coord_new(self, &coords[n], key, h, xf, &unknown, &cs);
        else {
            const Entry *e = &t->entries[ix];
            if (forgetting)
                coord_forgetting(p, &coords[n++], ix, e, xf, &ak, &cs, &kk);
            else
                coord_learned(&coords[n++], ix, e, xf, e->c, &ak, &cs);
            nseen++;
        }
    }
    if (lean && centre != NULL && centred != PyDict_GET_SIZE(centre)) goto general;
    *c_acc = ddlane_sum(&cs);
    self->ncoords = p->end = n;
    p->nseen = nseen;
    p->nnew = n - first - nseen;
    if ((p->root = table_find(t, root, self->root_hash)) == -2 ||
        pair_close(self, p, t, &ak, NULL, 0, forgetting ? &kk : NULL) < 0)
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

/* pass_over with the call's centre, compiled apart: the pass without one tests none per feature */
static RCW_NOINLINE int pass_centred(Arrowhead *self, Pair *p, PyObject *x, double keep,
                                     double rest, DdSum *c_acc) {
    return pass_over(self, p, x, keep, rest, 1, self->centre, c_acc);
}

/* pass_over, with the call's centre where a lean pass has one (pass_centred) */
static RCW_ALWAYS_INLINE int pass_pair(Arrowhead *self, Pair *p, PyObject *x, double keep,
                                       double rest, int lean, DdSum *c_acc) {
    if (lean && self->centre != NULL) return pass_centred(self, p, x, keep, rest, c_acc);
    return pass_over(self, p, x, keep, rest, lean, NULL, c_acc);
}

/* total where the bound does not certify the sum: coords_fsum, or inf beyond float64 (its
 * accumulator passed by value, as pair_sum_fsum's) */
static RCW_NOINLINE int total_fsum(Arrowhead *self, const Pair *pairs, int npairs,
                                   const double *roots, int more, DdSum acc, Py_ssize_t n,
                                   double *out) {
    if (coords_fsum(self, pairs, npairs, TERM_C, roots, more, &acc, n, out) == 0) return 0;
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
    return total_fsum(self, pairs, npairs, roots, more, acc, n + more, out);
}

/* ---------------------------------------------------------------------------------------- */
/* the margin                                                                                 */

/* the terms of the margin's c_acc: its coordinates' (the pairs' from 0 on, laid out or pending)
 * and the more it took */
static inline Py_ssize_t margin_terms(const Arrowhead *self) {
    return self->pairs[self->npairs - 1].end + self->c_more;
}

/* a pair's root term of the margin's variance, G^2 S */
static inline double root_term(const Pair *p) { return p->G * p->G * p->S; }

/* The margin from the pairs' passes (every pair's coordinates and sums in the scratch): m = the
 * exactly rounded sum of sign * score, and v; with forgetting, the forgotten numbers written
 * (the rows were valid: forget_entry again, the same numbers), the root's where the pass forgot
 * it, its entry inserted where it is new (p->root then names it). One
 * home for every margin (margin_of over a dict, the batch kernel's rows). PASS_OK with the margin
 * numbered; PASS_ERROR with the error, nothing changed; PASS_GENERAL (lean): the general path's
 * case; else (x, not lean) x is named. The scratch is released unless PASS_OK. */
static RCW_ALWAYS_INLINE int margin_close_n(Arrowhead *self, PyObject *x, double keep,
                                            double rest, int lean, double *m, const int npairs) {
    double roots[2];
    int k, r;
    /* m: math.fsum of at most two finite terms is their sum rounded once, from +0.0 (fsum's
     * exact zero is +0.0), and raises where that is beyond float64 */
    *m = 0.0;
    for (k = 0; k < npairs; k++) {
        *m += self->pairs[k].sign * self->pairs[k].score;
        roots[k] = root_term(&self->pairs[k]);
    }
    if (!isfinite(*m)) {
        r = lean ? PASS_GENERAL : PASS_ERROR;
        if (!lean) PyErr_SetString(PyExc_OverflowError, "intermediate overflow in fsum");
        goto fail;
    }
    if (total(self, self->pairs, npairs, self->c_acc, self->pairs[npairs - 1].end + self->c_more,
              roots, npairs, &self->v) < 0) {
        r = PASS_ERROR;
        goto fail;
    }
    if (!isfinite(self->v)) {
        r = lean ? PASS_GENERAL : PASS_ERROR;
        if (!lean) raise_bad_input(x);
        goto fail;
    }
    if (keep != 1.0) { /* the forgotten numbers, the root's inserted where it is new */
        for (k = 0; k < npairs; k++) {
            Pair *p = &self->pairs[k];
            if (p->forgets_root && p->root < 0 &&
                table_reserve(&self->blocks.table[p->block], 1) < 0) {
                r = PASS_ERROR;
                goto fail;
            }
        }
        for (k = 0; k < npairs; k++) {
            Pair *p = &self->pairs[k];
            Table *t = &self->blocks.table[p->block];
            Py_ssize_t i;
            for (i = p->first; i < p->end; i++)
                if (coord_forgotten(p, &self->coords[i])) {
                    Entry *e = &t->entries[self->coords[i].ix];
                    double f[3];
                    forget_entry(e, p->keep, p->rest, p->mu_b, f);
                    e->a = f[0];
                    e->k = f[1];
                    e->c = f[2];
                    entry_written(self, e);
                    table_note(t, self->coords[i].ix);
                }
            if (p->forgets_root) {
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

/* margin_close with its pairs counted at compile time (one or two: both compiled) */
static RCW_ALWAYS_INLINE int margin_close(Arrowhead *self, PyObject *x, double keep, double rest,
                                          int lean, double *m) {
    return self->npairs == 1 ? margin_close_n(self, x, keep, rest, lean, m, 1)
                             : margin_close_n(self, x, keep, rest, lean, m, 2);
}

/* The margin of x along the pairs set in the scratch (self->npairs): every pair's pass, then
 * margin_close. PASS_OK with the margin numbered; PASS_ERROR with the error, nothing changed;
 * PASS_GENERAL (lean): the general path's case. */
static RCW_ALWAYS_INLINE int margin_of(Arrowhead *self, PyObject *x, double keep, double rest,
                                       int lean, double *m) {
    int k, r;
    ddsum_init(&self->c_acc);
    drop_coords(self, 0);
    token_drop(self);
    for (k = 0; k < self->npairs; k++)
        if ((r = pass_pair(self, &self->pairs[k], x, keep, rest, lean, &self->c_acc)) != PASS_OK) {
            release_margin(self);
            return r;
        }
    return margin_close(self, x, keep, rest, lean, m);
}

/* ---------------------------------------------------------------------------------------- */
/* the update                                                                                 */

/* the margin's variance but pair k's root term (the reference's `_total(others)` for pair k's
 * rho): every pair's c terms, then the other pair's root term; 0, or -1 (memory) */
static int variance_but_root(Arrowhead *self, int k, double *out) {
    double other = self->npairs == 2 ? root_term(&self->pairs[1 - k]) : 0.0;
    return total(self, self->pairs, self->npairs, self->c_acc, margin_terms(self), &other,
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

/* update_with's in-place steps of the pending lean CSR row (pass_csr; pair 0 in t, nothing
 * forgotten), straight from the row: each column's entry stepped as entry_of and step_weight step
 * a coordinate's, a new feature of non-zero value appended from (0, 0, prior) in the row's order
 * (room reserved), its entry written to its column's slot */
static RCW_ALWAYS_INLINE void row_step(Arrowhead *self, Table *t, const PairStep *s, int drop) {
    BatchCache *cache = self->batch;
    Py_ssize_t *slot = cache->slot, q, n = self->row_n;
    const Py_ssize_t *ind = self->row_ind;
    const double *data = self->row_data;
    for (q = 0; q < n; q++) {
        Py_ssize_t l = ind[q], ix = slot[l];
        double xf = data[q], w[3];
        Entry *e;
        if (ix >= 0) {
            e = &t->entries[ix];
            table_note(t, ix);
            step_weight(s, e->a, e->k, e->c, xf, drop, w);
        } else if (xf * xf != 0.0) {
            slot[l] = t->used;
            e = table_push(t, cache->key[l], cache->hash[l]);
            step_weight(s, 0.0, 0.0, self->prior, xf, drop, w);
        } else
            continue;
        e->a = w[0];
        e->k = w[1];
        e->c = w[2];
    }
}

/* The step (alpha, gamma) on the last margin (see the module docstring of river_cw._engines.arrowhead):
 * per pair the root's new (mu_b, S) and every coordinate's new (a, k, c), written only if all are
 * finite. 1 applied, 0 refused (float64 cannot express it: nothing written), -1 an error (memory).
 *
 * The bounds make the common case one pass: with gamma >= 0 no c_j grows, and since c_j <=
 * c_bound and c_j x_j^2 <= v, |c_j x_j| <= sqrt(c_bound v), so no a_j moves by more than |shift|
 * sqrt(c_bound v) nor any k_j by more than |tilt| sqrt(c_bound v). While a_bound and k_bound
 * (bounds of every feature's |a_j| and |k_j|) stay far from float64's limit after such a move,
 * every new value is finite and each goes straight into its entry; otherwise every value is
 * computed first and written only if all are finite (the reference's order of work).
 *
 * `row` (a constant where it is inlined): the margin may be a lean CSR row whose coordinates
 * are pending (pass_csr); the in-place steps then read the row (row_step), the checked ones lay
 * its coordinates out first. */
static RCW_ALWAYS_INLINE int update_with(Arrowhead *self, double alpha, double gamma, int drop,
                                         int row) {
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
        if (row && self->row_ind != NULL && lay_out(self) < 0) return -1;
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
        Py_ssize_t extra = p->nnew + (p->root < 0 && p->x_b != 0.0);
        if (extra && table_reserve(&self->blocks.table[p->block], extra) < 0) return -1;
    }
    for (k = 0; k < self->npairs; k++) {
        Pair *p = &self->pairs[k];
        const PairStep s = steps[k];
        Table *t = &self->blocks.table[p->block];
        Coord *c = &self->coords[p->first], *end = &self->coords[p->end];
        Entry *e = p->root < 0 ? NULL : &t->entries[p->root];
        if (e == NULL && p->x_b != 0.0) { /* the root stored, before the new features */
            p->root = t->used;
            e = table_push(t, self->root, self->root_hash);
            e->c = 0.0;
        } else if (e != NULL)
            table_note(t, p->root);
        if (e != NULL) {
            e->a = root[k][0];
            e->k = root[k][1];
        }
        if (row && self->row_ind != NULL) /* in place: the row's coordinates are pending */
            row_step(self, t, &s, drop);
        else if (in_place)
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

/* update_with, compiled once per scheme: on a margin laid out in the scratch (update), or one
 * that may be a pending lean CSR row's (update_row) */
static int update(Arrowhead *self, double alpha, double gamma, int drop) {
    return drop ? update_with(self, alpha, gamma, 1, 0) : update_with(self, alpha, gamma, 0, 0);
}

static int update_row(Arrowhead *self, double alpha, double gamma, int drop) {
    return drop ? update_with(self, alpha, gamma, 1, 1) : update_with(self, alpha, gamma, 0, 1);
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

/* whether a scheme (not None) updates by "drop": any other than "project" (as the reference's
 * update reads it) */
static int scheme_drop(PyObject *scheme) {
    return !(PyUnicode_Check(scheme) && PyUnicode_CompareWithASCIIString(scheme, "project") == 0);
}

/* learn(x, pairs, step, scheme, w, keep=1.0, rest=0.0) -> 0, 1 or 2: the reference's learn
 * (river_cw._engines.gaussian._learn): margin, the rule's step (Python, called with the engine free)
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
    drop = scheme_drop(args[3]);
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

/* learn_native's `lean` = (step, scheme, intercept, calibration) into the lean cache: step =
 * (name, params), a rule's `_step` in C (_steps.h); scheme "project" or "drop"; intercept None or
 * the engine's root; calibration None or (temperature, noise, surprise) (_calibration.h). 0, or -1 with an
 * error */
static int parse_lean(Arrowhead *self, PyObject *lean) {
    PyObject *scheme, *intercept;
    double params[RCW_MAX_PARAMS];
    rcw_step found;
    int drop;
    if (!PyTuple_Check(lean) || PyTuple_GET_SIZE(lean) != 4) {
        PyErr_SetString(PyExc_TypeError, "learn_native's lean is ((name, (params...)), scheme, "
                                         "intercept, calibration)");
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
    if (rcw_temperature_parse(PyTuple_GET_ITEM(lean, 3), &self->temperature) < 0) return -1;
    Py_XSETREF(self->lean_spec, Py_NewRef(lean));
    self->step = found;
    memcpy(self->params, params, sizeof params);
    self->drop = drop;
    self->lean_x_b = intercept == Py_None ? 0.0 : 1.0;
    return 0;
}

/* The lean step on the last margin (a binary engine's, along pair 0): the native step `step`
 * (params) and the update by its scheme (drop, or project), as learn_native takes them: one home
 * for learn_native and the batch kernel's lean CSR rows (`row`: update_row). LEARN_NOTHING (learned, or nothing to
 * learn), LEARN_SKIPPED (float64 cannot express the step), PASS_ERROR (memory); the temperature
 * (NULL: none) takes its Newton step on the margin (_calibration.h) */
static RCW_ALWAYS_INLINE int lean_apply(Arrowhead *self, rcw_step step, const double *params,
                                        int drop, double m, double w, int row,
                                        const RcwTemperature *temperature) {
    double alpha, gamma, v = self->v;
    int r;
    if (!(v > 0.0)) return LEARN_NOTHING; /* no non-zero feature, or no variance left */
    r = step(params, m, v, w, &alpha, &gamma);
    if (r > 0) /* applied (1), refused (0) or an error (-1) */
        r = (row ? update_row(self, alpha, gamma, drop) : update(self, alpha, gamma, drop)) - 1;
    if (r < -1) return PASS_ERROR;
    rcw_temperature_step(temperature, m, v, w, self->centre != NULL);
    return r < 0 ? LEARN_SKIPPED : LEARN_NOTHING;
}

/* Whether the scored pass (score_kept) is x's, with the root's value x_b, on the tables as they
 * are: its coordinates and sums in the scratch (pair 0, c_acc) are then those a lean pass over x
 * along block 0 would make, whatever the pair's sign (which no pass reads). */
static inline int scored_holds(const Arrowhead *self, PyObject *x, double x_b) {
    return self->scored == x && self->scored_generation == self->generation &&
           self->scored_x_b == x_b;
}

/* learn_native's core (entered, the lean spec parsed): x learned along pair 0 with the label's
 * sign and the weight w > 0, forgotten first as the spec's surprise says (forgetting="auto":
 * rcw_surprise_forgetting). LEARN_NOTHING, LEARN_SKIPPED, -1 (the general path's case: nothing
 * changed, no error set) or -2 (an error raised); the batch kernel's dict rows
 * (batch_lean_dict). With `calibrate` (two labels known) the spec's temperature takes its
 * Newton step. */
static int lean_learn(Arrowhead *self, PyObject *x, double sign, double w, int calibrate) {
    double m, keep, rest;
    int outcome;
    rcw_surprise_forgetting(&self->temperature, w, self->prior, self->centre != NULL, &keep,
                            &rest);
    self->pairs[0].sign = sign;
    self->npairs = 1;
    if (keep == 1.0 && self->centre == NULL && scored_holds(self, x, self->lean_x_b))
        /* predict_one's pass: its margin */
        outcome = margin_close(self, x, 1.0, 0.0, 1, &m);
    else {
        self->pairs[0].block = 0;
        self->pairs[0].x_b = self->lean_x_b;
        /* the constants: the pass without forgetting, compiled apart, tests none per feature */
        outcome = keep == 1.0 ? margin_of(self, x, 1.0, 0.0, 1, &m)
                              : margin_of(self, x, keep, rest, 1, &m);
    }
    if (outcome == PASS_OK)
        outcome = lean_apply(self, self->step, self->params, self->drop, m, w, 0,
                             calibrate ? &self->temperature : NULL);
    release_margin(self);
    return outcome == PASS_ERROR ? -2 : outcome == PASS_GENERAL ? -1 : outcome;
}

/* The centre argument of score_native and learn_native (args[i] where nargs > i): NULL (none,
 * or None), or an exact dict; -1 with a TypeError for anything else. */
static int centre_argument(PyObject *const *args, Py_ssize_t nargs, Py_ssize_t i,
                           PyObject **centre) {
    *centre = nargs > i && args[i] != Py_None ? args[i] : NULL;
    if (*centre != NULL && !PyDict_CheckExact(*centre)) {
        PyErr_SetString(PyExc_TypeError, "a centre is a dict {feature: mean}, or None");
        return -1;
    }
    return 0;
}

/* learn_native(x, y, w, class_index, lean, centre=None) -> 0 (learned, or nothing to learn), 2
 * (skipped: float64 cannot express the step) or -1 (the general path's case: nothing changed, no
 * error set): `learn` of a binary model (one block) for a known label y (block 1's sign is +1)
 * and a float weight w > 0, x's values read as river_cw.validation.as_floats reads them, less
 * their means in `centre` where given (river_cw.centring: every centred feature in x), and the
 * intercept (when lean names it) as the root with x_b = 1.0, as GaussianClassifier._features
 * appends it; the rule's step in C. -1 as well for any other model, label, weight or x. */
static PyObject *engine_learn_native(Arrowhead *self, PyObject *const *args,
                                     Py_ssize_t nargs) {
    double w, sign;
    int outcome;
    PyObject *centre;
    if ((nargs != 5 && nargs != 6) || !PyDict_Check(args[3])) {
        PyErr_SetString(PyExc_TypeError, "learn_native(x, y, w, class_index, lean, centre=None)");
        return NULL;
    }
    if (centre_argument(args, nargs, 5, &centre) < 0) return NULL;
    if ((outcome = rcw_binary_case(args, self->blocks.n, &w, &sign)) <= 0)
        return outcome < 0 ? NULL : PyLong_FromLong(-1);
    if (args[4] != self->lean_spec && parse_lean(self, args[4]) < 0) {
        if (!PyErr_ExceptionMatches(PyExc_OverflowError)) return NULL;
        PyErr_Clear(); /* a parameter beyond float64: the Python step's case */
        return PyLong_FromLong(-1);
    }
    if (enter(self) < 0) return NULL;
    self->centre = centre;
    outcome = lean_learn(self, args[0], sign, w, PyDict_GET_SIZE(args[3]) == 2);
    self->centre = NULL;
    leave(self);
    return outcome == -2 ? NULL : PyLong_FromLong(outcome);
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

/* The score of x (block_score) of each block `selected` (select_blocks) into a new list, or
 * (variances) its variance. A bad x raises, every value touched. The margin scratch is left as
 * it was (a rule's step may predict between margin and update). */
static PyObject *per_block(Arrowhead *self, PyObject *x_in, int variances,
                           const BlockSelection *selected) {
    PyObject *x, *out = NULL, *f;
    Py_ssize_t i, mark;
    double score, variance;
    if (enter(self) < 0) return NULL;
    mark = self->ncoords;
    if ((x = as_dict(x_in)) == NULL || (out = PyList_New(selected->count)) == NULL) goto done;
    for (i = 0; i < selected->count; i++) {
        int r = block_score(self, selected_block(selected, i), x, 0, 0.0, &score,
                            variances ? &variance : NULL);
        drop_coords(self, mark);
        if (r != PASS_OK || (f = PyFloat_FromDouble(variances ? variance : score)) == NULL) {
            Py_CLEAR(out);
            goto done;
        }
        PyList_SET_ITEM(out, i, f);
    }
done:
    Py_XDECREF(x);
    leave(self);
    return out;
}

/* scores(x): mu_b . x for every block b */
static PyObject *engine_scores(Arrowhead *self, PyObject *x) {
    BlockSelection every = {.listed = NULL, .count = self->blocks.n};
    return per_block(self, x, 0, &every);
}

/* score_variances(x, blocks=None): the variance of the score of every block b, or of each block
 * listed, G^2 S + sum c_j x_j^2 */
static PyObject *engine_score_variances(Arrowhead *self, PyObject *const *args, Py_ssize_t nargs) {
    BlockSelection selected;
    PyObject *out;
    if (select_blocks(self, args, nargs, &selected) < 0) return NULL;
    out = per_block(self, args[0], 1, &selected);
    release_selection(&selected);
    return out;
}

/* scores_with_scale(x) -> (scores, v): every block's score of x and v, the variance of the
 * margin between the two best-scoring blocks (the first of each score, as
 * river_cw.probabilities.top_two takes them), their two variances added, or of the one block's
 * score: IndependentBlocks.scores_with_scale in one pass over the blocks (block_score gives each
 * block's score and variance at once). A bad x raises, every value touched. */
static PyObject *engine_scores_with_scale(Arrowhead *self, PyObject *x_in) {
    PyObject *x, *scores = NULL, *out = NULL, *f;
    Py_ssize_t b, n = self->blocks.n, mark, best = 0, second;
    double score, stack[16], *variances = stack, v;
    if (n < 1) {
        PyErr_SetString(PyExc_ValueError, "max() arg is an empty sequence"); /* top_two's */
        return NULL;
    }
    if (enter(self) < 0) return NULL;
    mark = self->ncoords;
    if ((x = as_dict(x_in)) == NULL) goto done;
    if (n > 16 && (variances = PyMem_Malloc(sizeof(double) * (size_t)n)) == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    if ((scores = PyList_New(n)) == NULL) goto done;
    for (b = 0; b < n; b++) {
        int r = block_score(self, b, x, 0, 0.0, &score, &variances[b]);
        drop_coords(self, mark);
        if (r != PASS_OK || (f = PyFloat_FromDouble(score)) == NULL) goto done;
        PyList_SET_ITEM(scores, b, f);
        if (score > PyFloat_AS_DOUBLE(PyList_GET_ITEM(scores, best))) best = b;
    }
    if (n == 1)
        v = variances[0];
    else {
        second = best == 0 ? 1 : 0;
        for (b = second + 1; b < n; b++)
            if (b != best && PyFloat_AS_DOUBLE(PyList_GET_ITEM(scores, b)) >
                                 PyFloat_AS_DOUBLE(PyList_GET_ITEM(scores, second)))
                second = b;
        v = variances[best] + variances[second];
    }
    out = Py_BuildValue("(Od)", scores, v);
done:
    Py_XDECREF(scores);
    if (variances != stack) PyMem_Free(variances);
    Py_XDECREF(x);
    leave(self);
    return out;
}

/* score_native's core (entered; a binary engine, x readable): block_score's lean numbers with
 * the intercept (None, or the root) as the root's x_b, 1 with *m and, v not NULL, *v; 0 where
 * the general path must serve, -1 with an error. The margin scratch is left as it was. */
static RCW_ALWAYS_INLINE int score_dict(Arrowhead *self, PyObject *x, PyObject *intercept,
                                        double *m, double *v) {
    Py_ssize_t mark = self->ncoords;
    int r = block_score(self, 0, x, 1, intercept == Py_None ? 0.0 : 1.0, m, v);
    drop_coords(self, mark);
    return r == PASS_OK ? 1 : r == PASS_GENERAL ? 0 : -1;
}

/* score_dict for a TokenCounts with no margin pending (token.last 0): the same numbers, its pass
 * kept in the scratch as the scored pass (pair 0 along block 0, its sums in c_acc, a reference to
 * x), or the scored pass read where it holds (scored_holds): learn_one after predict_one on the
 * same text then takes its margin from it (lean_learn) without a second pass over the text. A
 * TokenCounts never changes; any change of the tables (the generation), a margin or a dropped
 * scratch (drop_coords) ends the scored pass. 1, 0 or -1 as score_dict. */
static RCW_ALWAYS_INLINE int score_kept(Arrowhead *self, PyObject *x, PyObject *intercept,
                                        double *m, double *v) {
    Pair *p = &self->pairs[0];
    double x_b = intercept == Py_None ? 0.0 : 1.0, root;
    int r;
    if (!scored_holds(self, x, x_b)) {
        release_margin(self);
        p->block = 0;
        p->sign = 1.0;
        p->x_b = x_b;
        ddsum_init(&self->c_acc);
        if ((r = pass_pair(self, p, x, 1.0, 0.0, 1, &self->c_acc)) != PASS_OK)
            return r == PASS_GENERAL ? 0 : -1;
        self->scored = Py_NewRef(x);
        self->scored_generation = self->generation;
        self->scored_x_b = x_b;
    }
    *m = p->score;
    if (v == NULL) return 1;
    root = root_term(p);
    if (total(self, p, 1, self->c_acc, p->end - p->first, &root, 1, v) == 0) return 1;
    release_margin(self);
    return -1;
}

/* score_native(x, intercept, variance, centre=None) -> m, or (m, v) when `variance` is true: the
 * score of a binary model (one block) and its variance, the numbers scores() and
 * score_variances() give for x (less its means in `centre` where given, as learn_native reads
 * it) with the intercept (None, or the root) appended as GaussianClassifier._features appends
 * it: predict_one and predict_proba_one in one call. None, nothing raised, where the general path
 * (scores, score_variances) must serve: an engine of several blocks, x neither an exact dict
 * nor a TokenCounts (_token_counts.h), a value other than a float, an int within float64 or a
 * bool, the root among x's keys, an error of a key's hash or ==, a score beyond float64
 * (scores() raises what it raises). As Diagonal.score_native; a pending margin is left as it
 * was (a TokenCounts' pass is kept as the scored pass where none is: score_kept). */
static PyObject *engine_score_native(Arrowhead *self, PyObject *const *args,
                                     Py_ssize_t nargs) {
    double m = 0.0, v = 0.0; /* set where r > 0 (the compiler cannot see it through score_kept) */
    int r, variance, tokens;
    PyObject *centre;
    if (nargs != 3 && nargs != 4) {
        PyErr_SetString(PyExc_TypeError, "score_native(x, intercept, variance, centre=None)");
        return NULL;
    }
    if (centre_argument(args, nargs, 3, &centre) < 0) return NULL;
    if (args[1] != Py_None && args[1] != self->root) {
        PyErr_SetString(PyExc_ValueError, "score_native's intercept is None or the root");
        return NULL;
    }
    if ((variance = PyObject_IsTrue(args[2])) < 0) return NULL;
    if (!rcw_x_readable(args[0]) || self->blocks.n != 1) Py_RETURN_NONE;
    tokens = rcw_is_token_counts(args[0]);
    if (tokens) table_prefetch_tokens(&self->blocks.table[0], args[0]);
    if (enter(self) < 0) return NULL;
    self->centre = centre;
    r = tokens && self->token.last == 0 && centre == NULL
            ? score_kept(self, args[0], args[1], &m, variance ? &v : NULL)
            : score_dict(self, args[0], args[1], &m, variance ? &v : NULL);
    self->centre = NULL;
    leave(self);
    if (r <= 0) return r == 0 ? Py_NewRef(Py_None) : NULL;
    return variance ? Py_BuildValue("dd", m, v) : PyFloat_FromDouble(m);
}

/* ---------------------------------------------------------------------------------------- */
/* the batch kernel (_batch.h): the arrowhead's mathematics of a batch's rows                  */


/* the root is no feature: a row naming it (but as the intercept) goes to learn_one */
static inline int batch_refused_key(Arrowhead *self, PyObject *key) { return key == self->root; }

static int batch_scheme(PyObject *scheme, int *kind, double *C) {
    *kind = scheme_drop(scheme);
    *C = 0.0;
    return 0;
}

/* the lean CSR rows update by either scheme (update_with) */
static int batch_lean_scheme(int kind) { return 1; }

static inline int batch_lean_spec(Arrowhead *self, PyObject *lean) {
    return lean == self->lean_spec ? 0 : parse_lean(self, lean);
}

/* the lean spec's step (the batch kernel asks it only of an exact rule's, which the arrowhead
 * has none of: its native step, as learn_native takes it) */
static int batch_lean_step(Arrowhead *self, double m, double v, double w, double *alpha,
                           double *gamma, int *kind, double *C) {
    int r = self->step(self->params, m, v, w, alpha, gamma);
    if (r > 0) {
        *kind = self->drop;
        *C = 0.0;
    }
    return r;
}

/* an exact rule's terms: none, the arrowhead has no exact scheme (as learn refuses one) */
static PyObject *batch_terms(Arrowhead *self) {
    PyErr_SetString(PyExc_ValueError, "the arrowhead engine's scheme is 'project' or 'drop'");
    return NULL;
}

/* lean_learn of a batch's dict row, x less `centre` where not NULL (learn_native's centre) */
static inline int batch_lean_dict(Arrowhead *self, PyObject *x, double sign, double w,
                                  int calibrate, PyObject *centre) {
    int outcome;
    self->centre = centre;
    outcome = lean_learn(self, x, sign, w, calibrate);
    self->centre = NULL;
    return outcome;
}

/* score_dict of a batch's dict row, x less `centre` where not NULL (score_native's centre) */
static inline int batch_score_dict(Arrowhead *self, PyObject *x, PyObject *intercept, double *m,
                                   double *v, PyObject *centre) {
    int r;
    if (!rcw_x_readable(x) || self->blocks.n != 1) return 0;
    self->centre = centre;
    r = score_dict(self, x, intercept, m, v);
    self->centre = NULL;
    return r;
}

/* the column of a resolved row named by the root (the intercept's), or -1 */
static Py_ssize_t row_root_column(const Arrowhead *self, const BatchRow *r) {
    Py_ssize_t j;
    for (j = r->n - 1; j >= 0; j--) /* the intercept comes last */
        if (r->keys[r->col[j]] == self->root) return r->col[j];
    return -1;
}

/* pass_pair's pass over a resolved row r for the pair p (its block and sign set): the column the
 * root names (the intercept's) gives x_b and the root's entry, every other column a coordinate,
 * learned (forgotten as pass_pair forgets) or new. PASS_OK; PASS_GENERAL (learn_one judges the
 * row: a sum math.fsum raises on, a score beyond float64; no error set, the coordinates
 * dropped); PASS_ERROR with the error. */
static int pass_row(Arrowhead *self, Pair *p, const BatchRow *r, double keep, double rest,
                    DdSum *c_acc) {
    Table *t = &self->blocks.table[p->block];
    const Py_ssize_t *slot = ROW_SLOTS(r, p->block);
    Py_ssize_t j, first = self->ncoords, n = first, nseen = 0;
    double unknown = 0.0;
    DdPair ak, cs;
    DdSum kk;
    int forgetting = keep != 1.0, rooted = 0;
    if (rcw_grow((void **)&self->coords, &self->coords_cap, first + r->n, sizeof(Coord)) < 0)
        return PASS_ERROR;
    p->first = first;
    p->x_b = 0.0;
    p->keep = keep;
    p->rest = rest;
    p->touched = 0;
    ddpair_init(&ak);
    ddlane_of(&cs, c_acc);
    ddsum_init(&kk);
    if (forgetting && pass_root_mean(self, p, t) < 0) {
        if (!rcw_error_recoverable()) return PASS_ERROR;
        PyErr_Clear(); /* learn_one meets it again and raises it */
        return PASS_GENERAL;
    }
    for (j = 0; j < r->n; j++) {
        Py_ssize_t l = r->col[j], ix = slot[l];
        double xf = r->x[j];
        if (r->keys[l] == self->root) {
            p->x_b = xf;
            p->root = ix;
            rooted = 1;
        } else if (ix < 0)
            n += coord_new(self, &self->coords[n], r->keys[l], r->hashes[l], xf, &unknown, &cs);
        else {
            const Entry *e = &t->entries[ix];
            if (forgetting)
                coord_forgetting(p, &self->coords[n++], ix, e, xf, &ak, &cs, &kk);
            else
                coord_learned(&self->coords[n++], ix, e, xf, e->c, &ak, &cs);
            nseen++;
        }
    }
    *c_acc = ddlane_sum(&cs);
    self->ncoords = p->end = n;
    p->nseen = nseen;
    p->nnew = n - first - nseen;
    if ((!rooted && (p->root = table_find(t, self->root, self->root_hash)) == -2) ||
        pair_close(self, p, t, &ak, NULL, 0, forgetting ? &kk : NULL) < 0) {
        drop_coords(self, first);
        if (!rcw_error_recoverable()) return PASS_ERROR;
        PyErr_Clear(); /* learn_one meets it again and raises it */
        return PASS_GENERAL;
    }
    if (!isfinite(p->score + unknown)) {
        drop_coords(self, first);
        return PASS_GENERAL;
    }
    return PASS_OK;
}

/* a resolved row's score in block b, as scores() computes it (pass_row); -1 where the row is
 * bad, the error cleared (learn_one's row) or pending */
static int batch_row_score(Arrowhead *self, Py_ssize_t b, const BatchRow *r, double *score) {
    Pair p = {.block = b, .sign = 1.0};
    Py_ssize_t mark = self->ncoords;
    DdSum c_acc;
    int outcome;
    ddsum_init(&c_acc);
    outcome = pass_row(self, &p, r, 1.0, 0.0, &c_acc);
    drop_coords(self, mark);
    *score = p.score;
    return outcome == PASS_OK ? 0 : -1;
}

/* margin_of on a resolved row along the pairs bp (pass_row, then margin_close), the margin
 * scratch as `learn` leaves it for update; a root stored anew by forgetting written to the row's
 * slot. -1 (nothing changed) where learn_one judges the row, -2 with an error */
static int batch_margin(Arrowhead *self, BatchRow *r, BatchPairs *bp, double keep, double rest,
                        double *m, double *v) {
    Py_ssize_t root;
    int k, outcome = PASS_OK;
    release_margin(self);
    ddsum_init(&self->c_acc);
    self->npairs = bp->n;
    for (k = 0; k < bp->n && outcome == PASS_OK; k++) {
        self->pairs[k].block = bp->block[k];
        self->pairs[k].sign = bp->sign[k];
        outcome = pass_row(self, &self->pairs[k], r, keep, rest, &self->c_acc);
    }
    if (outcome == PASS_OK)
        outcome = margin_close(self, NULL, keep, rest, 1, m);
    else
        release_margin(self);
    if (outcome != PASS_OK) return outcome == PASS_GENERAL ? -1 : -2;
    if (keep != 1.0 && (root = row_root_column(self, r)) >= 0)
        for (k = 0; k < bp->n; k++) ROW_SLOTS(r, bp->block[k])[root] = self->pairs[k].root;
    for (k = 0; k < bp->n; k++) bp->n_new[k] = self->pairs[k].nnew;
    *v = self->v;
    return 0;
}

/* update on the margin batch_margin left (the loop checked that the rule's step left it), then
 * the entries the update appended written to the row's slots, per pair in its order: the root's
 * where it was new, then the new features' in the row's order */
static int batch_update(Arrowhead *self, BatchRow *r, const BatchPairs *bp, double alpha,
                        double gamma, double v, int kind, double C, PyObject *scheme) {
    Py_ssize_t used[2], root, j;
    int k, applied;
    for (k = 0; k < self->npairs; k++) used[k] = self->blocks.table[self->pairs[k].block].used;
    applied = update(self, alpha, gamma, kind);
    root = applied > 0 ? row_root_column(self, r) : -1;
    for (k = 0; applied > 0 && k < self->npairs; k++) {
        Py_ssize_t *slot = ROW_SLOTS(r, self->pairs[k].block), next = used[k];
        if (root >= 0 && self->pairs[k].root >= next) slot[root] = next++;
        for (j = 0; j < r->n; j++)
            if (slot[r->col[j]] < 0 && r->x[j] * r->x[j] != 0.0 && r->col[j] != root)
                slot[r->col[j]] = next++;
    }
    release_margin(self);
    return applied;
}

enum { PASS_COLUMN = -3 };

/* pass_pair's pass over the lean CSR row i for pair 0 (its sign set) of a binary engine, nothing
 * forgotten, straight from the arrays and the batch cache's columns, the intercept (where
 * `intercept`) as the root with x_b = 1.0: the terms (learned_ak, new_term) into the pair's
 * sums (G's taking x_b first: ddpair_start; their least magnitudes kept: ddpair_least_add) and
 * self->c_acc (the terms c_j x_j^2 of two learned features side by side: ddlanes_sum), G and
 * the score; the coordinates counted, not laid out (the row pending: coords_fsum reads its
 * terms from the arrays, lay_out lays them out for a checked update). PASS_OK; PASS_GENERAL
 * (the general row's: a sum math.fsum raises on, a score beyond float64, an intercept other than
 * the root; no error set); PASS_ERROR with the error; PASS_COLUMN (a lazy call: a column out
 * of range, not resolved in the epoch or stored twice; the columns are checked as they are
 * read). The scratch is released unless PASS_OK. */
static RCW_ALWAYS_INLINE int pass_csr(Arrowhead *self, Pair *p, const BatchColumns *c,
                                      Py_ssize_t i, int intercept) {
    Table *t = &self->blocks.table[0];
    BatchCache *cache = c->cache;
    const Py_ssize_t a = c->csr.indptr[i], n = c->csr.indptr[i + 1] - a, *slot = cache->slot;
    const Py_ssize_t *ind = c->csr.indices + a;
    const double *data = c->csr.data + a, prior = self->prior;
    const Entry *entries = t->entries;
    Py_ssize_t q, unseen = 0, nnew = 0;
    double unknown = 0.0, term;
    DdPair ak, cs; /* cs: the terms c_j x_j^2 in both lanes, two learned features' at once */
    DdLeast least; /* ak's least magnitudes */
    if (intercept && cache->key[cache->ncols] != self->root) return PASS_GENERAL;
    if (c->lazy) { /* the row's columns checked as columns_resolve checks them, first */
        BatchMark *marks = cache->mark;
        const size_t ncols = (size_t)cache->ncols;
        const int64_t epoch = cache->calls, row = ++cache->rows;
        const Py_ssize_t *l, *end = ind + n;
        for (l = ind; l != end; l++) /* one induction variable, no count */
            if (mark_take(marks, *l, ncols, epoch, row) <= 0) return PASS_COLUMN;
    }
    p->x_b = intercept ? 1.0 : 0.0;
    ddpair_start(&ak, 0.0, p->x_b); /* G's sum takes x_b first (pair_close's `rooted`) */
    ddpair_init(&cs);
    ddleast_init(&least);
    for (q = 0; q < n; q++) {
        Py_ssize_t ix = slot[ind[q]], iy;
        if (ix < 0) {
            unseen++;
            if (new_term(prior, data[q], &unknown, &term)) {
                ddlane_add(&cs, term);
                nnew++;
            }
        } else if (q + 1 < n && (iy = slot[ind[q + 1]]) >= 0) { /* two learned, one operation */
            term = learned_ak(&entries[ix], data[q], entries[ix].c, &ak, &least);
            q++;
            ddpair_add(&cs, term, learned_ak(&entries[iy], data[q], entries[iy].c, &ak, &least));
        } else
            ddlane_add(&cs, learned_ak(&entries[ix], data[q], entries[ix].c, &ak, &least));
    }
    self->c_acc = ddlanes_sum(&cs);
    self->c_more = DDLANES_TERMS;
    self->row_ind = ind; /* pending */
    self->row_data = data;
    self->row_n = n;
    p->first = 0;
    p->end = n - unseen + nnew;
    p->nseen = n - unseen;
    p->nnew = nnew;
    p->keep = 1.0;
    p->touched = 0;
    p->root = intercept ? slot[cache->ncols] : table_find(t, self->root, self->root_hash);
    if (p->root == -2 || pair_close(self, p, t, &ak, &least, 1, NULL) < 0) {
        release_margin(self);
        if (!rcw_error_recoverable()) return PASS_ERROR;
        PyErr_Clear(); /* learn_one meets it again and raises it */
        return PASS_GENERAL;
    }
    if (!isfinite(p->score + unknown)) {
        release_margin(self);
        return PASS_GENERAL;
    }
    return PASS_OK;
}

/* The lean CSR row: row i (plain, or checked as it is read when the call is lazy) of a binary
 * model learned by the native step s with the scheme `kind` (drop) and nothing forgotten,
 * straight from the arrays: learn_native's margin (pass_csr, margin_close), step and update
 * (lean_apply, update_row), the entries the update appended written to their columns' slots
 * (the root's where it was new, then the new features' in the row's order). 0: learned,
 * nothing to learn, or skipped (counted in *skipped); 1: the general row's, nothing changed; 2
 * (lazy): a column out of range, not resolved in the epoch or stored twice, nothing changed; -1
 * on an error. */
static int batch_lean_row(Arrowhead *self, const BatchColumns *c, Py_ssize_t i, int intercept,
                          double sign, double w, const BatchStep *s, int kind,
                          Py_ssize_t *skipped) {
    Table *t = &self->blocks.table[0];
    Py_ssize_t used = t->used, *slot = c->cache->slot, next, q;
    double m;
    int outcome, pending;
    if (self->ncoords > 0 || self->scored != NULL) /* the rows before released their margins */
        release_margin(self);
    self->npairs = 1;
    self->pairs[0].block = 0;
    self->pairs[0].sign = sign;
    if ((outcome = pass_csr(self, &self->pairs[0], c, i, intercept)) == PASS_OK &&
        (outcome = margin_close(self, NULL, 1.0, 0.0, 1, &m)) == PASS_OK)
        outcome = lean_apply(self, s->native, s->params, kind, m, w, 1, s->temperature);
    pending = self->row_ind != NULL;
    release_margin(self);
    switch (outcome) {
    case PASS_COLUMN: return 2;
    case PASS_GENERAL: return 1;
    case PASS_ERROR: return -1;
    }
    *skipped += outcome == LEARN_SKIPPED;
    if ((next = used) < t->used) { /* appended: the root where it was new, the new features */
        if (intercept && slot[c->cache->ncols] < 0) slot[c->cache->ncols] = next++;
        for (q = c->csr.indptr[i]; !pending && q < c->csr.indptr[i + 1]; q++)
            if (slot[c->csr.indices[q]] < 0 && c->csr.data[q] * c->csr.data[q] != 0.0)
                slot[c->csr.indices[q]] = next++; /* laid out: update_with appended them */
    }
    return 0;
}

/* the root's numbers, which every CSR row of a score_rows call shares (the rows of dicts are
 * block_score's, which finds them itself); the intercept is the root's x_b, no term */
static int row_score_open(Arrowhead *self, PyObject *intercept, int csr, Py_ssize_t *term,
                          RowScoreCall *call) {
    Table *t = &self->blocks.table[0];
    Py_ssize_t root = -1;
    if (intercept != Py_None && intercept != self->root) {
        PyErr_SetString(PyExc_ValueError, "score_rows' intercept is None or the root");
        return -1;
    }
    *term = -3;
    if (csr && (root = table_find(t, self->root, self->root_hash)) == -2) return -1;
    call->x_b = intercept == Py_None ? 0.0 : 1.0;
    call->mu_b = root < 0 ? 0.0 : t->entries[root].a;
    call->S = root < 0 ? self->root_variance : t->entries[root].k;
    return 0;
}

static RCW_ALWAYS_INLINE void row_score_init(RowScore *s) {
    ddpair_init(&s->ak);
    ddpair_init(&s->c);
    s->unknown = 0.0;
}

/* a stored entry's terms, as pass_pair adds them (coord_learned, coord_new) */
static RCW_ALWAYS_INLINE void row_score_add(Arrowhead *self, const Table *t, Py_ssize_t ix,
                                            double xf, RowScore *s) {
    if (ix >= 0)
        learned_terms(&t->entries[ix], xf, t->entries[ix].c, &s->ak, &s->c);
    else
        new_terms(self->prior, xf, &s->unknown, &s->c);
}

/* G, the score and the variance with the root's terms last, as pair_close and block_score sum
 * them: 1 where the bound certifies each */
static RCW_ALWAYS_INLINE int row_score_sums(const RowScoreCall *call, RowScore *s, Py_ssize_t n,
                                            double *m, double *v) {
    DdSum a_acc, k_acc, c_acc = ddlane_sum(&s->c);
    double G;
    ddpair_split(&s->ak, &a_acc, &k_acc);
    ddsum_add(&k_acc, call->x_b);
    if (!ddsum_certified(&k_acc, n + 1, &G)) return 0;
    ddsum_add(&a_acc, G * call->mu_b);
    if (!ddsum_certified(&a_acc, n + 1, m)) return 0;
    ddsum_add(&c_acc, G * G * call->S);
    return ddsum_certified(&c_acc, n + 1, v);
}

static RCW_ALWAYS_INLINE int row_score_finite(const RowScore *s, double m) {
    return isfinite(m + s->unknown) ? 1 : 0;
}

static void row_exact_init(RowScoreExact *s) {
    msum_init(&s->a);
    msum_init(&s->k);
    msum_init(&s->c);
}

static void row_exact_free(RowScoreExact *s) {
    msum_free(&s->a);
    msum_free(&s->k);
    msum_free(&s->c);
}

static int row_exact_add(Arrowhead *self, const Table *t, Py_ssize_t ix, double xf,
                         RowScoreExact *s) {
    double x2 = xf * xf;
    if (ix >= 0) {
        const Entry *e = &t->entries[ix];
        if (msum_add(&s->a, e->a * xf) < 0 || msum_add(&s->k, e->k * xf) < 0 ||
            msum_add(&s->c, e->c * x2) < 0)
            goto fail;
    } else if (x2 != 0.0 && msum_add(&s->c, self->prior * x2) < 0)
        goto fail;
    return 0;
fail:
    row_exact_free(s);
    return -1;
}

/* G, the score (an error of either: the general path's, 0) and the variance (inf beyond
 * float64), by math.fsum's algorithm; as pair_close and block_score sum them */
static int row_exact_result(const RowScoreCall *call, RowScoreExact *s, double *m, double *v) {
    double G;
    if (msum_add(&s->k, call->x_b) < 0 || msum_result(&s->k, &G) < 0 ||
        msum_add(&s->a, G * call->mu_b) < 0 || msum_result(&s->a, m) < 0) {
        row_exact_free(s);
        if (!rcw_error_recoverable()) return -1;
        PyErr_Clear(); /* scores() raises, naming the feature */
        return 0;
    }
    if (msum_add(&s->c, G * G * call->S) < 0 || msum_result(&s->c, v) < 0) {
        msum_free(&s->c);
        if (!PyErr_ExceptionMatches(PyExc_OverflowError)) return -1;
        PyErr_Clear(); /* beyond float64: inf, as score_variances */
        *v = INFINITY;
    }
    return 1;
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
    Py_VISIT(self->scored);
    return 0;
}

/* the root stays until dealloc: every method reads it */
static void payload_clear(Arrowhead *self) {
    batch_cache_free(self);
    rcw_temperature_release(&self->temperature);
    Py_CLEAR(self->lean_spec);
}

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

static PyMethodDef engine_methods[] = {
    {"scores_with_scale", (PyCFunction)engine_scores_with_scale, METH_O,
     "(scores, v): every block's score of x and the variance of the margin between the two "
     "best-scoring blocks (of the one block's score while binary), in one pass."},
    RCW_BATCH_METHODS RCW_SHELL_METHODS{NULL}};

static PyGetSetDef engine_getset[] = {
    {"root", (getter)arrowhead_get_root, NULL, "The root's feature name (the intercept).", NULL},
    {"root_variance", (getter)arrowhead_get_root_variance, NULL, "The root's prior variance.",
     NULL},
    RCW_SHELL_GETSET
    {NULL},
};

RCW_SHELL_TYPE(ArrowheadType, "river_cw._engines._arrowhead.Arrowhead", Py_TPFLAGS_BASETYPE,
               "The compiled arrowhead Gaussian engine (see river_cw._engines.arrowhead).");

RCW_SHELL_MODULE(
    "The compiled arrowhead Gaussian engine of river_cw (optional; see river_cw._engines.arrowhead).");

PyMODINIT_FUNC PyInit__arrowhead(void) {
    return shell_module(&moduledef, &ArrowheadType, "Arrowhead");
}
