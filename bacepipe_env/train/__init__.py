"""Training and loading learned orderers with Stable-Baselines3: the optional part of the
package that needs the ``train`` extra (``pip install 'bacepipe-env[train]'``).

- :func:`evaluate_model`: play an SB3 model (MaskablePPO) on the env with the action mask
  applied, over seeded episodes; the way to score a model trained with SB3 directly (SB3's own
  ``evaluate_policy`` ignores the mask, see docs/training.md, "Using SB3 directly").
- :mod:`.sb3`: a saved model as an agent behind the heuristics' ``predict`` protocol
  (``load_agent("maskable_ppo:runs/x/model.zip")``); registered as the loader of learned
  policy names through the ``bacepipe_env.agents`` entry point.
- :mod:`.learn`, :mod:`.compare` (and the aliases :mod:`.maskable_ppo`, :mod:`.ppo`,
  :mod:`.dqn`): ``bacepipe train learn|compare|...``, the same as ``python -m train.<name>``
  from a checkout.
- :mod:`.config`: the run's typed arguments.

Nothing else in ``bacepipe_env`` imports this package; importing it loads no torch (the
modules that train do).
"""

from .sb3 import evaluate_model

__all__ = ["evaluate_model"]
