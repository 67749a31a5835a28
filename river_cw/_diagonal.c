/* The compiled diagonal Gaussian engine: the same interface and the same numbers as
 * river_cw.diagonal.PythonDiagonalGaussian (the readable reference), bit for bit.
 *
 * Each weight block is an insertion-ordered open-addressing table (CPython's compact dict
 * layout): an index of int32 slots probed with the key's hash, and a dense array of entries
 * holding the key, its hash and the interleaved (mean, variance) pair. Keys compare by
 * identity, then (for str) by length and bytes, then with ==. Sums are exactly rounded, as
 * math.fsum's (_fsum.h), so the order of the features never changes a result and both engines
 * agree bit for bit. Compile with -ffp-contract=off: the operation order must be the one
 * written here.
 *
 * margin() leaves the difference vector in the engine's margin scratch and returns a token;
 * update() checks the token, computes every new (mean, variance) first and commits only when
 * the scheme has produced them all (a raising scheme leaves the model unchanged).
 *
 * Glossary: the terms of the fast paths, here and in _batch.h, _table.h and _steps.h.
 * - general path: margin(), the rule's step in Python, update(); the reference's order of work,
 *   which every faster path matches bit for bit and hands an example over to when in doubt
 *   (a value other than a float, an int or a bool, a bad key, a margin beyond float64: the
 *   general path then raises what it raises, naming the bad feature).
 * - native step: a rule's `_step` transcribed in C (_steps.h), named by the rule's
 *   `_native_step`, (name, params); an exact step is its `_exact_step` in C (find_exact_step).
 * - lean: learn_one's one-call path for the common case, learn_native (lean_learn): a binary
 *   model, a known label, a float weight > 0, a dict, a native or exact step, nothing
 *   forgotten. The model hands its lean spec, (step, scheme, intercept); the lean cache keeps it
 *   parsed. learn_rows takes the same path for a binary model's dict rows, and its own lean CSR
 *   rows (columns_lean_row) straight from the arrays.
 * - enter: the re-entry guard (busy). A call that holds the engine's scratch refuses to be
 *   re-entered from Python code it runs (a key's __eq__, a scheme); a Python step runs with the
 *   engine free, and what it changes is checked afterwards (the margin token, the generation).
 * - margin token: the number margin() gives its result; update() takes only the last margin's,
 *   with the tables as that margin left them.
 * - generation: counts every change of the tables (appends of new features included);
 *   `reshaped` counts every change but appends (entries moved or rewritten, as by negate; blocks
 *   added, replaced or reordered): reshape() bumps both. arranged(): the blocks arranged anew
 *   (reordered, restored, replaced), the last margin dropped and the tables reshaped.
 * - checked and unchecked update: update_core computes every new (mean, variance) first and
 *   writes them only if all are finite (checked); a built-in scheme whose means stay far from
 *   float64's limit (mean_bound, a bound of every |mean|) writes each straight into its entry
 *   (unchecked).
 * - certified sum: a double-double sum whose error bound proves it equals math.fsum's result;
 *   where the bound cannot, the terms are summed again by math.fsum's algorithm (_fsum.h).
 * - epoch (learn_rows on CSR arrays): the calls over which the batch cache's resolved columns
 *   stay valid, so that a column is hashed and looked up once per epoch, not per batch; a
 *   reshape, a new intercept or a call that fails ends it (BatchCache in _batch.h). In an epoch
 *   a plain row holds only columns resolved good, each once; a lazy call leaves that check to
 *   the lean kernel as it reads each row; the cache is settled when the last call ended well;
 *   catch-up gives the features other learning appended to the columns they are.
 * - short key: an entry's copy of a short ASCII str key, compared instead of the key (_table.h).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "_exact.h"
#include "_fsum.h"
#include "_steps.h"

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

#define SAFE_BOUND 1e300 /* river_cw.diagonal._SAFE: far enough from float64's limit */

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
 * coordinates, the pairs of blocks and signs d spans, the terms u_j of v), with the token that
 * names that margin and the update's room for new (mean, variance) pairs. Written by every
 * margin (margin, the lean paths, learn_rows' general rows); the model is unchanged by it. */
typedef struct {
    uint64_t generation;       /* the engine's generation at the last margin */
    long long token, next_token; /* the last margin's token (-1: none), which update checks */
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
} LeanSpec;

typedef struct {
    PyObject_HEAD
    /* the model state: the weights (one table per block) and what stamps their changes */
    double prior;
    double mean_bound;         /* an upper bound of every |mean| (see update) */
    Blocks blocks;
    uint64_t generation;       /* bumped by every change of the table layout */
    uint64_t reshaped;         /* and by every one but new features appended (see reshape) */
    int busy;                  /* refuses re-entry from a key's __eq__ or a scheme */
    Mark mark;                 /* a mark (diagonal_mark), held by the tables (_table.h) */
    PyObject *weakreflist;
    /* the caches, none of them part of the model: */
    Margin margin;             /* the margin scratch */
    LeanSpec lean;             /* the lean cache */
    struct BatchCache *batch;  /* the batch cache: learn_rows' CSR columns (_batch.h), or NULL */
} Diagonal;

/* The Python hooks the engine calls, handed over by their owners when river_cw is imported
 * (`connect`, see river_cw.engine): the engine looks up no Python name itself. */
static struct {
    PyObject *raise_bad_input; /* x -> raises the error naming x's bad feature */
    PyObject *herding_shrink;  /* NHERD's scheme type, whose instances update_core runs in C */
    PyObject *as_floats;       /* the general case of as_floats (module_as_floats) */
} hooks;

/* a connected hook, or NULL with a RuntimeError naming it */
static PyObject *hook(PyObject *h, const char *name) {
    if (h == NULL)
        PyErr_Format(PyExc_RuntimeError,
                     "river_cw._diagonal: the hook %s is not connected (importing river_cw "
                     "connects it)",
                     name);
    return h;
}

/* after a TypeError in a pass over x: name the bad feature as the Python engine does */
static PyObject *raise_bad_input(PyObject *x) {
    PyObject *r;
    if (hook(hooks.raise_bad_input, "raise_bad_input") == NULL) return NULL;
    r = PyObject_CallOneArg(hooks.raise_bad_input, x);
    Py_XDECREF(r);
    if (r != NULL) PyErr_SetString(PyExc_RuntimeError, "raise_bad_input returned");
    return NULL;
}

/* in a pass over x: a TypeError or OverflowError names the bad feature, others propagate */
static void bad_or_propagate(PyObject *x) {
    if (PyErr_ExceptionMatches(PyExc_TypeError) || PyErr_ExceptionMatches(PyExc_OverflowError)) {
        PyErr_Clear();
        raise_bad_input(x);
    }
}

static int enter(Diagonal *self) {
    if (self->busy) {
        PyErr_SetString(PyExc_RuntimeError,
                        "the diagonal engine was re-entered (from a feature's __eq__ or a scheme)");
        return -1;
    }
    self->busy = 1;
    return 0;
}

/* a change of the tables other than new features appended at their ends (see the glossary:
 * generation) */
static void reshape(Diagonal *self) {
    self->generation++;
    self->reshaped++;
}

static void release_coords(Diagonal *self) {
    Py_ssize_t i;
    if (self->margin.nkeyed)
        for (i = 0; i < self->margin.ncoords; i++) Py_CLEAR(self->margin.coords[i].key);
    self->margin.nkeyed = 0;
    self->margin.pair_new[0] = self->margin.pair_new[1] = 0;
    self->margin.ncoords = 0;
    self->margin.nu = 0;
    self->margin.token = -1;
}

static int diagonal_traverse(Diagonal *self, visitproc visit, void *arg) {
    Py_ssize_t i;
    if (blocks_traverse(&self->blocks, visit, arg) < 0) return -1;
    for (i = 0; i < self->margin.ncoords; i++) Py_VISIT(self->margin.coords[i].key);
    Py_VISIT(self->lean.spec);
    return 0;
}

static void batch_cache_free(Diagonal *self); /* _batch.h */

static int diagonal_clear(Diagonal *self) {
    release_coords(self);
    self->mark.taken = 0;
    batch_cache_free(self);
    Py_CLEAR(self->lean.spec);
    blocks_clear(&self->blocks);
    reshape(self);
    return 0;
}

static void diagonal_dealloc(Diagonal *self) {
    PyObject_GC_UnTrack(self);
    if (self->weakreflist != NULL) PyObject_ClearWeakRefs((PyObject *)self);
    diagonal_clear(self);
    PyMem_Free(self->blocks.table);
    PyMem_Free(self->margin.coords);
    PyMem_Free(self->margin.u);
    PyMem_Free(self->margin.scratch);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *diagonal_new(PyTypeObject *type, PyObject *args, PyObject *kwds) {
    static char *kwlist[] = {"initial_variance", NULL};
    double prior;
    Diagonal *self;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "d", kwlist, &prior)) return NULL;
    self = (Diagonal *)type->tp_alloc(type, 0);
    if (self == NULL) return NULL;
    self->prior = prior;
    self->margin.token = -1;
    if (blocks_init(&self->blocks) < 0) {
        Py_DECREF(self);
        return NULL;
    }
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

/* a new empty block at `at`: add_block (at the end) and lift (in front) */
static PyObject *insert_block(Diagonal *self, Py_ssize_t at) {
    if (enter(self) < 0) return NULL;
    self->busy = 0;
    if (blocks_insert(&self->blocks, at) < 0) return NULL;
    reshape(self);
    Py_RETURN_NONE;
}

static PyObject *diagonal_add_block(Diagonal *self, PyObject *unused) {
    return insert_block(self, self->blocks.n);
}

static PyObject *diagonal_lift(Diagonal *self, PyObject *unused) {
    return insert_block(self, 0);
}

/* scores(x): mu_b . x for every block; a bad x raises, every value is touched */
static PyObject *diagonal_scores(Diagonal *self, PyObject *x_in) {
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
    self->busy = 0;
    return out;
}

/* score_variances(x): x' Sigma_b x for every block (x already validated by scores) */
static PyObject *diagonal_score_variances(Diagonal *self, PyObject *x_in) {
    PyObject *x, *out = NULL, *key, *value;
    Py_ssize_t b, pos;
    if (enter(self) < 0) return NULL;
    if ((x = as_dict(x_in)) == NULL) goto done;
    if ((out = PyList_New(self->blocks.n)) == NULL) goto done;
    for (b = 0; b < self->blocks.n; b++) {
        Table *t = &self->blocks.table[b];
        Fsum acc;
        double total, xf;
        fsum_init(&acc);
        pos = 0;
        while (PyDict_Next(x, &pos, &key, &value)) {
            Py_hash_t h;
            Py_ssize_t ix;
            if (lookup(t, key, value, &xf, &h, &ix) < 0 ||
                fsum_add(&acc, (ix < 0 ? self->prior : t->entries[ix].var) * xf * xf) < 0) {
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
        if (set_float(&out, b, total) < 0) goto done;
    }
done:
    Py_XDECREF(x);
    self->busy = 0;
    return out;
}

/* ---------------------------------------------------------------------------------------- */
/* the terms u_j = s_j d_j^2 of v, as a read-only sequence of floats                          */

typedef struct {
    PyObject_VAR_HEAD
    double values[1];
} Terms;

static PyTypeObject TermsType;

static Py_ssize_t terms_length(Terms *self) { return Py_SIZE(self); }

static PyObject *terms_item(Terms *self, Py_ssize_t i) {
    if (i < 0 || i >= Py_SIZE(self)) {
        PyErr_SetString(PyExc_IndexError, "terms index out of range");
        return NULL;
    }
    return PyFloat_FromDouble(self->values[i]);
}

static PySequenceMethods terms_as_sequence = {
    .sq_length = (lenfunc)terms_length,
    .sq_item = (ssizeargfunc)terms_item,
};

static PyTypeObject TermsType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "river_cw._diagonal.Terms",
    .tp_basicsize = sizeof(Terms) - sizeof(double),
    .tp_itemsize = sizeof(double),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "The terms u_j = Sigma_jj d_j^2 of the margin variance, as floats.",
    .tp_as_sequence = &terms_as_sequence,
};

static PyObject *make_terms(const double *u, Py_ssize_t n) {
    Terms *t = PyObject_NewVar(Terms, &TermsType, n);
    if (t == NULL) return NULL;
    if (n) memcpy(t->values, u, sizeof(double) * n);
    return (PyObject *)t;
}

/* ---------------------------------------------------------------------------------------- */
/* margin and update                                                                         */

static int coords_reserve(Diagonal *self, Py_ssize_t n) {
    if (rcw_grow((void **)&self->margin.coords, &self->margin.coords_cap, n, sizeof(Coord)) < 0) return -1;
    return rcw_grow((void **)&self->margin.u, &self->margin.u_cap, n, sizeof(double));
}

/* forgetting: a learned variance relaxed toward the prior, 1/s <- keep/s + rest (see
 * river_cw.gaussian.forget); keep == 1 leaves it as it is */
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
    self->margin.token = ++self->margin.next_token;
    self->margin.generation = self->generation;
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
            (result = Py_BuildValue("ddNL", m, v, terms, self->margin.token)) == NULL)
            release_coords(self);
        Py_DECREF(x);
    }
    self->busy = 0;
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
static int update_token(Diagonal *self, long long token, double alpha, double gamma, double v,
                        PyObject *scheme) {
    double C;
    int kind;
    if (token != self->margin.token || self->margin.generation != self->generation) {
        PyErr_SetString(PyExc_RuntimeError, "update needs the entries of the latest margin");
        return -1;
    }
    if (scheme_kind(scheme, &kind, &C) < 0) return -1;
    return update_core(self, alpha, gamma, v, kind, C, scheme);
}

static PyObject *diagonal_update(Diagonal *self, PyObject *args) {
    long long token;
    double alpha, gamma, v;
    PyObject *scheme;
    int applied;
    if (!PyArg_ParseTuple(args, "LdddO", &token, &alpha, &gamma, &v, &scheme)) return NULL;
    if (enter(self) < 0) return NULL;
    applied = update_token(self, token, alpha, gamma, v, scheme);
    self->busy = 0;
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

enum { LEARN_NOTHING = 0, LEARN_APPLIED = 1, LEARN_SKIPPED = 2 };

/* the rule's step(m, v, w), or step(m, v, u, w) for an exact scheme (scheme None), as
 * river_cw.gaussian._learn calls it: LEARN_APPLIED with *alpha, *gamma and a new reference to
 * the scheme to update with, LEARN_NOTHING, LEARN_SKIPPED (float64 cannot express the step), or
 * -1 with an error */
static int learn_step(PyObject *step, PyObject *scheme, double m, double v, PyObject *terms,
                      PyObject *w, double *alpha, double *gamma, PyObject **update_scheme) {
    PyObject *call[4], *result;
    Py_ssize_t n = 0, i;
    int exact = scheme == Py_None, outcome = -1;
    call[n++] = PyFloat_FromDouble(m);
    call[n++] = PyFloat_FromDouble(v);
    if (exact) call[n++] = Py_NewRef(terms);
    call[n++] = Py_NewRef(w);
    result = call[0] && call[1] ? PyObject_Vectorcall(step, call, (size_t)n, NULL) : NULL;
    for (i = 0; i < n; i++) Py_XDECREF(call[i]);
    if (result == NULL) {
        if (PyErr_ExceptionMatches(PyExc_ZeroDivisionError) ||
            PyErr_ExceptionMatches(PyExc_OverflowError)) { /* float64 cannot express the step */
            PyErr_Clear();
            return LEARN_SKIPPED;
        }
        return -1;
    }
    if (result == Py_None) {
        Py_DECREF(result);
        return LEARN_NOTHING;
    }
    if (!PyTuple_Check(result) || PyTuple_GET_SIZE(result) != (exact ? 3 : 2)) {
        PyErr_SetString(PyExc_TypeError, "a step is None, (alpha, gamma) or, exact, "
                                         "(alpha, gamma, scheme)");
        goto done;
    }
    *alpha = PyFloat_AsDouble(PyTuple_GET_ITEM(result, 0));
    *gamma = PyFloat_AsDouble(PyTuple_GET_ITEM(result, 1));
    if (PyErr_Occurred()) goto done;
    outcome = LEARN_SKIPPED; /* with v near 0 and a violated constraint, a step can overflow */
    if (isfinite(*alpha) && isfinite(*gamma)) {
        *update_scheme = Py_NewRef(exact ? PyTuple_GET_ITEM(result, 2) : scheme);
        outcome = LEARN_APPLIED;
    }
done:
    Py_DECREF(result);
    return outcome;
}

/* learn(x, pairs, step, scheme, w, keep=1.0, rest=0.0) -> 0, 1 or 2:
 * river_cw.diagonal.PythonDiagonalGaussian.learn (the reference): margin, the rule's step (Python,
 * called with the engine free, as between margin() and update()) and update */
static PyObject *diagonal_learn(Diagonal *self, PyObject *const *args, Py_ssize_t nargs) {
    PyObject *x, *terms = NULL, *update_scheme = NULL;
    double keep = 1.0, rest = 0.0, m, v, alpha, gamma;
    long long token;
    int outcome, found;
    if (nargs < 5 || nargs > 7) {
        PyErr_SetString(PyExc_TypeError, "learn(x, pairs, step, scheme, w, keep=1.0, rest=0.0)");
        return NULL;
    }
    if ((nargs > 5 && (keep = PyFloat_AsDouble(args[5])) == -1.0 && PyErr_Occurred()) ||
        (nargs > 6 && (rest = PyFloat_AsDouble(args[6])) == -1.0 && PyErr_Occurred()))
        return NULL;
    if (enter(self) < 0) return NULL;
    release_coords(self);
    if ((x = as_dict(args[0])) == NULL) {
        self->busy = 0;
        return NULL;
    }
    found = margin_of(self, x, args[1], keep, rest, &m, &v, args[3] == Py_None ? &terms : NULL);
    Py_DECREF(x);
    token = self->margin.token;
    self->busy = 0; /* the step is Python's: it may call the engine */
    if (found < 0) return NULL;
    if (v <= 0.0) { /* no non-zero feature, or all their variance is spent: nothing to learn */
        Py_XDECREF(terms);
        return PyLong_FromLong(LEARN_NOTHING);
    }
    outcome = learn_step(args[2], args[3], m, v, terms, args[4], &alpha, &gamma, &update_scheme);
    Py_XDECREF(terms);
    if (outcome == LEARN_APPLIED) {
        int applied;
        if (enter(self) < 0) {
            Py_DECREF(update_scheme);
            return NULL;
        }
        applied = update_token(self, token, alpha, gamma, v, update_scheme);
        self->busy = 0;
        Py_DECREF(update_scheme);
        if (applied < 0) return NULL;
        outcome = applied ? LEARN_APPLIED : LEARN_SKIPPED;
    }
    return outcome < 0 ? NULL : PyLong_FromLong(outcome);
}

static int parse_exact(PyObject *args, ExactProblem *p) {
    PyObject *terms;
    if (!PyArg_ParseTuple(args, "dddO!", &p->m, &p->v, &p->phi, &TermsType, &terms)) return -1;
    p->u = ((Terms *)terms)->values;
    p->n = Py_SIZE(terms);
    return 0;
}

static PyObject *module_exact_var_alpha(PyObject *module, PyObject *args) {
    ExactProblem p;
    double alpha;
    if (parse_exact(args, &p) < 0 || exact_var_alpha(&p, &alpha) < 0) return NULL;
    return PyFloat_FromDouble(alpha);
}

static PyObject *module_exact_stdev_step(PyObject *module, PyObject *args) {
    ExactProblem p;
    double alpha, s;
    if (parse_exact(args, &p) < 0 || exact_stdev_step(&p, &alpha, &s) < 0) return NULL;
    return Py_BuildValue("dd", alpha, s);
}

/* a native step's spec, (name, params): the step it names, a rule's `_step` in C (_steps.h) into
 * *step or, where `exact` is not NULL, a rule's `_exact_step` in C into *exact (the other NULL),
 * and its params as doubles; 0, or -1 with an error */
static int parse_native(PyObject *spec, double *params, rcw_step *step, exact_step *exact) {
    PyObject *name, *values;
    const char *text;
    int nparams, i;
    if (!PyTuple_Check(spec) || PyTuple_GET_SIZE(spec) != 2 ||
        !PyUnicode_Check(name = PyTuple_GET_ITEM(spec, 0)) ||
        !PyTuple_Check(values = PyTuple_GET_ITEM(spec, 1))) {
        PyErr_SetString(PyExc_TypeError, "a native step is (name, (params...))");
        return -1;
    }
    if ((text = PyUnicode_AsUTF8(name)) == NULL) return -1;
    *step = NULL;
    if (exact != NULL) *exact = find_exact_step(text, &nparams);
    if ((exact == NULL || *exact == NULL) && (*step = rcw_find_step_n(text, &nparams)) == NULL) {
        PyErr_Format(PyExc_ValueError, "no native step %R", name);
        return -1;
    }
    if (PyTuple_GET_SIZE(values) != nparams) {
        PyErr_Format(PyExc_ValueError, "the native step %R takes %d parameters", name, nparams);
        return -1;
    }
    for (i = 0; i < nparams; i++)
        if ((params[i] = PyFloat_AsDouble(PyTuple_GET_ITEM(values, i))) == -1.0 && PyErr_Occurred())
            return -1;
    return 0;
}

/* a rule's `_native_step`, (name, params): its C step (_steps.h) and the params as doubles */
static rcw_step parse_step(PyObject *spec, double *params) {
    rcw_step step;
    return parse_native(spec, params, &step, NULL) < 0 ? NULL : step;
}

/* learn_native's `lean` = (step, scheme, intercept) into self's fields: 0, -1 on error */
static int parse_lean(Diagonal *self, PyObject *lean) {
    PyObject *scheme, *intercept;
    double params[RCW_MAX_PARAMS], C = 0.0;
    rcw_step step;
    exact_step exact;
    Py_hash_t h = 0;
    int kind;
    if (!PyTuple_Check(lean) || PyTuple_GET_SIZE(lean) != 3) {
        PyErr_SetString(PyExc_TypeError, "learn_native's lean is (step, scheme, intercept)");
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
 * home for the lean paths' fallbacks (coords_fsum here, lean_fsums in _batch.h) */
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

/* The lean path's core, one home for learn_native and learn_rows' dict rows: `learn` of x (a
 * dict, or a TokenCounts: _token_counts.h) on a binary engine (entered, its `lean` spec parsed) for a label of the given sign and a
 * weight w > 0, x's values read as river_cw.validation.as_floats reads them and the intercept
 * appended with value 1.0 as GaussianClassifier._features does. LEARN_NOTHING (learned, or
 * nothing to learn), LEARN_SKIPPED (float64 cannot express the step), -1: the general path's
 * case (x holding anything but floats, ints and bools with finite sums, or the intercept; or an
 * error of an exact solver other than a skip, which the general path raises again): nothing
 * changed, no error set; -2: an error (memory) raised. */
static int lean_learn(Diagonal *self, PyObject *x, double sign, double w) {
    PyObject *intercept = self->lean.intercept, *key, *value;
    double m = 0.0, mk, v, alpha, gamma, xf;
    int outcome = LEARN_NOTHING;
    Py_ssize_t pos = 0, ix;
    Py_hash_t h;
    Table *t;
    DdPair acc; /* the sums of the terms m_j and u_j */
    DdSum m_acc, u_acc;
    release_coords(self);
    if (coords_reserve(self, rcw_x_size(x) + 1) < 0) return -2;
    self->margin.pair_block[0] = 0;
    self->margin.pair_sign[0] = sign;
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
        h = self->lean.intercept_hash;
        if ((ix = table_find(t, intercept, h)) == -2) goto general_error;
        lean_coord(self, t, intercept, h, ix, 1.0, &acc);
    }
    ddpair_split(&acc, &m_acc, &u_acc);
    /* the exactly rounded sums: certified by the bound (nearly always), else summed again by
     * math.fsum's algorithm; where that raises, the general path names the bad feature */
    if ((!ddsum_certified(&m_acc, self->margin.ncoords, &mk) ||
         !ddsum_certified(&u_acc, self->margin.ncoords, &v)) &&
        coords_fsum(self, t, &mk, &v) < 0)
        goto general_error;
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
static PyObject *diagonal_learn_native(Diagonal *self, PyObject *const *args, Py_ssize_t nargs) {
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
    outcome = lean_learn(self, args[0], sign, w);
    self->busy = 0;
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
    return fsum_add(vs, (ix < 0 ? self->prior : t->entries[ix].var) * xf * xf);
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

/* score_native(x, intercept, variance) -> m, or (m, v) when `variance` is true: score_binary's
 * numbers, or None where the general path (scores, score_variances) must serve (see
 * score_binary; nothing raised): predict_one and predict_proba_one in one call. */
static PyObject *diagonal_score_native(Diagonal *self, PyObject *const *args, Py_ssize_t nargs) {
    double m, v;
    int ok, variance;
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "score_native(x, intercept, variance)");
        return NULL;
    }
    if ((variance = PyObject_IsTrue(args[2])) < 0 || enter(self) < 0) return NULL;
    ok = score_binary(self, args[0], args[1], &m, &v);
    self->busy = 0;
    if (ok <= 0) return ok < 0 ? NULL : Py_NewRef(Py_None);
    return variance ? Py_BuildValue("dd", m, v) : PyFloat_FromDouble(m);
}

/* ---------------------------------------------------------------------------------------- */
/* layout: blocks named by id, so a failed learn can drop the blocks it added                 */

static PyObject *diagonal_layout(Diagonal *self, PyObject *unused) {
    return blocks_layout(&self->blocks);
}

/* after the blocks were arranged anew: the last margin's coordinates are dropped */
static void arranged(Diagonal *self) {
    release_coords(self);
    reshape(self);
}

/* restore_layout(ids): the blocks of an earlier `layout` (blocks_restore) */
static PyObject *diagonal_restore_layout(Diagonal *self, PyObject *layout) {
    int r;
    if (enter(self) < 0) return NULL;
    if ((r = blocks_restore(&self->blocks, layout)) == 0) arranged(self);
    self->busy = 0;
    if (r < 0) return NULL;
    Py_RETURN_NONE;
}

/* reorder(order): block i becomes the old block order[i] (a permutation) */
static PyObject *diagonal_reorder(Diagonal *self, PyObject *order) {
    Py_ssize_t n;
    long long *ids;
    int r;
    if (enter(self) < 0) return NULL;
    self->busy = 0; /* an index's __index__ is Python's */
    if ((ids = order_ids(&self->blocks, order, &n)) == NULL) return NULL;
    self->busy = 1;
    if ((r = blocks_arrange(&self->blocks, ids, n)) == 0) arranged(self);
    self->busy = 0;
    PyMem_Free(ids);
    if (r < 0) return NULL;
    Py_RETURN_NONE;
}

/* negate(): the Gaussian over -w (block 0's means negated) */
static PyObject *diagonal_negate(Diagonal *self, PyObject *unused) {
    Py_ssize_t i;
    if (enter(self) < 0) return NULL;
    if (self->blocks.n > 0)
        for (i = 0; i < self->blocks.table[0].used; i++)
            self->blocks.table[0].entries[i].mean = -self->blocks.table[0].entries[i].mean;
    reshape(self);
    self->busy = 0;
    Py_RETURN_NONE;
}

/* block_views(): per block, {feature: mean} and {feature: variance} */
static PyObject *diagonal_block_views(Diagonal *self, PyObject *unused) {
    PyObject *means = NULL, *vars = NULL, *d, *f;
    Py_ssize_t b, i;
    int which;
    if (enter(self) < 0) return NULL;
    means = PyList_New(self->blocks.n);
    vars = PyList_New(self->blocks.n);
    if (means == NULL || vars == NULL) goto fail;
    for (b = 0; b < self->blocks.n; b++) {
        Table *t = &self->blocks.table[b];
        for (which = 0; which < 2; which++) {
            if ((d = PyDict_New()) == NULL) goto fail;
            PyList_SET_ITEM(which ? vars : means, b, d);
            for (i = 0; i < t->used; i++) {
                f = PyFloat_FromDouble(which ? t->entries[i].var : t->entries[i].mean);
                if (f == NULL || PyDict_SetItem(d, t->entries[i].key, f) < 0) {
                    Py_XDECREF(f);
                    goto fail;
                }
                Py_DECREF(f);
            }
        }
    }
    self->busy = 0;
    return Py_BuildValue("NN", means, vars);
fail:
    Py_XDECREF(means);
    Py_XDECREF(vars);
    self->busy = 0;
    return NULL;
}

/* ---------------------------------------------------------------------------------------- */
/* state: blocks as a list of dicts feature -> [mean, variance] (the Python engine's layout)   */

/* a weight given as a (mean, variance) pair of numbers for `key`: its hash and values; 0, or
 * -1 with an error (set_blocks, set_weights) */
static int read_weight(PyObject *key, PyObject *w, Py_hash_t *h, double *mean, double *var) {
    PyObject *pair = PySequence_Fast(w, "a weight is a (mean, variance) pair");
    if (pair == NULL) return -1;
    if (PySequence_Fast_GET_SIZE(pair) != 2) {
        Py_DECREF(pair);
        PyErr_SetString(PyExc_ValueError, "a weight is a (mean, variance) pair");
        return -1;
    }
    *mean = PyFloat_AsDouble(PySequence_Fast_GET_ITEM(pair, 0));
    *var = PyFloat_AsDouble(PySequence_Fast_GET_ITEM(pair, 1));
    Py_DECREF(pair);
    if (PyErr_Occurred()) return -1;
    return (*h = PyObject_Hash(key)) == -1 ? -1 : 0;
}

static PyObject *diagonal_get_blocks(Diagonal *self, void *closure) {
    PyObject *out;
    Py_ssize_t b, i;
    if (enter(self) < 0) return NULL;
    out = PyList_New(self->blocks.n);
    for (b = 0; out != NULL && b < self->blocks.n; b++) {
        Table *t = &self->blocks.table[b];
        PyObject *d = PyDict_New();
        if (d == NULL) goto fail;
        PyList_SET_ITEM(out, b, d);
        for (i = 0; i < t->used; i++) {
            PyObject *w = Py_BuildValue("[dd]", t->entries[i].mean, t->entries[i].var);
            if (w == NULL || PyDict_SetItem(d, t->entries[i].key, w) < 0) {
                Py_XDECREF(w);
                goto fail;
            }
            Py_DECREF(w);
        }
    }
    self->busy = 0;
    return out;
fail:
    Py_XDECREF(out);
    self->busy = 0;
    return NULL;
}

static int diagonal_set_blocks(Diagonal *self, PyObject *value, void *closure) {
    PyObject *seq, *key, *w;
    Py_ssize_t n, b, pos, i;
    Table *tables;
    if (value == NULL) {
        PyErr_SetString(PyExc_AttributeError, "cannot delete blocks");
        return -1;
    }
    if ((seq = PySequence_Fast(value, "blocks must be a list of dicts")) == NULL) return -1;
    n = PySequence_Fast_GET_SIZE(seq);
    tables = PyMem_Calloc(n ? n : 1, sizeof(Table));
    if (tables == NULL) {
        Py_DECREF(seq);
        PyErr_NoMemory();
        return -1;
    }
    for (b = 0; b < n; b++) {
        PyObject *d = PySequence_Fast_GET_ITEM(seq, b);
        if (!PyDict_Check(d)) {
            PyErr_SetString(PyExc_TypeError, "blocks must be a list of dicts");
            goto fail;
        }
        if (block_init(&self->blocks, &tables[b]) < 0 ||
            table_reserve(&tables[b], PyDict_GET_SIZE(d)) < 0)
            goto fail;
        pos = 0;
        while (PyDict_Next(d, &pos, &key, &w)) {
            double mean, var;
            Py_hash_t h;
            if (read_weight(key, w, &h, &mean, &var) < 0) goto fail;
            table_append(&tables[b], key, h, mean, var);
        }
    }
    Py_DECREF(seq);
    if (enter(self) < 0) {
        seq = NULL;
        goto fail;
    }
    if (blocks_replace(&self->blocks, tables, n) < 0) {
        self->busy = 0;
        seq = NULL;
        goto fail;
    }
    arranged(self);
    PyMem_Free(tables);
    self->busy = 0;
    return 0;
fail:
    Py_XDECREF(seq);
    for (i = 0; i < n; i++) table_free(&tables[i]);
    PyMem_Free(tables);
    return -1;
}

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

static PyObject *diagonal_get_prior(Diagonal *self, void *closure) {
    return PyFloat_FromDouble(self->prior);
}

static PyObject *diagonal_sizeof(Diagonal *self, PyObject *unused) {
    Py_ssize_t size = Py_TYPE(self)->tp_basicsize + blocks_bytes(&self->blocks) +
                      blocks_mark_bytes(&self->blocks);
    size += sizeof(Coord) * self->margin.coords_cap +
            sizeof(double) * (self->margin.u_cap + 2 * self->margin.scratch_cap);
    return PyLong_FromSsize_t(size);
}

/* ---------------------------------------------------------------------------------------- */
/* marks: the weights written since a point in time (river_cw.diagonal.PythonDiagonalGaussian.mark) */

/* mark(): remember every weight's (mean, variance) as it is now (blocks_mark: a mark and
 * `changed` cost in proportion to the weights written since, not to the model) */
static PyObject *diagonal_mark(Diagonal *self, PyObject *unused) {
    int r;
    if (enter(self) < 0) return NULL;
    r = blocks_mark(&self->blocks, &self->mark, self->reshaped);
    self->busy = 0;
    if (r < 0) return NULL;
    Py_RETURN_NONE;
}

/* a weight's (mean, variance), as `changed` gives it */
static PyObject *weight_pair(const Entry *e, const void *unused) {
    return Py_BuildValue("(dd)", e->mean, e->var);
}

/* changed(): per block, {feature: (mean, variance)} of the weights added since the mark or whose
 * mean or variance differs from it bit for bit, in table order; None without a mark valid for
 * the current blocks (none taken, or the blocks reshaped since) */
static PyObject *diagonal_changed(Diagonal *self, PyObject *unused) {
    PyObject *out;
    if (enter(self) < 0) return NULL;
    out = blocks_changed(&self->blocks, &self->mark, self->reshaped, weight_pair, NULL);
    self->busy = 0;
    return out;
}

/* set_weights(changes): per block, {feature: (mean, variance)} written, a new feature appended
 * in the order given (what `changed` returned, read back) */
static PyObject *diagonal_set_weights(Diagonal *self, PyObject *changes) {
    PyObject *seq, *key, *w;
    Py_ssize_t n, b, pos;
    if ((seq = PySequence_Fast(changes, "changes must be a list of dicts")) == NULL) return NULL;
    n = PySequence_Fast_GET_SIZE(seq);
    if (n != self->blocks.n) {
        PyErr_Format(PyExc_ValueError, "changes of %zd block(s) for an engine of %zd", n,
                     self->blocks.n);
        Py_DECREF(seq);
        return NULL;
    }
    if (enter(self) < 0) {
        Py_DECREF(seq);
        return NULL;
    }
    self->generation++; /* entries may be appended */
    for (b = 0; b < n; b++) {
        PyObject *d = PySequence_Fast_GET_ITEM(seq, b);
        Table *t = &self->blocks.table[b];
        if (!PyDict_Check(d)) {
            PyErr_SetString(PyExc_TypeError, "changes must be a list of dicts");
            goto fail;
        }
        pos = 0;
        while (PyDict_Next(d, &pos, &key, &w)) {
            double mean, var;
            Py_ssize_t ix;
            Py_hash_t h;
            if (read_weight(key, w, &h, &mean, &var) < 0) goto fail;
            if ((ix = table_find(t, key, h)) == -2) goto fail;
            if (ix >= 0) {
                t->entries[ix].mean = mean;
                t->entries[ix].var = var;
                table_note(t, ix);
            } else {
                if (table_reserve(t, 1) < 0) goto fail;
                table_append(t, key, h, mean, var);
            }
            if (fabs(mean) > self->mean_bound) self->mean_bound = fabs(mean);
        }
    }
    Py_DECREF(seq);
    self->busy = 0;
    Py_RETURN_NONE;
fail:
    Py_DECREF(seq);
    self->busy = 0;
    return NULL;
}

#include "_batch.h"

static PyMethodDef diagonal_methods[] = {
    {"scores", (PyCFunction)diagonal_scores, METH_O, "mu_b . x for every block b."},
    {"score_variances", (PyCFunction)diagonal_score_variances, METH_O,
     "x' Sigma_b x for every block b."},
    {"margin", (PyCFunction)diagonal_margin, METH_VARARGS,
     "(m, v, u, entries) along the difference vector of (block, sign) pairs; forgets first."},
    {"update", (PyCFunction)diagonal_update, METH_VARARGS,
     "Apply one step (entries, alpha, gamma, v, scheme)."},
    {"learn", (PyCFunction)(void (*)(void))diagonal_learn, METH_FASTCALL,
     "margin, the rule's step and update: 0 nothing to learn, 1 applied, 2 skipped."},
    {"score_native", (PyCFunction)(void (*)(void))diagonal_score_native, METH_FASTCALL,
     "A binary model's score of x (and its variance) in one call; None: the general path's."},
    {"learn_native", (PyCFunction)(void (*)(void))diagonal_learn_native, METH_FASTCALL,
     "learn of a binary model with the rule's step in C; -1: the general path's case."},
    {"learn_rows", (PyCFunction)diagonal_learn_rows, METH_VARARGS,
     "The learn_one loop over a batch of rows (_batch.h)."},
    {"score_rows", (PyCFunction)diagonal_score_rows, METH_VARARGS,
     "score_native of every row of a batch (_batch.h); None: the general path's row."},
    {"add_block", (PyCFunction)diagonal_add_block, METH_NOARGS, "Append an empty block."},
    {"lift", (PyCFunction)diagonal_lift, METH_NOARGS, "Insert an empty block in front."},
    {"layout", (PyCFunction)diagonal_layout, METH_NOARGS, "A snapshot of the block structure."},
    {"restore_layout", (PyCFunction)diagonal_restore_layout, METH_O,
     "Undo lift/add_block calls made since the layout was taken."},
    {"reorder", (PyCFunction)diagonal_reorder, METH_O, "Block i becomes the old block order[i]."},
    {"reset_bound", (PyCFunction)diagonal_reset_bound, METH_NOARGS,
     "Set mean_bound to the largest |mean|."},
    {"negate", (PyCFunction)diagonal_negate, METH_NOARGS, "The Gaussian over -w."},
    {"block_views", (PyCFunction)diagonal_block_views, METH_NOARGS,
     "Per block, {feature: mean} and {feature: variance}."},
    {"mark", (PyCFunction)diagonal_mark, METH_NOARGS, "Remember every weight as it is now."},
    {"changed", (PyCFunction)diagonal_changed, METH_NOARGS,
     "Per block, {feature: (mean, variance)} of the weights written since the mark; None "
     "without a mark valid for the current blocks."},
    {"set_weights", (PyCFunction)diagonal_set_weights, METH_O,
     "Write per block {feature: (mean, variance)} (what changed returned)."},
    {"__sizeof__", (PyCFunction)diagonal_sizeof, METH_NOARGS, "Bytes held, keys excluded."},
    {NULL},
};

static PyGetSetDef diagonal_getset[] = {
    {"blocks", (getter)diagonal_get_blocks, (setter)diagonal_set_blocks,
     "The weights: a list (one per block) of dicts feature -> [mean, variance] (copies).", NULL},
    {"initial_variance", (getter)diagonal_get_prior, NULL, "The prior variance.", NULL},
    {"mean_bound", (getter)diagonal_get_bound, NULL, "An upper bound of every |mean|.", NULL},
    {NULL},
};

static PyTypeObject DiagonalType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "river_cw._diagonal.Diagonal",
    .tp_basicsize = sizeof(Diagonal),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "The compiled diagonal Gaussian engine (see river_cw.diagonal.DiagonalGaussian).",
    .tp_new = diagonal_new,
    .tp_dealloc = (destructor)diagonal_dealloc,
    .tp_traverse = (traverseproc)diagonal_traverse,
    .tp_clear = (inquiry)diagonal_clear,
    .tp_methods = diagonal_methods,
    .tp_getset = diagonal_getset,
    .tp_weaklistoffset = offsetof(Diagonal, weakreflist),
};

/* ---------------------------------------------------------------------------------------- */

static PyObject *module_fsum(PyObject *module, PyObject *seq) {
    PyObject *it = PyObject_GetIter(seq), *item;
    Fsum acc;
    double x, total;
    if (it == NULL) return NULL;
    fsum_init(&acc);
    while ((item = PyIter_Next(it)) != NULL) {
        x = PyFloat_AsDouble(item);
        Py_DECREF(item);
        if ((x == -1.0 && PyErr_Occurred()) || fsum_add(&acc, x) < 0) {
            Py_DECREF(it);
            fsum_free(&acc);
            return NULL;
        }
    }
    Py_DECREF(it);
    if (PyErr_Occurred()) {
        fsum_free(&acc);
        return NULL;
    }
    if (fsum_result(&acc, &total) < 0) return NULL;
    return PyFloat_FromDouble(total);
}

/* river_cw.validation._EXACT_INT ** 2 (2**52), less a margin for rounding (see as_floats) */
#define EXACT_NORM2 (4503599627370496.0 * (1.0 - 0x1p-20))

/* as_floats(x): river_cw.validation.as_floats with its first fast paths in C: a dict whose
 * values are all floats is returned as it is, and so is a dict of floats and ints whose sum of
 * squares is below 2**52 by a margin far above its rounding (so that math.hypot of the values,
 * the Python function's test, is at most 2**26 too); anything else goes to the Python function
 * (the as_floats hook) */
static PyObject *module_as_floats(PyObject *module, PyObject *x) {
    if (PyDict_CheckExact(x)) {
        PyObject *key, *value;
        Py_ssize_t pos = 0;
        int ints = 0, other = 0;
        double norm2 = 0.0;
        while (!other && PyDict_Next(x, &pos, &key, &value)) {
            double v;
            if (PyFloat_CheckExact(value))
                v = PyFloat_AS_DOUBLE(value);
            else if (PyLong_CheckExact(value)) {
                v = PyLong_AsDouble(value);
                if (v == -1.0 && PyErr_Occurred()) {
                    PyErr_Clear(); /* beyond float64: Python's job */
                    v = INFINITY;
                }
                ints = 1;
            } else {
                other = 1;
                break;
            }
            norm2 += v * v;
        }
        if (!other && (!ints || norm2 <= EXACT_NORM2)) { /* NaN fails the comparison */
            Py_INCREF(x);
            return x;
        }
    }
    if (hook(hooks.as_floats, "as_floats") == NULL) return NULL;
    return PyObject_CallOneArg(hooks.as_floats, x);
}

/* native_step(step, m, v, w, u=None): a rule's C step (_steps.h) as its Python `_step` reports
 * it, or, for an exact step (find_exact_step) on the terms u (a sequence of floats), as its
 * Python `_exact_step` does: None (no update), (alpha, gamma), or False (float64 cannot express
 * the step); a solver's other error is raised */
static PyObject *module_native_step(PyObject *module, PyObject *args) {
    PyObject *spec, *terms = Py_None, *seq;
    double params[RCW_MAX_PARAMS], m, v, w, alpha, gamma, *u;
    rcw_step step;
    exact_step exact;
    Py_ssize_t n, i;
    int r;
    if (!PyArg_ParseTuple(args, "Oddd|O", &spec, &m, &v, &w, &terms)) return NULL;
    if (parse_native(spec, params, &step, &exact) < 0) return NULL;
    if (exact == NULL)
        r = step(params, m, v, w, &alpha, &gamma);
    else {
        if ((seq = PySequence_Fast(terms, "an exact step needs the terms u")) == NULL) return NULL;
        n = PySequence_Fast_GET_SIZE(seq);
        if ((u = PyMem_Malloc(sizeof(double) * (n ? n : 1))) == NULL) {
            Py_DECREF(seq);
            return PyErr_NoMemory();
        }
        for (i = 0; i < n; i++)
            if ((u[i] = PyFloat_AsDouble(PySequence_Fast_GET_ITEM(seq, i))) == -1.0 &&
                PyErr_Occurred())
                break;
        Py_DECREF(seq);
        r = i < n ? -2 : exact(params, m, v, u, n, w, &alpha, &gamma);
        PyMem_Free(u);
        if (r == -2) return NULL;
    }
    if (r < 0) Py_RETURN_FALSE;
    if (r == 0) Py_RETURN_NONE;
    return Py_BuildValue("dd", alpha, gamma);
}

/* connect(raise_bad_input=None, herding_shrink=None, as_floats=None, token_counts=None): the
 * hooks given, each by the module that owns it (river_cw.diagonal, river_cw.validation,
 * river_cw._tokens: the type of _token_counts.h) */
static PyObject *module_connect(PyObject *module, PyObject *args, PyObject *kwds) {
    static char *kwlist[] = {"raise_bad_input", "herding_shrink", "as_floats", "token_counts", NULL};
    PyObject *given[3] = {NULL, NULL, NULL}, **slots[3] = {
        &hooks.raise_bad_input, &hooks.herding_shrink, &hooks.as_floats};
    PyObject *token_counts = NULL;
    int i;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "|$OOOO", kwlist, &given[0], &given[1],
                                     &given[2], &token_counts))
        return NULL;
    if (given[1] != NULL && !PyType_Check(given[1])) {
        PyErr_SetString(PyExc_TypeError, "herding_shrink must be a type");
        return NULL;
    }
    if (token_counts != NULL && rcw_token_counts_connect(token_counts) < 0) return NULL;
    for (i = 0; i < 3; i++)
        if (given[i] != NULL) Py_XSETREF(*slots[i], Py_NewRef(given[i]));
    Py_RETURN_NONE;
}

static PyMethodDef module_methods[] = {
    {"connect", (PyCFunction)(void (*)(void))module_connect, METH_VARARGS | METH_KEYWORDS,
     "Hand the engine its Python hooks (river_cw does it when imported)."},
    {"exact_var_alpha", (PyCFunction)module_exact_var_alpha, METH_VARARGS,
     "river_cw.cw.exact_var_alpha(m, v, phi, u) for Terms u."},
    {"exact_stdev_step", (PyCFunction)module_exact_stdev_step, METH_VARARGS,
     "river_cw.cw.exact_stdev_step(m, v, phi, u) for Terms u."},
    {"as_floats", (PyCFunction)module_as_floats, METH_O,
     "river_cw.validation.as_floats, its first fast paths compiled."},
    {"fsum", (PyCFunction)module_fsum, METH_O, "math.fsum, as the engine computes it."},
    {"native_step", (PyCFunction)module_native_step, METH_VARARGS,
     "A rule's C step (m, v, w) or exact step (m, v, w, u) -> None, (alpha, gamma) or False "
     "(skipped)."},
    {NULL},
};

static struct PyModuleDef moduledef = {
    PyModuleDef_HEAD_INIT, "river_cw._diagonal",
    "The compiled diagonal Gaussian engine of river_cw (optional; see river_cw.diagonal).", -1,
    module_methods,
};

PyMODINIT_FUNC PyInit__diagonal(void) {
    PyObject *m;
    if (PyType_Ready(&DiagonalType) < 0 || PyType_Ready(&TermsType) < 0) return NULL;
    m = PyModule_Create(&moduledef);
    if (m == NULL) return NULL;
    Py_INCREF(&DiagonalType);
    Py_INCREF(&TermsType);
    if (PyModule_AddObject(m, "Diagonal", (PyObject *)&DiagonalType) < 0 ||
        PyModule_AddObject(m, "Terms", (PyObject *)&TermsType) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
