/* river_cw._rda: the per-feature loops of voted RDA (river_cw.rda.VotedRDA) in C.
 *
 * The model's state stays what the Python code keeps (one dict per block, feature -> record
 * [s, first, closed, inv0, sqr0, inv1, sqr1]); these functions only run its loops, with the same
 * formulas in the same order and math.fsum's exactly rounded sums (_fsum.h), so both engines
 * give the same numbers to the bit and pickles do not know which engine wrote them. Whenever
 * something is not as expected (a value that is not a float or an int, a record of another
 * shape, a non-finite sum) a function returns None and the Python code runs instead, raising
 * its own errors. Compile with -ffp-contract=off.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>

#include "_fsum.h"

#define RECORD_SIZE 7

/* a feature value as a double: floats and ints only (as_floats lets small ints through) */
static inline int value_of(PyObject *v, double *out) {
    if (PyFloat_CheckExact(v)) {
        *out = PyFloat_AS_DOUBLE(v);
        return 0;
    }
    if (!PyLong_CheckExact(v)) return -1;
    *out = PyLong_AsDouble(v);
    if (*out == -1.0 && PyErr_Occurred()) {
        PyErr_Clear();
        return -1;
    }
    return 0;
}

/* a record's float field; -1 when it is not a float */
static inline int field(PyObject *rec, Py_ssize_t i, double *out) {
    PyObject *f = PyList_GET_ITEM(rec, i);
    if (!PyFloat_CheckExact(f)) return -1;
    *out = PyFloat_AS_DOUBLE(f);
    return 0;
}

static inline int is_record(PyObject *rec) {
    return PyList_CheckExact(rec) && PyList_GET_SIZE(rec) == RECORD_SIZE;
}

/* The weight a record gives (river_cw.rda.VotedRDA._newest / _totals), up to the divisor. */
typedef struct {
    int totals;            /* 0: newest, 1: totals */
    double threshold, scale; /* newest: l1 k and eta sqrt(k) */
    double inv_k, sqr_k, l1, eta; /* totals: the prefix sums now, l1 and eta */
} Weight;

static int parse_weight(PyObject *spec, Weight *w) {
    const char *kind;
    double a, b, c, d;
    if (!PyArg_ParseTuple(spec, "sdd|dd", &kind, &a, &b, &c, &d)) return -1;
    if (strcmp(kind, "newest") == 0) {
        w->totals = 0;
        w->threshold = a;
        w->scale = b;
        return 0;
    }
    if (strcmp(kind, "totals") == 0 && PyTuple_GET_SIZE(spec) == 5) {
        w->totals = 1;
        w->inv_k = a;
        w->sqr_k = b;
        w->l1 = c;
        w->eta = d;
        return 0;
    }
    PyErr_SetString(PyExc_ValueError, "a weight is ('newest', threshold, scale) or "
                                      "('totals', inv_k, sqr_k, l1, eta)");
    return -1;
}

/* rec -> its weight; -1 when the record is not of the expected shape */
static inline int weight_of(const Weight *w, PyObject *rec, double *out) {
    double s, closed, inv0, sqr0, inv1, sqr1;
    if (!is_record(rec) || field(rec, 0, &s) < 0) return -1;
    if (!w->totals) {
        *out = fabs(s) > w->threshold ? -(s - copysign(w->threshold, s)) / w->scale : 0.0;
        return 0;
    }
    if (field(rec, 2, &closed) < 0 || field(rec, 3, &inv0) < 0 || field(rec, 4, &sqr0) < 0)
        return -1;
    if (PyList_GET_ITEM(rec, 5) == Py_None) {
        inv1 = w->inv_k;
        sqr1 = w->sqr_k;
    } else if (field(rec, 5, &inv1) < 0 || field(rec, 6, &sqr1) < 0)
        return -1;
    *out = closed - (s * (inv1 - inv0) - copysign(w->l1, s) * (sqr1 - sqr0)) / w->eta;
    return 0;
}

/* dot(blocks, x, weight, divisor) -> [w_b . x / divisor for every block], or None */
static PyObject *rda_dot(PyObject *module, PyObject *args) {
    PyObject *blocks, *x, *spec, *out, *key, *value;
    double divisor;
    Weight w;
    Py_ssize_t b, nblocks, pos;
    Fsum all;
    if (!PyArg_ParseTuple(args, "O!O!O!d", &PyList_Type, &blocks, &PyDict_Type, &x, &PyTuple_Type,
                          &spec, &divisor) ||
        parse_weight(spec, &w) < 0)
        return NULL;
    nblocks = PyList_GET_SIZE(blocks);
    if ((out = PyList_New(nblocks)) == NULL) return NULL;
    fsum_init(&all);
    for (b = 0; b < nblocks; b++) {
        PyObject *block = PyList_GET_ITEM(blocks, b), *f;
        Fsum acc;
        double score;
        if (!PyDict_CheckExact(block)) goto fallback;
        fsum_init(&acc);
        pos = 0;
        while (PyDict_Next(x, &pos, &key, &value)) {
            double v, wf = 0.0;
            PyObject *rec = PyDict_GetItemWithError(block, key);
            if (rec == NULL && PyErr_Occurred()) { /* a key's __eq__ raised: Python decides */
                PyErr_Clear();
                fsum_free(&acc);
                goto fallback;
            }
            if (value_of(value, &v) < 0 || (rec != NULL && weight_of(&w, rec, &wf) < 0)) {
                fsum_free(&acc);
                goto fallback;
            }
            if (fsum_add(&acc, v * wf) < 0) {
                fsum_free(&acc);
                goto error;
            }
        }
        if (fsum_result(&acc, &score) < 0) {
            PyErr_Clear();
            goto fallback;
        }
        score /= divisor;
        if (fsum_add(&all, score) < 0) goto error;
        if ((f = PyFloat_FromDouble(score)) == NULL) goto error;
        PyList_SET_ITEM(out, b, f);
    }
    {
        double total;
        if (fsum_result(&all, &total) < 0) {
            PyErr_Clear();
            goto fallback_freed;
        }
        if (!isfinite(total)) goto fallback_freed;
    }
    return out;
fallback:
    fsum_free(&all);
fallback_freed:
    Py_DECREF(out);
    Py_RETURN_NONE;
error:
    fsum_free(&all);
    Py_DECREF(out);
    return NULL;
}

/* The difference vector of an update: pairs ((block, sign), ...) over x. */
typedef struct {
    Py_ssize_t block[2];
    double sign[2];
    int n;
} Pairs;

static int parse_pairs(PyObject *pairs, Py_ssize_t nblocks, Pairs *p) {
    Py_ssize_t k;
    if (!PyTuple_CheckExact(pairs) || PyTuple_GET_SIZE(pairs) > 2) {
        PyErr_SetString(PyExc_ValueError, "pairs: a tuple of at most two (block, sign)");
        return -1;
    }
    p->n = (int)PyTuple_GET_SIZE(pairs);
    for (k = 0; k < p->n; k++) {
        long sign;
        if (!PyArg_ParseTuple(PyTuple_GET_ITEM(pairs, k), "nl", &p->block[k], &sign)) return -1;
        if (p->block[k] < 0 || p->block[k] >= nblocks) {
            PyErr_SetString(PyExc_IndexError, "list index out of range");
            return -1;
        }
        p->sign[k] = (double)sign;
    }
    return 0;
}

/* plan(blocks, x, pairs, step, weight) -> True when every sum the update stores is finite
 * (river_cw.rda.VotedRDA._plan), False when one is not, None when Python must decide */
static PyObject *rda_plan(PyObject *module, PyObject *args) {
    PyObject *blocks, *x, *pairs, *spec, *key, *value;
    double step;
    Weight w;
    Pairs p;
    Py_ssize_t pos;
    int k;
    if (!PyArg_ParseTuple(args, "O!O!OdO!", &PyList_Type, &blocks, &PyDict_Type, &x, &pairs, &step,
                          &PyTuple_Type, &spec) ||
        parse_weight(spec, &w) < 0 || parse_pairs(pairs, PyList_GET_SIZE(blocks), &p) < 0)
        return NULL;
    for (k = 0; k < p.n; k++) {
        PyObject *block = PyList_GET_ITEM(blocks, p.block[k]);
        if (!PyDict_CheckExact(block)) Py_RETURN_NONE;
        pos = 0;
        while (PyDict_Next(x, &pos, &key, &value)) {
            double v, g, s, total;
            PyObject *rec;
            if (value_of(value, &v) < 0) Py_RETURN_NONE;
            if (v == 0.0) continue;
            g = -step * p.sign[k] * v;
            if ((rec = PyDict_GetItemWithError(block, key)) == NULL) {
                if (PyErr_Occurred()) {
                    PyErr_Clear();
                    Py_RETURN_NONE;
                }
                if (!isfinite(g)) Py_RETURN_FALSE;
                continue;
            }
            if (!is_record(rec) || field(rec, 0, &s) < 0 || weight_of(&w, rec, &total) < 0)
                Py_RETURN_NONE;
            if (!(isfinite(s + g) && isfinite(total))) Py_RETURN_FALSE;
        }
    }
    Py_RETURN_TRUE;
}

/* apply(blocks, x, pairs, step, weight, first, inv, sqr, opened) -> None: the records of the
 * update (river_cw.rda.VotedRDA._step after retiring w_k), in the plan's order: a new feature
 * gets [g, first, 0.0, inv, sqr, None, None], a known one [s + g, first, total, inv, sqr, None,
 * None]; each record is appended to the list `opened`. The caller has run `plan` (True). */
static PyObject *rda_apply(PyObject *module, PyObject *args) {
    PyObject *blocks, *x, *pairs, *spec, *first, *inv, *sqr, *opened, *key, *value;
    PyObject *zero = NULL;
    double step;
    Weight w;
    Pairs p;
    Py_ssize_t pos;
    int k;
    if (!PyArg_ParseTuple(args, "O!O!OdO!O!O!O!O!", &PyList_Type, &blocks, &PyDict_Type, &x,
                          &pairs, &step, &PyTuple_Type, &spec, &PyLong_Type, &first,
                          &PyFloat_Type, &inv, &PyFloat_Type, &sqr, &PyList_Type, &opened) ||
        parse_weight(spec, &w) < 0 || parse_pairs(pairs, PyList_GET_SIZE(blocks), &p) < 0)
        return NULL;
    for (k = 0; k < p.n; k++) {
        PyObject *block = PyList_GET_ITEM(blocks, p.block[k]);
        pos = 0;
        while (PyDict_Next(x, &pos, &key, &value)) {
            double v, g, s, total;
            PyObject *rec, *fields[RECORD_SIZE];
            int i;
            if (value_of(value, &v) < 0) {
                PyErr_SetString(PyExc_TypeError, "apply: run plan first");
                goto error;
            }
            if (v == 0.0) continue;
            g = -step * p.sign[k] * v;
            if ((rec = PyDict_GetItemWithError(block, key)) == NULL) {
                if (PyErr_Occurred()) goto error;
                if (zero == NULL && (zero = PyFloat_FromDouble(0.0)) == NULL) goto error;
                if ((rec = PyList_New(RECORD_SIZE)) == NULL) goto error;
                if ((fields[0] = PyFloat_FromDouble(g)) == NULL) {
                    Py_DECREF(rec);
                    goto error;
                }
                fields[2] = zero;
                Py_INCREF(zero);
                if (PyDict_SetItem(block, key, rec) < 0) {
                    Py_DECREF(fields[0]);
                    Py_DECREF(zero);
                    Py_DECREF(rec);
                    goto error;
                }
                Py_DECREF(rec); /* the block holds it */
            } else {
                if (!is_record(rec) || field(rec, 0, &s) < 0 || weight_of(&w, rec, &total) < 0) {
                    PyErr_SetString(PyExc_TypeError, "apply: run plan first");
                    goto error;
                }
                if ((fields[0] = PyFloat_FromDouble(s + g)) == NULL) goto error;
                if ((fields[2] = PyFloat_FromDouble(total)) == NULL) {
                    Py_DECREF(fields[0]);
                    goto error;
                }
            }
            fields[1] = first;
            fields[3] = inv;
            fields[4] = sqr;
            fields[5] = fields[6] = Py_None;
            for (i = 1; i < RECORD_SIZE; i++)
                if (i != 2) Py_INCREF(fields[i]);
            for (i = 0; i < RECORD_SIZE; i++) {
                PyObject *old = PyList_GET_ITEM(rec, i);
                PyList_SET_ITEM(rec, i, fields[i]);
                Py_XDECREF(old);
            }
            if (PyList_Append(opened, rec) < 0) goto error;
        }
    }
    Py_XDECREF(zero);
    Py_RETURN_NONE;
error:
    Py_XDECREF(zero);
    return NULL;
}

static PyMethodDef module_methods[] = {
    {"dot", rda_dot, METH_VARARGS, "w_b . x / divisor for every block, or None."},
    {"plan", rda_plan, METH_VARARGS, "Whether an update's stored sums are finite, or None."},
    {"apply", rda_apply, METH_VARARGS, "Write an update's records (after plan)."},
    {NULL},
};

static struct PyModuleDef moduledef = {
    PyModuleDef_HEAD_INIT, "river_cw._rda",
    "Voted RDA's per-feature loops in C (optional; see river_cw.rda).", -1, module_methods,
};

PyMODINIT_FUNC PyInit__rda(void) { return PyModule_Create(&moduledef); }
