/* What the compiled engines' batch kernels share, whatever the engine (learn_rows and score_rows
 * in _batch.h, Arrowhead.score_rows in _arrowhead.c): a batch's CSR arrays read in
 * place, their columns' names checked as river_cw.batch.Rows.check_names checks them, and a
 * binary model's probabilities made as river_cw.probabilities.binary makes them.
 */
#ifndef RIVER_CW_CSR_H
#define RIVER_CW_CSR_H

#include <Python.h>
#include <math.h>
#include <string.h>

#include "_inline.h"

/* A batch's CSR rows, (data, indices, indptr, features, ncols) as river_cw.batch.Rows holds
 * them: row i holds the value data[l] in column indices[l] for l in [indptr[i], indptr[i + 1]);
 * column j is the feature features[j], or the int j itself where features is None (hashed ids).
 * The arrays are read in place, through the buffer views the struct holds until
 * rcw_csr_release. */
typedef struct {
    const double *data;
    const Py_ssize_t *indices, *indptr;
    Py_ssize_t ncols;
    PyObject *features; /* borrowed: a list of one name per column, or None */
    Py_buffer views[3];
    int nviews;
} RcwCsr;

static void rcw_csr_release(RcwCsr *c) {
    int i;
    for (i = 0; i < c->nviews; i++) PyBuffer_Release(&c->views[i]);
    c->nviews = 0;
}

/* The tuple `rows` as c's ncols and features, its three arrays into arrays[]; 0, or -1 with an
 * error */
static int rcw_csr_parse(PyObject *rows, RcwCsr *c, PyObject *arrays[3]) {
    if (!PyArg_ParseTuple(rows, "OOOOn", &arrays[0], &arrays[1], &arrays[2], &c->features,
                          &c->ncols))
        return -1;
    if (c->features != Py_None &&
        (!PyList_Check(c->features) || PyList_GET_SIZE(c->features) != c->ncols)) {
        PyErr_SetString(PyExc_TypeError, "features must be a list of one name per column");
        return -1;
    }
    return 0;
}

/* a C-contiguous buffer of `item`-byte items whose format is one of `formats`, held by c */
static int rcw_csr_view(RcwCsr *c, PyObject *array, const char *formats, Py_ssize_t item,
                        const void **out, Py_ssize_t *n) {
    Py_buffer *view = &c->views[c->nviews];
    const char *f;
    if (PyObject_GetBuffer(array, view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) return -1;
    c->nviews++;
    f = view->format[0] == '<' || view->format[0] == '=' || view->format[0] == '@'
            ? view->format + 1 : view->format;
    if (view->itemsize != item || strlen(f) != 1 || strchr(formats, f[0]) == NULL) {
        PyErr_SetString(PyExc_TypeError, "CSR arrays must be float64 data and intp indices");
        return -1;
    }
    *out = view->buf;
    *n = view->len / item;
    return 0;
}

/* The arrays `arrays` (as rcw_csr_parse leaves them) viewed into c, with *nrows rows: float64
 * data, intp indices and indptr, every row's span within data (ValueError "malformed CSR
 * arrays" else). 0, or -1 with an error (the views taken are c's to release) */
static int rcw_csr_view_rows(RcwCsr *c, PyObject *arrays[3], Py_ssize_t *nrows) {
    const void *p;
    Py_ssize_t ndata, nindices, nptr, i;
    if (rcw_csr_view(c, arrays[0], "d", sizeof(double), &p, &ndata) < 0) return -1;
    c->data = p;
    if (rcw_csr_view(c, arrays[1], "nlq", sizeof(Py_ssize_t), &p, &nindices) < 0) return -1;
    c->indices = p;
    if (rcw_csr_view(c, arrays[2], "nlq", sizeof(Py_ssize_t), &p, &nptr) < 0) return -1;
    c->indptr = p;
    *nrows = nptr - 1;
    if (*nrows < 0 || ndata != nindices) goto malformed;
    for (i = 0; i < *nrows; i++)
        if (c->indptr[i] < 0 || c->indptr[i] > c->indptr[i + 1] || c->indptr[i + 1] > ndata)
            goto malformed;
    return 0;
malformed:
    PyErr_SetString(PyExc_ValueError, "malformed CSR arrays");
    return -1;
}

/* ValueError when two stored columns of the rows are named alike, as Rows.check_names raises it
 * (columns in order of first appearance; a name that cannot be hashed is left to its rows); 0,
 * or -1 with the error. `seen` (ncols, zeros) is left as it was. */
static int rcw_csr_check_names(const RcwCsr *c, Py_ssize_t nrows, Py_ssize_t *seen) {
    Py_ssize_t l, end = c->indptr[nrows], j;
    int rc = 0;
    PyObject *named = PyDict_New();
    if (named == NULL) return -1;
    for (l = c->indptr[0]; l < end && rc == 0; l++) {
        PyObject *column, *other;
        if ((j = c->indices[l]) < 0 || j >= c->ncols || seen[j]) continue;
        seen[j] = 1;
        if ((column = PyLong_FromSsize_t(j)) == NULL) {
            rc = -1;
            break;
        }
        other = PyDict_SetDefault(named, PyList_GET_ITEM(c->features, j), column);
        if (other == NULL) {
            if (PyErr_ExceptionMatches(PyExc_TypeError)) PyErr_Clear(); /* left to the rows */
            else rc = -1;
        } else if (other != column) {
            PyErr_Format(PyExc_ValueError, "features names columns %S and %zd alike: %R", other,
                         j, PyList_GET_ITEM(c->features, j));
            rc = -1;
        }
        Py_DECREF(column);
    }
    Py_DECREF(named);
    for (l = c->indptr[0]; l < end; l++)
        if ((j = c->indices[l]) >= 0 && j < c->ncols) seen[j] = 0;
    return rc;
}

/* The probabilities {first: 1 - p, second: p} of river_cw.probabilities.binary for the score m
 * and its variance v (the noise term added): p = flips + (1 - 2 flips) 0.5 erfc(-(a t) /
 * sqrt(2)), t = m / sqrt(v) (+-inf or 0 where v is 0), flips the share of flipped labels
 * (river_cw.flips; 0: none), with Python's own math.erfc (`erfc`), so the numbers are its, bit
 * for bit. */
static PyObject *rcw_binary_proba(double m, double v, PyObject *first, PyObject *second, double a,
                                  double flips, PyObject *erfc) {
    double t = v > 0.0 ? m / sqrt(v) : (m != 0.0 ? copysign(INFINITY, m) : 0.0), p;
    PyObject *arg = PyFloat_FromDouble(-(a * t) / sqrt(2.0)), *e, *out, *q;
    if (arg == NULL) return NULL;
    e = PyObject_CallOneArg(erfc, arg);
    Py_DECREF(arg);
    if (e == NULL) return NULL;
    p = 0.5 * PyFloat_AsDouble(e);
    p = flips + (1.0 - 2.0 * flips) * p; /* river_cw.flips.probability */
    Py_DECREF(e);
    if (PyErr_Occurred() || (out = PyDict_New()) == NULL) return NULL;
    if ((q = PyFloat_FromDouble(1.0 - p)) == NULL || PyDict_SetItem(out, first, q) < 0) goto fail;
    Py_DECREF(q);
    if ((q = PyFloat_FromDouble(p)) == NULL || PyDict_SetItem(out, second, q) < 0) goto fail;
    Py_DECREF(q);
    return out;
fail:
    Py_XDECREF(q);
    Py_DECREF(out);
    return NULL;
}

/* A batch's centre argument (learn_rows', score_rows'): *out NULL for None, else the centre, an
 * exact dict {feature: mean} given with dict rows (a list); 0, or -1 with a TypeError */
static int rcw_batch_centre(PyObject *centre, PyObject *rows, PyObject **out) {
    *out = centre == Py_None ? NULL : centre;
    if (*out != NULL && (!PyDict_CheckExact(centre) || !PyList_Check(rows))) {
        PyErr_SetString(PyExc_TypeError, "a centre is a dict {feature: mean}, for dict rows");
        return -1;
    }
    return 0;
}

/* A score_rows call, score_rows(rows, intercept, proba, centre=None) (_batch.h, _arrowhead.c):
 * rows a list of dicts or CSR arrays (`csr`: then viewed, their names checked as
 * Rows.check_names, `seen` ncols zeros for the kernel's use, left as zeros), proba None or
 * (first, second, temperature, noise, flips, erfc): the probabilities of the two labels
 * (rcw_binary_proba, of the variance plus the noise term) instead of the score; centre None or,
 * for dict rows, a centred model's (river_cw.centring: NULL for None). */
typedef struct {
    PyObject *rows, *intercept, *centre;
    PyObject *first, *second, *erfc; /* erfc NULL: scores */
    double temperature, noise, flips;
    int is_csr;
    RcwCsr csr;
    Py_ssize_t nrows, *seen;
} RcwScoreRows;

static void rcw_score_rows_close(RcwScoreRows *s) {
    rcw_csr_release(&s->csr);
    PyMem_Free(s->seen);
    s->seen = NULL;
}

/* score_rows' arguments parsed into *s (zeroed here); 0, or -1 with an error (then closed) */
static int rcw_score_rows_open(PyObject *args, RcwScoreRows *s) {
    PyObject *proba, *arrays[3], *centre = Py_None;
    memset(s, 0, sizeof *s);
    s->temperature = 1.0;
    if (!PyArg_ParseTuple(args, "OOO|O", &s->rows, &s->intercept, &proba, &centre)) return -1;
    if (rcw_batch_centre(centre, s->rows, &s->centre) < 0) return -1;
    if (proba != Py_None &&
        !PyArg_ParseTuple(proba, "OOdddO", &s->first, &s->second, &s->temperature, &s->noise,
                          &s->flips, &s->erfc))
        return -1;
    s->is_csr = PyTuple_Check(s->rows);
    if (!s->is_csr) {
        if (PyList_Check(s->rows)) {
            s->nrows = PyList_GET_SIZE(s->rows);
            return 0;
        }
        PyErr_SetString(PyExc_TypeError, "rows must be a list of dicts or CSR arrays");
        return -1;
    }
    if (rcw_csr_parse(s->rows, &s->csr, arrays) < 0 ||
        rcw_csr_view_rows(&s->csr, arrays, &s->nrows) < 0)
        goto fail;
    if ((s->seen = PyMem_Calloc(s->csr.ncols ? s->csr.ncols : 1, sizeof(Py_ssize_t))) == NULL) {
        PyErr_NoMemory();
        goto fail;
    }
    if (s->csr.features != Py_None && rcw_csr_check_names(&s->csr, s->nrows, s->seen) < 0)
        goto fail;
    return 0;
fail:
    rcw_score_rows_close(s);
    return -1;
}

/* An engine's score of row i of a score_rows call: 1 with its score *m and (where s->erfc is
 * set) its variance *v, 0 where the general path must serve the row, -1 with an error */
typedef int (*rcw_row_score)(void *engine, const RcwScoreRows *s, Py_ssize_t i, double *m,
                             double *v);

/* score_rows' list: per row, None where `score` leaves it to the general path, else its score m,
 * or its probabilities (rcw_binary_proba) of m and its variance v; NULL with an error. Inlined,
 * so that `score` is each engine's own function, inlined in its turn. */
static RCW_ALWAYS_INLINE PyObject *rcw_score_rows_list(const RcwScoreRows *s, rcw_row_score score,
                                                       void *engine) {
    PyObject *out = PyList_New(s->nrows), *item;
    Py_ssize_t i;
    for (i = 0; out != NULL && i < s->nrows; i++) {
        double m = 0.0, v = 0.0;
        int ok = score(engine, s, i, &m, &v);
        item = ok < 0      ? NULL
               : !ok       ? Py_NewRef(Py_None)
               : s->erfc   ? rcw_binary_proba(m, v + s->noise, s->first, s->second, s->temperature, s->flips,
                                              s->erfc)
                           : PyFloat_FromDouble(m);
        if (item == NULL)
            Py_CLEAR(out);
        else
            PyList_SET_ITEM(out, i, item);
    }
    return out;
}

#endif
