"""The plots: inline SVG, unique ids, nothing when their data is absent."""

from __future__ import annotations

import re

from kernelproof.report import plots


def test_each_plot_is_inline_svg_with_prefixed_ids(full_report):
    rendered = [
        plots.speedup_per_shape(full_report.timing),
        plots.sample_distributions(full_report.timing),
        plots.roofline_chart(full_report.roofline, full_report.timing),
    ]
    for name, plot in zip(("speedup", "samples", "roofline"), rendered):
        assert plot is not None
        assert plot.svg.startswith("<svg") and plot.svg.rstrip().endswith("</svg>")
        assert "<?xml" not in plot.svg and "<!DOCTYPE" not in plot.svg
        ids = re.findall(r'\bid="([^"]+)"', plot.svg)
        assert ids and all(i.startswith(f"kp-{name}-") for i in ids)
        refs = re.findall(r'href="#([^"]+)"', plot.svg) + re.findall(r"url\(#([^)]+)\)", plot.svg)
        assert all(r.startswith(f"kp-{name}-") for r in refs)
        assert plot.alt


def test_speedup_plot_uses_a_log_axis_for_wide_intervals(full_report):
    plot = plots.speedup_per_shape(full_report.timing)
    assert "20x" in plot.alt  # the dim=1 interval reaches 20x; a log axis keeps 0.05x visible


def test_absent_data_gives_no_plot(full_report):
    from kernelproof.schema import Ceilings, Roofline, SolFraction

    assert plots.speedup_per_shape(None) is None
    assert plots.sample_distributions(None) is None
    assert plots.roofline_chart(None, full_report.timing) is None
    no_flops = Roofline(
        flops=0,
        bytes=10,
        floor_s=1,
        sol_fraction=SolFraction(),
        ceilings=Ceilings(peak_flops=1, peak_bytes_per_s=1, source="t"),
    )
    assert plots.roofline_chart(no_flops, full_report.timing) is None


def test_roofline_without_timing_draws_only_the_ceilings(full_report):
    plot = plots.roofline_chart(full_report.roofline, None)
    assert plot is not None and "achieves" not in plot.alt
