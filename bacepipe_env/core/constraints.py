"""The constraints every placement that starts must meet (semantics §3a, §3e, §4): its regions
exist and hold the GPUs it asks (constraint 5), its pipeline has at most K* stages and fits
in GPU memory, its links carry what it books (constraint 6), and data-parallel copies are as
many as the job may run, each one pipeline of the same stages. A violation is a one-line
:class:`~bacepipe_env.errors.PlacementError` naming the placement policy."""

from __future__ import annotations

from ..errors import PlacementError
from .placement import Placement
from .state import BANDWIDTH_RTOL, SimulationState

__all__ = ["check_placement"]


def check_placement(sim: SimulationState, job_id: int, p: Placement) -> None:
    """Raise a PlacementError unless ``p`` meets every constraint for ``job_id`` now."""
    name = sim.placement_policy.name
    k = sim.cluster.n_regions
    prof = sim.profile(job_id)
    free, residual = sim.free_gpus, sim.residual_rows
    for q in p.pipelines:
        if len(q.path) != len(q.gpus) or len(set(q.path)) != len(q.path):
            raise PlacementError(f"{name}: path {q.path} with GPUs {q.gpus} is malformed")
        for r, n in zip(q.path, q.gpus):
            if not 0 <= r < k:
                raise PlacementError(f"{name}: region {r} does not exist (K = {k})")
            if n < 1:
                raise PlacementError(
                    f"{name}: job {job_id} asks {n} GPUs in region {r}, {free[r]} free "
                    f"(constraint 5)"
                )
    for r, n in p.allocation.items():
        if n > free[r]:
            raise PlacementError(
                f"{name}: job {job_id} asks {n} GPUs in region {r}, {free[r]} free (constraint 5)"
            )
    if p.replicas:
        _check_replicas(sim, job_id, p)
    if p.stages > prof.k_star:
        raise PlacementError(
            f"{name}: job {job_id} gets {p.stages} GPUs, more than K* = {prof.k_star}"
        )
    if not sim.fits(job_id, p):
        floors = [sim.memory_floor(job_id)[r] for r in p.regions]
        raise PlacementError(
            f"{name}: job {job_id} gets {p.stages} GPUs, below its memory floor "
            f"{max(floors)} on path {p.path} (semantics §3a)"
        )
    if p.replicas:
        bookings = sim.bookings(job_id, p)
    else:
        bookings = dict.fromkeys(p.links, prof.min_bandwidth(p.n_gpus))
    for (u, v), need in bookings.items():
        if need > residual[u][v] * (1.0 + BANDWIDTH_RTOL):
            raise PlacementError(
                f"{name}: job {job_id} needs {need:.6g} B/s on link {u}->{v}, "
                f"{residual[u][v]:.6g} B/s left (constraint 6)"
            )


def _check_replicas(sim: SimulationState, job_id: int, p: Placement) -> None:
    """Data-parallel copies: as many as the job may run, each with the first's L stages
    (semantics §3e)."""
    name = sim.placement_policy.name
    low, high = sim.replica_range(job_id)
    if not low <= p.n_replicas <= high:
        raise PlacementError(
            f"{name}: job {job_id} gets {p.n_replicas} copies of its pipeline, outside its "
            f"[{low}, {high}] (semantics §3e)"
        )
    if any(q.replicas or q.stages != p.stages for q in p.replicas):
        raise PlacementError(
            f"{name}: job {job_id}'s copies must each be one pipeline of {p.stages} stages"
        )
