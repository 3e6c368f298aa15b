"""An op audit from outside the candidate's process: py-spy samples its native and Python stacks.

The in-process audit (torch profiler, ``sys.setprofile``) runs inside the untrusted process and
can be blinded: ``record_function`` switched off, work moved to an unprofiled thread, the
reference's BLAS kernel reached through ``einsum`` instead of ``matmul``. A sampler in the
controller sees where the CPU time really went, whatever the candidate did to its own process.

Limits of py-spy (0.4) that shape this module:

* ``--native`` cannot be combined with ``--nonblocking``: native unwinding pauses each thread
  for each sample, so native sampling is blocking (py-spy refuses the combination).
* ``--native`` fails (``UNW_EBADREG``) for a process in another pid namespace (the sandbox):
  py-spy cannot map the target's Python threads to OS threads from outside. For such a target
  py-spy is run inside the sandbox's user, pid and mount namespaces (``nsenter``), where the
  target has the pid it knows itself by; it stays outside the sandbox's Landlock domain and
  seccomp filter.
* py-spy samples threads that have a Python thread state; native-only threads (OpenMP/MKL
  workers, ``std::thread`` in an extension) are never sampled. Their CPU time is measured from
  ``/proc/PID/task/*/stat`` instead and reported as ``unsampled_cpu_fraction``.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from kernelproof.config import cache_dir

#: Samples per second. Native sampling pauses the target for each sample, so this is a
#: trade: 100 Hz over the default shape's cells only (a second or so) gives 60-150 samples,
#: enough to read a 50% share to within ten points; at 50 Hz a loaded CI machine left some
#: profiles under PASSTHROUGH_MIN_SAMPLES.
DEFAULT_RATE_HZ = 100

#: Seconds to wait for py-spy to write its output after SIGINT; symbolising libtorch takes
#: about a second here, so this leaves ample room before we give up and kill it.
STOP_TIMEOUT_S = 15.0

#: Seconds to wait for py-spy to die after SIGKILL (it should be immediate).
KILL_TIMEOUT_S = 3.0

#: Seconds :meth:`StackSampler.wait_ready` waits for py-spy to finish attaching (0.17 s on the
#: quiet 2-core machine; reading libtorch's symbols takes longer on a busy one).
READY_TIMEOUT_S = 5.0

#: Seconds between two looks at py-spy's signal handlers while it starts.
READY_POLL_S = 0.002

#: How many libraries and functions a profile keeps: enough to name every meaningful hot spot
#: while keeping reports small.
TOP_N = 30

#: Function-name patterns of heavy numeric kernels (BLAS, MKL, oneDNN, OpenBLAS, ATen native
#: kernels): the innermost such frame says which library routine did the work.
HEAVY_FUNCTION = re.compile(
    r"gemm|gemv|mkl_|dnnl|onednn|openblas|cblas_|blas_|lapack|at::native::|Eigen::"
    r"|sleef|xnnpack|fbgemm",
    re.IGNORECASE,
)

#: Library-name patterns of heavy numeric libraries; any frame in them counts as heavy.
HEAVY_LIBRARY = re.compile(
    r"openblas|libblas|libmkl|libdnnl|libmkldnn|libcblas|liblapack|"
    r"libfbgemm|libxnnpack",
    re.IGNORECASE,
)

#: Path fragments of code the candidate built itself: torch extension and torch.compile build
#: caches, Triton and numba caches, and anything under a temporary directory.
CUSTOM_PATH = re.compile(
    r"torch_extensions|torchinductor|/triton/|numba|^/tmp/|/\.cache/kernelproof/", re.IGNORECASE
)

#: Library-name patterns of custom or JIT code when no path is known (py-spy prints basenames).
CUSTOM_LIBRARY = re.compile(
    r"triton|numba|llvm|\[anonymous\]|\[jit\]|inline_ext|_ext\.so$", re.IGNORECASE
)

#: Library label for samples whose innermost frame is Python code (the interpreter running it).
PYTHON_LIBRARY = "[python]"

#: Library label for a native frame with no mapped file (anonymous executable memory: JIT code).
ANONYMOUS_LIBRARY = "[anonymous]"

#: Below this many samples a profile's shares are too noisy (a 50% share has a standard error
#: above 10 points) to call a candidate a passthrough.
PASSTHROUGH_MIN_SAMPLES = 20

#: The reference must spend at least this share of its samples in the candidate's dominant
#: heavy function: its worker also runs the float64 oracle (a different BLAS routine) on
#: every call, so its own working-dtype kernel holds well under half of its samples.
REFERENCE_SHARE = 0.2

#: The candidate must spend at least this share of its library-kernel samples in that same
#: routine: its time is mostly the reference's routine, not work of its own. Below one half
#: because an ``einsum`` adds permute and copy kernels around its GEMM (measured 40-60% of
#: the library samples on this machine under load); the in-process audit decides whether
#: this evidence is ``suspect`` at all (controller/native_audit.py).
CANDIDATE_DOMINANT_SHARE = 0.35

#: A candidate with at most this share of samples in custom code shows "no code of its own": a
#: token call into a built extension must not hide a passthrough, while a real custom kernel
#: doing a sizeable part of the work takes far more than 5% of the time.
CUSTOM_SHARE_MAX = 0.05

#: The frame of a model's call (``nn.Module.__call__``), in both workers.
MODULE_CALL = ("_call_impl", "_wrapped_call_impl")
MODULE_FILE = "torch/nn/modules/module.py"

_PY_LOCATION = re.compile(r"\.pyx?(:\d+)?$|^<.*>(:\d+)?$")
_THREAD_FRAME = re.compile(r"^thread \((0x[0-9a-fA-F]+|\d+)\)")
_ADDRESS = re.compile(r"^0x[0-9a-fA-F]+$")


@dataclass
class NativeProfile:
    """Where a process's on-CPU samples went, as seen from outside it by py-spy.

    ``libraries`` counts samples by the library of the innermost native frame (``[python]``
    when the innermost frame is Python code); ``functions`` by that frame's function;
    ``heavy_functions`` by the innermost frame in a heavy numeric library or kernel (BLAS,
    MKL, oneDNN, ATen native). Each keeps the top ``TOP_N``.
    """

    available: bool
    reason: str = ""
    samples: int = 0
    libraries: dict[str, int] = field(default_factory=dict)
    functions: dict[str, int] = field(default_factory=dict)
    threads: int = 0
    heavy_functions: dict[str, int] = field(default_factory=dict)
    #: Samples with at least one frame in custom code (extension build cache, JIT, Triton).
    custom_samples: int = 0
    custom_libraries: dict[str, int] = field(default_factory=dict)
    #: Whether native frames were sampled (False: Python-only stacks, see the module notes).
    native: bool = False
    #: Share of the process's CPU time (from /proc) spent in threads py-spy never sampled.
    unsampled_cpu_fraction: float = 0.0
    #: Seconds from launching py-spy to its exit after stop (attach + sampling + symbolising).
    wall_s: float = 0.0
    #: ``heavy_functions`` of the samples taken inside a model's call (an ``nn.Module``
    #: ``__call__`` on the stack): the calls' own kernels, without the harness's probes,
    #: input building and comparisons around them, which share the worker's profile in the
    #: matrix and not in the timing rounds.
    call_functions: dict[str, int] = field(default_factory=dict)


def _top(counter: Counter[str]) -> dict[str, int]:
    return dict(counter.most_common(TOP_N))


def _split_frame(frame: str) -> tuple[str, str]:
    """Split a py-spy raw frame ``name (location)`` into name and location ('' if none)."""
    frame = frame.strip()
    if frame.endswith(")"):
        cut = frame.rfind(" (")
        if cut > 0:
            return frame[:cut], frame[cut + 2 : -1]
    return frame, ""


def _is_python(location: str) -> bool:
    return bool(_PY_LOCATION.search(location))


#: The Python installation: libraries under it (torch's own, numpy's) are never the
#: candidate's code, wherever it lives (a CI checkout under /tmp put libtorch under /tmp/).
INSTALLATION = tuple(os.path.realpath(p) + os.sep for p in {sys.prefix, sys.base_prefix})


#: The harness's own C helpers (``timing/c_helper.py``: the pooled inputs' gather, the cache
#: eviction), built into the controller's cache and run in every worker around the calls: 10
#: of attack 35c's 17 timed samples, read as code of its own, hid its passthrough.
HARNESS_LIBRARY = re.compile(r"^(pool-gather|evict)-\w+-[0-9a-f]{12}\.so$")


def _is_custom(library: str, paths: dict[str, str]) -> bool:
    path = paths.get(library, "")
    if path and os.path.realpath(path).startswith(INSTALLATION):
        return False
    if HARNESS_LIBRARY.match(library) and (
        not path or os.path.realpath(path).startswith(os.path.realpath(cache_dir()) + os.sep)
    ):
        return False
    return bool(CUSTOM_LIBRARY.search(library) or (path and CUSTOM_PATH.search(path)))


def parse_raw(text: str, library_paths: dict[str, str] | None = None) -> NativeProfile:
    """Aggregate py-spy ``--format raw`` output (collapsed stacks, root first, one per line).

    ``library_paths`` maps library basenames to full paths (from ``/proc/PID/maps``) so that
    libraries built by the candidate are recognised by where they live.
    """
    paths = library_paths or {}
    libraries: Counter[str] = Counter()
    functions: Counter[str] = Counter()
    heavy: Counter[str] = Counter()
    in_calls: Counter[str] = Counter()
    custom_libraries: Counter[str] = Counter()
    threads: set[str] = set()
    samples = custom = 0
    native = False
    for line in text.splitlines():
        stack, _, count_text = line.rstrip().rpartition(" ")
        if not stack or not count_text.isdigit():
            continue
        count = int(count_text)
        samples += count
        leaf_library, leaf_function, heavy_function = PYTHON_LIBRARY, "", ""
        has_custom = False
        seen_native = False
        in_call = False
        for frame in stack.split(";"):
            match = _THREAD_FRAME.match(frame)
            if match:
                threads.add(match.group(1))
                continue
            if frame.startswith("process "):
                continue
            name, location = _split_frame(frame)
            if _is_python(location):
                # Python frames sit above the native frames they call; a Python frame after a
                # native one means the interpreter is running Python code again.
                leaf_library, leaf_function = PYTHON_LIBRARY, f"{name} ({location})"
                # py-spy names a method by its class: ``Module._call_impl``.
                in_call = in_call or (
                    name.rsplit(".", 1)[-1] in MODULE_CALL and MODULE_FILE in location
                )
                continue
            if not location and not _ADDRESS.match(name):
                continue
            library = location or ANONYMOUS_LIBRARY
            seen_native = True
            function = f"<{library}>" if _ADDRESS.match(name) else name
            leaf_library, leaf_function = library, function
            if HEAVY_FUNCTION.search(name) or HEAVY_LIBRARY.search(library):
                heavy_function = function
            if _is_custom(library, paths):
                has_custom = True
                custom_libraries[library] += count
        native = native or seen_native
        libraries[leaf_library] += count
        if leaf_function:
            functions[leaf_function] += count
        if heavy_function:
            heavy[heavy_function] += count
            if in_call:
                in_calls[heavy_function] += count
        if has_custom:
            custom += count
    return NativeProfile(
        available=samples > 0,
        reason="" if samples else "no samples",
        samples=samples,
        libraries=_top(libraries),
        functions=_top(functions),
        threads=len(threads),
        heavy_functions=_top(heavy),
        custom_samples=custom,
        custom_libraries=_top(custom_libraries),
        native=native,
        call_functions=_top(in_calls),
    )


def _namespace_tids(pid: int) -> dict[int, int]:
    """Global tid -> tid inside the target's own pid namespace, for each thread of ``pid``.

    py-spy names threads by the tid the target itself sees, which differs from ours when the
    target runs in another pid namespace (the sandbox).
    """
    tids: dict[int, int] = {}
    for tid in _thread_cpu_ticks(pid):
        try:
            status = Path(f"/proc/{pid}/task/{tid}/status").read_text()
        except OSError:
            continue
        for line in status.splitlines():
            if line.startswith("NSpid:") and line.split()[1:]:
                tids[tid] = int(line.split()[-1])
    return tids


def _thread_cpu_ticks(pid: int) -> dict[int, int]:
    """utime + stime clock ticks of each thread of ``pid`` ({} when it cannot be read)."""
    ticks: dict[int, int] = {}
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return ticks
    for tid in tasks:
        try:
            stat = Path(f"/proc/{pid}/task/{tid}/stat").read_text()
            fields = stat[stat.rindex(")") + 2 :].split()
            ticks[int(tid)] = int(fields[11]) + int(fields[12])
        except (OSError, ValueError, IndexError):
            continue
    return ticks


def _library_paths(pid: int) -> dict[str, str]:
    """Basename -> path of every file mapped executable into ``pid`` ({} if unreadable)."""
    paths: dict[str, str] = {}
    try:
        text = Path(f"/proc/{pid}/maps").read_text()
    except OSError:
        return paths
    for line in text.splitlines():
        parts = line.split(None, 5)
        if len(parts) == 6 and "x" in parts[1] and parts[5].startswith("/"):
            path = parts[5].removesuffix(" (deleted)")
            paths.setdefault(os.path.basename(path), path)
    return paths


def _resume(proc: subprocess.Popen[bytes]) -> None:
    """SIGCONT to the sampler's process group: stopped, it could neither take its SIGINT nor
    exit. A worker's freezer stops the samplers it watches with the worker; one found stopped
    at the end of its window (nsenter, whose py-spy had exited, waiting to be reaped) held a
    verification 15 s, until ``STOP_TIMEOUT_S`` killed it, about once in 15 session
    verifications of the softmax example."""
    try:
        os.killpg(proc.pid, signal.SIGCONT)
    except OSError:
        pass


def _handles_sigint(pid: int) -> bool:
    """Whether process ``pid`` has a handler installed for SIGINT (``SigCgt``)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("SigCgt:"):
                return bool(int(line.split()[1], 16) >> (signal.SIGINT - 1) & 1)
    except (OSError, ValueError, IndexError):
        pass
    return False


def _process_and_descendants(pid: int) -> list[int]:
    """``pid`` and its descendants (nsenter runs py-spy as its child)."""
    found, queue = [], [pid]
    while queue:
        current = queue.pop()
        found.append(current)
        try:
            tasks = os.listdir(f"/proc/{current}/task")
        except OSError:
            continue
        for tid in tasks:
            try:
                queue += [
                    int(c) for c in Path(f"/proc/{current}/task/{tid}/children").read_text().split()
                ]
            except (OSError, ValueError):
                continue
    return found


def _other_pid_namespace(pid: int) -> bool:
    """Whether ``pid`` lives in a pid namespace other than ours (py-spy --native fails there)."""
    try:
        return os.readlink(f"/proc/{pid}/ns/pid") != os.readlink("/proc/self/ns/pid")
    except OSError:
        return False


def _inner_pid(pid: int) -> int:
    """The pid ``pid`` has inside its own (innermost) pid namespace."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("NSpid:"):
                return int(line.split()[-1])
    except (OSError, ValueError):
        pass
    return pid


def find_py_spy() -> str | None:
    """The py-spy executable: next to this interpreter (a venv) or on PATH."""
    beside = Path(sys.executable).parent / "py-spy"
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    return shutil.which("py-spy")


class StackSampler:
    """Samples another process's stacks with py-spy between ``start`` and ``stop``.

    Never raises into the caller: every failure (py-spy missing, attach refused, no samples)
    becomes a ``NativeProfile`` with ``available=False`` and a ``reason``.
    """

    def __init__(
        self, rate_hz: int = DEFAULT_RATE_HZ, native: bool = True, py_spy: str | None = None
    ) -> None:
        """``native=False`` (or a target in another pid namespace) samples Python stacks only."""
        self.rate_hz = rate_hz
        self.native = native
        self.py_spy = py_spy
        self._proc: subprocess.Popen[bytes] | None = None
        self._dir: tempfile.TemporaryDirectory[str] | None = None
        self._pid = 0
        self._started = 0.0
        self._ticks: dict[int, int] = {}
        self._reason = ""
        self._use_native = False
        self._output: list[bytes] = []
        self._reader: threading.Thread | None = None
        self._interrupted: tuple[dict[str, str], dict[int, int], dict[int, int]] | None = None
        self._unready = ""

    def start(self, pid: int) -> None:
        """Launch py-spy on ``pid`` in the background (on every thread, on-CPU samples only)."""
        self._reason, self._pid, self._proc, self._interrupted = "", pid, None, None
        self._unready = ""
        try:
            exe = self.py_spy or find_py_spy()
            if exe is None:
                self._reason = "py-spy is not installed"
                return
            if not os.path.exists(f"/proc/{pid}"):
                self._reason = f"no process {pid}"
                return
            self._use_native = self.native
            self._dir = tempfile.TemporaryDirectory(prefix="kp-pyspy-")
            # --threads: a thread id on every stack, to count the threads seen on CPU; idle
            # samples are left out by default (no --idle); --native and --nonblocking exclude
            # each other, so native sampling pauses the threads briefly at each sample. The
            # output goes to py-spy's stdout, a pipe the controller drains: py-spy may run in
            # the target's mount namespace, where the controller's folders are not visible (a
            # file would be reopened there by its path through /dev/stdout).
            cmd = [
                exe,
                "record",
                "--pid",
                str(pid),
                "--rate",
                str(self.rate_hz),
                "--format",
                "raw",
                "--output",
                "/dev/stdout",
                "--threads",
            ]
            cmd += ["--native"] if self._use_native else ["--nonblocking"]
            if _other_pid_namespace(pid):
                # py-spy cannot unwind native stacks across pid namespaces (it cannot map the
                # target's threads); run it inside the sandbox's user, pid and mount
                # namespaces instead, where the target is the pid it knows itself by. It stays
                # outside the sandbox's Landlock domain and seccomp filter: the candidate can
                # neither signal nor trace it.
                cmd[cmd.index("--pid") + 1] = str(_inner_pid(pid))
                cmd = [
                    shutil.which("nsenter") or "nsenter",
                    "--target",
                    str(pid),
                    "--user",
                    "--pid",
                    "--mount",
                    "--preserve-credentials",
                    *cmd,
                ]
            self._ticks = _thread_cpu_ticks(pid)
            self._started = time.monotonic()
            self._proc = subprocess.Popen(
                cmd,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=open(os.path.join(self._dir.name, "stderr.txt"), "wb"),
                start_new_session=True,
            )
            self._output = []
            stream = self._proc.stdout
            assert stream is not None
            self._reader = threading.Thread(
                target=lambda: self._output.append(stream.read()), daemon=True
            )
            self._reader.start()
        except Exception as exc:  # noqa: BLE001 - the sampler must never raise into the caller
            self._reason = f"py-spy did not start: {exc}"
            self._proc = None

    def wait_ready(self, timeout_s: float = READY_TIMEOUT_S) -> bool:
        """Wait until py-spy has attached and taken up sampling; False past ``timeout_s`` or
        when it is not running (it exits when it cannot attach, e.g. to a stopped process).

        py-spy installs its SIGINT handler (which writes the output) once its sampler is
        initialised, so the handler shows in ``/proc/<pid>/status`` (``SigCgt``) when it
        samples (see ``controller/native_audit.py`` for why this is waited for)."""
        proc = self._proc
        if proc is None:
            return False
        deadline = time.monotonic() + timeout_s
        while proc.poll() is None:
            if any(_handles_sigint(pid) for pid in _process_and_descendants(proc.pid)):
                return True
            if time.monotonic() >= deadline:
                self._unready = f"py-spy had not attached after {timeout_s:g} s"
                return False
            time.sleep(READY_POLL_S)
        return False

    @property
    def process_group(self) -> int | None:
        """py-spy's process group (its own session) while it runs, else None."""
        return self._proc.pid if self._proc is not None and self._proc.poll() is None else None

    def stop(self) -> NativeProfile:
        """Stop sampling (SIGINT so py-spy writes its output; kill on timeout) and parse it."""
        self.interrupt()
        return self.collect()

    def interrupt(self) -> None:
        """End the sampled window now; py-spy symbolises and writes its output (a few tenths
        of a second for libtorch) while the caller goes on, until :meth:`collect`."""
        if self._proc is None or self._interrupted is not None:
            return
        try:
            self._interrupted = (
                _library_paths(self._pid),
                _thread_cpu_ticks(self._pid),
                _namespace_tids(self._pid),
            )
            if self._proc.poll() is None:
                _resume(self._proc)
                try:  # the whole session: nsenter's child is the py-spy that writes the output
                    os.killpg(self._proc.pid, signal.SIGINT)
                except OSError:
                    self._proc.send_signal(signal.SIGINT)
        except Exception as exc:  # noqa: BLE001 - the sampler must never raise into the caller
            self._reason = f"sampling failed: {exc}"

    def collect(self) -> NativeProfile:
        """The profile of the window that :meth:`interrupt` ended (ends it first if not)."""
        self.interrupt()
        try:
            return self._collect()
        except Exception as exc:  # noqa: BLE001 - the sampler must never raise into the caller
            return NativeProfile(available=False, reason=f"sampling failed: {exc}")
        finally:
            self._interrupted = None
            if self._dir is not None:
                self._dir.cleanup()
                self._dir = None

    def _collect(self) -> NativeProfile:
        proc = self._proc
        if proc is not None and self._interrupted is None:  # the interrupt itself failed
            proc.kill()
            self._proc = None
            return NativeProfile(available=False, reason=self._reason or "sampling failed")
        if proc is None or self._dir is None or self._interrupted is None:
            return NativeProfile(available=False, reason=self._reason or "sampler not started")
        self._proc = None
        paths, ticks_after, inner_tids = self._interrupted
        if proc.poll() is None:
            _resume(proc)
            try:
                proc.wait(timeout=STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                proc.kill()
                try:
                    proc.wait(timeout=KILL_TIMEOUT_S)
                except subprocess.TimeoutExpired:
                    pass
        wall = time.monotonic() - self._started
        err = Path(self._dir.name, "stderr.txt").read_text(errors="replace")
        if self._reader is not None:
            self._reader.join(timeout=STOP_TIMEOUT_S)
        text = b"".join(self._output).decode(errors="replace")
        profile = parse_raw(text, paths)
        profile.wall_s = wall
        if not profile.available:
            lines = [
                ln.strip() for ln in err.splitlines() if ln.strip() and not ln.startswith("py-spy>")
            ]
            detail = lines[0] if lines else self._unready or f"py-spy exited with {proc.returncode}"
            profile.reason = f"no samples: {detail}"
            return profile
        profile.native = profile.native and self._use_native
        profile.reason = self._reason
        profile.unsampled_cpu_fraction = _unsampled_fraction(
            self._ticks, ticks_after, inner_tids, text
        )
        return profile


def _unsampled_fraction(
    before: dict[int, int], after: dict[int, int], inner_tids: dict[int, int], raw: str
) -> float:
    """Share of the CPU ticks between the snapshots spent by threads absent from the samples."""
    seen = {int(m.group(1), 0) for m in re.finditer(r"(?m)^thread \((0x[0-9a-fA-F]+|\d+)\)", raw)}
    total = unsampled = 0
    for tid, ticks in after.items():
        delta = max(0, ticks - before.get(tid, 0))
        total += delta
        if tid not in seen and inner_tids.get(tid) not in seen:
            unsampled += delta
    return unsampled / total if total else 0.0


#: Heavy functions of the harness itself in both workers: the random fills that build every
#: input and the NaN fill of strided layouts. Left out of the shares, so that a task with
#: large inputs is judged by where its calls' time went.
HARNESS_FUNCTION = re.compile(
    r"normal_kernel|NormalFill|uniform_kernel|random_kernel|"
    r"random_from_to|bernoulli|masked_fill",
    re.IGNORECASE,
)


#: One library routine spans several symbols (MKL's ``sgemm`` driver, its packing and its
#: micro-kernels); samples are grouped by the routine they belong to.
ROUTINE = re.compile(r"([sdcz]gemm|[sdcz]gemv|dnnl|mkldnn|conv)", re.IGNORECASE)


def _routines(functions: dict[str, int]) -> Counter[str]:
    """Samples per library routine (BLAS, oneDNN, convolutions): the kernels the in-process op
    audit can miss under another op name. Generic ATen kernels (elementwise, the harness's
    random fills such as ``randperm``) are the op audit's business and are left out: a
    numba candidate's harness-built index inputs read as ``randperm_out_cpu`` otherwise."""
    grouped: Counter[str] = Counter()
    for name, count in functions.items():
        found = ROUTINE.search(name)
        if found and not HARNESS_FUNCTION.search(name):
            grouped[found.group(1).lower()] += count
    return grouped


def _call_samples(profile: NativeProfile) -> int:
    harness = sum(n for name, n in profile.heavy_functions.items() if HARNESS_FUNCTION.search(name))
    return max(profile.samples - harness, 0)


def _share(profile: NativeProfile, routine: str) -> float:
    """The routine's share of the samples spent in library kernels (not in the harness's own
    input generation, not in Python): the calls' time, whatever share of the worker's time
    the harness takes around them on a small task."""
    routines = _routines(profile.heavy_functions)
    total = sum(routines.values())
    return routines.get(routine, 0) / total if total else 0.0


def _top_symbol(profile: NativeProfile, routine: str) -> str:
    symbols = [(n, name) for name, n in profile.heavy_functions.items() if routine in name.lower()]
    return max(symbols)[1] if symbols else routine


def _usable(profile: NativeProfile) -> bool:
    return (
        profile.available
        and profile.native
        and profile.samples >= PASSTHROUGH_MIN_SAMPLES
        and bool(profile.heavy_functions)
    )


def _usable_calls(profile: NativeProfile) -> bool:
    """Whether the profile's samples inside model calls can carry kernel-level evidence."""
    return (
        profile.available
        and profile.native
        and profile.samples >= PASSTHROUGH_MIN_SAMPLES
        and bool(_kernels(profile))
    )


def passthrough_evidence(reference: NativeProfile, candidate: NativeProfile) -> str | None:
    """A message when the candidate's time went mostly to the reference's own heavy kernel.

    Evidence needs both profiles native and well sampled, the candidate spending most of its
    samples in one heavy library function, the reference spending a fair share in that same
    function, and the candidate showing (almost) no custom code of its own. Returns None
    otherwise.
    """
    if not (_usable(reference) and _usable(candidate)):
        return None
    calls = _routines(candidate.heavy_functions)
    if not calls:
        return None
    function, _ = calls.most_common(1)[0]
    ref_share, cand_share = _share(reference, function), _share(candidate, function)
    custom_share = candidate.custom_samples / max(_call_samples(candidate), 1)
    if (
        ref_share < REFERENCE_SHARE
        or cand_share < CANDIDATE_DOMINANT_SHARE
        or custom_share > CUSTOM_SHARE_MAX
    ):
        return None
    return (
        f"of the candidate's {candidate.samples} on-CPU samples, {cand_share:.0%} of those "
        f"in library kernels went to {function} ({_top_symbol(candidate, function)}), the "
        f"routine that takes {ref_share:.0%} of the reference's "
        f"({_top_symbol(reference, function)}), with {custom_share:.0%} in code of its own: "
        "it passes the work through to the reference's library routine"
    )


#: A routine that took at least this share of the library-kernel samples of the candidate's
#: checked calls is one its checked calls use too: half the dominant share, so that sampling
#: noise between two windows of the same code never reads as a change of behaviour.
CHECKED_SHARE_SAME = CANDIDATE_DOMINANT_SHARE / 2


#: Kernels that only move or compare data: the harness's probes (input copies and
#: comparisons) in the candidate's worker, the oracle's casts to float64 in the reference's.
#: Never the kernel a passthrough is named by.
DATA_MOVEMENT = re.compile(
    r"copy_kernel|copy_impl|direct_copy|cpu_equal|fill_kernel|"
    r"_to_copy|clone",
    re.IGNORECASE,
)


def _kernels(profile: NativeProfile) -> Counter[str]:
    """Samples per heavy kernel symbol (any ATen kernel, not only library routines) inside
    the model's calls, the harness's input generation and data movement left out."""
    return Counter(
        {
            name: count
            for name, count in profile.call_functions.items()
            if not HARNESS_FUNCTION.search(name) and not DATA_MOVEMENT.search(name)
        }
    )


def _kernel_share(profile: NativeProfile, symbol: str) -> float:
    kernels = _kernels(profile)
    total = sum(kernels.values())
    return kernels.get(symbol, 0) / total if total else 0.0


def dominant_kernel(reference: NativeProfile) -> str | None:
    """The heavy kernel symbol that takes the largest share (at least ``REFERENCE_SHARE``) of
    the reference's kernel samples, or None: what a candidate passing the reference's op
    through would spend its time in, for any op (softmax's own kernel, say), not only a
    library routine."""
    if not _usable_calls(reference):
        return None
    own = [(name, n) for name, n in _kernels(reference).most_common() if not MATH_LEAF.search(name)]
    if not own:
        return None
    symbol = own[0][0]
    return symbol if _kernel_share(reference, symbol) >= REFERENCE_SHARE else None


#: Vectorised math routines that many kernels call (softmax's and ``exp``'s alike): a sample
#: in one names the function, not the op, so none is a reference's dominant kernel. Taken for
#: one, an honest softmax written out in PyTorch (its ``exp``) would share it.
MATH_LEAF = re.compile(r"Sleef_|^__?(exp|log|pow|sin|cos|tanh)f?(_finite)?$|libm[.-]")


#: Share of the candidate's kernel samples in kernels the reference's profile shows too, at
#: least, before its calls count as the reference's kernels: an honest rewrite that shares the
#: dominant kernel by another op (``x + (-y)`` for ``x - y``: ``add``'s kernel) also runs
#: kernels of its own (``neg``).
SAME_KERNELS_SHARE = 0.9


def _shared_kernels(reference: NativeProfile, candidate: NativeProfile) -> float:
    """The share of the candidate's kernel samples in kernels the reference's profile shows."""
    kernels, known = _kernels(candidate), set(_kernels(reference))
    total = sum(kernels.values())
    return sum(n for name, n in kernels.items() if name in known) / total if total else 0.0


def kernel_passthrough_evidence(reference: NativeProfile, candidate: NativeProfile) -> str | None:
    """A message when the candidate's kernel time went mostly to the kernel symbol that
    dominates the reference's profile (:func:`dominant_kernel`), with no code of its own: a
    passthrough of any op (softmax's own kernel, say), where :func:`passthrough_evidence`
    knows only library routines, and nearly all its other kernel time in kernels the
    reference runs too. Honest torch code may share such a kernel (an ``add`` with
    ``alpha`` runs the reference's ``add`` kernel), so the caller weighs it against the op
    audit (``controller/native_audit.py``): suspect only where the candidate's op records name
    no op of the reference's, which forged records then cannot avoid (naming one is a
    ``passthrough`` by the op audit's own rule)."""
    symbol = dominant_kernel(reference)
    if symbol is None or not _usable_calls(candidate):
        return None
    share = _kernel_share(candidate, symbol)
    custom_share = candidate.custom_samples / max(_call_samples(candidate), 1)
    shared = _shared_kernels(reference, candidate)
    if (
        share < CANDIDATE_DOMINANT_SHARE
        or custom_share > CUSTOM_SHARE_MAX
        or shared < SAME_KERNELS_SHARE
    ):
        return None
    return (
        f"of the candidate's {candidate.samples} on-CPU samples, {share:.0%} of those in "
        f"kernels went to {symbol[:160]}, the kernel that takes "
        f"{_kernel_share(reference, symbol):.0%} of the reference's, with "
        f"{custom_share:.0%} in code of its own: it passes the work through to the "
        "reference's kernel"
    )


#: Kernel samples inside the model's calls a window needs before its shares are compared: a
#: timed window's share of one kernel (at 35% or more), and a checked window's (below half
#: that and a quarter of the timed share) at these counts is off by chance in well under one
#: verification in a hundred where both windows ran the same code.
MIN_TIMED_KERNEL_SAMPLES = 20

#: ... and where the checked calls cannot be compared, the timed window's kernel samples that
#: may name the reference's kernel, with nearly all the rest in kernels the reference runs too
#: (an honest rewrite runs kernels of its own) and the op audit naming none of the reference's
#: ops: attack 35c's timed window held 17 (budget 3 s, softmax's lastdim kernel at 41%).
MIN_UNCHECKED_KERNEL_SAMPLES = 12
MIN_CHECKED_KERNEL_SAMPLES = 30


@dataclass
class TimedPassthrough:
    """What the candidate's timed calls showed from outside (:func:`timed_passthrough`)."""

    message: str
    routine: str
    timed_share: float
    checked_share: float | None
    """The routine's share in the checked calls' profile; None when that profile cannot say
    (not sampled, or too few kernel samples inside the calls: a machine that starved the
    window, or calls too short to be caught computing)."""

    @property
    def only_while_timed(self) -> bool:
        """Whether the checked calls, sampled at the same shape, barely used the routine:
        under half the dominant share and under a quarter of the timed calls' share."""
        return self.checked_share is not None and self.checked_share < min(
            CHECKED_SHARE_SAME, self.timed_share / 4
        )


def _known(profile: NativeProfile | None) -> bool:
    return (
        profile is not None
        and profile.available
        and profile.native
        and sum(_kernels(profile).values()) >= MIN_CHECKED_KERNEL_SAMPLES
    )


def timed_passthrough(
    reference: NativeProfile, checked: NativeProfile | None, timed: NativeProfile
) -> TimedPassthrough | None:
    """Passthrough evidence from the candidate's timed calls (sampled from outside during the
    timing rounds, which it cannot tell from checked ones by the sampler), compared with its
    checked calls' profile: a candidate that computes honestly while checked and hands the
    work to the reference's routine while timed shows it here, whatever its own process
    reports (op records, replies). None when the timed calls show no passthrough.

    Two levels: a library routine (GEMM, convolution, oneDNN: :func:`passthrough_evidence`,
    reported whatever the checked calls did, for the caller to weigh), then any kernel symbol
    (:func:`dominant_kernel`: softmax's own kernel, an element-wise loop), reported only when
    the checked calls' profile shows the change, as honest torch code shares such kernels."""
    known = _known(checked)
    message = passthrough_evidence(reference, timed)
    if (
        message is not None
        and sum(_routines(timed.heavy_functions).values()) >= MIN_TIMED_KERNEL_SAMPLES
    ):
        routine, _ = _routines(timed.heavy_functions).most_common(1)[0]
        return TimedPassthrough(
            message=message,
            routine=routine,
            timed_share=_share(timed, routine),
            checked_share=_share(checked, routine) if known and checked else None,
        )
    symbol = dominant_kernel(reference)
    compared = known and checked is not None
    needed = MIN_TIMED_KERNEL_SAMPLES if compared else MIN_UNCHECKED_KERNEL_SAMPLES
    if symbol is None or not _usable_calls(timed) or sum(_kernels(timed).values()) < needed:
        return None
    timed_share = _kernel_share(timed, symbol)
    custom_share = timed.custom_samples / max(_call_samples(timed), 1)
    if timed_share < CANDIDATE_DOMINANT_SHARE or custom_share > CUSTOM_SHARE_MAX:
        return None
    checked_share: float | None = None
    if compared and checked is not None:
        checked_share = _kernel_share(checked, symbol)
        if checked_share >= min(CHECKED_SHARE_SAME, timed_share / 4):
            return None  # the same while checked: the matrix's own rule decides
    elif _shared_kernels(reference, timed) < SAME_KERNELS_SHARE:
        # The checked calls cannot say (too few of their samples fell inside the calls: a
        # fast op at the default shape); as in the matrix's rule, an honest rewrite that
        # shares the dominant kernel by another op runs kernels of its own too.
        return None
    return TimedPassthrough(
        message=f"of the candidate's {timed.samples} on-CPU samples, {timed_share:.0%} of "
        f"those in kernels went to {symbol[:160]}, the kernel that takes "
        f"{_kernel_share(reference, symbol):.0%} of the reference's, with "
        f"{custom_share:.0%} in code of its own: it passes the work through to the "
        "reference's kernel",
        routine=symbol[:160],
        timed_share=timed_share,
        checked_share=checked_share,
    )
