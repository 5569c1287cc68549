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
"""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Sequence
from importlib.metadata import EntryPoint, distributions
from types import ModuleType

from .errors import BacepipeError

__all__ = ["ENTRY_POINTS", "ENV_VAR", "entry_points", "load_plugins", "plugin_modules"]

#: The entry-point group of installed plugins.
ENTRY_POINTS = "bacepipe_env.plugins"
#: Modules to import as plugins, comma-separated (``--plugin`` adds to it).
ENV_VAR = "BACEPIPE_PLUGINS"

_imported: set[str] = set()
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


def plugin_modules() -> list[str]:
    """The modules named by :data:`ENV_VAR`, in order."""
    return [m.strip() for m in os.environ.get(ENV_VAR, "").split(",") if m.strip()]


def load_plugins(modules: Sequence[str] = ()) -> bool:
    """Import ``modules`` and those of :data:`ENV_VAR` (each once; one that cannot be
    imported is a one-line BacepipeError), then, the first time, every installed plugin of
    :data:`ENTRY_POINTS`. True when anything new was loaded."""
    global _discovered
    new = False
    for name in [*plugin_modules(), *modules]:
        if name in _imported:
            continue
        try:
            importlib.import_module(name)
        except Exception as err:
            first = str(err).splitlines()[0] if str(err) else type(err).__name__
            raise BacepipeError(f"plugin {name}: cannot import it: {first}") from None
        _imported.add(name)
        new = True
    if not _discovered:
        _discovered = True
        for ep in entry_points(ENTRY_POINTS):
            try:
                loaded = ep.load()
                if callable(loaded) and not isinstance(loaded, ModuleType):
                    loaded()
            except Exception as err:
                first = str(err).splitlines()[0] if str(err) else type(err).__name__
                print(
                    f"bacepipe: warning: plugin {ep.name} ({ep.value}) skipped: {first}",
                    file=sys.stderr,
                )
                continue
            new = True
    return new
