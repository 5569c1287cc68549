"""`python -m train.compare`: each heuristic is evaluated once per (environment, held-out set)
of the learned runs, whatever their number, and written as a flat TensorBoard run
``heuristics/<env>/<policy>`` at the learned runs' evaluation steps, an HParams session beside
theirs, with a custom-scalars layout that charts both; and a comparison.csv row per policy
plus each learned run."""

from __future__ import annotations

import csv
import json
import re
import shutil
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from train_helpers import (
    FIG1_ID,
    TinyRun,
    accumulator,
    f32,
    one_line_error,
    run,
    run_many,
    text_summary,
)

torch = pytest.importorskip("torch")

from bacepipe_env.envs.agents import evaluate, make_agent  # noqa: E402
from bacepipe_env.experiments.tensorboard import MAX_RUN_COMPONENT, ScalarWriter  # noqa: E402
from bacepipe_env.train.config import env_slug  # noqa: E402

POLICIES = ("bace-pipe", "lcf")
HEURISTICS = Path("heuristics") / "geopipe"
OTHER_SEEDS = [1_000_002, 1_000_003]


def _copy_run(src: Path, dst: Path, *, model: bool = True, **changes: Any) -> Path:
    """A copy of a learned run with ``config.json`` fields changed (``observation`` goes into
    its env_kwargs), without ``model.zip`` unless ``model``."""
    shutil.copytree(src, dst)
    if not model:
        (dst / "model.zip").unlink()
    cfg = json.loads((dst / "config.json").read_text())
    if "observation" in changes:
        cfg["env_kwargs"]["observation"] = changes.pop("observation")
    cfg.update(changes)
    (dst / "config.json").write_text(json.dumps(cfg))
    return dst


@pytest.fixture(scope="module")
def compared(tiny: TinyRun, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """train.compare over a copy of the tiny run and a second learned run on the same env and
    held-out set (twice: a re-run must replace its events), side by side with the --env-id
    form, two held-out sets of one env, and the two error cases."""
    tmp = tmp_path_factory.mktemp("compare")
    logdir = tmp / "runs"
    shutil.copytree(tiny.run_dir, logdir / "tiny")
    # The second run observes the flat vector (a PPO run would) and sits in a nested folder
    # (--run-name learned/geopipe/flat); it has saved no model yet.
    flat = logdir / "learned" / "geopipe" / "flat"
    _copy_run(tiny.run_dir, flat, model=False, observation="flat", algo="ppo")
    # A heuristic folder of the earlier flat layout: the compare replaces it.
    with ScalarWriter(logdir / "heuristic__bace-pipe__geopipe") as legacy:
        legacy.add_scalar("eval/avg_jct_h", 1.0, 0)
    two = tmp / "two"
    _copy_run(tiny.run_dir, two / "a", model=False)
    _copy_run(tiny.run_dir, two / "b", model=False, eval_seeds=OTHER_SEEDS)
    empty, fig1 = tmp / "empty", tmp / "fig1"
    empty.mkdir()
    fig1.mkdir()
    default = tmp / "default"  # no --policies: every heuristic of the env
    shutil.copytree(tiny.run_dir, default / "tiny")
    first, env_id, two_sets, no_runs, bad_policy, by_default = run_many(
        ("-m", "train.compare", "--logdir", str(logdir), "--policies", ",".join(POLICIES)),
        ("-m", "train.compare", "--logdir", str(fig1), "--env-id", FIG1_ID, "--policies", "fcfs"),
        ("-m", "train.compare", "--logdir", str(two), "--policies", "fcfs"),
        ("-m", "train.compare", "--logdir", str(empty), "--policies", "bace-pipe"),
        ("-m", "train.compare", "--logdir", str(logdir), "--policies", "bace-pipe,nope"),
        ("-m", "train.compare", "--logdir", str(default)),
    )
    assert first.returncode == 0, first.stderr
    events_after_first = sorted(p.name for p in (logdir / HEURISTICS).rglob("events.out.*"))
    second = run("-m", "train.compare", "--logdir", str(logdir), "--policies", ",".join(POLICIES))
    assert second.returncode == 0, second.stderr
    return {
        "logdir": logdir,
        "first": first,
        "second": second,
        "events_after_first": events_after_first,
        "env_id": env_id,
        "fig1": fig1,
        "two": two,
        "two_sets": two_sets,
        "no_runs": no_runs,
        "empty": empty,
        "bad_policy": bad_policy,
        "default": default,
        "by_default": by_default,
    }


def _heuristic_means(
    policy: str, env_id: str, env_kwargs: dict[str, Any], seeds: list[int]
) -> dict[str, float]:
    agent = make_agent(policy)
    env = gym.make(env_id, **agent.env_kwargs, **env_kwargs)
    results = evaluate(env, agent, seeds)
    return {
        "avg_jct_h": float(np.mean([r.avg_jct_h for r in results])),
        "total_cost_usd": float(np.mean([r.total_cost_usd for r in results])),
        "carbon_kg": float(np.mean([r.carbon_kg for r in results])),
        "return": float(np.mean([r.episode_return for r in results])),
    }


def _runs(logdir: Path) -> list[str]:
    """Every TensorBoard run under ``logdir`` (folders holding event files), as paths."""
    return sorted(
        p.parent.relative_to(logdir).as_posix() for p in logdir.rglob("events.out.tfevents.*")
    )


def test_one_set_of_heuristic_runs_for_two_learned_runs_on_one_env(
    tiny: TinyRun, compared: dict[str, Any]
) -> None:
    """Two learned runs with the same env and held-out set (one observing the dict, one the
    flat vector): the heuristics are evaluated and written once, in short folders."""
    logdir: Path = compared["logdir"]
    assert env_slug(tiny.config["env_id"]) == "geopipe"
    runs = _runs(logdir)
    assert runs == sorted(
        ["tiny", "learned/geopipe/flat", *(f"heuristics/geopipe/{p}" for p in POLICIES)]
    )
    assert not (logdir / "heuristic__bace-pipe__geopipe").exists()  # the earlier layout
    for name in runs:
        assert all(len(part) <= MAX_RUN_COMPONENT for part in name.split("/")), name
    out = compared["first"].stdout
    for policy in POLICIES:  # one table row per heuristic, not one per learned run
        assert len(re.findall(rf"^\S+ +{re.escape(policy)} ", out, re.M)) == 1, out
    assert f"TensorBoard: tensorboard --logdir {logdir}" in out
    assert f"wrote {logdir / 'comparison.csv'}" in out


@pytest.mark.parametrize("policy", POLICIES)
def test_heuristic_is_flat_at_the_learned_eval_steps_with_its_evaluate_value(
    tiny: TinyRun, compared: dict[str, Any], policy: str
) -> None:
    cfg = tiny.config
    learned_steps = [int(r["step"]) for r in tiny.eval_rows]
    assert learned_steps == [0, 128, 256]
    want = _heuristic_means(policy, cfg["env_id"], cfg["env_kwargs"], cfg["eval_seeds"])
    acc = accumulator(compared["logdir"] / HEURISTICS / policy)
    for key, value in want.items():
        events = [(e.step, e.value) for e in acc.Scalars(f"eval/{key}")]
        assert [s for s, _ in events] == learned_steps, (key, events)
        assert {v for _, v in events} == {f32(value)}, (key, events, value)


@pytest.mark.parametrize("policy", POLICIES)
def test_heuristic_runs_carry_hparams(compared: dict[str, Any], policy: str) -> None:
    acc = accumulator(compared["logdir"] / HEURISTICS / policy)
    assert acc.PluginTagToContent("hparams"), "no TensorBoard hparams"
    text_tags = [t for t in acc.Tags()["tensors"] if t.startswith("hparams_text")]
    assert text_tags, acc.Tags()["tensors"]
    text = text_summary(acc, text_tags[0])
    placement = make_agent(policy).placement
    for line in (
        "| algo | heuristic |",
        f"| policy | {policy} |",
        "| env_id | bacepipe_env/GeoPipe-v2 |",
        f"| placement | {placement} |",
        "| n_eval | 2 |",
        "| eval_seed | 1000000 |",
    ):
        assert line in text, text


def test_heuristics_and_learned_runs_side_by_side_in_the_hparams_table(
    tiny: TinyRun, compared: dict[str, Any], tensorboard_plugin: Any
) -> None:
    """TensorBoard's HParams plugin lists each heuristic as a session (algo ``heuristic``)
    beside the learned run's, with the held-out means as its metric values."""
    request = {
        "experimentName": "",
        "allowedStatuses": ["STATUS_UNKNOWN", "STATUS_SUCCESS", "STATUS_RUNNING"],
        "colParams": [],
        "startIndex": 0,
        "sliceSize": 100,
    }
    client = tensorboard_plugin(compared["logdir"], "hparams", "/session_groups")
    resp = client.post("/", data=json.dumps(request), content_type="application/json")
    assert resp.status_code == 200, resp.get_data(as_text=True)
    groups = {g["name"]: g for g in resp.get_json()["sessionGroups"]}
    assert {"tiny", *(f"heuristics/geopipe/{p}" for p in POLICIES)} <= set(groups)
    assert groups["tiny"]["hparams"]["algo"] == "maskable_ppo"
    cfg = tiny.config
    for policy in POLICIES:
        group = groups[f"heuristics/geopipe/{policy}"]
        assert group["hparams"]["algo"] == "heuristic"
        assert group["hparams"]["policy"] == policy
        metrics = {m["name"]["tag"]: m["value"] for m in group["metricValues"]}
        want = _heuristic_means(policy, cfg["env_id"], cfg["env_kwargs"], cfg["eval_seeds"])
        assert metrics["eval/avg_jct_h"] == f32(want["avg_jct_h"])


def test_custom_scalars_layout_charts_learned_and_heuristic_lines(
    compared: dict[str, Any], tensorboard_plugin: Any
) -> None:
    """The layout TensorBoard serves: JCT, cost and carbon charts (and the return) whose
    regexes each match a tag of the learned run and of every heuristic run."""
    logdir: Path = compared["logdir"]
    layout = tensorboard_plugin(logdir, "custom_scalars", "/layout").get("/").get_json()
    charts = {c["title"]: c["multiline"]["tag"] for cat in layout["category"] for c in cat["chart"]}
    assert {"average JCT (h)", "electricity cost ($)", "carbon (kg CO2e)"} <= set(charts)
    for run_name in ["tiny", *(f"heuristics/geopipe/{p}" for p in POLICIES)]:
        tags = accumulator(logdir / run_name).Tags()["scalars"]
        for title, regexes in charts.items():
            assert any(re.search(rx, t) for rx in regexes for t in tags), (run_name, title)
    # every heuristic run carries the layout, so any of them brings it
    for policy in POLICIES:
        acc = accumulator(logdir / HEURISTICS / policy)
        assert "custom_scalars__config__" in acc.Tags()["tensors"]


def test_comparison_csv_has_every_policy_and_the_learned_run(
    tiny: TinyRun, compared: dict[str, Any]
) -> None:
    with open(compared["logdir"] / "comparison.csv", newline="") as fh:
        rows = [r["policy"] for r in csv.DictReader(fh)]
    assert sorted(rows) == sorted([*POLICIES, "learned:tiny"])  # the heuristics once
    with open(compared["logdir"] / "comparison.csv", newline="") as fh:
        by_policy = {r["policy"]: r for r in csv.DictReader(fh)}
    cfg = tiny.config
    for policy in POLICIES:
        want = _heuristic_means(policy, cfg["env_id"], cfg["env_kwargs"], cfg["eval_seeds"])
        row = by_policy[policy]
        assert row["env_id"] == cfg["env_id"] and int(row["n_eval"]) == 2
        for key, value in want.items():
            assert float(row[key]) == pytest.approx(value), (policy, key)
    # The learned row evaluates model.zip on the same seeds. (Not eval.csv's last row: that
    # evaluation ran before PPO's last update, which model.zip includes.)
    from bacepipe_env.train.sb3 import load_agent

    agent = load_agent(f"{cfg['algo']}:{tiny.run_dir / 'model.zip'}")
    env = gym.make(cfg["env_id"], **cfg["env_kwargs"]).unwrapped
    results = evaluate(env, agent, cfg["eval_seeds"])
    learned = by_policy["learned:tiny"]
    assert float(learned["avg_jct_h"]) == pytest.approx(np.mean([r.avg_jct_h for r in results]))
    assert float(learned["return"]) == pytest.approx(np.mean([r.episode_return for r in results]))
    for line in compared["first"].stdout.splitlines()[:3]:
        assert line.startswith(cfg["env_id"]), line


def test_a_rerun_replaces_the_heuristic_events(compared: dict[str, Any]) -> None:
    logdir = compared["logdir"]
    for policy in POLICIES:
        files = list((logdir / HEURISTICS / policy).glob("events.out.tfevents.*"))
        assert len(files) == 1, files
        events = accumulator(files[0].parent).Scalars("eval/avg_jct_h")
        assert [e.step for e in events] == [0, 128, 256]
    assert len(compared["events_after_first"]) == len(POLICIES)
    assert compared["second"].stdout == compared["first"].stdout


def test_two_held_out_sets_of_one_env_get_their_own_heuristic_runs(
    tiny: TinyRun, compared: dict[str, Any]
) -> None:
    proc, two = compared["two_sets"], compared["two"]
    assert proc.returncode == 0, proc.stderr
    assert _runs(two) == [
        "a",
        "b",
        "heuristics/geopipe-s1000000x2/fcfs",
        "heuristics/geopipe-s1000002x2/fcfs",
    ]
    cfg = tiny.config
    for folder, seeds in (
        ("geopipe-s1000000x2", cfg["eval_seeds"]),
        ("geopipe-s1000002x2", OTHER_SEEDS),
    ):
        want = _heuristic_means("fcfs", cfg["env_id"], cfg["env_kwargs"], seeds)
        acc = accumulator(two / "heuristics" / folder / "fcfs")
        assert {e.value for e in acc.Scalars("eval/avg_jct_h")} == {f32(want["avg_jct_h"])}


def test_env_id_without_runs_evaluates_at_step_0(compared: dict[str, Any]) -> None:
    proc = compared["env_id"]
    assert proc.returncode == 0, proc.stderr
    run_dir = compared["fig1"] / "heuristics" / "geopipe-fig1" / "fcfs"
    want = _heuristic_means("fcfs", FIG1_ID, {}, list(range(1_000_000, 1_000_010)))
    acc = accumulator(run_dir)
    for key, value in want.items():
        if np.isnan(value):  # an environment without carbon figures logs no carbon
            assert f"eval/{key}" not in acc.Tags()["scalars"]
            continue
        assert [(e.step, e.value) for e in acc.Scalars(f"eval/{key}")] == [(0, f32(value))]
    with open(compared["fig1"] / "comparison.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert [r["policy"] for r in rows] == ["fcfs"] and rows[0]["n_eval"] == "10"


def test_no_runs_and_no_env_id_exit_2_in_one_line(compared: dict[str, Any]) -> None:
    line = one_line_error(compared["no_runs"])
    assert str(compared["empty"]) in line and "--env-id" in line, line
    assert list(compared["empty"].iterdir()) == []


def test_unknown_heuristic_exits_2_in_one_line(compared: dict[str, Any]) -> None:
    line = one_line_error(compared["bad_policy"])
    assert "'nope'" in line and "bace-pipe" in line, line


def test_a_preemptive_heuristic_plays_its_rule_on_the_preempt_id(tmp_path: Path) -> None:
    """On an id with preempt actions the heuristic plays its rule itself (the env refuses a
    rule in its simulator there): the row is the simulator's run of the policy."""
    from bacepipe_env.policies.registry import make_policy
    from bacepipe_env.train.compare import compare

    env_id = "bacepipe_env/GeoPipe-Online-Preempt-v1"
    (row,) = compare(tmp_path, ["sjf+finish-aware+srtf"], env_id, [1_000_000])
    env = gym.make(env_id)
    env.reset(seed=1_000_000)
    direct = make_policy("sjf+finish-aware+srtf").simulate(env.unwrapped.scenario)
    assert direct.n_preemptions > 0
    assert row["avg_jct_h"] == pytest.approx(direct.avg_jct / 3600, rel=1e-12)


def _csv_rows(logdir: Path) -> list[dict[str, str]]:
    with open(logdir / "comparison.csv", newline="") as fh:
        return list(csv.DictReader(fh))


def test_by_default_every_heuristic_of_the_env_is_drawn(
    tiny: TinyRun, compared: dict[str, Any]
) -> None:
    """Without --policies the heuristics are env_heuristics(env_id), the waiting ones
    included (the list bacepipe headroom takes the best heuristic from)."""
    from bacepipe_env.experiments.headroom import env_heuristics
    from bacepipe_env.experiments.tensorboard import run_component

    proc = compared["by_default"]
    assert proc.returncode == 0, proc.stderr
    want = env_heuristics(tiny.config["env_id"])
    assert "sjf+finish-aware" in want  # a waiting heuristic, left out before
    rows = _csv_rows(compared["default"])
    assert [r["policy"] for r in rows] == [*want, "learned:tiny"]
    assert _runs(compared["default"]) == sorted(
        ["tiny", *(f"heuristics/geopipe/{run_component(p)}" for p in want)]
    )


def _standing(rows: list[dict[str, str]], which: str) -> str:
    """The last line train.compare should print, recomputed from comparison.csv."""
    heuristics = [r for r in rows if not r["policy"].startswith("learned:")]
    best = min(heuristics, key=lambda r: float(r["avg_jct_h"]))
    (learned,) = [r for r in rows if r["policy"] == "learned:tiny"]
    jct, ref = float(learned["avg_jct_h"]), float(best["avg_jct_h"])
    return f"learned tiny: {jct:.2f} h, {jct / ref:.3f}x {best['policy']} ({which}, {ref:.2f} h)"


def test_summary_ends_with_the_learned_run_against_the_best_heuristic(
    compared: dict[str, Any],
) -> None:
    out = compared["by_default"].stdout.rstrip("\n").splitlines()
    want = _standing(_csv_rows(compared["default"]), "the best heuristic here")
    assert out[-1] == want, out[-3:]
    # --policies that leave some of the env's heuristics out: the line says so
    first = compared["first"].stdout.rstrip("\n").splitlines()
    assert first[-1] == _standing(
        _csv_rows(compared["logdir"]), "the best of the 2 heuristics given"
    ), first[-3:]


def test_best_heuristics_follow_the_learned_run_in_tensorboards_run_list(
    compared: dict[str, Any], tensorboard_plugin: Any
) -> None:
    """TensorBoard lists runs by start time and colours each by its place in the list,
    cycling through 7 colours: the heuristic runs are written best first, so the learned
    run and the six best heuristics get seven different colours."""
    logdir: Path = compared["default"]
    runs = tensorboard_plugin(logdir, "core", "/data/runs").get("/").get_json()
    jct = {r["policy"]: float(r["avg_jct_h"]) for r in _csv_rows(logdir)}
    assert runs[0] == "tiny", runs
    heuristic_jct = [jct[next(p for p in jct if run.endswith("/" + p))] for run in runs[1:]]
    assert heuristic_jct == sorted(heuristic_jct), runs
    best = min((p for p in jct if not p.startswith("learned:")), key=jct.__getitem__)
    assert runs[1] == f"heuristics/geopipe/{best}", runs


@pytest.mark.parametrize("folder", ["default", "fig1"])
def test_total_cost_is_a_shown_hparams_column(
    compared: dict[str, Any], tensorboard_plugin: Any, folder: str
) -> None:
    """The HParams tab ticks the first five metric columns of the experiment TensorBoard
    serves: with a learned run (whose SB3 session declares the eval metrics) and without
    (--env-id: the metrics are the heuristics' scalar tags), the total cost is among them."""
    client = tensorboard_plugin(compared[folder], "hparams", "/experiment")
    resp = client.post(
        "/", data=json.dumps({"experimentName": ""}), content_type="application/json"
    )
    assert resp.status_code == 200, resp.get_data(as_text=True)
    metrics = [m["name"]["tag"] for m in resp.get_json()["metricInfos"]]
    assert "eval/total_cost_usd" in metrics[:5], metrics
    assert "eval/avg_jct_h" in metrics[:5], metrics


def test_the_best_heuristic_line_is_drawn_at_its_value(compared: dict[str, Any]) -> None:
    """The env's best heuristic is a line of the JCT chart, at the learned run's steps, with
    the mean the table prints (what keeps a learned run that only matches it in the chart's
    y-range, TensorBoard drawing the 5%-95% range of all points by default)."""
    logdir: Path = compared["default"]
    rows = _csv_rows(logdir)
    best = min(
        (r for r in rows if r["policy"] != "learned:tiny"), key=lambda r: float(r["avg_jct_h"])
    )
    events = accumulator(logdir / HEURISTICS / best["policy"]).Scalars("eval/avg_jct_h")
    assert [e.step for e in events] == [0, 128, 256]
    assert {e.value for e in events} == {f32(float(best["avg_jct_h"]))}
