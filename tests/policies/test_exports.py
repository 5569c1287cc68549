"""``from bacepipe_env.policies import make_policy`` works (issue 44), without making
``import bacepipe_env`` load the registry (and its plugin machinery) or any learning library."""

from __future__ import annotations

import subprocess
import sys

import pytest

import bacepipe_env.policies as policies
from bacepipe_env.policies import make_policy, policy_names, registry


def test_make_policy_is_the_registrys() -> None:
    assert make_policy is registry.make_policy and policy_names is registry.policy_names
    assert {"make_policy", "policy_names"} <= set(policies.__all__) <= set(dir(policies))
    assert make_policy("sjf").name == "sjf"


def test_an_unknown_name_is_still_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="has no attribute 'no_such_name'"):
        policies.no_such_name  # noqa: B018


def test_importing_the_package_stays_light() -> None:
    """A fresh interpreter: ``import bacepipe_env`` loads neither the registry nor gymnasium,
    torch or SB3; ``bacepipe_env.core`` no gymnasium; the import from policies then works."""
    code = (
        "import sys, json, bacepipe_env, bacepipe_env.core\n"
        "names = ('bacepipe_env.policies.registry', 'gymnasium', "
        "'torch', 'stable_baselines3', 'sb3_contrib')\n"
        "before = [m for m in names if m in sys.modules]\n"
        "from bacepipe_env.policies import make_policy\n"
        "print(json.dumps([before, make_policy('bace-pipe').name]))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert proc.stdout.strip() == '[[], "bace-pipe"]'
