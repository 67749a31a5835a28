/* The exact diagonal CW steps of the compiled diagonal engine (_diagonal.c; _utilities.h wraps
 * the solvers for river_cw.cw):
 * river_cw.cw's Newton solvers (JMLR 2012 section 6.2) on the terms u_j = Sigma_jj d_j^2 of the
 * margin variance (a Terms object's on the general path, the margin's own on the lean one), with
 * exactly rounded sums, so that they give the Python solvers' numbers bit for bit. */
#ifndef RIVER_CW_EXACT_H
#define RIVER_CW_EXACT_H

#include <Python.h>
#include <math.h>
#include <string.h>

#include "_fsum.h"
#include "_inline.h"
#include "_steps.h"

/* A rule's `_exact_step` in C for the lean path, given the terms u[0..n) of v: an rcw_step's
 * outcomes (1 update with *alpha, *gamma and the rule's scheme; 0 none; -1 skipped, where Python
 * raises ZeroDivisionError or OverflowError or gives a non-finite step), or -2: another error
 * of the solver (set), which the general path raises again. A rule names it with its
 * `_native_exact_step`; `find_exact_step` maps the name here. */
typedef int (*exact_step)(const double *params, double m, double v, const double *u,
                          Py_ssize_t n, double w, double *alpha, double *gamma);

#define MAX_ITER 200

#define ALWAYS_INLINE static RCW_ALWAYS_INLINE

typedef struct {
    double m, v, phi;
    const double *u;
    Py_ssize_t n;
} ExactProblem;

static int checked_div(double a, double b, double *out) {
    if (b == 0.0) {
        PyErr_SetString(PyExc_ZeroDivisionError, "float division by zero");
        return -1;
    }
    *out = a / b;
    return 0;
}

/* The two sums of a Newton step, value and slope, exactly rounded (math.fsum's results). A first
 * pass adds the terms to accumulators whose error bounds certify the rounding nearly always: the
 * slope's (positive terms) a double-double (_fsum.h), the value's a triple-length one (Sum3), since
 * near the root its terms cancel to far below their size, where a double-double bound certifies
 * only about half the steps (_fsum.h). Otherwise a second pass computes the same terms again, in
 * the same order, and sums them by math.fsum's own algorithm, which also raises its errors (the
 * value's first). The first pass keeps its accumulators in registers: no address of them
 * escapes. */
/* the sums of one pass: the accumulators (Msum NULL) or math.fsum's algorithm */
typedef struct {
    Sum3 value;
    DdSum slope;
    Msum *exact;  /* [value, slope], or NULL */
} NewtonPass;

/* add a term to the value's sum (which 0) or the slope's (1); -1 on a memory error */
ALWAYS_INLINE int newton_add(NewtonPass *s, int which, double t) {
    if (s->exact != NULL) return msum_add(&s->exact[which], t);
    if (which == 0)
        sum3_add(&s->value, t);
    else
        ddsum_add(&s->slope, t);
    return 0;
}

/* f(alpha) of exact_var_alpha, its terms: m + alpha v - phi sum u_j / q_j, slope
 * v + sum 2 phi^2 u_j^2 / q_j^2, q_j = 1 + 2 alpha phi u_j; -1 with an error */
ALWAYS_INLINE int exact_var_terms(const ExactProblem *p, double alpha, NewtonPass *s) {
    Py_ssize_t j;
    double t;
    if (newton_add(s, 0, p->m) < 0 || newton_add(s, 0, alpha * p->v) < 0 ||
        newton_add(s, 1, p->v) < 0)
        return -1;
    for (j = 0; j < p->n; j++) {
        double uj = p->u[j], q = 1.0 + 2.0 * alpha * p->phi * uj;
        if (checked_div(-p->phi * uj, q, &t) < 0 || newton_add(s, 0, t) < 0) return -1;
        if (checked_div(2.0 * p->phi * p->phi * uj * uj, q * q, &t) < 0 || newton_add(s, 1, t) < 0)
            return -1;
    }
    return 0;
}

/* g(s) of exact_stdev_step, its terms: s - sum u_j / q_j, slope
 * 1 + sum u_j (1 + phi^2 u_j / v) / q_j^2, q_j = s + alpha(s) phi u_j; -1 with an error */
ALWAYS_INLINE int exact_stdev_terms(const ExactProblem *p, double s, NewtonPass *sums) {
    Py_ssize_t j;
    double t, alpha = (p->phi * s - p->m) / p->v;
    if (newton_add(sums, 0, s) < 0 || newton_add(sums, 1, 1.0) < 0) return -1;
    for (j = 0; j < p->n; j++) {
        double uj = p->u[j], q = s + alpha * p->phi * uj;
        if (checked_div(-uj, q, &t) < 0 || newton_add(sums, 0, t) < 0) return -1;
        if (checked_div(uj * (1.0 + p->phi * p->phi * uj / p->v), q * q, &t) < 0 ||
            newton_add(sums, 1, t) < 0)
            return -1;
    }
    return 0;
}

/* (value, slope) of one Newton step at x, given the pass `terms` (exact_var_terms or
 * exact_stdev_terms), inlined: the accumulators' pass, math.fsum's where they do not certify
 * both; 0, or -1 with an error */
ALWAYS_INLINE int newton_sums(int (*terms)(const ExactProblem *, double, NewtonPass *),
                              const ExactProblem *p, double x, double *value, double *slope) {
    NewtonPass s;
    Msum exact[2];
    sum3_init(&s.value);
    ddsum_init(&s.slope);
    s.exact = NULL;
    if (terms(p, x, &s) < 0) return -1;
    if (sum3_certified(&s.value, value) && ddsum_certified(&s.slope, p->n + 1, slope))
        return 0;
    msum_init(&exact[0]);
    msum_init(&exact[1]);
    s.exact = exact;
    if (terms(p, x, &s) < 0) {
        msum_free(&exact[0]);
        msum_free(&exact[1]);
        return -1;
    }
    if (msum_result(&exact[0], value) < 0) {
        msum_free(&exact[1]);
        return -1;
    }
    return msum_result(&exact[1], slope);
}

static int exact_var_f(const ExactProblem *p, double alpha, double *value, double *slope) {
    return newton_sums(exact_var_terms, p, alpha, value, slope);
}

static int exact_stdev_g(const ExactProblem *p, double s, double *value, double *slope) {
    return newton_sums(exact_stdev_terms, p, s, value, slope);
}

typedef int (*Increasing)(const ExactProblem *, double, double *, double *);

/* river_cw.cw._solve_increasing: safeguarded Newton on an increasing f, f(lo) < 0 <= f(hi) */
static int solve_increasing(Increasing f, const ExactProblem *p, double lo, double hi,
                            double *root) {
    double x = hi, value, slope, step;
    int it;
    for (it = 0; it < MAX_ITER; it++) {
        if (f(p, x, &value, &slope) < 0) return -1;
        if (value >= 0.0) {
            if (value == 0.0) {
                *root = x;
                return 0;
            }
            hi = x;
        } else
            lo = x;
        step = slope > 0.0 ? x - value / slope : NAN;
        if (!(lo <= step && step <= hi)) step = 0.5 * (lo + hi);
        if (fabs(step - x) <= 1e-15 * fabs(step) || hi - lo <= 1e-15 * hi) {
            *root = x > step ? x : step;
            return 0;
        }
        x = step;
    }
    *root = hi;
    return 0;
}

/* river_cw.cw.exact_var_alpha: 0, or -1 with the solver's error */
static int exact_var_alpha(const ExactProblem *p, double *alpha) {
    if (p->m >= p->phi * p->v) {
        *alpha = 0.0;
        return 0;
    }
    return solve_increasing(exact_var_f, p, 0.0, (p->phi * p->v - p->m) / p->v, alpha);
}

/* river_cw.cw.exact_stdev_step, (alpha, s): 0, or -1 with the solver's error */
static int exact_stdev_step(const ExactProblem *p, double *alpha, double *s) {
    double lo;
    if (p->m >= p->phi * sqrt(p->v)) {
        *alpha = *s = 0.0;
        return 0;
    }
    lo = p->m / p->phi > 0.0 ? p->m / p->phi : 0.0; /* max(0.0, m / phi) */
    if (solve_increasing(exact_stdev_g, p, lo, sqrt(p->v), s) < 0) return -1;
    *alpha = (p->phi * *s - p->m) / p->v;
    return 0;
}

/* a solver's error as an exact_step's outcome */
static int exact_error(void) {
    if (PyErr_ExceptionMatches(PyExc_ZeroDivisionError) ||
        PyErr_ExceptionMatches(PyExc_OverflowError)) { /* float64 cannot express the step */
        PyErr_Clear();
        return -1;
    }
    return -2;
}

/* CW._exact_step, variant "var"; params: phi */
static int exact_step_cw_var(const double *params, double m, double v, const double *u,
                             Py_ssize_t n, double w, double *alpha, double *gamma) {
    ExactProblem p = {m, v, params[0], u, n};
    if (exact_var_alpha(&p, alpha) < 0) return exact_error();
    *gamma = 2.0 * *alpha * p.phi;
    if (!(*alpha > 0.0)) return 0;
    return rcw_weighted(w, v, alpha, gamma);
}

/* CW._exact_step, variant "stdev"; params: phi */
static int exact_step_cw_stdev(const double *params, double m, double v, const double *u,
                               Py_ssize_t n, double w, double *alpha, double *gamma) {
    ExactProblem p = {m, v, params[0], u, n};
    double s;
    if (exact_stdev_step(&p, alpha, &s) < 0) return exact_error();
    if (!(*alpha > 0.0)) return 0;
    RCW_DIV(*gamma, *alpha * p.phi, s);
    return rcw_weighted(w, v, alpha, gamma);
}

/* the exact step a rule's `_native_exact_step` names, and its number of parameters; NULL if
 * unknown */
static exact_step find_exact_step(const char *name, int *nparams) {
    static const struct {
        const char *name;
        exact_step step;
        int nparams;
    } table[] = {
        {"cw_var_exact", exact_step_cw_var, 1},
        {"cw_stdev_exact", exact_step_cw_stdev, 1},
    };
    size_t i;
    for (i = 0; i < sizeof(table) / sizeof(table[0]); i++)
        if (strcmp(name, table[i].name) == 0) {
            *nparams = table[i].nparams;
            return table[i].step;
        }
    return NULL;
}

#endif
