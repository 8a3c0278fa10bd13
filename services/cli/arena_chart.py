"""The ``dast arena`` chart: one hand-written SVG file, no plotting dependency.

Left: level A's running win rate over the matches with its 95 % Wilson band and the
even-share line. Right: milliseconds per decision (p50, p95, max) of each level.
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

_WIDTH, _HEIGHT = 880, 360
_PANEL_W, _PANEL_H = 360, 240
_LEFT_X, _RIGHT_X, _TOP_Y = 70, 500, 60
_COLOURS = {"a": "#1f6feb", "b": "#d29922", "band": "#1f6feb33", "grid": "#d0d7de"}


def _text(x: float, y: float, text: str, size: int = 12, anchor: str = "start") -> str:
    return (f'<text x="{x:.1f}" y="{y:.1f}" font-size="{size}" text-anchor="{anchor}" '
            f'font-family="sans-serif">{escape(text)}</text>')


def _axes(x0: float, y0: float, title: str, y_label: str, y_max: float) -> list[str]:
    parts = [
        _text(x0, y0 - 16, title, 14),
        f'<rect x="{x0}" y="{y0}" width="{_PANEL_W}" height="{_PANEL_H}" fill="none" '
        f'stroke="#57606a"/>',
    ]
    for step in range(5):
        value = y_max * step / 4
        y = y0 + _PANEL_H - _PANEL_H * step / 4
        parts.append(f'<line x1="{x0}" y1="{y:.1f}" x2="{x0 + _PANEL_W}" y2="{y:.1f}" '
                     f'stroke="{_COLOURS["grid"]}"/>')
        parts.append(_text(x0 - 6, y + 4, f"{value:g}", 11, "end"))
    parts.append(_text(x0 - 48, y0 + _PANEL_H / 2, y_label, 11))
    return parts


def render_svg(
    title: str,
    running: Sequence[tuple[float, float, float]],
    even_share: float,
    timings: dict[str, tuple[float, float, float]],
) -> str:
    """The chart as SVG text.

    :param running: per match played, A's (win rate, Wilson low, Wilson high) so far.
    :param even_share: the win rate of evenly matched levels.
    :param timings: per level label, its (p50, p95, max) milliseconds per decision.
    """
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{_WIDTH}" height="{_HEIGHT}" '
        f'viewBox="0 0 {_WIDTH} {_HEIGHT}">',
        '<rect width="100%" height="100%" fill="white"/>',
        _text(_WIDTH / 2, 24, title, 16, "middle"),
        *_axes(_LEFT_X, _TOP_Y, "A's win rate (95 % Wilson band)", "rate", 1.0),
    ]
    count = len(running)
    if count:
        def point(index: int, value: float) -> str:
            x = _LEFT_X + _PANEL_W * (index + 1) / count
            return f"{x:.1f},{_TOP_Y + _PANEL_H * (1 - value):.1f}"

        upper = [point(i, high) for i, (_, _, high) in enumerate(running)]
        lower = [point(i, low) for i, (_, low, _) in reversed(list(enumerate(running)))]
        parts.append(f'<polygon points="{" ".join(upper + lower)}" fill="{_COLOURS["band"]}"/>')
        line = " ".join(point(i, rate) for i, (rate, _, _) in enumerate(running))
        parts.append(f'<polyline points="{line}" fill="none" stroke="{_COLOURS["a"]}" '
                     f'stroke-width="2"/>')
    share_y = _TOP_Y + _PANEL_H * (1 - even_share)
    parts.append(f'<line x1="{_LEFT_X}" y1="{share_y:.1f}" x2="{_LEFT_X + _PANEL_W}" '
                 f'y2="{share_y:.1f}" stroke="#cf222e" stroke-dasharray="6 4"/>')
    parts.append(_text(_LEFT_X + _PANEL_W / 2, _TOP_Y + _PANEL_H + 20,
                       f"matches played ({count})", 11, "middle"))
    slowest = max((values[2] for values in timings.values()), default=1.0) or 1.0
    parts += _axes(_RIGHT_X, _TOP_Y, "ms per decision: p50, p95, max", "ms", slowest)
    group = _PANEL_W / max(len(timings), 1)
    bar = group / 4
    for index, (label, values) in enumerate(timings.items()):
        colour = _COLOURS["a" if index == 0 else "b"]
        for offset, value in enumerate(values):
            height = _PANEL_H * value / slowest
            x = _RIGHT_X + group * index + bar * (offset + 0.5)
            opacity = (0.45, 0.7, 1.0)[offset]
            parts.append(f'<rect x="{x:.1f}" y="{_TOP_Y + _PANEL_H - height:.1f}" '
                         f'width="{bar * 0.9:.1f}" height="{height:.1f}" fill="{colour}" '
                         f'fill-opacity="{opacity}"/>')
        parts.append(_text(_RIGHT_X + group * (index + 0.5), _TOP_Y + _PANEL_H + 20, label,
                           11, "middle"))
    parts.append("</svg>")
    return "\n".join(parts) + "\n"
