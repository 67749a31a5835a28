/* The calibration's Newton temperature in C, for the compiled engines' learn paths.
 *
 * river_cw.calibration's `inverse_mills`, `newton_step` and `newton_step_multiclass`, and
 * river_cw.probabilities' `multiclass` (the readable reference) transcribed operation for
 * operation, in the same order, so that compiled with -ffp-contract=off they give the same
 * temperature, surprise and probabilities to the bit; exp, erfc, log and log1p are the C
 * library's, as math's are, and a sum of logs is math.fsum's (_fsum.h). The multi-class functions
 * are drawn against the reference in tests/engines/test_calibration_step.py, the binary step
 * within the models (tests/engines/test_compiled_vs_python.py).
 *
 * A calibrating binary model hands its calibration with its lean spec and to learn_rows:
 * (temperature, noise, surprise, log_score), the temperature a writable buffer of two float64,
 * [a, H] (the model's `_temperature`, an array('d')), stepped in place, noise its
 * `margin_noise`, surprise None or, with forgetting="auto", the model's `_surprise` (three
 * float64, stepped in place), and log_score None or, for such a model that centres, its
 * `_log_score` (six float64, stepped in place); or None. Each learn path steps them on the
 * margin the rule's step takes (rcw_temperature_step): s = m / sqrt(v + noise), and the log
 * score's s0 = m / sqrt(v), as GaussianClassifier._calibrated_step.
 */
#ifndef RIVER_CW_CALIBRATION_H
#define RIVER_CW_CALIBRATION_H

#include <Python.h>
#include <float.h>
#include <math.h>
#include <string.h>

#define RCW_LOWEST_TEMPERATURE 1e-6 /* river_cw.calibration.LOWEST, HIGHEST */
#define RCW_HIGHEST_TEMPERATURE 1e3

/* river_cw.calibration.inverse_mills: phi(z) / Phi(z), given tail = erfc(-z / sqrt(2)) (that
 * is 2 Phi(z), read where z > -30: the one erfc of an example, which the surprise reads too) */
static inline double rcw_inverse_mills(double z, double tail) {
    double r;
    if (z > -30.0) return sqrt(2.0 / M_PI) * exp(-0.5 * z * z) / tail;
    r = 1.0 / (z * z);
    return -z / (1.0 - r + 3.0 * r * r);
}

/* river_cw.probabilities.normal_log_cdf where t <= -30 (or NaN): the asymptotic expansion */
static inline double rcw_normal_log_cdf_tail(double t) {
    double r = 1.0 / (t * t);
    return -0.5 * t * t - log(-t) - 0.5 * log(2.0 * M_PI) + log1p(-r + 3.0 * r * r);
}

/* river_cw.calibration._take_step: state = [a, H] stepped with the loss's gradient g and
 * curvature h in a, counted w times; a step that is not finite changes nothing */
static inline void rcw_take_step(double *state, double g, double h, double w) {
    double a, H;
    if (w != 1.0) {
        g = w * g;
        h = w * h;
    }
    H = state[1] + h;
    a = state[0] - g / H;
    if (!(isfinite(a) && isfinite(H))) return;
    state[0] = a < RCW_LOWEST_TEMPERATURE ? RCW_LOWEST_TEMPERATURE
               : a > RCW_HIGHEST_TEMPERATURE ? RCW_HIGHEST_TEMPERATURE
                                              : a;
    state[1] = H;
}

/* river_cw.calibration.newton_step: state = [a, H], stepped on the standardised margin s with
 * sample weight w, z = a s and tail = erfc(-z / sqrt(2)) given */
static inline void rcw_newton_step(double *state, double s, double w, double z, double tail) {
    double lam = rcw_inverse_mills(z, tail);
    rcw_take_step(state, -s * lam, s * s * lam * (z + lam), w);
}

/* river_cw.surprise (forgetting="auto"), its constants and its functions transcribed operation
 * for operation: `observe_binary` steps the surprise [n, e, q_bar] on the label's calibrated
 * probability Phi(z), z = a s (before the Newton step moves a), and `rate` is the forgetting of
 * the next example (rcw_surprise_forgetting: keep and rest, as GaussianClassifier._update sets
 * them). The arrowhead's lean path and the batch kernel's general rows forget as the general
 * path does; the diagonal's and the full engine's lean paths, and the batch kernel's lean CSR
 * rows, take an example only while the rate is 0 and leave the others to the general path
 * (rcw_surprise_forgets). */
#define RCW_SURPRISE_LAMBDA 0.01
#define RCW_SURPRISE_LIMIT 2.0
#define RCW_SURPRISE_GAIN 2.0
#define RCW_SURPRISE_HIGHEST 0.05
#define RCW_SURPRISE_WARM_UP 50.0

/* river_cw.surprise._average: the weight of the next step of EWMAs whose count state[0] (n)
 * it steps by the sample weight w */
static inline double rcw_surprise_weight(double *count, double w) {
    double n = *count + w, weight, even;
    weight = w == 1.0 ? RCW_SURPRISE_LAMBDA : 1.0 - pow(1.0 - RCW_SURPRISE_LAMBDA, w);
    even = w / n;
    if (even > weight) weight = even;
    *count = n;
    return weight;
}

/* river_cw.surprise.observe */
static inline void rcw_surprise_step(double *state, int mistake, double expected, double w) {
    double weight;
    if (!isfinite(expected)) return;
    weight = rcw_surprise_weight(&state[0], w);
    state[1] = state[1] + weight * ((mistake ? 1.0 : 0.0) - state[1]);
    state[2] = state[2] + weight * (expected - state[2]);
}

/* river_cw.surprise.observe_binary, given tail = erfc(-z / sqrt(2)) */
static inline void rcw_surprise_observe(double *state, double tail, double w) {
    double p = 0.5 * tail, q = 1.0 - p;
    rcw_surprise_step(state, p <= 0.5, q < p ? q : p, w);
}

static inline double rcw_surprise_rate(const double *state) {
    double p = state[2], sd, r;
    if (state[0] < RCW_SURPRISE_WARM_UP) return 0.0;
    if (0.01 > p) p = 0.01;
    if (0.5 < p) p = 0.5;
    sd = sqrt(p * (1.0 - p) * RCW_SURPRISE_LAMBDA / (2.0 - RCW_SURPRISE_LAMBDA));
    r = RCW_SURPRISE_GAIN * (state[1] - state[2] - RCW_SURPRISE_LIMIT * sd);
    if (0.0 > r) r = 0.0;
    return RCW_SURPRISE_HIGHEST < r ? RCW_SURPRISE_HIGHEST : r;
}

/* river_cw.surprise's log score (a centred binary model's): LOG_SCORE_LIMIT, LOG_SCORE_FLOOR,
 * LOG_SCORE_CAP, `observe_log_score`'s averages on the label's probability p = 0.5 tail (tail =
 * erfc(-z / sqrt(2)), z = a' s0, the Newton step's) and `log_score_rate` */
#define RCW_LOG_SCORE_LIMIT 1.5
#define RCW_LOG_SCORE_FLOOR 0.1
#define RCW_LOG_SCORE_CAP 5.0

static inline void rcw_log_score_average(double *state, double tail, double w) {
    double p = 0.5 * tail, q, log_p, log_q, entropy, spread, loss, weight, variance;
    if (!isfinite(p)) return;
    q = 1.0 - p;
    log_p = p > 0.0 ? log(p) : -INFINITY;
    log_q = q > 0.0 ? log(q) : 0.0;
    entropy = -(p > 0.0 ? p * log_p : 0.0) - q * log_q;
    spread = (p > 0.0 ? p * log_p * log_p : 0.0) + q * log_q * log_q;
    loss = -log_p;
    if (loss > RCW_LOG_SCORE_CAP) loss = RCW_LOG_SCORE_CAP; /* min(-log_p, cap) */
    variance = spread - entropy * entropy;
    if (0.0 > variance) variance = 0.0;
    weight = rcw_surprise_weight(&state[2], w);
    state[3] = state[3] + weight * (loss - state[3]);
    state[4] = state[4] + weight * (entropy - state[4]);
    state[5] = state[5] + weight * (variance - state[5]);
}

static inline double rcw_log_score_rate(const double *state) {
    double sd, r, variance;
    if (state[2] < RCW_SURPRISE_WARM_UP) return 0.0;
    variance = RCW_LOG_SCORE_FLOOR > state[5] ? RCW_LOG_SCORE_FLOOR : state[5]; /* max(V, floor) */
    sd = sqrt(variance * RCW_SURPRISE_LAMBDA / (2.0 - RCW_SURPRISE_LAMBDA));
    r = RCW_SURPRISE_GAIN * (state[3] - state[4] - RCW_LOG_SCORE_LIMIT * sd);
    if (0.0 > r) r = 0.0;
    return RCW_SURPRISE_HIGHEST < r ? RCW_SURPRISE_HIGHEST : r;
}

/* river_cw.probabilities.sum_of_logs: the exactly rounded sum of acc's terms (its partials
 * freed), -inf where it is beyond float64; 0, or -1 with the other errors math.fsum raises */
static inline int rcw_sum_of_logs(Fsum *acc, double *out) {
    if (fsum_result(acc, out) == 0) return 0;
    if (!PyErr_ExceptionMatches(PyExc_OverflowError)) return -1;
    PyErr_Clear();
    *out = -INFINITY;
    return 0;
}

/* The largest of values[0..K) as Python's max takes it (the first, where NaN compares false) */
static inline double rcw_first_max(const double *values, Py_ssize_t K) {
    double top = values[0];
    Py_ssize_t z;
    for (z = 1; z < K; z++)
        if (values[z] > top) top = values[z];
    return top;
}

/* river_cw.probabilities.normalised, in place: values[z] <- exp(values[z] - top) / their sum
 * (added in order), top their max */
static inline void rcw_normalised(double *values, Py_ssize_t K, double top) {
    double total = 0.0;
    Py_ssize_t z;
    for (z = 0; z < K; z++) values[z] = exp(values[z] - top);
    for (z = 0; z < K; z++) total += values[z];
    for (z = 0; z < K; z++) values[z] = values[z] / total;
}

/* river_cw.calibration.newton_step_multiclass: state = [a, H] stepped on the standardised
 * pairwise margins t (K rows of K, row-major; the diagonal not read) of an example of label
 * `label` with sample weight w, and first the surprise `observed` [n, e, q_bar] (NULL: none) on
 * the same probabilities. scratch holds 5 K doubles. 0, or -1 with the error math.fsum raises
 * (a ValueError, a MemoryError) and nothing stepped. */
static inline int rcw_newton_step_multiclass(double *state, const double *t, Py_ssize_t K,
                                             Py_ssize_t label, double w, double *observed,
                                             double *scratch) {
    double a = state[0], *exact = scratch, *logp = scratch + K, *d = scratch + 2 * K;
    double *e = scratch + 3 * K, *p = scratch + 4 * K;
    double t_zk, u, tail, log_phi, lam, lz, dz, ez, top, others, mean_d, expected_e, variance_d;
    double g, h;
    Py_ssize_t z, k;
    Fsum acc;
    for (z = 0; z < K; z++) {
        fsum_init(&acc);
        lz = dz = ez = 0.0;
        for (k = 0; k < K; k++) {
            if (k == z) continue;
            t_zk = t[z * K + k];
            u = a * t_zk;
            if (u > -30.0) { /* normal_log_cdf and inverse_mills, on their common erfc */
                tail = erfc(-u / sqrt(2.0));
                log_phi = log(0.5 * tail);
                lam = sqrt(2.0 / M_PI) * exp(-0.5 * u * u) / tail;
            } else {
                log_phi = rcw_normal_log_cdf_tail(u);
                lam = rcw_inverse_mills(u, 0.0);
            }
            if (observed != NULL && fsum_add(&acc, log_phi) < 0) {
                fsum_free(&acc);
                return -1;
            }
            lz += log_phi;
            dz += t_zk * lam;
            ez -= t_zk * t_zk * lam * (u + lam);
        }
        if (observed == NULL)
            fsum_free(&acc);
        else if (rcw_sum_of_logs(&acc, &exact[z]) < 0)
            return -1;
        logp[z] = lz;
        d[z] = dz;
        e[z] = ez;
    }
    if (observed != NULL) {
        rcw_normalised(exact, K, rcw_first_max(exact, K));
        top = rcw_first_max(exact, K);
        others = exact[label == 0 ? 1 : 0];
        for (k = label == 0 ? 2 : 1; k < K; k++)
            if (k != label && exact[k] > others) others = exact[k];
        rcw_surprise_step(observed, exact[label] <= others, 1.0 - top, w);
    }
    top = rcw_first_max(logp, K);
    if (!isfinite(top)) return 0;
    memcpy(p, logp, K * sizeof(double));
    rcw_normalised(p, K, top);
    mean_d = 0.0;
    for (z = 0; z < K; z++) mean_d += p[z] * d[z];
    expected_e = variance_d = 0.0;
    for (z = 0; z < K; z++) {
        expected_e += p[z] * e[z];
        variance_d += p[z] * (d[z] - mean_d) * (d[z] - mean_d);
    }
    g = -d[label] + mean_d;
    h = -e[label] + expected_e;
    h += variance_d;
    rcw_take_step(state, g, 0.0 > h ? 0.0 : h, w);
    return 0;
}

/* river_cw.probabilities.multiclass: the probabilities of K >= 3 labels (into p) from their
 * standardised pairwise margins t (K rows of K, row-major) at the temperature a; 0, or -1 with
 * the error math.fsum raises */
static inline int rcw_multiclass(const double *t, Py_ssize_t K, double a, double *p) {
    Py_ssize_t z, k;
    double u;
    Fsum acc;
    for (z = 0; z < K; z++) {
        fsum_init(&acc);
        for (k = 0; k < K; k++) {
            if (k == z) continue;
            u = a * t[z * K + k];
            if (fsum_add(&acc, u > -30.0 ? log(0.5 * erfc(-u / sqrt(2.0)))
                                         : rcw_normal_log_cdf_tail(u)) < 0) {
                fsum_free(&acc);
                return -1;
            }
        }
        if (rcw_sum_of_logs(&acc, &p[z]) < 0) return -1;
    }
    rcw_normalised(p, K, rcw_first_max(p, K));
    return 0;
}

/* A model's calibration as the engine holds it: the temperature's buffer (held while the
 * calibration is), the noise term, the share of flipped labels' buffer (or NULL) and, for a
 * model that sets its own forgetting, the surprise's buffer and, where it centres, the log
 * score's (else NULL); state NULL: no calibration */
typedef struct {
    Py_buffer view;
    double *state;
    double noise;
    Py_buffer surprise_view;
    double *surprise;
    Py_buffer log_score_view;
    double *log_score;
    Py_buffer flips_view;
    double *flips;
} RcwTemperature;

static void rcw_temperature_release(RcwTemperature *t) {
    if (t->state != NULL) PyBuffer_Release(&t->view);
    if (t->surprise != NULL) PyBuffer_Release(&t->surprise_view);
    if (t->log_score != NULL) PyBuffer_Release(&t->log_score_view);
    if (t->flips != NULL) PyBuffer_Release(&t->flips_view);
    t->state = NULL;
    t->surprise = NULL;
    t->log_score = NULL;
    t->flips = NULL;
}

/* river_cw.flips.observe: the share of flipped labels [n, eps] stepped in place by online EM on
 * an example whose label the calibrated margin gives probability `right`, with sample weight w;
 * a step that is not finite, or from a label of probability 0, changes nothing */
static inline void rcw_flips_observe(double *state, double right, double w) {
    double n = state[0] + w, eps = state[1];
    double p = eps + (1.0 - 2.0 * eps) * right, share;
    if (!(p > 0.0)) return; /* no share and no chance of the label: nothing to learn from */
    share = eps + w * (eps * (1.0 - right) / p - eps) / n;
    if (!isfinite(share)) return;
    state[0] = n;
    state[1] = share < 0.5 ? share : 0.5; /* min(share, MOST) */
}

/* A writable buffer of `count` float64 into *view; 0, or -1 with a TypeError naming `what` */
static int rcw_float64_buffer(PyObject *obj, Py_buffer *view, Py_ssize_t count, const char *what) {
    if (PyObject_GetBuffer(obj, view, PyBUF_WRITABLE | PyBUF_FORMAT) < 0) return -1;
    if (view->len != count * (Py_ssize_t)sizeof(double) || view->format == NULL ||
        strcmp(view->format, "d") != 0) {
        PyBuffer_Release(view);
        PyErr_SetString(PyExc_TypeError, what);
        return -1;
    }
    return 0;
}

/* `obj` None (*out NULL) or a writable buffer of `count` float64 into *view (*out its numbers);
 * 0, or -1 with a TypeError naming `what` */
static int rcw_optional_float64_buffer(PyObject *obj, Py_buffer *view, double **out,
                                       Py_ssize_t count, const char *what) {
    *out = NULL;
    if (obj == Py_None) return 0;
    if (rcw_float64_buffer(obj, view, count, what) < 0) return -1;
    *out = view->buf;
    return 0;
}

/* `calibration`, None or (temperature, noise, surprise, log_score, flips), surprise None or the
 * model's [n, e, q_bar], log_score None or its [a', H', n, L, H, V], flips None or its [n, eps],
 * into *t (its previous buffers released); 0, or -1 with an error, *t unchanged */
static int rcw_temperature_parse(PyObject *calibration, RcwTemperature *t) {
    RcwTemperature parsed;
    memset(&parsed, 0, sizeof parsed);
    if (calibration != Py_None) {
        if (!PyTuple_Check(calibration) || PyTuple_GET_SIZE(calibration) != 5) {
            PyErr_SetString(PyExc_TypeError, "a calibration is (temperature, noise, surprise, "
                                             "log_score, flips) or None");
            return -1;
        }
        parsed.noise = PyFloat_AsDouble(PyTuple_GET_ITEM(calibration, 1));
        if (parsed.noise == -1.0 && PyErr_Occurred()) return -1;
        if (rcw_float64_buffer(PyTuple_GET_ITEM(calibration, 0), &parsed.view, 2,
                               "a temperature is two float64, [a, H]") < 0)
            return -1;
        parsed.state = parsed.view.buf;
        if (rcw_optional_float64_buffer(PyTuple_GET_ITEM(calibration, 2), &parsed.surprise_view,
                                        &parsed.surprise, 3,
                                        "a surprise is three float64, [n, e, q_bar]") < 0 ||
            rcw_optional_float64_buffer(PyTuple_GET_ITEM(calibration, 3), &parsed.log_score_view,
                                        &parsed.log_score, 6,
                                        "a log score is six float64, [a', H', n, L, H, V]") < 0 ||
            rcw_optional_float64_buffer(PyTuple_GET_ITEM(calibration, 4), &parsed.flips_view,
                                        &parsed.flips, 2,
                                        "a share of flips is two float64, [n, eps]") < 0) {
            rcw_temperature_release(&parsed);
            return -1;
        }
    }
    rcw_temperature_release(t);
    *t = parsed;
    return 0;
}

/* Whether the calibration t (NULL: none) sets the next example's forgetting above 0: the
 * general path's example then, where a lean path does not forget */
static inline int rcw_surprise_forgets(const RcwTemperature *t) {
    return t != NULL && t->surprise != NULL && rcw_surprise_rate(t->surprise) > 0.0;
}

/* The forgetting of the next example of sample weight w, as GaussianClassifier._update sets it
 * from the surprise of the calibration t (NULL, or no surprise: none), read from its log score
 * where the example is centred and t keeps one, the prior variance a: keep = 1 - f (w == 1) or
 * (1 - f)^w, at least the least normal float64, rest = (1 - keep) / a; keep 1 and rest 0 where
 * the rate f is 0 */
static inline void rcw_surprise_forgetting(const RcwTemperature *t, double w, double prior,
                                           int centred, double *keep, double *rest) {
    double f = t == NULL || t->surprise == NULL       ? 0.0
               : centred && t->log_score != NULL ? rcw_log_score_rate(t->log_score)
                                                 : rcw_surprise_rate(t->surprise);
    *keep = 1.0;
    *rest = 0.0;
    if (f == 0.0) return;
    *keep = w == 1.0 ? 1.0 - f : pow(1.0 - f, w);
    if (DBL_MIN > *keep) *keep = DBL_MIN; /* max(keep, sys.float_info.min) */
    *rest = (1.0 - *keep) / prior;
}

/* the Newton step on the margin the rule's step takes (m, v > 0), where t calibrates (t not
 * NULL, a state held), the surprise's and the share of flips' steps before it; and the log
 * score's where t keeps one (river_cw.surprise.observe_log_score: its averages where the
 * example is centred) */
static inline void rcw_temperature_step(const RcwTemperature *t, double m, double v, double w,
                                        int centred) {
    double s, z, tail;
    if (t == NULL || t->state == NULL) return;
    s = m / sqrt(v + t->noise);
    z = t->state[0] * s;
    tail = t->surprise != NULL || t->flips != NULL || z > -30.0 ? erfc(-z / sqrt(2.0)) : 0.0;
    if (t->surprise != NULL) rcw_surprise_observe(t->surprise, tail, w);
    if (t->flips != NULL) rcw_flips_observe(t->flips, 0.5 * tail, w);
    if (t->log_score != NULL) {
        double s0 = m / sqrt(v), z0 = t->log_score[0] * s0, tail0 = erfc(-z0 / sqrt(2.0));
        if (centred) rcw_log_score_average(t->log_score, tail0, w);
        rcw_newton_step(t->log_score, s0, w, z0, tail0);
    }
    rcw_newton_step(t->state, s, w, z, tail);
}

#endif
