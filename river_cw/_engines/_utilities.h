/* Utilities of other code that the compiled diagonal module serves (river_cw._engines._diagonal's
 * functions beside its engine; Python code calls them by these names): `as_floats`, the fast
 * paths of river_cw.validation.as_floats for every model's input; `fsum`, math.fsum as the
 * engines compute it (_fsum.h); `multiclass_step` and `multiclass_probabilities`, the calibration's
 * step and the probabilities of a model of three labels or more (_calibration.h); the exact CW
 * solvers of river_cw.cw on a margin's Terms
 * (`exact_var_alpha`, `exact_stdev_step`: _exact.h); `native_step`, a rule's C step as its
 * Python `_step` reports it (the rules' tests). Also what they share with the diagonal engine:
 * Terms, the terms u_j of a margin's variance as a read-only sequence of floats (what the
 * engine's margin hands an exact step), and parse_native, a rule's native step spec parsed.
 *
 * Included by _diagonal.c after the shell (_shell.h: the as_floats hook, `connected`); its
 * module's method table lists RCW_UTILITY_METHODS.
 */
#ifndef RIVER_CW_UTILITIES_H
#define RIVER_CW_UTILITIES_H

#include <Python.h>
#include <math.h>
#include <string.h>

#include "_exact.h"
#include "_fsum.h"
#include "_steps.h"

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
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "river_cw._engines._diagonal.Terms",
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

/* a native step's spec, (name, params): the step it names, a rule's `_step` in C (_steps.h) into
 * *step or, where `exact` is not NULL, a rule's `_exact_step` in C into *exact (the other NULL),
 * and its params as doubles; 0, or -1 with an error */
static int parse_native(PyObject *spec, double *params, rcw_step *step, exact_step *exact) {
    PyObject *name, *values;
    const char *text;
    int nparams;
    *step = NULL;
    if (exact != NULL) {
        if (rcw_native_spec(spec, &name, &text, &values) < 0) return -1;
        if ((*exact = find_exact_step(text, &nparams)) != NULL)
            return rcw_native_params(name, values, nparams, params);
    }
    return (*step = rcw_parse_step(spec, params)) == NULL ? -1 : 0;
}

/* ---------------------------------------------------------------------------------------- */
/* the module's functions                                                                    */

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
    if (connected(hooks.as_floats, "as_floats") == NULL) return NULL;
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

/* river_cw.probabilities.pairwise for K >= 3 scores: t (K rows of K, row-major) from the scores
 * (a list of floats, read into `scores`) and v, the variance of the margin between the two
 * best-scoring labels plus the noise term; 0, or -1 with an error */
static int rcw_pairwise(PyObject *score_list, Py_ssize_t K, double v, double *scores, double *t) {
    Py_ssize_t z, k;
    double m;
    for (k = 0; k < K; k++) {
        scores[k] = PyFloat_AsDouble(PyList_GET_ITEM(score_list, k));
        if (scores[k] == -1.0 && PyErr_Occurred()) return -1;
    }
    for (z = 0; z < K; z++)
        for (k = 0; k < K; k++) {
            m = scores[z] - scores[k];
            t[z * K + k] = k == z        ? 0.0
                           : v > 0.0     ? m / sqrt(v)
                           : m != 0.0    ? copysign(INFINITY, m)
                                         : 0.0; /* _standardised */
        }
    return 0;
}

/* A multi-class call's numbers (multiclass_probabilities, multiclass_step): values holds the
 * standardised pairwise margins t (K x K, rcw_pairwise), the K scores, then `scratch` doubles
 * per label, on the stack up to RCW_STACK_LABELS labels, else on the heap */
#define RCW_STACK_LABELS 16
#define RCW_MOST_SCRATCH 5 /* rcw_newton_step_multiclass's */
typedef struct {
    Py_ssize_t K;
    double *values;
    double stack[RCW_STACK_LABELS * (RCW_STACK_LABELS + 1 + RCW_MOST_SCRATCH)];
} RcwMulticlass;

/* *mc's buffer released (nothing held where it is the stack) */
static void rcw_multiclass_close(RcwMulticlass *mc) {
    if (mc->values != mc->stack) PyMem_Free(mc->values);
    mc->values = mc->stack;
}

/* *mc from a list of K >= 3 scores and v, the variance of the margin between the two
 * best-scoring labels plus the noise term, with `scratch` (at most RCW_MOST_SCRATCH) doubles per
 * label; `label` NULL, or the label's index, which must be in [0, K). 0, or -1 with an error,
 * nothing held */
static int rcw_multiclass_open(RcwMulticlass *mc, PyObject *scores, double v, Py_ssize_t scratch,
                               const Py_ssize_t *label) {
    Py_ssize_t K = PyList_GET_SIZE(scores);
    mc->K = K;
    mc->values = mc->stack;
    if (K < 3 || (label != NULL && (*label < 0 || *label >= K))) {
        PyErr_SetString(PyExc_ValueError, label == NULL ? "three scores or more"
                                                        : "three scores or more, and the "
                                                          "label's index among them");
        return -1;
    }
    if (K > RCW_STACK_LABELS &&
        (mc->values = PyMem_Malloc(sizeof(double) * (size_t)K * (size_t)(K + 1 + scratch))) == NULL) {
        mc->values = mc->stack;
        PyErr_NoMemory();
        return -1;
    }
    if (rcw_pairwise(scores, K, v, mc->values + K * K, mc->values) == 0) return 0;
    rcw_multiclass_close(mc);
    return -1;
}

/* the scratch of an open *mc, after t and the scores */
static inline double *rcw_multiclass_scratch(RcwMulticlass *mc) {
    return mc->values + mc->K * mc->K + mc->K;
}

/* multiclass_probabilities(scores, v, temperature): river_cw.probabilities.multiclass of
 * river_cw.probabilities.pairwise, compiled: the K >= 3 labels' probabilities, a list */
static PyObject *module_multiclass_probabilities(PyObject *module, PyObject *args) {
    PyObject *scores, *out = NULL, *p;
    Py_ssize_t k;
    double v, a, *probabilities;
    RcwMulticlass mc;
    if (!PyArg_ParseTuple(args, "O!dd", &PyList_Type, &scores, &v, &a)) return NULL;
    if (rcw_multiclass_open(&mc, scores, v, 1, NULL) < 0) return NULL;
    probabilities = rcw_multiclass_scratch(&mc);
    if (rcw_multiclass(mc.values, mc.K, a, probabilities) < 0 || (out = PyList_New(mc.K)) == NULL)
        goto done;
    for (k = 0; k < mc.K; k++) {
        if ((p = PyFloat_FromDouble(probabilities[k])) == NULL) {
            Py_CLEAR(out);
            goto done;
        }
        PyList_SET_ITEM(out, k, p);
    }
done:
    rcw_multiclass_close(&mc);
    return out;
}

/* multiclass_step(temperature, scores, v, label, w, observed): river_cw.calibration's, compiled
 * (rcw_pairwise, rcw_newton_step_multiclass): temperature and observed (or None) writable
 * buffers of 2 and 3 float64, scores a list of K >= 3 floats, v the variance of the margin
 * between the two best-scoring labels plus the noise term, label in [0, K), w > 0 (a model
 * steps on no example of weight 0) */
static PyObject *module_multiclass_step(PyObject *module, PyObject *args) {
    PyObject *temperature, *scores, *observed;
    Py_ssize_t label;
    double v, w;
    Py_buffer state_view, observed_view;
    RcwMulticlass mc;
    int r = -1;
    if (!PyArg_ParseTuple(args, "OO!dndO", &temperature, &PyList_Type, &scores, &v, &label, &w,
                          &observed))
        return NULL;
    if (rcw_multiclass_open(&mc, scores, v, RCW_MOST_SCRATCH, &label) < 0) return NULL;
    if (rcw_float64_buffer(temperature, &state_view, 2, "a temperature is two float64, [a, H]") <
        0)
        goto done;
    if (observed != Py_None &&
        rcw_float64_buffer(observed, &observed_view, 3, "a surprise is three float64") < 0) {
        PyBuffer_Release(&state_view);
        goto done;
    }
    r = rcw_newton_step_multiclass(state_view.buf, mc.values, mc.K, label, w,
                                   observed == Py_None ? NULL : observed_view.buf,
                                   rcw_multiclass_scratch(&mc));
    if (observed != Py_None) PyBuffer_Release(&observed_view);
    PyBuffer_Release(&state_view);
done:
    rcw_multiclass_close(&mc);
    if (r < 0) return NULL;
    Py_RETURN_NONE;
}

#define RCW_UTILITY_METHODS                                                                      \
    {"exact_var_alpha", (PyCFunction)module_exact_var_alpha, METH_VARARGS,                       \
     "river_cw.cw.exact_var_alpha(m, v, phi, u) for Terms u."},                                 \
        {"exact_stdev_step", (PyCFunction)module_exact_stdev_step, METH_VARARGS,                 \
         "river_cw.cw.exact_stdev_step(m, v, phi, u) for Terms u."},                            \
        {"as_floats", (PyCFunction)module_as_floats, METH_O,                                     \
         "river_cw.validation.as_floats, its first fast paths compiled."},                      \
        {"fsum", (PyCFunction)module_fsum, METH_O, "math.fsum, as the engine computes it."},     \
        {"multiclass_step", (PyCFunction)module_multiclass_step, METH_VARARGS,                   \
         "river_cw.calibration.multiclass_step, compiled."},                                    \
        {"multiclass_probabilities", (PyCFunction)module_multiclass_probabilities, METH_VARARGS, \
         "river_cw.probabilities.multiclass of pairwise, compiled: a list."},                   \
        {"native_step", (PyCFunction)module_native_step, METH_VARARGS,                           \
         "A rule's C step (m, v, w) or exact step (m, v, w, u) -> None, (alpha, gamma) or "     \
         "False (skipped)."},

#endif
