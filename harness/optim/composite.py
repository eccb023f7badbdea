"""Several optimizers over disjoint param groups, driven as one (per-group optimizer override).

Used for the paper's Sec. 6.2 setup: the embedding trained by SGD (momentum 0.9, lr times a
factor f) while every other parameter keeps the run's optimizer. ``param_groups`` lists the very
group dicts of the parts, so a trainer that sets ``group["lr"]`` reaches every part; ``state``
is a read-only view over the parts' states; ``state_dict()`` nests the parts' state dicts.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any

import torch
from torch import Tensor

from harness.optim.modes import Modal, to_train_mode


class _StateView(Mapping[Tensor, dict[str, Any]]):
    """Read-only union of the parts' ``state`` (their parameters are disjoint)."""

    def __init__(self, parts: Mapping[str, torch.optim.Optimizer]) -> None:
        self._parts = parts

    def __getitem__(self, p: Tensor) -> dict[str, Any]:
        for opt in self._parts.values():
            if p in opt.state:  # test first: a part's state is a defaultdict
                state: dict[str, Any] = opt.state[p]  # torch types a part's state Any
                return state
        raise KeyError(p)

    def __iter__(self) -> Iterator[Tensor]:
        for opt in self._parts.values():
            yield from opt.state

    def __len__(self) -> int:
        return sum(len(opt.state) for opt in self._parts.values())


class CompositeOptimizer(torch.optim.Optimizer):
    """Steps several optimizers over disjoint parameters as one optimizer.

    Args:
        parts: Name -> optimizer; the names key the nested state dict.

    Example:
        >>> # opt = CompositeOptimizer({"main": AdamW(rest), "embedding": SGD([emb_group])})
    """

    def __init__(self, parts: Mapping[str, torch.optim.Optimizer]) -> None:
        if not parts:
            raise ValueError("CompositeOptimizer needs at least one optimizer")
        self.parts = dict(parts)
        # The base class checks that no parameter appears twice and shares the group dicts.
        super().__init__(self._collect_groups(), {})
        self.state = _StateView(self.parts)  # type: ignore[assignment]  # a read-only view of the parts' state

    def _collect_groups(self) -> list[dict[str, Any]]:
        return [g for opt in self.parts.values() for g in opt.param_groups]

    @torch.no_grad()
    def step(self, closure: Callable[[], float] | None = None) -> float | None:  # type: ignore[override]  # torch types the closure loosely
        """Evaluate ``closure`` (if any) once, then step every part.

        Args:
            closure: Optional callable that re-evaluates the model and returns the loss.

        Returns:
            The closure's loss, or None.
        """
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for opt in self.parts.values():
            opt.step()
        return loss

    def train(self) -> None:
        """Put every part with modes (schedule-free) in train mode."""
        for opt in self.parts.values():
            to_train_mode(opt)

    def eval(self) -> None:
        """Put every part with modes (schedule-free) in eval mode."""
        for opt in self.parts.values():
            if isinstance(opt, Modal):
                opt.eval()

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Reset the gradients of every part's parameters."""
        for opt in self.parts.values():
            opt.zero_grad(set_to_none=set_to_none)

    def state_dict(self) -> dict[str, Any]:
        """``{"parts": {name: part.state_dict()}}``."""
        return {"parts": {name: opt.state_dict() for name, opt in self.parts.items()}}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Load what :meth:`state_dict` returned (the same part names, in any order)."""
        saved = state_dict["parts"]
        if set(saved) != set(self.parts):
            raise ValueError(
                f"optimizer state has parts {sorted(saved)}, this optimizer {sorted(self.parts)}"
            )
        for name, opt in self.parts.items():
            opt.load_state_dict(saved[name])
        # Loading replaces each part's group dicts: share the new ones.
        self.param_groups = self._collect_groups()

    def add_param_group(self, param_group: dict[str, Any]) -> None:
        """Only during construction: a composite's groups belong to its parts."""
        if isinstance(getattr(self, "state", None), _StateView):
            raise NotImplementedError("add a param group to one of the parts instead")
        super().add_param_group(param_group)

    def __getstate__(self) -> dict[str, Any]:
        return self.__dict__.copy()

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
