# cython: cdivision=True
"""The dispatch every driver shares: chunks cut into slices, trained by a pool of worker threads.

A driver (``windows``, ``pairs``, ``rows``) is a :class:`Driver` subclass that says two things: how a chunk
of its data becomes a :class:`ChunkJob` (its settings for the chunk and the boundaries of the chunk's
slices, :meth:`Driver.open_chunk`) and how one slice is trained without the GIL
(:meth:`Driver.train_slice`).  Everything else is here.

A :class:`Pipeline` owns ``n_threads`` worker threads for a whole run.  Chunks are submitted to it and
their slices are handed out in submission order to whichever thread is free, so a thread that finishes the
last slice of a chunk early goes on with the next chunk instead of waiting at a barrier, and the caller
reads and prepares the following chunk meanwhile.  Results come back per chunk, oldest first.  Each slice
has its own random generator, seeded from ``(seed, chunk_seed, slice)``, so results do not depend on which
thread trained it; with one thread the slices run in submission order and a seeded run is reproducible
bit for bit.  The threads are Python threads that release the GIL for the whole run, so the same code
serves builds with and without OpenMP.
"""
import threading
from collections import deque

import numpy as np

from cpython.exc cimport PyErr_CheckSignals
from libc.stdint cimport uint64_t, int32_t
from libc.stdlib cimport malloc, calloc, free
from libc.string cimport memset

from embkit._kernels.common cimport mix_seed


cdef class ChunkJob:
    """One chunk of a driver's data prepared for training (made by :meth:`Driver.open_chunk`)."""

    def __dealloc__(self):
        free(self.config)
        free(self.bounds)
        free(self.results)

    def totals(self):
        """``(loss, examples, units, kept units)`` summed over the slices; MemoryError if one could not
        allocate."""
        cdef double loss = 0.0
        cdef long long examples = 0, units = 0, kept = 0
        cdef int s
        for s in range(self.n_slices):
            if self.results[s].status != 0:
                raise MemoryError("could not allocate training scratch buffers")
            loss += self.results[s].loss
            examples += self.results[s].examples
            units += self.results[s].units
            kept += self.results[s].kept
        return loss, examples, units, kept


cdef inline bint untaken(ChunkJob job) noexcept nogil:
    return job.taken < job.n_slices


cdef ChunkJob chunk_job(Py_ssize_t config_bytes, int n_slices, object keep):
    """A job with ``config_bytes`` of zeroed driver settings and room for ``n_slices`` slices."""
    cdef ChunkJob job = ChunkJob.__new__(ChunkJob)
    job.config = calloc(1, config_bytes)
    job.bounds = <Py_ssize_t *> calloc(n_slices + 1, sizeof(Py_ssize_t))
    job.results = <SliceResult *> calloc(max(n_slices, 1), sizeof(SliceResult))
    if job.config == NULL or job.bounds == NULL or job.results == NULL:
        raise MemoryError()
    job.n_slices = n_slices
    job.remaining = n_slices
    job.keep = keep
    return job


#: most sets of hot-row copies a thread may hold (:meth:`Driver.hot_rows`, ``banks``): a study of up to this
#: many threads on one
MAX_BANKS = 1024


def slice_count(int threads):
    """Slices a chunk trained by ``threads`` threads is cut into: one for one thread (in order, reproducible),
    ``SLICES_PER_THREAD`` per thread otherwise, so a thread that is done early takes another slice."""
    if threads < 1:
        raise ValueError("threads must be >= 1, got %d" % threads)
    return 1 if threads == 1 else threads * SLICES_PER_THREAD


cdef class Driver:
    """Base of the drivers' trainers: tables, loss, sampler and settings of one run.

    Subclasses fill their settings in ``__init__`` and implement :meth:`open_chunk` and :meth:`train_slice`.
    The Python interface is the same for every driver: :meth:`before_chunk`, :meth:`train_chunk` (one chunk,
    synchronously) and :meth:`pipeline` (many chunks on threads that live for the run).
    """

    cdef int train_slice(self, const void *config, Py_ssize_t begin, Py_ssize_t end, uint64_t seed,
                         SliceResult *out) noexcept nogil:
        return -1

    cdef ChunkJob open_chunk(self, tuple args, double before, int n_slices):
        raise NotImplementedError

    cdef int set_run(self, RunConfig *run, float[:, ::1] W_in, float[:, ::1] W_out, Loss loss, Sampler sampler,
                     int negative, double alpha, double min_alpha, double total, uint64_t seed) except -1:
        """Check the tables, loss and sampler (ValueError naming the mismatch), keep them, and fill ``run``:
        the settings every driver's slices read (``total`` units in the run, ``negative`` a step)."""
        check_objective(W_in.shape[1], W_out.shape[1], W_out.shape[0], loss, sampler, negative)
        self.W_in, self.W_out, self.loss, self.sampler, self.seed = W_in, W_out, loss, sampler, seed
        self.n_classes = loss.classes_for_table(W_out.shape[0])
        run.W_in = &W_in[0, 0]
        run.W_out = &W_out[0, 0]
        run.dim = W_in.shape[1]
        run.negative = negative if loss.uses_negatives else 0
        run.columns = loss.columns(run.negative, W_out.shape[0])
        run.sampler_scratch = sampler.scratch_bytes() if sampler is not None else 0
        run.alpha = alpha
        run.min_alpha = min_alpha
        run.total = total if total > 0 else 1.0
        run.before = 0.0
        return 0

    @property
    def overlaps_chunks(self):
        """Whether chunks may train while the previous one is still training: not when the sampler must be
        refreshed between chunks (it derives tables from ``W_out`` that its draws read)."""
        return self.sampler is None or not self.sampler.refreshes

    def hot_rows(self, ids=None, int every=1024, float scale=1.0, int limit=0, bint inputs=False, limit_in=None,
                 scale_in=None, int banks=1):
        """Give every thread its own copies of the output rows of the classes ``ids`` (the ones most steps
        touch, so threads do not all write the same rows; :mod:`embkit._kernels.hot`), and with ``inputs`` of
        their input rows where the driver's input rows are the classes' (word windows): a thread copies a row
        in at its first step on it and adds ``scale`` times its change to the table after ``limit`` steps on
        the copy (``limit_in`` and ``scale_in`` on an input row's, None: as the output rows'; 0: no such
        limit), every ``every`` examples
        and at the end of each slice.  ``banks`` (word windows): sets of copies a thread deals its sentences
        to in turn, so that one thread holds its copies back as that many threads would (a study of many
        threads' copies on few cores).  None or empty ``ids``: every step writes the table.  Losses whose
        steps do not read class rows through ``out_row`` (trees, the full softmax) ignore it, and so does a
        trainer whose sampler scores the output table itself at every draw (query-dependent and not
        refreshed between chunks: top-k, Boltzmann): its draws would not see the thread's own steps
        (BENCHMARKS.md measures what that cost)."""
        if limit_in is None:
            limit_in = limit
        if scale_in is None:
            scale_in = scale
        if every < 1 or not 0 < scale <= 1 or not 0 < scale_in <= 1 or limit < 0 or limit_in < 0 or \
                not 1 <= banks <= MAX_BANKS:
            raise ValueError("every must be >= 1, scale and scale_in in (0, 1], limit and limit_in >= 0 and banks "
                             "in [1, %d], got %d, %r, %r, %d, %d and %d"
                             % (MAX_BANKS, every, scale, scale_in, limit, limit_in, banks))
        self.hot.unit = False
        if self.sampler is not None and not self.sampler.query_free and not self.sampler.refreshes:
            ids = None
        if ids is None or len(ids) == 0:
            self.hot.n = 0
            self.hot_arrays = None
            return
        cdef int32_t[::1] chosen = np.ascontiguousarray(ids, dtype=np.int32)
        cdef Py_ssize_t n_classes = self.n_classes
        if np.asarray(chosen).min() < 0 or np.asarray(chosen).max() >= n_classes or \
                len(np.unique(chosen)) != chosen.shape[0]:
            raise ValueError("shared rows must be distinct class ids in [0, %d)" % n_classes)
        slot = np.full(n_classes, -1, dtype=np.int32)
        slot[np.asarray(chosen)] = np.arange(chosen.shape[0], dtype=np.int32)
        cdef int32_t[::1] slots = slot
        self.hot_arrays = (chosen, slots)
        self.hot.ids = &chosen[0]
        self.hot.slot = &slots[0]
        self.hot.prefix = bool(np.array_equal(np.asarray(chosen), np.arange(chosen.shape[0])))
        self.hot.n = chosen.shape[0]
        self.hot.every = every
        self.hot.limit = limit
        self.hot.limit_in = limit_in
        self.hot.inputs = inputs
        self.hot.banks = banks
        self.hot.scale = scale
        self.hot.scale_in = scale_in

    @property
    def hot_row_count(self):
        """Output rows every thread keeps copies of (0: every step writes the table; see :meth:`hot_rows`)."""
        return self.hot.n

    def before_chunk(self, double progress):
        """Let an adaptive sampler refresh what it derives from the output table (between chunks)."""
        if self.sampler is not None and self.sampler.refreshes:
            self.sampler.refresh(progress)

    def prepare(self, tuple args, double before, uint64_t chunk_seed, int threads):
        """The :class:`ChunkJob` of one chunk: ``args`` are the chunk's ``kernel_args``, ``before`` the run's
        units trained before it, ``threads`` how many threads may share it."""
        cdef ChunkJob job = self.open_chunk(args, before, slice_count(threads))
        job.base_seed = mix_seed(self.seed, chunk_seed)
        return job

    def pipeline(self, int n_threads):
        """A :class:`Pipeline` of ``n_threads`` worker threads training this driver's chunks."""
        return Pipeline(self, n_threads)

    def train_chunk(self, *args):
        """``train_chunk(*kernel_args, before, chunk_seed, n_threads)``: train one chunk; returns
        ``(loss_sum, examples, units)``."""
        cdef Py_ssize_t n = len(args)
        if n < 3:
            raise TypeError("train_chunk(*kernel_args, before, chunk_seed, n_threads)")
        n_threads = args[n - 1]
        pipe = self.pipeline(n_threads)
        try:
            pipe.submit(self.prepare(tuple(args[:n - 3]), args[n - 3], args[n - 2], n_threads))
            return pipe.wait()[:3]
        finally:
            pipe.close()


cdef class Pipeline:
    """Worker threads that train the slices of submitted chunks, oldest chunk first.

    Parameters
    ----------
    driver : Driver
    n_threads : int
        Worker threads, started at once; :meth:`close` (or :meth:`abort`) joins them.
    """

    def __cinit__(self):
        self.synced = False
        self.held = deque()
        self.threads = []

    def __init__(self, Driver driver not None, int n_threads):
        if n_threads < 1:
            raise ValueError("n_threads must be >= 1, got %d" % n_threads)
        if emb_mutex_init(&self.mutex) != 0 or emb_cond_init(&self.work_ready) != 0 or \
                emb_cond_init(&self.slice_done) != 0:
            raise MemoryError("could not create the pipeline's locks")
        self.synced = True
        self.driver = driver
        self.n_threads = n_threads
        for t in range(n_threads):
            thread = threading.Thread(target=self._run, name="embkit-worker-%d" % t, daemon=True)
            thread.start()
            self.threads.append(thread)

    def __dealloc__(self):
        if self.synced:
            emb_cond_destroy(&self.work_ready)
            emb_cond_destroy(&self.slice_done)
            emb_mutex_destroy(&self.mutex)

    @property
    def in_flight(self):
        """Chunks submitted and not yet returned by :meth:`wait`."""
        return len(self.held)

    @property
    def capacity(self):
        """Chunks the pipeline holds at once."""
        return MAX_IN_FLIGHT

    @property
    def overlaps(self):
        """Whether the next chunk may be submitted while one trains (:attr:`Driver.overlaps_chunks`)."""
        return self.driver.overlaps_chunks

    def prepare(self, tuple args, double before, uint64_t chunk_seed, int threads):
        """The driver's job of one chunk (:meth:`Driver.prepare`), ready to :meth:`submit`."""
        return self.driver.prepare(args, before, chunk_seed, threads)

    def _run(self):
        with nogil:
            self.work()

    cdef void work(self) noexcept nogil:
        """A worker thread: take the next untaken slice of the oldest chunk that has one, train it, repeat."""
        cdef void *job
        emb_mutex_lock(&self.mutex)
        while True:
            job = NULL
            while not self.aborting:
                job = self.next_job()
                if job != NULL or self.stopping:
                    break
                emb_cond_wait(&self.work_ready, &self.mutex)
            if job == NULL:
                break
            self.train_next_slice(<ChunkJob> job)
        emb_mutex_unlock(&self.mutex)

    cdef void *next_job(self) noexcept nogil:
        """The oldest job with a slice no thread has taken, or NULL (under the lock)."""
        cdef int i
        for i in range(self.count):
            if untaken(<ChunkJob> self.jobs[(self.first + i) % MAX_IN_FLIGHT]):
                return self.jobs[(self.first + i) % MAX_IN_FLIGHT]
        return NULL

    cdef void train_next_slice(self, ChunkJob job) noexcept nogil:
        """Take ``job``'s next slice and train it with the lock released (called and returning under it)."""
        cdef int s = job.taken
        job.taken += 1
        emb_mutex_unlock(&self.mutex)
        cdef int status = self.driver.train_slice(job.config, job.bounds[s], job.bounds[s + 1],
                                                  mix_seed(job.base_seed, s), &job.results[s])
        emb_mutex_lock(&self.mutex)
        job.results[s].status = status
        job.remaining -= 1
        if job.remaining == 0:
            emb_cond_broadcast(&self.slice_done)

    def submit(self, ChunkJob job not None):
        """Queue ``job`` (from :meth:`Driver.prepare`) behind the chunks in flight; RuntimeError when the
        pipeline already holds :attr:`capacity` chunks or is closed."""
        if self.stopping or self.aborting:
            raise RuntimeError("the pipeline is closed")
        if len(self.held) >= MAX_IN_FLIGHT:
            raise RuntimeError("the pipeline holds %d chunks already: wait() for one first" % MAX_IN_FLIGHT)
        self.held.append(job)
        with nogil:
            emb_mutex_lock(&self.mutex)
            self.jobs[(self.first + self.count) % MAX_IN_FLIGHT] = <void *> job
            self.count += 1
            emb_cond_broadcast(&self.work_ready)
            emb_mutex_unlock(&self.mutex)

    cdef bint wait_oldest(self, ChunkJob job, int ms) noexcept nogil:
        """Wait up to ``ms`` milliseconds for ``job`` (the oldest) to finish; True when it has, and then it
        leaves the pipeline's list."""
        cdef bint done
        emb_mutex_lock(&self.mutex)
        if job.remaining > 0:
            emb_cond_wait_ms(&self.slice_done, &self.mutex, ms)
        done = job.remaining == 0
        if done:
            self.first = (self.first + 1) % MAX_IN_FLIGHT
            self.count -= 1
        emb_mutex_unlock(&self.mutex)
        return done

    def wait(self):
        """Wait for the oldest chunk in flight and return its ``(loss_sum, examples, units, kept units)``.

        Python's signal handlers run while it waits (a Ctrl-C handler, or KeyboardInterrupt): an exception
        they raise leaves the chunk in flight, and the caller then calls :meth:`abort`.
        """
        if not self.held:
            raise RuntimeError("no chunk in flight")
        cdef ChunkJob job = self.held[0]
        cdef bint done = False
        while not done:
            with nogil:
                done = self.wait_oldest(job, 50)
            if not done:
                PyErr_CheckSignals()
        self.held.popleft()
        return job.totals()

    def _stop(self, bint abort):
        with nogil:
            emb_mutex_lock(&self.mutex)
            self.stopping = True
            if abort:
                self.aborting = True
            emb_cond_broadcast(&self.work_ready)
            emb_mutex_unlock(&self.mutex)
        for thread in self.threads:
            thread.join()
        self.threads = []

    def close(self):
        """Let the workers finish every submitted slice, then join them (results stay to :meth:`wait` for)."""
        self._stop(False)

    def abort(self):
        """Stop the workers after the slices they are training and join them; untaken slices are dropped,
        and the chunks in flight with them."""
        self._stop(True)
        self.held.clear()
        self.count = 0

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc_type is None:
            self.close()
        else:
            self.abort()
