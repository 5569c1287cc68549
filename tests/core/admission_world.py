"""The one-region world of the admission tests' hand-worked cases (test_admission.py's
docstring derives their numbers): four GPUs at $1/kWh, 3.6 kW each, and three models that
differ only in their layer count."""

from __future__ import annotations

import numpy as np

from bacepipe_env.core import Cluster, ModelSpec, Region, TrainingConstants

REL = 1e-12
CONST = TrainingConstants(seq_len=1, micro_batch=1, peak_flops=1.0, mfu=1.0)
M4 = ModelSpec("M4", 6.0, 4, 1)
M3 = ModelSpec("M3", 6.0, 3, 1)
M1 = ModelSpec("M1", 6.0, 1, 1)
CLUSTER = Cluster((Region("R0", 4, 1.0, 2.0),), np.zeros((1, 1)), power_kw=3.6)
