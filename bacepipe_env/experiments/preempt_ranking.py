"""What preemption does to BACE-Pipe's ranking (semantics §3c): the paper's Fig. 4 policies and the
best waiting heuristic, each without preemption and with ``srtf`` applied to every policy, on
``paper``, ``online`` and the random generator. One section of ``docs/reproduction.md``
(:func:`render`), from the runs of :func:`run_ranking`; a pure function of the seeds.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from .report_text import markdown_table, plus_minus, ratio_text
from .runner import RANDOM, RayBackend, RunSummary, expand, run_all
from .stats import Estimate, estimate

__all__ = ["POLICIES", "RULE", "WORLDS", "PreemptRanking", "render", "run_ranking"]

#: The policies ranked: BACE-Pipe, the paper's four baselines, and the best waiting heuristic.
POLICIES = ("bace-pipe", "lcf", "ldf", "cr-lcf", "cr-ldf", "sjf+finish-aware")
#: The rule applied to every policy (the world flag ``--preemption srtf``).
RULE = "srtf"
#: World name -> (RunSpec scenario, what it is).
WORLDS = {
    "paper": ("paper", "the paper's 8 jobs at t = 0 (Tables II, III)"),
    "online": ("online", "500 Philly-trace arrivals at offered load 0.8, hourly prices"),
    "random": (RANDOM, "the random generator's episode per seed (GeoPipe-Random-v2's world)"),
}


@dataclass(frozen=True)
class PreemptRanking:
    """Every run: by (world, rule, policy, seed)."""

    seeds: tuple[int, ...]
    runs: dict[tuple[str, str, str, int], RunSummary]

    def values(self, world: str, rule: str, policy: str, key: str) -> list[float]:
        """``key`` of each seed's run, in seed order."""
        return [float(getattr(self.runs[(world, rule, policy, s)], key)) for s in self.seeds]

    def mean(self, world: str, rule: str, policy: str, key: str = "avg_jct_h") -> float:
        """The mean of ``key`` over the seeds."""
        return math.fsum(self.values(world, rule, policy, key)) / len(self.seeds)

    def ratio(self, world: str, policy: str) -> Estimate:
        """The policy's JCT with the rule over its JCT without, seed by seed."""
        on = self.values(world, RULE, policy, "avg_jct_h")
        off = self.values(world, "none", policy, "avg_jct_h")
        return estimate([a / b for a, b in zip(on, off)])

    def ranks(self, world: str, rule: str) -> dict[str, int]:
        """Each policy's rank by mean JCT (1 = lowest; equal means share a rank)."""
        means = {p: self.mean(world, rule, p) for p in POLICIES}
        return {p: 1 + sum(m < means[p] for m in means.values()) for p in POLICIES}


def run_ranking(
    seeds: Sequence[int], *, workers: int | RayBackend = 1, progress: bool | None = None
) -> PreemptRanking:
    """Every policy on every world's seeds, without preemption and with :data:`RULE`."""
    specs = [
        spec
        for world, (scenario, _) in WORLDS.items()
        for rule in ("none", RULE)
        for spec in expand(
            POLICIES, scenario, seeds, {"preemption": rule}, {"world": world, "rule": rule}
        )
    ]
    results = run_all(specs, workers=workers, label="preemption", progress=progress)
    runs = {
        (r.spec.tag["world"], r.spec.tag["rule"], r.spec.policy, r.spec.seed): r for r in results
    }
    return PreemptRanking(tuple(seeds), runs)


def render(data: PreemptRanking) -> list[str]:
    """The section's lines (markdown, before wrapping)."""
    n = len(data.seeds)
    head = [
        "world",
        "policy",
        "mean JCT h",
        "rank",
        f"with `{RULE}`",
        "rank",
        "JCT with / without",
        "preemptions",
        "wasted GPU-h",
    ]
    body, notes = [], []
    for world in WORLDS:
        off, on = data.ranks(world, "none"), data.ranks(world, RULE)
        for p in sorted(POLICIES, key=lambda p: (off[p], POLICIES.index(p))):
            body.append(
                [
                    world,
                    f"`{p}`",
                    f"{data.mean(world, 'none', p):,.1f}",
                    str(off[p]),
                    f"{data.mean(world, RULE, p):,.1f}",
                    str(on[p]),
                    plus_minus(data.ratio(world, p), ratio_text),
                    f"{data.mean(world, RULE, p, 'n_preemptions'):,.1f}",
                    f"{data.mean(world, RULE, p, 'wasted_gpu_hours'):,.0f}",
                ]
            )
        before, after = off["bace-pipe"], on["bace-pipe"]
        moved = f"keeps rank {before}" if before == after else f"goes from rank {before} to {after}"
        gain = data.ratio(world, "bace-pipe")
        best = min(POLICIES, key=lambda p: (on[p], POLICIES.index(p)))
        pre = data.mean(world, RULE, "bace-pipe", "n_preemptions")
        notes.append(
            f"On `{world}` BACE-Pipe {moved} of {len(POLICIES)} ({pre:.1f} preemptions an "
            f"episode, its JCT x{gain.mean:.3f}); with `{RULE}` the fastest is `{best}`."
        )
    return [
        "## Preemption: BACE-Pipe's ranking when a job may stop another",
        "",
        f"Every policy of Fig. 4 and `sjf+finish-aware` without preemption and with `{RULE}` "
        "applied to every policy (`load_scenario(..., preemption='srtf')`, the flag "
        f"`--preemption {RULE}`; [semantics §3c](semantics.md), [preemption.md](preemption.md)): a "
        "pending job "
        "that cannot start preempts the running job with the most remaining time once it has "
        "run an hour, if the pending job needs at most half as long; the preempted job writes "
        "a checkpoint (60 s) and restarts later (600 s). Memory checked, greedy admission "
        f"(the policies' own otherwise), {n} seeds per world: "
        + "; ".join(f"`{w}`, {about}" for w, (_, about) in WORLDS.items())
        + ". Means over the seeds; ranks by mean JCT (1 the fastest); the ratio is taken seed "
        "by seed, ± the half-width of its 95% interval.",
        "",
        *markdown_table(head, body, "ll" + "r" * (len(head) - 2)),
        "",
        " ".join(notes),
        "",
    ]
