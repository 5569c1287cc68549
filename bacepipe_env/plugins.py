"""Plugins: policies, placements, admission rules and environment ids from other packages.

A plugin is a module that registers what it adds when it is imported
(:func:`~bacepipe_env.policies.registry.register_policy`, Gymnasium's ``register`` with
``GeoPipeEnv`` as the entry point, ...). It reaches the package in two ways:

- installed: an entry point of the group ``bacepipe_env.plugins`` in the plugin package's
  metadata, e.g. in its ``pyproject.toml``::

      [project.entry-points."bacepipe_env.plugins"]
      ljf = "my_plugin"

  (a ``module:function`` value is called once loaded);
- named: ``bacepipe --plugin MODULE`` on any command, or the ``BACEPIPE_PLUGINS``
  environment variable (comma-separated modules), which the command sets for its own worker
  processes.

They are loaded once, on the first lookup of a name the package does not know (a policy, an
environment id), so a worker process started afresh finds them too. An installed plugin that
fails to import is skipped with one warning line; a named one is a one-line error.

A plugin adds names, it never replaces the package's: registering a built-in's name (a policy,
``rollout:<base>``, an ordering, placement, admission or preemption rule, an environment id)
or a name the command line cannot select (one with ``,``, ``:``, ``=`` or whitespace, or the
policy names ``all`` and ``pretrained``) fails the plugin the same way, the built-in put back
(:func:`~bacepipe_env.policies.registry.check_plugin_names`). So does a plugin that calls
``sys.exit`` or raises ``KeyboardInterrupt`` (or any other BaseException) while it loads: a
Ctrl-C that really arrives then still stops the command.
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import os
import signal
import sys
import threading
import warnings
from collections.abc import Callable, Iterator, Sequence
from importlib.metadata import EntryPoint, distributions
from types import FrameType, ModuleType
from typing import Any, cast

from .errors import BacepipeError, ValidationError, shorten

__all__ = [
    "ENTRY_POINTS",
    "ENV_VAR",
    "after_each_plugin",
    "entry_points",
    "load_plugins",
    "plugin_modules",
]

#: The entry-point group of installed plugins.
ENTRY_POINTS = "bacepipe_env.plugins"
#: Modules to import as plugins, comma-separated (``--plugin`` adds to it).
ENV_VAR = "BACEPIPE_PLUGINS"

_imported: set[str] = set()
#: What runs after each plugin loads (:func:`after_each_plugin`): each raises a ValidationError
#: line when the plugin broke the naming rule, having undone what it broke.
_CHECKS: list[Callable[[], None]] = []
_discovered = False


def entry_points(group: str) -> list[EntryPoint]:
    """The group's entry points of every distribution on sys.path, by name.

    Unlike ``importlib.metadata.entry_points``, this does not keep only the first
    distribution of a name: a stale ``bacepipe_env.egg-info`` left in a checkout (which
    ``python -m`` from there finds first) must not hide the installed package's entries."""
    found: dict[tuple[str, str], EntryPoint] = {}
    for dist in distributions():
        for ep in dist.entry_points:
            if ep.group == group:
                found.setdefault((ep.name, ep.value), ep)
    return sorted(found.values(), key=lambda ep: ep.name)


def after_each_plugin(check: Callable[[], None]) -> None:
    """Run ``check`` after every plugin loads from now on (once per function): the tables
    plugins may add to register their own checks, so that this module imports none of them
    (``policies.registry``'s :func:`~bacepipe_env.policies.registry.check_plugin_names`,
    ``envs.registration``'s :func:`~bacepipe_env.envs.registration.check_env_ids`)."""
    if check not in _CHECKS:
        _CHECKS.append(check)


def plugin_modules() -> list[str]:
    """The modules named by :data:`ENV_VAR`, in order."""
    return [m.strip() for m in os.environ.get(ENV_VAR, "").split(",") if m.strip()]


def load_plugins(modules: Sequence[str] = ()) -> bool:
    """Import ``modules`` and those of :data:`ENV_VAR` (each once; one that cannot be
    imported, or that breaks the naming rule, is a one-line BacepipeError naming it), then, the
    first time, every installed plugin of :data:`ENTRY_POINTS` (one that fails is skipped with
    one warning line). True when anything new was loaded."""
    global _discovered
    new = False
    for name in [*plugin_modules(), *modules]:
        if name in _imported:
            continue
        failed = _run_plugin(functools.partial(importlib.import_module, name))
        if failed is not None:
            raise BacepipeError(f"plugin {shorten(name, 60)}: {failed}")
        _imported.add(name)
        new = True
    if not _discovered:
        _discovered = True
        for ep in entry_points(ENTRY_POINTS):
            failed = _run_plugin(functools.partial(_load_entry_point, ep))
            if failed is not None:
                failed = failed.removeprefix("cannot import it: ")
                where = shorten(f"{ep.name} ({ep.value})", 60)
                print(f"bacepipe: warning: plugin {where} skipped: {failed}", file=sys.stderr)
                continue
            new = True
    return new


def _load_entry_point(ep: EntryPoint) -> None:
    loaded = ep.load()
    if callable(loaded) and not isinstance(loaded, ModuleType):
        loaded()


def _run_plugin(load: Callable[[], object]) -> str | None:
    """Run ``load`` (a plugin's import) and check what it registered; None when all is well,
    else the one-line reason: ``cannot import it: ...`` for an error, SystemExit or
    KeyboardInterrupt it raised, the package's own line for a name it may not register."""
    with _quiet_overrides(), _noting_sigint() as interrupted:
        try:
            load()
        except BacepipeError as err:  # register_policy's refusal: the name and the reason
            return _first_line(err)
        except Exception as err:
            return f"cannot import it: {_first_line(err)}"
        except SystemExit as err:
            code = "" if err.code is None else repr(err.code)
            return f"cannot import it: it called sys.exit({code})"
        except KeyboardInterrupt as err:
            from .signals import Terminated

            if interrupted or isinstance(err, Terminated):
                raise  # a real Ctrl-C, SIGTERM or SIGHUP: the command stops as it always does
            return "cannot import it: it raised KeyboardInterrupt"
        except BaseException as err:  # GeneratorExit, a BaseException of its own, ...
            return f"cannot import it: it raised {_first_line(err, named=True)}"
    try:
        for check in _CHECKS:
            check()
    except ValidationError as err:
        return _first_line(err)
    return None


def _first_line(err: BaseException, named: bool = False) -> str:
    """The first line of ``err``'s message, or its type's name when it has none
    (``named``: ``Type: message``), cut to fit a line."""
    text = str(err).strip()
    first = text.splitlines()[0] if text else ""
    if named or not first:
        first = f"{type(err).__name__}: {first}" if first else type(err).__name__
    return shorten(first, 130)


@contextlib.contextmanager
def _quiet_overrides() -> Iterator[None]:
    """Without Gymnasium's warning about one of this package's ids registered again, while a
    plugin loads: the check after it reports that, in one line. The warning filters the plugin
    sets itself stay (``warnings.catch_warnings`` would drop them)."""
    warnings.filterwarnings("ignore", message=r".*Overriding environment bacepipe_env/")
    mine = warnings.filters[0]
    try:
        yield
    finally:
        with contextlib.suppress(ValueError):
            cast("list[Any]", warnings.filters).remove(mine)  # a list, typed as a Sequence


@contextlib.contextmanager
def _noting_sigint() -> Iterator[list[int]]:
    """A list that holds SIGINT once one arrived in the block: a KeyboardInterrupt the
    user's Ctrl-C raised, not one a plugin raises itself (the handler in place is kept; only
    in the main thread, where handlers run, and under a handler that raises)."""
    got: list[int] = []
    previous = signal.getsignal(signal.SIGINT)
    if threading.current_thread() is not threading.main_thread() or not callable(previous):
        yield got
        return
    handler: Callable[[int, FrameType | None], object] = previous

    def note(signum: int, frame: FrameType | None) -> None:
        got.append(signum)
        handler(signum, frame)

    signal.signal(signal.SIGINT, note)
    try:
        yield got
    finally:
        if signal.getsignal(signal.SIGINT) is note:  # unless the plugin set its own
            signal.signal(signal.SIGINT, previous)
