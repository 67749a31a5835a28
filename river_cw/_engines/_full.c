/* The full-covariance engine's kernels (river_cw._engines.full): the precision's Cholesky factor R
 * (Sigma^-1 = R'R, upper triangular, a C-order float64 matrix held by the Python engine), its
 * two triangular solves, its rank-one update (Gill, Golub, Murray and Saunders' method C1), and
 * the common cases of learn_one and predict_one in one call each.
 *
 * Each kernel is river_cw._engines.full.PythonFullGaussian's method of the same name transcribed
 * operation for operation, in the same order (element-wise operations, each rounded once; the
 * sums mu . d and |z|^2 exactly rounded, _fsum.h), so that compiled with -ffp-contract=off it
 * gives the same numbers to the bit (tests/engines/test_full_compiled_vs_python.py). The matrices
 * stay numpy arrays, read through the buffer protocol; the module needs no numpy headers.
 *
 * The one-call paths take only the common case and hand every other one to the engine's general
 * path (-1, or None, with no error set): a dict of floats, ints or bools, every feature already
 * learned (a new one grows the matrices, in Python), one block, a known label, a native step.
 * learn_native computes the new mean in scratch and the new factor into the engine's spare
 * matrix, and writes them (the mean copied, the factor swapped with the spare) only when every
 * number is finite, as the reference's update refuses a step float64 cannot express.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <string.h>

#include "_fsum.h"
#include "_inline.h"
#include "_input.h"
#include "_steps.h"
#include "_calibration.h"

/* river_cw._engines.full.FACTOR_BOUND: the largest entry of R an update writes */
#define RCW_FACTOR_BOUND 1e150

/* learn's outcomes: river_cw._engines.gaussian's NOTHING, APPLIED (both 0 here: learned) and SKIPPED,
 * and the general path's case */
enum { LEARNED = 0, SKIPPED = 2, GENERAL = -1 };

/* ---------------------------------------------------------------------------------------- */
/* the kernels, on raw C-order arrays of n (vectors) and n x n (R)                            */

static Py_ssize_t first_nonzero(const double *v, Py_ssize_t n) {
    Py_ssize_t k = 0;
    while (k < n && v[k] == 0.0) k++;
    return k;
}

/* The kernels run in blocks of BLOCK rows (forward, rank_one) or columns (backward): a block's
 * triangle first, then the rest of its rows or columns in one pass that applies the block's
 * BLOCK operations to each entry in turn, four entries at a time (v4d), then two (v2d). Every
 * entry takes the same operations in the same order as in the reference's loop, one row or
 * column after the other: the same numbers, with the vector t or u read and written once per
 * block. The vector types are GCC's and clang's: where a target has no 32-byte vectors, the
 * compiler makes each v4d operation two of 16 bytes (SSE2, NEON). On x86-64 with glibc each
 * kernel is compiled twice, for AVX2 and for the baseline, and the loader picks the one the
 * processor runs (target_clones): the same operations, four lanes to an instruction or two. */
#define BLOCK 4

typedef double v2d __attribute__((vector_size(16)));
typedef long long v2i __attribute__((vector_size(16))); /* a v2d comparison's lanes */
typedef double v4d __attribute__((vector_size(32)));
typedef long long v4i __attribute__((vector_size(32)));

#if defined(__x86_64__) && defined(__GLIBC__) && defined(__has_attribute)
#if __has_attribute(target_clones)
#define KERNEL __attribute__((target_clones("avx2", "default")))
#endif
#endif
#ifndef KERNEL
#define KERNEL
#endif

static inline v2d load2(const double *p) {
    v2d v;
    memcpy(&v, p, sizeof v);
    return v;
}

static inline void store2(double *p, v2d v) { memcpy(p, &v, sizeof v); }

static inline v2d splat(double x) { return (v2d){x, x}; }

/* the v4d helpers are always inlined into the kernels, at any optimisation level: no v4d
 * crosses a call (GCC's note that one would change the ABI without AVX does not apply). Left to
 * the compiler, an -O0 build called them: the kernels' AVX2 clone then read a v4d from the
 * default target's helper where it returns none, and wrote past the end of its output */
#pragma GCC diagnostic ignored "-Wpsabi"

static RCW_ALWAYS_INLINE v4d load4(const double *p) {
    v4d v;
    memcpy(&v, p, sizeof v);
    return v;
}

static RCW_ALWAYS_INLINE void store4(double *p, v4d v) { memcpy(p, &v, sizeof v); }

static RCW_ALWAYS_INLINE v4d splat4(double x) { return (v4d){x, x, x, x}; }

/* inverse[k] = 1 / R_kk, k = 0 .. n - 1: the solves multiply by them (river_cw._engines.full.
 * _reciprocals), a division taken off the chain from one row to the next */
static void reciprocals(const double *R, Py_ssize_t n, double *inverse) {
    Py_ssize_t k;
    for (k = 0; k < n; k++) inverse[k] = 1.0 / R[k * n + k];
}

/* R^-T d: R'z = d solved row after row of R (PythonFullGaussian._forward); t holds d and is
 * overwritten, z every entry written */
KERNEL static void forward(const double *R, Py_ssize_t n, const double *inverse, double *t,
                           double *z) {
    Py_ssize_t k, j, i, b, start = first_nonzero(t, n);
    for (k = 0; k < start; k++) z[k] = 0.0;
    for (k = start; k < n; k += b) {
        b = n - k < BLOCK ? n - k : BLOCK;
        j = k + b;
        if (b == BLOCK) { /* the common case, unrolled: the triangle in registers */
            const double *r0 = R + k * n, *r1 = r0 + n, *r2 = r1 + n, *r3 = r2 + n;
            double t0 = t[k], t1 = t[k + 1], t2 = t[k + 2], t3 = t[k + 3];
            v4d z0, z1, z2, z3;
            t0 = t0 * inverse[k];
            t1 = t1 - t0 * r0[k + 1];
            t2 = t2 - t0 * r0[k + 2];
            t3 = t3 - t0 * r0[k + 3];
            t1 = t1 * inverse[k + 1];
            t2 = t2 - t1 * r1[k + 2];
            t3 = t3 - t1 * r1[k + 3];
            t2 = t2 * inverse[k + 2];
            t3 = t3 - t2 * r2[k + 3];
            t3 = t3 * inverse[k + 3];
            z[k] = t0;
            z[k + 1] = t1;
            z[k + 2] = t2;
            z[k + 3] = t3;
            z0 = splat4(t0);
            z1 = splat4(t1);
            z2 = splat4(t2);
            z3 = splat4(t3);
            for (; j + 4 <= n; j += 4) {
                v4d tj = load4(t + j);
                tj = tj - z0 * load4(r0 + j);
                tj = tj - z1 * load4(r1 + j);
                tj = tj - z2 * load4(r2 + j);
                tj = tj - z3 * load4(r3 + j);
                store4(t + j, tj);
            }
        } else { /* the last rows: nothing after the triangle */
            for (i = 0; i < b; i++) {
                const double *row = R + (k + i) * n;
                double zk = t[k + i] * inverse[k + i];
                z[k + i] = zk;
                for (j = k + i + 1; j < k + b; j++) t[j] = t[j] - zk * row[j];
            }
            break;
        }
        for (; j + 2 <= n; j += 2) {
            v2d tj = load2(t + j);
            for (i = 0; i < b; i++) tj = tj - splat(z[k + i]) * load2(R + (k + i) * n + j);
            store2(t + j, tj);
        }
        for (; j < n; j++) {
            double tj = t[j];
            for (i = 0; i < b; i++) tj = tj - z[k + i] * R[(k + i) * n + j];
            t[j] = tj;
        }
    }
}

/* R^-1 z: R s = z solved column after column of R, from the last (PythonFullGaussian._backward);
 * t holds z and is overwritten. The rest of a block of four columns goes four rows at a time:
 * their four entries in the block's columns, read as rows and transposed, so that each column
 * of the block is one vector over the four rows. */
KERNEL static void backward(const double *R, Py_ssize_t n, const double *inverse, double *t,
                            double *s) {
    Py_ssize_t k, j, i, b;
    for (k = n - 1; k >= 0; k -= b) { /* columns k, k - 1, ..., k - b + 1 */
        b = k + 1 < BLOCK ? k + 1 : BLOCK;
        j = 0;
        if (b == BLOCK) { /* the common case, unrolled: the triangle in registers */
            const double *r3 = R + (k - 3) * n, *r2 = r3 + n, *r1 = r2 + n; /* rows k - 3 .. k - 1 */
            double t0 = t[k], t1 = t[k - 1], t2 = t[k - 2], t3 = t[k - 3];
            v4d s0, s1, s2, s3;
            t0 = t0 * inverse[k];
            t1 = t1 - t0 * r1[k];
            t2 = t2 - t0 * r2[k];
            t3 = t3 - t0 * r3[k];
            t1 = t1 * inverse[k - 1];
            t2 = t2 - t1 * r2[k - 1];
            t3 = t3 - t1 * r3[k - 1];
            t2 = t2 * inverse[k - 2];
            t3 = t3 - t2 * r3[k - 2];
            t3 = t3 * inverse[k - 3];
            s[k] = t0;
            s[k - 1] = t1;
            s[k - 2] = t2;
            s[k - 3] = t3;
            s0 = splat4(t0);
            s1 = splat4(t1);
            s2 = splat4(t2);
            s3 = splat4(t3);
            for (; j + 4 <= k - 3; j += 4) {
                const double *at = R + j * n + k - 3; /* row j's columns k - 3 .. k */
                v4d q0 = load4(at), q1 = load4(at + n), q2 = load4(at + 2 * n),
                    q3 = load4(at + 3 * n), tj = load4(t + j);
                v4d e0 = __builtin_shuffle(q0, q1, (v4i){0, 4, 2, 6}),
                    e1 = __builtin_shuffle(q0, q1, (v4i){1, 5, 3, 7}),
                    e2 = __builtin_shuffle(q2, q3, (v4i){0, 4, 2, 6}),
                    e3 = __builtin_shuffle(q2, q3, (v4i){1, 5, 3, 7});
                tj = tj - s0 * __builtin_shuffle(e1, e3, (v4i){2, 3, 6, 7}); /* column k */
                tj = tj - s1 * __builtin_shuffle(e0, e2, (v4i){2, 3, 6, 7});
                tj = tj - s2 * __builtin_shuffle(e1, e3, (v4i){0, 1, 4, 5});
                tj = tj - s3 * __builtin_shuffle(e0, e2, (v4i){0, 1, 4, 5}); /* column k - 3 */
                store4(t + j, tj);
            }
        } else { /* the first columns: nothing above the triangle */
            for (i = 0; i < b; i++) {
                Py_ssize_t c = k - i;
                double sk = t[c] * inverse[c];
                s[c] = sk;
                for (j = k - b + 1; j < c; j++) t[j] = t[j] - sk * R[j * n + c];
            }
            break;
        }
        for (; j < k - b + 1; j++) {
            const double *row = R + j * n;
            double tj = t[j];
            for (i = 0; i < b; i++) tj = tj - s[k - i] * row[k - i];
            t[j] = tj;
        }
    }
}

/* whether the n entries of a row from `at` are within RCW_FACTOR_BOUND */
static inline int bounded(const double *at, Py_ssize_t n) {
    int within = 1;
    Py_ssize_t j;
    for (j = 0; j < n; j++) within &= fabs(at[j]) <= RCW_FACTOR_BOUND;
    return within;
}

/* R'R + w w' given p = R^-T w (PythonFullGaussian._rank_one: method C1 of Gill, Golub, Murray
 * and Saunders), read from `src` and written to `dst` (the same matrix, or one of the same shape,
 * upper triangular: a row before p's first non-zero entry is copied). The scalars a_k and b_k
 * first (O(n), the only chain of dependent operations), then the rows from the last up, in
 * blocks of BLOCK rows: a block's triangle, then the rest of its rows, two entries of each at a
 * time, each entry taking its rows' operations in the reference's order (the rows from the
 * last up); u is the reference's running sum of p_i R_i, read and written once per block. a, b
 * and u: scratch of n doubles each. Returns 1 when every entry of the new R is within
 * RCW_FACTOR_BOUND (the reference's check after its update). */
KERNEL static int rank_one(const double *src, double *dst, Py_ssize_t n, const double *p,
                           double *a, double *b, double *u) {
    Py_ssize_t k, j, lo, hi, start = first_nonzero(p, n);
    double t = 1.0;
    int within = 1;
    v2d bound = splat(RCW_FACTOR_BOUND);
    v4d bound4 = splat4(RCW_FACTOR_BOUND);
    v2i beyond = {0, 0}; /* lanes of entries beyond the bound, or NaN */
    v4i beyond4 = {0, 0, 0, 0};
    for (k = 0; k < start; k++) {
        if (dst != src) memcpy(dst + k * n + k, src + k * n + k, (n - k) * sizeof(double));
        within &= bounded(dst + k * n + k, n - k);
    }
    for (k = start; k < n; k++) {
        double tk = t + p[k] * p[k];
        a[k] = sqrt(tk / t);
        b[k] = p[k] / (t * a[k]);
        t = tk;
    }
    memset(u, 0, n * sizeof(double));
    for (hi = n; hi > start; hi = lo) { /* rows lo .. hi - 1 */
        lo = hi - BLOCK > start ? hi - BLOCK : start;
        for (k = hi - 1; k >= lo; k--) { /* the block's triangle */
            const double *in = src + k * n;
            double *out = dst + k * n;
            for (j = k; j < hi; j++) {
                double r = in[j], o = a[k] * r + b[k] * u[j];
                out[j] = o;
                u[j] = u[j] + p[k] * r;
                within &= fabs(o) <= RCW_FACTOR_BOUND;
            }
        }
        j = hi;
        if (hi - lo == BLOCK) { /* the common case, unrolled: four rows of each pair of entries */
            const double *in0 = src + lo * n, *in1 = in0 + n, *in2 = in1 + n, *in3 = in2 + n;
            double *out0 = dst + lo * n, *out1 = out0 + n, *out2 = out1 + n, *out3 = out2 + n;
            v4d a0 = splat4(a[lo]), a1 = splat4(a[lo + 1]), a2 = splat4(a[lo + 2]),
                a3 = splat4(a[lo + 3]), b0 = splat4(b[lo]), b1 = splat4(b[lo + 1]),
                b2 = splat4(b[lo + 2]), b3 = splat4(b[lo + 3]), p0 = splat4(p[lo]),
                p1 = splat4(p[lo + 1]), p2 = splat4(p[lo + 2]), p3 = splat4(p[lo + 3]);
            for (; j + 4 <= n; j += 4) {
                v4d uj = load4(u + j), r0 = load4(in0 + j), r1 = load4(in1 + j),
                    r2 = load4(in2 + j), r3 = load4(in3 + j), o0, o1, o2, o3;
                o3 = a3 * r3 + b3 * uj;
                uj = uj + p3 * r3;
                o2 = a2 * r2 + b2 * uj;
                uj = uj + p2 * r2;
                o1 = a1 * r1 + b1 * uj;
                uj = uj + p1 * r1;
                o0 = a0 * r0 + b0 * uj;
                uj = uj + p0 * r0;
                store4(out0 + j, o0);
                store4(out1 + j, o1);
                store4(out2 + j, o2);
                store4(out3 + j, o3);
                store4(u + j, uj);
                beyond4 |= ~((o0 <= bound4) & (o0 >= -bound4) & (o1 <= bound4) &
                             (o1 >= -bound4) & (o2 <= bound4) & (o2 >= -bound4) &
                             (o3 <= bound4) & (o3 >= -bound4));
            }
        }
        for (; j + 2 <= n; j += 2) {
            v2d uj = load2(u + j);
            for (k = hi - 1; k >= lo; k--) {
                v2d r = load2(src + k * n + j), o = splat(a[k]) * r + splat(b[k]) * uj;
                store2(dst + k * n + j, o);
                uj = uj + splat(p[k]) * r;
                beyond |= ~((o <= bound) & (o >= -bound));
            }
            store2(u + j, uj);
        }
        for (; j < n; j++) {
            double uj = u[j];
            for (k = hi - 1; k >= lo; k--) {
                double r = src[k * n + j], o = a[k] * r + b[k] * uj;
                dst[k * n + j] = o;
                uj = uj + p[k] * r;
                within &= fabs(o) <= RCW_FACTOR_BOUND;
            }
            u[j] = uj;
        }
    }
    return within && !(beyond[0] | beyond[1] | beyond4[0] | beyond4[1] | beyond4[2] | beyond4[3]);
}

/* ---------------------------------------------------------------------------------------- */
/* numpy arrays through the buffer protocol                                                   */

/* a writable C-order float64 array of `ndim` dimensions, square if 2; 0, or -1 with an error */
static int array_view(PyObject *array, int ndim, Py_buffer *view, const char *name) {
    if (PyObject_GetBuffer(array, view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | PyBUF_WRITABLE) < 0)
        return -1;
    if (view->ndim != ndim || view->itemsize != sizeof(double) || view->format == NULL ||
        strcmp(view->format, "d") != 0 || (ndim == 2 && view->shape[0] != view->shape[1])) {
        PyBuffer_Release(view);
        PyErr_Format(PyExc_ValueError, "%s must be a C-order float64 %s", name,
                     ndim == 2 ? "square matrix" : "vector");
        return -1;
    }
    return 0;
}

/* the views of R (`chol`) and of a vector of its size; 0, or -1 with an error */
static int matrix_and_vector(PyObject *chol, PyObject *vector, Py_buffer *r, Py_buffer *v,
                             const char *name) {
    if (array_view(chol, 2, r, "chol") < 0) return -1;
    if (array_view(vector, 1, v, name) < 0) {
        PyBuffer_Release(r);
        return -1;
    }
    if (v->shape[0] != r->shape[0]) {
        PyBuffer_Release(r);
        PyBuffer_Release(v);
        PyErr_Format(PyExc_ValueError, "%s must have chol's size", name);
        return -1;
    }
    return 0;
}

/* the views of R and of two vectors of its size (`a`, `b` their names); 0, or -1 with an
 * error */
static int solve_views(PyObject *const *args, Py_ssize_t nargs, Py_buffer *r, Py_buffer *a,
                       Py_buffer *b, const char *names[2]) {
    if (nargs != 3) {
        PyErr_Format(PyExc_TypeError, "takes (chol, %s, %s)", names[0], names[1]);
        return -1;
    }
    if (matrix_and_vector(args[0], args[1], r, a, names[0]) < 0) return -1;
    if (matrix_and_vector(args[0], args[2], r + 1, b, names[1]) < 0) {
        PyBuffer_Release(r);
        PyBuffer_Release(a);
        return -1;
    }
    PyBuffer_Release(r + 1);
    return 0;
}

/* A solve by `kernel` (forward or backward) on the arguments (chol, a, b): b = R^-T a or R^-1 a,
 * a overwritten; None, or NULL with an error */
static PyObject *solve(PyObject *const *args, Py_ssize_t nargs, const char *names[2],
                       void (*kernel)(const double *, Py_ssize_t, const double *, double *,
                                      double *)) {
    Py_buffer r[2], a, b;
    double *inverse;
    Py_ssize_t n;
    if (solve_views(args, nargs, r, &a, &b, names) < 0) return NULL;
    n = r[0].shape[0];
    if ((inverse = PyMem_Malloc((n + 1) * sizeof(double))) == NULL)
        PyErr_NoMemory();
    else {
        reciprocals(r[0].buf, n, inverse);
        kernel(r[0].buf, n, inverse, a.buf, b.buf);
        PyMem_Free(inverse);
    }
    PyBuffer_Release(&r[0]);
    PyBuffer_Release(&a);
    PyBuffer_Release(&b);
    if (inverse == NULL) return NULL;
    Py_RETURN_NONE;
}

/* forward(chol, d, z): z = R^-T d, d overwritten */
static PyObject *module_forward(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    const char *names[2] = {"d", "z"};
    return solve(args, nargs, names, forward);
}

/* backward(chol, z, s): s = R^-1 z, z overwritten */
static PyObject *module_backward(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    const char *names[2] = {"z", "s"};
    return solve(args, nargs, names, backward);
}

/* rank_one(chol, p): R'R + w w' in place of R'R, p = R^-T w */
static PyObject *module_rank_one(PyObject *module, PyObject *args) {
    PyObject *chol, *p;
    Py_buffer r, pv;
    double *scratch;
    Py_ssize_t n;
    if (!PyArg_ParseTuple(args, "OO", &chol, &p)) return NULL;
    if (matrix_and_vector(chol, p, &r, &pv, "p") < 0) return NULL;
    n = r.shape[0];
    if ((scratch = PyMem_Malloc((3 * n + 1) * sizeof(double))) == NULL) {
        PyBuffer_Release(&r);
        PyBuffer_Release(&pv);
        return PyErr_NoMemory();
    }
    rank_one(r.buf, r.buf, n, pv.buf, scratch, scratch + n, scratch + 2 * n);
    PyMem_Free(scratch);
    PyBuffer_Release(&r);
    PyBuffer_Release(&pv);
    Py_RETURN_NONE;
}

/* ---------------------------------------------------------------------------------------- */
/* the one-call paths                                                                         */

/* What the one-call paths read of the engine (a PythonFullGaussian): block 0's rows, the mean
 * and the factor, borrowed or viewed; `released` by the caller */
typedef struct {
    PyObject *rows, *block, *mean, *chol; /* new references */
    Py_buffer m, r;
    Py_ssize_t n;
} State;

static void state_release(State *st) {
    if (st->r.obj != NULL) PyBuffer_Release(&st->r);
    if (st->m.obj != NULL) PyBuffer_Release(&st->m);
    Py_XDECREF(st->rows);
    Py_XDECREF(st->mean);
    Py_XDECREF(st->chol);
}

/* the engine's attributes' names, interned when the module is made */
static PyObject *ROWS, *MEAN, *CHOL, *SPARE;

/* the engine's state read (with `factor`, R's view too): 1, 0 (not a binary engine: the general
 * path's case) or -1 with an error */
static int state_read(PyObject *engine, State *st, int factor) {
    memset(st, 0, sizeof *st);
    if ((st->rows = PyObject_GetAttr(engine, ROWS)) == NULL) return -1;
    if (!PyList_CheckExact(st->rows) || PyList_GET_SIZE(st->rows) != 1 ||
        !PyDict_CheckExact(st->block = PyList_GET_ITEM(st->rows, 0)))
        return 0;
    if ((st->mean = PyObject_GetAttr(engine, MEAN)) == NULL) return -1;
    if (!factor) {
        if (array_view(st->mean, 1, &st->m, "mean") < 0) return -1;
        st->n = st->m.shape[0];
        return 1;
    }
    if ((st->chol = PyObject_GetAttr(engine, CHOL)) == NULL ||
        matrix_and_vector(st->chol, st->mean, &st->r, &st->m, "mean") < 0)
        return -1;
    st->n = st->r.shape[0];
    return 1;
}

/* A pass over x for block 0 with `sign`: sign x_f for each non-zero x_f and the intercept (x_f
 * = 1.0; None: none) in values[], their rows in touched[] (*ntouched of them, in x's order),
 * and in d[row] when d is not NULL (with `known` 0, a feature not learned is skipped: its mean
 * is 0).
 * 1, 0 (the general path's case: a value other than a float, an int or a bool, a non-finite
 * one, a feature not learned where `known`, the intercept among x's keys, an error of a key's
 * hash or ==) or -1 with an error that must propagate */
static int read_x(const State *st, PyObject *x, PyObject *intercept, double sign, int known,
                  double *d, double *values, Py_ssize_t *touched, Py_ssize_t *ntouched) {
    PyObject *key, *value, *row;
    Py_ssize_t pos = 0, i;
    double xf;
    int after = 0; /* x read: the intercept's turn */
    *ntouched = 0;
    /* x's key and value objects, scattered in memory, prefetched first: their loads overlap
     * rather than wait one after the other */
    while (PyDict_Next(x, &pos, &key, &value)) {
        RCW_PREFETCH(key);
        RCW_PREFETCH(value);
    }
    pos = 0;
    while (!after) {
        if (PyDict_Next(x, &pos, &key, &value)) {
            if (key == intercept || plain_value(value, &xf) != 0 || !isfinite(xf)) return 0;
            if (xf == 0.0) continue;
        } else if (intercept != Py_None) {
            key = intercept;
            xf = 1.0;
            after = 1;
        } else
            break;
        if ((row = PyDict_GetItemWithError(st->block, key)) == NULL) {
            if (!rcw_error_recoverable()) return -1;
            if (PyErr_Occurred() || known) {
                PyErr_Clear();
                return 0; /* a new feature, or a key the general path judges */
            }
        } else {
            if (!PyLong_CheckExact(row) || (i = PyLong_AsSsize_t(row)) < 0 || i >= st->n) {
                PyErr_Clear();
                return 0;
            }
            if (d != NULL) d[i] = sign * xf;
            values[*ntouched] = sign * xf;
            touched[(*ntouched)++] = i;
        }
    }
    return 1;
}

/* The exactly rounded sum of the products x[rows[k]] y[k], k = 0 .. count - 1 (rows NULL: x[k]
 * y[k]), math.fsum's result: the double-double accumulator kept in registers over the arrays,
 * and math.fsum's own algorithm over the same terms in the same order where it cannot certify
 * (the terms are read again rather than kept; a certified sum had only finite ones). 1 with
 * *out finite, 0 (a product or the sum beyond float64: the general path raises), -1 with an
 * error. */
static int exact_dot(const double *x, const Py_ssize_t *rows, const double *y, Py_ssize_t count,
                     double *out) {
    DdSum acc;
    Msum slow;
    Py_ssize_t k;
    ddsum_init(&acc);
    for (k = 0; k < count; k++) ddsum_add(&acc, x[rows != NULL ? rows[k] : k] * y[k]);
    if (ddsum_certified(&acc, count, out)) return 1;
    msum_init(&slow);
    for (k = 0; k < count; k++) {
        double term = x[rows != NULL ? rows[k] : k] * y[k];
        if (!isfinite(term)) {
            msum_free(&slow);
            return 0;
        }
        if (msum_add(&slow, term) < 0) {
            msum_free(&slow);
            return -1;
        }
    }
    if (msum_result(&slow, out) < 0) {
        if (!PyErr_ExceptionMatches(PyExc_OverflowError)) return -1;
        PyErr_Clear();
        return 0;
    }
    return isfinite(*out) ? 1 : 0;
}

/* score_native(engine, x, intercept, variance) -> m, mu . x of a binary engine (one block) with
 * the intercept appended as GaussianClassifier._features appends it: `scores(x)[0]`. None where
 * the general path serves (a variance asked for; as read_x, but a feature not learned counts
 * 0, its mean). */
static PyObject *module_score_native(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    PyObject *result = NULL;
    State st;
    Py_ssize_t size, inline_rows[FSUM_INLINE], *rows = inline_rows, nrows;
    double inline_values[FSUM_INLINE], *values = inline_values, m;
    int r, variance;
    if (nargs != 4) {
        PyErr_SetString(PyExc_TypeError, "score_native(engine, x, intercept, variance)");
        return NULL;
    }
    if ((variance = PyObject_IsTrue(args[3])) != 0 || !PyDict_CheckExact(args[1])) {
        if (variance < 0) return NULL;
        Py_RETURN_NONE;
    }
    if ((r = state_read(args[0], &st, 0)) <= 0) {
        state_release(&st);
        if (r < 0) return NULL;
        Py_RETURN_NONE;
    }
    if ((size = PyDict_GET_SIZE(args[1]) + 1) > FSUM_INLINE) {
        rows = PyMem_Malloc(size * sizeof(Py_ssize_t));
        values = PyMem_Malloc(size * sizeof(double));
        if (rows == NULL || values == NULL) {
            PyErr_NoMemory();
            goto released;
        }
    }
    r = read_x(&st, args[1], args[2], 1.0, 0, NULL, values, rows, &nrows);
    if (r > 0) r = exact_dot(st.m.buf, rows, values, nrows, &m);
    if (r > 0)
        result = PyFloat_FromDouble(m);
    else if (r == 0)
        result = Py_NewRef(Py_None);
released:
    if (rows != inline_rows) PyMem_Free(rows);
    if (values != inline_values) PyMem_Free(values);
    state_release(&st);
    return result;
}

/* learn_native(engine, x, y, w, class_index, lean) -> 0 (learned, or nothing to learn), 2
 * (skipped: float64 cannot express the step) or -1 (the general path's case: nothing changed,
 * no error set): PythonFullGaussian.learn of a binary model (one block) for a known label y
 * (block 1's sign is +1) and a float weight w > 0, lean = (step, scheme, intercept, calibration)
 * naming the rule's step in C (_steps.h; the scheme is ignored, as full covariance has none) and
 * the model's calibration (_calibration.h: with two labels known, its temperature takes the
 * Newton step on the margin), x read as river_cw.validation.as_floats reads it with the
 * intercept (None: none) appended. */
static PyObject *module_learn_native(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    PyObject *engine, *lean, *intercept, *spare = NULL, *old = NULL;
    State st;
    Py_buffer sp = {0};
    RcwTemperature temperature = {0};
    double w, sign, params[RCW_MAX_PARAMS], m, v, alpha, gamma, root, *scratch = NULL;
    double *d, *z, *t, *s, *mean_new, *a, *b, *inverse, *values;
    Py_ssize_t *touched, ntouched, n, k, start;
    rcw_step step;
    int outcome = GENERAL, r;
    if (nargs != 6 || !PyDict_Check(args[4])) {
        PyErr_SetString(PyExc_TypeError, "learn_native(engine, x, y, w, class_index, lean)");
        return NULL;
    }
    engine = args[0];
    lean = args[5];
    if (!PyDict_CheckExact(args[1])) return PyLong_FromLong(GENERAL);
    if ((r = rcw_binary_case(args + 1, 1, &w, &sign)) <= 0)
        return r < 0 ? NULL : PyLong_FromLong(GENERAL);
    if (!PyTuple_Check(lean) || PyTuple_GET_SIZE(lean) != 4) {
        PyErr_SetString(PyExc_TypeError, "learn_native's lean is ((name, (params...)), scheme, "
                                         "intercept, calibration)");
        return NULL;
    }
    intercept = PyTuple_GET_ITEM(lean, 2);
    if ((step = rcw_parse_step(PyTuple_GET_ITEM(lean, 0), params)) == NULL) {
        if (!PyErr_ExceptionMatches(PyExc_OverflowError)) return NULL;
        PyErr_Clear(); /* a parameter beyond float64: the Python step's case */
        return PyLong_FromLong(GENERAL);
    }
    if (PyDict_GET_SIZE(args[4]) == 2 &&
        rcw_temperature_parse(PyTuple_GET_ITEM(lean, 3), &temperature) < 0)
        return NULL;
    if (rcw_surprise_forgets(&temperature)) { /* this example forgets: the general path's */
        rcw_temperature_release(&temperature);
        return PyLong_FromLong(GENERAL);
    }
    if ((r = state_read(engine, &st, 1)) <= 0) {
        state_release(&st);
        rcw_temperature_release(&temperature);
        return r < 0 ? NULL : PyLong_FromLong(GENERAL);
    }
    n = st.n;
    /* d, z, t, s, the new mean, the rank-one update's a and b, R's reciprocals, and x's values
     * and rows */
    if ((scratch = PyMem_Malloc((8 * n + 2 * (n + 1)) * sizeof(double))) == NULL) {
        PyErr_NoMemory();
        goto fail;
    }
    d = scratch;
    memset(d, 0, n * sizeof(double));
    z = d + n;
    t = z + n;
    s = t + n;
    mean_new = s + n;
    a = mean_new + n;
    b = a + n;
    inverse = b + n;
    values = inverse + n;
    touched = (Py_ssize_t *)(values + n + 1);
    if ((r = read_x(&st, args[1], intercept, sign, 1, d, values, touched, &ntouched)) < 0)
        goto fail;
    if (r == 0) goto done;
    /* the margin (PythonFullGaussian.margin); beyond float64, the general path raises */
    if ((r = exact_dot(st.m.buf, touched, values, ntouched, &m)) <= 0) {
        if (r < 0) goto fail;
        goto done;
    }
    memcpy(t, d, n * sizeof(double));
    reciprocals(st.r.buf, n, inverse);
    forward(st.r.buf, n, inverse, t, z);
    start = first_nonzero(d, n);
    if ((r = exact_dot(z + start, NULL, z + start, n - start, &v)) <= 0) {
        if (r < 0) goto fail;
        goto done;
    }
    outcome = LEARNED;
    if (!(v > 0.0)) goto done; /* no non-zero feature, or all their variance is spent */
    r = step(params, m, v, w, &alpha, &gamma);
    rcw_temperature_step(&temperature, m, v, w, 0); /* the example is the lean path's */
    if (r == 0) goto done;
    outcome = SKIPPED;
    if (r < 0) goto done;
    /* the update (PythonFullGaussian.update), into scratch and the spare matrix */
    if ((spare = PyObject_GetAttr(engine, SPARE)) == NULL) goto fail;
    if (spare == st.chol || array_view(spare, 2, &sp, "_spare") < 0 || sp.shape[0] != n) {
        if (sp.obj != NULL) PyBuffer_Release(&sp);
        PyErr_Clear();
        Py_SETREF(spare, PyObject_CallMethod(st.chol, "copy", NULL));
        if (spare == NULL || array_view(spare, 2, &sp, "_spare") < 0) goto fail;
    }
    memcpy(t, z, n * sizeof(double));
    backward(st.r.buf, n, inverse, t, s);
    r = 1;
    for (k = 0; k < n; k++) {
        mean_new[k] = ((double *)st.m.buf)[k] + alpha * s[k];
        r &= isfinite(mean_new[k]) != 0;
    }
    root = sqrt(gamma);
    for (k = 0; k < n; k++) d[k] = root * z[k]; /* R^-T (sqrt(gamma) d) */
    r &= rank_one(st.r.buf, sp.buf, n, d, a, b, t);
    PyBuffer_Release(&sp);
    if (!r) goto done; /* refused: nothing written */
    memcpy(st.m.buf, mean_new, n * sizeof(double));
    old = Py_NewRef(st.chol);
    if (PyObject_SetAttr(engine, CHOL, spare) < 0 || PyObject_SetAttr(engine, SPARE, old) < 0)
        goto fail;
    outcome = LEARNED;
done:
    PyMem_Free(scratch);
    Py_XDECREF(spare);
    Py_XDECREF(old);
    state_release(&st);
    rcw_temperature_release(&temperature);
    return PyLong_FromLong(outcome);
fail:
    PyMem_Free(scratch);
    Py_XDECREF(spare);
    Py_XDECREF(old);
    state_release(&st);
    rcw_temperature_release(&temperature);
    return NULL;
}

static PyMethodDef module_methods[] = {
    {"forward", (PyCFunction)(void (*)(void))module_forward, METH_FASTCALL, "forward(chol, d, z): z = R^-T d; d overwritten."},
    {"backward", (PyCFunction)(void (*)(void))module_backward, METH_FASTCALL, "backward(chol, z, s): s = R^-1 z; z overwritten."},
    {"rank_one", module_rank_one, METH_VARARGS,
     "rank_one(chol, p): R with R'R + w w' in place of R'R, given p = R^-T w."},
    {"score_native", (PyCFunction)(void (*)(void))module_score_native, METH_FASTCALL,
     "score_native(engine, x, intercept, variance): a binary engine's score of x; None: the "
     "general path's."},
    {"learn_native", (PyCFunction)(void (*)(void))module_learn_native, METH_FASTCALL,
     "learn_native(engine, x, y, w, class_index, lean): learn of a binary model with the rule's "
     "step in C; -1: the general path's case."},
    {NULL},
};

static struct PyModuleDef moduledef = {
    PyModuleDef_HEAD_INIT, "river_cw._engines._full",
    "The full-covariance engine's kernels (river_cw._engines.full): solves, the rank-one update of the "
    "precision's factor, and the one-call learn and score.",
    -1, module_methods};

/* The module with `learn_native_method` and `score_native_method`: learn_native and
 * score_native as methods of the class that holds them (instancemethod: the engine its first
 * argument, as a Python method's self, without a Python frame between); NULL with an error */
static PyObject *methods_added(PyObject *module) {
    static const char *names[][2] = {{"learn_native", "learn_native_method"},
                                     {"score_native", "score_native_method"}};
    size_t k;
    for (k = 0; module != NULL && k < sizeof names / sizeof names[0]; k++) {
        PyObject *function = PyObject_GetAttrString(module, names[k][0]), *method;
        method = function != NULL ? PyInstanceMethod_New(function) : NULL;
        Py_XDECREF(function);
        if (method == NULL || PyModule_AddObject(module, names[k][1], method) < 0) {
            Py_XDECREF(method);
            Py_CLEAR(module);
        }
    }
    return module;
}

PyMODINIT_FUNC PyInit__full(void) {
    if ((ROWS = PyUnicode_InternFromString("rows")) == NULL ||
        (MEAN = PyUnicode_InternFromString("mean")) == NULL ||
        (CHOL = PyUnicode_InternFromString("chol")) == NULL ||
        (SPARE = PyUnicode_InternFromString("_spare")) == NULL)
        return NULL;
    return methods_added(PyModule_Create(&moduledef));
}
