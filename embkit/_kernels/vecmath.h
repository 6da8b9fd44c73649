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
typedef float emb_v4 __attribute__((vector_size(16)));

static inline emb_v8 emb_load8(const float *p) { emb_v8 v; __builtin_memcpy(&v, p, sizeof(v)); return v; }
static inline void emb_store8(float *p, emb_v8 v) { __builtin_memcpy(p, &v, sizeof(v)); }
static inline emb_v4 emb_load4(const float *p) { emb_v4 v; __builtin_memcpy(&v, p, sizeof(v)); return v; }
static inline void emb_store4(float *p, emb_v4 v) { __builtin_memcpy(p, &v, sizeof(v)); }

static inline float emb_hsum8(emb_v8 v) {
    return ((v[0] + v[4]) + (v[1] + v[5])) + ((v[2] + v[6]) + (v[3] + v[7]));
}

static inline float emb_hsum4(emb_v4 v) { return (v[0] + v[2]) + (v[1] + v[3]); }

/* Every loop below walks 8 floats at a time, then one block of 4, then single floats, so a row of
 * 100 floats costs 12 + 1 vector steps and no scalar tail. */

/* <a, b>, two accumulators so the adds pipeline */
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
    if (i + 4 <= n) {
        s += emb_hsum4(emb_load4(a + i) * emb_load4(b + i));
        i += 4;
    }
    for (; i < n; i++) s += a[i] * b[i];
    return s;
}

/* <h, r0> and <h, r1>: two rows at a time share the loads of h */
static inline void emb_dot2(const float *h, const float *r0, const float *r1, int n, float *out0, float *out1) {
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
    if (i + 4 <= n) {
        emb_v4 x = emb_load4(h + i);
        a0 += emb_hsum4(x * emb_load4(r0 + i));
        a1 += emb_hsum4(x * emb_load4(r1 + i));
        i += 4;
    }
    for (; i < n; i++) {
        a0 += h[i] * r0[i];
        a1 += h[i] * r1[i];
    }
    *out0 = a0;
    *out1 = a1;
}

/* out[j] = <h, W[ids[j]]> for j < m: the rows are independent, so two are computed at a time */
EMB_CLONES static void emb_dot_rows(const float *h, const float *W, const int *ids, int m, int n, float *out) {
    int j = 0;
    for (; j + 2 <= m; j += 2)
        emb_dot2(h, W + (long)ids[j] * n, W + (long)ids[j + 1] * n, n, out + j, out + j + 1);
    if (j < m) out[j] = emb_dot(h, W + (long)ids[j] * n, n);
}

/* out[j] = <h, rows[j]> for j < m, as emb_dot_rows (the same sums) for rows given by pointers */
EMB_CLONES static void emb_dot_ptrs(const float *h, float *const *rows, int m, int n, float *out) {
    int j = 0;
    for (; j + 2 <= m; j += 2) emb_dot2(h, rows[j], rows[j + 1], n, out + j, out + j + 1);
    if (j < m) out[j] = emb_dot(h, rows[j], n);
}

/* y += a * x */
EMB_CLONES static void emb_axpy(float a, const float *x, float *y, int n) {
    int i = 0;
    for (; i + 8 <= n; i += 8) emb_store8(y + i, emb_load8(y + i) + a * emb_load8(x + i));
    if (i + 4 <= n) {
        emb_store4(y + i, emb_load4(y + i) + a * emb_load4(x + i));
        i += 4;
    }
    for (; i < n; i++) y[i] += a * x[i];
}

/* y += sum_j coef[j] * X[j] over m rows: y is loaded and stored once */
EMB_CLONES static void emb_axpy_rows(const float *coef, float *const *X, int m, float *y, int n) {
    int i = 0;
    for (; i + 8 <= n; i += 8) {
        emb_v8 acc = emb_load8(y + i);
        for (int j = 0; j < m; j++) acc += coef[j] * emb_load8(X[j] + i);
        emb_store8(y + i, acc);
    }
    if (i + 4 <= n) {
        emb_v4 acc = emb_load4(y + i);
        for (int j = 0; j < m; j++) acc += coef[j] * emb_load4(X[j] + i);
        emb_store4(y + i, acc);
        i += 4;
    }
    for (; i < n; i++) {
        float acc = y[i];
        for (int j = 0; j < m; j++) acc += coef[j] * X[j][i];
        y[i] = acc;
    }
}

/* y = a * x */
EMB_CLONES static void emb_scale_copy(float a, const float *x, float *y, int n) {
    for (int i = 0; i < n; i++) y[i] = a * x[i];
}

/* One output row with scalar gradient g:  grad += g * out;  out += g * h  (reads out once). */
EMB_CLONES static void emb_row_update(float g, const float *h, float *out, float *grad, int n) {
    int i = 0;
    for (; i + 8 <= n; i += 8) {
        emb_v8 o = emb_load8(out + i);
        emb_store8(grad + i, emb_load8(grad + i) + g * o);
        emb_store8(out + i, o + g * emb_load8(h + i));
    }
    if (i + 4 <= n) {
        emb_v4 o = emb_load4(out + i);
        emb_store4(grad + i, emb_load4(grad + i) + g * o);
        emb_store4(out + i, o + g * emb_load4(h + i));
        i += 4;
    }
    for (; i < n; i++) {
        float o = out[i];
        grad[i] += g * o;
        out[i] = o + g * h[i];
    }
}

/* ---- mini-batch products: m input rows H against c output rows O ----------------------------------- */

/* Scores of R inputs (from a) against W outputs (from b): vector accumulators over [0, n8), then the tail */
#define EMB_SCORE_BLOCK(R, W)                                                                             \
    for (; b + W <= c; b += W) {                                                                         \
        emb_v8 acc[R][W];                                                                                \
        for (int r = 0; r < R; r++) for (int t = 0; t < W; t++) acc[r][t] = (emb_v8){0};                 \
        for (int i = 0; i < n8; i += 8) {                                                                \
            emb_v8 x[R];                                                                                 \
            for (int r = 0; r < R; r++) x[r] = emb_load8(H[a + r] + i);                                  \
            for (int t = 0; t < W; t++) {                                                                \
                emb_v8 o = emb_load8(O[b + t] + i);                                                      \
                for (int r = 0; r < R; r++) acc[r][t] += x[r] * o;                                       \
            }                                                                                            \
        }                                                                                                \
        if (n4 > n8) { /* one 4-wide step, folded into the low half of the accumulators */                \
            emb_v4 x4[R];                                                                                \
            for (int r = 0; r < R; r++) x4[r] = emb_load4(H[a + r] + n8);                                \
            for (int t = 0; t < W; t++) {                                                                \
                emb_v4 o = emb_load4(O[b + t] + n8);                                                     \
                for (int r = 0; r < R; r++) {                                                            \
                    emb_v4 p = x4[r] * o;                                                                \
                    emb_v8 p8 = {p[0], p[1], p[2], p[3], 0, 0, 0, 0};                                    \
                    acc[r][t] += p8;                                                                     \
                }                                                                                        \
            }                                                                                            \
        }                                                                                                \
        for (int r = 0; r < R; r++)                                                                      \
            for (int t = 0; t < W; t++) {                                                                \
                float v = emb_hsum8(acc[r][t]);                                                          \
                for (int q = n4; q < n; q++) v += H[a + r][q] * O[b + t][q];                             \
                S[(a + r) * c + b + t] = v;                                                              \
            }                                                                                            \
    }

/* S[a * c + b] = <H[a], O[b]>, blocked 2 inputs x 4 outputs so each loaded slice feeds several FMAs */
EMB_CLONES static void emb_scores(float *const *H, int m, float *const *O, int c, float *S, int n) {
    int n8 = n & ~7, n4 = n & ~3, a = 0;
    for (; a + 2 <= m; a += 2) {
        int b = 0;
        EMB_SCORE_BLOCK(2, 4)
        EMB_SCORE_BLOCK(2, 2)
        EMB_SCORE_BLOCK(2, 1)
    }
    for (; a < m; a++) {
        int b = 0;
        EMB_SCORE_BLOCK(1, 4)
        EMB_SCORE_BLOCK(1, 2)
        EMB_SCORE_BLOCK(1, 1)
    }
}

/* One block of W output rows (W = 4, 2 or 1) of emb_batch_update over the columns [i0, i1) */
#define EMB_BATCH_BLOCK(W, VT, LOAD, STORE, STEP)                                                        \
    for (; b + W <= c; b += W) {                                                                         \
        for (int i = i0; i + STEP <= i1; i += STEP) {                                                    \
            VT o[W], acc[W];                                                                             \
            for (int t = 0; t < W; t++) { o[t] = LOAD(O[b + t] + i); acc[t] = o[t]; }                    \
            for (int a = 0; a < m; a++) {                                                                \
                VT h = LOAD(H[a] + i);                                                                   \
                VT d = first ? (VT){0} : LOAD(dH + (long)a * n + i);                                      \
                const float *g = G + (long)a * c + b;                                                    \
                for (int t = 0; t < W; t++) { d += g[t] * o[t]; acc[t] += g[t] * h; }                    \
                STORE(dH + (long)a * n + i, d);                                                          \
            }                                                                                            \
            for (int t = 0; t < W; t++) STORE(O[b + t] + i, acc[t]);                                     \
        }                                                                                                \
        first = 0;                                                                                       \
    }

static inline float emb_loadf(const float *p) { return *p; }
static inline void emb_storef(float *p, float v) { *p = v; }

/* Apply the gradient matrix G (m x c, already scaled by the learning rate) of a mini-batch:
 *   dH[a] = sum_b G[a][b] * O[b]          (m x n, overwritten)
 *   O[b] += sum_a G[a][b] * H[a]
 * both from the values before the call.  The output rows must be distinct (merge duplicates first). */
static inline __attribute__((always_inline)) void emb_batch_range(float *const *H, int m, float *const *O, int c, const float *G, float *dH,
                                   int n, int i0, int i1, int vec) {
    int b = 0, first = 1;
    if (vec == 8) {
        EMB_BATCH_BLOCK(4, emb_v8, emb_load8, emb_store8, 8)
        EMB_BATCH_BLOCK(2, emb_v8, emb_load8, emb_store8, 8)
        EMB_BATCH_BLOCK(1, emb_v8, emb_load8, emb_store8, 8)
    } else if (vec == 4) {
        EMB_BATCH_BLOCK(4, emb_v4, emb_load4, emb_store4, 4)
        EMB_BATCH_BLOCK(2, emb_v4, emb_load4, emb_store4, 4)
        EMB_BATCH_BLOCK(1, emb_v4, emb_load4, emb_store4, 4)
    } else {
        EMB_BATCH_BLOCK(4, float, emb_loadf, emb_storef, 1)
        EMB_BATCH_BLOCK(2, float, emb_loadf, emb_storef, 1)
        EMB_BATCH_BLOCK(1, float, emb_loadf, emb_storef, 1)
    }
    if (first)
        for (int a = 0; a < m; a++)
            for (int i = i0; i < i1; i++) dH[(long)a * n + i] = 0.0f;
}

EMB_CLONES static void emb_batch_update(float *const *H, int m, float *const *O, int c, const float *G,
                                        float *dH, int n) {
    int n8 = n & ~7, n4 = n & ~3;
    emb_batch_range(H, m, O, c, G, dH, n, 0, n8, 8);
    if (n4 > n8) emb_batch_range(H, m, O, c, G, dH, n, n8, n4, 4);
    if (n > n4) emb_batch_range(H, m, O, c, G, dH, n, n4, n, 1);
}

/* Ask for the cache lines of a row of n floats. */
static inline void emb_prefetch_row(const float *row, int n) {
    const char *p = (const char *)row;
    const char *end = (const char *)(row + n);
    for (; p < end; p += 64) __builtin_prefetch(p, 1, 3);
}

/* Sigmoid and log-sigmoid by linear interpolation in a table over [-EMB_SIG_MAX, EMB_SIG_MAX]
 * (max error below 1e-6), exact outside it; NaN propagates. */
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

/* sigmoid(x), and log(sigmoid(x)) in *logsig, from one table position */
static inline float emb_sigmoid_log(float x, float *logsig) {
    if (x > -EMB_SIG_MAX && x < EMB_SIG_MAX) {
        float t = (x + EMB_SIG_MAX) * EMB_SIG_PER_UNIT;
        int i = (int)t;
        float f = t - (float)i;
        *logsig = emb_logsig_tab[i] + f * (emb_logsig_tab[i + 1] - emb_logsig_tab[i]);
        return emb_sig_tab[i] + f * (emb_sig_tab[i + 1] - emb_sig_tab[i]);
    }
    if (x >= EMB_SIG_MAX) { *logsig = -log1pf(expf(-x)); return 1.0f / (1.0f + expf(-x)); }
    if (x <= -EMB_SIG_MAX) { *logsig = x - log1pf(expf(x)); return expf(x) / (1.0f + expf(x)); }
    *logsig = x;
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

/* e^x for x <= 0 (0 below -87.3), in operations a loop vectorises: x = n ln2 + r with |r| <= ln2 / 2, e^r by
 * Cephes' polynomial, 2^n put in the exponent's bits.  The kernels' reassociation merges the two parts of
 * ln2, so the relative error grows with |x|: below 1e-6 for x > -20, 4e-6 down to -87.  (Its selects are
 * written as gcc if-converts them: a clamp of x itself keeps the loop scalar.) */
static inline float emb_exp_nonpositive(float x) {
    int n = (int)(x * 1.44269504f - 0.5f);          /* round(x / ln2): x <= 0, so truncation of t - 0.5 */
    n = n < -126 ? -126 : n;                        /* a normal power of two; below, x < -87.3 gives 0 */
    float fn = (float)n;
    float r = (x - fn * 0.693359375f) + fn * 2.12194440e-4f;        /* x - n ln2, ln2 split in two */
    float p = 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    p = p * r * r + r + 1.0f;
    int bits = (n + 127) << 23;
    float scale;
    __builtin_memcpy(&scale, &bits, sizeof(scale));
    return x < -87.3f ? 0.0f : p * scale;
}

/* log(1 + e) for 0 <= e <= 1: 2 atanh(z), z = e / (2 + e) <= 1/3, by its series to z^13 (relative error
 * below 1e-8 of the series; float32 rounding beyond) */
static inline float emb_log1p_unit(float e) {
    float z = e / (2.0f + e), z2 = z * z;
    float p = 1.0f / 13;
    p = p * z2 + 1.0f / 11;
    p = p * z2 + 1.0f / 9;
    p = p * z2 + 1.0f / 7;
    p = p * z2 + 1.0f / 5;
    p = p * z2 + 1.0f / 3;
    p = p * z2 + 1.0f;
    return 2.0f * z * p;
}

/* The binary logistic loss of a row of scores: S[j] += b[j], then S[j] = sigmoid(S[j]) * scale (the loss's
 * gradient before the labels' -scale), for j < n; returns sum_j log(1 + e^(S[j] + b[j])).  One pass a
 * vectorising compiler turns into vector code (no table, no branch); NaN scores give NaN. */
EMB_CLONES static double emb_logistic_row(float *S, const float *b, int n, float scale) {
    float loss = 0.0f;
    for (int j = 0; j < n; j++) {
        float s = S[j] + b[j];
        float e = emb_exp_nonpositive(-fabsf(s));   /* e^-|s| in (0, 1] */
        float up = s > 0.0f ? s : 0.0f;
        loss += up + emb_log1p_unit(e);             /* log(1 + e^s) = max(s, 0) + log(1 + e^-|s|) */
        S[j] = (s >= 0.0f ? 1.0f : e) / (1.0f + e) * scale;
    }
    return (double)loss;
}


#endif
