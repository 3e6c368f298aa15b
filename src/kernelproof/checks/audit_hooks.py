"""PEP 578 audit hooks in the candidate worker: file, network, process and introspection use.

An audit hook cannot be removed once installed, so a candidate cannot switch it off. Events
raised by Python's and the libraries' own code (torch reading its sources, the C++ build
calling the compiler) are expected; the recorder keeps what falls outside those allowances.
"""

from __future__ import annotations

import os
import site
import sys
import sysconfig
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from types import FrameType
from typing import Any

from kernelproof.checks.probes import Observation, observation

#: Programs a candidate's own build step may start (torch.utils.cpp_extension, Triton, numba).
#: Shells are not among them: a library's own shell-outs are exempt by their caller, and a
#: candidate that starts a shell can do anything through it.
BUILD_TOOLS = frozenset(
    {
        "ninja",
        "c++",
        "g++",
        "gcc",
        "cc",
        "clang",
        "clang++",
        "nvcc",
        "ld",
        "as",
        "which",
        "ldconfig",
        "cicc",
        "ptxas",
        "fatbinary",
        "nvlink",
        "cudafe++",
        "uname",
        "hipcc",
        "x86_64-linux-gnu-g++",
        "x86_64-linux-gnu-gcc",
        "cmake",
        "cl",
    }
)

#: Names libraries give their files in the temp directory (``tempfile``, inductor, Triton).
LIBRARY_TEMP_PREFIXES = ("tmp", "torchinductor_", "triton", "numba", "pymp-")

#: Read-only system locations every library touches. Not the user's home: a candidate's
#: ``HOME`` is its scratch folder, so libraries write there, and the real home's ``.cache``
#: holds kernelproof's cache (``examples/hacks/verifier/40d_cache_poison_home.py``).
SYSTEM_PREFIXES = (
    "/proc/",
    "/sys/",
    "/dev/",
    "/usr/",
    "/lib",
    "/etc/ld.so",
    "/opt/",
    "/etc/localtime",
    "/etc/os-release",
    "/etc/nsswitch.conf",
    "/etc/passwd",
    "/etc/group",
    "/etc/hosts",
)

#: Introspection events worth recording when candidate code (not a library) raises them.
INTROSPECTION_EVENTS = frozenset(
    {
        "gc.get_objects",
        "gc.get_referrers",
        "gc.get_referents",
        "sys._getframe",
        "sys._current_frames",
        "sys.setprofile",
        "sys.settrace",
        "object.__setattr__",
    }
)

#: C functions that reach files, the network or processes; looked up through ctypes by
#: candidate code, they bypass every Python-level audit event.
NATIVE_ESCAPES = frozenset(
    {
        "fopen",
        "fopen64",
        "open",
        "open64",
        "openat",
        "read",
        "fread",
        "socket",
        "connect",
        "system",
        "popen",
        "execve",
        "execv",
        "execvp",
        "fork",
        "vfork",
        "dlopen",
        "mmap",
        "syscall",
    }
)

NETWORK_EVENTS = frozenset(
    {
        "socket.connect",
        "socket.bind",
        "socket.sendto",
        "socket.getaddrinfo",
        "socket.sendmsg",
        "urllib.Request",
    }
)

#: At most this many observations per kind, so a hook firing in a loop cannot flood the report.
MAX_PER_KIND = 20


def _library_roots() -> tuple[str, ...]:
    roots = {sys.prefix, sys.base_prefix, sys.exec_prefix, sysconfig.get_paths()["stdlib"]}
    roots.update(site.getsitepackages())
    roots.add(site.getusersitepackages())
    roots.update(p for p in sys.path if p and "site-packages" in p)
    return tuple(sorted(os.path.realpath(r) for r in roots if r))


@dataclass
class AuditRecorder:
    workdir: str
    candidate_path: str
    allowed_prefixes: tuple[str, ...]
    library_roots: tuple[str, ...]
    read_prefixes: tuple[str, ...] = ()
    """Paths it may read but not write: the candidate's own folder (what of it the sandbox
    grants). A write there is recorded (the sandbox refuses it anyway): writes go to scratch."""
    stdlib_roots: tuple[str, ...] = (sysconfig.get_paths()["stdlib"] + os.sep, "<frozen ")
    pending: list[Observation] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)
    seen: set[tuple[str, str]] = field(default_factory=set)
    active: bool = False

    @classmethod
    def install(
        cls,
        workdir: str,
        candidate_path: str | None,
        readable_paths: Sequence[str] = (),
        own_folder: Sequence[str] = (),
    ) -> AuditRecorder:
        caches = [
            os.environ.get(name)
            for name in (
                "TORCH_EXTENSIONS_DIR",
                "TORCHINDUCTOR_CACHE_DIR",
                "NUMBA_CACHE_DIR",
                "TRITON_CACHE_DIR",
                "XDG_CACHE_HOME",
            )
        ]
        candidate = os.path.realpath(candidate_path or "")
        from kernelproof.paths import PACKAGE_DIR

        package = str(PACKAGE_DIR) + "/"
        # An editable install keeps kernelproof's metadata beside the package; libraries that
        # scan entry points (numba does at start-up) read it.
        metadata = os.path.join(os.path.dirname(package.rstrip("/")), "kernelproof.egg-info/")
        # Not the whole temp directory: a project checked out under /tmp (CI clones often are)
        # would make every task file readable. Only what libraries create there by name.
        scratch = [os.path.join(tempfile.gettempdir(), prefix) for prefix in LIBRARY_TEMP_PREFIXES]
        allowed = [
            os.path.realpath(workdir),
            candidate,
            package,
            metadata,
            *scratch,
            "/dev/shm/",
            *SYSTEM_PREFIXES,
        ]
        allowed += [os.path.realpath(c) for c in caches if c]
        allowed += [os.path.realpath(p) + ("/" if p.endswith("/") else "") for p in readable_paths]
        # The bytecode cache Python writes and reads when it imports the candidate file(s).
        for source in [candidate, *readable_paths]:
            if source.endswith(".py"):
                folder, name = os.path.split(os.path.realpath(source))
                allowed.append(os.path.join(folder, "__pycache__", name[:-3] + "."))
        # Python's bytecode cache beside the candidate's sibling modules (the write fails in
        # the sandbox, and Python carries on without it).
        own = [os.path.realpath(p) + ("/" if p.endswith("/") else "") for p in own_folder]
        allowed += [os.path.join(os.path.dirname(candidate), "__pycache__") + "/"] if own else []
        recorder = cls(
            workdir=workdir,
            candidate_path=candidate,
            allowed_prefixes=tuple(allowed),
            library_roots=_library_roots(),
            read_prefixes=tuple(own),
        )
        sys.addaudithook(recorder._hook)
        return recorder

    @contextmanager
    def quiet(self) -> Iterator[None]:
        """Record nothing while the harness itself acts (sending a reply)."""
        previous, self.active = self.active, True
        try:
            yield
        finally:
            self.active = previous

    def drain(self) -> list[Observation]:
        found, self.pending = self.pending, []
        return found

    # The hook runs for every audited event in the process; keep it cheap and never raise.
    def _hook(self, event: str, args: tuple[Any, ...]) -> None:
        if self.active:
            return
        self.active = True
        try:
            if event == "open":
                self._on_open(args)
            elif event in NETWORK_EVENTS:
                self._record("network", event, f"network access: {event}{_short(args)}")
            elif event == "subprocess.Popen":
                if not self._library_is_caller():
                    self._on_process(args)
            elif event in (
                "os.system",
                "os.exec",
                "os.posix_spawn",
                "os.spawn",
                "os.fork",
                "os.forkpty",
                "pty.spawn",
            ):
                if not self._library_is_caller():
                    self._record("subprocess", event, f"process control: {event}{_short(args)}")
            elif event in INTROSPECTION_EVENTS and self._candidate_is_caller():
                self._record("introspection", event, f"introspection from candidate code: {event}")
            elif (
                event == "ctypes.dlsym"
                and len(args) > 1
                and str(args[1]) in NATIVE_ESCAPES
                and self._candidate_is_caller()
            ):
                self._record(
                    "file-access",
                    f"ctypes:{args[1]}",
                    f"native call to {args[1]} through ctypes: file, network or process "
                    "access that Python's audit events cannot see",
                    symbol=str(args[1]),
                )
        except Exception:  # noqa: BLE001 - an audit hook must never break the worker
            pass
        finally:
            self.active = False

    def _on_open(self, args: tuple[Any, ...]) -> None:
        path = args[0] if args else None
        if not isinstance(path, (str, bytes, os.PathLike)):
            return
        real = os.path.realpath(os.fsdecode(path))
        if real.startswith(self.allowed_prefixes) or real.startswith(self.library_roots):
            return
        mode = args[1] if len(args) > 1 else None
        if real.startswith(self.read_prefixes):
            if not _writes(mode, args[2] if len(args) > 2 else 0):
                return
            self._record(
                "file-access",
                real,
                "write to the candidate's own folder, which is "
                f"read-only (a candidate writes to its scratch folder): {real}",
                path=real,
                mode=str(mode),
            )
            return
        self._record(
            "file-access",
            real,
            f"file access outside the worker's sandbox: {real}",
            path=real,
            mode=str(mode),
        )

    def _on_process(self, args: tuple[Any, ...]) -> None:
        executable = args[0] if args else ""
        argv = args[1] if len(args) > 1 else []
        program = executable or (argv[0] if isinstance(argv, (list, tuple)) and argv else argv)
        name = os.path.basename(os.fsdecode(program)) if program else ""
        if name in BUILD_TOOLS:
            return
        self._record(
            "subprocess",
            name,
            f"started a subprocess: {name}",
            argv=[str(a) for a in argv][:8] if isinstance(argv, (list, tuple)) else str(argv),
        )

    def _library_is_caller(self) -> bool:
        """Whether the first caller outside the standard library is a library (torch's own
        compiler invocations) rather than candidate code."""
        frame: FrameType | None = sys._getframe(2)
        while frame is not None and frame.f_code.co_filename.startswith(self.stdlib_roots):
            frame = frame.f_back
        if frame is None:
            return False
        filename = os.path.realpath(frame.f_code.co_filename)
        return filename.startswith(self.library_roots) and filename != self.candidate_path

    def _candidate_is_caller(self) -> bool:
        """Whether the first caller outside the standard library is candidate code: the
        candidate's file, or code without a real file (exec'd from a string). ``inspect``
        walking frames for the candidate is attributed to the candidate; torch calling
        ``inspect`` for itself is not."""
        frame: FrameType | None = sys._getframe(2)  # [this, _hook, the audited caller...]
        while frame is not None and frame.f_code.co_filename.startswith(self.stdlib_roots):
            frame = frame.f_back
        if frame is None:
            return False
        filename = os.path.realpath(frame.f_code.co_filename)
        if filename == self.candidate_path:
            return True
        return not filename.startswith(self.library_roots) and not os.path.exists(filename)

    def _record(self, kind: str, key: str, message: str, **evidence: Any) -> None:
        if (kind, key) in self.seen or self.counts.get(kind, 0) >= MAX_PER_KIND:
            return
        self.seen.add((kind, key))
        self.counts[kind] = self.counts.get(kind, 0) + 1
        self.pending.append(observation(f"audit-{kind}", message, event=key, **evidence))


#: ``open`` flags that write, create or truncate.
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND


def _writes(mode: Any, flags: Any) -> bool:
    """Whether an ``open`` audit event's mode (``open()``: "r", "wb"...) or flags (``os.open``)
    ask to write."""
    if isinstance(mode, str) and any(c in mode for c in "wax+"):
        return True
    return isinstance(flags, int) and bool(flags & _WRITE_FLAGS)


def _short(args: tuple[Any, ...]) -> str:
    text = repr(args)
    return f" {text[:120]}" if args else ""
