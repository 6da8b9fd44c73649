"""What :class:`~embkit.xc.classifier.ExtremeClassifier` asks of a training algorithm (its ``solver=``).

The classifier keeps the parameters, the tables, the data and the epoch loop; a solver says what differs
between algorithms: its losses and the defaults of the parameters left at None, its parameter checks, the
loss object and sampler of a run, a fresh run's state, the trainer of the ``rows`` driver and how a row of
hidden vectors scores the labels.  Solvers hold no state of their own: every method is given the model.
The solvers are :class:`~embkit.xc.one_vs_all.OneVsAll` and :class:`~embkit.xc.sampled.Sampled`.
"""

__all__ = ["Solver"]


class Solver:
    """Base of the solvers (stateless: one object serves every model).

    Attributes
    ----------
    name : str
        The value of ``solver=`` that selects it.
    default_loss : str
        The loss it trains when ``loss`` is None.
    DEFAULTS : dict
        Constructor parameter -> the value it takes when left at None.
    default_heads : tuple of str
        The heads (:data:`~embkit.xc.heads.HEADS`) of ``heads=None``.
    """

    name = None
    default_loss = None
    DEFAULTS = {}
    default_heads = ()

    def blas_threads(self, model):
        """Threads of the BLAS library while ``model`` trains (None: the library's setting).  At 1, the heads
        of a blend are fitted on a thread of their own during the training (their products on one BLAS
        thread too)."""
        return None

    @property
    def losses(self):
        """Names of the losses it trains (sorted)."""
        raise NotImplementedError

    def heads_of(self, loss):
        """The heads of ``heads=None`` for ``loss``: :attr:`default_heads` when its output rows are the labels'
        (heads blend label scores), else none."""
        return tuple(self.default_heads) if self.loss_class(loss).CLASS_ROWS else ()

    def defaults(self, loss, heads=()):
        """``{parameter: value}`` taken by the parameters left at None when training ``loss`` with the heads
        ``heads`` blended."""
        return dict(self.DEFAULTS)

    def loss_class(self, loss):
        """The class of the loss ``loss``: its capability constants (those of
        :class:`~embkit._kernels.losses.Loss`) say what the output table holds."""
        raise NotImplementedError

    def check_params(self, model):
        """ValueError naming the first parameter of ``model`` this solver refuses."""

    def check_objective(self, model):
        """ValueError unless the loss takes the sampler (checked before any data is read)."""
        raise NotImplementedError

    def build_loss(self, model, counts, n_classes):
        """The loss object of ``model`` for ``n_classes`` classes of popularity ``counts``."""
        raise NotImplementedError

    def objective(self, model, counts, n_classes):
        """``(loss, sampler or None)`` of a run, built and checked."""
        raise NotImplementedError

    def fresh_state(self, model, n_rows):
        """Start a fresh run on ``n_rows`` training rows (the tables are made): may redraw the tables in
        place; returns ``(label biases or None, optimizer arrays or None)``."""
        return None, None

    def optimizer_state(self, arrays):
        """The optimizer arrays a checkpoint's ``arrays`` hold for a resumed run, or None."""
        return None

    def min_chunk_per_thread(self, model, n_rows):
        """Fewest rows a thread trains of one chunk (None: any split)."""
        return None

    def trainer(self, model, X, Y, loss, sampler, alpha, min_alpha, total):
        """The ``rows`` driver's trainer (``before_chunk`` / ``train_chunk``) of a run over ``total``
        examples of the weighted features ``X`` and labels ``Y``."""
        raise NotImplementedError

    def scores(self, model, H):
        """Scores of the hidden vectors ``H`` (as :meth:`ExtremeClassifier.embed` gives them) against every
        label, a row per row of ``H``: their dot products with the label vectors."""
        return H @ model.label_vectors.T
