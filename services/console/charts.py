"""The geometry of the console's charts, drawn as inline SVG by the templates
(``templates/charts.html``): no script, nothing fetched."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

WIDTH: Final = 600
HEIGHT: Final = 200
MARGIN: Final = 30


@dataclass(frozen=True)
class Bar:
    """One bar: where it stands and what it says."""

    x: float
    y: float
    width: float
    height: float
    label: str
    value: str


@dataclass(frozen=True)
class BarChart:
    """Bars over labelled bins."""

    title: str
    bars: tuple[Bar, ...]
    top: str
    """The value at the top of the scale."""
    width: int = WIDTH
    height: int = HEIGHT


@dataclass(frozen=True)
class LineChart:
    """A line over time (or any x)."""

    title: str
    points: str
    """The polyline's ``points`` attribute."""
    top: str
    left: str
    right: str
    latest: str
    width: int = WIDTH
    height: int = HEIGHT


def bar_chart(title: str, values: Sequence[float], labels: Sequence[str]) -> BarChart:
    """Bars for ``values`` (one per label)."""
    top = max([*values, 0.0]) or 1.0
    span = (WIDTH - 2 * MARGIN) / max(1, len(values))
    usable = HEIGHT - 2 * MARGIN
    bars = tuple(
        Bar(x=MARGIN + index * span + 1, y=HEIGHT - MARGIN - usable * value / top,
            width=max(1.0, span - 2), height=usable * value / top, label=label,
            value=_number(value))
        for index, (value, label) in enumerate(zip(values, labels, strict=True)))
    return BarChart(title, bars, _number(top))


def histogram(title: str, values: Sequence[float], bins: int = 10) -> BarChart:
    """How ``values`` spread over ``bins`` equal bins."""
    if not values:
        return bar_chart(title, [], [])
    bins = min(bins, len(values))
    low, high = min(values), max(values)
    step = (high - low) / bins or 1.0
    counts = [0.0] * bins
    for value in values:
        counts[min(bins - 1, int((value - low) / step))] += 1
    places = 0 if step >= 1 else 1 if step >= 0.1 else 2
    labels = [f"{low + index * step:.{places}f}" for index in range(bins)]
    return bar_chart(title, counts, labels)


def line_chart(title: str, samples: Sequence[tuple[float, float]], left: str,
               right: str) -> LineChart:
    """A line through ``(x, y)`` samples, x growing."""
    if not samples:
        return LineChart(title, "", "0", left, right, "no samples yet")
    top = max(y for _, y in samples) or 1.0
    first, last = samples[0][0], samples[-1][0]
    span = (last - first) or 1.0
    usable_x, usable_y = WIDTH - 2 * MARGIN, HEIGHT - 2 * MARGIN
    points = " ".join(
        f"{MARGIN + usable_x * (x - first) / span:.1f},"
        f"{HEIGHT - MARGIN - usable_y * y / top:.1f}" for x, y in samples)
    return LineChart(title, points, _number(top), left, right, _number(samples[-1][1]))


def _number(value: float) -> str:
    return f"{value:.0f}" if value == int(value) else f"{value:.1f}"
