"""Every environment id the README and the docs name is registered and is its family's newest
version (issue 26): a stale id in a doc raises DeprecatedEnv for whoever copies it."""

from __future__ import annotations

import re
from pathlib import Path

from bacepipe_env.envs.registration import ENV_IDS

ROOT = Path(__file__).resolve().parents[2]
ID = re.compile(r"GeoPipe(?:-[A-Za-z0-9]+)*?-v(\d+)\b")


def _named() -> dict[str, set[str]]:
    """id -> the files that name it."""
    found: dict[str, set[str]] = {}
    for path in [ROOT / "README.md", *(ROOT / "docs").glob("*.md")]:
        for match in ID.finditer(path.read_text(encoding="utf-8")):
            found.setdefault(match.group(0), set()).add(path.name)
    return found


def test_every_named_id_is_registered_and_the_newest_of_its_family():
    registered = {e.removeprefix("bacepipe_env/") for e in ENV_IDS}
    newest: dict[str, int] = {}
    for env_id in registered:
        family, version = env_id.rsplit("-v", 1)
        newest[family] = max(newest.get(family, 0), int(version))
    named = _named()
    assert "GeoPipe-v2" in named and len(named) >= 5  # the docs do name ids
    for env_id, files in named.items():
        assert env_id in registered, f"{env_id} (in {sorted(files)}) is not registered"
        family, version = env_id.rsplit("-v", 1)
        assert int(version) == newest[family], f"{env_id} (in {sorted(files)}) is not the newest"


def test_the_docs_carry_every_ids_full_configuration() -> None:
    from bacepipe_env.envs.registration import config_table

    text = (ROOT / "docs" / "environment.md").read_text(encoding="utf-8")
    block = re.search(r"<!-- env-config:begin[^>]*-->\n(.*?)<!-- env-config:end -->", text, re.S)
    assert block is not None, "docs/environment.md lost its env-config block"
    assert block.group(1) == config_table(), "paste config_table() between the markers"
    header = block.group(1).splitlines()[0]
    assert header.count("|") == len(ENV_IDS) + 2  # one column per registered id
