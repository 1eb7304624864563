"""Inline SVG bar charts for the HTML report: one chart per metric, grouped bars per task, one bar per run."""

from __future__ import annotations

from dataclasses import dataclass

from benchrun.audit.report_text import html_text

COLORS = ("#0072b2", "#e69f00", "#009e73", "#cc79a7", "#56b4e9", "#d55e00", "#f0e442", "#000000")
"""Okabe-Ito: distinguishable with the common colour-vision deficiencies."""
BAR, GAP, LEFT, TOP, PLOT, BOTTOM, LABEL_CHARS = 32, 22, 44, 18, 180, 30, 22


@dataclass(frozen=True)
class Bar:
    """One run's value for one task of the metric."""

    series: int
    label: str
    mean: float
    stderr: float | None
    n: int


@dataclass(frozen=True)
class Scale:
    """Maps a value in lo..hi to a y coordinate of the plot area."""

    lo: float
    hi: float

    def y(self, value: float) -> float:
        return TOP + PLOT * (self.hi - value) / (self.hi - self.lo)


def scale_for(bars: list[Bar], binary: bool) -> Scale:
    """0..1 for 0/1 metrics, else from min(0, lowest) to max(0, highest), whiskers included: every bar stands on the
    zero line, one of a metric below 0 everywhere too."""
    if binary:
        return Scale(0.0, 1.0)
    hi = max(0.0, *(b.mean + (b.stderr or 0.0) for b in bars))
    lo = min(0.0, *(b.mean - (b.stderr or 0.0) for b in bars))
    return Scale(lo, hi if hi > lo else lo + 1.0)


def number(value: float) -> str:
    return f"{value:.3g}" if abs(value) >= 1000 else f"{value:.3f}"


def chart(key: str, metric: str, groups: dict[str, list[Bar]], binary: bool, n_series: int,
          title: str | None = None) -> str:
    """An accessible SVG chart of `metric` (`key`: a unique id): groups keyed by task, each with its runs' bars;
    `title` says what the bars are (default: the mean by task and run)."""
    every = [bar for bars in groups.values() for bar in bars]
    scale = scale_for(every, binary)
    group_width = max(n_series * BAR, min(LABEL_CHARS, max(map(len, groups))) * 7) + GAP
    width = LEFT + group_width * len(groups) + 8
    height = TOP + PLOT + BOTTOM
    body = [_axis(scale, width)]
    for index, (task, bars) in enumerate(groups.items()):
        body.append(_group(task, bars, LEFT + GAP / 2 + index * group_width, group_width - GAP, n_series, scale))
    title = title or f"{metric}: mean by task and run" + (" (0/1 metric, axis 0 to 1)" if binary else "")
    return (f'<svg class="chart" role="img" aria-labelledby="{key}" width="{width}" '
            f'height="{height}" viewBox="0 0 {width} {height}" data-metric="{html_text(metric)}">'
            f'<title id="{key}">{html_text(title)}</title>{"".join(body)}</svg>')


def _axis(scale: Scale, width: int) -> str:
    ticks = [scale.lo + (scale.hi - scale.lo) * i / 4 for i in range(5)]
    lines = [f'<line class="grid" x1="{LEFT}" x2="{width - 4}" y1="{scale.y(t):.1f}" y2="{scale.y(t):.1f}"/>'
             f'<text class="tick" x="{LEFT - 4}" y="{scale.y(t) + 4:.1f}">{number(t)}</text>' for t in ticks]
    zero = scale.y(0.0)
    lines.append(f'<line class="zero" x1="{LEFT}" x2="{width - 4}" y1="{zero:.1f}" y2="{zero:.1f}"/>')
    return "".join(lines)


def _group(task: str, bars: list[Bar], x0: float, inner: float, n_series: int, scale: Scale) -> str:
    start = x0 + (inner - n_series * BAR) / 2
    cut = task if len(task) <= LABEL_CHARS else task[:LABEL_CHARS - 1] + "…"
    parts = [_bar(task, bar, start + bar.series * BAR, scale) for bar in bars]
    parts.append(f'<text class="group" x="{x0 + inner / 2:.1f}" y="{TOP + PLOT + 18}"><title>{html_text(task)}</title>'
                 f'{html_text(cut)}</text>')
    return "".join(parts)


def _bar(task: str, bar: Bar, x: float, scale: Scale) -> str:
    top, zero = scale.y(max(bar.mean, 0.0)), scale.y(min(bar.mean, 0.0))
    spread = f" ± {number(bar.stderr)}" if bar.stderr is not None else ""
    label = f"{bar.label} · {task}: {number(bar.mean)}{spread} (n={bar.n})"
    color = COLORS[bar.series % len(COLORS)]
    whisker = _whisker(bar, x + BAR / 2, scale) if bar.stderr else ""
    above = scale.y(min(bar.mean + bar.stderr, scale.hi)) if bar.stderr else top
    return (f'<g class="series-{bar.series}"><title>{html_text(label)}</title>'
            f'<rect class="bar" data-value="{bar.mean!r}" x="{x + 2:.1f}" y="{top:.1f}" width="{BAR - 4}" '
            f'height="{zero - top:.1f}" fill="{color}"/>{whisker}'
            f'<text class="value" x="{x + BAR / 2:.1f}" y="{min(above, zero) - 3:.1f}">{number(bar.mean)}</text></g>')


def _whisker(bar: Bar, x: float, scale: Scale) -> str:
    lo = scale.y(max(bar.mean - bar.stderr, scale.lo))
    hi = scale.y(min(bar.mean + bar.stderr, scale.hi))
    return f'<line class="err" x1="{x:.1f}" x2="{x:.1f}" y1="{hi:.1f}" y2="{lo:.1f}"/>'


def legend(labels: list[str]) -> str:
    """The runs' colours, as an HTML list shown once above the charts."""
    items = "".join(f'<li><svg width="12" height="12" aria-hidden="true"><rect width="12" height="12" '
                    f'fill="{COLORS[i % len(COLORS)]}"/></svg> {html_text(label)}</li>'
                    for i, label in enumerate(labels))
    return f'<ul class="legend">{items}</ul>'
