/* river_cw._engines._rda: voted RDA's compiled engine (river_cw.rda.VotedRDA, "average" and "last").
 *
 * The model's state lives here in C arrays: one feature table per block (river_cw/_engines/_table.h, as
 * river_cw/_engines/_diagonal.c's), a store of
 * records (s, first, closed, inv0, sqr0 and, once cut, inv1, sqr1: the fields of the Python
 * engine's record lists, see river_cw/_engines/rda_engine.py), the heap of pending cuts (heapq's algorithm,
 * entry for entry, so that its order is the Python engine's), and the counters. The formulas are
 * the Python engine's, in the same order, with math.fsum's exactly rounded sums (_fsum.h), so
 * both engines give the same numbers to the bit; `export`/`load` convert the state to and from
 * the Python engine's attributes, which is what a pickle holds.
 *
 * The hinge loss's temperature is calibrated on the averaged scores of every example: the engine
 * queues (label, w, logits) rows and the model adds their log losses in batches
 * (river_cw.calibration.softmax_losses over many rows, the same numbers as one row at a time).
 *
 * A `ceil(|s| / l1)` is kept as a double: the Python engine's `last` is that integer minus 1, so
 * comparisons translate exactly (every k and first stays below 2^53). Compile with
 * -ffp-contract=off.
 *
 * The object's head and the methods that are not voted RDA's mathematics (re-entry, the blocks'
 * layout, lifecycle and GC, connect) are the shell's (_shell.h), as the Gaussian engines'.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "_fsum.h"
#include "_input.h"

#define RCW_ENTRY_PAYLOAD Py_ssize_t rec; /* the feature's record */
#include "_table.h"

/* ---------------------------------------------------------------------------------------- */
/* records, feature tables, the heap of cuts                                                 */

typedef struct {
    double s, closed, inv0, sqr0, inv1, sqr1;
    int64_t first;
    int cut; /* inv1, sqr1 set (the Python record's fields 5, 6 are not None) */
} Rec;

typedef struct {
    double ceil; /* ceil(|s| / l1): the Python entry's `last` is this minus 1 */
    int64_t pushed, first;
    Py_ssize_t rec;
} Cut;

/* append a key known to be absent (room reserved) with its record */
static inline void table_append(Table *t, PyObject *key, Py_hash_t hash, Py_ssize_t rec) {
    table_push(t, key, hash)->rec = rec;
}

/* heapq's order on (last, pushed, first, rec): `pushed` is unique, so it settles every tie */
static inline int cut_less(const Cut *a, const Cut *b) {
    return a->ceil < b->ceil || (a->ceil == b->ceil && a->pushed < b->pushed);
}

/* heapq._siftdown */
static void heap_siftdown(Cut *heap, Py_ssize_t start, Py_ssize_t pos) {
    Cut item = heap[pos];
    while (pos > start) {
        Py_ssize_t parent = (pos - 1) >> 1;
        if (!cut_less(&item, &heap[parent])) break;
        heap[pos] = heap[parent];
        pos = parent;
    }
    heap[pos] = item;
}

/* heapq._siftup */
static void heap_siftup(Cut *heap, Py_ssize_t n, Py_ssize_t pos) {
    Py_ssize_t start = pos, child = 2 * pos + 1;
    Cut item = heap[pos];
    while (child < n) {
        Py_ssize_t right = child + 1;
        if (right < n && !cut_less(&heap[child], &heap[right])) child = right;
        heap[pos] = heap[child];
        pos = child;
        child = 2 * pos + 1;
    }
    heap[pos] = item;
    heap_siftdown(heap, start, pos);
}

/* ---------------------------------------------------------------------------------------- */
/* the engine                                                                                */

typedef struct {
    PyObject *key; /* a reference, for the length of a call */
    Py_hash_t hash;
    double v;
} Feat;

#define QUEUE_ROWS 256 /* calibration rows before the model is asked to add them up */

/* the engine's payload, after the shell's head (_shell.h: the blocks are its, one feature table
 * each; voted RDA keeps no marks and takes no margin) */
#define RCW_ENGINE_PAYLOAD                                                                       \
    double l1, eta;                                                                              \
    int log_loss, conservative, last; /* loss "log"; conservative; prediction "last" */          \
    Rec *recs;                                                                                   \
    Py_ssize_t nrecs, recs_cap;                                                                  \
    Cut *cuts;                                                                                   \
    Py_ssize_t ncuts, cuts_cap, live_cuts;                                                       \
    int64_t k, c, t, pushed;                                                                     \
    double inv, sqr;                                                                             \
    /* per call: the features of x and their entries, block-major (ixs[b * nfeats + i]) */      \
    Feat *feats;                                                                                 \
    Py_ssize_t nfeats, feats_cap;                                                                \
    Py_ssize_t *ixs;                                                                             \
    Py_ssize_t ixs_cap;                                                                          \
    double *zs; /* per block: scores, then the calibration's */                                  \
    Py_ssize_t zs_cap;                                                                           \
    /* calibration rows (label, w, logits...), `width` doubles each */                           \
    double *queue;                                                                               \
    Py_ssize_t nqueue, width;
#define RCW_ENGINE_NAME "voted RDA"
#define RCW_MODULE_NAME "river_cw._engines._rda"
#define RCW_BAD_INPUT_VALUE_ERROR 1 /* river_cw._engines.rda_engine catches ValueError around its sums */
#include "_shell.h"

static void release_feats(Engine *self) {
    Py_ssize_t i;
    for (i = 0; i < self->nfeats; i++) Py_CLEAR(self->feats[i].key);
    self->nfeats = 0;
}

/* the call's features released and the engine left */
static void finish(Engine *self) {
    release_feats(self);
    leave(self);
}

/* the shell's hooks: the features of x are the scratch a call holds */
static void payload_drop_margin(Engine *self) { release_feats(self); }

static int payload_traverse(Engine *self, visitproc visit, void *arg) {
    Py_ssize_t i;
    for (i = 0; i < self->nfeats; i++) Py_VISIT(self->feats[i].key);
    return 0;
}

static void payload_clear(Engine *self) {}

static void payload_free(Engine *self) {
    PyMem_Free(self->recs);
    PyMem_Free(self->cuts);
    PyMem_Free(self->feats);
    PyMem_Free(self->ixs);
    PyMem_Free(self->zs);
    PyMem_Free(self->queue);
}

static Py_ssize_t payload_bytes(const Engine *self) {
    Py_ssize_t size = sizeof(Rec) * self->recs_cap + sizeof(Cut) * self->cuts_cap +
                      sizeof(Feat) * self->feats_cap + sizeof(Py_ssize_t) * self->ixs_cap +
                      sizeof(double) * self->zs_cap;
    if (self->queue != NULL) size += sizeof(double) * QUEUE_ROWS * self->width;
    return size;
}

/* Engine(l1, eta, log_loss, conservative, last) */
static PyObject *engine_new(PyTypeObject *type, PyObject *args, PyObject *kwds) {
    static char *kwlist[] = {"l1", "eta", "log_loss", "conservative", "last", NULL};
    double l1, eta;
    int log_loss, conservative, last;
    Engine *self;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "ddppp", kwlist, &l1, &eta, &log_loss,
                                     &conservative, &last))
        return NULL;
    if ((self = engine_alloc(type)) == NULL) return NULL;
    self->l1 = l1;
    self->eta = eta;
    self->log_loss = log_loss;
    self->conservative = conservative;
    self->last = last;
    return (PyObject *)self;
}

/* ---------------------------------------------------------------------------------------- */
/* the closed forms (river_cw._engines.rda_engine.PythonRDA._newest / _totals), with the counters bound */

typedef struct {
    int totals;
    double threshold, scale;    /* newest: l1 k and eta sqrt(k) */
    double inv_k, sqr_k, l1, eta; /* totals: the prefix sums now */
} Weight;

static void newest(const Engine *self, Weight *w) {
    w->totals = 0;
    w->threshold = self->l1 * (double)self->k;
    w->scale = self->eta * sqrt((double)(self->k ? self->k : 1));
}

static void totals(const Engine *self, Weight *w) {
    double r = sqrt((double)(self->k ? self->k : 1));
    w->totals = 1;
    w->inv_k = self->inv + (double)self->c / r;
    w->sqr_k = self->sqr + (double)self->c * r;
    w->l1 = self->l1;
    w->eta = self->eta;
}

static inline double weight_of(const Weight *w, const Rec *r) {
    double inv1, sqr1;
    if (!w->totals)
        return fabs(r->s) > w->threshold ? -(r->s - copysign(w->threshold, r->s)) / w->scale : 0.0;
    inv1 = r->cut ? r->inv1 : w->inv_k;
    sqr1 = r->cut ? r->sqr1 : w->sqr_k;
    return r->closed -
           (r->s * (inv1 - r->inv0) - copysign(w->l1, r->s) * (sqr1 - r->sqr0)) / w->eta;
}

/* weight_of / divisor; where the total overflows float64 and the average need not (a sum near
 * the limit, carried over many predictors), the same closed form with each term divided first
 * (river_cw._engines.rda_engine.PythonRDA.weight_blocks) */
static double averaged_weight(const Weight *w, const Rec *r, double divisor) {
    double v = weight_of(w, r), inv1, sqr1;
    if (!w->totals || isfinite(v)) return v / divisor;
    inv1 = r->cut ? r->inv1 : w->inv_k;
    sqr1 = r->cut ? r->sqr1 : w->sqr_k;
    return r->closed / divisor - (r->s * ((inv1 - r->inv0) / divisor) -
                                  copysign(w->l1, r->s) * ((sqr1 - r->sqr0) / divisor)) /
                                     w->eta;
}

/* ---------------------------------------------------------------------------------------- */
/* reading x                                                                                 */

static int add_feat(Engine *self, PyObject *key, double v) {
    Feat *f;
    Py_hash_t h = key_hash(key);
    if (h == -1) return -1;
    f = &self->feats[self->nfeats++];
    Py_INCREF(key);
    f->key = key;
    f->hash = h;
    f->v = v;
    return 0;
}

/* x's features into self->feats, plus `intercept` (NULL: none) with value 1.0; then their
 * entries in every block. 0; 1 when x is not for this path (a value other than a float, an int
 * within float64 or a bool, or the intercept among x's keys; no error set); -1 on error */
static int collect(Engine *self, PyObject *x, PyObject *intercept) {
    PyObject *key, *value;
    Py_ssize_t pos = 0, n = PyDict_GET_SIZE(x) + (intercept != NULL), b, i;
    double v;
    if (rcw_grow((void **)&self->feats, &self->feats_cap, n, sizeof(Feat)) < 0 ||
        rcw_grow((void **)&self->ixs, &self->ixs_cap, n * self->blocks.n, sizeof(Py_ssize_t)) < 0 ||
        rcw_grow((void **)&self->zs, &self->zs_cap, 2 * self->blocks.n + 2, sizeof(double)) < 0)
        return -1;
    while (PyDict_Next(x, &pos, &key, &value)) {
        if (key == intercept || plain_value(value, &v)) return 1;
        if (self->nfeats == n) return 1; /* x grew under us */
        if (add_feat(self, key, v) < 0) return -1;
    }
    if (intercept != NULL && add_feat(self, intercept, 1.0) < 0) return -1;
    for (b = 0; b < self->blocks.n; b++)
        for (i = 0; i < self->nfeats; i++) {
            Py_ssize_t ix =
                table_find(&self->blocks.table[b], self->feats[i].key, self->feats[i].hash);
            if (ix == -2) return -1;
            self->ixs[b * self->nfeats + i] = ix;
        }
    return 0;
}

/* an error of collect on the general path: -1 for the Python engine's "bad input" (a
 * TypeError, ValueError or OverflowError from a key's == or hash: bad_input_error), cleared;
 * -2 for an error to propagate */
static int bad_or_error(void) {
    if (!bad_input_error()) return -2;
    PyErr_Clear();
    return -1;
}

/* ---------------------------------------------------------------------------------------- */
/* scores                                                                                    */

static inline double term(Engine *self, const Table *t, const Py_ssize_t *ixs, Py_ssize_t i,
                          const Weight *w) {
    Py_ssize_t ix = ixs[i];
    return self->feats[i].v * (ix < 0 ? 0.0 : weight_of(w, &self->recs[t->entries[ix].rec]));
}

/* math.fsum of x's terms in block b; 0, -1 (fsum raised: bad input, cleared), -2 (error) */
static int block_score(Engine *self, Py_ssize_t b, const Weight *w, double *out) {
    const Table *t = &self->blocks.table[b];
    const Py_ssize_t *ixs = self->ixs + b * self->nfeats;
    Py_ssize_t i;
    DdSum acc;
    Msum slow;
    ddsum_init(&acc);
    for (i = 0; i < self->nfeats; i++) ddsum_add(&acc, term(self, t, ixs, i, w));
    if (ddsum_certified(&acc, self->nfeats, out)) return 0;
    msum_init(&slow);
    for (i = 0; i < self->nfeats; i++)
        if (msum_add(&slow, term(self, t, ixs, i, w)) < 0) {
            msum_free(&slow);
            return -2;
        }
    if (msum_result(&slow, out) < 0) return bad_or_error();
    return 0;
}

/* w_b . x / divisor into zs[0..nblocks), checked as river_cw._engines.rda_engine.PythonRDA._dot checks them
 * (their fsum finite); 0, -1 (bad input), -2 (error) */
static int scores_into(Engine *self, const Weight *w, double divisor, double *zs) {
    Py_ssize_t b;
    int r;
    Fsum all;
    double total;
    for (b = 0; b < self->blocks.n; b++) {
        if ((r = block_score(self, b, w, &zs[b])) < 0) return r;
        zs[b] /= divisor;
    }
    fsum_init(&all);
    for (b = 0; b < self->blocks.n; b++)
        if (fsum_add(&all, zs[b]) < 0) {
            fsum_free(&all);
            return -2;
        }
    if (fsum_result(&all, &total) < 0) return bad_or_error();
    return isfinite(total) ? 0 : -1;
}

/* the weight and divisor predictions use (river_cw._engines.rda_engine.PythonRDA._weight) */
static double prediction_weight(const Engine *self, Weight *w) {
    if (self->last) {
        newest(self, w);
        return 1.0;
    }
    totals(self, w);
    return (double)(self->t ? self->t : 1);
}

/* ---------------------------------------------------------------------------------------- */
/* learning (river_cw._engines.rda_engine.PythonRDA.update, _plan, _step, _schedule_cut) */

typedef struct {
    Py_ssize_t block[2];
    double sign[2];
    int n;
} Pairs;

static void schedule_cut(Engine *self, Py_ssize_t ri) {
    Rec *r = &self->recs[ri];
    double bound = fabs(r->s) / self->l1, ceiling;
    Cut cut;
    if (bound == INFINITY) return;
    ceiling = ceil(bound);
    if (ceiling < (double)(r->first + 1)) { /* zero from the start: the segment adds nothing */
        r->inv1 = r->inv0;
        r->sqr1 = r->sqr0;
        r->cut = 1;
        return;
    }
    cut.ceil = ceiling;
    cut.pushed = ++self->pushed;
    cut.first = r->first;
    cut.rec = ri;
    self->cuts[self->ncuts++] = cut; /* room reserved by the caller */
    heap_siftdown(self->cuts, 0, self->ncuts - 1);
    if (self->ncuts > 2 * self->live_cuts + 1024) { /* drop the entries of closed segments */
        Py_ssize_t i, n = 0;
        for (i = 0; i < self->ncuts; i++)
            if (self->recs[self->cuts[i].rec].first == self->cuts[i].first)
                self->cuts[n++] = self->cuts[i];
        self->ncuts = n;
        for (i = n / 2 - 1; i >= 0; i--) heap_siftup(self->cuts, n, i);
        self->live_cuts = n;
    }
}

/* room for the records, entries and cuts a step writes, before anything changes */
static int step_reserve(Engine *self, const Pairs *p) {
    Py_ssize_t fresh = 0, touched = 0, j, i;
    for (j = 0; j < p->n; j++) {
        Py_ssize_t b = p->block[j], n = 0;
        for (i = 0; i < self->nfeats; i++) {
            if (self->feats[i].v == 0.0) continue;
            touched++;
            n += self->ixs[b * self->nfeats + i] < 0;
        }
        if (table_reserve(&self->blocks.table[b], n) < 0) return -1;
        fresh += n;
    }
    if (rcw_grow((void **)&self->recs, &self->recs_cap, self->nrecs + fresh, sizeof(Rec)) < 0 ||
        rcw_grow((void **)&self->cuts, &self->cuts_cap, self->ncuts + touched, sizeof(Cut)) < 0)
        return -1;
    return 0;
}

/* retire w_k, add the subgradient entries -step sign x_f, start w_{k+1} */
static void take_step(Engine *self, const Pairs *p, double step) {
    int64_t k = self->k;
    Weight w;
    Py_ssize_t j, i;
    if (k > 0) {
        double r = sqrt((double)k);
        self->inv += (double)self->c / r;
        self->sqr += (double)self->c * r;
    }
    while (self->ncuts && self->cuts[0].ceil <= (double)(k + 1)) { /* last <= k */
        Cut top = self->cuts[0];
        Rec *r = &self->recs[top.rec];
        self->cuts[0] = self->cuts[--self->ncuts];
        if (self->ncuts) heap_siftup(self->cuts, self->ncuts, 0);
        if (r->first == top.first) { /* still the same segment */
            r->inv1 = self->inv;
            r->sqr1 = self->sqr;
            r->cut = 1;
        }
    }
    self->k = k + 1;
    self->c = 0;
    if (step == 0.0) return;
    totals(self, &w); /* c_{k+1} = 0: the sums up to k */
    for (j = 0; j < p->n; j++) {
        Table *t = &self->blocks.table[p->block[j]];
        const Py_ssize_t *ixs = self->ixs + p->block[j] * self->nfeats;
        for (i = 0; i < self->nfeats; i++) {
            Feat *f = &self->feats[i];
            double g;
            Py_ssize_t ri;
            Rec *r;
            if (f->v == 0.0) continue;
            g = -step * p->sign[j] * f->v;
            if (ixs[i] < 0) {
                ri = self->nrecs++;
                r = &self->recs[ri];
                r->s = g;
                r->closed = 0.0;
                table_append(t, f->key, f->hash, ri);
            } else {
                ri = t->entries[ixs[i]].rec;
                r = &self->recs[ri];
                r->closed = weight_of(&w, r);
                r->s = r->s + g;
            }
            r->first = k + 1;
            r->inv0 = self->inv;
            r->sqr0 = self->sqr;
            r->inv1 = r->sqr1 = 0.0;
            r->cut = 0;
            if (self->l1 > 0) schedule_cut(self, ri);
        }
    }
}

/* the calibration row of this example: the prediction scores' logits, unless they overflow */
static int queue_row(Engine *self, int label, double w) {
    Weight pw;
    double divisor = prediction_weight(self, &pw), *zs = self->zs + self->blocks.n, *row;
    Py_ssize_t nz = self->blocks.n == 1 ? 2 : self->blocks.n, width = nz + 2;
    int r = scores_into(self, &pw, divisor, zs);
    if (r == -1) return 0; /* the averaged scores overflow: not used for calibration */
    if (r < 0) return r;
    if (self->nqueue && self->width != width) {
        PyErr_SetString(PyExc_RuntimeError, "the calibration queue was not flushed");
        return -2;
    }
    if (self->nqueue == 0) { /* room for rows of this width */
        double *q = PyMem_Realloc(self->queue, sizeof(double) * QUEUE_ROWS * width);
        if (q == NULL) {
            PyErr_NoMemory();
            return -2;
        }
        self->queue = q;
        self->width = width;
    }
    row = self->queue + self->nqueue * width;
    row[0] = label;
    row[1] = w;
    if (self->blocks.n == 1) {
        row[2] = 0.0;
        row[3] = zs[0];
    } else
        memcpy(row + 2, zs, sizeof(double) * nz);
    self->nqueue++;
    return 0;
}

enum { LEARNED = 0, QUEUE_FULL = 1, SKIPPED = 2 };

/* one example, x in self->feats: 0 learned (or nothing to learn), 1 learned and the calibration
 * queue is full, 2 skipped (a sum it would store is beyond float64: nothing changed), -1 bad
 * input (nothing changed, no error set), -2 error */
static int learn(Engine *self, const Pairs *p, double w, int calibrate) {
    Weight nw;
    double *zs = self->zs, margin, step = 0.0;
    int r, update, label;
    Py_ssize_t j, i;
    newest(self, &nw);
    if ((r = scores_into(self, &nw, 1.0, zs)) < 0) return r;
    {
        Fsum m;
        fsum_init(&m);
        for (j = 0; j < p->n; j++) fsum_add(&m, p->sign[j] * zs[p->block[j]]);
        if (fsum_result(&m, &margin) < 0) { /* two finite scores whose difference overflows */
            PyErr_Clear();
            margin = 0.0;
            for (j = 0; j < p->n; j++) margin += p->sign[j] * zs[p->block[j]];
        }
    }
    update = !self->conservative || margin <= 0;
    if (update) {
        if (!self->log_loss)
            step = margin < 1 ? 1.0 : 0.0;
        else if (margin < 0)
            step = 1.0 / (1.0 + exp(margin));
        else
            step = exp(-margin) / (1.0 + exp(-margin));
        if (w != 1.0) step = w * step;
        if (step != 0.0) { /* _plan: every sum it stores finite */
            Weight tw;
            totals(self, &tw);
            for (j = 0; j < p->n; j++) {
                const Table *t = &self->blocks.table[p->block[j]];
                const Py_ssize_t *ixs = self->ixs + p->block[j] * self->nfeats;
                for (i = 0; i < self->nfeats; i++) {
                    double v = self->feats[i].v, g;
                    if (v == 0.0) continue;
                    g = -step * p->sign[j] * v;
                    if (ixs[i] < 0) {
                        if (!isfinite(g)) return SKIPPED;
                    } else {
                        const Rec *rec = &self->recs[t->entries[ixs[i]].rec];
                        if (!(isfinite(rec->s + g) && isfinite(weight_of(&tw, rec))))
                            return SKIPPED;
                    }
                }
            }
            if (step_reserve(self, p) < 0) return -2;
        }
    }
    if (calibrate) {
        label = self->blocks.n == 1 ? p->sign[0] == 1.0 : (int)p->block[0];
        if ((r = queue_row(self, label, w)) < 0) return r;
    }
    if (update) take_step(self, p, step);
    self->c++;
    self->t++;
    return calibrate && self->nqueue >= QUEUE_ROWS ? QUEUE_FULL : LEARNED;
}

/* learn_one(x, y, w, class_index, intercept) -> 0, 1 (the queue is full), 2 (skipped) or -1:
 * LinearClassifier.learn_one of a binary model for a known label y (its sign from class_index:
 * block 1 is +1) and a float weight w > 0, x's values read as river_cw.validation.as_floats reads
 * them and `intercept` (None: none) appended with value 1.0. -1: the general path's case (any
 * other model, label, weight, or x, including any x it would refuse): nothing changed, no error
 * set. Calibrates when the loss is the hinge and two labels are known. */
static PyObject *engine_learn_one(Engine *self, PyObject *const *args, Py_ssize_t nargs) {
    PyObject *x, *intercept;
    double w;
    Pairs p;
    int r;
    if (nargs != 5 || !PyDict_Check(args[3])) {
        PyErr_SetString(PyExc_TypeError, "learn_one(x, y, w, class_index, intercept)");
        return NULL;
    }
    x = args[0];
    intercept = args[4] == Py_None ? NULL : args[4];
    if ((r = rcw_binary_case(args, self->blocks.n, &w, &p.sign[0])) <= 0)
        return r < 0 ? NULL : PyLong_FromLong(-1);
    p.n = 1;
    p.block[0] = 0;
    if (enter(self) < 0) return NULL;
    r = collect(self, x, intercept);
    if (r == 0)
        r = learn(self, &p, w, !self->log_loss && PyDict_GET_SIZE(args[3]) > 1);
    else if (r > 0)
        r = -1;
    else if (rcw_error_recoverable()) { /* the general path raises it again */
        PyErr_Clear();
        r = -1;
    } else
        r = -2;
    finish(self);
    if (r == -2) return NULL;
    return PyLong_FromLong(r);
}

/* x of the general path: a dict of floats and ints (river_cw.validation.as_floats), the
 * intercept among them; 0, or NULL with the error raised (a bad input named) */
static int collect_general(Engine *self, PyObject *x) {
    int r;
    if (!PyDict_Check(x)) {
        PyErr_SetString(PyExc_TypeError, "x must be a dict");
        return -1;
    }
    r = collect(self, x, NULL);
    if (r < 0 && bad_or_error() == -2) return -1;
    if (r != 0) {
        raise_bad_input(x);
        return -1;
    }
    return 0;
}

/* update(x, pairs, w, calibrate) -> 0, 1 (the queue is full) or 2 (skipped): the model's
 * `_update` hook; a bad x raises (named) and changes nothing */
static PyObject *engine_update(Engine *self, PyObject *args) {
    PyObject *x, *pairs;
    double w;
    int calibrate, r = -2;
    Pairs p;
    Py_ssize_t j;
    if (!PyArg_ParseTuple(args, "OO!dp", &x, &PyTuple_Type, &pairs, &w, &calibrate)) return NULL;
    if (PyTuple_GET_SIZE(pairs) < 1 || PyTuple_GET_SIZE(pairs) > 2) {
        PyErr_SetString(PyExc_ValueError, "pairs: a tuple of one or two (block, sign)");
        return NULL;
    }
    p.n = (int)PyTuple_GET_SIZE(pairs);
    for (j = 0; j < p.n; j++) {
        long sign;
        if (!PyArg_ParseTuple(PyTuple_GET_ITEM(pairs, j), "nl", &p.block[j], &sign)) return NULL;
        if (p.block[j] < 0 || p.block[j] >= self->blocks.n) {
            PyErr_SetString(PyExc_IndexError, "list index out of range");
            return NULL;
        }
        p.sign[j] = (double)sign;
    }
    if (enter(self) < 0) return NULL;
    if (collect_general(self, x) == 0) {
        r = learn(self, &p, w, calibrate);
        if (r == -1) raise_bad_input(x);
    }
    finish(self);
    if (r < 0) return NULL;
    return PyLong_FromLong(r);
}

/* scores(x, prediction) -> [w_b . x for every block]: the newest predictor's, or (prediction
 * true) the one predictions use; a bad x raises, named */
static PyObject *engine_scores(Engine *self, PyObject *args) {
    PyObject *x, *out = NULL;
    int prediction, r;
    Py_ssize_t b;
    Weight w;
    double divisor = 1.0;
    if (!PyArg_ParseTuple(args, "Op", &x, &prediction)) return NULL;
    if (enter(self) < 0) return NULL;
    if (collect_general(self, x) < 0) goto done;
    if (prediction)
        divisor = prediction_weight(self, &w);
    else
        newest(self, &w);
    r = scores_into(self, &w, divisor, self->zs);
    if (r == -1) raise_bad_input(x);
    if (r < 0) goto done;
    if ((out = PyList_New(self->blocks.n)) == NULL) goto done;
    for (b = 0; b < self->blocks.n; b++) {
        PyObject *f = PyFloat_FromDouble(self->zs[b]);
        if (f == NULL) {
            Py_CLEAR(out);
            goto done;
        }
        PyList_SET_ITEM(out, b, f);
    }
done:
    finish(self);
    return out;
}

/* take_calibration() -> (bytes of the queued rows, row width); empties the queue */
static PyObject *engine_take_calibration(Engine *self, PyObject *unused) {
    PyObject *out = Py_BuildValue(
        "y#n", (const char *)self->queue, (Py_ssize_t)(sizeof(double) * self->nqueue * self->width),
        self->width);
    if (out != NULL) self->nqueue = 0;
    return out;
}

/* ---------------------------------------------------------------------------------------- */
/* the predictor's weights                                                                   */

/* weight_blocks() -> per block {feature: weight} of the predictor predictions use, the
 * non-zero ones (river_cw._engines.rda_engine.PythonRDA.weight_blocks) */
static PyObject *engine_weight_blocks(Engine *self, PyObject *unused) {
    PyObject *out;
    Weight w;
    double divisor = prediction_weight(self, &w);
    Py_ssize_t b, i;
    if ((out = PyList_New(self->blocks.n)) == NULL) return NULL;
    for (b = 0; b < self->blocks.n; b++) {
        Table *t = &self->blocks.table[b];
        PyObject *d = PyDict_New();
        if (d == NULL) goto fail;
        PyList_SET_ITEM(out, b, d);
        for (i = 0; i < t->used; i++) {
            double v = averaged_weight(&w, &self->recs[t->entries[i].rec], divisor);
            PyObject *f;
            if (!v) continue;
            if ((f = PyFloat_FromDouble(v)) == NULL) goto fail;
            if (PyDict_SetItem(d, t->entries[i].key, f) < 0) {
                Py_DECREF(f);
                goto fail;
            }
            Py_DECREF(f);
        }
    }
    return out;
fail:
    Py_DECREF(out);
    return NULL;
}

/* ---------------------------------------------------------------------------------------- */
/* state: the Python engine's attributes                                                     */

static PyObject *record_list(const Rec *r) {
    if (r->cut)
        return Py_BuildValue("[dLddddd]", r->s, (long long)r->first, r->closed, r->inv0, r->sqr0,
                             r->inv1, r->sqr1);
    return Py_BuildValue("[dLdddOO]", r->s, (long long)r->first, r->closed, r->inv0, r->sqr0,
                         Py_None, Py_None);
}

/* export() -> {"_blocks", "_cuts", "_live_cuts", "_k", "_c", "_t", "_inv", "_sqr", "_pushed"}
 * as the Python engine keeps them (a heap entry holds its record's list itself) */
static PyObject *engine_export(Engine *self, PyObject *unused) {
    PyObject **lists, *blocks = NULL, *cuts = NULL, *out = NULL;
    Py_ssize_t b, i;
    if ((lists = PyMem_Calloc(self->nrecs ? self->nrecs : 1, sizeof(PyObject *))) == NULL)
        return PyErr_NoMemory();
    if ((blocks = PyList_New(self->blocks.n)) == NULL) goto done;
    for (b = 0; b < self->blocks.n; b++) {
        Table *t = &self->blocks.table[b];
        PyObject *d = PyDict_New();
        if (d == NULL) goto done;
        PyList_SET_ITEM(blocks, b, d);
        for (i = 0; i < t->used; i++) {
            Py_ssize_t ri = t->entries[i].rec;
            if ((lists[ri] = record_list(&self->recs[ri])) == NULL) goto done;
            if (PyDict_SetItem(d, t->entries[i].key, lists[ri]) < 0) goto done;
        }
    }
    if ((cuts = PyList_New(self->ncuts)) == NULL) goto done;
    for (i = 0; i < self->ncuts; i++) {
        Cut *c = &self->cuts[i];
        PyObject *ceiling, *last, *one, *entry;
        if (lists[c->rec] == NULL) {
            PyErr_SetString(PyExc_RuntimeError, "a cut of a record no block holds");
            goto done;
        }
        if ((ceiling = PyLong_FromDouble(c->ceil)) == NULL) goto done;
        one = PyLong_FromLong(1);
        last = one == NULL ? NULL : PyNumber_Subtract(ceiling, one);
        Py_DECREF(ceiling);
        Py_XDECREF(one);
        if (last == NULL) goto done;
        entry = Py_BuildValue("NLLO", last, (long long)c->pushed, (long long)c->first,
                              lists[c->rec]);
        if (entry == NULL) goto done;
        PyList_SET_ITEM(cuts, i, entry);
    }
    out = Py_BuildValue("{sOsOsnsLsLsLsdsdsL}", "_blocks", blocks, "_cuts", cuts, "_live_cuts",
                        self->live_cuts, "_k", (long long)self->k, "_c", (long long)self->c, "_t",
                        (long long)self->t, "_inv", self->inv, "_sqr", self->sqr, "_pushed",
                        (long long)self->pushed);
done:
    for (i = 0; i < self->nrecs; i++) Py_XDECREF(lists[i]);
    PyMem_Free(lists);
    Py_XDECREF(blocks);
    Py_XDECREF(cuts);
    return out;
}

static int read_double(PyObject *o, double *out) {
    *out = PyFloat_AsDouble(o);
    return *out == -1.0 && PyErr_Occurred() ? -1 : 0;
}

static int read_int64(PyObject *o, int64_t *out) {
    long long v = PyLong_AsLongLong(o);
    if (v == -1 && PyErr_Occurred()) return -1;
    *out = v;
    return 0;
}

static int read_record(PyObject *list, Rec *r) {
    PyObject *f5, *f6;
    if (!PyList_Check(list) || PyList_GET_SIZE(list) != 7) {
        PyErr_SetString(PyExc_ValueError, "a record is [s, first, closed, inv0, sqr0, inv1, sqr1]");
        return -1;
    }
    if (read_double(PyList_GET_ITEM(list, 0), &r->s) < 0 ||
        read_int64(PyList_GET_ITEM(list, 1), &r->first) < 0 ||
        read_double(PyList_GET_ITEM(list, 2), &r->closed) < 0 ||
        read_double(PyList_GET_ITEM(list, 3), &r->inv0) < 0 ||
        read_double(PyList_GET_ITEM(list, 4), &r->sqr0) < 0)
        return -1;
    f5 = PyList_GET_ITEM(list, 5);
    f6 = PyList_GET_ITEM(list, 6);
    r->cut = f5 != Py_None;
    r->inv1 = r->sqr1 = 0.0;
    if (r->cut && (read_double(f5, &r->inv1) < 0 || read_double(f6, &r->sqr1) < 0)) return -1;
    return 0;
}

/* load's blocks: each dict {feature: record list} into a table, its records into the store;
 * ids maps each record list's id to its record (the cuts name their records by the list). 0, or
 * -1 with an error */
static int load_blocks(Engine *self, PyObject *blocks, PyObject *ids) {
    Py_ssize_t nb = PyList_GET_SIZE(blocks), b;
    if (blocks_reserve(&self->blocks, nb ? nb : 1) < 0) return -1;
    blocks_clear(&self->blocks);
    for (b = 0; b < nb; b++) {
        PyObject *d = PyList_GET_ITEM(blocks, b), *key, *list;
        Py_ssize_t pos = 0;
        Table *t = &self->blocks.table[b];
        if (!PyDict_Check(d)) {
            PyErr_SetString(PyExc_TypeError, "load: a block is a dict");
            return -1;
        }
        if (block_init(&self->blocks, t) < 0) return -1;
        self->blocks.n++;
        if (table_reserve(t, PyDict_GET_SIZE(d)) < 0 ||
            rcw_grow((void **)&self->recs, &self->recs_cap, self->nrecs + PyDict_GET_SIZE(d),
                     sizeof(Rec)) < 0)
            return -1;
        while (PyDict_Next(d, &pos, &key, &list)) {
            Py_hash_t h = PyObject_Hash(key);
            PyObject *id, *ri;
            int failed;
            if (h == -1 || read_record(list, &self->recs[self->nrecs]) < 0) return -1;
            if ((id = PyLong_FromVoidPtr(list)) == NULL) return -1;
            if ((ri = PyLong_FromSsize_t(self->nrecs)) == NULL) {
                Py_DECREF(id);
                return -1;
            }
            failed = PyDict_SetItem(ids, id, ri);
            Py_DECREF(id);
            Py_DECREF(ri);
            if (failed < 0) return -1;
            table_append(t, key, h, self->nrecs++);
        }
    }
    if (self->blocks.n == 0) { /* keep one block, as a new engine has */
        if (block_init(&self->blocks, &self->blocks.table[0]) < 0) return -1;
        self->blocks.n = 1;
    }
    return 0;
}

/* load's heap of cuts, each (last, n, first, record list), its record found through ids; 0, or
 * -1 with an error */
static int load_cuts(Engine *self, PyObject *cuts, PyObject *ids) {
    Py_ssize_t i;
    if (rcw_grow((void **)&self->cuts, &self->cuts_cap, PyList_GET_SIZE(cuts), sizeof(Cut)) < 0)
        return -1;
    for (i = 0; i < PyList_GET_SIZE(cuts); i++) {
        PyObject *entry = PyList_GET_ITEM(cuts, i), *last, *one, *id, *ri;
        Cut *c = &self->cuts[i];
        if (!PyTuple_Check(entry) || PyTuple_GET_SIZE(entry) != 4) {
            PyErr_SetString(PyExc_ValueError, "load: a cut is (last, n, first, record)");
            return -1;
        }
        if ((one = PyLong_FromLong(1)) == NULL) return -1;
        last = PyNumber_Add(PyTuple_GET_ITEM(entry, 0), one);
        Py_DECREF(one);
        if (last == NULL) return -1;
        c->ceil = PyLong_AsDouble(last);
        Py_DECREF(last);
        if (c->ceil == -1.0 && PyErr_Occurred()) return -1;
        if (read_int64(PyTuple_GET_ITEM(entry, 1), &c->pushed) < 0 ||
            read_int64(PyTuple_GET_ITEM(entry, 2), &c->first) < 0)
            return -1;
        if ((id = PyLong_FromVoidPtr(PyTuple_GET_ITEM(entry, 3))) == NULL) return -1;
        ri = PyDict_GetItemWithError(ids, id);
        Py_DECREF(id);
        if (ri == NULL) {
            if (!PyErr_Occurred())
                PyErr_SetString(PyExc_ValueError, "load: a cut of a record no block holds");
            return -1;
        }
        c->rec = PyLong_AsSsize_t(ri);
        self->ncuts = i + 1;
    }
    return 0;
}

/* load's counters, state[name] read by reader into field; 0, or -1 with an error */
#define LOAD(name, reader, field)                                                              \
    if ((item = PyDict_GetItemString(state, name)) == NULL || reader(item, field) < 0) {      \
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "load: " name " is missing"); \
        return -1;                                                                             \
    }

static int load_counters(Engine *self, PyObject *state) {
    PyObject *item;
    int64_t live;
    LOAD("_live_cuts", read_int64, &live);
    self->live_cuts = (Py_ssize_t)live;
    LOAD("_k", read_int64, &self->k);
    LOAD("_c", read_int64, &self->c);
    LOAD("_t", read_int64, &self->t);
    LOAD("_inv", read_double, &self->inv);
    LOAD("_sqr", read_double, &self->sqr);
    LOAD("_pushed", read_int64, &self->pushed);
    return 0;
}
#undef LOAD

/* load(state): the Python engine's attributes (as `export` gives them) into an empty engine */
static PyObject *engine_load(Engine *self, PyObject *state) {
    PyObject *blocks, *cuts, *ids;
    int failed;
    if (!PyDict_Check(state) || (blocks = PyDict_GetItemString(state, "_blocks")) == NULL ||
        (cuts = PyDict_GetItemString(state, "_cuts")) == NULL || !PyList_Check(blocks) ||
        !PyList_Check(cuts)) {
        PyErr_SetString(PyExc_ValueError, "load: a state with the lists _blocks and _cuts");
        return NULL;
    }
    if (self->nrecs || self->blocks.n != 1 || self->blocks.table[0].used) {
        PyErr_SetString(PyExc_RuntimeError, "load: the engine is not new");
        return NULL;
    }
    if (enter(self) < 0) return NULL;
    ids = PyDict_New(); /* id(record list) -> its record */
    failed = ids == NULL || load_blocks(self, blocks, ids) < 0 || load_cuts(self, cuts, ids) < 0 ||
             load_counters(self, state) < 0;
    Py_XDECREF(ids);
    leave(self);
    if (failed) return NULL;
    Py_RETURN_NONE;
}

static PyObject *engine_get_k(Engine *self, void *closure) { return PyLong_FromLongLong(self->k); }

static PyObject *engine_get_ncuts(Engine *self, void *closure) {
    return PyLong_FromSsize_t(self->ncuts);
}

static PyObject *engine_get_live_cuts(Engine *self, void *closure) {
    return PyLong_FromSsize_t(self->live_cuts);
}

static PyMethodDef engine_methods[] = {
    {"learn_one", (PyCFunction)(void (*)(void))engine_learn_one, METH_FASTCALL,
     "learn_one of a binary model for a known label; -1: the general path's case."},
    {"update", (PyCFunction)engine_update, METH_VARARGS,
     "The model's _update(x, pairs, w), with whether to calibrate."},
    {"scores", (PyCFunction)engine_scores, METH_VARARGS,
     "w_b . x for every block: the newest predictor's, or the one predictions use."},
    {"take_calibration", (PyCFunction)engine_take_calibration, METH_NOARGS,
     "(bytes of the queued calibration rows, row width); empties the queue."},
    {"weight_blocks", (PyCFunction)engine_weight_blocks, METH_NOARGS,
     "Per block, {feature: weight} of the predictor predictions use."},
    {"export", (PyCFunction)engine_export, METH_NOARGS, "The Python engine's state attributes."},
    {"load", (PyCFunction)engine_load, METH_O, "Load the Python engine's state attributes."},
    RCW_SHELL_METHODS
    {NULL},
};

static PyGetSetDef engine_getset[] = {
    {"k", (getter)engine_get_k, NULL, "The number of updates.", NULL},
    {"n_cuts", (getter)engine_get_ncuts, NULL, "The heap's length.", NULL},
    {"live_cuts", (getter)engine_get_live_cuts, NULL, "The heap's length after its clean-up.",
     NULL},
    RCW_SHELL_GETSET
    {NULL},
};

RCW_SHELL_TYPE(EngineType, "river_cw._engines._rda.Engine", 0,
               "Voted RDA's compiled engine (see river_cw.rda.VotedRDA).");

RCW_SHELL_MODULE("Voted RDA's compiled engine (optional; see river_cw.rda).");

PyMODINIT_FUNC PyInit__rda(void) { return shell_module(&moduledef, &EngineType, "Engine"); }
