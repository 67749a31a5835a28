/* The calibration's Newton temperature in C, for the compiled engines' learn paths.
 *
 * river_cw.calibration's `inverse_mills` and `newton_step` (the readable reference) transcribed
 * operation for operation, in the same order, so that compiled with -ffp-contract=off they give
 * the same temperature to the bit; exp and erfc are the C library's, as math.exp and math.erfc
 * are (tests/engines/test_calibration_step.py checks both on hypothesis-drawn margins).
 *
 * A calibrating binary model hands its calibration with its lean spec and to learn_rows:
 * (temperature, noise), the temperature a writable buffer of two float64, [a, H] (the model's
 * `_temperature`, an array('d')), stepped in place, and noise its `margin_noise`; or None. Each
 * learn path steps it on the margin the rule's step takes, just before that step
 * (rcw_temperature_step): s = m / sqrt(v + noise), as GaussianClassifier._calibrated_step.
 */
#ifndef RIVER_CW_CALIBRATION_H
#define RIVER_CW_CALIBRATION_H

#include <Python.h>
#include <math.h>
#include <string.h>

#define RCW_LOWEST_TEMPERATURE 1e-6 /* river_cw.calibration.LOWEST, HIGHEST */
#define RCW_HIGHEST_TEMPERATURE 1e3

/* river_cw.calibration.inverse_mills: phi(z) / Phi(z) */
static inline double rcw_inverse_mills(double z) {
    double r;
    if (z > -30.0) return sqrt(2.0 / M_PI) * exp(-0.5 * z * z) / erfc(-z / sqrt(2.0));
    r = 1.0 / (z * z);
    return -z / (1.0 - r + 3.0 * r * r);
}

/* river_cw.calibration.newton_step: state = [a, H], stepped on the standardised margin s with
 * sample weight w; a step that is not finite changes nothing */
static inline void rcw_newton_step(double *state, double s, double w) {
    double a = state[0], H = state[1], z = a * s, lam = rcw_inverse_mills(z), g, h;
    g = -s * lam;
    h = s * s * lam * (z + lam);
    if (w != 1.0) {
        g = w * g;
        h = w * h;
    }
    H = H + h;
    a = a - g / H;
    if (!(isfinite(a) && isfinite(H))) return;
    state[0] = a < RCW_LOWEST_TEMPERATURE ? RCW_LOWEST_TEMPERATURE
               : a > RCW_HIGHEST_TEMPERATURE ? RCW_HIGHEST_TEMPERATURE
                                              : a;
    state[1] = H;
}

/* A model's calibration as the engine holds it: the temperature's buffer (held while the
 * calibration is) and the noise term; state NULL: no calibration */
typedef struct {
    Py_buffer view;
    double *state;
    double noise;
} RcwTemperature;

static void rcw_temperature_release(RcwTemperature *t) {
    if (t->state != NULL) PyBuffer_Release(&t->view);
    t->state = NULL;
}

/* `calibration`, None or (temperature, noise), into *t (its previous buffer released); 0, or -1
 * with an error, *t unchanged */
static int rcw_temperature_parse(PyObject *calibration, RcwTemperature *t) {
    RcwTemperature parsed;
    memset(&parsed, 0, sizeof parsed);
    if (calibration != Py_None) {
        if (!PyTuple_Check(calibration) || PyTuple_GET_SIZE(calibration) != 2) {
            PyErr_SetString(PyExc_TypeError, "a calibration is (temperature, noise) or None");
            return -1;
        }
        parsed.noise = PyFloat_AsDouble(PyTuple_GET_ITEM(calibration, 1));
        if (parsed.noise == -1.0 && PyErr_Occurred()) return -1;
        if (PyObject_GetBuffer(PyTuple_GET_ITEM(calibration, 0), &parsed.view,
                               PyBUF_WRITABLE | PyBUF_FORMAT) < 0)
            return -1;
        if (parsed.view.len != 2 * (Py_ssize_t)sizeof(double) || parsed.view.format == NULL ||
            strcmp(parsed.view.format, "d") != 0) {
            PyBuffer_Release(&parsed.view);
            PyErr_SetString(PyExc_TypeError, "a temperature is two float64, [a, H]");
            return -1;
        }
        parsed.state = parsed.view.buf;
    }
    rcw_temperature_release(t);
    *t = parsed;
    return 0;
}

/* the Newton step on the margin the rule's step takes (m, v > 0), where t calibrates (t not
 * NULL, a state held) */
static inline void rcw_temperature_step(const RcwTemperature *t, double m, double v, double w) {
    if (t != NULL && t->state != NULL) rcw_newton_step(t->state, m / sqrt(v + t->noise), w);
}

#endif
