/* The rules' steps (m, v, w) -> (alpha, gamma) in C, for the compiled engine's learn paths.
 *
 * Each function is its rule's Python `_step` (river_cw/arow.py, cw.py, nherd.py, scw.py,
 * sop.py: the readable reference) transcribed operation for operation, in the same order, so
 * that compiled with -ffp-contract=off it gives the same alpha and gamma to the bit
 * (tests/engines/test_native_steps.py checks every rule on hypothesis-drawn (m, v, w)). A rule names its
 * step and parameters with its `_native_step` property; `rcw_find_step` maps the name here.
 *
 * An rcw_step returns 1 (update with *alpha, *gamma), 0 (no update: Python's None) or -1: float64
 * cannot express the step (where Python raises ZeroDivisionError or OverflowError, or gives a
 * non-finite alpha or gamma), which the engine counts as skipped. Inputs: v > 0 and w > 0,
 * m and v finite (the margin pass checks them). rcw_parse_step reads a `_native_step` spec.
 */
#ifndef RIVER_CW_STEPS_H
#define RIVER_CW_STEPS_H

#include <Python.h>
#include <math.h>
#include <string.h>

typedef int (*rcw_step)(const double *params, double m, double v, double w, double *alpha,
                        double *gamma);

/* Python's a / b: ZeroDivisionError (here -1) when b is zero */
#define RCW_DIV(out, a, b)                                                                       \
    do {                                                                                         \
        double rcw_divisor_ = (b);                                                               \
        if (rcw_divisor_ == 0.0) return -1;                                                      \
        (out) = (a) / rcw_divisor_;                                                              \
    } while (0)

/* the engine's check after a step: a non-finite alpha or gamma is skipped */
static inline int rcw_finite_step(double alpha, double gamma) {
    return isfinite(alpha) && isfinite(gamma) ? 1 : -1;
}

/* river_cw.cw.weighted_step: the step's Gaussian factor raised to the power w */
static inline int rcw_weighted(double w, double v, double *alpha, double *gamma) {
    if (w != 1.0) {
        double a;
        RCW_DIV(a, w * *alpha * (1.0 + *gamma * v), 1.0 + w * *gamma * v);
        *alpha = a;
        *gamma = w * *gamma;
    }
    return rcw_finite_step(*alpha, *gamma);
}

/* river_cw.cw.cw_var_alpha */
static inline int rcw_cw_var_alpha(double m, double v, double phi, double *alpha) {
    double b = 1.0 + 2.0 * phi * m, c = 8.0 * phi * (phi * v - m), root;
    if (c <= 0.0) {
        *alpha = 0.0;
        return 0;
    }
    root = sqrt(b * b + c);
    if (b > 0.0)
        RCW_DIV(*alpha, c, b + root);
    else
        *alpha = root - b;
    RCW_DIV(*alpha, *alpha, 4.0 * phi * v);
    return 0;
}

/* river_cw.cw.cw_stdev_alpha */
static inline int rcw_cw_stdev_alpha(double m, double v, double phi, double *alpha) {
    double psi = 1.0 + phi * phi / 2.0, zeta = 1.0 + phi * phi;
    double root = sqrt(m * m * pow(phi, 4.0) / 4.0 + v * phi * phi * zeta), a;
    if (m > 0.0) {
        RCW_DIV(a, phi * phi * v - m * m, v * (m * psi + root));
        *alpha = a > 0.0 ? a : 0.0; /* max(0.0, a): 0.0 unless a > 0 */
    } else
        RCW_DIV(*alpha, root - m * psi, v * zeta);
    return 0;
}

/* river_cw.cw.cw_stdev_gamma */
static inline int rcw_cw_stdev_gamma(double alpha, double v, double phi, double *gamma) {
    double avp = alpha * v * phi;
    RCW_DIV(*gamma, alpha * phi * (avp + sqrt(avp * avp + 4.0 * v)), 2.0 * v);
    return 0;
}

/* AROW._step; params: r */
static int rcw_step_arow(const double *p, double m, double v, double w, double *alpha,
                         double *gamma) {
    double r;
    if (m >= 1.0) return 0;
    RCW_DIV(r, p[0], w);
    RCW_DIV(*alpha, 1.0 - m, v + r);
    RCW_DIV(*gamma, 1.0, r);
    return rcw_finite_step(*alpha, *gamma);
}

/* SOP._step; no params */
static int rcw_step_sop(const double *p, double m, double v, double w, double *alpha,
                        double *gamma) {
    (void)p;
    if (m > 0.0) return 0;
    RCW_DIV(*alpha, w * (1.0 - m), 1.0 + w * v);
    *gamma = w;
    return rcw_finite_step(*alpha, *gamma);
}

/* NHERD._step; params: C */
static int rcw_step_nherd(const double *p, double m, double v, double w, double *alpha,
                          double *gamma) {
    double C, inv;
    if (m >= 1.0) return 0;
    C = p[0] * w;
    RCW_DIV(inv, 1.0, C);
    RCW_DIV(*alpha, 1.0 - m, v + inv);
    *gamma = 2.0 * C + C * C * v;
    return rcw_finite_step(*alpha, *gamma);
}

/* CW._step, variant "var"; params: phi */
static int rcw_step_cw_var(const double *p, double m, double v, double w, double *alpha,
                           double *gamma) {
    double phi = p[0];
    if (rcw_cw_var_alpha(m, v, phi, alpha) < 0) return -1;
    *gamma = 2.0 * *alpha * phi;
    if (!(*alpha > 0.0)) return 0;
    return rcw_weighted(w, v, alpha, gamma);
}

/* CW._step, variant "stdev"; params: phi */
static int rcw_step_cw_stdev(const double *p, double m, double v, double w, double *alpha,
                             double *gamma) {
    double phi = p[0];
    if (rcw_cw_stdev_alpha(m, v, phi, alpha) < 0) return -1;
    if (!(*alpha > 0.0)) return 0;
    if (rcw_cw_stdev_gamma(*alpha, v, phi, gamma) < 0) return -1;
    return rcw_weighted(w, v, alpha, gamma);
}

/* SCW._step, variant "I"; params: phi, C */
static int rcw_step_scw1(const double *p, double m, double v, double w, double *alpha,
                         double *gamma) {
    double phi = p[0], C, a;
    if (m >= phi * sqrt(v)) return 0; /* no loss */
    C = p[1] * w;
    if (rcw_cw_stdev_alpha(m, v, phi, &a) < 0) return -1;
    *alpha = a < C ? a : C; /* min(C, a): C unless a < C */
    if (!(*alpha > 0.0)) return 0;
    if (rcw_cw_stdev_gamma(*alpha, v, phi, gamma) < 0) return -1;
    return rcw_finite_step(*alpha, *gamma);
}

/* SCW._step, variant "II"; params: phi, C */
static int rcw_step_scw2(const double *p, double m, double v, double w, double *alpha,
                         double *gamma) {
    double phi = p[0], C, n, half, root, a;
    if (m >= phi * sqrt(v)) return 0; /* no loss */
    C = p[1] * w;
    RCW_DIV(half, 1.0, 2.0 * C);
    n = v + half;
    root = phi * sqrt(phi * phi * m * m * v * v + 4.0 * n * v * (n + v * phi * phi));
    RCW_DIV(a, -(2.0 * m * n + phi * phi * m * v) + root, 2.0 * (n * n + n * v * phi * phi));
    *alpha = a > 0.0 ? a : 0.0; /* max(0.0, a) */
    if (!(*alpha > 0.0)) return 0;
    if (rcw_cw_stdev_gamma(*alpha, v, phi, gamma) < 0) return -1;
    return rcw_finite_step(*alpha, *gamma);
}

/* the step a rule's `_native_step` names, and how many parameters it takes; NULL if unknown */
static rcw_step rcw_find_step_n(const char *name, int *nparams) {
    static const struct {
        const char *name;
        rcw_step step;
        int nparams;
    } table[] = {
        {"arow", rcw_step_arow, 1},       {"sop", rcw_step_sop, 0},
        {"nherd", rcw_step_nherd, 1},     {"cw_var", rcw_step_cw_var, 1},
        {"cw_stdev", rcw_step_cw_stdev, 1}, {"scw1", rcw_step_scw1, 2},
        {"scw2", rcw_step_scw2, 2},
    };
    size_t i;
    for (i = 0; i < sizeof(table) / sizeof(table[0]); i++)
        if (strcmp(name, table[i].name) == 0) {
            *nparams = table[i].nparams;
            return table[i].step;
        }
    return NULL;
}

static inline rcw_step rcw_find_step(const char *name) {
    int nparams;
    return rcw_find_step_n(name, &nparams);
}

#define RCW_MAX_PARAMS 2

/* A native step's spec, (name, params) as a rule's `_native_step` gives it: 0 with its name
 * (*name, borrowed, and *text, its UTF-8) and its params' tuple (*values), or -1 with an error */
static int rcw_native_spec(PyObject *spec, PyObject **name, const char **text, PyObject **values) {
    if (!PyTuple_Check(spec) || PyTuple_GET_SIZE(spec) != 2 ||
        !PyUnicode_Check(*name = PyTuple_GET_ITEM(spec, 0)) ||
        !PyTuple_Check(*values = PyTuple_GET_ITEM(spec, 1))) {
        PyErr_SetString(PyExc_TypeError, "a native step is (name, (params...))");
        return -1;
    }
    return (*text = PyUnicode_AsUTF8(*name)) == NULL ? -1 : 0;
}

/* the params of the native step `name` (values, a tuple of nparams numbers) as doubles into
 * params; 0, or -1 with an error */
static int rcw_native_params(PyObject *name, PyObject *values, int nparams, double *params) {
    int i;
    if (PyTuple_GET_SIZE(values) != nparams) {
        PyErr_Format(PyExc_ValueError, "the native step %R takes %d parameters", name, nparams);
        return -1;
    }
    for (i = 0; i < nparams; i++)
        if ((params[i] = PyFloat_AsDouble(PyTuple_GET_ITEM(values, i))) == -1.0 && PyErr_Occurred())
            return -1;
    return 0;
}

/* a native step's spec read: the C step it names, its params as doubles into params; NULL with
 * an error (a ValueError for a name no step has) */
static rcw_step rcw_parse_step(PyObject *spec, double *params) {
    PyObject *name, *values;
    const char *text;
    rcw_step step;
    int nparams;
    if (rcw_native_spec(spec, &name, &text, &values) < 0) return NULL;
    if ((step = rcw_find_step_n(text, &nparams)) == NULL) {
        PyErr_Format(PyExc_ValueError, "no native step %R", name);
        return NULL;
    }
    return rcw_native_params(name, values, nparams, params) < 0 ? NULL : step;
}

#endif
