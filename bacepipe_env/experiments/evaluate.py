"""Heuristics and learned models on the same held-out episodes of one environment id.

``evaluate_policies("bacepipe_env/GeoPipe-v2", ["bace-pipe", "sjf", "maskable_ppo:runs/x/
model.zip"], episodes=20, first_seed=1_000_000)`` plays every policy on the episodes reset
with seeds ``first_seed, first_seed + 1, ...`` and reports, per policy, the mean and 95% CI of
the average JCT, the total cost and the carbon, and against a reference policy the paired
per-episode JCT ratio and its wins, ties and losses (``bacepipe evaluate`` prints it).

A heuristic plays ``gym.make(env_id, placement=agent.placement).unwrapped`` (and its admission
rule, when its agent carries one); a learned model plays ``gym.make(env_id, **layout).unwrapped``
with the observation layout and placement it was trained with (:func:`~bacepipe_env.learned.
layout_kwargs`). Unwrapped, Gymnasium's ``TimeLimit`` never cuts an episode short.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..core.preemption import check_preemption
from ..errors import BacepipeError, ValidationError
from ..learned import (
    PRETRAINED,
    is_learned,
    layout_kwargs,
    load_learned,
    pretrained_dir,
    resolve_pretrained,
)
from .progress import Progress
from .stats import Estimate, estimate

if TYPE_CHECKING:  # bacepipe_env.envs means gymnasium: imported when an evaluation runs
    from ..envs.agents import EpisodeResult

__all__ = [
    "TIE_RTOL",
    "EvaluationReport",
    "PolicyEvaluation",
    "evaluate_policies",
    "learned_display_name",
    "outcome",
]

#: What a heuristic's env leaves out: arrays no heuristic reads (the episode is the same).
_NO_OPTIONAL_ARRAYS = {"grid_features": False, "fault_features": False, "running_features": False}

#: Two episodes' JCTs within this relative distance of each other are a tie.
TIE_RTOL = 1e-9


def outcome(jct: float, reference_jct: float) -> str:
    """``"win"`` when ``jct`` is below the reference's (beyond :data:`TIE_RTOL`), ``"tie"``
    when equal to it, ``"loss"`` otherwise (a NaN is a loss)."""
    if abs(jct - reference_jct) <= TIE_RTOL * max(abs(jct), abs(reference_jct)):
        return "tie"
    return "win" if jct < reference_jct else "loss"


def learned_display_name(spec: str) -> str:
    """``maskable_ppo:runs/x/model.zip`` -> ``learned:x`` (the model's folder; its stem when
    the file is not a run's ``model.zip`` or sits in no named folder); a shipped
    ``pretrained:<slug>`` -> ``learned:pretrained``."""
    prefix, rest = spec.split(":", 1)
    if prefix == PRETRAINED:
        return f"learned:{PRETRAINED}"
    path = Path(rest)
    name = path.parent.name if path.stem == "model" and path.parent.name else path.stem
    return f"learned:{name}"


def _train_seed(spec: str) -> int | None:
    """The learner's seed from the train.learn ``config.json`` next to the model (or one
    folder up, for checkpoints; the ``<slug>.json`` of a pretrained agent); None when there is
    none or it says none."""
    prefix, rest = spec.split(":", 1)
    path = Path(rest)
    if prefix == PRETRAINED:
        candidates = [pretrained_dir() / f"{rest}.json"]
    else:
        candidates = [path.parent / "config.json", path.parent.parent / "config.json"]
    for cfg in candidates:
        if cfg.is_file():
            try:
                data = json.loads(cfg.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                return None
            train = data.get("train") if isinstance(data, dict) else None
            seed = train.get("seed") if isinstance(train, dict) else None
            return seed if isinstance(seed, int) and not isinstance(seed, bool) else None
    return None


def _finite(x: float) -> float | None:
    return x if math.isfinite(x) else None


def _est(e: Estimate | None) -> dict[str, Any] | None:
    if e is None:
        return None
    return {"mean": _finite(e.mean), "ci95": _finite(e.ci95), "n": e.n}


@dataclass(frozen=True)
class PolicyEvaluation:
    """One policy's episodes and, against the reference, its paired JCT ratios."""

    name: str  # as shown: the registered name, or learned:<name>
    spec: str  # as given: the registered name, or algo:path
    train_seed: int | None
    episodes: tuple[EpisodeResult, ...]
    ratios: tuple[float, ...]  # per episode: this policy's avg JCT / the reference's
    outcomes: tuple[str, ...]  # per episode: win, tie or loss against the reference
    # per episode: the bacepipe simulate line that replays it (None: none does; a model)
    replays: tuple[str | None, ...] = ()

    @property
    def learned(self) -> bool:
        return is_learned(self.spec)

    def jct(self) -> Estimate:
        return estimate([r.avg_jct_h for r in self.episodes])

    def cost(self) -> Estimate:
        return estimate([r.total_cost_usd for r in self.episodes])

    def carbon(self) -> Estimate:
        return estimate([r.carbon_kg for r in self.episodes])

    def deadlines(self) -> bool:
        """Whether the episodes had deadlines (semantics §15): a finite miss rate."""
        return any(math.isfinite(r.miss_rate) for r in self.episodes)

    def misses(self) -> Estimate:
        return estimate([r.miss_rate for r in self.episodes])

    def tardiness(self) -> Estimate:
        return estimate([r.total_tardiness_h for r in self.episodes])

    def ratio(self) -> Estimate | None:
        """Mean ± CI of the finite per-episode ratios (None when none is finite)."""
        finite = [r for r in self.ratios if math.isfinite(r)]
        return estimate(finite) if finite else None

    def counts(self) -> tuple[int, int, int]:
        """(wins, ties, losses) against the reference."""
        return self.outcomes.count("win"), self.outcomes.count("tie"), self.outcomes.count("loss")


def _cell(e: Estimate | None, digits: int) -> str:
    if e is None or not math.isfinite(e.mean):
        return "n/a"
    if math.isnan(e.ci95):
        return f"{e.mean:,.{digits}f}"
    return f"{e.mean:,.{digits}f} ± {e.ci95:,.{digits}f}"


def _percent(e: Estimate) -> Estimate:
    return Estimate(100 * e.mean, 100 * e.ci95, e.n)


def _late(r: EpisodeResult) -> dict[str, float | None]:
    """An episode's deadline figures (semantics §15)."""
    return {"miss_rate": _finite(r.miss_rate), "total_tardiness_h": _finite(r.total_tardiness_h)}


@dataclass(frozen=True)
class EvaluationReport:
    """Every policy on the same episodes of ``env_id``."""

    env_id: str
    first_seed: int
    seeds: tuple[int, ...]
    reference: str  # the reference policy's shown name
    policies: tuple[PolicyEvaluation, ...]

    def format_table(self) -> str:
        """A table: per policy n, avg JCT, cost, carbon (mean ± 95% CI), with deadlines the
        miss rate (%) and total tardiness (h), and the paired JCT ratio to the reference with
        wins/ties/losses."""
        due = any(p.deadlines() for p in self.policies)
        head = [
            "policy",
            "n",
            "avg JCT h",
            "cost $",
            "carbon kg",
            *(("missed %", "tardiness h") if due else ()),
            f"JCT / {self.reference}",
            "W/T/L",
        ]
        body = []
        for p in self.policies:
            w, t, l_ = p.counts()
            body.append(
                [
                    p.name,
                    str(len(p.episodes)),
                    _cell(p.jct(), 2),
                    _cell(p.cost(), 0),
                    _cell(p.carbon(), 0),
                    *((_cell(_percent(p.misses()), 1), _cell(p.tardiness(), 1)) if due else ()),
                    _cell(p.ratio(), 3),
                    f"{w}/{t}/{l_}",
                ]
            )
        widths = [max(len(r[i]) for r in [head, *body]) for i in range(len(head))]

        def line(cells: Sequence[str]) -> str:
            first = cells[0].ljust(widths[0])
            rest = (c.rjust(w) for c, w in zip(cells[1:], widths[1:]))
            return "  ".join([first, *rest]).rstrip()

        lo, hi = self.seeds[0], self.seeds[-1]
        title = (
            f"{self.env_id}: {len(self.seeds)} episode(s), reset seeds {lo}..{hi}; "
            f"mean ± 95% CI; W/T/L: episodes with a lower/equal/higher JCT than {self.reference}"
        )
        rule = "-" * len(line(head))
        return "\n".join([title, line(head), rule, *(line(r) for r in body)])

    def rows(self) -> list[dict[str, Any]]:
        """Every episode of every policy, one flat dict each (NaN as None)."""
        out = []
        for p in self.policies:
            replays = p.replays or (None,) * len(p.episodes)
            for r, replay in zip(p.episodes, replays):
                out.append(
                    {
                        "env_id": self.env_id,
                        "policy": p.name,
                        "train_seed": p.train_seed,
                        "episode_seed": r.seed,
                        "avg_jct_h": _finite(r.avg_jct_h),
                        "episode_return": _finite(r.episode_return),
                        "total_cost_usd": _finite(r.total_cost_usd),
                        "carbon_kg": _finite(r.carbon_kg),
                        **(_late(r) if p.deadlines() else {}),
                        "steps": r.steps,
                        "illegal_actions": r.illegal_actions,
                        "replay": replay,
                    }
                )
        return out

    def summary(self) -> dict[str, Any]:
        """The table's numbers (NaN as None)."""
        policies = []
        for p in self.policies:
            w, t, l_ = p.counts()
            policies.append(
                {
                    "policy": p.name,
                    "spec": p.spec,
                    "train_seed": p.train_seed,
                    "n": len(p.episodes),
                    "avg_jct_h": _est(p.jct()),
                    "total_cost_usd": _est(p.cost()),
                    "carbon_kg": _est(p.carbon()),
                    **(
                        {"miss_rate": _est(p.misses()), "total_tardiness_h": _est(p.tardiness())}
                        if p.deadlines()
                        else {}
                    ),
                    "jct_ratio": _est(p.ratio()),
                    "wins": w,
                    "ties": t,
                    "losses": l_,
                }
            )
        return {
            "env_id": self.env_id,
            "first_seed": self.first_seed,
            "episodes": len(self.seeds),
            "reference": self.reference,
            "tie_rtol": TIE_RTOL,
            "policies": policies,
        }

    def to_json(self) -> str:
        """``{"summary": ..., "rows": [...]}`` as strict JSON (no NaN)."""
        payload = {"summary": self.summary(), "rows": self.rows()}
        return json.dumps(payload, indent=2, allow_nan=False)


def _check(env_id: str, policies: Sequence[str], episodes: int, first_seed: int) -> None:
    from ..envs.registration import check_env_id

    check_env_id("env_id", env_id)
    if isinstance(episodes, bool) or not isinstance(episodes, int) or episodes < 1:
        raise ValidationError("episodes", episodes, "must be a whole number >= 1")
    if isinstance(first_seed, bool) or not isinstance(first_seed, int) or first_seed < 0:
        raise ValidationError("first_seed", first_seed, "must be a whole number >= 0")
    if not policies:
        raise ValidationError("policies", list(policies), "give at least one policy")
    if len(set(policies)) != len(policies):
        raise ValidationError("policies", list(policies), "a policy is listed twice")


def _make_env(env_id: str, kwargs: dict[str, Any]) -> Any:
    """What ``gym.make(env_id, **kwargs).unwrapped`` is: the registered class and kwargs,
    ``kwargs`` over them, and no wrapper (so no ``TimeLimit`` truncation). Built directly, as
    the simulator experiments do, so that this package never imports gymnasium itself."""
    from ..envs.registration import geopipe_spec

    cls, registered = geopipe_spec(env_id) or (None, {})
    assert cls is not None, env_id  # checked by _check
    return cls(**{**registered, **kwargs})


def _replay(env: Any, env_id: str, seed: int, policy: str, world: Mapping[str, Any]) -> str | None:
    """The ``bacepipe simulate`` line that replays the episode a heuristic ``policy`` just
    played on ``env`` (reset with ``seed``, made with ``world`` over its agent's keywords):
    :func:`~bacepipe_env.envs.replay.replay_command`, given only when the env's window held
    every job of the episode (a heuristic then decides as its simulator run does)."""
    from ..envs.replay import replay_command

    base = env.unwrapped
    if len(base.scenario.jobs) > base.settings.max_queue:
        return None
    return replay_command(env_id, seed, policy, world)


def evaluate_policies(
    env_id: str,
    policies: Sequence[str],
    episodes: int,
    first_seed: int,
    reference: str | None = None,
    progress: Progress | None = None,
    preemption: str | None = None,
    env_kwargs: Mapping[str, Any] | None = None,
    defaults: Mapping[str, Any] | None = None,
) -> EvaluationReport:
    """Play every policy (registered names and ``algo:path`` models) on the episodes of
    ``env_id`` reset with seeds ``first_seed .. first_seed + episodes - 1``.

    ``env_kwargs`` (GeoPipeEnv keywords, as ``bacepipe evaluate --env-kwargs`` gives them)
    go over every policy's env: world settings such as ``{"n_jobs": 80}`` change every
    policy's episodes alike, and ``{"reward": None}`` scores every policy by the default
    reward (without it a learned model plays with the reward it was trained on, so returns of
    different models need not compare). A learned model refuses, in one line, a setting
    that changes what it observes.

    ``reference`` (a policy as given, or as shown: ``learned:<name>``; default the first)
    is what the paired JCT ratios divide by. Every policy is checked (and every model loaded)
    before the first episode; bad input is one ValidationError/BacepipeError line.
    ``progress`` counts finished episodes. ``preemption`` (semantics §3c) is the rule the env's
    simulator applies for every policy without its own (not on an id with preempt actions,
    whose agents preempt themselves); ``defaults`` are GeoPipeEnv keywords likewise set only
    where a policy sets none of its own (``bacepipe evaluate``'s ``--admission`` and
    ``--elasticity``: a policy's own rule wins, as in ``bacepipe simulate``)."""
    from ..envs.agents import RolloutAgent, agent_env_kwargs, evaluate, make_agent
    from ..envs.registration import geopipe_kwargs

    _check(env_id, policies, episodes, first_seed)
    if env_kwargs is not None and not isinstance(env_kwargs, Mapping):
        raise ValidationError("env_kwargs", env_kwargs, "must be a mapping of GeoPipeEnv keywords")
    common = dict(env_kwargs or {})
    preempt_actions = bool(geopipe_kwargs(env_id).get("preempt_window"))
    if preemption is not None:
        preemption = check_preemption(preemption)
        if preempt_actions and preemption != "none":
            raise ValidationError(
                "preemption", preemption, f"{env_id}'s agents make the preemptions themselves"
            )
    policies = resolve_pretrained(policies, env_id)
    seeds = list(range(first_seed, first_seed + episodes))
    agents: list[tuple[str, str, int | None, Any, dict[str, Any]]] = []
    for spec in policies:
        if is_learned(spec):
            path = Path(spec.split(":", 1)[1])
            if not spec.startswith(f"{PRETRAINED}:") and not path.is_file():
                raise ValidationError("policies", spec, f"no model file at {path}")
            agent: Any = load_learned(spec)
            kwargs = layout_kwargs(agent.env_kwargs)
            kwargs.setdefault("placement", agent.placement)
            agents.append((learned_display_name(spec), spec, _train_seed(spec), agent, kwargs))
        else:
            agent = make_agent(spec)  # a one-line error for an unknown or unplayable name
            # a heuristic reads the simulator, not the observation: skip the optional arrays;
            # its placement, admission and preemption rule are the env's (on an id with
            # preempt actions it plays its rule itself)
            kwargs = {
                **agent_env_kwargs(spec, preempt_actions=preempt_actions),
                **_NO_OPTIONAL_ARRAYS,
            }
            agents.append((spec, spec, None, agent, kwargs))
    fallback = {**(defaults or {}), **({} if preemption is None else {"preemption": preemption})}
    for *_, kwargs in agents:  # for every policy without a rule of its own
        for key, value in fallback.items():
            kwargs.setdefault(key, value)
    for *_, kwargs in agents:
        kwargs.update(common)
    shown = [a[0] for a in agents]
    if len(set(shown)) != len(shown):
        raise ValidationError("policies", list(policies), "two policies show as the same name")
    if reference is None:
        ref_index = 0
    else:
        matches = [i for i, a in enumerate(agents) if reference in (a[0], a[1])]
        if not matches:
            raise ValidationError(
                "reference", reference, f"not among the policies: {', '.join(shown)}"
            )
        ref_index = matches[0]
    envs = []
    for _, spec, _, agent, kwargs in agents:
        try:
            env = _make_env(env_id, kwargs)
        except BacepipeError:
            raise
        except (TypeError, ValueError) as err:
            raise BacepipeError(f"{spec}: cannot build {env_id}: {err}") from None
        if is_learned(spec):
            agent.check_env(env)
        elif isinstance(agent, RolloutAgent):
            agent.bind(env)  # a planner forks the env's simulator
        envs.append(env)
    results: list[list[EpisodeResult]] = []
    replays: list[tuple[str | None, ...]] = []
    world = {**common, **fallback}
    for (_, spec, _, agent, _), env in zip(agents, envs):
        mine: list[EpisodeResult] = []
        lines: list[str | None] = []
        for seed in seeds:
            mine.extend(evaluate(env, agent, [seed]))
            lines.append(None if is_learned(spec) else _replay(env, env_id, seed, spec, world))
            if progress is not None:
                progress.update()
        results.append(mine)
        replays.append(tuple(lines))
        env.close()
    ref = [r.avg_jct_h for r in results[ref_index]]
    evaluated = []
    for (name, spec, train_seed, _, _), mine, replayed in zip(agents, results, replays):
        ratios = tuple(
            r.avg_jct_h / b if b != 0 and math.isfinite(b) else math.nan for r, b in zip(mine, ref)
        )
        outcomes = tuple(outcome(r.avg_jct_h, b) for r, b in zip(mine, ref))
        evaluated.append(
            PolicyEvaluation(name, spec, train_seed, tuple(mine), ratios, outcomes, replayed)
        )
    return EvaluationReport(env_id, first_seed, tuple(seeds), shown[ref_index], tuple(evaluated))
