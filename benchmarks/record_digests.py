"""Digests of every record of BACE-Pipe on a fixed set of scenarios: the reference that keeps
speed work on the simulator honest (issue 14: "records must stay bit-identical").

    python benchmarks/record_digests.py > tests/core/data/record_digests.json

was run at commit 6c6cd82, before the simulator's fast paths (the last three scenarios at
df3ba3f, before issue 26's restructuring); ``tests/core/test_record_digests.py`` recomputes
the digests with the current code and compares. A digest is the SHA-256 of every field of
every record, floats written exactly (``float.hex``), so one changed bit in one record
changes it.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Callable
from typing import Any

from bacepipe_env import bace_pipe, load_scenario, synthetic_scenario
from bacepipe_env.core.scenario import Scenario
from bacepipe_env.policies.registry import make_policy
from bacepipe_env.scenarios.loader import load_scenario_spec

#: name -> (scenario, policy name): the paper's world, a long batch queue, heavy online
#: queues, hourly prices with egress, faults (restarted jobs rejoin the queue) and K = 64.
SCENARIOS: dict[str, tuple[Callable[[], Scenario], str]] = {
    "paper-0": (lambda: load_scenario("paper", seed=0), "bace-pipe"),
    "paper-3-ignore-memory": (
        lambda: load_scenario("paper", seed=3, ignore_memory=True),
        "bace-pipe",
    ),
    "paper-aws-40-outage": (
        lambda: load_scenario("paper-aws", seed=0, n_jobs=40, outages=[("EU-West", 2.0, 30.0)]),
        "bace-pipe",
    ),
    "online-2-150": (lambda: load_scenario("online", seed=2, n_jobs=150), "bace-pipe"),
    "online-1-100-hourly-egress": (
        lambda: load_scenario(
            "online", seed=1, n_jobs=100, prices="hourly", egress_usd_per_gb=0.02
        ),
        "bace-pipe",
    ),
    "online-0-80-failures": (
        lambda: load_scenario("online", seed=0, n_jobs=80, gpu_failure_rate=2e-3),
        "bace-pipe",
    ),
    "online-0-100-finish-aware": (
        lambda: load_scenario("online", seed=0, n_jobs=100, admission="finish-aware"),
        "bace-pipe",
    ),
    "synthetic-32-600-batch": (lambda: synthetic_scenario(32, 600, seed=0), "bace-pipe"),
    "synthetic-64-1500-4ph": (
        lambda: synthetic_scenario(64, 1500, seed=1, arrival_rate_per_h=4.0),
        "bace-pipe",
    ),
    "synthetic-64-1500-4ph-fcfs": (
        lambda: synthetic_scenario(64, 1500, seed=1, arrival_rate_per_h=4.0),
        "fcfs",
    ),
    "online-2-150-lcf": (lambda: load_scenario("online", seed=2, n_jobs=150), "lcf"),
    # Added at df3ba3f, before the typed World and the fault events (issue 26): preemption,
    # the announced calendar, link and price events, and a random start hour.
    "online-3-120-srtf": (
        lambda: load_scenario("online", seed=3, n_jobs=120, preemption="srtf"),
        "bace-pipe",
    ),
    "online-4-100-announced": (
        lambda: load_scenario("online", seed=4, n_jobs=100, announce_h=24.0),
        "bace-pipe",
    ),
    "online-5-80-events": (
        lambda: load_scenario(
            {
                **load_scenario_spec("online"),
                "events": [
                    {
                        "type": "price",
                        "region": "US-East-2",
                        "factor": 3.0,
                        "start_h": 1.0,
                        "end_h": 40.0,
                    },
                    {
                        "type": "price",
                        "region": "US-East-2",
                        "factor": 0.5,
                        "start_h": 20.0,
                        "end_h": 60.0,
                    },
                    {"type": "outage", "region": "EU-West", "start_h": 10.0, "end_h": 25.0},
                ],
            },
            seed=5,
            n_jobs=80,
            prices="hourly",
            start_hour="random",
            link_changes=[("US-East-2", "EU-West", 0.25, 2.0, 30.0)],
            gpu_failure_rate=5e-4,
            preemption="las",
        ),
        "bace-pipe",
    ),
}


def _exact(value: Any) -> Any:
    if isinstance(value, float):
        return value.hex()
    if isinstance(value, (list, tuple)):
        return [_exact(v) for v in value]
    if isinstance(value, dict):
        # a placement's data-parallel copies (semantics §3e), a field the reference predates:
        # a job of one pipeline has none, and its digest is the reference's; an attempt's
        # link bookings (issue 44) restate its placement's b(L), which the digest covers; a
        # job's deadline fields (issue 45) are left out when it has none
        undue = value.get("deadline", 0) is None
        return {
            k: _exact(v)
            for k, v in sorted(value.items())
            if not (k == "replicas" and not v)
            and k != "bookings"
            and not (undue and k in ("deadline", "tardiness", "missed"))
        }
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return _exact(dataclasses.asdict(value))
    return repr(value)


def digest(name: str) -> str:
    """The SHA-256 of every record of ``name``'s run (and its decision count)."""
    make, policy_name = SCENARIOS[name]
    policy = bace_pipe() if policy_name == "bace-pipe" else make_policy(policy_name)
    result = policy.simulate(make())
    payload = [_exact(r) for r in result.records] + [result.n_decisions]
    return hashlib.sha256(json.dumps(payload).encode()).hexdigest()


def main() -> None:
    """Print every digest as JSON."""
    print(json.dumps({name: digest(name) for name in SCENARIOS}, indent=1))


if __name__ == "__main__":
    main()
