"""Heavy-tailed class imbalance (Kunstner et al. 2024, "Heavy-tailed class imbalance and why
Adam outperforms gradient descent on language models"): a linear softmax classifier on
``classes`` classes whose frequencies follow Zipf's law, ``p_k ~ k^-alpha``.

Class k's input is a fixed vector ``x_k`` (standard normal over ``dim`` coordinates, scaled by
``1/sqrt(dim)``, drawn once for every run), the weights ``W`` (classes x dim) start at zero (or,
with ``init_scale`` > 0, at ``init_scale`` times a standard normal draw from the run's seed), and
the logits are ``W x``. With ``label_noise`` e, an example's label is its class with probability
1 - e and a uniformly random class otherwise (the loss has a floor, the problem is not
separable, and the frequent classes keep their curvature). Without ``stochastic`` each step is
full-batch gradient descent on the population loss ``sum_k p_k CE(W x_k, k)`` (its expectation
over the label noise); with it, a step's batch is ``batch_size`` examples drawn from ``p`` (and
the noise) by (seed, step). At zero the loss is ``ln(classes)`` for every class, and the
gradient of class k's row is ``(1/C) sum_j p_j x_j - p_k x_k``: gradient descent moves a class's
weights in proportion to its frequency, a sign method does not.

Evaluation (exact, over the population): ``val_loss``, and ``val_loss_q1`` .. ``val_loss_q4``,
the loss of the classes in each frequency group, cut as the GPT's token buckets are
(:func:`harness.metrics.frequency.frequency_buckets`: groups of classes holding equal shares of
the examples, q1 the most frequent).
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from harness.metrics.catalogue import FREQUENCY_BUCKETS
from harness.metrics.frequency import frequency_buckets

_PROBLEM_SEED = 20240102  # the inputs: one problem for every run


class Imbalance:
    """The class-imbalance workload (see the module doc)."""

    def __init__(
        self,
        classes: int = 64,
        alpha: float = 1.0,
        dim: int = 64,
        stochastic: bool = False,
        init_scale: float = 0.0,
        label_noise: float = 0.0,
    ) -> None:
        if classes < 2 or dim < 1 or alpha < 0 or init_scale < 0 or not 0 <= label_noise <= 1:
            raise ValueError(
                "classes >= 2, dim >= 1, alpha >= 0, init_scale >= 0 and label_noise in [0, 1] "
                "are needed"
            )
        ranks = torch.arange(1, classes + 1, dtype=torch.float64)
        weights = ranks ** (-alpha)
        self.frequencies = weights / weights.sum()
        gen = torch.Generator().manual_seed(_PROBLEM_SEED)
        self.inputs = torch.randn(classes, dim, generator=gen, dtype=torch.float64) / math.sqrt(dim)
        counts = (self.frequencies * 2**40).round().long().numpy()  # integer counts, same shares
        self.groups = torch.from_numpy(frequency_buckets(counts))
        self.classes, self.dim, self.stochastic = classes, dim, stochastic
        self.init_scale, self.label_noise = init_scale, label_noise

    def model(self, seed: int) -> nn.Module:
        """The weights ``W`` (a bias-free linear layer): zero, or ``init_scale`` times a standard
        normal draw from ``seed``."""
        m = nn.Linear(self.dim, self.classes, bias=False, dtype=torch.float64)
        gen = torch.Generator().manual_seed(seed)
        with torch.no_grad():
            m.weight.copy_(
                self.init_scale * torch.randn(m.weight.shape, generator=gen, dtype=torch.float64)
            )
        return m

    def class_losses(self, model: nn.Module) -> torch.Tensor:
        """The expected loss of an example of every class k, ``(classes,)``: ``CE(W x_k, k)``,
        and with ``label_noise`` e, ``(1 - e) CE(W x_k, k) + e mean_j CE(W x_k, j)``."""
        logits: torch.Tensor = model(self.inputs)  # (classes, classes); module calls are Any
        clean = F.cross_entropy(logits, torch.arange(self.classes), reduction="none")
        if not self.label_noise:
            return clean
        uniform = torch.logsumexp(logits, dim=1) - logits.mean(dim=1)  # mean_j CE(z, j)
        return (1 - self.label_noise) * clean + self.label_noise * uniform

    def batch(self, seed: int, step: int, size: int) -> torch.Tensor | None:
        """The labels of step ``step``'s batch (None: the whole population)."""
        if not self.stochastic:
            return None
        gen = torch.Generator().manual_seed(seed * 1_000_003 + step)
        labels = torch.multinomial(self.frequencies, size, replacement=True, generator=gen)
        if not self.label_noise:
            return labels  # an example of class k: input x_k, label k
        noisy = torch.rand(size, generator=gen, dtype=torch.float64) < self.label_noise
        random = torch.randint(self.classes, (size,), generator=gen)
        return torch.stack([labels, torch.where(noisy, random, labels)])  # inputs' class, label

    def loss(self, model: nn.Module, batch: torch.Tensor | None) -> torch.Tensor:
        """The population loss, or the batch's mean loss."""
        if batch is None:
            return self.frequencies @ self.class_losses(model)
        classes, labels = (batch, batch) if batch.dim() == 1 else batch
        return F.cross_entropy(model(self.inputs[classes]), labels)

    @torch.no_grad()
    def evaluate(self, model: nn.Module) -> dict[str, float]:
        """``val_loss`` and the loss of each frequency group, exact."""
        per_class = self.class_losses(model)
        out = {"val_loss": float(self.frequencies @ per_class)}
        for k in range(FREQUENCY_BUCKETS):
            mask = self.groups == k
            if mask.any():  # a group with no class (few classes) stays NULL
                p = self.frequencies[mask]
                out[f"val_loss_q{k + 1}"] = float(p @ per_class[mask] / p.sum())
        return out

    def reference_loss(self, model: nn.Module) -> float:
        """``ln(classes)`` (the loss at zero), or the initial loss where it is higher."""
        return max(math.log(self.classes), self.evaluate(model)["val_loss"])
