"""The policy registry: names, lookups, errors and fresh objects."""

from __future__ import annotations

import pytest

from bacepipe_env.errors import ValidationError
from bacepipe_env.policies import Policy
from bacepipe_env.policies.registry import (
    PolicyInfo,
    ablation_names,
    baseline_names,
    make_policy,
    policy_info,
    policy_names,
    register_policy,
)
from bacepipe_env.scenarios import load_scenario

# semantics §6 and the brief: BACE-Pipe, the paper's four baselines and three ablations, and
# the extra orderings (SJF, random) paired with BACE-Pipe's placement.
REQUIRED = {
    "bace-pipe",
    "lcf",
    "ldf",
    "cr-lcf",
    "cr-ldf",
    "no-priority",
    "no-pathfinder",
    "no-costmin",
    "sjf",
    "random",
}


def test_names_are_unique_and_cover_the_spec():
    names = policy_names()
    assert len(names) == len(set(names))
    assert set(names) >= REQUIRED
    assert names[0] == "bace-pipe"
    assert policy_names() == names  # stable


def test_baselines_and_ablations_are_subsets():
    names = set(policy_names())
    assert set(baseline_names()) <= names
    assert set(ablation_names()) <= names
    assert set(baseline_names()) == {"bace-pipe", "lcf", "ldf", "cr-lcf", "cr-ldf"}
    assert set(ablation_names()) == {"bace-pipe", "no-priority", "no-pathfinder", "no-costmin"}
    assert len(baseline_names()) == len(set(baseline_names()))
    assert len(ablation_names()) == len(set(ablation_names()))


@pytest.fixture(scope="module")
def paper():
    return load_scenario("paper")


@pytest.mark.parametrize("name", policy_names())
def test_every_policy_runs_paper_to_completion(name, paper):
    pol = make_policy(name)
    assert isinstance(pol, Policy)
    assert pol.name == name
    res = pol.simulate(paper)
    assert res.policy == name
    assert [r.job_id for r in res.records] == sorted(j.job_id for j in paper.jobs)
    for r in res.records:
        assert r.start_time >= r.submit_time
        assert r.finish_time > r.start_time
        assert 1 <= r.n_gpus <= r.k_star
        assert r.jct == pytest.approx(r.wait + r.execution)
    assert res.avg_jct > 0 and res.total_cost > 0


@pytest.mark.parametrize("name", policy_names())
def test_policy_info(name):
    info = policy_info(name)
    assert info.name == name
    assert isinstance(info.description, str) and info.description.strip()
    assert info.factory(0).name == name


@pytest.mark.parametrize("bad", ["BACE-Pipe", "nope", "", "lcf "])
@pytest.mark.parametrize("lookup", [make_policy, policy_info], ids=["make", "info"])
def test_unknown_name_lists_the_valid_ones(lookup, bad):
    with pytest.raises(ValidationError) as err:
        lookup(bad)
    msg = str(err.value)
    # a short line: the list starts with the valid names and points to the whole list (it is
    # cut past MAX_REASON_CHARS, saying how much was cut); a near miss gets "did you mean"
    assert "`bacepipe policies` lists them" in msg and len(msg) <= 250
    if bad == "lcf ":
        assert "did you mean 'lcf'?" in msg
    else:
        assert all(name in msg for name in policy_names()[:5])
    assert err.value.value == bad


@pytest.mark.parametrize("name", policy_names())
def test_make_policy_returns_a_fresh_object(name):
    a, b = make_policy(name), make_policy(name)
    assert a is not b
    assert a == a
    if name == "random":
        # the stateful part must not be shared
        assert a.ordering is not b.ordering
        assert a.ordering.rng is not b.ordering.rng


def test_seed_reaches_the_random_ordering():
    a = make_policy("random", seed=1).ordering.rng.integers(1 << 30, size=4).tolist()
    b = make_policy("random", seed=1).ordering.rng.integers(1 << 30, size=4).tolist()
    c = make_policy("random", seed=2).ordering.rng.integers(1 << 30, size=4).tolist()
    assert a == b != c


def test_a_placement_object_must_declare_whether_it_is_pure():
    """``pure`` is part of the placement contract (the env memoises pure previews), checked
    where objects enter the registry, with one line naming the field."""
    from bacepipe_env.policies.registry import make_placement

    class Undeclared:
        name = "undeclared"

        def place(self, view, job_id):
            return None

    with pytest.raises(ValidationError, match="placement: must declare pure"):
        make_placement(Undeclared())
    declared = Undeclared()
    declared.pure = False
    assert make_placement(declared) is declared
    assert make_placement("pathfinder").pure is True
    declared.pure, declared.memo_key = True, ["not", "hashable"]
    with pytest.raises(ValidationError, match="placement: has a memo_key that cannot be hashed"):
        make_placement(declared)
    declared.memo_key = ("a", 1)
    assert make_placement(declared) is declared


@pytest.mark.parametrize(
    ("name", "base", "rule"),
    [
        ("sjf+full", "sjf", "full"),
        ("sjf+finish-aware", "sjf", "finish-aware"),
        ("bace-pipe+full", "bace-pipe", "full"),
        ("bace-pipe+finish-aware", "bace-pipe", "finish-aware"),
    ],
)
def test_a_waiting_heuristic_is_its_base_policy_under_its_admission_rule(
    name: str, base: str, rule: str
) -> None:
    info = policy_info(name)
    assert info.admission == rule and name in policy_names()
    for seed in range(3):
        scn = load_scenario("paper", seed=seed)
        names = scn.cluster.names
        own = make_policy(name).simulate(scn)
        assert own.admission == rule
        assert own.to_dict(names) | {"policy": base} == make_policy(base).simulate(
            scn, admission=rule
        ).to_dict(names) | {"policy": base}
        # an explicit admission argument still wins over the policy's own
        assert make_policy(name).simulate(scn, admission="greedy").admission == "greedy"


def test_register_policy_rejects_an_unknown_admission_rule() -> None:
    with pytest.raises(ValidationError, match="admission"):
        register_policy(PolicyInfo("x-wait", "x", "sjf", "pathfinder", admission="sometimes"))
