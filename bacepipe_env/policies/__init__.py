"""Ordering and placement policies, and the (ordering, placement) pairs that make a policy."""

from .bace_pipe import PathfinderPlacement, PriorityOrdering, bace_pipe
from .base import FCFSOrdering, Policy

__all__ = ["FCFSOrdering", "PathfinderPlacement", "Policy", "PriorityOrdering", "bace_pipe"]
