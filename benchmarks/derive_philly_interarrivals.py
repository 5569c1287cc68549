"""Derive ``bacepipe_env/data/philly-interarrivals.csv`` from the Philly job trace.

The input is the 82,247-job table of Microsoft's Philly GPU cluster trace as shipped by
petuum/adaptdl (``simulator/traces/philly.csv``, derived from msr-fiddle/philly-traces,
CC-BY-4.0), with columns ``timestamp,duration,num_gpus,gpu_time,cluster``. The script sorts
the submission timestamps of all jobs and writes the successive gaps in whole seconds, one per
line, under a ``#`` header that cites the source and states the trace's mean arrival rate and
inter-arrival coefficient of variation. The output depends on the input only (timestamps are
read as naive wall-clock seconds, with no time zone or daylight-saving shift), so running it
again regenerates the shipped file byte for byte.

Run: ``python benchmarks/derive_philly_interarrivals.py PATH/TO/philly-jobs.csv [--out FILE]``.
"""

from __future__ import annotations

import argparse
import csv
import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
DEFAULT_OUT = REPO / "bacepipe_env" / "data" / "philly-interarrivals.csv"


def derive(jobs_csv: Path) -> str:
    """Return the text of the derived inter-arrival table for the trace at ``jobs_csv``."""
    with jobs_csv.open(newline="", encoding="utf-8") as fh:
        stamps = [row["timestamp"].strip().replace(" ", "T") for row in csv.DictReader(fh)]
    if len(stamps) < 3:
        raise SystemExit(f"{jobs_csv}: need at least 3 jobs, found {len(stamps)}")
    seconds = np.sort(np.array(stamps, dtype="datetime64[s]").astype(np.int64))
    gaps = np.diff(seconds)
    n_jobs, n_gaps = len(seconds), len(gaps)
    rate_per_h = n_gaps / float(gaps.sum()) * 3600.0
    cv = float(gaps.std() / gaps.mean())
    first = np.datetime_as_string(seconds[0].astype("datetime64[s]"), unit="s")
    last = np.datetime_as_string(seconds[-1].astype("datetime64[s]"), unit="s")
    header = [
        "# Job inter-arrival gaps of Microsoft's Philly GPU cluster trace, in seconds.",
        "# Source: petuum/adaptdl, simulator/traces/philly.csv (itself derived from",
        "#   msr-fiddle/philly-traces).",
        "# Licence: CC-BY-4.0 (Philly trace, Microsoft); this table is a derived work.",
        f"# Derived: the submission timestamps of all {n_jobs:,} jobs, {first} to",
        f"#   {last} (trace wall clock), sorted; each line is the gap in whole seconds",
        "#   to the next submission (0 = the same second, the trace's bursts).",
        "#   Regenerate with benchmarks/derive_philly_interarrivals.py.",
        f"# n_jobs: {n_jobs}",
        f"# n_gaps: {n_gaps}",
        f"# mean_rate_per_h: {rate_per_h:.4f}",
        f"# interarrival_cv: {cv:.4f}",
        "gap_s",
    ]
    return "\n".join([*header, *(str(int(g)) for g in gaps)]) + "\n"


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point: derive the table and write it to ``--out``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("jobs_csv", type=Path, help="path of philly-jobs.csv")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="file to write")
    args = parser.parse_args(argv)
    text = derive(args.jobs_csv)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with args.out.open("w", encoding="utf-8", newline="\n") as fh:
        fh.write(text)
    n_gaps = sum(1 for line in text.splitlines() if line[:1].isdigit())
    print(f"wrote {args.out} ({n_gaps} gaps)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
