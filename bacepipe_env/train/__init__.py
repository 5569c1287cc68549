"""Training and loading learned orderers with Stable-Baselines3: the optional part of the
package that needs the ``train`` extra (``pip install 'bacepipe-env[train]'``).

- :func:`evaluate_model`: play an SB3 model (MaskablePPO) on the env with the action mask
  applied, over seeded episodes; the way to score a model trained with SB3 directly (SB3's own
  ``evaluate_policy`` ignores the mask, see docs/training.md, "Using SB3 directly").
- :class:`HeuristicOverlay` (:mod:`.overlay`): the SB3 callback that draws the heuristics
  beside a model of your own script in its TensorBoard run (``model.learn(...,
  callback=HeuristicOverlay(env_id))``), as ``bacepipe train compare`` draws them beside the
  command's runs.
- :mod:`.sb3`: a saved model as an agent behind the heuristics' ``predict`` protocol
  (``load_agent("maskable_ppo:runs/x/model.zip")``); registered as the loader of learned
  policy names through the ``bacepipe_env.agents`` entry point.
- :mod:`.learn`, :mod:`.compare` (and the aliases :mod:`.maskable_ppo`, :mod:`.ppo`,
  :mod:`.dqn`): ``bacepipe train learn|compare|...``, the same as ``python -m train.<name>``
  from a checkout.
- :mod:`.config`: the run's typed arguments.

Nothing else in ``bacepipe_env`` imports this package; importing it loads no torch (the
modules that train do; :class:`HeuristicOverlay` is imported, with them, when first used).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .sb3 import evaluate_model

if TYPE_CHECKING:
    from .overlay import HeuristicOverlay

__all__ = ["HeuristicOverlay", "evaluate_model"]


def __getattr__(name: str) -> Any:
    """``HeuristicOverlay``, imported on first use (it subclasses SB3's callback, so it loads
    torch)."""
    if name == "HeuristicOverlay":
        from .overlay import HeuristicOverlay

        return HeuristicOverlay
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
