/* Hot scalar and vector helpers for the embkit kernels.
 *
 * The build targets baseline x86-64; with gcc on x86-64 Linux each vector helper is cloned for AVX2+FMA and
 * AVX-512 and the best clone is chosen when the module loads (ifunc).  The kernels are compiled with
 * reassociation enabled so the sums below vectorise.
 */
#ifndef EMBKIT_VECMATH_H
#define EMBKIT_VECMATH_H

#include <math.h>

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__linux__) && !defined(EMBKIT_NO_CLONES)
#define EMB_CLONES __attribute__((target_clones("default", "arch=x86-64-v3", "arch=x86-64-v4")))
#else
#define EMB_CLONES
#endif

#ifdef _OPENMP
#define EMBKIT_HAVE_OPENMP 1
#else
#define EMBKIT_HAVE_OPENMP 0
#endif

/* <a, b> */
EMB_CLONES static float emb_dot(const float *a, const float *b, int n) {
    float s = 0.0f;
    for (int i = 0; i < n; i++) s += a[i] * b[i];
    return s;
}

/* y += a * x */
EMB_CLONES static void emb_axpy(float a, const float *x, float *y, int n) {
    for (int i = 0; i < n; i++) y[i] += a * x[i];
}

/* y = a * x */
EMB_CLONES static void emb_scale_copy(float a, const float *x, float *y, int n) {
    for (int i = 0; i < n; i++) y[i] = a * x[i];
}

/* One output row with scalar gradient g:  grad += g * out;  out += g * h  (reads out once). */
EMB_CLONES static void emb_row_update(float g, const float *h, float *out, float *grad, int n) {
    for (int i = 0; i < n; i++) {
        float o = out[i];
        grad[i] += g * o;
        out[i] = o + g * h[i];
    }
}

/* Sigmoid and log-sigmoid by linear interpolation in a table over [-EMB_SIG_MAX, EMB_SIG_MAX]
 * (max error about 1e-7), exact outside it; NaN propagates. */
#define EMB_SIG_MAX 8.0f
#define EMB_SIG_PER_UNIT 256
#define EMB_SIG_N (2 * 8 * EMB_SIG_PER_UNIT)

static float emb_sig_tab[EMB_SIG_N + 2];
static float emb_logsig_tab[EMB_SIG_N + 2];

static void emb_init_tables(void) {
    for (int i = 0; i <= EMB_SIG_N + 1; i++) {
        double x = (double)i / EMB_SIG_PER_UNIT - EMB_SIG_MAX;
        emb_sig_tab[i] = (float)(1.0 / (1.0 + exp(-x)));
        emb_logsig_tab[i] = (float)(-log1p(exp(-x)));
    }
}

static inline float emb_sigmoid(float x) {
    if (x > -EMB_SIG_MAX && x < EMB_SIG_MAX) {
        float t = (x + EMB_SIG_MAX) * EMB_SIG_PER_UNIT;
        int i = (int)t;
        float f = t - (float)i;
        return emb_sig_tab[i] + f * (emb_sig_tab[i + 1] - emb_sig_tab[i]);
    }
    if (x >= EMB_SIG_MAX) return 1.0f / (1.0f + expf(-x));
    if (x <= -EMB_SIG_MAX) return expf(x) / (1.0f + expf(x));
    return x; /* NaN */
}

/* log(sigmoid(x)) */
static inline float emb_log_sigmoid(float x) {
    if (x > -EMB_SIG_MAX && x < EMB_SIG_MAX) {
        float t = (x + EMB_SIG_MAX) * EMB_SIG_PER_UNIT;
        int i = (int)t;
        float f = t - (float)i;
        return emb_logsig_tab[i] + f * (emb_logsig_tab[i + 1] - emb_logsig_tab[i]);
    }
    if (x >= EMB_SIG_MAX) return -log1pf(expf(-x));
    if (x <= -EMB_SIG_MAX) return x - log1pf(expf(x));
    return x; /* NaN */
}

#endif
