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

typedef float emb_v8 __attribute__((vector_size(32)));

static inline emb_v8 emb_load8(const float *p) {
    emb_v8 v;
    __builtin_memcpy(&v, p, sizeof(v));
    return v;
}

static inline float emb_hsum8(emb_v8 v) {
    return ((v[0] + v[4]) + (v[1] + v[5])) + ((v[2] + v[6]) + (v[3] + v[7]));
}

/* <a, b>, two independent accumulators so the adds pipeline */
EMB_CLONES static float emb_dot(const float *a, const float *b, int n) {
    emb_v8 s0 = {0}, s1 = {0};
    int i = 0;
    for (; i + 16 <= n; i += 16) {
        s0 += emb_load8(a + i) * emb_load8(b + i);
        s1 += emb_load8(a + i + 8) * emb_load8(b + i + 8);
    }
    if (i + 8 <= n) {
        s0 += emb_load8(a + i) * emb_load8(b + i);
        i += 8;
    }
    float s = emb_hsum8(s0 + s1);
    for (; i < n; i++) s += a[i] * b[i];
    return s;
}

/* out[j] = <h, W[ids[j]]> for j < m: the rows are independent, so two are computed at a time */
EMB_CLONES static void emb_dot_rows(const float *h, const float *W, const int *ids, int m, int n, float *out) {
    int j = 0;
    for (; j + 2 <= m; j += 2) {
        const float *r0 = W + (long)ids[j] * n, *r1 = W + (long)ids[j + 1] * n;
        emb_v8 s0 = {0}, s1 = {0}, t0 = {0}, t1 = {0};
        int i = 0;
        for (; i + 16 <= n; i += 16) {
            emb_v8 x = emb_load8(h + i), y = emb_load8(h + i + 8);
            s0 += x * emb_load8(r0 + i);
            s1 += x * emb_load8(r1 + i);
            t0 += y * emb_load8(r0 + i + 8);
            t1 += y * emb_load8(r1 + i + 8);
        }
        if (i + 8 <= n) {
            emb_v8 x = emb_load8(h + i);
            s0 += x * emb_load8(r0 + i);
            s1 += x * emb_load8(r1 + i);
            i += 8;
        }
        float a0 = emb_hsum8(s0 + t0), a1 = emb_hsum8(s1 + t1);
        for (; i < n; i++) {
            a0 += h[i] * r0[i];
            a1 += h[i] * r1[i];
        }
        out[j] = a0;
        out[j + 1] = a1;
    }
    if (j < m) out[j] = emb_dot(h, W + (long)ids[j] * n, n);
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

/* Ask for the cache lines of a row of n floats. */
static inline void emb_prefetch_row(const float *row, int n) {
    const char *p = (const char *)row;
    const char *end = (const char *)(row + n);
    for (; p < end; p += 64) __builtin_prefetch(p, 1, 3);
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
