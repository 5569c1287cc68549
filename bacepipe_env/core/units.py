"""Unit conversions. Internally: seconds, bytes, bytes/s, $/kWh, kW (semantics §1)."""

from __future__ import annotations

SECONDS_PER_HOUR = 3600.0

#: Gbps per byte/s (8 bits / 10^9): ``bps * GBPS_PER_BYTE_PER_S`` is the bandwidth in Gbps. One
#: multiplication, which the observation features use; :func:`bytes_per_s_to_gbps`'s
#: ``bps * 8 / 1e9`` can differ from it in the last bit.
GBPS_PER_BYTE_PER_S = 8e-9


def gbps_to_bytes_per_s(gbps: float) -> float:
    """Gigabits per second (10^9 bit/s) to bytes per second."""
    return gbps * 1e9 / 8.0


def mbps_to_bytes_per_s(mbps: float) -> float:
    """Megabits per second (10^6 bit/s) to bytes per second."""
    return mbps * 1e6 / 8.0


def bytes_per_s_to_gbps(bps: float) -> float:
    """Bytes per second to gigabits per second."""
    return bps * 8.0 / 1e9


def hours(seconds: float) -> float:
    """Seconds to hours."""
    return seconds / SECONDS_PER_HOUR


def hours_text(seconds: float) -> str:
    """Seconds as hours for an error line: ``1,234,568 h``, or ``1.23e+301 h`` when huge."""
    h = seconds / SECONDS_PER_HOUR
    return f"{h:,.1f} h" if abs(h) < 1e12 else f"{h:.3g} h"
