"""The packet's plots, drawn with matplotlib's object API (no pyplot, no global backend) and
returned as inline SVG markup: nothing is written to disk or fetched when the packet opens.

Each function returns ``None`` when its data is absent, so the packet can say so instead.
"""

from __future__ import annotations

import functools
import io
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, ParamSpec, TypeVar

from kernelproof.report import formatting as fmt
from kernelproof.schema import Roofline, Timing
from kernelproof.schema.e2e import Soak

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure
    from matplotlib.typing import RcKeyType

    from kernelproof.schema.drift import DriftSummary

#: Colours of the two implementations, the same in every plot and in the packet's CSS.
REFERENCE_COLOUR = "#0969da"
CANDIDATE_COLOUR = "#d4600e"

#: Colours of a speedup by what its confidence interval says: faster, slower, or unclear.
FASTER_COLOUR = "#1a7f37"
SLOWER_COLOUR = "#cf222e"
UNCLEAR_COLOUR = "#6e7781"

#: A value range wider than this ratio is drawn on a log axis, so small values stay visible.
LOG_AXIS_SPAN = 8.0

#: Width of the figures in inches; the packet scales them to the page.
FIGURE_WIDTH_IN = 7.0

#: Salt of matplotlib's SVG ids, fixed so the same report renders to the same bytes.
SVG_HASH_SALT = "kernelproof"

#: Room under each plot's axes for the tick labels and the axis label, in inches.
BOTTOM_MARGIN_IN = 0.62

#: Width of one character of a 9-point tick label, in inches (to fit the longest y label).
CHAR_WIDTH_IN = 0.068

#: Decades the roofline's x axis extends beyond the plotted points and the ridge point.
ROOFLINE_MARGIN_DECADES = 1.5

P = ParamSpec("P")
R = TypeVar("R")

#: The packet's matplotlib style, applied only while a plot is drawn.
_RC: dict[RcKeyType, object] = {
    "svg.fonttype": "path",  # glyphs as paths: the plot reads the same without any font
    "svg.hashsalt": SVG_HASH_SALT,
    "font.size": 9,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "grid.color": "#d0d7de",
    "grid.linewidth": 0.6,
}


@dataclass(frozen=True)
class Plot:
    """One rendered plot: SVG markup to inline, and a text alternative."""

    svg: str
    alt: str


def _styled(draw: Callable[P, R]) -> Callable[P, R]:
    """Run ``draw`` under the packet's matplotlib style, leaving the global style untouched:
    artists take rcParams when they are created, so the whole drawing runs inside it."""

    @functools.wraps(draw)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        if not available():
            return None  # type: ignore[return-value]  # every drawing's result may be None
        from matplotlib import rc_context

        with rc_context(_RC):
            return draw(*args, **kwargs)

    return wrapper


def available() -> bool:
    """Whether matplotlib can be imported (it is a dependency; this guards broken installs)."""
    try:
        import matplotlib  # noqa: F401 - importing it is the test
    except ImportError:
        return False
    return True


@_styled
def speedup_per_shape(timing: Timing | None) -> Plot | None:
    """Speedup at every timed shape with its 95% CI, against parity; the default shape also
    shows the speedup over ``torch.compile`` when that baseline ran."""
    if timing is None:
        return None
    rows = [(_shape_label(s.variant, s.knobs), s.speedup, s.speedup_ci) for s in timing.per_shape]
    if not rows:
        rows = [("default", timing.speedup, timing.speedup_ci)]
    longest = max(len(label) for label, _, _ in rows)
    figure, axes = _figure(
        height=0.42 * len(rows) + 1.1,
        left_in=min(0.3 + CHAR_WIDTH_IN * longest, FIGURE_WIDTH_IN / 2),
    )
    values = [v for _, speedup, ci in rows for v in (speedup, *ci) if _positive(v)] + [1.0]
    for index, (_, speedup, (low, high)) in enumerate(rows):
        colour = FASTER_COLOUR if low > 1 else SLOWER_COLOUR if high < 1 else UNCLEAR_COLOUR
        axes.errorbar(
            [speedup],
            [index],
            xerr=[[max(speedup - low, 0)], [max(high - speedup, 0)]],
            fmt="o",
            color=colour,
            capsize=3,
            markersize=5,
            linewidth=1.2,
        )
    compiled = timing.baselines.torch_compile
    if compiled is not None and _positive(compiled):
        default_row = next((i for i, s in enumerate(timing.per_shape) if s.variant == "default"), 0)
        axes.plot(
            [compiled],
            [default_row],
            marker="D",
            linestyle="none",
            markersize=5,
            markerfacecolor="none",
            color=CANDIDATE_COLOUR,
            label="default shape, against torch.compile",
        )
        values.append(compiled)
        axes.legend(loc="best", fontsize=8, frameon=False)
    axes.axvline(1.0, color="#57606a", linestyle="--", linewidth=1)
    axes.set_yticks(range(len(rows)), [_plain(label) for label, _, _ in rows])
    axes.invert_yaxis()
    axes.grid(axis="y", visible=False)
    _value_axis(axes, values, lambda v: f"{v:g}x")
    axes.set_xlabel("speedup over the reference (higher is faster; bars: 95% CI; dashed: parity)")
    alt = "; ".join(
        f"{label}: {fmt.speedup(s)} (95% CI {fmt.interval(ci)})" for label, s, ci in rows
    )
    return Plot(svg=_svg(figure, "speedup"), alt=f"Speedup per shape. {alt}")


@_styled
def sample_distributions(timing: Timing | None) -> Plot | None:
    """Per-call times of the reference and the candidate at the default shape: a box per
    implementation with every raw sample drawn over it."""
    if timing is None:
        return None
    series = [
        ("reference", timing.reference, REFERENCE_COLOUR),
        ("candidate", timing.candidate, CANDIDATE_COLOUR),
    ]
    series = [(name, stats, colour) for name, stats, colour in series if stats.samples]
    if not series:
        return None
    import numpy as np

    unit, factor = _time_unit([s for _, stats, _ in series for s in stats.samples])
    figure, axes = _figure(height=2.6, left_in=0.95)
    jitter = np.random.default_rng(0)
    for index, (_name, stats, colour) in enumerate(series):
        values = np.asarray(stats.samples, dtype=float) * factor
        box = axes.boxplot(
            [values],
            positions=[index],
            orientation="horizontal",
            widths=0.5,
            showfliers=False,
            patch_artist=True,
            medianprops={"color": "black", "linewidth": 1.5},
        )
        for patch in box["boxes"]:
            patch.set_facecolor(colour)
            patch.set_alpha(0.25)
        offsets = jitter.uniform(-0.18, 0.18, size=len(values))
        axes.scatter(values, index + offsets, s=9, color=colour, alpha=0.7, linewidths=0)
    axes.set_yticks(
        range(len(series)), [f"{name}\n(n={len(stats.samples)})" for name, stats, _ in series]
    )
    axes.invert_yaxis()
    axes.grid(axis="y", visible=False)
    samples = [s * factor for _, stats, _ in series for s in stats.samples if s > 0]
    _value_axis(axes, samples, lambda v: f"{v:g}")
    axes.set_xlabel(f"time per call ({unit}); box: quartiles and median, dots: every sample")
    alt = "; ".join(
        f"{name}: median {fmt.seconds(stats.median_s)}, "
        f"IQR {fmt.seconds(stats.iqr_s)}, "
        f"{len(stats.samples)} samples"
        for name, stats, _ in series
    )
    return Plot(svg=_svg(figure, "samples"), alt=f"Per-call times at the default shape. {alt}")


@_styled
def roofline_chart(roofline: Roofline | None, timing: Timing | None) -> Plot | None:
    """Achieved FLOP/s against arithmetic intensity, under the bandwidth and compute ceilings.

    Both implementations do the same compulsory work, so they share one intensity and differ
    only in height. Returns ``None`` when no FLOPs were counted (the intensity is zero and has
    no place on a log axis): the packet then shows the numbers as a table only."""
    if roofline is None:
        return None
    if roofline.flops <= 0 or roofline.bytes <= 0:
        return None
    import numpy as np

    ceilings = roofline.ceilings
    intensity = roofline.flops / roofline.bytes
    ridge = ceilings.peak_flops / ceilings.peak_bytes_per_s
    low = min(intensity, ridge) / 10**ROOFLINE_MARGIN_DECADES
    high = max(intensity, ridge) * 10**ROOFLINE_MARGIN_DECADES
    xs = np.logspace(math.log10(low), math.log10(high), 200)
    figure, axes = _figure(height=3.6, left_in=0.8)
    axes.plot(
        xs,
        np.minimum(ceilings.peak_flops, xs * ceilings.peak_bytes_per_s),
        color="#24292f",
        linewidth=1.8,
    )
    axes.set_xscale("log")
    axes.set_yscale("log")
    axes.annotate(
        f"bandwidth {fmt.rate(ceilings.peak_bytes_per_s, 'B/s')}",
        xy=(ridge / 10, ceilings.peak_flops / 10),
        xytext=(-4, 6),
        textcoords="offset points",
        rotation=0,
        ha="right",
        fontsize=8,
    )
    axes.annotate(
        f"compute {fmt.rate(ceilings.peak_flops, 'FLOP/s')}",
        xy=(ridge * 1.2, ceilings.peak_flops),
        xytext=(0, 4),
        textcoords="offset points",
        fontsize=8,
    )
    alt = [
        f"ceilings: {fmt.rate(ceilings.peak_flops, 'FLOP/s')} compute, "
        f"{fmt.rate(ceilings.peak_bytes_per_s, 'B/s')} bandwidth ({ceilings.source})",
        f"arithmetic intensity {intensity:.3g} FLOP/byte",
    ]
    if timing is not None:
        for name, stats, colour, marker in (
            ("reference", timing.reference, REFERENCE_COLOUR, "o"),
            ("candidate", timing.candidate, CANDIDATE_COLOUR, "s"),
        ):
            if stats.median_s > 0:
                achieved = roofline.flops / stats.median_s
                axes.plot(
                    [intensity],
                    [achieved],
                    marker=marker,
                    linestyle="none",
                    markersize=8,
                    color=colour,
                    label=f"{name}: {fmt.rate(achieved, 'FLOP/s')}",
                )
                alt.append(f"{name} achieves {fmt.rate(achieved, 'FLOP/s')}")
    light = min(ceilings.peak_flops, intensity * ceilings.peak_bytes_per_s)
    axes.plot(
        [intensity],
        [light],
        marker="*",
        linestyle="none",
        markersize=10,
        markerfacecolor="white",
        color="#24292f",
        label=f"speed of light: {fmt.rate(light, 'FLOP/s')}",
    )
    axes.legend(loc="lower right", fontsize=8, frameon=False)
    axes.axvline(intensity, color="#d0d7de", linestyle=":", linewidth=1)
    axes.set_xlim(low, high)
    _quiet_minor_ticks(axes)
    axes.set_xlabel("arithmetic intensity (FLOP per compulsory byte)")
    axes.set_ylabel("achieved FLOP/s")
    return Plot(svg=_svg(figure, "roofline"), alt="Roofline. " + "; ".join(alt))


def _figure(height: float, left_in: float = 0.8) -> tuple[Figure, Axes]:
    """A figure with fixed margins (in inches). Fixed margins instead of a layout engine: the
    engine draws every figure twice to measure it, which doubles the packet's rendering time."""
    from matplotlib.figure import Figure

    figure = Figure(figsize=(FIGURE_WIDTH_IN, height))
    figure.subplots_adjust(
        left=left_in / FIGURE_WIDTH_IN,
        right=1 - 0.25 / FIGURE_WIDTH_IN,
        bottom=BOTTOM_MARGIN_IN / height,
        top=1 - 0.15 / height,
    )
    return figure, figure.add_subplot()


def _value_axis(axes: Axes, values: Sequence[float], label: Callable[[float], str]) -> None:
    """The x axis: linear from zero, or log when the values span more than
    :data:`LOG_AXIS_SPAN` (so a 0.03x and a 20x both stay readable)."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    positive = [v for v in values if _positive(v)]
    if not positive or max(positive) / min(positive) <= LOG_AXIS_SPAN:
        axes.set_xlim(left=0)
        return
    axes.set_xscale("log")
    axes.xaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    axes.xaxis.set_major_formatter(FuncFormatter(lambda v, _: label(v)))
    axes.xaxis.set_minor_formatter(NullFormatter())


def _quiet_minor_ticks(axes: Axes) -> None:
    """No labels on minor ticks: on a log-log plot they crowd the axes and cost most of the
    rendering time."""
    from matplotlib.ticker import NullFormatter

    axes.xaxis.set_minor_formatter(NullFormatter())
    axes.yaxis.set_minor_formatter(NullFormatter())


def _svg(figure: Figure, name: str) -> str:
    """The figure as SVG markup for inlining: no XML prolog, ids made unique per plot, sized by
    the page instead of in points."""
    buffer = io.StringIO()
    figure.savefig(buffer, format="svg", metadata={"Date": None, "Creator": None})
    markup = buffer.getvalue()
    markup = markup[markup.index("<svg") :]
    prefix = f"kp-{name}-"
    markup = re.sub(r'\bid="([^"]+)"', rf'id="{prefix}\1"', markup)
    markup = re.sub(r'href="#([^"]+)"', rf'href="#{prefix}\1"', markup)
    markup = re.sub(r"url\(#([^)]+)\)", rf"url(#{prefix}\1)", markup)
    markup = re.sub(r'<svg([^>]*?) width="[^"]+" height="[^"]+"', r"<svg\1", markup, count=1)
    markup = re.sub(r"<metadata>.*?</metadata>", "", markup, count=1, flags=re.DOTALL)
    return markup.replace("<svg", f'<svg class="plot-svg" aria-hidden="true" data-plot="{name}"', 1)


def _time_unit(samples: Sequence[float]) -> tuple[str, float]:
    """The unit (and factor from seconds) that puts the median sample at or above 1."""
    ordered = sorted(samples)
    middle = ordered[len(ordered) // 2] if ordered else 1.0
    for unit, factor in (("s", 1.0), ("ms", 1e3), ("\u00b5s", 1e6)):
        if middle * factor >= 1:
            return unit, factor
    return "ns", 1e9


def _shape_label(variant: str, knobs: dict[str, int]) -> str:
    return f"default ({fmt.knobs(knobs)})" if variant == "default" else fmt.knobs(knobs)


def _plain(text: str) -> str:
    """Text shown literally: a ``$`` would otherwise start matplotlib's math mode."""
    return text.replace("$", r"\$")


def _positive(value: float | None) -> bool:
    return value is not None and math.isfinite(value) and value > 0


@_styled
def soak_curves(soak: Soak | None) -> Plot | None:
    """The e2e soak over its steps: each worker's resident memory, the candidate's drift ratio
    against the float64 oracle (with the tolerance limit), and each side's step time."""
    if soak is None or soak.steps == 0:
        return None
    from matplotlib.figure import Figure

    height = 5.4
    figure = Figure(figsize=(FIGURE_WIDTH_IN, height))
    figure.subplots_adjust(
        left=0.9 / FIGURE_WIDTH_IN,
        right=1 - 0.25 / FIGURE_WIDTH_IN,
        bottom=BOTTOM_MARGIN_IN / height,
        top=1 - 0.15 / height,
        hspace=0.35,
    )
    memory, drift, latency = figure.subplots(3, 1, sharex=True)
    colours = {"reference": REFERENCE_COLOUR, "candidate": CANDIDATE_COLOUR}
    for side, values in soak.rss_bytes.items():
        memory.plot(
            range(len(values)),
            [v / 2**20 for v in values],
            color=colours[side],
            label=side,
            linewidth=1.2,
        )
    memory.set_ylabel("RSS (MiB)")
    memory.legend(loc="best", fontsize=8, frameon=False)
    ratios = [(i, r) for i, r in enumerate(soak.drift_ratios) if r is not None]
    if ratios:
        drift.plot(
            [i for i, _ in ratios], [r for _, r in ratios], color=CANDIDATE_COLOUR, linewidth=1.2
        )
    drift.axhline(1.0, color="#57606a", linestyle="--", linewidth=1)
    if soak.first_drift_step is not None:
        drift.axvline(soak.first_drift_step, color=SLOWER_COLOUR, linewidth=1)
    drift.set_ylabel("error ratio")
    for side, curve in soak.latency.items():
        if curve.samples_s:
            latency.plot(
                range(len(curve.samples_s)),
                [s * 1e3 for s in curve.samples_s],
                color=colours[side],
                linewidth=1.0,
            )
    latency.set_ylabel("step (ms)")
    latency.set_xlabel(
        "soak step (drift: 1.0 is the tolerance; a vertical line marks the first step beyond it)"
    )
    growth = soak.growth_bytes_per_step.get("excess")
    alt = (
        f"Soak over {soak.steps} steps: memory growth beyond the reference "
        f"{'unknown' if growth is None else f'{growth / 1024:.0f} KiB per step'}; "
        f"largest drift ratio {soak.max_drift_ratio}; first step beyond tolerance "
        f"{soak.first_drift_step}."
    )
    return Plot(svg=_svg(figure, "soak"), alt=alt)


#: Dimensions drawn in the drift plot: those production moved out of first, then the others.
DRIFT_PLOT_DIMENSIONS = 4

#: Colours of the drift shares: inside, near the edge, outside.
DRIFT_COLOURS = (FASTER_COLOUR, "#bf8700", SLOWER_COLOUR)


@_styled
def drift_over_time(summary: DriftSummary) -> Plot | None:
    """Per signature dimension, the share of calls inside the verified span, near its edge and
    outside it, window by window (stacked); the dimensions production left first are drawn."""
    rows = [d for d in summary.dimensions if d.total.calls]
    if not rows or not summary.windows:
        return None
    rows.sort(key=lambda d: -(d.total.outside + d.total.near_edge))
    rows = rows[:DRIFT_PLOT_DIMENSIONS]
    from matplotlib.figure import Figure

    height = 1.5 * len(rows) + 0.9
    figure = Figure(figsize=(FIGURE_WIDTH_IN, height))
    figure.subplots_adjust(
        left=0.7 / FIGURE_WIDTH_IN,
        right=1 - 0.25 / FIGURE_WIDTH_IN,
        bottom=BOTTOM_MARGIN_IN / height,
        top=1 - 0.3 / height,
        hspace=0.6,
    )
    axes_list = figure.subplots(len(rows), 1, sharex=True, squeeze=False)[:, 0]
    xs = list(range(len(summary.windows)))
    alt = []
    for axes, row in zip(axes_list, rows):
        shares = [
            [w.share(w.inside) for w in row.windows],
            [w.share(w.near_edge) for w in row.windows],
            [w.share(w.outside) for w in row.windows],
        ]
        axes.stackplot(
            xs,
            *shares,
            colors=DRIFT_COLOURS,
            alpha=0.8,
            labels=["inside", "near the edge", "outside"],
        )
        axes.set_ylim(0, 1)
        axes.set_yticks([0, 0.5, 1], ["0", "50%", "100%"])
        axes.set_title(_plain(f"{row.name}: verified {row.verified}"), fontsize=8, loc="left")
        total = row.total
        alt.append(
            f"{row.name}: {fmt.percent(total.share(total.inside))} inside, "
            f"{fmt.percent(total.share(total.near_edge))} near the edge, "
            f"{fmt.percent(total.share(total.outside))} outside"
        )
    axes_list[0].legend(
        loc="upper left", fontsize=7, frameon=False, ncol=3, bbox_to_anchor=(0, 1.45)
    )
    axes_list[-1].set_xlabel(
        f"window (oldest first; {len(xs)} window(s), the last ending {summary.windows[-1]})"
    )
    return Plot(svg=_svg(figure, "drift"), alt="Drift per window. " + "; ".join(alt))
