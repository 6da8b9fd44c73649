/* A mutex and condition variables for the drivers' worker threads, callable without the GIL.
 *
 * POSIX threads where they exist, the Windows primitives otherwise.  emb_cond_wait_ms waits at most the
 * given milliseconds (0 on a wake-up or a spurious return, 1 on time-out), so a waiting main thread can
 * look at Python's signals in between.
 */
#ifndef EMBKIT_SYNC_H
#define EMBKIT_SYNC_H

#ifdef _WIN32
#include <windows.h>
typedef SRWLOCK emb_mutex;
typedef CONDITION_VARIABLE emb_cond;
static inline int emb_mutex_init(emb_mutex *m) { InitializeSRWLock(m); return 0; }
static inline void emb_mutex_destroy(emb_mutex *m) { (void)m; }
static inline void emb_mutex_lock(emb_mutex *m) { AcquireSRWLockExclusive(m); }
static inline void emb_mutex_unlock(emb_mutex *m) { ReleaseSRWLockExclusive(m); }
static inline int emb_cond_init(emb_cond *c) { InitializeConditionVariable(c); return 0; }
static inline void emb_cond_destroy(emb_cond *c) { (void)c; }
static inline void emb_cond_wait(emb_cond *c, emb_mutex *m) { SleepConditionVariableSRW(c, m, INFINITE, 0); }
static inline int emb_cond_wait_ms(emb_cond *c, emb_mutex *m, int ms) {
    return SleepConditionVariableSRW(c, m, (DWORD)ms, 0) ? 0 : 1;
}
static inline void emb_cond_broadcast(emb_cond *c) { WakeAllConditionVariable(c); }
#else
#include <pthread.h>
#include <time.h>
#include <errno.h>
typedef pthread_mutex_t emb_mutex;
typedef pthread_cond_t emb_cond;
static inline int emb_mutex_init(emb_mutex *m) { return pthread_mutex_init(m, NULL); }
static inline void emb_mutex_destroy(emb_mutex *m) { pthread_mutex_destroy(m); }
static inline void emb_mutex_lock(emb_mutex *m) { pthread_mutex_lock(m); }
static inline void emb_mutex_unlock(emb_mutex *m) { pthread_mutex_unlock(m); }
static inline int emb_cond_init(emb_cond *c) { return pthread_cond_init(c, NULL); }
static inline void emb_cond_destroy(emb_cond *c) { pthread_cond_destroy(c); }
static inline void emb_cond_wait(emb_cond *c, emb_mutex *m) { pthread_cond_wait(c, m); }
static inline int emb_cond_wait_ms(emb_cond *c, emb_mutex *m, int ms) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += ms / 1000;
    ts.tv_nsec += (long)(ms % 1000) * 1000000L;
    if (ts.tv_nsec >= 1000000000L) { ts.tv_sec += 1; ts.tv_nsec -= 1000000000L; }
    return pthread_cond_timedwait(c, m, &ts) == ETIMEDOUT ? 1 : 0;
}
static inline void emb_cond_broadcast(emb_cond *c) { pthread_cond_broadcast(c); }
#endif

#endif
