"""Where an imitation student and its teacher part: the decisions of docs/learned.md.

    python benchmarks/imitation_gap.py    # the first announced student, its 10 held-out episodes

The teacher (the run's ``--teacher``) plays the run's held-out episodes (reset seeds
``eval_seed ...``, never trained on) in the run's env, and labels every state, as ``train
imitate`` measures agreement. At each state the student's most likely legal action is set
beside the teacher's, both classed as *start a job*, *wait* or *preempt*. The script prints
the counts and the first decisions where the teacher waits and the student starts a job: the
time, the free GPUs, the job the student starts and the next announced jobs.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

RUN = ROOT / "benchmarks" / "results" / "learned" / "geopipe-online-announced" / "imitate-0"


def _kind(action: int, wait: int) -> str:
    """The class of an action of a window of ``wait`` slots: the wait action follows the
    slots, the preempt actions follow the wait."""
    return "start" if action < wait else ("wait" if action == wait else "preempt")


def compare(run: Path, examples: int) -> tuple[Counter[str], list[str]]:
    """The (teacher, student) counts over the held-out states, and up to ``examples`` lines
    describing the decisions where the teacher waits and the student starts a job."""
    import gymnasium as gym
    from sb3_contrib import MaskablePPO

    import bacepipe_env  # noqa: F401  (registers the ids)
    from bacepipe_env.core.units import SECONDS_PER_HOUR
    from bacepipe_env.envs.agents import make_agent

    config = json.loads((run / "config.json").read_text())
    settings = config["imitate"]
    env = gym.make(config["env_id"], **{**config["env_kwargs"], "observation": "dict"})
    model = MaskablePPO.load(run / "model.zip", device="cpu")
    teacher: Any = make_agent(settings["teacher"], settings["seed"])
    teacher.bind(env)
    base: Any = env.unwrapped
    wait = base.max_queue
    counts: Counter[str] = Counter()
    lines: list[str] = []
    first = settings["eval_seed"]
    for seed in range(first, first + settings["held_out"]):
        teacher.reset(seed)
        obs, _ = env.reset(seed=seed)
        done = False
        while not done:
            mask = np.asarray(base.action_masks(), dtype=bool)
            label = int(np.asarray(teacher.predict(obs)[0]))
            chosen = int(model.predict(obs, action_masks=mask, deterministic=True)[0])
            t, s = _kind(label, wait), _kind(chosen, wait)
            same = " (same job)" if t == s == "start" and label == chosen else ""
            other = " (another job)" if t == s == "start" and label != chosen else ""
            counts[f"teacher {t} / student {s}{same}{other}"] += 1
            if t == "wait" and s == "start" and len(lines) < examples:
                sim, snap = base.sim, base.queue_snapshot
                now = sim.time / SECONDS_PER_HOUR
                jobs = {j.job_id: j for j in sim.scenario.jobs}
                job = snap.job_ids[chosen]
                ahead = [
                    f"job {k} ({jobs[k].model.name}) in "
                    f"{jobs[k].submit_time / SECONDS_PER_HOUR - now:.2f} h"
                    for k in sim.announced()[:2]
                ]
                lines.append(
                    f"seed {seed:,} at {now:.2f} h: {len(snap)} pending, "
                    f"{sum(sim.free_gpus)} GPUs free; the teacher waits, the student starts "
                    f"job {job} ({jobs[job].model.name}, "
                    f"{snap.single_gpu_exec[chosen] / SECONDS_PER_HOUR:.0f} single-GPU hours); "
                    f"announced: {', '.join(ahead) or 'none'}"
                )
            obs, _, terminated, truncated, _ = env.step(label)  # the teacher's episode
            done = terminated or truncated
    env.close()
    return counts, lines


def main() -> None:
    """Command-line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--run", type=Path, default=RUN, help="an imitation run's folder")
    parser.add_argument("--examples", type=int, default=2, help="decisions to describe")
    args = parser.parse_args()
    counts, lines = compare(args.run, args.examples)
    total = sum(counts.values())
    name = args.run.relative_to(ROOT) if args.run.is_relative_to(ROOT) else args.run
    print(f"{name}: {total:,} held-out states")
    for key, n in counts.most_common():
        print(f"  {key}: {n} ({n / total:.3f})")
    for line in lines:
        print(line)


if __name__ == "__main__":
    main()
