"""A job's placement: an ordered pipeline path of regions with a GPU count in each, and, for a
job that runs data-parallel replicas (semantics §3e), the other copies of that pipeline."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from itertools import pairwise

__all__ = ["Placement"]


@dataclass(frozen=True)
class Placement:
    """``path[i]`` is the i-th region of the pipeline and holds ``gpus[i]`` consecutive stages.

    ``replicas`` are the job's other data-parallel copies of the pipeline (semantics §3e), each
    a Placement of its own with no replicas and the same number of stages; ``()`` for a job
    that runs one pipeline, the paper's jobs. With replicas, :attr:`path` and :attr:`gpus`
    describe the first copy; :attr:`n_gpus`, :attr:`cells`, :attr:`allocation` and
    :attr:`links` cover every copy."""

    path: tuple[int, ...]
    gpus: tuple[int, ...]
    replicas: tuple[Placement, ...] = ()

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
        p.__dict__.update(
            path=path, gpus=gpus, replicas=(), n_gpus=sum(gpus), links=tuple(pairwise(path))
        )
        return p

    @classmethod
    def replicated(cls, pipelines: Sequence[Placement]) -> Placement:
        """The placement of a job whose data-parallel copies are ``pipelines`` (the first
        one's path and GPUs, the others as :attr:`replicas`); ``pipelines[0]`` itself for one."""
        head, *rest = pipelines
        if not rest:
            return head.pipelines[0]
        return cls(head.path, head.gpus, tuple(p.pipelines[0] for p in rest))

    @cached_property
    def pipelines(self) -> tuple[Placement, ...]:
        """Every copy of the pipeline, the first one first (itself alone without replicas)."""
        if not self.replicas:
            return (self,)
        return (Placement.of(self.path, self.gpus), *self.replicas)

    @property
    def n_replicas(self) -> int:
        """d, the data-parallel copies of the pipeline (1 without replicas)."""
        return 1 + len(self.replicas)

    @property
    def stages(self) -> int:
        """L, the pipeline's stages (= the GPUs of one copy)."""
        return sum(self.gpus)

    @cached_property
    def n_gpus(self) -> int:
        """The GPUs the placement holds: L, the pipeline size, times the copies d (computed
        once per placement)."""
        return sum(self.gpus) * (1 + len(self.replicas))

    @cached_property
    def cells(self) -> tuple[tuple[int, int], ...]:
        """``(region, GPUs)`` of every copy's every path region, the first copy first: what
        the bill and the ledger count (a region two copies use appears twice)."""
        own = tuple(zip(self.path, self.gpus))
        return own + tuple(c for p in self.replicas for c in zip(p.path, p.gpus))

    @property
    def allocation(self) -> dict[int, int]:
        """Region index -> GPU count, over every copy."""
        out: dict[int, int] = {}
        for r, g in self.cells:
            out[r] = out.get(r, 0) + g
        return out

    @cached_property
    def regions(self) -> frozenset[int]:
        """The regions holding a GPU of any copy."""
        return frozenset(r for r, _ in self.cells)

    @cached_property
    def links(self) -> tuple[tuple[int, int], ...]:
        """The directed cross-region links u -> v the pipeline crosses, in order, every copy's
        after the first's (a link two copies cross appears twice; computed once per
        placement)."""
        own = tuple(pairwise(self.path))
        return own + tuple(link for p in self.replicas for link in pairwise(p.path))

    @cached_property
    def ring(self) -> tuple[tuple[tuple[tuple[int, int], int], ...], tuple[int, ...]]:
        """The gradient all-reduce's ring edges (semantics §3e): each stage's copies form a
        ring in copy order (copy j sends to copy j + 1, the last to the first).
        ``(cross, intra)``: ``cross`` the directed cross-region links the edges cross, each
        with how many edges cross it, in order of first use; ``intra`` the regions holding an
        edge between two of their own GPUs. Both empty without replicas."""
        if not self.replicas:
            return (), ()
        stages = [
            tuple(r for r, g in zip(p.path, p.gpus) for _ in range(g)) for p in self.pipelines
        ]
        d = len(stages)
        cross: dict[tuple[int, int], int] = {}
        intra: dict[int, None] = {}
        for s in range(len(stages[0])):
            for j in range(d):
                u, v = stages[j][s], stages[(j + 1) % d][s]
                if u == v:
                    intra[u] = None
                else:
                    cross[u, v] = cross.get((u, v), 0) + 1
        return tuple(cross.items()), tuple(intra)

    @cached_property
    def booked_links(self) -> tuple[tuple[int, int], ...]:
        """Every directed cross-region link the job books bandwidth on, each once: its copies'
        pipeline links, then its all-reduce's (semantics §3e)."""
        seen = dict.fromkeys(self.links)
        seen.update(dict.fromkeys(link for link, _ in self.ring[0]))
        return tuple(seen)

    def describe(self, names: Sequence[str]) -> str:
        """Human form, e.g. ``EA-East:48 > US-East-2:32``; copies are separated by `` | ``."""
        return " | ".join(
            " > ".join(f"{names[r]}:{n}" for r, n in zip(p.path, p.gpus)) for p in self.pipelines
        )
