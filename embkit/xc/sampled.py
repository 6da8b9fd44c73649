"""The ``sampled`` solver: any loss and sampler of the registry on the ``rows`` kernel driver.

Every example is a step of a registry loss (``sampled_softmax``, ``sgns``, ``nce``, ``relaxed_softmax``,
``full_softmax``, ``hs``) against its positive labels and the negatives a registry sampler draws (LSH,
kernel, uniform, log-uniform, unigram, top-k, ...): the setting of the LSH-negative-sampling and RF-softmax
papers, for label sets too large to score every label per example.  A loss that scores every class trains in
BLAS mini-batches with ``batch_size`` (:mod:`embkit.xc.row_batches`).
"""
import numpy as np

from embkit._kernels.rows import RowTrainer
from embkit.core import registry
from embkit.core.batched_softmax import check_batch_size
from embkit.core.checks import NON_NEGATIVE_INT, check_param, optional
from embkit.core.hot_rows import HOT_MERGE_EVERY, class_hot_rows
from embkit.xc.heads import DEFAULT_HEADS
from embkit.xc.row_batches import FullSoftmaxBatches
from embkit.xc.solver import Solver

__all__ = ["Sampled"]


class Sampled(Solver):
    """Registry losses and samplers on the per-example ``rows`` kernel (or full softmax in BLAS batches).

    Its defaults are the RF-softmax paper's setting: 128 dimensions, hidden vectors and class vectors on the
    unit sphere (class vectors only when the output rows are the labels'), temperature 0.1, alpha 0.1,
    20 epochs, raw feature rows; the closed-form heads blended (a loss whose output rows are the labels').
    """

    name = "sampled"
    default_loss = "sampled_softmax"
    DEFAULTS = {"vector_size": 128, "alpha": 0.1, "epochs": 20, "normalize": True, "tau": 0.1,
                "batch_size": None, "feature_weighting": "none", "normalize_rows": False, "ensemble": 1}
    default_heads = DEFAULT_HEADS
    #: parameters of another solver, with the only value this one takes
    NEUTRAL = {"ensemble": 1, "label_bias": True}

    @property
    def losses(self):
        return tuple(sorted(registry.LOSSES))

    def defaults(self, loss, heads=()):
        return dict(self.DEFAULTS, normalize_classes=self.loss_class(loss).CLASS_ROWS)

    def loss_class(self, loss):
        return registry.loss_class(loss)

    def check_params(self, model):
        check_param("hot_rows", model.hot_rows, *optional(NON_NEGATIVE_INT))
        for name, value in self.NEUTRAL.items():
            if getattr(model, name) != value:
                raise ValueError("%s applies to solver='one_vs_all' only, got solver=%r" % (name, self.name))
        check_batch_size(model.batch_size, model.loss)
        if model.normalize_classes and not self.loss_class(model.loss).CLASS_ROWS:
            raise ValueError("normalize_classes needs one vector per label; the output rows of the %s loss are "
                             "not the labels'" % model.loss)

    def check_objective(self, model):
        registry.check_pairing(model.loss, model.sampler_name, model.negative)

    def build_loss(self, model, counts, n_classes):
        return registry.make_loss(model.loss, counts=counts, n_classes=n_classes, **model.loss_params)

    def objective(self, model, counts, n_classes):
        return registry.build_objective(model.loss, model.sampler_name, counts, n_classes, model.negative,
                                        model.loss_params, model._sampler_params(), model.W_out)

    def blas_threads(self, model):
        """The library's setting for the BLAS batches of ``batch_size``; else 1 (the per-example kernel makes no
        BLAS call, and the heads fit beside it)."""
        return None if model.batch_size is not None else 1

    def trainer(self, model, X, Y, loss, sampler, alpha, min_alpha, total):
        if model.batch_size is not None:
            return FullSoftmaxBatches(X, Y, model.W_in, model.W_out, model.batch_size, alpha, min_alpha, total,
                                      model.normalize, model.tau, model.normalize_classes)
        trainer = RowTrainer(model.W_in, model.W_out, X.indptr.astype(np.int64), X.indices.astype(np.int32),
                             X.data.astype(np.float32), Y.indptr.astype(np.int64), Y.indices.astype(np.int32), loss,
                             sampler, model.negative, model.normalize, model.tau, model.normalize_classes,
                             model.one_label, alpha, min_alpha, total, model.seed)
        trainer.hot_rows(class_hot_rows(model.hot_rows, model.label_counts, model.W_out, model.workers),
                         HOT_MERGE_EVERY, 1.0 / max(1, model.workers))
        return trainer
