/* The mini-batch kernel of the compiled Gaussian engines: learn_rows learns a batch of rows in
 * one call, exactly as the learn_one loop of river_cw.batch would (the reference), bit for bit:
 * the same margins with the same exactly rounded sums, the same step, the same update; score_rows
 * scores a batch as score_native scores each row. Written once for any payload: what is the
 * engine's mathematics (a row's margin and update, its scores, the lean rows) it asks of the
 * payload's hooks, declared below; the rest is here: the rows read and resolved to the tables'
 * entries, the CSR columns kept across calls, the labels, the steps, the loop and its stops.
 *
 * Rows come as a list of dicts or as CSR arrays (data, indices, indptr) whose column j is the
 * feature named features[j], or the int j itself (hashed ids). For CSR each distinct column of
 * the batch is resolved once to its entry in every block's table (room for every column not yet
 * learned is reserved first, so the tables never grow while the slots are in use); new features
 * get their slots as the updates append them. A call that continues the last one's epoch with
 * the lean kernel leaves that to the kernel, row by row (RESOLVE_LAZY). Each row's label is
 * looked up in the model's class index here (label_block). A binary model's dict rows go first
 * through the engine's own lean path (batch_lean_dict: learn_native's, where the model has a
 * `lean` spec); a row it declines goes the kernel's way below. A centred model's rows (dicts:
 * river_cw.centring) go through that path alone, less the centre, and one it declines goes to
 * learn_one.
 *
 * The kernel never raises on a bad row: it stops at any row it does not handle (a label not yet
 * known, a sample weight that is not a float > 0, a value other than a float, a bool or an int
 * within float64, a mapping other than a dict, a bad key, a margin beyond float64) before
 * touching the model, and the caller hands that row to learn_one, which raises what it raises or
 * learns it (river_cw.gaussian_classifier).
 *
 * Included by an engine after the shell (_shell.h, RCW_SHELL_WEIGHTS: the payload holds the
 * features' `prior`) with a `struct BatchCache *batch` in its payload (the batch cache: NULL
 * until learn_rows reads CSR rows, freed by batch_cache_free from its payload_clear), score_rows'
 * accumulators RowScore and RowScoreExact and its context RowScoreCall defined before, and the
 * hooks declared below defined after; its method table lists RCW_BATCH_METHODS. The diagonal's
 * (_diagonal.c) and the arrowhead's (_arrowhead.c): where the arrowhead's root (the intercept,
 * whose covariance with every weight it keeps) is no feature like the others, its hooks say so
 * (batch_refused_key: no row may name the root but as the intercept; row_score_open: score_rows'
 * rows share the root's numbers; the margin and update hooks read the intercept's column as the
 * root's). */
#include <float.h>

#include "_csr.h"

/* The step of a batch: a native step, or the rule's Python method called per example */
typedef struct {
    rcw_step native;      /* NULL: call `callable` */
    const double *params; /* the native step's parameters */
    PyObject *callable;   /* step(m, v, w) -> None | (alpha, gamma); exact: step(m, v, u, w) */
    PyObject *scheme;     /* "project" or "drop"; None: the step returns its exact scheme */
    int kind;             /* scheme's kind and C (batch_scheme), found once a call */
    double C;
    int lean;             /* exact: the engine's lean spec steps it in C (batch_lean_step) */
    const RcwTemperature *temperature; /* stepped before the step (two labels), or NULL */
} BatchStep;

/* One row's features (the intercept last): feature j has the value x[j] and the column col[j],
 * whose key (borrowed) and hash are keys[col[j]] and hashes[col[j]] and whose entry in block b is
 * slot[b * stride + col[j]] (-1: unseen). A dict row's columns are its own (col[j] = j, in the
 * row's arrays key, hash and ix); a CSR row's are the batch's distinct columns (BatchColumns). */
typedef struct {
    Py_ssize_t n, cap, nblocks;
    double *x;
    Py_ssize_t *col;
    PyObject **keys;
    Py_hash_t *hashes;
    Py_ssize_t *slot, stride;
    PyObject **key; /* a dict row's own columns */
    Py_hash_t *hash;
    Py_ssize_t *ix;
    double *scores;
} BatchRow;

#define ROW_SLOTS(r, b) (&(r)->slot[(b) * (r)->stride])

/* The pairs of a row's difference vector d = sum(sign f(x, block)) */
typedef struct {
    int n;
    Py_ssize_t block[2];
    double sign[2];
    Py_ssize_t n_new[2]; /* features of the pair not learned yet with a non-zero value */
} BatchPairs;

/* per column, side by side (one cache line per use): the last epoch that resolved it (negated:
 * the key is bad, the column's rows go to learn_one) and the last row it was seen in (a row
 * holding it twice goes to learn_one) */
typedef struct {
    int64_t call, row;
} BatchMark;

/* a vocabulary's name, as the epochs used it: the column that named it last, in the epoch (the
 * number of) that did */
typedef struct {
    Py_ssize_t column;
    int64_t epoch;
} BatchName;

/* The CSR columns an engine has learned from, kept across batches (the payload's `batch`): per
 * column its key (a new reference: features[j], or the int j for hashed ids), its hash and its
 * entry in every block, so that a column is hashed and looked up once, not once per batch. The
 * entries are checked once per epoch, without hashing: entry ix of a block holds column j's
 * feature exactly when ix < used and the entry's key is column j's key object itself (a table
 * holds distinct keys), which survives growth, rehashing, a new block, a reorder or a restore
 * (those only make the check fail, and the column is looked up again). An epoch is the calls
 * that follow one another while the engine's layout stays as the last call left it (its
 * generation, the intercept): nothing else wrote the tables in between, so a column resolved in
 * the epoch still is; or wrote only new features at the tables' ends (learn_one's, say), which
 * columns_catch_up gives to the columns they are. The last column (ncols) is the intercept. A
 * vocabulary's names are checked distinct per call against `names`, a table of every name seen
 * (name_use: the column that named it last, and that epoch's number): a call that continues an
 * epoch and finds a column renamed in place since, or a name another column of the epoch took,
 * starts a new epoch instead, where the check is the call's own. (A bad column's rows go to
 * learn_one for the rest of the epoch, which reads the names anew.) */
typedef struct BatchCache {
    PyObject *features; /* the vocabulary (a new reference), or NULL for hashed ids */
    Py_ssize_t ncols, nblocks, stride; /* stride = ncols + 1: the intercept is column ncols */
    PyObject **key;      /* NULL: not seen yet */
    Py_hash_t *hash;     /* -1: the key is not hashable */
    Py_ssize_t *named;   /* a vocabulary column's entry in `names` (checked as the slots are) */
    Py_ssize_t *slot;    /* slot[b * stride + j]: column j's entry in block b, -1: unseen */
    BatchMark *mark;
    Table names;          /* every name seen, and its use: */
    BatchName *name_use;
    Py_ssize_t name_uses; /* room in name_use */
    int64_t calls, rows; /* calls: the number of the epoch (unique among all caches) */
    Py_ssize_t known;    /* the columns (the intercept aside) the epoch resolved, good or bad */
    int continued;       /* this call continues the last call's epoch */
    int settled;         /* the last call ended well, leaving: */
    uint64_t generation; /* the engine's generation */
    uint64_t reshaped;   /* its reshaped count */
    Py_ssize_t *used;    /* each block's size (its table's `used`) */
    PyObject *intercept; /* and its intercept (borrowed, compared by identity) */
} BatchCache;

/* The CSR arrays of a call and the views that hold them */
typedef struct {
    RcwCsr csr;
    BatchCache *cache;
    Py_ssize_t start; /* the first row resolved */
    char *plain;      /* per row from start: 1 when its columns are good and distinct */
    int lazy;         /* 1: rows are not resolved up front (RESOLVE_LAZY) */
} BatchColumns;

enum { BATCH_NONE = 0, BATCH_UPDATE = 1, BATCH_SKIP = -1, BATCH_ERROR = -2 };

/* ---------------------------------------------------------------------------------------- */
/* the payload's hooks: the engine defines them after including this header                   */

/* whether a feature `key` (a CSR column's name, a dict row's key) is the engine's own, which no
 * row may name but as the intercept (the arrowhead's root, whatever the intercept): a row holding
 * it goes to learn_one (score_rows: to the general path) */
static int batch_refused_key(Engine *self, PyObject *key);
/* a scheme's kind and its C for batch_update ("project", "drop", or the engine's others); 0, or
 * -1 with an error */
static int batch_scheme(PyObject *scheme, int *kind, double *C);
/* whether the lean CSR rows (batch_lean_row) take a scheme of this kind */
static int batch_lean_scheme(int kind);
/* the engine's lean cache holding learn_native's spec `lean` (parsed now, if it held another);
 * 0, or -1 with an error */
static int batch_lean_spec(Engine *self, PyObject *lean);
/* the lean spec's own step on the last margin (an exact rule's, in C): the rcw_step's 1, 0 or -1
 * with *alpha, *gamma and the scheme's *kind and *C, or -2 with an error (the Python step then
 * runs and raises it) */
static int batch_lean_step(Engine *self, double m, double v, double w, double *alpha,
                           double *gamma, int *kind, double *C);
/* the last margin's terms u_j, for an exact rule's Python step (a new reference, or NULL) */
static PyObject *batch_terms(Engine *self);
/* the lean path of a dict row x (learn_native's: a binary engine, entered, its lean spec
 * parsed) for a label of the given sign and a weight w > 0, its temperature stepped where
 * `calibrate` (two labels known): LEARN_NOTHING (learned, or nothing to
 * learn), LEARN_SKIPPED, -1 (the general path's row: nothing changed, no error set), -2 (an error
 * raised) */
static int batch_lean_dict(Engine *self, PyObject *x, double sign, double w, int calibrate,
                           PyObject *centre);
/* the lean CSR row i (plain, or checked as it is read when the call is lazy) of a binary model
 * learned by the native step s with a scheme of `kind` and nothing forgotten, straight from the
 * arrays: 0 learned, nothing to learn or skipped (counted in *skipped); 1 the general path's row,
 * nothing changed; 2 (lazy) a column out of range, not resolved in the epoch or stored twice,
 * nothing changed; -1 on memory */
static int batch_lean_row(Engine *self, const BatchColumns *c, Py_ssize_t i, int intercept,
                          double sign, double w, const BatchStep *s, int kind,
                          Py_ssize_t *skipped);
/* a resolved row's score in block b, as `scores` computes it, into *score; -1 where the row is
 * bad (scores() would raise: a score beyond float64, a sum math.fsum raises on), error cleared
 * or pending */
static int batch_row_score(Engine *self, Py_ssize_t b, const BatchRow *r, double *score);
/* the margin of a resolved row along p, as the engine's margin computes it (the learned
 * variances forgotten with keep and rest, written once the row is valid, a root stored anew
 * written to the row's slot; the margin named by a new token, token_take), into *m and *v, and
 * p->n_new; -1 (nothing changed) when the row is bad: learn_one judges it; -2 with an error to
 * propagate as it is (see rcw_error_recoverable) */
static int batch_margin(Engine *self, BatchRow *r, BatchPairs *p, double keep, double rest,
                        double *m, double *v);
/* the step (alpha, gamma) of a scheme of kind, C (or `scheme` itself) applied to the row's
 * margin, as update() applies it (entered); new features (and a root stored anew) appended in
 * the row's order, their entries written to the row's slots. 1 applied, 0 refused (float64 cannot express it), -1 an
 * error */
static int batch_update(Engine *self, BatchRow *r, const BatchPairs *p, double alpha,
                        double gamma, double v, int kind, double C, PyObject *scheme);
/* score_native's numbers for the dict row x (1 with *m and, v not NULL, *v; 0 for the general
 * path's case, -1 with an error that must propagate; entered) */
static int batch_score_dict(Engine *self, PyObject *x, PyObject *intercept, double *m, double *v,
                            PyObject *centre);
/* score_rows' context of a binary engine's call (entered; `csr`: the rows are CSR arrays): into
 * *term the entry of the term the intercept adds last to each CSR row (-1 unseen), or -3 for
 * none; into *call what every row's sums share. 0, or -1 with an error */
static int row_score_open(Engine *self, PyObject *intercept, int csr, Py_ssize_t *term,
                          RowScoreCall *call);
/* a CSR row's sums for score_rows: each stored entry's terms added (its entry ix, -1 unseen, and
 * value xf), the intercept's term last (row_score_open's); 1 with *m and *v where their bound
 * certifies them, else 0 and they are summed again by math.fsum's algorithm (row_exact_add: 0,
 * or -1 with an error and the sums freed; row_exact_result: 1 with *m and *v, 0 for the general
 * path's case, cleared, -1 with an error); row_score_finite: whether the score is one scores()
 * gives */
static void row_score_init(RowScore *s);
static void row_score_add(Engine *self, const Table *t, Py_ssize_t ix, double xf, RowScore *s);
static int row_score_sums(const RowScoreCall *call, RowScore *s, Py_ssize_t n, double *m,
                          double *v);
static int row_score_finite(const RowScore *s, double m);
static void row_exact_init(RowScoreExact *s);
static int row_exact_add(Engine *self, const Table *t, Py_ssize_t ix, double xf,
                         RowScoreExact *s);
static int row_exact_result(const RowScoreCall *call, RowScoreExact *s, double *m, double *v);

static PyObject *engine_learn_rows(Engine *self, PyObject *args);

#define RCW_BATCH_METHODS                                                                        \
    {"learn_rows", (PyCFunction)engine_learn_rows, METH_VARARGS,                                 \
     "The learn_one loop over a batch of rows (_batch.h)."},

/* ---------------------------------------------------------------------------------------- */
/* the kernel                                                                                 */


/* The step of the engine's last margin: BATCH_UPDATE with alpha, gamma, the scheme's kind and C
 * (batch_scheme) and a new reference to the scheme (None from the lean spec), or BATCH_NONE,
 * BATCH_SKIP, BATCH_ERROR (raised). The Python step (rule_step) runs as river_cw._engines.gaussian._learn
 * runs it. An exact rule whose lean spec steps it in C (batch_lean_step: the diagonal's CW
 * solver, NHERD's step with its herding shrink) takes that step, as the lean path does; where the
 * solver errs the Python step runs and raises. */
static int batch_step(Engine *self, const BatchStep *s, double m, double v, double w,
                      double *alpha, double *gamma, PyObject **scheme, int *kind, double *C) {
    PyObject *terms = NULL, *weight;
    int exact = s->scheme == Py_None, r;
    *kind = s->kind; /* the call's scheme, unless an exact step names its own */
    *C = s->C;
    if (exact && s->lean) {
        r = batch_lean_step(self, m, v, w, alpha, gamma, kind, C);
        if (r != -2) {
            if (r <= 0) return r < 0 ? BATCH_SKIP : BATCH_NONE;
            if (!(isfinite(*alpha) && isfinite(*gamma))) return BATCH_SKIP;
            *scheme = Py_NewRef(Py_None);
            return BATCH_UPDATE;
        }
        if (!rcw_error_recoverable()) return BATCH_ERROR;
        PyErr_Clear(); /* the Python step meets it again and raises it */
    }
    if (s->native != NULL) {
        r = s->native(s->params, m, v, w, alpha, gamma);
        if (r <= 0) return r < 0 ? BATCH_SKIP : BATCH_NONE;
        if (!(isfinite(*alpha) && isfinite(*gamma))) return BATCH_SKIP;
        *scheme = Py_NewRef(s->scheme);
        return BATCH_UPDATE;
    }
    if ((exact && (terms = batch_terms(self)) == NULL) ||
        (weight = PyFloat_FromDouble(w)) == NULL) {
        Py_XDECREF(terms);
        return BATCH_ERROR;
    }
    r = rule_step(s->callable, s->scheme, m, v, terms, weight, alpha, gamma, scheme);
    Py_XDECREF(terms);
    Py_DECREF(weight);
    if (r != LEARN_APPLIED)
        return r < 0 ? BATCH_ERROR : r == LEARN_SKIPPED ? BATCH_SKIP : BATCH_NONE;
    if (exact && batch_scheme(*scheme, kind, C) < 0) {
        Py_CLEAR(*scheme);
        return BATCH_ERROR;
    }
    return BATCH_UPDATE;
}

static void row_free(BatchRow *r) {
    PyMem_Free(r->x);
    PyMem_Free(r->key);
    PyMem_Free(r->hash);
    PyMem_Free(r->col);
    PyMem_Free(r->ix);
    PyMem_Free(r->scores);
}

static int row_reserve(BatchRow *r, Py_ssize_t n) {
    if (n <= r->cap && r->x != NULL) return 0;
    n += n / 2 + 16;
    row_free(r);
    r->x = PyMem_Malloc(sizeof(double) * n);
    r->key = PyMem_Malloc(sizeof(PyObject *) * n);
    r->hash = PyMem_Malloc(sizeof(Py_hash_t) * n);
    r->col = PyMem_Malloc(sizeof(Py_ssize_t) * n);
    r->ix = PyMem_Malloc(sizeof(Py_ssize_t) * n * r->nblocks);
    r->scores = PyMem_Malloc(sizeof(double) * r->nblocks);
    r->cap = n;
    if (!r->x || !r->key || !r->hash || !r->col || !r->ix || !r->scores) {
        r->cap = 0;
        PyErr_NoMemory();
        return -1;
    }
    return 0;
}

/* Validate a multi-class row as `scores` does (batch_row_score) and pick the best-scoring block
 * other than k (the first of equals, as Python's max); -1: the row is bad, 0 otherwise */
static int batch_best_wrong(Engine *self, BatchRow *r, Py_ssize_t k, Py_ssize_t *wrong) {
    Py_ssize_t b;
    for (b = 0; b < self->blocks.n; b++)
        if (batch_row_score(self, b, r, &r->scores[b]) < 0) return -1;
    *wrong = -1;
    for (b = 0; b < self->blocks.n; b++)
        if (b != k && (*wrong < 0 || r->scores[b] > r->scores[*wrong])) *wrong = b;
    return 0;
}

static int64_t batch_calls = 0; /* numbers the epochs of every cache */

static void batch_cache_free(Engine *self) {
    BatchCache *c = self->batch;
    Py_ssize_t j;
    if (c == NULL) return;
    self->batch = NULL;
    if (c->key != NULL)
        for (j = 0; j < c->stride; j++) Py_XDECREF(c->key[j]);
    Py_XDECREF(c->features);
    PyMem_Free(c->key);
    PyMem_Free(c->hash);
    PyMem_Free(c->named);
    PyMem_Free(c->slot);
    PyMem_Free(c->used);
    PyMem_Free(c->mark);
    table_free(&c->names);
    PyMem_Free(c->name_use);
    PyMem_Free(c);
}

/* the engine's cache for CSR columns named by `features` (NULL: hashed ids), made anew when the
 * vocabulary (by identity) or the number of columns changed; the slots grown to every block */
static BatchCache *batch_cache(Engine *self, PyObject *features, Py_ssize_t ncols) {
    BatchCache *c = self->batch;
    if (c != NULL && (c->features != features || c->ncols != ncols)) {
        batch_cache_free(self);
        c = NULL;
    }
    if (c == NULL) {
        Py_ssize_t n = ncols + 1;
        if ((c = PyMem_Calloc(1, sizeof(BatchCache))) == NULL) goto memory;
        self->batch = c; /* freed with the engine (its payload_clear) */
        c->ncols = ncols;
        c->stride = n;
        c->key = PyMem_Calloc(n, sizeof(PyObject *));
        c->hash = PyMem_Calloc(n, sizeof(Py_hash_t));
        c->named = PyMem_Calloc(n, sizeof(Py_ssize_t));
        c->mark = PyMem_Calloc(n, sizeof(BatchMark));
        if (!c->key || !c->hash || !c->named || !c->mark) goto memory;
        if (table_init(&c->names) < 0) return NULL;
        Py_XINCREF(features);
        c->features = features;
    }
    if (c->nblocks < self->blocks.n) { /* slots start anywhere: every use checks them first */
        Py_ssize_t *slot = PyMem_Realloc(c->slot, sizeof(Py_ssize_t) * c->stride * self->blocks.n);
        Py_ssize_t *used;
        if (slot == NULL) goto memory;
        c->slot = slot;
        if ((used = PyMem_Realloc(c->used, sizeof(Py_ssize_t) * self->blocks.n)) == NULL)
            goto memory;
        c->used = used;
        memset(slot + c->stride * c->nblocks, 0,
               sizeof(Py_ssize_t) * c->stride * (self->blocks.n - c->nblocks));
        c->nblocks = self->blocks.n;
    }
    return c;
memory:
    PyErr_NoMemory();
    return NULL;
}

static void columns_free(BatchColumns *c) {
    rcw_csr_release(&c->csr);
    PyMem_Free(c->plain);
}

/* ValueError when column j's name was named by another column in this call (the first of an
 * epoch): the vocabulary's names must be distinct (learn_one would merge the two columns into
 * one feature); 1 when the call continues an epoch where another column took the name: the
 * call must start a new epoch */
static int column_named(BatchCache *c, Py_ssize_t j) {
    PyObject *key = c->key[j];
    Py_ssize_t ix = c->named[j];
    BatchName *use;
    if (!(ix >= 0 && ix < c->names.used && c->names.entries[ix].key == key)) {
        if ((ix = table_find(&c->names, key, c->hash[j])) == -2) {
            if (!rcw_error_recoverable()) return -1;
            PyErr_Clear(); /* its == raised: learn_one raises it */
            c->mark[j].call = -c->calls;
            return 0;
        }
        if (ix == -1) {
            if (table_reserve(&c->names, 1) < 0 ||
                rcw_grow((void **)&c->name_use, &c->name_uses, c->names.used + 1,
                         sizeof(BatchName)) < 0)
                return -1;
            ix = c->names.used;
            table_push(&c->names, key, c->hash[j]);
            c->name_use[ix].column = -1;
            c->name_use[ix].epoch = 0;
        }
        c->named[j] = ix;
    }
    use = &c->name_use[ix];
    if (use->epoch == c->calls && use->column != j) {
        if (c->continued) return 1;
        PyErr_Format(PyExc_ValueError, "features names columns %zd and %zd alike: %R",
                     use->column, j, key);
        return -1;
    }
    use->column = j;
    use->epoch = c->calls;
    return 0;
}

/* 0 while the vocabulary still has a name per column; -1 (raised) when Python code the call ran
 * (a key's hash or ==) resized it: its items are read by position */
static int vocabulary_intact(PyObject *features, Py_ssize_t ncols) {
    if (PyList_GET_SIZE(features) == ncols) return 0;
    PyErr_SetString(PyExc_RuntimeError, "features changed size during learn_many");
    return -1;
}

/* whether a row's feature named `key` is learn_one's: the intercept's key itself, or the engine's
 * own (batch_refused_key) */
static inline int batch_named_apart(Engine *self, PyObject *key, PyObject *intercept) {
    return (key == intercept && intercept != Py_None) || batch_refused_key(self, key);
}

/* column j (ncols: the intercept) resolved for this epoch: its key, whether it is bad, its
 * entry in every block; `absent` counts per block the columns not learned yet. 0, -1 on an
 * error, 1: the call must start a new epoch (column_named) */
static int column_resolve(Engine *self, BatchCache *c, Py_ssize_t j, PyObject *features,
                          PyObject *intercept, Py_ssize_t *absent) {
    PyObject *key;
    Py_ssize_t b;
    int status;
    if (j == c->ncols)
        key = intercept;
    else if (features != NULL) {
        if (vocabulary_intact(features, c->ncols) < 0) return -1;
        key = PyList_GET_ITEM(features, j);
    }
    else
        key = c->key[j] != NULL ? c->key[j] : PyLong_FromSsize_t(j);
    if (key == NULL) return -1;
    c->known += j != c->ncols; /* once an epoch: a column is resolved again in a new one only */
    if (key != c->key[j]) { /* a new column, or the vocabulary's name changed */
        if (features != NULL || j == c->ncols) Py_INCREF(key);
        Py_XSETREF(c->key[j], key);
        if ((c->hash[j] = PyObject_Hash(key)) == -1) {
            if (!rcw_error_recoverable()) return -1;
            PyErr_Clear(); /* learn_one names it */
        }
    }
    if (c->hash[j] == -1 || (j != c->ncols && batch_named_apart(self, key, intercept))) {
        c->mark[j].call = -c->calls;
        return 0;
    }
    c->mark[j].call = c->calls;
    if (features != NULL && j != c->ncols && (status = column_named(c, j)) != 0) return status;
    for (b = 0; b < self->blocks.n && c->mark[j].call > 0; b++) {
        Table *t = &self->blocks.table[b];
        Py_ssize_t *slot = &c->slot[b * c->stride + j], ix = *slot;
        if (ix >= 0 && ix < t->used && t->entries[ix].key == key) continue;
        if ((ix = table_find(t, key, c->hash[j])) == -2) {
            if (!rcw_error_recoverable()) return -1;
            PyErr_Clear(); /* its == raised: learn_one raises it */
            c->mark[j].call = -c->calls;
        }
        *slot = ix;
        absent[b] += ix == -1;
    }
    return 0;
}

/* Column l of the row numbered `row` checked against its mark, the one check of a row's columns
 * where the epoch knows them: -1 when l is out of range or not resolved good in `epoch`, 0 when
 * the row stamped it already (the column is stored twice), else 1, the mark stamped with the
 * row */
static RCW_ALWAYS_INLINE int mark_take(BatchMark *marks, Py_ssize_t l, size_t ncols,
                                       int64_t epoch, int64_t row) {
    if ((size_t)l >= ncols || marks[l].call != epoch) return -1;
    if (marks[l].row == row) return 0;
    marks[l].row = row;
    return 1;
}

/* The common row of a continued epoch, in registers (no call): 1 when every column of ind[0:n]
 * is in range and resolved in `epoch`, each stamped once (distinct), 0 when all are but one is
 * stored twice, -1 when one is not (its columns before it stamped with `row`: the row's slow
 * pass takes a new stamp) */
static inline int marks_settled(BatchMark *marks, const Py_ssize_t *ind, Py_ssize_t n,
                                Py_ssize_t ncols, int64_t epoch, int64_t row) {
    Py_ssize_t p;
    int distinct = 1, taken;
    for (p = 0; p < n; p++) {
        if ((taken = mark_take(marks, ind[p], (size_t)ncols, epoch, row)) < 0) return -1;
        distinct &= taken;
    }
    return distinct;
}

/* How columns_resolve starts. EAGER: every row of the call up front. LAZY (a call whose rows all
 * go to the lean kernel first): where the epoch continues, no row at all (c->lazy):
 * batch_lean_row checks each row's columns as it sums them, a column the epoch has not seen is
 * resolved for its row (row_resolve), and a row that still fails (a column out of range, bad or
 * stored twice) has the call's rest resolved (REST) from it. A vocabulary's call is lazy only
 * once the epoch resolved all its columns, with the names unchanged: a new column could take a
 * name another column of the epoch took, which must be refused before any row is learned.
 * REST: the epoch goes on, whatever the engine's generation: this call's rows kept the cache in
 * step with the tables. */
enum { RESOLVE_EAGER, RESOLVE_LAZY, RESOLVE_REST };

/* a lazy call's rows resolved one by one (row_resolve) before it resolves its rest up front:
 * on a stream still adding features (a new model's) most rows hold a column the epoch has not
 * seen, and each would be read twice */
#define LAZY_ROW_RESOLVES 8

/* Where the engine only appended features since the cache's last call ended well (learn_one's
 * new features, as when a new model's batch hands each new label to learn_one): the epoch goes
 * on, each appended entry's key taken as the column it is, whose slot it becomes in its block
 * (the entries before stay where they were). 1: done; 0: the epoch must start again (blocks
 * changed, or a key that only Python code could tell: neither an exact str nor an exact int;
 * also a name whose == raised an Exception); -1: an error to propagate. */
static int columns_catch_up(Engine *self, BatchCache *c, PyObject *intercept) {
    Py_ssize_t b, ix, j;
    if (c->reshaped != self->reshaped || c->nblocks < self->blocks.n) return 0;
    for (b = 0; b < self->blocks.n; b++) {
        const Table *t = &self->blocks.table[b];
        for (ix = c->used[b]; ix < t->used; ix++) {
            const Entry *e = &t->entries[ix];
            PyObject *key = e->key;
            if (key == intercept)
                j = c->ncols;
            else if (!PyUnicode_CheckExact(key) && !PyLong_CheckExact(key))
                return 0;
            else if (c->features == NULL) { /* hashed: column j is the int j */
                if (!PyLong_CheckExact(key)) continue; /* a str equals no int */
                j = PyLong_AsSsize_t(key);
                if (j == -1 && PyErr_Occurred()) {
                    if (!PyErr_ExceptionMatches(PyExc_OverflowError)) return -1;
                    PyErr_Clear(); /* beyond every column */
                    continue;
                }
                if (j < 0 || j >= c->ncols) continue;
            } else { /* a vocabulary: the column the epoch resolved by that name, if any */
                Py_ssize_t n = table_find(&c->names, key, e->hash);
                if (n == -2) {
                    if (!rcw_error_recoverable()) return -1;
                    PyErr_Clear();
                    return 0;
                }
                if (n < 0 || c->name_use[n].epoch != c->calls) continue;
                j = c->name_use[n].column;
            }
            if (c->mark[j].call == c->calls && c->slot[b * c->stride + j] < 0)
                c->slot[b * c->stride + j] = ix; /* else resolved when the epoch meets it */
        }
    }
    return 1;
}

/* Whether a call of `mode` continues the cache's epoch (1) or starts a new one (0), or -1 on an
 * error: REST always continues; otherwise a call continues where the cache's last call ended well
 * with the same intercept and nothing else wrote the tables since, or wrote only appends that
 * columns_catch_up gives to their columns */
static int columns_continued(Engine *self, BatchCache *cache, PyObject *intercept, int mode) {
    if (mode == RESOLVE_REST) return 1;
    if (!cache->settled || cache->intercept != intercept) return 0;
    if (cache->generation == self->generation) return 1; /* nothing else wrote the tables */
    return columns_catch_up(self, cache, intercept);
}

/* Row i's columns checked one by one (the slow pass of columns_resolve: a column not resolved
 * in the epoch is resolved, a vocabulary's name compared with the epoch's when `renames`),
 * stamped with `row`; *plain &= each is good and stored once. 0, 1: the call must start a new
 * epoch (a name another column of the epoch took, or renamed in place since), -1 on an error */
static int row_mark(Engine *self, BatchColumns *c, Py_ssize_t i, int64_t row, int renames,
                    int64_t first_row, PyObject *features, PyObject *intercept,
                    Py_ssize_t *absent, int *plain) {
    BatchCache *cache = c->cache;
    const int64_t epoch = cache->calls;
    const Py_ssize_t ncols = c->csr.ncols;
    Py_ssize_t p;
    int resolved;
    for (p = c->csr.indptr[i]; p < c->csr.indptr[i + 1]; p++) {
        Py_ssize_t l = c->csr.indices[p];
        BatchMark *mark;
        if ((size_t)l >= (size_t)ncols) {
            PyErr_Format(PyExc_ValueError, "CSR column index %zd out of range", l);
            return -1;
        }
        mark = &cache->mark[l];
        if (mark->call != epoch) {
            if (mark->call != -epoch &&
                (resolved = column_resolve(self, cache, l, features, intercept, absent)) != 0)
                return resolved; /* 1: a name another column of the epoch took */
            *plain &= mark->call == epoch;
        } else if (renames && mark->row < first_row &&
                   (vocabulary_intact(features, ncols) < 0 ||
                    PyList_GET_ITEM(features, l) != cache->key[l]))
            return PyErr_Occurred() ? -1 : 1; /* renamed in place since the epoch resolved it */
        *plain &= mark->row != row;
        mark->row = row;
    }
    return 0;
}

/* The kernel of columns_resolve: the epoch's columns of rows [start, end) resolved and each
 * row marked plain or not (see RESOLVE_LAZY for a lazy call, which marks none), starting the
 * epoch again where a name forbids going on; per block the columns found unseen counted in
 * absent. 0, or -1 on an error */
static int columns_mark_rows(Engine *self, BatchColumns *c, PyObject *features,
                             PyObject *intercept, Py_ssize_t start, Py_ssize_t end, int mode,
                             Py_ssize_t *absent) {
    BatchCache *cache = c->cache;
    BatchMark *marks = cache->mark;
    const Py_ssize_t ncols = c->csr.ncols;
    Py_ssize_t i;
    int64_t epoch, first_row;
    int renames, status;
again:
    if (!cache->continued) { /* a new epoch */
        cache->calls = ++batch_calls;
        cache->known = 0;
        memset(absent, 0, sizeof(Py_ssize_t) * self->blocks.n);
    }
    epoch = cache->calls; /* in locals: the marks' stores cannot change them */
    /* a vocabulary's names are checked at a column's first row in the call, unless every name
     * is the one its column was resolved by (one sequential comparison, when the call is not
     * much smaller than the vocabulary) */
    if (features != NULL && vocabulary_intact(features, ncols) < 0) return -1;
    renames = cache->continued && features != NULL &&
              !(ncols <= 2 * (c->csr.indptr[end] - c->csr.indptr[start]) &&
                memcmp(PySequence_Fast_ITEMS(features), cache->key,
                       sizeof(PyObject *) * ncols) == 0);
    first_row = cache->rows + 1;
    if (intercept != Py_None && marks[ncols].call != epoch &&
        column_resolve(self, cache, ncols, features, intercept, absent) < 0)
        return -1;
    if (mode == RESOLVE_LAZY && cache->continued && !renames &&
        (features == NULL || cache->known == ncols) &&
        (intercept == Py_None || marks[ncols].call == epoch)) {
        c->lazy = 1;
        return 0;
    }
    for (i = start; i < end; i++) {
        int64_t row = ++cache->rows;
        int plain = intercept == Py_None || marks[ncols].call == epoch, settled;
        if (!renames) {
            settled = marks_settled(marks, c->csr.indices + c->csr.indptr[i],
                                    c->csr.indptr[i + 1] - c->csr.indptr[i], ncols, epoch, row);
            if (settled >= 0) { /* the common row: every column resolved in the epoch */
                c->plain[i - start] = (char)(plain & settled);
                continue;
            }
            row = ++cache->rows;
        }
        status = row_mark(self, c, i, row, renames, first_row, features, intercept, absent,
                          &plain);
        if (status < 0) return -1;
        if (status > 0) {
            cache->continued = 0;
            goto again;
        }
        c->plain[i - start] = (char)plain;
    }
    return 0;
}

/* Resolve the columns of rows [start, end) in every block, once per epoch; reserve room up front
 * for the columns this call found unseen (the intercept included: the table grows once, not row
 * by row; the updates reserve what else they add, such as a column the epoch found unseen in an
 * earlier call); mark each row whose columns (the intercept's included) are good and distinct
 * in c->plain[i - start] (unless lazy, see RESOLVE_LAZY) */
static RCW_NOINLINE int columns_resolve(Engine *self, BatchColumns *c, PyObject *features,
                                        PyObject *intercept, Py_ssize_t start, Py_ssize_t end,
                                        int mode) {
    Py_ssize_t i, b, *absent;
    BatchCache *cache;
    int status = -1, continued;
    for (i = start; i < end; i++)
        if (c->csr.indptr[i] > c->csr.indptr[i + 1]) {
            PyErr_SetString(PyExc_ValueError, "CSR indptr must not decrease");
            return -1;
        }
    features = features == Py_None ? NULL : features;
    if ((cache = batch_cache(self, features, c->csr.ncols)) == NULL) return -1;
    c->cache = cache;
    c->start = start;
    c->lazy = 0;
    absent = PyMem_Calloc(self->blocks.n, sizeof(Py_ssize_t));
    PyMem_Free(c->plain); /* the call's earlier resolve (REST) */
    c->plain = PyMem_Malloc(end > start ? end - start : 1);
    if (absent == NULL || c->plain == NULL) {
        PyMem_Free(absent);
        PyErr_NoMemory();
        return -1;
    }
    if ((continued = columns_continued(self, cache, intercept, mode)) >= 0) {
        cache->continued = continued;
        cache->settled = 0; /* until this call ends well */
        cache->intercept = intercept;
        status = columns_mark_rows(self, c, features, intercept, start, end, mode, absent);
        for (b = 0; status == 0 && !c->lazy && b < self->blocks.n; b++)
            status = table_reserve(&self->blocks.table[b], absent[b]);
    }
    PyMem_Free(absent);
    return status;
}

/* A lazy call's row i with a column the epoch has not resolved: its hashed columns resolved as
 * columns_resolve's slow pass resolves them (a new one's room is reserved by its update). 0:
 * every column of the row is now in range and resolved, good; 1: not (a column out of range or
 * bad): the call's rest is for columns_resolve; -1 on error */
static RCW_NOINLINE int row_resolve(Engine *self, BatchColumns *c, PyObject *intercept,
                                    Py_ssize_t i) {
    BatchCache *cache = c->cache;
    Py_ssize_t p, *absent;
    int status = 0;
    if (cache->features != NULL) return 1; /* a vocabulary's lazy call knows every column */
    if ((absent = PyMem_Calloc(self->blocks.n, sizeof(Py_ssize_t))) == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    for (p = c->csr.indptr[i]; p < c->csr.indptr[i + 1] && status == 0; p++) {
        Py_ssize_t l = c->csr.indices[p];
        if ((size_t)l >= (size_t)c->csr.ncols || cache->mark[l].call == -cache->calls)
            status = 1;
        else if (cache->mark[l].call != cache->calls &&
                 (status = column_resolve(self, cache, l, NULL, intercept, absent)) == 0)
            status = cache->mark[l].call != cache->calls; /* found bad */
    }
    PyMem_Free(absent);
    return status;
}

/* row i of the CSR batch, resolved; 0, or 1 when the kernel leaves it to learn_one (a bad key
 * or a column stored twice: not plain) */
static int columns_row(Engine *self, BatchColumns *c, BatchRow *r, Py_ssize_t i,
                       PyObject *intercept) {
    BatchCache *cache = c->cache;
    Py_ssize_t p, a = c->csr.indptr[i], e = c->csr.indptr[i + 1];
    Py_ssize_t n = e - a + (intercept != Py_None);
    if (!c->lazy && !c->plain[i - c->start]) return 1; /* lazy: the lean kernel checked it */
    if (row_reserve(r, n) < 0) return -1;
    r->n = n;
    for (p = 0; p < n; p++) {
        r->x[p] = p < e - a ? c->csr.data[a + p] : 1.0;
        r->col[p] = p < e - a ? c->csr.indices[a + p] : cache->ncols;
    }
    r->keys = cache->key;
    r->hashes = cache->hash;
    r->slot = cache->slot;
    r->stride = cache->stride;
    return 0;
}

/* a dict row, resolved; 0, 1 when the kernel leaves it to learn_one, -1 on error */
static int dict_row(Engine *self, BatchRow *r, PyObject *x, PyObject *intercept,
                    Py_hash_t intercept_hash) {
    PyObject *key, *value;
    Py_ssize_t pos = 0, j = 0, b, n;
    if (!PyDict_CheckExact(x)) return 1;
    n = PyDict_GET_SIZE(x) + (intercept != Py_None);
    if (row_reserve(r, n) < 0) return -1;
    r->n = n;
    while (PyDict_Next(x, &pos, &key, &value)) {
        Py_hash_t h;
        if (batch_named_apart(self, key, intercept) || plain_value(value, &r->x[j])) return 1;
        if ((h = key_hash(key)) == -1) goto leave;
        r->key[j] = key;
        r->hash[j] = h;
        r->col[j] = j;
        j++;
    }
    if (intercept != Py_None) {
        r->x[j] = 1.0;
        r->key[j] = intercept;
        r->hash[j] = intercept_hash;
        r->col[j] = j;
    }
    r->keys = r->key;
    r->hashes = r->hash;
    r->slot = r->ix;
    r->stride = r->cap;
    for (b = 0; b < self->blocks.n; b++)
        for (j = 0; j < n; j++)
            if ((r->ix[b * r->cap + j] =
                     table_find(&self->blocks.table[b], r->key[j], r->hash[j])) == -2)
                goto leave;
    return 0;
leave:
    if (!rcw_error_recoverable()) return -1;
    PyErr_Clear();
    return 1;
}

/* The block of a label as the model's class index (a dict: label -> block) maps it; -1 for a
 * label it does not hold, or cannot look up (unhashable, or its == raised: learn_one's case),
 * -2 on an error to propagate. The last two labels looked up are remembered by identity (a dict
 * finds a key identical to the one asked for without calling its ==): a stream's labels are
 * mostly the same few objects. For one learn_rows call: the index changes only between them. */
typedef struct {
    PyObject *label[2]; /* borrowed from the call's list of labels */
    Py_ssize_t block[2];
    int next;
} LabelMemo;

static Py_ssize_t label_block(PyObject *index, PyObject *y, LabelMemo *memo) {
    PyObject *found;
    Py_ssize_t k;
    if (y == memo->label[0]) return memo->block[0];
    if (y == memo->label[1]) return memo->block[1];
    if ((found = PyDict_GetItemWithError(index, y)) == NULL) {
        if (!PyErr_Occurred()) return -1;
        if (!rcw_error_recoverable()) return -2;
        PyErr_Clear();
        return -1;
    }
    if ((k = PyLong_AsSsize_t(found)) == -1 && PyErr_Occurred()) return -2;
    memo->label[memo->next] = y;
    memo->block[memo->next] = k;
    memo->next ^= 1;
    return k;
}

/* A learn_rows call: its arguments, parsed (batch_call_parse) */
typedef struct {
    PyObject *rows, *labels, *class_index, *weights, *intercept, *stats, *features;
    PyObject *lean;       /* learn_native's spec while dict rows take batch_lean_dict, or None */
    PyObject *centre;     /* a centred model's centre (river_cw.centring), an exact dict, or NULL */
    PyObject *arrays[3]; /* CSR rows: data, indices, indptr */
    Py_ssize_t start, nrows, n_classes;
    double forgetting;
    Py_hash_t intercept_hash;
    int csr;
    int lean_kind;        /* the lean CSR rows' built-in scheme (set by batch_call_open), or -1 */
    BatchStep step;
    double native_params[RCW_MAX_PARAMS];
    RcwTemperature temperature; /* the model's calibration (_calibration.h) */
} BatchCall;

/* learn_rows' arguments (see engine_learn_rows) into *call, and the CSR columns' count into
 * c->csr; 0, or -1 with an error (before the engine is entered) */
static int batch_call_parse(Engine *self, PyObject *args, BatchCall *call, BatchColumns *c) {
    PyObject *step_fn, *scheme, *native, *calibration, *centre = Py_None;
    BatchStep *step = &call->step;
    if (!PyArg_ParseTuple(args, "OO!O!O!nOOdOO!OOO|O", &call->rows, &PyList_Type, &call->labels,
                          &PyDict_Type, &call->class_index, &PyList_Type, &call->weights,
                          &call->start, &step_fn, &scheme, &call->forgetting, &call->intercept,
                          &PyList_Type, &call->stats, &native, &call->lean, &calibration,
                          &centre))
        return -1;
    if (rcw_batch_centre(centre, call->rows, &call->centre) < 0) return -1;
    call->n_classes = PyDict_GET_SIZE(call->class_index);
    call->features = Py_None;
    call->lean_kind = -1;
    step->callable = step_fn;
    step->scheme = scheme;
    if (scheme != Py_None && batch_scheme(scheme, &step->kind, &step->C) < 0) return -1;
    if (native != Py_None) {
        if ((step->native = rcw_parse_step(native, call->native_params)) == NULL) return -1;
        step->params = call->native_params;
    }
    call->csr = PyTuple_Check(call->rows);
    if (call->csr) {
        if (rcw_csr_parse(call->rows, &c->csr, call->arrays) < 0) return -1;
        call->features = c->csr.features;
    } else if (!PyList_Check(call->rows)) {
        PyErr_SetString(PyExc_TypeError, "rows must be a list of dicts or CSR arrays");
        return -1;
    }
    if (PyList_GET_SIZE(call->stats) != 2) {
        PyErr_SetString(PyExc_TypeError, "stats must be [row, skipped]");
        return -1;
    }
    if (self->blocks.n != (call->n_classes > 2 ? call->n_classes : 1)) {
        PyErr_SetString(PyExc_RuntimeError, "learn_rows: the blocks do not match the classes");
        return -1;
    }
    if (call->intercept != Py_None && (call->intercept_hash = PyObject_Hash(call->intercept)) == -1)
        return -1;
    if (self->blocks.n != 1)
        call->lean = Py_None;
    else if (call->lean != Py_None && batch_lean_spec(self, call->lean) < 0) {
        if (!PyErr_ExceptionMatches(PyExc_OverflowError)) return -1;
        PyErr_Clear(); /* a parameter beyond float64: the Python step's case, as in learn_one */
        call->lean = Py_None;
    }
    step->lean = call->lean != Py_None && scheme == Py_None;
    if (call->csr) call->lean = Py_None; /* CSR rows keep their own path (batch_lean_row) */
    if (rcw_temperature_parse(calibration, &call->temperature) < 0) return -1;
    step->temperature = call->n_classes == 2 ? &call->temperature : NULL;
    return 0;
}

/* The rows' sizes checked against the labels and weights; CSR rows: their arrays viewed and their
 * columns resolved (lazily for the lean CSR rows). 0, or -1 with an error (the engine entered) */
static int batch_call_open(Engine *self, BatchCall *call, BatchColumns *c) {
    const void *p;
    Py_ssize_t ndata, nindices, nsize, nrows = call->nrows = PyList_GET_SIZE(call->labels);
    const BatchStep *step = &call->step;
    if (PyList_GET_SIZE(call->weights) != nrows || call->start < 0 || call->start > nrows) {
        PyErr_SetString(PyExc_ValueError, "learn_rows: one label and one weight per row");
        return -1;
    }
    if (!call->csr) {
        if (PyList_GET_SIZE(call->rows) == nrows) return 0;
        PyErr_SetString(PyExc_ValueError, "learn_rows: one label and one weight per row");
        return -1;
    }
    if (rcw_csr_view(&c->csr, call->arrays[0], "d", sizeof(double), &p, &ndata) < 0) return -1;
    c->csr.data = p;
    if (rcw_csr_view(&c->csr, call->arrays[1], "lqn", sizeof(Py_ssize_t), &p, &nindices) < 0)
        return -1;
    c->csr.indices = p;
    if (rcw_csr_view(&c->csr, call->arrays[2], "lqn", sizeof(Py_ssize_t), &p, &nsize) < 0)
        return -1;
    c->csr.indptr = p;
    if (nsize != nrows + 1 || c->csr.indptr[0] < 0 || c->csr.indptr[nrows] > ndata ||
        c->csr.indptr[nrows] > nindices) {
        PyErr_SetString(PyExc_ValueError, "learn_rows: CSR arrays of inconsistent sizes");
        return -1;
    }
    if (call->n_classes <= 2 && step->native != NULL && call->forgetting == 0.0 &&
        step->scheme != Py_None && batch_lean_scheme(step->kind))
        call->lean_kind = step->kind; /* the lean CSR rows' case: a native step, a lean scheme */
    return columns_resolve(self, c, call->features, call->intercept, call->start, nrows,
                           call->lean_kind >= 0 ? RESOLVE_LAZY : RESOLVE_EAGER);
}

/* What the loop does after a row: the next row, a stop at this row (learn_one's), or an error */
enum { ROW_NEXT = 0, ROW_STOP = 1, ROW_FAIL = -1 };

/* A row of the general path, i (label block k, weight w), learned as learn_one learns it:
 * resolved into r, its pairs (the best wrong block of a multi-class model), forgetting,
 * batch_margin, the rule's step (Python's, called with the engine free, or native) and
 * batch_update, which sets *generation to the engine's new one (the step must change nothing:
 * the loop checks it). ROW_NEXT (learned, nothing to learn or skipped: counted in *skipped),
 * ROW_STOP (learn_one's row: nothing changed) or ROW_FAIL (an error) */
static int batch_general_row(Engine *self, const BatchCall *call, BatchColumns *c,
                             BatchRow *r, Py_ssize_t i, Py_ssize_t k, double w,
                             uint64_t *generation, Py_ssize_t *skipped) {
    PyObject *scheme = NULL;
    double keep = 1.0, rest = 0.0, m, v, alpha, gamma, C;
    BatchPairs pairs;
    uint64_t token;
    int outcome, kind;
    outcome = call->csr ? columns_row(self, c, r, i, call->intercept)
                        : dict_row(self, r, PyList_GET_ITEM(call->rows, i), call->intercept,
                                   call->intercept_hash);
    if (outcome != 0) return outcome < 0 ? ROW_FAIL : ROW_STOP;
    if (call->n_classes <= 2) { /* binary: the second label seen is +1 */
        pairs.n = 1;
        pairs.block[0] = 0;
        pairs.sign[0] = k == 1 ? 1.0 : -1.0;
    } else {
        pairs.n = 2;
        pairs.block[0] = k;
        pairs.sign[0] = 1.0;
        pairs.sign[1] = -1.0;
        if (batch_best_wrong(self, r, k, &pairs.block[1]) < 0) {
            if (!rcw_error_recoverable()) return ROW_FAIL;
            PyErr_Clear();
            return ROW_STOP;
        }
    }
    if (call->forgetting != 0.0) {
        keep = w == 1.0 ? 1.0 - call->forgetting : pow(1.0 - call->forgetting, w);
        if (keep < DBL_MIN) keep = DBL_MIN; /* a huge w forgets all but a trace */
        rest = (1.0 - keep) / self->prior;
    } else /* forgetting="auto": the rate the surprise sets, 0 for most rows */
        rcw_surprise_forgetting(call->step.temperature, w, self->prior, 0, &keep, &rest);
    if ((outcome = batch_margin(self, r, &pairs, keep, rest, &m, &v)) < 0)
        return outcome == -2 ? ROW_FAIL : ROW_STOP; /* -2: an error to propagate as it is */
    *generation = self->generation; /* a margin that forgets writes the variances it relaxed */
    token = self->token.last;
    if (v <= 0.0) /* no non-zero feature, or all their variance is spent */
        return ROW_NEXT;
    leave(self); /* the step is Python's: it may call the engine */
    outcome = batch_step(self, &call->step, m, v, w, &alpha, &gamma, &scheme, &kind, &C);
    if (outcome == BATCH_ERROR) return ROW_FAIL;
    /* the step must leave the engine and its margin as they were, whether it steps or not (as
     * learn_one's update checks its margin's token) */
    if (enter(self) < 0 || self->generation != *generation || !token_holds(self, token)) {
        Py_XDECREF(scheme);
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_RuntimeError, "the engine changed during a step");
        return ROW_FAIL;
    }
    if (outcome != BATCH_UPDATE) {
        rcw_temperature_step(call->step.temperature, m, v, w, 0);
        *skipped += outcome == BATCH_SKIP;
        return ROW_NEXT;
    }
    outcome = batch_update(self, r, &pairs, alpha, gamma, v, kind, C, scheme);
    Py_DECREF(scheme);
    if (outcome < 0) return ROW_FAIL;
    rcw_temperature_step(call->step.temperature, m, v, w, 0);
    *skipped += !outcome;
    *generation = self->generation;
    return ROW_NEXT;
}

/* The kernel of learn_rows (entered, the call opened): the learn_one loop over the rows from
 * *at, each row taking the first path that holds it: the lean CSR row (batch_lean_row), the
 * lean dict row (batch_lean_dict), the general row (batch_general_row); a centred model's, the
 * lean dict row less the centre, or none. Stops at the first row left
 * to learn_one (*at: its index, or nrows when every row is learned) with 0; -1 on an error (*at
 * the row that raised). A CSR call that ends well leaves its cache settled: its slots are the
 * tables'. */
static int learn_rows_loop(Engine *self, const BatchCall *call, BatchColumns *c,
                           Py_ssize_t *at, Py_ssize_t *skipped) {
    Py_ssize_t i, retried = -1, row_resolves = 0; /* lazy rows resolved one by one */
    LabelMemo memo = {{NULL, NULL}, {0, 0}, 0};
    BatchRow r = {0};
    uint64_t generation = self->generation;
    int64_t epoch = call->csr ? c->cache->calls : 0;
    int failed = 1;
    r.nblocks = self->blocks.n;
    for (i = *at; i < call->nrows; i++) {
        Py_ssize_t k = label_block(call->class_index, PyList_GET_ITEM(call->labels, i), &memo);
        PyObject *w_obj = PyList_GET_ITEM(call->weights, i);
        double w;
        int outcome, forgets;
        if (k == -2) goto done;
        if (k < 0 || k >= call->n_classes || !PyFloat_CheckExact(w_obj)) break;
        w = PyFloat_AS_DOUBLE(w_obj);
        if (!(w > 0.0 && w < INFINITY)) break; /* w = 0 only validates: learn_one's job */
        if (self->generation != generation ||
            (call->csr && (self->batch != c->cache || c->cache->calls != epoch))) {
            PyErr_SetString(PyExc_RuntimeError, "the engine's layout changed during learn_rows");
            goto done;
        }
        /* a row whose surprise forgets (forgetting="auto") takes the general row, which forgets
         * as learn_one does, or a lean dict path that forgets (the arrowhead's); the lean CSR
         * row does not forget, and a lazy call's general rows need their columns resolved:
         * the call's rest is resolved from this row, as for a row the lean kernel cannot take */
        forgets = rcw_surprise_forgets(call->step.temperature);
        if (forgets && call->csr && c->lazy) {
            if (columns_resolve(self, c, call->features, call->intercept, i, call->nrows,
                                RESOLVE_REST) < 0)
                goto done;
            epoch = c->cache->calls;
        }
        if (!forgets && call->lean_kind >= 0 && (c->lazy || c->plain[i - c->start])) {
            outcome = batch_lean_row(self, c, i, call->intercept != Py_None,
                                       k == 1 ? 1.0 : -1.0, w, &call->step, call->lean_kind,
                                       skipped);
            if (outcome < 0) goto done;
            if (outcome == 2) {
                /* lazy, and a column it cannot take: this row again, its columns resolved, or
                 * the call's rest when that fails (a retried row) or rows keep needing it */
                int rest = retried == i || ++row_resolves > LAZY_ROW_RESOLVES
                               ? 1
                               : row_resolve(self, c, call->intercept, i);
                if (rest < 0) goto done;
                if (rest && columns_resolve(self, c, call->features, call->intercept, i,
                                            call->nrows, RESOLVE_REST) < 0)
                    goto done;
                epoch = c->cache->calls; /* a new epoch, if a vocabulary's name moved meanwhile */
                retried = i--;
                continue;
            }
            if (outcome == 0) {
                generation = self->generation;
                continue;
            }
        }
        if (call->lean != Py_None && PyDict_CheckExact(PyList_GET_ITEM(call->rows, i))) {
            /* parsed by batch_call_parse, unless a step parsed another spec since */
            if (batch_lean_spec(self, call->lean) < 0) goto done;
            outcome = batch_lean_dict(self, PyList_GET_ITEM(call->rows, i), k == 1 ? 1.0 : -1.0, w,
                                      call->n_classes == 2, call->centre);
            if (outcome == -2) goto done;
            if (outcome != -1) { /* learned, nothing to learn or skipped: as learn_one */
                *skipped += outcome == LEARN_SKIPPED;
                generation = self->generation;
                continue;
            }
        }
        if (call->centre != NULL) break; /* a centred row the lean path declines: learn_one's */
        outcome = batch_general_row(self, call, c, &r, i, k, w, &generation, skipped);
        if (outcome == ROW_FAIL) goto done;
        if (outcome == ROW_STOP) break;
    }
    failed = 0;
    if (call->csr && self->batch == c->cache && c->cache->calls == epoch) {
        Py_ssize_t b;
        c->cache->settled = 1; /* its slots are the tables' */
        c->cache->generation = self->generation;
        c->cache->reshaped = self->reshaped;
        for (b = 0; b < self->blocks.n; b++) c->cache->used[b] = self->blocks.table[b].used;
    }
done:
    *at = i;
    row_free(&r);
    return failed ? -1 : 0;
}

/* stats[0] = the row learn_rows stopped at, stats[1] += the updates it skipped; 0, or -1 */
static int batch_stats(PyObject *stats, Py_ssize_t at, Py_ssize_t skipped) {
    PyObject *row = PyLong_FromSsize_t(at), *count = PyLong_FromSsize_t(skipped), *total = NULL;
    if (row != NULL && count != NULL) total = PyNumber_Add(PyList_GET_ITEM(stats, 1), count);
    Py_XDECREF(count);
    if (total == NULL) {
        Py_XDECREF(row);
        return -1;
    }
    PyList_SetItem(stats, 0, row);
    PyList_SetItem(stats, 1, total);
    return 0;
}

/* learn_rows(rows, labels, class_index, weights, start, step, scheme, forgetting, intercept,
 * stats, native, lean, calibration, centre=None): the learn_one loop over rows[start:] (see the
 * top of this file); `rows`
 * is a list of dicts or (data, indices, indptr, features or None, n_columns), `labels` each
 * row's label, `class_index` the model's dict of label -> block, one entry per class (a label it
 * does not hold is learn_one's: the loop stops there), `weights` the sample weight of each row,
 * `intercept` the intercept's key or None, `native` the rule's `_native_step` (then `step` is
 * not called) or None, `lean` learn_native's spec or None: while binary, a dict row goes first
 * through batch_lean_dict (learn_one's lean path), and a row it declines the way above;
 * `calibration` the model's (_calibration.h: a binary model's temperature takes its Newton step
 * on each row's margin, as learn_one's), or None; `centre` a centred model's (the arrowhead's,
 * river_cw.centring) or None: then every row is a dict, learned by batch_lean_dict less the
 * centre, and the loop stops at a row that path declines. Sets
 * stats[0] to the row it stopped at (len(rows): all learned) and adds the skipped updates to
 * stats[1], also when a step raises. */
static PyObject *engine_learn_rows(Engine *self, PyObject *args) {
    BatchCall call = {0};
    BatchColumns c = {0};
    Py_ssize_t at, skipped = 0;
    int status;
    if (batch_call_parse(self, args, &call, &c) < 0 || enter(self) < 0) {
        rcw_temperature_release(&call.temperature);
        return NULL;
    }
    at = call.start;
    status = batch_call_open(self, &call, &c);
    if (status == 0) status = learn_rows_loop(self, &call, &c, &at, &skipped);
    leave(self); /* also where a step's error or an engine changed by it stopped the loop */
    payload_drop_margin(self);
    columns_free(&c);
    rcw_temperature_release(&call.temperature);
    if (batch_stats(call.stats, at, skipped) < 0 || status < 0) return NULL;
    Py_RETURN_NONE;
}

/* ---------------------------------------------------------------------------------------- */
/* predictions of a batch: score_rows                                                          */

/* A CSR row's score and variance (batch_score_dict's numbers for the dict Rows.row(i) makes of
 * it): 1 with *m and *v, 0 for the general path's case (a column outside the matrix, named by the
 * intercept's key itself or by a key the engine refuses, as batch_score_dict declines it, or by a
 * key that cannot be looked up; a column stored twice; a sum beyond float64), -1 with an error
 * that must propagate. The payload sums each stored entry's terms (row_score_add: its entry ix,
 * -1 unseen, and its value), the intercept's term last (`intercept`: its entry, -1 unseen, -3
 * none), and the sums with what the call's rows share (`call`); where their bound does not
 * certify them, by math.fsum's algorithm (row_exact_add). slot[j]: 0 column j not resolved yet,
 * -1 not to be read here, else its entry + 2 (1: unseen); seen[j]: the last row (+ 1) that held
 * column j. */
static RCW_ALWAYS_INLINE int csr_row_score(Engine *self, Table *t, const RcwCsr *c,
                                           Py_ssize_t i, Py_ssize_t *slot, Py_ssize_t *seen,
                                           PyObject *intercept_key, Py_ssize_t intercept,
                                           const RowScoreCall *call, double *m, double *v) {
    /* the arrays in locals: the writes to slot and seen cannot change them */
    const Py_ssize_t *indices = c->indices, ncols = c->ncols;
    const double *data = c->data;
    Py_ssize_t a = c->indptr[i], b = c->indptr[i + 1], l, n = 0;
    double xf;
    RowScore acc;
    row_score_init(&acc);
    for (l = a; l <= b; l++) {
        Py_ssize_t j, ix;
        if (l < b) {
            j = indices[l];
            if (j < 0 || j >= ncols || seen[j] == i + 1) return 0;
            seen[j] = i + 1;
            if (slot[j] == 0) { /* resolved at its first use in the call */
                PyObject *key = c->features == Py_None
                                    ? PyLong_FromSsize_t(j)
                                    : Py_NewRef(PyList_GET_ITEM(c->features, j));
                Py_hash_t h;
                if (key == NULL) return -1;
                if (key == intercept_key || batch_refused_key(self, key))
                    ix = -2; /* as batch_score_dict: the general path's */
                else if ((ix = (h = key_hash(key)) == -1 ? -2 : table_find(t, key, h)) == -2 &&
                         !rcw_error_recoverable()) {
                    Py_DECREF(key);
                    return -1;
                }
                Py_DECREF(key);
                if (ix == -2) PyErr_Clear(); /* the general path meets it again and raises it */
                slot[j] = ix == -2 ? -1 : ix + 2;
            }
            if (slot[j] < 0) return 0;
            ix = slot[j] - 2;
            xf = data[l];
        } else if (intercept != -3) { /* the intercept, last, as GaussianClassifier._features */
            ix = intercept;
            xf = 1.0;
        } else
            break;
        row_score_add(self, t, ix, xf, &acc);
        n++;
    }
    if (!row_score_sums(call, &acc, n, m, v)) {
        RowScoreExact exact;
        int r;
        row_exact_init(&exact);
        for (l = a; l <= b; l++) {
            Py_ssize_t ix = l < b ? slot[indices[l]] - 2 : intercept;
            if (l == b && intercept == -3) break;
            xf = l < b ? data[l] : 1.0;
            if (row_exact_add(self, t, ix, xf, &exact) < 0) return -1;
        }
        if ((r = row_exact_result(call, &exact, m, v)) <= 0) return r;
    }
    return row_score_finite(&acc, *m);
}

/* a score_rows call's rows: batch_score_dict's dicts, csr_row_score's CSR rows (their columns'
 * entries in `slot`, the intercept's term's in `intercept`, row_score_open's context in `call`) */
typedef struct {
    Engine *self;
    Py_ssize_t *slot, intercept;
    RowScoreCall call;
} BatchScoreRows;

/* row i of a score_rows call (rcw_row_score) */
static RCW_ALWAYS_INLINE int batch_row_scored(void *engine, const RcwScoreRows *s, Py_ssize_t i,
                                              double *m, double *v) {
    BatchScoreRows *d = engine;
    Table *t = &d->self->blocks.table[0];
    if (d->self->blocks.n != 1) return 0;
    if (s->is_csr)
        return csr_row_score(d->self, t, &s->csr, i, d->slot, s->seen, s->intercept, d->intercept,
                             &d->call, m, v);
    return batch_score_dict(d->self, PyList_GET_ITEM(s->rows, i), s->intercept, m,
                            s->erfc != NULL ? v : NULL, s->centre);
}

/* score_rows(rows, intercept, proba, centre=None) -> list: per row of a binary engine (one
 * block), the score m that score_native gives for the row (less the centre where given: dict
 * rows), or with proba = (first, second, temperature, noise, flips, erfc) the probabilities of
 * its two labels (rcw_binary_proba); None where the general path must serve the row (it raises
 * there what predict_one raises). rows: a list of dicts, or CSR arrays (data, indices, indptr,
 * features, ncols) as learn_rows takes them (a ValueError when two of their columns are named
 * alike, as Rows.check_names; _csr.h). None for every row of an engine of several blocks. */
static PyObject *engine_score_rows(Engine *self, PyObject *args) {
    RcwScoreRows s;
    BatchScoreRows d = {self, NULL, -3};
    PyObject *out = NULL;
    if (rcw_score_rows_open(args, &s) < 0) return NULL;
    if (s.is_csr &&
        (d.slot = PyMem_Calloc(s.csr.ncols ? s.csr.ncols : 1, sizeof(Py_ssize_t))) == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    if (enter(self) < 0) goto done;
    if (self->blocks.n == 1 &&
        row_score_open(self, s.intercept, s.is_csr, &d.intercept, &d.call) < 0) {
        leave(self);
        goto done;
    }
    out = rcw_score_rows_list(&s, batch_row_scored, &d);
    leave(self);
done:
    rcw_score_rows_close(&s);
    PyMem_Free(d.slot);
    return out;
}
