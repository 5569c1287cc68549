"""What running a GPU costs and emits over time: electricity prices, grid carbon intensity and
cross-region egress (semantics §10).

A :class:`Tariff` gives every region a price ($/kWh) and a carbon intensity (gCO2e/kWh) as
functions of simulated time, and optionally an egress price per directed region pair ($/GB).

- ``flat`` (the paper scenarios' default): each region's Table II price ``P_r`` and one carbon
  figure for its country, constant in time. A job's cost is Eq. (4) unchanged.
- ``hourly``: ``price_r(t) = P_r + (w_r(h) - mean(w_r)) / 1000`` $/kWh, with ``w_r`` the region's
  market zone's 2023 wholesale price (USD/MWh) and ``h = floor(t / 3600 + start_hour) mod
  8760``; the carbon intensity is the zone's hourly life-cycle figure. Table II stays each
  region's mean; the wholesale series adds its hour-to-hour movement (and can make an hour's
  price negative, as real markets do). The series wraps from the last hour of 2023 to the first.

Scheduled price changes (:class:`~bacepipe_env.core.faults.PriceChange`, semantics §11)
compose by multiplication: at time t a region's price is the model's price above times the
product of the factors of every change of that region whose window ``[start, end)`` holds t
(:meth:`Tariff.price_at`, the price the environment's observation shows).

Cost and carbon are integrals over a job's execution: ``cost = power_kw * sum_r n_r *
integral(price_r dt)`` (t in hours) and the same with the carbon intensity for emissions, in
grams, reported in kg. :meth:`Tariff.price_hours` is the exact integral of
:meth:`Tariff.price_at`, split at every change's start and end (each piece's base integral
times the product of the factors covering it): what is billed is the price that is shown.

Only the ``hourly`` price, and so a cost under it, can be negative. A ``flat`` price (each
``P_r`` >= 0, each factor >= 0) and every cost under it never are, and carbon never is.

The series ships in ``bacepipe_env/data/hourly-price-carbon-2023.csv`` (derived from
HewlettPackard/sustain-cluster, MIT; prices from ENTSO-E, PJM, JEPX, EMC Singapore, AEMO and the
GB day-ahead market; carbon from Electricity Maps).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

import numpy as np

from ..errors import ScenarioError
from .faults import PriceChange
from .limits import check_limit
from .validate import require_float

__all__ = [
    "DEFAULT_EGRESS_USD_PER_GB",
    "HOURS_PER_YEAR",
    "PRICE_MODELS",
    "HourlySeries",
    "Tariff",
    "hourly_series",
]

PRICE_MODELS = ("flat", "hourly")
HOURS_PER_YEAR = 8760
#: AWS's charge for data sent between most of its US and EU regions ($/GB).
DEFAULT_EGRESS_USD_PER_GB = 0.02

_SERIES_FILE = "data/hourly-price-carbon-2023.csv"


@dataclass(frozen=True, eq=False)
class HourlySeries:
    """The shipped hourly series: ``price[z, h]`` USD/MWh and ``carbon[z, h]`` gCO2e/kWh for
    each zone ``z`` (named after the paper's region it holds) and hour ``h`` of 2023, UTC."""

    zones: tuple[str, ...]
    price: np.ndarray  # (Z, 8760) USD/MWh
    carbon: np.ndarray  # (Z, 8760) gCO2e/kWh

    def zone(self, name: str) -> int:
        """Index of zone ``name``; a ScenarioError lists the known zones otherwise."""
        if name not in self.zones:
            raise ScenarioError(
                "price_zone",
                name,
                f"no hourly series for this zone; zones: {', '.join(self.zones)}",
            )
        return self.zones.index(name)


@lru_cache(maxsize=1)
def hourly_series() -> HourlySeries:
    """The hourly 2023 price and carbon series shipped with the package, read once."""
    text = resources.files("bacepipe_env").joinpath(_SERIES_FILE).read_text("utf-8")
    lines = [line for line in text.splitlines() if line and not line.startswith("#")]
    header = lines[0].split(",")
    data = np.array([[float(x) for x in line.split(",")[1:]] for line in lines[1:]])
    zones = tuple(h.removesuffix("_usd_per_mwh") for h in header[1:] if h.endswith("_usd_per_mwh"))
    z = len(zones)
    if data.shape != (HOURS_PER_YEAR, 2 * z):  # a packaging defect, not a user error
        raise RuntimeError(f"{_SERIES_FILE}: expected {HOURS_PER_YEAR} x {2 * z} values")
    price, carbon = data[:, :z].T.copy(), data[:, z:].T.copy()
    price.setflags(write=False)
    carbon.setflags(write=False)
    return HourlySeries(zones, price, carbon)


class _Integrator:
    """O(1) integrals of one hourly step function, repeated every year: ``values[h]`` holds
    over ``[h, h + 1)`` hours. ``integral(x0, x1)`` is the integral over ``[x0, x1]`` (hours)."""

    __slots__ = ("_cum", "_total", "_values")

    def __init__(self, values: np.ndarray) -> None:
        self._values = values.tolist()
        cum = np.concatenate(([0.0], np.cumsum(values)))
        self._cum = cum.tolist()
        self._total = float(cum[-1])

    def at(self, x: float) -> float:
        """The value at ``x`` hours."""
        return float(self._values[math.floor(x) % HOURS_PER_YEAR])

    def antiderivative(self, x: float) -> float:
        """The integral from 0 to ``x`` hours."""
        return self.at_point(_point(x))

    def at_point(self, point: tuple[int, float, int]) -> float:
        """:meth:`antiderivative` at a :func:`_point` (worked out once for many series)."""
        years, frac, h = point
        return float(years * self._total + self._cum[h] + frac * self._values[h])

    def integral(self, x0: float, x1: float) -> float:
        """The integral over ``[x0, x1]`` hours."""
        return self.between(_point(x0), _point(x1))

    def between(self, p0: tuple[int, float, int], p1: tuple[int, float, int]) -> float:
        """:meth:`integral` between two :func:`_point` readings."""
        return self.at_point(p1) - self.at_point(p0)


_Points = tuple[tuple[int, float, int], tuple[int, float, int]]  # two _point readings


def _point(x: float) -> tuple[int, float, int]:
    """``x`` hours as (whole years, the fraction of its hour, the hour of the year): what an
    antiderivative reads of ``x``, the same for every series."""
    years = math.floor(x / HOURS_PER_YEAR)
    rest = x - years * HOURS_PER_YEAR
    h = min(int(rest), HOURS_PER_YEAR - 1)
    return years, rest - h, h


@lru_cache(maxsize=64)
def _integrators(zones: tuple[str, ...]) -> tuple[tuple[_Integrator, _Integrator], ...]:
    """Per zone: (price deviation in $/kWh, carbon in g/kWh) integrators, shared by every
    tariff over those zones."""
    series = hourly_series()
    out = []
    for name in zones:
        z = series.zone(name)
        w = series.price[z]
        deviation = (w - w.mean()) / 1000.0  # USD/MWh -> $/kWh, around the annual mean
        out.append((_Integrator(deviation), _Integrator(series.carbon[z])))
    return tuple(out)


class Tariff:
    """Electricity price, carbon intensity and egress price per region over time.

    Args:
        prices: ``P_r`` per region ($/kWh), the scenario's (Table II) rates.
        carbon: per region, the constant carbon intensity (gCO2e/kWh) the ``flat`` model uses.
        model: ``"flat"`` or ``"hourly"`` (see the module docs).
        start_hour: the hour of 2023 (UTC) that simulated time 0 falls on, in ``[0, 8760)``.
        zones: per region, the market zone of the hourly series (default: the region's name,
            which the paper's six regions have); ``hourly`` only.
        egress_usd_per_gb: ``None`` (no egress charge, the default), one $/GB figure for every
            directed pair, or a K x K matrix (row = sending region).
        price_changes: scheduled price changes (semantics §11): each multiplies a region's
            price by its factor over its window; overlapping ones multiply together.
    """

    def __init__(
        self,
        prices: Sequence[float],
        carbon: Sequence[float],
        *,
        model: str = "flat",
        start_hour: float = 0.0,
        zones: Sequence[str] | None = None,
        egress_usd_per_gb: float | Sequence[Sequence[float]] | None = None,
        price_changes: Sequence[PriceChange] = (),
    ) -> None:
        if model not in PRICE_MODELS:
            raise ScenarioError(
                "prices", model, f"unknown price model; choose from: {', '.join(PRICE_MODELS)}"
            )
        k = len(prices)
        if len(carbon) != k:
            raise ScenarioError("carbon", list(carbon), f"needs one value per region ({k})")
        self.model = model
        self.prices = tuple(float(p) for p in prices)
        self.carbon: tuple[float, ...] = tuple(
            float(check_limit("regions.carbon_g_per_kwh", c, field=f"carbon[{i}]"))
            for i, c in enumerate(carbon)
        )
        self.start_hour = require_float("start_hour", start_hour, minimum=0.0)
        if self.start_hour >= HOURS_PER_YEAR:
            raise ScenarioError(
                "start_hour", start_hour, f"must be in [0, {HOURS_PER_YEAR}) (an hour of 2023)"
            )
        self.price_changes = tuple(price_changes)
        self._windows: tuple[tuple[PriceChange, ...], ...] = tuple(
            tuple(c for c in self.price_changes if c.region == r) for r in range(k)
        )
        # Eq. (4)'s shortcut holds only for constant prices
        self.flat = model == "flat" and not self.price_changes
        self._hourly = model == "hourly"
        self.zones: tuple[str, ...] = ()
        self._terms: tuple[tuple[_Integrator, _Integrator], ...] = ()
        if self._hourly:
            names = tuple(zones) if zones is not None else ()
            if len(names) != k:
                raise ScenarioError("zones", list(names), f"needs one zone per region ({k})")
            self.zones = names
            self._terms = _integrators(names)
        self.egress = _egress_matrix(egress_usd_per_gb, k)

    @property
    def n_regions(self) -> int:
        """Regions the tariff covers."""
        return len(self.prices)

    def _hours(self, t: float) -> float:
        return t / 3600.0 + self.start_hour

    def model_price_at(self, region: int, t: float) -> float:
        """The price model's price of ``region`` at time ``t`` seconds ($/kWh), before any
        scheduled price change."""
        price = self.prices[region]
        if self._hourly:
            price += self._terms[region][0].at(self._hours(t))
        return price

    def price_at(self, region: int, t: float) -> float:
        """Electricity price of ``region`` at time ``t`` seconds ($/kWh): the model's price
        times the factors of the region's changes in force, in their order."""
        price = self.model_price_at(region, t)
        for c in self._windows[region]:
            if c.start <= t < c.end:
                price *= c.factor
        return price

    def carbon_at(self, region: int, t: float) -> float:
        """Grid carbon intensity of ``region`` at time ``t`` seconds (gCO2e/kWh)."""
        if not self._hourly:
            return self.carbon[region]
        return self._terms[region][1].at(self._hours(t))

    def price_hours(
        self, region: int, t0: float, t1: float, points: _Points | None = None
    ) -> float:
        """``integral of price_r(t) dt`` over ``[t0, t1]`` seconds (``t0 <= t1``), t in hours
        ($/kWh * h): the exact integral of :meth:`price_at`, scheduled changes included.
        ``points``: :meth:`_points` of ``t0, t1``, when a caller shares them across regions."""
        if self._windows[region]:
            return self._composed_price_hours(region, t0, t1, points)
        return self._base_price_hours(region, t0, t1, points)

    def _composed_price_hours(
        self, region: int, t0: float, t1: float, points: _Points | None = None
    ) -> float:
        """:meth:`price_hours` with scheduled changes: ``[t0, t1]`` split at every start and
        end of the region's changes inside it, each piece's base integral times the product of
        the factors of the changes covering it (every change covers a piece whole or not at
        all). Under flat prices every piece is >= 0, and so is the sum."""
        windows = self._windows[region]
        inner = {x for c in windows for x in (c.start, c.end) if t0 < x < t1}
        cuts = [t0, *sorted(inner), t1]
        readings: list[tuple[int, float, int]] = []
        if self._hourly:
            p0, p1 = points or self._points(t0, t1)
            readings = [p0, *(_point(self._hours(x)) for x in cuts[1:-1]), p1]
        total = 0.0
        for i, (a, b) in enumerate(itertools.pairwise(cuts)):
            factor = 1.0
            for c in windows:  # in their order, as price_at multiplies them
                if c.start <= a < c.end:
                    factor *= c.factor
            if factor == 0.0:
                continue
            piece = self.prices[region] * (b - a) / 3600.0
            if self._hourly:
                piece += self._terms[region][0].between(readings[i], readings[i + 1])
            total += factor * piece
        return total

    def _base_price_hours(
        self, region: int, t0: float, t1: float, points: _Points | None = None
    ) -> float:
        base = self.prices[region] * (t1 - t0) / 3600.0
        if not self._hourly:
            return base
        return base + self._terms[region][0].between(*(points or self._points(t0, t1)))

    def carbon_hours(
        self, region: int, t0: float, t1: float, points: _Points | None = None
    ) -> float:
        """``integral of carbon_r(t) dt`` over ``[t0, t1]`` seconds, t in hours (g/kWh * h);
        ``points`` as :meth:`price_hours`'s."""
        if not self._hourly:
            return self.carbon[region] * (t1 - t0) / 3600.0
        return self._terms[region][1].between(*(points or self._points(t0, t1)))

    def _points(self, t0: float, t1: float) -> _Points:
        """The hourly series' reading of ``t0`` and ``t1`` (seconds), the same for every zone."""
        return _point(self._hours(t0)), _point(self._hours(t1))

    def busy_hours(
        self, t0: float, t1: float, busy: Sequence[tuple[int, int]]
    ) -> tuple[float, float]:
        """``(sum n * price_hours(r, t0, t1), sum n * carbon_hours(r, t0, t1))`` over the
        ``(region, n)`` pairs of ``busy``, in their order, with the hourly series' reading of
        ``t0`` and ``t1`` worked out once instead of once per region (the same floats)."""
        points = self._points(t0, t1) if self._hourly else None
        cost = carbon = 0.0
        for r, n in busy:
            cost += n * self.price_hours(r, t0, t1, points)
            carbon += n * self.carbon_hours(r, t0, t1, points)
        return cost, carbon

    def egress_cost(self, path: Sequence[int], bytes_each_way: float) -> float:
        """Egress charge ($) for ``bytes_each_way`` sent forward over every cross-region hop of
        ``path`` and as many back (activations forward, gradients back); 0 without egress."""
        if self.egress is None or len(path) < 2:
            return 0.0
        e = self.egress
        per_gb = math.fsum(e[u][v] + e[v][u] for u, v in itertools.pairwise(path))
        return per_gb * bytes_each_way / 1e9

    def egress_links_cost(self, link_bytes: Iterable[tuple[tuple[int, int], float]]) -> float:
        """Egress charge ($) for the bytes sent one way over each directed link ``(u, v)``; 0
        without egress."""
        if self.egress is None:
            return 0.0
        e = self.egress
        return math.fsum(e[u][v] * n_bytes / 1e9 for (u, v), n_bytes in link_bytes)

    def describe(self) -> dict[str, object]:
        """A JSON-ready summary: the model, the start hour, the zones and the egress setting."""
        out: dict[str, object] = {"prices": self.model, "start_hour": self.start_hour}
        if self._hourly:
            out["zones"] = list(self.zones)
        out["egress"] = self.egress is not None
        return out


def _egress_matrix(
    value: float | Sequence[Sequence[float]] | None, k: int
) -> tuple[tuple[float, ...], ...] | None:
    if value is None:
        return None
    if isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool):
        per_gb = check_limit("egress_usd_per_gb", value)
        return tuple(tuple(0.0 if u == v else per_gb for v in range(k)) for u in range(k))
    try:
        rows = np.asarray(value, dtype=object)
    except ValueError:  # ragged rows
        rows = np.zeros(0)
    if rows.shape != (k, k):
        raise ScenarioError(
            "egress_usd_per_gb", value, f"must be a number or a {k} x {k} matrix ($/GB)"
        )
    return tuple(
        tuple(
            0.0
            if u == v
            else check_limit("egress_usd_per_gb", rows[u, v], field=f"egress_usd_per_gb[{u}][{v}]")
            for v in range(k)
        )
        for u in range(k)
    )
