"""How much room an environment's decisions leave: the rollout planner against the env's best
heuristic on the same episodes (``bacepipe headroom``).

For an environment id and a set of episodes (the scenarios its ``reset(seed=s)`` draws, for
``s = first_seed, ...``) it plays every heuristic an agent of that id could play (the
non-preemptive ones; on an id with preempt actions, the preemptive ones too), takes the one
with the lowest mean average JCT as the *best heuristic*, and plays ``rollout:<base>`` (the
base is the best heuristic unless given) with the chosen lookahead on the same episodes. It
reports the planner's paired JCT ratio to the best heuristic with a 95% paired-bootstrap
interval, its cost ratio likewise, and its time per decision and per episode.

With a deadline objective (``objective="misses"`` or ``"tardiness"``, semantics §15) the
planner scores its forks by it, the best heuristic is the one with the lowest mean miss rate
(or mean total tardiness), and the report's ratio is the paired ratio of the miss rates (or
tardiness), its JCT ratio given beside it; NaN when the best heuristic never misses (is never
late) on the episodes. A JCT report is what it was, field for field.

Policies play on the simulator, in the env's world: its scenario, its placement, its admission
and preemption settings and its decision space (ordering and waiting; with preempt actions,
preemptions too). A heuristic's simulator run is, bit for bit, its episode as an env agent
(tests/envs/test_env_equivalence.py); the planner's likewise (tests/policies/test_rollout.py).
The planner sees every pending job, not only a window of them.

A ratio well below 1 says that some policy in this decision space does better than every
heuristic: room for learning. A ratio near 1 says the decisions are saturated: a learned agent
cannot beat the best heuristic by much there, however it is trained.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field

import numpy as np

from ..core.scenario import Scenario
from ..core.simulator import RunResult
from ..errors import ValidationError
from ..policies.registry import elastic_names, make_policy, policy_info
from ..policies.rollout import check_lookahead, parse_rollout
from .progress import Progress
from .stats import paired_ratio_ci

__all__ = [
    "HEADROOM_OBJECTIVES",
    "HeadroomReport",
    "env_heuristics",
    "env_scenarios",
    "headroom_steps",
    "run_headroom",
]


#: What a headroom run compares (the planner's objective): per episode, lower is better.
HEADROOM_OBJECTIVES: dict[str, Callable[[RunResult], float]] = {
    "jct": lambda r: r.avg_jct / 3600.0,  # h
    "misses": lambda r: r.miss_rate,
    "tardiness": lambda r: r.total_tardiness / 3600.0,  # h
}
#: How a report names each objective's figure.
_FIGURE = {"jct": "mean JCT h", "misses": "mean miss rate", "tardiness": "mean tardiness h"}


def env_heuristics(env_id: str) -> list[str]:
    """The heuristics an agent of ``env_id`` can play in the env's decision space: every
    registered policy that plays as an agent, the preemptive ones only on an id with preempt
    actions, and on an id with data-parallel copies (``max_replicas`` > 1) each of them also
    with the greedy elasticity rule (``+elastic``)."""
    from ..envs.agents import AGENT_PLACEMENTS
    from ..envs.registration import geopipe_kwargs

    kwargs = geopipe_kwargs(env_id)
    preempts = bool(kwargs.get("preempt_window"))
    names = [n for n in AGENT_PLACEMENTS if preempts or policy_info(n).preemption is None]
    if int(kwargs.get("max_replicas", 1)) > 1:
        names += elastic_names(names)
    return names


def env_scenarios(env_id: str, seeds: Sequence[int], n_jobs: int | None = None) -> list[Scenario]:
    """The scenario of each episode ``reset(seed=s)`` starts (the env's own draw), with
    ``n_jobs`` jobs when given (the scenario knob, e.g. a shorter Online episode)."""
    from .evaluate import _make_env

    knobs: dict[str, object] = {"preview": False}
    if n_jobs is not None:
        knobs["n_jobs"] = n_jobs
    env = _make_env(env_id, knobs)
    out = []
    for seed in seeds:
        env.reset(seed=seed)
        assert env.scenario is not None
        out.append(env.scenario)
    env.close()
    return out


@dataclass(frozen=True)
class HeadroomReport:
    """One ``bacepipe headroom`` row, with what it was computed from."""

    env_id: str
    lookahead: str
    n_jobs: int  # jobs per episode
    planner: str
    best: str  # the best heuristic: what the ratios divide by
    seeds: tuple[int, ...]
    ratio: tuple[float, float, float]  # planner / best average JCT: point, 95% low, high
    cost_ratio: tuple[float, float, float]  # the same for the total cost
    ms_per_decision: float  # the planner's wall time per simulator decision
    episode_s: tuple[float, float]  # the planner's mean and longest episode (s)
    heuristics: dict[str, float]  # each heuristic's mean average JCT (h)
    planner_jct_h: tuple[float, ...]  # per episode
    best_jct_h: tuple[float, ...]
    # a deadline objective's report (semantics §15); left out of a JCT report's JSON
    objective: str = "jct"  # what ``ratio`` compares, and the best heuristic is best at
    scores: dict[str, float] = field(default_factory=dict)  # each heuristic's objective mean
    jct_ratio: tuple[float, float, float] | None = None  # beside a deadline ratio

    @property
    def bound(self) -> bool:
        """True for a clairvoyant planner: a bound no scheduler reaches, not a result."""
        return self.lookahead == "clairvoyant"

    def format(self) -> str:
        """The report as text: the row, then each heuristic's mean."""
        p, lo, hi = self.ratio
        c, clo, chi = self.cost_ratio
        tag = "  (clairvoyant: a bound, not a scheduler)" if self.bound else ""
        jct = self.objective == "jct"
        means = self.heuristics if jct else self.scores
        best = f"{means[self.best]:.3f} h mean JCT" if jct else f"{_FIGURE[self.objective]} "
        if not jct:
            best += f"{means[self.best]:.3f}"
        lines = [
            f"{self.env_id}: {len(self.seeds)} episode(s) of {self.n_jobs} jobs, reset seeds "
            f"{self.seeds[0]}..{self.seeds[-1]}; lookahead {self.lookahead}{tag}",
            f"best heuristic   {self.best}  ({best})",
            f"planner          {self.planner}",
            f"{'JCT' if jct else self.objective} ratio".ljust(17)
            + f"{p:.4f}  [{lo:.4f}, {hi:.4f}]  (planner / best, paired, 95%)",
        ]
        if self.jct_ratio is not None:
            j, jlo, jhi = self.jct_ratio
            lines.append(f"JCT ratio        {j:.4f}  [{jlo:.4f}, {jhi:.4f}]")
        lines += [
            f"cost ratio       {c:.4f}  [{clo:.4f}, {chi:.4f}]",
            f"planner time     {self.ms_per_decision:.2f} ms per decision; episodes "
            f"{self.episode_s[0]:.2f} s mean, {self.episode_s[1]:.2f} s longest",
            f"heuristics ({_FIGURE[self.objective]}): "
            + ", ".join(f"{n} {v:.3f}" for n, v in sorted(means.items(), key=_second)),
        ]
        return "\n".join(lines)

    def to_json(self) -> str:
        """The report as JSON (a JCT report without the deadline objective's fields)."""
        out = asdict(self)
        if self.objective == "jct":
            for name in ("objective", "scores", "jct_ratio"):
                del out[name]
        return json.dumps({**out, "bound": self.bound}, indent=2)


def _second(item: tuple[str, float]) -> float:
    return item[1]


def run_headroom(
    env_id: str,
    episodes: int,
    first_seed: int = 0,
    base: str | None = None,
    lookahead: str = "submitted",
    k: int = 4,
    progress: Progress | None = None,
    n_jobs: int | None = None,
    copies: str = "all",
    objective: str = "jct",
) -> HeadroomReport:
    """The planner against ``env_id``'s best heuristic on ``episodes`` episodes (see the
    module docstring). ``base`` defaults to the best heuristic; ``copies`` is the planner's
    setting (``default``: it never tries another count of data-parallel copies);
    ``objective`` (``jct``, ``misses`` or ``tardiness``) the planner's and what the best
    heuristic and the ratio are judged by; one ValidationError line for bad input."""
    from ..envs.registration import check_env_id, geopipe_kwargs

    check_env_id("env_id", env_id)
    if isinstance(episodes, bool) or not isinstance(episodes, int) or episodes < 1:
        raise ValidationError("episodes", episodes, "must be a whole number >= 1")
    if isinstance(first_seed, bool) or not isinstance(first_seed, int) or first_seed < 0:
        raise ValidationError("first_seed", first_seed, "must be a whole number >= 0")
    lookahead = check_lookahead(lookahead)
    if objective not in HEADROOM_OBJECTIVES:
        raise ValidationError("objective", objective, "choose jct, misses or tardiness")
    heuristics = env_heuristics(env_id)
    if base is not None and base not in heuristics:
        raise ValidationError(
            "base", base, f"not a heuristic of {env_id}; choose from: {', '.join(heuristics)}"
        )
    extra = "" if copies == "all" else f",copies={copies}"
    if objective != "jct":
        extra += f",objective={objective}"
    parse_rollout(f"rollout:{heuristics[0]},k={k}{extra}")  # one line for a bad k or copies
    world = geopipe_kwargs(env_id)
    if world.get("admission") is not None or world.get("preemption") is not None:
        raise ValidationError("env_id", env_id, "sets its own rules: not supported here")
    seeds = tuple(range(first_seed, first_seed + episodes))
    if n_jobs is not None and (
        isinstance(n_jobs, bool) or not isinstance(n_jobs, int) or not 1 <= n_jobs <= 10_000
    ):
        raise ValidationError("n_jobs", n_jobs, "must be a whole number from 1 to 10000")
    scenarios = env_scenarios(env_id, seeds, n_jobs)
    runs: dict[str, list[RunResult]] = {}
    for name in heuristics:  # seeded by the episode, as an agent is at reset (random)
        runs[name] = [make_policy(name, seed=e).simulate(s) for e, s in zip(seeds, scenarios)]
        if progress is not None:
            progress.update()
    means = {n: _mean([r.avg_jct for r in rs]) / 3600.0 for n, rs in runs.items()}
    figure = HEADROOM_OBJECTIVES[objective]
    scores = (
        means if objective == "jct" else {n: _mean(list(map(figure, rs))) for n, rs in runs.items()}
    )
    best = min(heuristics, key=scores.__getitem__)  # ties: the earlier in the registry
    planner = f"rollout:{best if base is None else base},k={k},lookahead={lookahead}{extra}"
    planned: list[RunResult] = []
    seconds: list[float] = []
    for e, s in zip(seeds, scenarios):
        start = time.perf_counter()
        planned.append(make_policy(planner, seed=e).simulate(s))
        seconds.append(time.perf_counter() - start)
        if progress is not None:
            progress.update()
    ref = runs[best]
    decisions = sum(r.n_decisions for r in planned)
    jct_ratio = paired_ratio_ci([[r.avg_jct for r in planned]], [r.avg_jct for r in ref])
    deadline = objective != "jct"
    return HeadroomReport(
        env_id=env_id,
        lookahead=lookahead,
        n_jobs=len(scenarios[0].jobs),
        planner=planner,
        best=best,
        seeds=seeds,
        ratio=_ratio([figure(r) for r in planned], [figure(r) for r in ref])
        if deadline
        else jct_ratio,
        cost_ratio=paired_ratio_ci([[r.total_cost for r in planned]], [r.total_cost for r in ref]),
        ms_per_decision=1000.0 * math.fsum(seconds) / max(decisions, 1),
        episode_s=(math.fsum(seconds) / len(seconds), max(seconds)),
        heuristics=means,
        planner_jct_h=tuple(r.avg_jct / 3600.0 for r in planned),
        best_jct_h=tuple(r.avg_jct / 3600.0 for r in ref),
        objective=objective,
        scores=scores if deadline else {},
        jct_ratio=jct_ratio if deadline else None,
    )


def _ratio(mine: Sequence[float], ref: Sequence[float]) -> tuple[float, float, float]:
    """:func:`paired_ratio_ci` of ``mine`` to ``ref``; NaN when ``ref`` is all zero (a best
    heuristic that never misses leaves no ratio to form)."""
    if not any(ref):
        return (math.nan, math.nan, math.nan)
    with np.errstate(divide="ignore", invalid="ignore"):  # a resample of only zeros: inf
        return paired_ratio_ci([list(mine)], list(ref))


def _mean(values: Sequence[float]) -> float:
    return math.fsum(values) / len(values)


def headroom_steps(env_id: str, episodes: int) -> int:
    """How many progress steps :func:`run_headroom` takes (heuristics, then the planner)."""
    return len(env_heuristics(env_id)) + episodes
