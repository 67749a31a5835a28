/* The compiled diagonal Gaussian engine: the same interface and the same numbers as
 * river_cw._engines.diagonal.PythonDiagonalGaussian (the readable reference), bit for bit.
 *
 * Each weight block is an insertion-ordered open-addressing table (CPython's compact dict
 * layout): an index of int32 slots probed with the key's hash, and a dense array of entries
 * holding the key, its hash and the interleaved (mean, variance) pair. Keys compare by
 * identity, then (for str) by length and bytes, then with ==. Sums are exactly rounded, as
 * math.fsum's (_fsum.h), so the order of the features never changes a result and both engines
 * agree bit for bit. Compile with -ffp-contract=off: the operation order must be the one
 * written here.
 *
 * margin() leaves the difference vector in the engine's margin scratch and returns its token (the
 * shell's margin token); update() checks the token, computes every new (mean, variance) first
 * and commits only when the scheme has produced them all (a raising scheme leaves the model
 * unchanged).
 *
 * The engine joins the shell (_shell.h: the object's head, re-entry, layout, marks, changes,
 * the blocks' state, lifecycle, connect; its glossary names the terms of the fast paths used
 * here) with its payload, the margin scratch and the lean cache below, and its kernels: margin,
 * update, learn, the lean path (learn_native), the scores (score_native) and the batch kernel's
 * payload hooks (_batch.h: learn_rows, score_rows). The module also serves utilities of other
 * code (_utilities.h: as_floats, fsum, the exact CW solvers, native_step).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "_exact.h"
#include "_fsum.h"
#include "_input.h"
#include "_steps.h"
#include "_calibration.h"

/* the feature table of one block: entries hold their (mean, variance), interleaved (one cache
 * line holds both) */
#define RCW_ENTRY_PAYLOAD double mean, var;
#include "_table.h"

/* append a key known to be absent (room reserved) with its (mean, variance) */
static inline void table_append(Table *t, PyObject *key, Py_hash_t hash, double mean,
                                double var) {
    Entry *e = table_push(t, key, hash);
    e->mean = mean;
    e->var = var;
}

/* ---------------------------------------------------------------------------------------- */
/* the per-coordinate formulas: one home each                                                */

#define SAFE_BOUND 1e300 /* river_cw._engines.diagonal._SAFE: far enough from float64's limit */

enum { SCHEME_PROJECT, SCHEME_DROP, SCHEME_HERDING, SCHEME_CALLABLE };

/* project (JMLR 2012 section 6, "KL"): 1/s <- 1/s + gamma d^2 */
static inline double shrink_project(double s, double xf, double gamma) {
    return s / (1.0 + gamma * (xf * xf * s));
}

/* drop ("L2"): s <- s - beta (s d)^2, never below 0 */
static inline double shrink_drop(double s, double xf, double beta) {
    double f = 1.0 - beta * (xf * xf * s);
    return s * (f > 0.0 ? f : 0.0);
}

/* NHERD's exact diagonal step: s <- s / (1 + C d^2 s)^2 (Crammer and Lee 2010) */
static inline double shrink_herding(double s, double d2, double C) {
    double q = 1.0 + C * d2 * s;
    return s / (q * q);
}

/* mean step of every scheme: mu_j <- mu_j + alpha sign s_j x_j */
static inline double step_mean(double mean, double a, double s, double xf) {
    return mean + a * s * xf;
}

/* ---------------------------------------------------------------------------------------- */
/* the engine                                                                                */

typedef struct {
    int pair;        /* index into the pairs of the last margin */
    Py_ssize_t ix;   /* entry position, or -1 when unseen */
    double x;        /* the feature value */
    PyObject *key;   /* unseen only: a reference, and its hash */
    Py_hash_t hash;
} Coord;

/* The margin scratch: the difference vector d of the last margin, as update() steps it (its
 * coordinates, the pairs of blocks and signs d spans, the terms u_j of v), and the update's room
 * for new (mean, variance) pairs; the shell's margin token names that margin. Written by every
 * margin (margin, the lean paths, learn_rows' general rows); the model is unchanged by it. */
typedef struct {
    Coord *coords;
    Py_ssize_t ncoords, coords_cap;
    Py_ssize_t nkeyed;         /* coordinates holding a key (unseen features) */
    Py_ssize_t pair_new[2];    /* per pair, its unseen coordinates */
    double *u;                 /* the terms u_j = s_j d_j^2 of v, in the coordinates' order */
    Py_ssize_t nu, u_cap;
    double *scratch;           /* update: new (mean, var) per coordinate */
    Py_ssize_t scratch_cap;
    int npairs;
    Py_ssize_t pair_block[2];
    double pair_sign[2];
    /* the scored pass: score_native's lean pass over a TokenCounts (score_kept), its coordinates
     * kept here (pair 0 along block 0) for learn_native on the same x (scored_holds); NULL: none */
    PyObject *scored;
    uint64_t scored_generation; /* the generation it read */
    PyObject *scored_intercept; /* the intercept it appended (a reference; None: none) */
    double scored_mk, scored_v; /* its sums: mu . x and the terms u_j's (lean_pass) */
    int scored_finite;          /* whether mu . x plus the unseen features' values is finite */
} Margin;

/* The lean cache: learn_native's last `lean` spec (see the glossary), parsed once and kept while
 * the model hands the same spec object */
typedef struct {
    PyObject *spec;           /* the spec parsed (a reference), compared by identity */
    rcw_step step;            /* the rule's step, or NULL: */
    exact_step exact;         /* its exact step (the margin's terms u_j from the coordinates) */
    double params[RCW_MAX_PARAMS];
    int kind;                 /* the scheme; SCHEME_HERDING shrinks with herding_C * w */
    double herding_C;
    PyObject *intercept;      /* borrowed from spec; None: no intercept */
    Py_hash_t intercept_hash;
    RcwTemperature temperature; /* the spec's calibration (_calibration.h) */
} LeanSpec;

/* the engine's payload, after the shell's head (_shell.h) */
#define RCW_ENGINE_PAYLOAD                                                                       \
    double prior;                                                                                \
    double mean_bound; /* an upper bound of every |mean| (see update) */                         \
    /* the caches, none of them part of the model: */                                            \
    Margin margin;            /* the margin scratch */                                           \
    LeanSpec lean;            /* the lean cache */                                               \
    struct BatchCache *batch; /* the batch cache: learn_rows' CSR columns (_batch.h), or NULL */
#define RCW_ENGINE_NAME "diagonal"
#define RCW_MODULE_NAME "river_cw._engines._diagonal"
#define RCW_BAD_INPUT_VALUE_ERROR 0 /* river_cw._engines.diagonal lets math.fsum's ValueError through */
/* beyond raise_bad_input: NHERD's scheme type, whose instances update_core runs in C; the
 * general case of as_floats (module_as_floats); TokenCounts' type (_token_counts.h) */
#define RCW_ENGINE_HOOKS(X)                                                                      \
    X(herding_shrink, hook_type) X(as_floats, hook_any) X(token_counts, hook_token_counts)
#define RCW_SHELL_WEIGHTS
#define RCW_NUMBERS_DOC "{feature: (mean, variance)}"
#define RCW_BLOCKS_DOC \
    "The weights: a list (one per block) of dicts feature -> [mean, variance] (copies)."
#include "_shell.h"

typedef Engine Diagonal; /* the shell's object with the diagonal's payload */

#include "_utilities.h"

/* a feature's term of the score's variance, s_j x_j x_j, rounded as the scores round it ((s x)
 * x; the learning's u_j = s_j (x_j x_j) is rounded otherwise): ix its entry in t, -1 unseen */
static inline double variance_term(const Diagonal *self, const Table *t, Py_ssize_t ix,
                                   double xf) {
    return (ix < 0 ? self->prior : t->entries[ix].var) * xf * xf;
}

/* the margin scratch emptied, its keys released: no margin to update, no scored pass */
static void release_coords(Diagonal *self) {
    Py_ssize_t i;
    if (self->margin.nkeyed)
        for (i = 0; i < self->margin.ncoords; i++) Py_CLEAR(self->margin.coords[i].key);
    self->margin.nkeyed = 0;
    self->margin.pair_new[0] = self->margin.pair_new[1] = 0;
    self->margin.ncoords = 0;
    self->margin.nu = 0;
    token_drop(self);
    if (self->margin.scored != NULL) {
        Py_CLEAR(self->margin.scored);
        Py_CLEAR(self->margin.scored_intercept);
    }
}

/* ---------------------------------------------------------------------------------------- */
/* the shell's hooks (_shell.h)                                                              */

static void payload_drop_margin(Diagonal *self) { release_coords(self); }

static int payload_traverse(Diagonal *self, visitproc visit, void *arg) {
    Py_ssize_t i;
    for (i = 0; i < self->margin.ncoords; i++) Py_VISIT(self->margin.coords[i].key);
    Py_VISIT(self->margin.scored);
    Py_VISIT(self->margin.scored_intercept);
    Py_VISIT(self->lean.spec);
    return 0;
}

static void batch_cache_free(Diagonal *self); /* _batch.h */

static void payload_clear(Diagonal *self) {
    batch_cache_free(self);
    rcw_temperature_release(&self->lean.temperature);
    Py_CLEAR(self->lean.spec);
}

static void payload_free(Diagonal *self) {
    PyMem_Free(self->margin.coords);
    PyMem_Free(self->margin.u);
    PyMem_Free(self->margin.scratch);
}

static Py_ssize_t payload_bytes(const Diagonal *self) {
    return sizeof(Coord) * self->margin.coords_cap +
           sizeof(double) * (self->margin.u_cap + 2 * self->margin.scratch_cap);
}

/* block 0's means negated */
static void entry_negate(Entry *e) { e->mean = -e->mean; }

/* a weight's (mean, variance), as a list (`blocks`) or a tuple (`changed`) */
static PyObject *entry_numbers(const Diagonal *self, const Entry *e, int as_list) {
    return Py_BuildValue(as_list ? "[dd]" : "(dd)", e->mean, e->var);
}

/* a weight given as a (mean, variance) pair of numbers */
static int entry_read(Diagonal *self, PyObject *key, PyObject *w, Payload *out) {
    double numbers[2];
    if (read_numbers(w, 2, numbers, "a weight is a (mean, variance) pair") < 0) return -1;
    out->mean = numbers[0];
    out->var = numbers[1];
    return 0;
}

static void entry_written(Diagonal *self, const Entry *e) {
    if (fabs(e->mean) > self->mean_bound) self->mean_bound = fabs(e->mean);
}

/* the views: a weight's mean and variance */
static void view_context(const Diagonal *self, const Table *t, double *ctx) {}

static double entry_view(const Diagonal *self, const Entry *e, const double *ctx, int variance) {
    return variance ? e->var : e->mean;
}

/* the blocks replaced: mean_bound is left as it was, as the Python engine's `blocks` are plain
 * data; whoever replaces them calls reset_bound (river_cw.combine) */
static void payload_replaced(Diagonal *self) {}

static PyObject *engine_new(PyTypeObject *type, PyObject *args, PyObject *kwds) {
    static char *kwlist[] = {"initial_variance", NULL};
    double prior;
    Diagonal *self;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "d", kwlist, &prior)) return NULL;
    if ((self = engine_alloc(type)) == NULL) return NULL;
    self->prior = prior;
    return (PyObject *)self;
}

/* one feature of x: its value as a double, its hash, and its entry in t (-1: unseen) */
static inline int lookup(Table *t, PyObject *key, PyObject *value, double *xf, Py_hash_t *h,
                         Py_ssize_t *ix) {
    if (value_of(value, xf) < 0) return -1;
    if ((*h = key_hash(key)) == -1) return -1;
    *ix = table_find(t, key, *h);
    return *ix == -2 ? -1 : 0;
}

/* out[b] = a new float; -1 (out cleared) on failure */
static int set_float(PyObject **out, Py_ssize_t b, double value) {
    PyObject *f = PyFloat_FromDouble(value);
    if (f == NULL) {
        Py_CLEAR(*out);
        return -1;
    }
    PyList_SET_ITEM(*out, b, f);
    return 0;
}

/* scores(x): mu_b . x for every block; a bad x raises, every value is touched */
static PyObject *engine_scores(Diagonal *self, PyObject *x_in) {
    PyObject *x, *out = NULL, *key, *value;
    Py_ssize_t b, pos;
    if (enter(self) < 0) return NULL;
    if ((x = as_dict(x_in)) == NULL) goto done;
    if ((out = PyList_New(self->blocks.n)) == NULL) goto done;
    for (b = 0; b < self->blocks.n; b++) {
        Table *t = &self->blocks.table[b];
        Fsum acc;
        double unseen = 0.0, score, xf;
        int failed = 0;
        fsum_init(&acc);
        pos = 0;
        while (PyDict_Next(x, &pos, &key, &value)) {
            Py_hash_t h;
            Py_ssize_t ix;
            if (lookup(t, key, value, &xf, &h, &ix) < 0) {
                failed = 1;
                break;
            }
            if (ix < 0)
                unseen += xf;
            else if (fsum_add(&acc, t->entries[ix].mean * xf) < 0) {
                failed = 1;
                break;
            }
        }
        if (failed) {
            fsum_free(&acc);
            bad_or_propagate(x);
            Py_CLEAR(out);
            goto done;
        }
        if (fsum_result(&acc, &score) < 0) {
            bad_or_propagate(x);
            Py_CLEAR(out);
            goto done;
        }
        if (!isfinite(score + unseen)) {
            raise_bad_input(x);
            Py_CLEAR(out);
            goto done;
        }
        if (set_float(&out, b, score) < 0) goto done;
    }
done:
    Py_XDECREF(x);
    leave(self);
    return out;
}

/* score_variances(x, blocks=None): x' Sigma_b x for every block b, or each block listed (x
 * already validated by scores) */
static PyObject *engine_score_variances(Diagonal *self, PyObject *const *args, Py_ssize_t nargs) {
    PyObject *x = NULL, *out = NULL, *key, *value;
    Py_ssize_t i, pos;
    BlockSelection selected;
    if (select_blocks(self, args, nargs, &selected) < 0) return NULL;
    if (enter(self) < 0) {
        release_selection(&selected);
        return NULL;
    }
    if ((x = as_dict(args[0])) == NULL) goto done;
    if ((out = PyList_New(selected.count)) == NULL) goto done;
    for (i = 0; i < selected.count; i++) {
        Table *t = &self->blocks.table[selected_block(&selected, i)];
        Fsum acc;
        double total, xf;
        fsum_init(&acc);
        pos = 0;
        while (PyDict_Next(x, &pos, &key, &value)) {
            Py_hash_t h;
            Py_ssize_t ix;
            if (lookup(t, key, value, &xf, &h, &ix) < 0 ||
                fsum_add(&acc, variance_term(self, t, ix, xf)) < 0) {
                fsum_free(&acc);
                Py_CLEAR(out);
                goto done;
            }
        }
        if (fsum_result(&acc, &total) < 0) {
            if (!PyErr_ExceptionMatches(PyExc_OverflowError)) {
                Py_CLEAR(out);
                goto done;
            }
            PyErr_Clear(); /* beyond float64: inf, as the Python engine's _total */
            total = INFINITY;
        }
        if (set_float(&out, i, total) < 0) goto done;
    }
done:
    release_selection(&selected);
    Py_XDECREF(x);
    leave(self);
    return out;
}

/* ---------------------------------------------------------------------------------------- */
/* margin and update                                                                         */

static int coords_reserve(Diagonal *self, Py_ssize_t n) {
    if (rcw_grow((void **)&self->margin.coords, &self->margin.coords_cap, n, sizeof(Coord)) < 0) return -1;
    return rcw_grow((void **)&self->margin.u, &self->margin.u_cap, n, sizeof(double));
}

/* forgetting: a learned variance relaxed toward the prior, 1/s <- keep/s + rest (see
 * river_cw._engines.gaussian.forget); keep == 1 leaves it as it is */
static inline double forget(double s, double keep, double rest) {
    return keep == 1.0 ? s : s / (keep + rest * s);
}

/* a learned feature's terms of the margin's sums: mu_j d_j (returned) and u_j = Sigma_jj d_j^2
 * (*uj), its variance forgotten first; one home for learn, learn_native and learn_rows */
static inline double learned_terms(const Entry *e, double xf, double keep, double rest,
                                   double *uj) {
    *uj = forget(e->var, keep, rest) * (xf * xf);
    return e->mean * xf;
}

/* one feature of d in pair k (entry ix of t, -1: unseen): its coordinate (room reserved), and
 * its terms of the margin's sums, mu_j d_j into *mj and u_j = Sigma_jj d_j^2 into *uj. 2: both
 * terms (a learned feature), 1: u_j only (a new one), 0: none (a new feature of value 0 teaches
 * nothing: nothing stored). One home for margin, learn_native and learn_rows. */
static inline int add_coord(Diagonal *self, Table *t, int k, PyObject *key, Py_hash_t h,
                            Py_ssize_t ix, double xf, double keep, double rest, double *mj,
                            double *uj) {
    Coord *c;
    if (ix < 0) {
        double x2 = xf * xf;
        if (x2 == 0.0) return 0;
        *uj = self->prior * x2;
        c = &self->margin.coords[self->margin.ncoords++];
        c->pair = k;
        c->ix = -1;
        c->x = xf;
        Py_INCREF(key);
        c->key = key;
        c->hash = h;
        self->margin.nkeyed++;
        self->margin.pair_new[k]++;
        return 1;
    }
    *mj = learned_terms(&t->entries[ix], xf, keep, rest, uj);
    c = &self->margin.coords[self->margin.ncoords++];
    c->pair = k;
    c->ix = ix;
    c->x = xf;
    c->key = NULL;
    return 2;
}

/* margin()'s pairs (rcw_pairs) into the margin scratch; 0, or -1 with an error */
static int margin_pairs(Diagonal *self, PyObject *pairs) {
    int n = rcw_pairs(pairs, self->blocks.n, self->margin.pair_block, self->margin.pair_sign);
    if (n < 0) return -1;
    self->margin.npairs = n;
    return 0;
}

/* The margin kernel: one pass over the dict x along the margin scratch's pairs, into its
 * coordinates and terms (add_coord), with the learned variances forgotten (not written): the
 * margin mean *m = mu . d and variance *v = d' Sigma d. 0, or -1 with an error (a bad x named,
 * the coordinates released) */
static int margin_sums(Diagonal *self, PyObject *x, double keep, double rest, double *m,
                       double *v) {
    PyObject *key, *value;
    Py_ssize_t pos;
    int k;
    Fsum u_acc;
    *m = 0.0;
    fsum_init(&u_acc);
    if (coords_reserve(self, PyDict_GET_SIZE(x) * self->margin.npairs) < 0) goto fail;
    for (k = 0; k < self->margin.npairs; k++) {
        Table *t = &self->blocks.table[self->margin.pair_block[k]];
        Fsum m_acc;
        double mk, xf, mj, uj;
        fsum_init(&m_acc);
        pos = 0;
        while (PyDict_Next(x, &pos, &key, &value)) {
            Py_hash_t h;
            Py_ssize_t ix;
            int found;
            if (lookup(t, key, value, &xf, &h, &ix) < 0) {
                fsum_free(&m_acc);
                goto bad;
            }
            found = add_coord(self, t, k, key, h, ix, xf, keep, rest, &mj, &uj);
            if (found) self->margin.u[self->margin.nu++] = uj;
            if ((found == 2 && fsum_add(&m_acc, mj) < 0) || (found && fsum_add(&u_acc, uj) < 0)) {
                fsum_free(&m_acc);
                goto fail;
            }
        }
        if (fsum_result(&m_acc, &mk) < 0) goto bad;
        *m += self->margin.pair_sign[k] * mk;
    }
    if (fsum_result(&u_acc, v) < 0) {
        bad_or_propagate(x);
        goto fail_freed;
    }
    if (!(isfinite(*m) && isfinite(*v))) {
        raise_bad_input(x);
        goto fail_freed;
    }
    return 0;
bad:
    bad_or_propagate(x);
fail:
    fsum_free(&u_acc);
fail_freed:
    release_coords(self);
    return -1;
}

/* the forgotten variances of the margin's learned coordinates (of non-zero values) written, once
 * x is known to be valid */
static void margin_forget(Diagonal *self, double keep, double rest) {
    Py_ssize_t i;
    for (i = 0; i < self->margin.ncoords; i++) {
        Coord *c = &self->margin.coords[i];
        if (c->ix >= 0 && c->x != 0.0) {
            Table *t = &self->blocks.table[self->margin.pair_block[c->pair]];
            Entry *e = &t->entries[c->ix];
            e->var = forget(e->var, keep, rest);
            table_note(t, c->ix);
        }
    }
}

/* the margin of x along pairs, as margin() computes it (entered, the coordinates released):
 * margin_pairs, margin_sums, then the forgotten variances written and the margin named by a new
 * token; *terms a new Terms of u when `terms` is not NULL. 0, or -1 with an error (nothing
 * changed) */
static int margin_of(Diagonal *self, PyObject *x, PyObject *pairs, double keep, double rest,
                     double *m, double *v, PyObject **terms) {
    if (margin_pairs(self, pairs) < 0 || margin_sums(self, x, keep, rest, m, v) < 0) return -1;
    if (terms != NULL &&
        (*terms = make_terms(self->margin.u, self->margin.nu)) == NULL) {
        release_coords(self);
        return -1;
    }
    if (keep != 1.0) margin_forget(self, keep, rest);
    token_take(self);
    return 0;
}

/* margin(x, pairs, keep=1, rest=0) -> (m, v, u, token): one pass over
 * d = sum(sign f(x, block)), with the learned variances of d's features forgotten first (written
 * once x is known to be valid); u the terms of v (Terms), token what update() checks */
static PyObject *diagonal_margin(Diagonal *self, PyObject *args) {
    PyObject *x_in, *pairs, *x, *terms, *result = NULL;
    double m, v, keep = 1.0, rest = 0.0;
    if (!PyArg_ParseTuple(args, "OO|dd", &x_in, &pairs, &keep, &rest)) return NULL;
    if (enter(self) < 0) return NULL;
    release_coords(self);
    if ((x = as_dict(x_in)) != NULL) {
        if (margin_of(self, x, pairs, keep, rest, &m, &v, &terms) == 0 &&
            (result = Py_BuildValue("ddNL", m, v, terms, (long long)self->token.last)) == NULL)
            release_coords(self);
        Py_DECREF(x);
    }
    leave(self);
    return result;
}

/* room for n (mean, var) pairs */
static int scratch_reserve(Diagonal *self, Py_ssize_t n) {
    return rcw_grow((void **)&self->margin.scratch, &self->margin.scratch_cap, n, 2 * sizeof(double));
}

/* a coordinate's variance (*s) and mean before the step */
static inline double coord_state(Diagonal *self, Coord *c, double *s) {
    Entry *e;
    if (c->ix < 0) {
        *s = self->prior;
        return 0.0;
    }
    e = &self->blocks.table[self->margin.pair_block[c->pair]].entries[c->ix];
    *s = e->var;
    return e->mean;
}

/* one weight's step by a built-in scheme, "project" (kind SCHEME_PROJECT) or "drop": its new
 * mean (out[0]) and variance (out[1]) from its mean and variance s; one home for update_core and
 * learn_rows (a = alpha times the pair's sign) */
static inline void step_weight(double mean, double s, double a, double xf, double gamma,
                               double beta, int kind, double *out) {
    out[0] = step_mean(mean, a, s, xf);
    out[1] = kind == SCHEME_PROJECT ? shrink_project(s, xf, gamma) : shrink_drop(s, xf, beta);
}

/* step_weight in place: a learned weight's entry, or a new weight appended to t from the prior
 * with its key (room reserved); one home for update_core's unchecked path and batch_apply */
static inline void step_entry(Entry *e, double a, double xf, double gamma, double beta,
                              int kind) {
    double out[2];
    step_weight(e->mean, e->var, a, xf, gamma, beta, kind, out);
    e->mean = out[0];
    e->var = out[1];
}

static inline void step_append(Table *t, PyObject *key, Py_hash_t h, double prior, double a,
                               double xf, double gamma, double beta, int kind) {
    double out[2];
    step_weight(0.0, prior, a, xf, gamma, beta, kind, out);
    table_append(t, key, h, out[0], out[1]);
}

/* a new coordinate appended to its table, which took its own reference to the key */
static inline void key_taken(Diagonal *self, Coord *c) {
    Py_DECREF(c->key);
    c->key = NULL;
    self->margin.nkeyed--;
}

/* step_coord of the built-in schemes */
static inline void step_builtin(Diagonal *self, Coord *c, double alpha, double gamma, double beta,
                                int kind, double *out) {
    double s, mean = coord_state(self, c, &s);
    step_weight(mean, s, alpha * self->margin.pair_sign[c->pair], c->x, gamma, beta, kind, out);
}

/* one coordinate's new (mean, variance) into out[0], out[1]; -1 when a scheme raised */
static int step_coord(Diagonal *self, Coord *c, double alpha, double gamma, double beta,
                      int kind, double C, PyObject *scheme, double *out) {
    double a = alpha * self->margin.pair_sign[c->pair], xf = c->x, s, mean;
    if (kind == SCHEME_PROJECT || kind == SCHEME_DROP) {
        step_builtin(self, c, alpha, gamma, beta, kind, out);
        return 0;
    }
    mean = coord_state(self, c, &s);
    out[0] = step_mean(mean, a, s, xf);
    switch (kind) {
    case SCHEME_HERDING:
        out[1] = shrink_herding(s, xf * xf, C);
        return 0;
    default: {
        PyObject *r = PyObject_CallFunction(scheme, "dd", s, xf * xf), *f;
        if (r == NULL) return -1;
        f = PyNumber_Float(r);
        Py_DECREF(r);
        if (f == NULL) return -1;
        out[1] = PyFloat_AS_DOUBLE(f);
        Py_DECREF(f);
        return 0;
    }
    }
}

/* update(entries, alpha, gamma, v, scheme) -> bool: apply one step to the last margin's
 * coordinates. Every new (mean, variance) is computed first, per pair the learned weights then
 * the new ones (the Python engine's order); nothing is written unless, per pair, the plain sums
 * of the new means and of the new variances are finite. False: float64 cannot express it. */
static int update_core(Diagonal *self, double alpha, double gamma, double v, int kind, double C,
                       PyObject *scheme);

/* a scheme's kind for update_core ("project", "drop", a HerdingShrink with its C, or another
 * callable); 0, or -1 with an error set */
static int scheme_kind(PyObject *scheme, int *kind, double *C) {
    *C = 0.0;
    if (PyUnicode_Check(scheme) && PyUnicode_CompareWithASCIIString(scheme, "project") == 0)
        *kind = SCHEME_PROJECT;
    else if (PyUnicode_Check(scheme) && PyUnicode_CompareWithASCIIString(scheme, "drop") == 0)
        *kind = SCHEME_DROP;
    else {
        if ((PyObject *)Py_TYPE(scheme) == hooks.herding_shrink) {
            PyObject *c = PyObject_GetAttrString(scheme, "C");
            if (c == NULL) return -1;
            *C = PyFloat_AsDouble(c);
            Py_DECREF(c);
            if (*C == -1.0 && PyErr_Occurred()) return -1;
            *kind = SCHEME_HERDING;
        } else
            *kind = SCHEME_CALLABLE;
    }
    return 0;
}

/* update's kernel (entered): the step applied to the margin named by `token`, which must be the
 * last one with the tables as it left them; 1 applied, 0 refused, -1 an error */
static int update_token(Diagonal *self, uint64_t token, double alpha, double gamma, double v,
                        PyObject *scheme) {
    double C;
    int kind;
    if (token_check(self, token) < 0 || scheme_kind(scheme, &kind, &C) < 0) return -1;
    return update_core(self, alpha, gamma, v, kind, C, scheme);
}

static PyObject *diagonal_update(Diagonal *self, PyObject *args) {
    long long token;
    double alpha, gamma, v;
    PyObject *scheme;
    int applied;
    if (!PyArg_ParseTuple(args, "LdddO", &token, &alpha, &gamma, &v, &scheme)) return NULL;
    if (enter(self) < 0) return NULL;
    applied = update_token(self, (uint64_t)token, alpha, gamma, v, scheme);
    leave(self);
    if (applied < 0) return NULL;
    return PyBool_FromLong(applied);
}

/* the step of `update` on the last margin's coordinates, with the scheme resolved to `kind`:
 * 1 applied, 0 refused (float64 cannot express it; nothing written), -1 an error */
static int update_core(Diagonal *self, double alpha, double gamma, double v, int kind, double C,
                       PyObject *scheme) {
    int k, pass, checked;
    double beta, step_bound, largest = 0.0;
    Py_ssize_t i, n_new[2];
    Table *tables[2];
    beta = gamma / (1.0 + gamma * v);
    step_bound = fabs(alpha) * sqrt(self->prior * v);
    /* the built-in schemes far from float64's limit on distinct entries (two pairs of one block
     * would share them): every value is finite, each step goes straight into its entry */
    checked = !((kind == SCHEME_PROJECT || kind == SCHEME_DROP) &&
                self->mean_bound + step_bound < SAFE_BOUND &&
                (self->margin.npairs == 1 || self->margin.pair_block[0] != self->margin.pair_block[1]));
    if (checked && scratch_reserve(self, self->margin.ncoords) < 0) goto fail;
    for (k = 0; checked && k < self->margin.npairs; k++) {
        double sum_means = 0.0, sum_vars = 0.0;
        for (pass = 0; pass < 2; pass++) /* learned weights first, then the new ones */
            for (i = 0; i < self->margin.ncoords; i++) {
                Coord *c = &self->margin.coords[i];
                double *out = &self->margin.scratch[2 * i];
                if (c->pair != k || (c->ix < 0) != pass) continue;
                if (step_coord(self, c, alpha, gamma, beta, kind, C, scheme, out) < 0) {
                    if (PyErr_ExceptionMatches(PyExc_OverflowError) ||
                        PyErr_ExceptionMatches(PyExc_ZeroDivisionError)) {
                        PyErr_Clear();
                        goto refused;
                    }
                    goto fail;
                }
                sum_means += out[0];
                sum_vars += out[1];
            }
        if (!(isfinite(sum_means) && isfinite(sum_vars))) goto refused;
    }
    n_new[0] = self->margin.pair_new[0];
    n_new[1] = self->margin.pair_new[1];
    for (k = 0; k < self->margin.npairs; k++)
        if (n_new[k] && table_reserve(&self->blocks.table[self->margin.pair_block[k]], n_new[k]) < 0)
            goto fail;
    tables[0] = &self->blocks.table[self->margin.pair_block[0]];
    tables[1] = self->margin.npairs > 1 ? &self->blocks.table[self->margin.pair_block[1]] : tables[0];
    if (!checked) /* each step straight into its entry, new features appended in order */
        for (i = 0; i < self->margin.ncoords; i++) {
            Coord *c = &self->margin.coords[i];
            Table *t = tables[c->pair];
            double a = alpha * self->margin.pair_sign[c->pair];
            if (c->ix >= 0) {
                step_entry(&t->entries[c->ix], a, c->x, gamma, beta, kind);
                table_note(t, c->ix);
            } else {
                step_append(t, c->key, c->hash, self->prior, a, c->x, gamma, beta, kind);
                key_taken(self, c);
            }
        }
    else /* commit the checked steps, in the same order */
        for (i = 0; i < self->margin.ncoords; i++) {
            Coord *c = &self->margin.coords[i];
            Table *t = tables[c->pair];
            const double *out = &self->margin.scratch[2 * i];
            if (fabs(out[0]) > largest) largest = fabs(out[0]);
            if (c->ix >= 0) {
                t->entries[c->ix].mean = out[0];
                t->entries[c->ix].var = out[1];
                table_note(t, c->ix);
            } else {
                table_append(t, c->key, c->hash, out[0], out[1]);
                key_taken(self, c);
            }
        }
    if (n_new[0] || n_new[1]) self->generation++;
    if (!checked)
        self->mean_bound += step_bound;
    else if (largest > self->mean_bound)
        self->mean_bound = largest;
    release_coords(self);
    return 1;
refused:
    return 0;
fail:
    return -1;
}

/* ---------------------------------------------------------------------------------------- */
/* learn: margin, the rule's step and update in one call                                      */

/* learn(x, pairs, step, scheme, w, keep=1.0, rest=0.0) -> 0, 1 or 2:
 * river_cw._engines.diagonal.PythonDiagonalGaussian.learn (the reference): margin, the rule's step (Python,
 * called with the engine free, as between margin() and update()) and update */
static PyObject *engine_learn(Diagonal *self, PyObject *const *args, Py_ssize_t nargs) {
    PyObject *x, *terms = NULL, *update_scheme = NULL;
    double keep, rest, m, v, alpha, gamma;
    uint64_t token;
    int outcome, found;
    if (learn_args(args, nargs, &keep, &rest) < 0) return NULL;
    if (enter(self) < 0) return NULL;
    release_coords(self);
    if ((x = as_dict(args[0])) == NULL) {
        leave(self);
        return NULL;
    }
    found = margin_of(self, x, args[1], keep, rest, &m, &v, args[3] == Py_None ? &terms : NULL);
    Py_DECREF(x);
    token = self->token.last;
    leave(self); /* the step is Python's: it may call the engine */
    if (found < 0) return NULL;
    if (v <= 0.0) { /* no non-zero feature, or all their variance is spent: nothing to learn */
        Py_XDECREF(terms);
        return PyLong_FromLong(LEARN_NOTHING);
    }
    outcome = rule_step(args[2], args[3], m, v, terms, args[4], &alpha, &gamma, &update_scheme);
    Py_XDECREF(terms);
    if (outcome == LEARN_APPLIED) {
        int applied;
        if (enter(self) < 0) {
            Py_DECREF(update_scheme);
            return NULL;
        }
        applied = update_token(self, token, alpha, gamma, v, update_scheme);
        leave(self);
        Py_DECREF(update_scheme);
        if (applied < 0) return NULL;
        outcome = applied ? LEARN_APPLIED : LEARN_SKIPPED;
    }
    return outcome < 0 ? NULL : PyLong_FromLong(outcome);
}

/* learn_native's `lean` = (step, scheme, intercept, calibration) into self's fields: 0, -1 on
 * error */
static int parse_lean(Diagonal *self, PyObject *lean) {
    PyObject *scheme, *intercept;
    double params[RCW_MAX_PARAMS], C = 0.0;
    rcw_step step;
    exact_step exact;
    Py_hash_t h = 0;
    int kind;
    if (!PyTuple_Check(lean) || PyTuple_GET_SIZE(lean) != 4) {
        PyErr_SetString(PyExc_TypeError,
                        "learn_native's lean is (step, scheme, intercept, calibration)");
        return -1;
    }
    scheme = PyTuple_GET_ITEM(lean, 1);
    intercept = PyTuple_GET_ITEM(lean, 2);
    if (parse_native(PyTuple_GET_ITEM(lean, 0), params, &step, &exact) < 0) return -1;
    if (PyUnicode_Check(scheme) && PyUnicode_CompareWithASCIIString(scheme, "project") == 0)
        kind = SCHEME_PROJECT;
    else if (PyUnicode_Check(scheme) && PyUnicode_CompareWithASCIIString(scheme, "drop") == 0)
        kind = SCHEME_DROP;
    else if (PyTuple_Check(scheme) && PyTuple_GET_SIZE(scheme) == 2 &&
             PyUnicode_Check(PyTuple_GET_ITEM(scheme, 0)) &&
             PyUnicode_CompareWithASCIIString(PyTuple_GET_ITEM(scheme, 0), "herding") == 0) {
        kind = SCHEME_HERDING;
        if ((C = PyFloat_AsDouble(PyTuple_GET_ITEM(scheme, 1))) == -1.0 && PyErr_Occurred())
            return -1;
    } else {
        PyErr_SetString(PyExc_ValueError,
                        "learn_native's scheme is 'project', 'drop' or ('herding', C)");
        return -1;
    }
    if (intercept != Py_None && (h = PyObject_Hash(intercept)) == -1) return -1;
    if (rcw_temperature_parse(PyTuple_GET_ITEM(lean, 3), &self->lean.temperature) < 0) return -1;
    Py_INCREF(lean);
    Py_XSETREF(self->lean.spec, lean);
    self->lean.step = step;
    self->lean.exact = exact;
    memcpy(self->lean.params, params, sizeof params);
    self->lean.kind = kind;
    self->lean.herding_C = C;
    self->lean.intercept = intercept;
    self->lean.intercept_hash = h;
    return 0;
}

/* The margin's two sums by math.fsum's own algorithm, where the bound does not certify them: one
 * home for the lean paths' fallbacks (coords_fsum, and lean_fsums of the lean CSR rows) */
typedef struct {
    Msum m, u;
    int failed; /* memory ran out */
} MarginFsum;

static void margin_fsum_init(MarginFsum *s) {
    msum_init(&s->m);
    msum_init(&s->u);
    s->failed = 0;
}

/* a feature's terms, as add_coord takes them with nothing forgotten: its entry e's, or (e NULL)
 * the prior's for a new feature, none for a new one of value 0 */
static void margin_fsum_add(MarginFsum *s, const Entry *e, double xf, double prior) {
    double x2 = xf * xf;
    if (s->failed) return;
    if (e != NULL)
        s->failed = msum_add(&s->m, e->mean * xf) < 0 || msum_add(&s->u, e->var * x2) < 0;
    else if (x2 != 0.0)
        s->failed = msum_add(&s->u, prior * x2) < 0;
}

/* the sums into *mk and *v; 0, or -1 with fsum's error (or memory's); frees the partials */
static int margin_fsum_result(MarginFsum *s, double *mk, double *v) {
    if (s->failed) {
        msum_free(&s->m);
        msum_free(&s->u);
        return -1;
    }
    if (msum_result(&s->m, mk) < 0) { /* it freed m */
        msum_free(&s->u);
        return -1;
    }
    return msum_result(&s->u, v);
}

/* the lean path's sums when the bound does not certify them, over the coordinates' terms in x's
 * order (the terms the general path keeps); 0, or -1 with fsum's error */
static int coords_fsum(Diagonal *self, Table *t, double *mk, double *v) {
    MarginFsum s;
    Py_ssize_t i;
    margin_fsum_init(&s);
    for (i = 0; i < self->margin.ncoords; i++) {
        const Coord *c = &self->margin.coords[i];
        margin_fsum_add(&s, c->ix < 0 ? NULL : &t->entries[c->ix], c->x, self->prior);
    }
    return margin_fsum_result(&s, mk, v);
}

/* add_coord of the lean path (pair 0, nothing forgotten), its terms into the accumulators */
static inline void lean_coord(Diagonal *self, Table *t, PyObject *key, Py_hash_t h,
                              Py_ssize_t ix, double xf, DdPair *acc) {
    double mj, uj;
    switch (add_coord(self, t, 0, key, h, ix, xf, 1.0, 0.0, &mj, &uj)) {
    case 2:
        ddpair_add(acc, mj, uj);
        break;
    case 1:
        ddpair_add(acc, 0.0, uj); /* the mean sum as it was, but a zero's sign */
    }
}

/* The lean path's pass over x (a dict, or a TokenCounts: _token_counts.h) along block 0 of a
 * binary engine (entered), x's values read as river_cw.validation.as_floats reads them and
 * `intercept` (None: none; h its hash) appended with value 1.0 as GaussianClassifier._features
 * appends it: the margin scratch emptied, then x's coordinates (pair 0, nothing forgotten; the
 * pair's sign left to the caller, as no sum reads it) and their exactly rounded sums, *mk of
 * the terms mu_j x_j and *v of the terms u_j = s_j x_j^2. 0; -1: the general path's case (x
 * holding anything but floats, ints and bools, or the intercept; a key's error; a sum that
 * math.fsum refuses): the scratch emptied, no error set; -2: an error (memory) raised. One home
 * for lean_learn and score_kept. */
static int lean_pass(Diagonal *self, PyObject *x, PyObject *intercept, Py_hash_t intercept_hash,
                     double *mk, double *v) {
    PyObject *key, *value;
    double xf;
    Py_ssize_t pos = 0, ix;
    Py_hash_t h;
    Table *t;
    DdPair acc; /* the sums of the terms m_j and u_j */
    DdSum m_acc, u_acc;
    release_coords(self);
    if (coords_reserve(self, rcw_x_size(x) + 1) < 0) return -2;
    self->margin.pair_block[0] = 0;
    self->margin.npairs = 1;
    t = &self->blocks.table[0];
    ddpair_init(&acc);
    const rcw_next_item next = rcw_x_next(x);
    while (next(x, &pos, &key, &value)) {
        if (key == intercept || plain_value(value, &xf)) goto general;
        if ((h = key_hash(key)) == -1) goto general_error;
        if ((ix = table_find(t, key, h)) == -2) goto general_error;
        lean_coord(self, t, key, h, ix, xf, &acc);
    }
    if (intercept != Py_None) {
        if ((ix = table_find(t, intercept, intercept_hash)) == -2) goto general_error;
        lean_coord(self, t, intercept, intercept_hash, ix, 1.0, &acc);
    }
    ddpair_split(&acc, &m_acc, &u_acc);
    /* the exactly rounded sums: certified by the bound (nearly always), else summed again by
     * math.fsum's algorithm; where that raises, the general path names the bad feature */
    if ((!ddsum_certified(&m_acc, self->margin.ncoords, mk) ||
         !ddsum_certified(&u_acc, self->margin.ncoords, v)) &&
        coords_fsum(self, t, mk, v) < 0)
        goto general_error;
    return 0;
general_error: /* an error the general path raises again, with its message */
    if (!rcw_error_recoverable()) {
        release_coords(self);
        return -2;
    }
    PyErr_Clear();
general:
    release_coords(self);
    return -1;
}

/* Whether the scored pass (score_kept) is x's, with `intercept` appended, on the tables as they
 * are: the margin scratch then holds the coordinates and sums lean_pass would make of x (any
 * change of the tables bumps the generation or, learning, empties the scratch). */
static inline int scored_holds(const Diagonal *self, PyObject *x, PyObject *intercept) {
    return self->margin.scored == x && self->margin.scored_generation == self->generation &&
           self->margin.scored_intercept == intercept;
}

/* The lean path's core, one home for learn_native and learn_rows' dict rows: `learn` of x (a
 * dict, or a TokenCounts: _token_counts.h) on a binary engine (entered, its `lean` spec parsed) for a label of the given sign and a
 * weight w > 0, x's values read as river_cw.validation.as_floats reads them and the intercept
 * appended with value 1.0 as GaussianClassifier._features does. LEARN_NOTHING (learned, or
 * nothing to learn), LEARN_SKIPPED (float64 cannot express the step), -1: the general path's
 * case (an example the surprise makes forget, which this path does not; x holding anything but
 * floats, ints and bools with finite sums, or the intercept; or an error of an exact solver
 * other than a skip, which the general path raises again): nothing changed, no error set; -2:
 * an error (memory) raised. With `calibrate` (two labels known), the
 * spec's temperature takes its Newton step on the margin first (_calibration.h). The pass over
 * x is the scored pass where it holds (predict_one's of the same TokenCounts: scored_holds),
 * else lean_pass. */
static int lean_learn(Diagonal *self, PyObject *x, double sign, double w, int calibrate) {
    double m = 0.0, mk, v, alpha, gamma;
    int outcome = LEARN_NOTHING, pass;
    Table *t = &self->blocks.table[0];
    if (rcw_surprise_forgets(&self->lean.temperature)) return -1;
    if (scored_holds(self, x, self->lean.intercept)) { /* predict_one's pass over x: its sums */
        mk = self->margin.scored_mk;
        v = self->margin.scored_v;
    } else if ((pass = lean_pass(self, x, self->lean.intercept, self->lean.intercept_hash, &mk,
                                 &v)) < 0)
        return pass;
    self->margin.pair_sign[0] = sign;
    m += sign * mk;
    if (!(isfinite(m) && isfinite(v))) goto general;
    if (v > 0.0) { /* else no non-zero feature, or all their variance is spent */
        int r;
        if (self->lean.exact != NULL) {
            Py_ssize_t i;
            for (i = 0; i < self->margin.ncoords; i++) { /* u_j, in the order of the general path */
                Coord *c = &self->margin.coords[i];
                self->margin.u[i] = (c->ix < 0 ? self->prior : t->entries[c->ix].var) * (c->x * c->x);
            }
            r = self->lean.exact(self->lean.params, m, v, self->margin.u, self->margin.ncoords, w, &alpha,
                                 &gamma);
            if (r == -2) goto general_error;
        } else
            r = self->lean.step(self->lean.params, m, v, w, &alpha, &gamma);
        if (r < 0)
            outcome = LEARN_SKIPPED;
        else if (r > 0) {
            int applied = update_core(self, alpha, gamma, v, self->lean.kind,
                                      self->lean.herding_C * w, Py_None);
            if (applied < 0) goto fail;
            outcome = applied ? LEARN_NOTHING : LEARN_SKIPPED;
        }
        /* once the example is the lean path's: the general path would step it again */
        if (calibrate) rcw_temperature_step(&self->lean.temperature, m, v, w, 0);
    }
    release_coords(self);
    return outcome;
general_error: /* an error the general path raises again, with its message */
    if (!rcw_error_recoverable()) goto fail;
    PyErr_Clear();
general:
    release_coords(self);
    return -1;
fail:
    release_coords(self);
    return -2;
}

/* learn_native(x, y, w, class_index, lean) -> 0 (learned, or nothing to learn), 2 (skipped: float64
 * cannot express the step) or -1 (the general path's case: nothing changed, no error set):
 * lean_learn of a binary model (one block) for a known label y (its sign from class_index:
 * block 1 is +1) and a float weight w > 0; -1 as well for any other model, label or weight.
 * lean = (step, scheme, intercept), step = (name, params) naming a rule's `_step` in C
 * (see _steps.h) or its `_exact_step` (see find_exact_step: the solver runs on the coordinates'
 * terms u_j = s_j x_j^2, the terms the general path hands to the Python step), scheme "project",
 * "drop" or ("herding", C) (NHERD's exact shrink with C w, as its `_exact_step` scales it). */
static PyObject *engine_learn_native(Diagonal *self, PyObject *const *args, Py_ssize_t nargs) {
    double w, sign;
    int outcome;
    if (nargs != 5 || !PyDict_Check(args[3])) {
        PyErr_SetString(PyExc_TypeError, "learn_native(x, y, w, class_index, lean)");
        return NULL;
    }
    if ((outcome = rcw_binary_case(args, self->blocks.n, &w, &sign)) <= 0)
        return outcome < 0 ? NULL : PyLong_FromLong(-1);
    if (args[4] != self->lean.spec && parse_lean(self, args[4]) < 0) {
        if (!PyErr_ExceptionMatches(PyExc_OverflowError)) return NULL;
        PyErr_Clear(); /* a parameter beyond float64: the Python step's case */
        return PyLong_FromLong(-1);
    }
    if (enter(self) < 0) return NULL;
    outcome = lean_learn(self, args[0], sign, w, PyDict_GET_SIZE(args[3]) == 2);
    leave(self);
    return outcome == -2 ? NULL : PyLong_FromLong(outcome);
}

/* ---------------------------------------------------------------------------------------- */
/* predictions in one call: the score (and its variance) of a binary model                    */

/* add a feature's terms of the score and its variance to the sums; 0, -1 on error */
static int add_score_terms(Diagonal *self, Table *t, PyObject *key, Py_hash_t h, double xf,
                           Fsum *ms, Fsum *vs) {
    Py_ssize_t ix = table_find(t, key, h);
    if (ix == -2) return -1;
    if (ix >= 0 && fsum_add(ms, t->entries[ix].mean * xf) < 0) return -1;
    return fsum_add(vs, variance_term(self, t, ix, xf));
}

/* add a feature's terms of the score and its variance to acc: its entry's (ix >= 0), or the
 * prior's for an unseen one (ix < 0), whose value goes to *unseen (scores() sums those apart) */
static inline void add_score_pair(Diagonal *self, const Table *t, Py_ssize_t ix, double xf,
                                  DdPair *acc, double *unseen) {
    if (ix < 0) {
        *unseen += xf;
        ddpair_add(acc, 0.0, self->prior * xf * xf);
    } else
        ddpair_add(acc, t->entries[ix].mean * xf, t->entries[ix].var * xf * xf);
}

/* score_binary's sums by math.fsum's algorithm, where the bound did not certify the fast ones
 * (x was read once already: its values are plain, its keys hash): 0, or -1 with the error */
static int score_terms_fsum(Diagonal *self, Table *t, PyObject *x, PyObject *intercept,
                            Py_hash_t intercept_hash, double *m, double *v) {
    PyObject *key, *value;
    Py_ssize_t pos = 0;
    Py_hash_t h;
    double xf;
    Fsum ms, vs;
    fsum_init(&ms);
    fsum_init(&vs);
    const rcw_next_item next = rcw_x_next(x);
    while (next(x, &pos, &key, &value))
        if (plain_value(value, &xf) || (h = key_hash(key)) == -1 ||
            add_score_terms(self, t, key, h, xf, &ms, &vs) < 0)
            goto fail;
    if (intercept != Py_None && add_score_terms(self, t, intercept, intercept_hash, 1.0, &ms, &vs) < 0)
        goto fail;
    if (fsum_result(&ms, m) < 0) {
        fsum_free(&vs);
        return -1;
    }
    if (fsum_result(&vs, v) < 0) {
        if (!PyErr_ExceptionMatches(PyExc_OverflowError)) return -1;
        PyErr_Clear(); /* beyond float64: inf, as score_variances */
        *v = INFINITY;
    }
    return 0;
fail:
    fsum_free(&ms);
    fsum_free(&vs);
    if (!PyErr_Occurred()) PyErr_SetString(PyExc_RuntimeError, "x changed while it was read");
    return -1;
}

/* The score m = mu . x of a binary engine (one block) and its variance v = x' Sigma x, the
 * numbers scores() and score_variances() give for x with the intercept appended (unless it is
 * None): 1 with *m and *v; 0 for the general path's case (an engine of several blocks, x neither
 * an exact dict nor a TokenCounts (_token_counts.h), a value other than a float, an int within float64 or a bool, the intercept among
 * x's keys, an error of a key's hash or ==, a score beyond float64: scores() raises what it
 * raises), nothing raised; -1 with an error that must propagate (memory). The engine is
 * entered. */
static int score_binary(Diagonal *self, PyObject *x, PyObject *intercept, double *m, double *v) {
    PyObject *key, *value;
    Py_ssize_t pos = 0, ix, n = 0;
    Py_hash_t h, intercept_hash = 0;
    double xf, unseen = 0.0; /* the unseen features' values, summed as scores() sums them */
    DdPair acc;
    DdSum m_acc, v_acc;
    Table *t;
    if (!rcw_x_readable(x) || self->blocks.n != 1) return 0;
    t = &self->blocks.table[0];
    if (rcw_is_token_counts(x)) table_prefetch_tokens(t, x);
    ddpair_init(&acc);
    const rcw_next_item next = rcw_x_next(x);
    while (next(x, &pos, &key, &value)) {
        if (key == intercept || plain_value(value, &xf)) return 0;
        if ((h = key_hash(key)) == -1 || (ix = table_find(t, key, h)) == -2) goto general_error;
        add_score_pair(self, t, ix, xf, &acc, &unseen);
        n++;
    }
    if (intercept != Py_None) { /* value 1.0: its terms are the entry's (or prior's) exactly */
        if ((intercept_hash = PyObject_Hash(intercept)) == -1 ||
            (ix = table_find(t, intercept, intercept_hash)) == -2)
            goto general_error;
        add_score_pair(self, t, ix, 1.0, &acc, &unseen);
        n++;
    }
    ddpair_split(&acc, &m_acc, &v_acc);
    if ((!ddsum_certified(&m_acc, n, m) || !ddsum_certified(&v_acc, n, v)) &&
        score_terms_fsum(self, t, x, intercept, intercept_hash, m, v) < 0)
        goto general_error;
    return isfinite(*m + unseen) ? 1 : 0;
general_error: /* scores() meets the error again and raises it */
    if (!rcw_error_recoverable()) return -1;
    PyErr_Clear();
    return 0;
}

/* score_binary's variance from the scored pass's coordinates (score_kept): its terms
 * (variance_term), in the same order, and their exactly rounded sum (certified, else by
 * math.fsum's algorithm; beyond float64, inf as score_binary): 0, or -1 with an error (memory) */
static int scored_variance(Diagonal *self, double *v) {
    const Table *t = &self->blocks.table[0];
    const Coord *coords = self->margin.coords;
    Py_ssize_t i, n = self->margin.ncoords;
    DdSum acc;
    Fsum all;
    ddsum_init(&acc);
    for (i = 0; i < n; i++)
        ddsum_add(&acc, variance_term(self, t, coords[i].ix, coords[i].x));
    if (ddsum_certified(&acc, n, v)) return 0;
    fsum_init(&all);
    for (i = 0; i < n; i++)
        if (fsum_add(&all, variance_term(self, t, coords[i].ix, coords[i].x)) < 0) {
            fsum_free(&all);
            return -1;
        }
    if (fsum_result(&all, v) == 0) return 0;
    if (!PyErr_ExceptionMatches(PyExc_OverflowError)) return -1;
    PyErr_Clear();
    *v = INFINITY;
    return 0;
}

/* score_binary for a TokenCounts x of a binary engine with no margin pending (token.last 0):
 * the same numbers, from lean_pass's pass over x kept in the margin scratch as the scored pass
 * (with a reference to x and to the intercept, and the generation it read), or from the scored
 * pass where it holds (scored_holds): learn_one after predict_one on the same text then takes
 * its sums from it (lean_learn) without a second pass over the text. The score is the pass's
 * sum of the terms mu_j x_j, score_binary's terms in its order (their exactly rounded sum is
 * the same); v is scored_variance's. A TokenCounts never changes and the scratch holds it; any
 * change of the tables bumps the generation or, learning, empties the scratch (release_coords),
 * as does any margin. Where lean_pass does not serve (a sum it cannot certify nor fsum, or not
 * finite), score_binary does, and nothing is kept. 1, 0 or -1 as score_binary. */
static int score_kept(Diagonal *self, PyObject *x, PyObject *intercept, double *m, double *v) {
    Margin *g = &self->margin;
    if (!scored_holds(self, x, intercept)) {
        double unseen = 0.0; /* the unseen features' values, summed as score_binary sums them */
        Py_hash_t h = 0;
        Py_ssize_t i;
        int r;
        if (intercept != Py_None && (h = PyObject_Hash(intercept)) == -1) {
            if (!rcw_error_recoverable()) return -1;
            PyErr_Clear(); /* scores() meets the error again and raises it */
            return 0;
        }
        table_prefetch_tokens(&self->blocks.table[0], x);
        r = lean_pass(self, x, intercept, h, &g->scored_mk, &g->scored_v);
        if (r == -2) return -1;
        if (r < 0 || !(isfinite(g->scored_mk) && isfinite(g->scored_v))) {
            double variance;
            release_coords(self);
            return score_binary(self, x, intercept, m, v != NULL ? v : &variance);
        }
        for (i = 0; i < g->ncoords; i++)
            if (g->coords[i].ix < 0) unseen += g->coords[i].x;
        g->scored_finite = isfinite(g->scored_mk + unseen);
        g->scored = Py_NewRef(x);
        g->scored_intercept = Py_NewRef(intercept);
        g->scored_generation = self->generation;
    }
    if (!g->scored_finite) return 0;
    *m = g->scored_mk;
    return v == NULL || scored_variance(self, v) == 0 ? 1 : -1;
}

/* score_native(x, intercept, variance) -> m, or (m, v) when `variance` is true: score_binary's
 * numbers, or None where the general path (scores, score_variances) must serve (see
 * score_binary; nothing raised): predict_one and predict_proba_one in one call. A
 * TokenCounts' pass is kept as the scored pass where no margin is pending (score_kept); a
 * pending margin is left as it was. */
static PyObject *engine_score_native(Diagonal *self, PyObject *const *args, Py_ssize_t nargs) {
    double m = 0.0, v = 0.0; /* set where ok > 0 (the compiler cannot see it through score_kept) */
    int ok, variance;
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "score_native(x, intercept, variance)");
        return NULL;
    }
    if ((variance = PyObject_IsTrue(args[2])) < 0 || enter(self) < 0) return NULL;
    if (rcw_is_token_counts(args[0]) && self->blocks.n == 1 && self->token.last == 0)
        ok = score_kept(self, args[0], args[1], &m, variance ? &v : NULL);
    else
        ok = score_binary(self, args[0], args[1], &m, &v);
    leave(self);
    if (ok <= 0) return ok < 0 ? NULL : Py_NewRef(Py_None);
    return variance ? Py_BuildValue("dd", m, v) : PyFloat_FromDouble(m);
}

/* ---------------------------------------------------------------------------------------- */
/* views and state                                                                           */

/* reset_bound(): mean_bound = the largest |mean| (after the blocks were replaced) */
static PyObject *diagonal_reset_bound(Diagonal *self, PyObject *unused) {
    Py_ssize_t b, i;
    double largest = 0.0;
    for (b = 0; b < self->blocks.n; b++)
        for (i = 0; i < self->blocks.table[b].used; i++)
            if (fabs(self->blocks.table[b].entries[i].mean) > largest)
                largest = fabs(self->blocks.table[b].entries[i].mean);
    self->mean_bound = largest;
    Py_RETURN_NONE;
}

static PyObject *diagonal_get_bound(Diagonal *self, void *closure) {
    return PyFloat_FromDouble(self->mean_bound);
}

/* score_rows' CSR row sums (_batch.h's hooks): its mean and variance terms, and the unseen
 * features' values (summed apart, as scores() sums them); by math.fsum's algorithm where their
 * bound does not certify them */
typedef struct {
    DdPair pair;
    double unseen;
} RowScore;

typedef struct {
    Fsum m, v;
} RowScoreExact;

typedef struct {
    char none; /* the diagonal's rows share nothing but the intercept's term */
} RowScoreCall;

#include "_batch.h"

/* ---------------------------------------------------------------------------------------- */
/* the batch kernel's hooks (_batch.h): the diagonal's mathematics of a batch's rows           */

static int batch_scheme(PyObject *scheme, int *kind, double *C) {
    return scheme_kind(scheme, kind, C);
}

/* the lean CSR rows step the built-in schemes in place */
static int batch_lean_scheme(int kind) { return kind == SCHEME_PROJECT || kind == SCHEME_DROP; }

static inline int batch_lean_spec(Diagonal *self, PyObject *lean) {
    return lean == self->lean.spec ? 0 : parse_lean(self, lean);
}

/* the lean spec's step, as lean_learn takes it: its exact step on the margin's terms u, or its
 * native step; the scheme's, with NHERD's C scaled by w as the rule's HerdingShrink(C * w) */
static int batch_lean_step(Diagonal *self, double m, double v, double w, double *alpha,
                           double *gamma, int *kind, double *C) {
    int r = self->lean.exact != NULL ? self->lean.exact(self->lean.params, m, v, self->margin.u,
                                                        self->margin.nu, w, alpha, gamma)
                                     : self->lean.step(self->lean.params, m, v, w, alpha, gamma);
    if (r > 0) {
        *kind = self->lean.kind;
        *C = self->lean.herding_C * w;
    }
    return r;
}

static PyObject *batch_terms(Diagonal *self) { return make_terms(self->margin.u, self->margin.nu); }

/* lean_learn of a batch's dict row, never from a scored pass: the lean CSR rows write the
 * tables in place without a new generation, so that no pass is kept across a batch; a centre is
 * learn_one's (the diagonal centres nothing: river_cw.covariances) */
static inline int batch_lean_dict(Diagonal *self, PyObject *x, double sign, double w,
                                  int calibrate, PyObject *centre) {
    if (centre != NULL) return -1;
    release_coords(self);
    return lean_learn(self, x, sign, w, calibrate);
}

/* every key is a feature like the others */
static inline int batch_refused_key(Diagonal *self, PyObject *key) { return 0; }

/* score_binary of a batch's dict row; a centre is the general path's (the diagonal centres
 * nothing: river_cw.covariances) */
static inline int batch_score_dict(Diagonal *self, PyObject *x, PyObject *intercept, double *m,
                                   double *v, PyObject *centre) {
    double variance;
    if (centre != NULL) return 0;
    return score_binary(self, x, intercept, m, v != NULL ? v : &variance);
}

/* mu_b . x of a row (the terms kept when `kept`, else only accumulated): 0, 1 when the sum
 * is not certified without its terms, -1 on an error (raised) */
static int batch_score(const Table *t, const BatchRow *r, const Py_ssize_t *slot, int kept,
                       double *score, double *unseen) {
    Py_ssize_t j;
    DdSum acc;
    Fsum all;
    ddsum_init(&acc);
    if (kept) fsum_init(&all);
    *unseen = 0.0;
    for (j = 0; j < r->n; j++) {
        Py_ssize_t ix = slot[r->col[j]];
        if (ix < 0)
            *unseen += r->x[j];
        else if (!kept)
            ddsum_add(&acc, t->entries[ix].mean * r->x[j]);
        else if (fsum_add(&all, t->entries[ix].mean * r->x[j]) < 0) {
            fsum_free(&all);
            return -1;
        }
    }
    if (!kept) return ddsum_certified(&acc, r->n, score) ? 0 : 1;
    return fsum_result(&all, score);
}

/* a resolved row's score in block b, as scores() computes it (the fast sum, else the exactly
 * rounded one) */
static int batch_row_score(Diagonal *self, Py_ssize_t b, const BatchRow *r, double *score) {
    const Table *t = &self->blocks.table[b];
    double unseen;
    int status = batch_score(t, r, ROW_SLOTS(r, b), 0, score, &unseen);
    if (status == 1) status = batch_score(t, r, ROW_SLOTS(r, b), 1, score, &unseen);
    return status < 0 || !isfinite(*score + unseen) ? -1 : 0;
}

/* diagonal_margin's sums on a resolved row: m = mu . d and v = d' Sigma d (the terms u_j in
 * the engine's u, in its order), with the learned variances forgotten (not written). The terms
 * are kept when `kept`, else only accumulated. 0, 1 when a sum is not certified without its
 * terms, -1 on an error (raised) */
static int batch_sums(Diagonal *self, BatchRow *r, BatchPairs *p, double keep, double rest,
                      int kept, double *m_out, double *v_out) {
    Py_ssize_t j;
    double m = 0.0;
    int k;
    DdSum u_acc, m_acc; /* the sums without their terms */
    Fsum u_all, m_all;  /* with them, when `kept` */
    self->margin.nu = 0;
    ddsum_init(&u_acc);
    if (kept) fsum_init(&u_all);
    for (k = 0; k < p->n; k++) {
        Entry *entries = self->blocks.table[p->block[k]].entries;
        const Py_ssize_t *slot = ROW_SLOTS(r, p->block[k]), *col = r->col;
        double mk;
        p->n_new[k] = 0;
        ddsum_init(&m_acc);
        if (kept) fsum_init(&m_all);
        for (j = 0; j < r->n; j++) {
            double xf = r->x[j], x2 = xf * xf, uj;
            Py_ssize_t ix = slot[col[j]];
            if (ix < 0) {
                if (x2 == 0.0) continue; /* a zero feature value teaches nothing: store nothing */
                uj = self->prior * x2;
                p->n_new[k]++;
            } else {
                double mj = learned_terms(&entries[ix], xf, keep, rest, &uj);
                if (!kept)
                    ddsum_add(&m_acc, mj);
                else if (fsum_add(&m_all, mj) < 0)
                    goto fail;
            }
            self->margin.u[self->margin.nu++] = uj;
            if (!kept)
                ddsum_add(&u_acc, uj);
            else if (fsum_add(&u_all, uj) < 0)
                goto fail;
        }
        if (!kept) {
            if (!ddsum_certified(&m_acc, r->n, &mk)) return 1;
        } else if (fsum_result(&m_all, &mk) < 0) {
            fsum_free(&u_all);
            return -1;
        }
        m += p->sign[k] * mk;
    }
    *m_out = m;
    if (!kept) return ddsum_certified(&u_acc, self->margin.nu, v_out) ? 0 : 1;
    return fsum_result(&u_all, v_out);
fail:
    fsum_free(&m_all);
    fsum_free(&u_all);
    return -1;
}

/* diagonal_margin on a resolved row: batch_sums, then the forgotten variances written once the
 * row is known to be valid; -1 (nothing changed) when the row is bad (a non-finite margin, an
 * overflow, a key's error): learn_one judges it; -2 with an error to propagate as it is (see
 * rcw_error_recoverable) */
static int batch_margin(Diagonal *self, BatchRow *r, BatchPairs *p, double keep, double rest,
                        double *m_out, double *v_out) {
    Py_ssize_t j;
    int k, status;
    release_coords(self);
    if (coords_reserve(self, r->n * p->n) < 0) goto fail;
    status = batch_sums(self, r, p, keep, rest, 0, m_out, v_out);
    if (status == 1) status = batch_sums(self, r, p, keep, rest, 1, m_out, v_out);
    if (status < 0 || !(isfinite(*m_out) && isfinite(*v_out))) goto fail;
    if (keep != 1.0) /* the row is valid: write the forgotten variances (of non-zero values) */
        for (k = 0; k < p->n; k++) {
            Table *t = &self->blocks.table[p->block[k]];
            const Py_ssize_t *slot = ROW_SLOTS(r, p->block[k]), *col = r->col;
            for (j = 0; j < r->n; j++)
                if (slot[col[j]] >= 0 && r->x[j] != 0.0) {
                    Entry *e = &t->entries[slot[col[j]]];
                    e->var = forget(e->var, keep, rest);
                    table_note(t, slot[col[j]]);
                }
        }
    token_take(self);
    return 0;
fail:
    self->margin.nu = 0;
    if (!rcw_error_recoverable()) return -2;
    PyErr_Clear();
    return -1;
}

/* the engine's coordinates of the last margin, as diagonal_margin leaves them (add_coord: the
 * unseen features' keys, nkeyed and pair_new), for update_core */
static void batch_coords(Diagonal *self, BatchRow *r, const BatchPairs *p) {
    Py_ssize_t j;
    int k;
    double mj, uj; /* the sums are known: add_coord's terms are not needed */
    release_coords(self);
    self->margin.npairs = p->n;
    for (k = 0; k < p->n; k++) {
        Table *t = &self->blocks.table[p->block[k]];
        const Py_ssize_t *slot = ROW_SLOTS(r, p->block[k]);
        self->margin.pair_block[k] = p->block[k];
        self->margin.pair_sign[k] = p->sign[k];
        for (j = 0; j < r->n; j++) {
            Py_ssize_t l = r->col[j];
            add_coord(self, t, k, r->keys[l], r->hashes[l], slot[l], r->x[j], 1.0, 0.0, &mj, &uj);
        }
    }
}

/* update_core's unchecked path (a built-in scheme far from float64's limit: every value is
 * finite) in place on the row: per weight the same formulas, new weights appended per pair in
 * the row's order (their entries' positions go to the row's slots); -1 on memory */
static int batch_apply(Diagonal *self, BatchRow *r, const BatchPairs *p, double alpha,
                       double gamma, double v, int kind) {
    double beta = gamma / (1.0 + gamma * v), prior = self->prior;
    Py_ssize_t j;
    int k;
    for (k = 0; k < p->n; k++)
        if (p->n_new[k] && table_reserve(&self->blocks.table[p->block[k]], p->n_new[k]) < 0)
            return -1;
    for (k = 0; k < p->n; k++) {
        Table *t = &self->blocks.table[p->block[k]];
        Py_ssize_t *slot = ROW_SLOTS(r, p->block[k]);
        double a = alpha * p->sign[k];
        for (j = 0; j < r->n; j++) {
            Py_ssize_t l = r->col[j], ix = slot[l];
            double xf = r->x[j];
            if (ix >= 0) {
                step_entry(&t->entries[ix], a, xf, gamma, beta, kind);
                table_note(t, ix);
            } else if (xf * xf != 0.0) {
                slot[l] = t->used;
                step_append(t, r->keys[l], r->hashes[l], prior, a, xf, gamma, beta, kind);
            }
        }
    }
    if (p->n_new[0] || (p->n > 1 && p->n_new[1])) self->generation++;
    return 0;
}

/* A general row's update, as update() applies it to its margin (entered): batch_apply's
 * unchecked steps in place on the row where they hold, else update_core on the engine's
 * coordinates (batch_coords), the new features' slots then set in the row's order. 1 applied,
 * 0 refused (float64 cannot express it), -1 an error */
static int batch_update(Diagonal *self, BatchRow *r, const BatchPairs *p, double alpha,
                        double gamma, double v, int kind, double C, PyObject *scheme) {
    double step_bound = fabs(alpha) * sqrt(self->prior * v);
    Py_ssize_t used[2] = {0, 0}, q, j;
    int applied;
    if ((kind == SCHEME_PROJECT || kind == SCHEME_DROP) &&
        self->mean_bound + step_bound < SAFE_BOUND) {
        if (batch_apply(self, r, p, alpha, gamma, v, kind) < 0) return -1;
        self->mean_bound += step_bound;
        return 1;
    }
    batch_coords(self, r, p); /* checked, or another scheme */
    for (q = 0; q < p->n; q++) used[q] = self->blocks.table[p->block[q]].used;
    if ((applied = update_core(self, alpha, gamma, v, kind, C, scheme)) <= 0) return applied;
    for (q = 0; q < p->n; q++) { /* the new features' slots, appended in the row's order */
        Py_ssize_t *slot = ROW_SLOTS(r, p->block[q]);
        for (j = 0; j < r->n; j++)
            if (slot[r->col[j]] < 0 && r->x[j] * r->x[j] != 0.0) slot[r->col[j]] = used[q]++;
    }
    return 1;
}

/* the lean CSR row's sums by math.fsum's own algorithm, where the bound does not certify them
 * (their double-double on a rounding tie, or cancelling), in the row's order. 0; 1 when fsum
 * raises an overflow (cleared: the general path meets it again and names the row); -1 on
 * memory */
static int lean_fsums(const Entry *entries, const Py_ssize_t *slot, const Py_ssize_t *ind,
                      const double *data, Py_ssize_t n, Py_ssize_t intercept_col, double prior,
                      double *mk, double *v) {
    MarginFsum s;
    Py_ssize_t p;
    margin_fsum_init(&s);
    for (p = 0; p < n + (intercept_col >= 0); p++) {
        Py_ssize_t ix = slot[p < n ? ind[p] : intercept_col];
        margin_fsum_add(&s, ix < 0 ? NULL : &entries[ix], p < n ? data[p] : 1.0, prior);
    }
    if (margin_fsum_result(&s, mk, v) == 0) return 0;
    if (!rcw_error_recoverable()) return -1;
    PyErr_Clear();
    return 1;
}

/* The lean CSR row's terms of column value xf (its entry at ix, -1: unseen) in the margin's sums
 * of mean x and of var x^2, as batch_sums has them: a learned feature's two, an unseen one's
 * prior variance term, none for a zero value (it teaches nothing: nothing stored). 1 when the
 * column is one an update appends. */
static RCW_ALWAYS_INLINE int lean_terms(DdPair *acc, const Entry *entries, Py_ssize_t ix,
                                        double xf, double prior) {
    double x2 = xf * xf;
    if (ix >= 0) {
        ddpair_add(acc, entries[ix].mean * xf, entries[ix].var * x2);
        return 0;
    }
    if (x2 == 0.0) return 0;
    ddpair_add(acc, 0.0, prior * x2); /* the mean sum as it was, but a zero's sign */
    return 1;
}

/* The lean CSR row's step of column l (value xf), as batch_apply steps it: in place in t's
 * entries, or appended to t (room reserved: the entries stay where they are) if unseen and
 * non-zero */
static RCW_ALWAYS_INLINE void lean_step(Table *t, Entry *entries, BatchCache *cache, Py_ssize_t l,
                                        double xf, double prior, double alpha, double gamma,
                                        double beta, int kind) {
    Py_ssize_t ix = cache->slot[l];
    if (ix >= 0) {
        step_entry(&entries[ix], alpha, xf, gamma, beta, kind);
        table_note(t, ix);
    } else if (xf * xf != 0.0) {
        cache->slot[l] = t->used;
        step_append(t, cache->key[l], cache->hash[l], prior, alpha, xf, gamma, beta, kind);
    }
}

/* The lean CSR row: row i (plain, or checked here when the call is lazy) of a binary model
 * learned by a native step with a built-in scheme and nothing forgotten, straight from the CSR
 * arrays: batch_margin's exactly rounded sums and batch_apply's in-place steps without copying
 * the row. 0: learned, nothing to learn, or skipped (counted in *skipped); 1: the general path's
 * row (a sum math.fsum raises on, a margin beyond float64, a step near float64's limit), nothing
 * changed; 2 (lazy): a column out of range, not resolved in the epoch or stored twice, nothing
 * changed (the call's rest is to be resolved); -1 on memory. */
static int batch_lean_row(Diagonal *self, const BatchColumns *c, Py_ssize_t i, int intercept,
                          double sign, double w, const BatchStep *s, int kind,
                          Py_ssize_t *skipped) {
    Table *t = &self->blocks.table[0];
    BatchCache *cache = c->cache;
    Py_ssize_t *slot = cache->slot, a = c->csr.indptr[i], n = c->csr.indptr[i + 1] - a, p;
    Py_ssize_t n_new = 0;
    const Py_ssize_t *ind = c->csr.indices + a;
    const double *data = c->csr.data + a;
    double prior = self->prior, mk, v, m, alpha, gamma, beta, step_bound;
    DdPair acc; /* the sums of mean x and of var x^2 */
    DdSum m_acc, u_acc;
    Entry *entries = t->entries;
    int r;
    ddpair_init(&acc);
    if (c->lazy) { /* the row's columns checked as columns_resolve checks them, as they are read */
        BatchMark *marks = cache->mark;
        const size_t ncols = (size_t)cache->ncols;
        const int64_t epoch = cache->calls, row = ++cache->rows;
        for (p = 0; p < n; p++) {
            Py_ssize_t l = ind[p];
            if (mark_take(marks, l, ncols, epoch, row) <= 0) return 2;
            n_new += lean_terms(&acc, entries, slot[l], data[p], prior);
        }
    } else
        for (p = 0; p < n; p++) n_new += lean_terms(&acc, entries, slot[ind[p]], data[p], prior);
    if (intercept) /* the intercept last, with value 1.0 */
        n_new += lean_terms(&acc, entries, slot[cache->ncols], 1.0, prior);
    ddpair_split(&acc, &m_acc, &u_acc);
    if (!ddsum_certified(&m_acc, n + intercept, &mk) ||
        !ddsum_certified(&u_acc, n + intercept, &v)) {
        r = lean_fsums(entries, slot, ind, data, n, intercept ? cache->ncols : -1, prior, &mk, &v);
        if (r != 0) return r;
    }
    m = 0.0 + sign * mk; /* as batch_sums adds it: a zero margin is +0 */
    if (!(isfinite(m) && isfinite(v))) return 1;
    if (v <= 0.0) return 0; /* no non-zero feature, or all their variance is spent */
    r = s->native(s->params, m, v, w, &alpha, &gamma);
    if (r <= 0 || !(isfinite(alpha) && isfinite(gamma))) {
        rcw_temperature_step(s->temperature, m, v, w, 0);
        *skipped += r != 0;
        return 0;
    }
    step_bound = fabs(alpha) * sqrt(prior * v);
    if (!(self->mean_bound + step_bound < SAFE_BOUND)) return 1;
    rcw_temperature_step(s->temperature, m, v, w, 0); /* the row is the lean kernel's */
    if (n_new && table_reserve(t, n_new) < 0) return -1;
    entries = t->entries;
    beta = gamma / (1.0 + gamma * v);
    alpha *= sign;
    for (p = 0; p < n; p++)
        lean_step(t, entries, cache, ind[p], data[p], prior, alpha, gamma, beta, kind);
    if (intercept) lean_step(t, entries, cache, cache->ncols, 1.0, prior, alpha, gamma, beta, kind);
    if (n_new) self->generation++;
    self->mean_bound += step_bound;
    return 0;
}

/* the intercept's term: its entry in block 0, looked up once a call (CSR rows) */
static int row_score_open(Diagonal *self, PyObject *intercept, int csr, Py_ssize_t *term,
                          RowScoreCall *call) {
    Py_hash_t h;
    *term = -3;
    if (!csr || intercept == Py_None) return 0;
    if ((h = PyObject_Hash(intercept)) == -1 ||
        (*term = table_find(&self->blocks.table[0], intercept, h)) == -2)
        return -1;
    return 0;
}

static RCW_ALWAYS_INLINE void row_score_init(RowScore *s) {
    ddpair_init(&s->pair);
    s->unseen = 0.0;
}

static RCW_ALWAYS_INLINE void row_score_add(Diagonal *self, const Table *t, Py_ssize_t ix,
                                            double xf, RowScore *s) {
    add_score_pair(self, t, ix, xf, &s->pair, &s->unseen);
}

static RCW_ALWAYS_INLINE int row_score_sums(const RowScoreCall *call, RowScore *s, Py_ssize_t n,
                                            double *m, double *v) {
    DdSum m_acc, v_acc;
    ddpair_split(&s->pair, &m_acc, &v_acc);
    return ddsum_certified(&m_acc, n, m) && ddsum_certified(&v_acc, n, v);
}

static RCW_ALWAYS_INLINE int row_score_finite(const RowScore *s, double m) {
    return isfinite(m + s->unseen) ? 1 : 0;
}

static void row_exact_init(RowScoreExact *s) {
    fsum_init(&s->m);
    fsum_init(&s->v);
}

static int row_exact_add(Diagonal *self, const Table *t, Py_ssize_t ix, double xf,
                         RowScoreExact *s) {
    if ((ix >= 0 && fsum_add(&s->m, t->entries[ix].mean * xf) < 0) ||
        fsum_add(&s->v, variance_term(self, t, ix, xf)) < 0) {
        fsum_free(&s->m);
        fsum_free(&s->v);
        return -1;
    }
    return 0;
}

static int row_exact_result(const RowScoreCall *call, RowScoreExact *s, double *m, double *v) {
    if (fsum_result(&s->m, m) < 0) {
        fsum_free(&s->v);
        if (!rcw_error_recoverable()) return -1;
        PyErr_Clear(); /* beyond float64: scores() raises, naming the feature */
        return 0;
    }
    if (fsum_result(&s->v, v) < 0) {
        if (!PyErr_ExceptionMatches(PyExc_OverflowError)) return -1;
        PyErr_Clear(); /* beyond float64: inf, as score_variances */
        *v = INFINITY;
    }
    return 1;
}


static PyMethodDef engine_methods[] = {
    {"margin", (PyCFunction)diagonal_margin, METH_VARARGS,
     "(m, v, u, entries) along the difference vector of (block, sign) pairs; forgets first."},
    {"update", (PyCFunction)diagonal_update, METH_VARARGS,
     "Apply one step (entries, alpha, gamma, v, scheme)."},
    RCW_BATCH_METHODS
    {"reset_bound", (PyCFunction)diagonal_reset_bound, METH_NOARGS,
     "Set mean_bound to the largest |mean|."},
    RCW_SHELL_METHODS
    {NULL},
};

static PyGetSetDef engine_getset[] = {
    {"mean_bound", (getter)diagonal_get_bound, NULL, "An upper bound of every |mean|.", NULL},
    RCW_SHELL_GETSET
    {NULL},
};

RCW_SHELL_TYPE(DiagonalType, "river_cw._engines._diagonal.Diagonal", Py_TPFLAGS_BASETYPE,
               "The compiled diagonal Gaussian engine (see river_cw._engines.diagonal.DiagonalGaussian).");

/* ---------------------------------------------------------------------------------------- */

RCW_SHELL_MODULE("The compiled diagonal Gaussian engine of river_cw (optional; see "
                 "river_cw._engines.diagonal), and utilities of the models (_utilities.h).",
                 RCW_UTILITY_METHODS);

PyMODINIT_FUNC PyInit__diagonal(void) {
    PyObject *m;
    if (PyType_Ready(&TermsType) < 0 ||
        (m = shell_module(&moduledef, &DiagonalType, "Diagonal")) == NULL)
        return NULL;
    Py_INCREF(&TermsType);
    if (PyModule_AddObject(m, "Terms", (PyObject *)&TermsType) < 0) {
        Py_DECREF(&TermsType);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
