"""A job's placement: an ordered pipeline path of regions with a GPU count in each."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from itertools import pairwise

__all__ = ["Placement"]


@dataclass(frozen=True)
class Placement:
    """``path[i]`` is the i-th region of the pipeline and holds ``gpus[i]`` consecutive stages."""

    path: tuple[int, ...]
    gpus: tuple[int, ...]

    @classmethod
    def from_allocation(cls, path: Sequence[int], allocation: Mapping[int, int]) -> Placement:
        """Build from a path and a region -> GPU-count mapping (the pure functions' form)."""
        return cls(tuple(int(r) for r in path), tuple(int(allocation[r]) for r in path))

    @classmethod
    def of(cls, path: tuple[int, ...], gpus: tuple[int, ...]) -> Placement:
        """``Placement(path, gpus)`` from tuples of ints the caller built, with :attr:`n_gpus`
        and :attr:`links` computed at once: the placement rules' constructor, called once per
        decision and preview, where the frozen dataclass's ``__init__`` and the two cached
        properties' first reads cost more than the placement's arithmetic. Equal to
        ``Placement(path, gpus)`` in every way (fields, equality, hash, pickling)."""
        p = object.__new__(cls)
        p.__dict__.update(path=path, gpus=gpus, n_gpus=sum(gpus), links=tuple(pairwise(path)))
        return p

    @cached_property
    def n_gpus(self) -> int:
        """L, the pipeline size (computed once per placement)."""
        return sum(self.gpus)

    @property
    def allocation(self) -> dict[int, int]:
        """Region index -> GPU count."""
        return dict(zip(self.path, self.gpus))

    @cached_property
    def links(self) -> tuple[tuple[int, int], ...]:
        """The directed cross-region links u -> v the pipeline crosses, in order (computed
        once per placement)."""
        return tuple(pairwise(self.path))

    def describe(self, names: Sequence[str]) -> str:
        """Human form, e.g. ``EA-East:48 > US-East-2:32``."""
        return " > ".join(f"{names[r]}:{n}" for r, n in zip(self.path, self.gpus))
