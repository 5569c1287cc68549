"""The package imports and runs where the Unix-only pieces are missing (issue 37): without the
``resource`` module (Windows), ``fcntl`` (Windows) or ``/proc`` (macOS, Windows), and without
SIGHUP and SIGKILL (Windows). Each system is imitated in a fresh interpreter that blocks the
module, hides the folder or deletes the signal before ``bacepipe_env`` is imported; each
guarded function's fallback is tested here in-process too."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
import types
from pathlib import Path

import pytest

from bacepipe_env import signals
from bacepipe_env.core import limits

#: Run in a fresh interpreter: argv[1] is a JSON object of ``block`` (modules that fail to
#: import), ``missing`` (a folder that does not exist, where /proc is looked for),
#: ``no_signals`` (signal names to delete) and ``steps`` (what to run).
_SCRIPT = textwrap.dedent(
    """
    import builtins, json, os, signal, sys

    cfg = json.loads(sys.argv[1])
    for name in cfg["block"]:
        sys.modules[name] = None  # "import name" raises ModuleNotFoundError from now on
    for name in cfg["no_signals"]:
        delattr(signal, name)

    def _hide_proc(func):
        def hidden(path, *args, **kwargs):
            if isinstance(path, (str, bytes, os.PathLike)):
                p = os.fsdecode(path)
                if p == "/proc" or p.startswith("/proc/"):
                    raise FileNotFoundError(2, "No such file or directory", p)
            return func(path, *args, **kwargs)
        return hidden

    if cfg["missing"]:  # no /proc, as on macOS, whoever asks for it
        builtins.open = _hide_proc(builtins.open)
        for name in ("open", "scandir", "listdir", "stat"):
            setattr(os, name, _hide_proc(getattr(os, name)))

    import bacepipe_env
    import bacepipe_env.core
    from bacepipe_env import signals
    from bacepipe_env.core import limits

    if cfg["missing"]:
        limits._PROC = signals._PROC = cfg["missing"]
    for name in cfg["block"]:
        assert sys.modules[name] is None, name  # nothing imported it behind the block
    steps = cfg["steps"]
    if "memory" in steps:
        if "resource" in cfg["block"]:
            assert limits._address_space_left() is None
        if cfg["missing"]:
            assert limits._meminfo_available() is None
        free = limits.available_memory()
        assert free is None or free > 0, free
        limits.check_memory(100, 6)
    if "api" in steps:
        scenario = bacepipe_env.load_scenario("fig1", seed=0)
        result = bacepipe_env.bace_pipe().simulate(scenario)
        assert result.avg_jct > 0, result.avg_jct
    if "cli" in steps:
        from bacepipe_env.cli import main

        assert main(["simulate", "--scenario", "fig1"]) == 0
        if "fcntl" in cfg["block"]:  # an --out run, with the folder lock off
            assert main(["validation", "--out", "out"]) == 0
            assert main(["validation", "--out", "out"]) == 0
            assert sorted(os.listdir("out")) == [
                "validation.csv", "validation.manifest.json", "validation.md"
            ]
    if "processes" in steps:
        assert isinstance(signals.descendants(), set)
        assert signals._running(os.getpid())
        with signals.handle_signals():
            pass
        signals.worker_init()
    if "stop" in steps:
        import subprocess, time

        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
        assert child.pid in signals.descendants()
        signals.stop_pids([child.pid], grace_s=0.0)
        assert child.wait(timeout=10) != 0
        try:
            with signals.handle_signals():
                os.kill(os.getpid(), signal.SIGTERM)
                time.sleep(5)
        except signals.Terminated as stop:
            assert signals.exit_status(stop) == 128 + signal.SIGTERM
        else:
            raise AssertionError("SIGTERM did not stop the block")
    print("portable: ok")
    """
)


def _run(
    tmp_path: Path,
    steps: list[str],
    block: tuple[str, ...] = ("resource",),
    missing_proc: bool = True,
    no_signals: tuple[str, ...] = (),
) -> subprocess.CompletedProcess[str]:
    cfg = {
        "block": list(block),
        "missing": str(tmp_path / "no-proc") if missing_proc else "",
        "no_signals": list(no_signals),
        "steps": steps,
    }
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    return subprocess.run(
        [sys.executable, "-c", _SCRIPT, json.dumps(cfg)],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        cwd=tmp_path,
    )


def _ok(proc: subprocess.CompletedProcess[str]) -> None:
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.strip().splitlines()[-1] == "portable: ok", proc.stdout[-1000:]


# ------------------------------------------------------------------ a fresh interpreter


def test_without_resource_and_proc_the_package_imports_and_simulates(tmp_path: Path) -> None:
    """macOS-like and Windows-like at once: no ``resource`` module, no ``/proc``; the Python
    API and ``bacepipe simulate --scenario fig1`` both run."""
    _ok(_run(tmp_path, ["memory", "api", "cli", "processes", "stop"]))


def test_without_fcntl_the_core_imports_and_simulates(tmp_path: Path) -> None:
    """``import bacepipe_env`` and its core never need ``fcntl`` (only the output files do)."""
    _ok(_run(tmp_path, ["memory", "api"], block=("resource", "fcntl")))


def test_without_fcntl_the_command_line_simulates_and_writes_an_out_folder(
    tmp_path: Path,
) -> None:
    """The folder lock is off there, which the first run says once."""
    proc = _run(tmp_path, ["memory", "api", "cli"], block=("resource", "fcntl"))
    _ok(proc)
    warned = [line for line in proc.stderr.splitlines() if "no fcntl" in line]
    assert len(warned) == 1 and warned[0].startswith("bacepipe: warning:"), proc.stderr


def test_without_sighup_and_sigkill_signals_still_stop_a_run(tmp_path: Path) -> None:
    """Windows has neither: handle_signals takes SIGTERM alone, stop_pids kills with SIGTERM."""
    _ok(_run(tmp_path, ["processes", "stop"], block=(), no_signals=("SIGHUP", "SIGKILL")))


# ------------------------------------------------------------------ limits' fallbacks


def _fake_resource(soft: int) -> types.ModuleType:
    """A ``resource`` module whose address-space limit is ``soft`` bytes."""
    fake = types.ModuleType("resource")
    fake.RLIMIT_AS = 9  # type: ignore[attr-defined]
    fake.RLIM_INFINITY = -1  # type: ignore[attr-defined]
    fake.getrlimit = lambda which: (soft, soft)  # type: ignore[attr-defined]
    return fake


def test_without_proc_meminfo_is_unknown(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(limits, "_PROC", str(tmp_path / "missing"))
    assert limits._meminfo_available() is None


def test_without_resource_there_is_no_address_space_limit(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "resource", None)
    assert limits._address_space_left() is None


def test_an_address_space_limit_counts_where_it_is_enforced(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Linux subtracts what is mapped (``/proc/self/status``); without ``/proc`` the whole
    limit is left (an upper bound: never a refusal the machine would not make); macOS, where
    the kernel accepts ``ulimit -v`` but never enforces it, ignores the limit."""
    monkeypatch.setitem(sys.modules, "resource", _fake_resource(10**12))
    monkeypatch.setattr(sys, "platform", "linux")
    if Path("/proc/self/status").exists():
        assert 0 < limits._address_space_left() < 10**12  # type: ignore[operator]
    monkeypatch.setattr(limits, "_PROC", str(tmp_path / "missing"))
    assert limits._address_space_left() == 10**12
    monkeypatch.setattr(sys, "platform", "darwin")
    assert limits._address_space_left() is None


def test_without_free_pages_physical_memory_is_the_ceiling(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """macOS's ``os.sysconf`` knows no ``SC_AVPHYS_PAGES``; Windows has no ``os.sysconf``."""
    if not hasattr(os, "sysconf"):
        pytest.skip("no os.sysconf here")
    real = os.sysconf

    def macos(name: str) -> int:
        if name == "SC_AVPHYS_PAGES":
            raise ValueError("unrecognized configuration name")
        return real(name)

    monkeypatch.setattr(os, "sysconf", macos)
    assert limits._sysconf_available() == real("SC_PHYS_PAGES") * real("SC_PAGE_SIZE")
    monkeypatch.delattr(os, "sysconf")
    assert limits._sysconf_available() is None


def test_with_no_source_at_all_the_memory_check_is_off(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Windows: no /proc, no ``os.sysconf``, no ``resource``: no figure, no refusal."""
    monkeypatch.setattr(limits, "_PROC", str(tmp_path / "missing"))
    monkeypatch.setitem(sys.modules, "resource", None)
    if hasattr(os, "sysconf"):
        monkeypatch.delattr(os, "sysconf")
    assert limits.available_memory() is None
    limits.check_memory(limits.MAX_JOBS, 1_000)


# ------------------------------------------------------------------ signals' fallbacks


def _sleeper(*, ignore_term: bool = False) -> subprocess.Popen[str]:
    code = "import signal, sys, time\n"
    if ignore_term:
        code += "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
    code += "print('ready', flush=True)\ntime.sleep(60)\n"
    child = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    assert child.stdout is not None and child.stdout.readline().strip() == "ready"
    return child


def test_without_proc_descendants_come_from_ps(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """macOS: ``ps`` lists the process table (and leaves itself out); without ``ps`` either
    (Windows) no descendant is found, and nothing raises."""
    monkeypatch.setattr(signals, "_PROC", str(tmp_path / "missing"))
    assert signals._parents_from_proc() is None
    child = _sleeper()
    try:
        if os.name == "posix" and signals._parents_from_ps() is not None:
            assert child.pid in signals.descendants()
        monkeypatch.setenv("PATH", str(tmp_path))  # no ps on it
        assert signals._parents_from_ps() is None
        assert signals.descendants() == set()
    finally:
        child.kill()
        child.wait()


def test_without_proc_a_process_that_ignores_sigterm_is_still_killed(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Before, ``_running`` read only ``/proc``: on macOS every process looked ended at once,
    so stop_pids never sent SIGKILL. Now ``os.kill(pid, 0)`` tells (a zombie counts as alive,
    so the wait runs to its deadline: about ``grace_s + GRACE_S``)."""
    if os.name != "posix":
        pytest.skip("POSIX signals")
    monkeypatch.setattr(signals, "_PROC", str(tmp_path / "missing"))
    child = _sleeper(ignore_term=True)
    try:
        assert signals._running(child.pid)
        start = time.monotonic()
        signals.stop_pids([child.pid], grace_s=0.2)
        assert child.wait(timeout=5) == -signal.SIGKILL
        assert time.monotonic() - start < 0.2 + 2 * signals.GRACE_S + 1.0
        assert not signals._running(child.pid)  # collected: no such process
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()


def test_on_windows_a_stopped_process_is_not_waited_for(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """There ``os.kill`` ends a process at once, and ``os.kill(pid, 0)`` would send Ctrl-C."""
    monkeypatch.setattr(signals, "_PROC", str(tmp_path / "missing"))
    with monkeypatch.context() as m:
        m.setattr(os, "name", "nt")
        running = signals._running(os.getpid())
        parents = signals._parents_from_ps()
    assert running is False and parents is None
