"""pytest plugin: gate a test suite (and so CI) on kernelproof verdicts.

Registered through the ``pytest11`` entry point, so installing kernelproof is enough. A project
lists reference/candidate pairs in two ways:

- in ``pyproject.toml``, each pair one test item (collected with ``pyproject.toml``)::

      [tool.kernelproof]
      pairs = [
        {reference = "tasks/softmax.py", candidate = "kernels/softmax.py"},
        {reference = "tasks/softmax.py", candidate = "kernels/bad.py", expect = "incorrect",
         options = {timing = false, seeds = 2}},
      ]

- or with a marker on a test function, which fails before its body runs when the verdict is
  not the expected one; the body can read the report through the ``kernelproof_report``
  fixture::

      @pytest.mark.kernelproof(reference="tasks/softmax.py", candidate="kernels/softmax.py",
                               timing=False)
      def test_softmax_kernel(kernelproof_report):
          assert kernelproof_report.timing is None

Relative paths resolve against pytest's rootdir (where ``pyproject.toml`` is). ``expect``
defaults to ``verified`` and may list several verdicts; ``options`` (or the marker's other
keywords) are the settings of :func:`kernelproof.controller.verify.verify`, plus ``profile``.
A failing item shows the verdict, the summary, the decisive findings, the repro commands and
the command that reruns the verification. ``--kernelproof-reports DIR`` also writes each
report's JSON and HTML packet there (CI artifacts).

Loading this plugin imports neither torch nor the controller: a suite with no pair pays nothing.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from kernelproof.errors import UsageError
from kernelproof.schema import Severity, Verdict

if TYPE_CHECKING:
    from kernelproof.schema import Report

#: The marker's name, and the ``[tool.<name>]`` table of ``pyproject.toml`` the pairs live in.
MARKER = "kernelproof"

#: The verdict a pair must get when it states none.
DEFAULT_EXPECT = (Verdict.VERIFIED.value,)

#: Keys a pair entry may hold in ``pyproject.toml``.
PAIR_KEYS = {"reference", "candidate", "expect", "options", "name"}

#: Findings quoted in a failure message, most severe first; the report holds the rest.
QUOTED_FINDINGS = 5

_REPORT_KEY = pytest.StashKey["Report"]()
_COLLECTED_KEY = pytest.StashKey[bool]()
_DEFAULT_ARGS_INPUT = "kernelproof_default_arguments"
_VERDICTS = {v.value for v in Verdict}


@dataclass(frozen=True)
class Pair:
    """One reference/candidate pair to verify, and the verdict it must get."""

    reference: Path
    candidate: Path
    expect: tuple[str, ...] = DEFAULT_EXPECT
    options: dict[str, Any] = field(default_factory=dict)
    name: str = ""

    @classmethod
    def build(
        cls,
        *,
        reference: Any,
        candidate: Any,
        expect: Any = None,
        options: Mapping[str, Any] | None = None,
        name: Any = None,
        base: Path,
        where: str,
    ) -> Pair:
        """Validate one pair's fields; ``where`` names the declaration in error messages."""
        if not isinstance(reference, (str, Path)) or not isinstance(candidate, (str, Path)):
            raise UsageError(
                f"{where}: `reference` and `candidate` must both be paths (got "
                f"reference={reference!r}, candidate={candidate!r})"
            )
        expected = _expectation(expect, where)
        if options is not None and not isinstance(options, Mapping):
            raise UsageError(
                f"{where}: `options` must be a table of verify settings, e.g. "
                f"{{timing = false}} (got {options!r})"
            )
        return cls(
            reference=_resolve(reference, base),
            candidate=_resolve(candidate, base),
            expect=expected,
            options=dict(options or {}),
            name=str(name) if name else str(candidate),
        )


def verify_pair(pair: Pair) -> Report:
    """Run kernelproof on ``pair`` (the controller is imported only now, with torch)."""
    from kernelproof.controller.verify import verify

    options = dict(pair.options)
    profile = options.pop("profile", "default")
    return verify(pair.reference, pair.candidate, profile=profile, **options)


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("kernelproof", "kernelproof verdicts")
    group.addoption(
        "--kernelproof-reports",
        metavar="DIR",
        default=None,
        help="write the JSON report and the HTML packet of every kernelproof verification into DIR",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        f"{MARKER}(reference, candidate, expect='verified', **options): verify the candidate "
        "against the reference with kernelproof before the test runs; fail unless the verdict "
        "is the expected one",
    )


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    """``pyproject.toml`` with a ``[tool.kernelproof] pairs`` list becomes a collector."""
    if file_path.name == "pyproject.toml" and file_path == _pyproject(parent.config):
        if _declared_pairs(file_path):
            return PairsFile.from_parent(parent, path=file_path)
    return None


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(
    session: pytest.Session, config: pytest.Config, items: list[pytest.Item]
) -> None:
    """A plain ``pytest`` (no path arguments) runs the declared pairs even when ``testpaths``
    keeps collection away from ``pyproject.toml``. Runs before ``-k`` and ``-m`` deselection."""
    if not _default_arguments(config) or config.stash.get(_COLLECTED_KEY, False):
        return
    pyproject = _pyproject(config)
    if pyproject is None or not _declared_pairs(pyproject):
        return
    try:
        items.extend(PairsFile.from_parent(session, path=pyproject).collect())
    except UsageError as exc:
        raise pytest.UsageError(str(exc)) from None


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """pytest-xdist: tell each worker whether the controller ran without path arguments
    (workers always receive explicit paths, so they cannot tell by themselves)."""
    node.workerinput[_DEFAULT_ARGS_INPUT] = _default_arguments(node.config)


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem: pytest.Function) -> None:
    """A test marked ``@pytest.mark.kernelproof(...)`` fails here, before its body, when the
    verdict is not the expected one."""
    if pyfuncitem.get_closest_marker(MARKER) is None:
        return None
    try:
        report, pair = _marked_report(pyfuncitem)
    except UsageError as exc:
        pytest.fail(str(exc), pytrace=False)
    if report.verdict.value not in pair.expect:
        pytest.fail(mismatch_message(pair, report), pytrace=False)
    return None


@pytest.fixture
def kernelproof_report(request: pytest.FixtureRequest) -> Report:
    """The report of the ``kernelproof`` marker on the requesting test (verified once)."""
    if not isinstance(request.node, pytest.Function) or (
        request.node.get_closest_marker(MARKER) is None
    ):
        pytest.fail(
            "the kernelproof_report fixture needs a test marked with "
            "@pytest.mark.kernelproof(reference=..., candidate=...)",
            pytrace=False,
        )
    try:
        return _marked_report(request.node)[0]
    except UsageError as exc:
        pytest.fail(str(exc), pytrace=False)


class PairsFile(pytest.File):
    """``pyproject.toml`` seen as a file of pairs: one :class:`PairItem` per entry."""

    def collect(self) -> Iterator[PairItem]:
        # pytest offers every file of a directory it passes through, then keeps only those on
        # the requested paths: only a collector that really collects counts as collected.
        self.config.stash[_COLLECTED_KEY] = True
        seen: dict[str, int] = {}
        for pair in _load_pairs(self.path):
            seen[pair.name] = seen.get(pair.name, 0) + 1
            name = pair.name if seen[pair.name] == 1 else f"{pair.name}[{seen[pair.name]}]"
            yield PairItem.from_parent(self, name=name, pair=pair)

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> Any:
        if isinstance(excinfo.value, UsageError):
            return str(excinfo.value)
        return super().repr_failure(excinfo)


class VerdictMismatch(Exception):
    """A pair's verdict is not the one it was expected to get."""


class PairItem(pytest.Item):
    """One pair from ``pyproject.toml``: passes when its verdict is the expected one."""

    def __init__(self, *, pair: Pair, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.pair = pair
        self.add_marker(MARKER)

    def runtest(self) -> None:
        report = _run(self.config, self.pair, self)
        if report.verdict.value not in self.pair.expect:
            raise VerdictMismatch(mismatch_message(self.pair, report))

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> Any:
        if isinstance(excinfo.value, VerdictMismatch):
            return str(excinfo.value)
        return super().repr_failure(excinfo)

    def reportinfo(self) -> tuple[Path, int | None, str]:
        return self.path, None, f"kernelproof: {self.pair.candidate} vs {self.pair.reference}"


def mismatch_message(pair: Pair, report: Report) -> str:
    """Why a pair failed: the verdict against the expected one, the summary, the decisive
    findings, the repro commands, and the command that reruns it all."""
    from kernelproof.report.commands import verify_command

    expected = " or ".join(pair.expect)
    lines = [
        f"kernelproof verdict {report.verdict.value!r}, expected {expected}",
        f"  candidate: {pair.candidate}",
        f"  reference: {pair.reference}",
        f"  summary: {report.summary}",
    ]
    decisive = sorted(
        (f for f in report.findings if f.severity in (Severity.FAIL, Severity.SUSPECT)),
        key=lambda f: -f.severity.rank,
    )
    for finding in decisive[:QUOTED_FINDINGS]:
        lines.append(f"  [{finding.severity.value}] {finding.check}: {finding.message}")
    for repro in report.repros:
        lines.append(f"  repro ({repro.failure}): {repro.command}")
    lines.append(f"  rerun: {verify_command(report).text}")
    return "\n".join(lines)


def _marked_report(item: pytest.Function) -> tuple[Report, Pair]:
    marker = item.get_closest_marker(MARKER)
    assert marker is not None
    pair = _marker_pair(marker, item)
    report = item.stash.get(_REPORT_KEY, None)
    if report is None:
        report = _run(item.config, pair, item)
    return report, pair


def _marker_pair(marker: pytest.Mark, item: pytest.Item) -> Pair:
    kwargs = dict(marker.kwargs)
    positional = list(marker.args)
    for key in ("reference", "candidate"):
        if key not in kwargs and positional:
            kwargs[key] = positional.pop(0)
    where = f"@pytest.mark.{MARKER} on {item.nodeid}"
    if positional or "reference" not in kwargs or "candidate" not in kwargs:
        raise UsageError(
            f"{where}: write @pytest.mark.{MARKER}(reference=PATH, "
            f"candidate=PATH, expect='verified', **options)"
        )
    options = dict(kwargs.pop("options", None) or {})
    reference, candidate = kwargs.pop("reference"), kwargs.pop("candidate")
    expect, name = kwargs.pop("expect", None), kwargs.pop("name", None)
    options.update(kwargs)
    return Pair.build(
        reference=reference,
        candidate=candidate,
        expect=expect,
        options=options,
        name=name or item.name,
        base=item.config.rootpath,
        where=where,
    )


def _run(config: pytest.Config, pair: Pair, item: pytest.Item) -> Report:
    report = verify_pair(pair)
    item.stash[_REPORT_KEY] = report
    item.user_properties.append(("kernelproof_verdict", report.verdict.value))
    if report.timing is not None:
        item.user_properties.append(("kernelproof_speedup", f"{report.timing.speedup:.4g}"))
    folder = config.getoption("kernelproof_reports", None)
    if folder:
        from kernelproof.report.files import write_html, write_json

        stem = re.sub(r"[^A-Za-z0-9_.-]+", "_", item.nodeid).strip("_") or "pair"
        write_json(report, Path(folder) / f"{stem}.json")
        write_html(report, Path(folder) / f"{stem}.html")
    return report


def _default_arguments(config: pytest.Config) -> bool:
    """Whether pytest runs without path arguments (its ``testpaths`` or the invocation
    directory); on an xdist worker, whether the controller did."""
    workerinput = getattr(config, "workerinput", None)
    if isinstance(workerinput, dict) and _DEFAULT_ARGS_INPUT in workerinput:
        return bool(workerinput[_DEFAULT_ARGS_INPUT])
    return config.args_source is not pytest.Config.ArgsSource.ARGS


def _pyproject(config: pytest.Config) -> Path | None:
    """The ``pyproject.toml`` that configures this run: pytest's own inifile when it is one,
    else the one at the rootdir."""
    if config.inipath is not None and config.inipath.name == "pyproject.toml":
        return config.inipath
    candidate = config.rootpath / "pyproject.toml"
    return candidate if candidate.is_file() else None


def _toml(path: Path) -> dict[str, Any]:
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - pytest itself depends on tomli before Python 3.11
        import tomli as tomllib
    with path.open("rb") as handle:
        return tomllib.load(handle)


def _declared_pairs(path: Path) -> list[Any]:
    try:
        table = _toml(path).get("tool", {}).get(MARKER, {})
    except (OSError, ValueError):
        return []
    pairs = table.get("pairs") if isinstance(table, dict) else None
    return pairs if isinstance(pairs, list) else []


def _load_pairs(path: Path) -> list[Pair]:
    pairs = []
    for index, entry in enumerate(_declared_pairs(path)):
        where = f"{path} [tool.{MARKER}] pairs[{index}]"
        if not isinstance(entry, dict):
            raise UsageError(
                f"{where}: each pair is a table, e.g. "
                '{reference = "ref.py", candidate = "cand.py"}'
            )
        unknown = set(entry) - PAIR_KEYS
        if unknown:
            raise UsageError(
                f"{where}: unknown key(s) {sorted(unknown)}; a pair holds "
                f"{sorted(PAIR_KEYS)} (verify settings go in `options`)"
            )
        pairs.append(
            Pair.build(
                reference=entry.get("reference"),
                candidate=entry.get("candidate"),
                expect=entry.get("expect"),
                options=entry.get("options"),
                name=entry.get("name"),
                base=path.parent,
                where=where,
            )
        )
    return pairs


def _expectation(expect: Any, where: str) -> tuple[str, ...]:
    if expect is None:
        return DEFAULT_EXPECT
    values = (
        (expect,)
        if isinstance(expect, str)
        else (tuple(expect) if isinstance(expect, (list, tuple)) else (expect,))
    )
    unknown = [v for v in values if v not in _VERDICTS]
    if unknown or not values:
        raise UsageError(
            f"{where}: `expect` must be one or more of {sorted(_VERDICTS)} (got {expect!r})"
        )
    return values


def _resolve(path: str | Path, base: Path) -> Path:
    path = Path(path)
    return path if path.is_absolute() else base / path
