"""Pure scheduling functions of the paper (semantics §9): numpy in, plain values out.

- :func:`iteration_time` - Eq. (1)
- :func:`network_utilization` - Eq. (11)
- :func:`priority_scores` - Eqs. (9), (10), (12)
- :func:`cost_min_allocate` - Alg. 2
- :func:`pathfinder` - Alg. 1
"""

from .pathfinder import COST_TIE_RTOL, cost_min_allocate, pathfinder
from .pipeline import iteration_time
from .priority import network_utilization, priority_scores

__all__ = [
    "COST_TIE_RTOL",
    "cost_min_allocate",
    "iteration_time",
    "network_utilization",
    "pathfinder",
    "priority_scores",
]
