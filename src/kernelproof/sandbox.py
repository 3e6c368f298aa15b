"""The OS sandbox a candidate worker enters before it imports the candidate.

The candidate owns its whole process, so every wall here is built by the kernel, not by
Python: namespaces (user, pid, net, ipc, mount, uts), Landlock (filesystem, signals, abstract
sockets, ptrace of anything outside), seccomp (syscalls that reach other processes or the
kernel), dropped capabilities and resource limits. Each mechanism is tried on its own; what the
kernel refuses is recorded, never silently skipped, and the controller checks from outside
(``/proc``) what the worker says it entered (see :mod:`kernelproof.workers.confinement`).

The process layout inside the pid namespace is::

    P (forked by the forkserver, outside the pid namespace: the controller watches it)
    └── A  pid 1 of the new pid namespace: reaps, relays B's exit status
        └── B  pid 2: the harness, then the candidate

A is a plain init so that B keeps normal signal semantics (pid 1 ignores signals it has no
handler for), and so that every process B starts dies with the namespace.
"""

from __future__ import annotations

import ctypes
import errno
import os
import signal
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field

CLONE_NEWNS = 0x00020000
CLONE_NEWUTS = 0x04000000
CLONE_NEWIPC = 0x08000000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000
NAMESPACE_FLAGS = (
    CLONE_NEWNS | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNET
)

MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 32, 4096, 16384, 1 << 18

#: The namespaces a candidate worker must be in. The user namespace is what lets an ordinary
#: user create the others; the rest hide the controller's siblings, network and IPC.
NAMESPACES = {
    "user": CLONE_NEWUSER,
    "pid": CLONE_NEWPID,
    "net": CLONE_NEWNET,
    "ipc": CLONE_NEWIPC,
    "mnt": CLONE_NEWNS,
    "uts": CLONE_NEWUTS,
}

#: Folders masked by an empty tmpfs in the candidate's mount namespace: they hold the
#: sockets of other processes (the multiprocessing forkserver listens in /tmp, and its
#: protocol unpickles: reaching it would start code outside the sandbox), other workers'
#: scratch folders and shared-memory segments.
MASKED = ("/tmp", "/var/tmp", "/run", "/dev/shm", "/dev/mqueue")

#: Files under /dev that every honest candidate may open (read and write).
DEVICE_FILES = ("/dev/null", "/dev/zero", "/dev/full", "/dev/urandom", "/dev/random", "/dev/tty")

#: Extra device paths a CUDA candidate needs (driver nodes, opened read-write with ioctls).
CUDA_DEVICE_PREFIXES = ("/dev/nvidia", "/dev/dri")

#: Folders every process needs to read: the system's libraries, compilers and headers, /proc
#: (remounted for the new pid namespace, so it shows only the sandbox's processes) and /sys.
SYSTEM_READABLE = (
    "/usr",
    "/lib",
    "/lib64",
    "/lib32",
    "/bin",
    "/sbin",
    "/etc",
    "/opt",
    "/proc",
    "/sys",
    "/dev",
)

#: Syscalls no honest kernel makes and that reach other processes or the kernel itself.
DENIED_SYSCALLS = (
    "ptrace",
    "process_vm_readv",
    "process_vm_writev",
    "kcmp",
    "pidfd_getfd",
    "mount",
    "umount2",
    "pivot_root",
    "chroot",
    "setns",
    "unshare",
    "move_mount",
    "open_tree",
    "fsopen",
    "fsmount",
    "fspick",
    "mount_setattr",
    "bpf",
    "perf_event_open",
    "userfaultfd",
    "keyctl",
    "add_key",
    "request_key",
    "kexec_load",
    "kexec_file_load",
    "init_module",
    "finit_module",
    "delete_module",
    "reboot",
    "swapon",
    "swapoff",
    "acct",
    "quotactl",
    "open_by_handle_at",
    "name_to_handle_at",
    "io_uring_setup",
    "io_uring_enter",
    "io_uring_register",
    "syslog",
    "lookup_dcookie",
    "vhangup",
    "iopl",
    "ioperm",
)

#: Open files a candidate may hold. torch loads a few hundred shared objects; this is ample
#: and stops a descriptor exhaustion attack on the machine.
MAX_OPEN_FILES = 8192

#: Largest file a candidate may write (its build artifacts and scratch files): the cap on all
#: it writes (workers/write_cap.py), which the controller enforces across files.
MAX_FILE_BYTES = 1 << 30

#: Processes a candidate may add to its user's count (compilers, numba/Triton helpers).
EXTRA_PROCESSES = 512

#: Descriptors the waiting processes close up to (the channel, logs, forkserver pipes are far
#: below; a huge RLIMIT_NOFILE must not make closing take seconds).
MAX_INHERITED_FD = 65536


class SandboxUnavailable(Exception):
    """A mechanism the kernel refused; the message says which and why."""


@dataclass
class SandboxPlan:
    """What the candidate may reach. Built by the trusted controller."""

    scratch: str
    """The worker's own folder: its working directory and ``TMPDIR``; read-write."""

    writable: list[str] = field(default_factory=list)
    """Build caches made for this candidate (keyed by its source hash); read-write."""

    readable: list[str] = field(default_factory=list)
    """Folders and files it may read besides the system's: the Python installation, the
    kernelproof package, the task's and the candidate's own files."""

    listable: list[str] = field(default_factory=list)
    """Folders whose entries it may list, but whose files it may read only where
    ``readable`` grants them: the candidate's own folder when that folder is also the
    controller's working folder (see ``workers.pair.own_folder``)."""

    cuda: bool = False


@dataclass
class SandboxState:
    """Which mechanisms are in force, and why any is not. Reported to the controller, which
    checks the namespaces, seccomp and capabilities again from outside."""

    enforced: list[str] = field(default_factory=list)
    missing: dict[str, str] = field(default_factory=dict)

    def note(self, mechanism: str, error: BaseException | None) -> None:
        if error is None:
            self.enforced.append(mechanism)
        else:
            self.missing[mechanism] = str(error)[:300]


# -- syscalls ---------------------------------------------------------------------------------

_LIBC = ctypes.CDLL(None, use_errno=True)
_LIBC.syscall.restype = ctypes.c_long
_LIBC.mount.argtypes = [
    ctypes.c_char_p,
    ctypes.c_char_p,
    ctypes.c_char_p,
    ctypes.c_ulong,
    ctypes.c_char_p,
]


def _check(result: int, what: str) -> int:
    if result < 0:
        code = ctypes.get_errno()
        raise SandboxUnavailable(f"{what}: {os.strerror(code)} (errno {code})")
    return result


def _mount(source: str, target: str, kind: str | None, flags: int, data: str = "") -> None:
    _check(
        _LIBC.mount(
            source.encode(),
            target.encode(),
            kind.encode() if kind else None,
            flags,
            data.encode() if data else None,
        ),
        f"mount {target}",
    )


def _write(path: str, text: str) -> None:
    with open(path, "w") as handle:
        handle.write(text)


# -- namespaces ---------------------------------------------------------------------------------


def enter_namespaces(state: SandboxState) -> bool:
    """Unshare every namespace at once (the user namespace first, which is what lets an
    unprivileged user create the others). Maps the caller's own uid and gid onto themselves:
    files keep their owners, and the process gets no new rights over any of them."""
    uid, gid = os.geteuid(), os.getegid()
    try:
        _check(_LIBC.unshare(NAMESPACE_FLAGS), "unshare")
    except SandboxUnavailable as exc:
        for name in NAMESPACES:
            state.note(f"{name}-namespace", exc)
        return False
    try:
        _write("/proc/self/setgroups", "deny")
        _write("/proc/self/uid_map", f"{uid} {uid} 1\n")
        _write("/proc/self/gid_map", f"{gid} {gid} 1\n")
    except OSError as exc:
        for name in NAMESPACES:
            state.note(f"{name}-namespace", SandboxUnavailable(f"id maps: {exc}"))
        return False
    for name in NAMESPACES:
        state.note(f"{name}-namespace", None)
    return True


def private_mounts(plan: SandboxPlan, state: SandboxState) -> None:
    """Make mount changes private to the sandbox, mask the folders that hold other processes'
    sockets and scratch (re-exposing the paths the candidate needs that live beneath them),
    and give it a fresh /dev/shm."""
    try:
        _mount("none", "/", None, MS_REC | MS_PRIVATE)
        keep = [
            p
            for p in [plan.scratch, *plan.writable, *plan.listable, *plan.readable]
            if os.path.exists(p)
        ]
        handles = {p: os.open(p, os.O_PATH | os.O_CLOEXEC) for p in keep}
        try:
            for folder in MASKED:
                if os.path.isdir(folder):
                    _mount("tmpfs", folder, "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777")
            revealed: list[str] = []
            for path, handle in sorted(handles.items(), key=lambda item: len(item[0])):
                # A folder bound back shows everything beneath it (Landlock still decides what
                # may be opened): one mount, not one per file of a listable folder.
                if any(_beneath(path, folder) for folder in MASKED) and not any(
                    _beneath(path, done) for done in revealed
                ):
                    _reveal(path, handle)
                    revealed.append(path)
        finally:
            for handle in handles.values():
                os.close(handle)
        state.note("private-tmp-and-shm", None)
    except (SandboxUnavailable, OSError) as exc:
        state.note("private-tmp-and-shm", exc)


def _beneath(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def _reveal(path: str, handle: int) -> None:
    """Bind a path hidden by a mask back to where it was, through a descriptor opened before
    the mask went up."""
    if os.path.isdir(f"/proc/self/fd/{handle}"):
        os.makedirs(path, exist_ok=True)
    else:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        open(path, "a").close()
    _mount(f"/proc/self/fd/{handle}", path, None, MS_BIND | MS_REC)


def mount_proc(state: SandboxState) -> None:
    """A /proc for the new pid namespace: it lists only the sandbox's own processes."""
    try:
        _mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
        state.note("private-proc", None)
    except SandboxUnavailable as exc:
        state.note("private-proc", exc)


def fork_into_pid_namespace() -> None:
    """Called in P after unsharing: fork A (pid 1 inside), which forks B and returns in B.
    P and A never return: they wait and relay B's exit status, so the controller sees B's
    death (a signal or an exit code) as P's."""
    child = os.fork()
    if child:
        _relay(child, reap_all=False)
    # A: pid 1 of the new namespace; it dies with P, and every process inside dies with it.
    die_with_parent()
    grandchild = os.fork()
    if grandchild:
        _relay(grandchild, reap_all=True)


def _relay(child: int, *, reap_all: bool) -> None:
    """Wait for ``child``, then exit the way it did. Never returns."""
    for ignored in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(ignored, signal.SIG_IGN)
    # Neither waiter may keep the channel open: the controller must see EOF when B dies.
    os.closerange(3, min(os.sysconf("SC_OPEN_MAX"), MAX_INHERITED_FD))
    while True:
        try:
            pid, status = os.waitpid(-1 if reap_all else child, 0)
        except ChildProcessError:
            os._exit(1)
        except InterruptedError:
            continue
        if pid != child:
            continue
        if os.WIFSIGNALED(status):
            number = os.WTERMSIG(status)
            # Die of the same signal so that the controller reports it (a segfault stays a
            # segfault). Inside the pid namespace a signal to pid 1 needs a default handler
            # installed and is only honoured from an ancestor, so A exits with 128 + signal
            # and P turns that back into the signal.
            _die_of(number)
        code = os.WEXITSTATUS(status)
        if not reap_all and code > 128 and code - 128 in signal.valid_signals():
            _die_of(code - 128)
        os._exit(code)


def _die_of(number: int) -> None:
    if os.getpid() == 1:
        os._exit(128 + number)
    try:
        signal.signal(number, signal.SIG_DFL)
        os.kill(os.getpid(), number)
    except (OSError, ValueError):
        pass
    os._exit(128 + number)


# -- Landlock -----------------------------------------------------------------------------------

_SYS_LANDLOCK_CREATE_RULESET, _SYS_LANDLOCK_ADD_RULE, _SYS_LANDLOCK_RESTRICT_SELF = 444, 445, 446
_LANDLOCK_CREATE_RULESET_VERSION = 1
_RULE_PATH_BENEATH, _RULE_NET_PORT = 1, 2

FS_EXECUTE, FS_WRITE_FILE, FS_READ_FILE, FS_READ_DIR = 1, 2, 4, 8
FS_REMOVE_DIR, FS_REMOVE_FILE, FS_MAKE_CHAR, FS_MAKE_DIR = 16, 32, 64, 128
FS_MAKE_REG, FS_MAKE_SOCK, FS_MAKE_FIFO, FS_MAKE_BLOCK, FS_MAKE_SYM = 256, 512, 1024, 2048, 4096
FS_REFER, FS_TRUNCATE, FS_IOCTL_DEV = 1 << 13, 1 << 14, 1 << 15
NET_BIND_TCP, NET_CONNECT_TCP = 1, 2
SCOPE_ABSTRACT_UNIX_SOCKET, SCOPE_SIGNAL = 1, 2

_FS_BY_ABI = {
    1: (1 << 13) - 1,
    2: (1 << 14) - 1,
    3: (1 << 15) - 1,
    4: (1 << 15) - 1,
    5: (1 << 16) - 1,
}
FS_READ = FS_EXECUTE | FS_READ_FILE | FS_READ_DIR
FS_FILE_ONLY = FS_EXECUTE | FS_WRITE_FILE | FS_READ_FILE | FS_TRUNCATE | FS_IOCTL_DEV


class _RulesetAttr(ctypes.Structure):
    _fields_ = [
        ("handled_access_fs", ctypes.c_uint64),
        ("handled_access_net", ctypes.c_uint64),
        ("scoped", ctypes.c_uint64),
    ]


class _PathBeneathAttr(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


def landlock_abi() -> int:
    """The kernel's Landlock ABI version; 0 when Landlock is absent or disabled."""
    version = _LIBC.syscall(
        _SYS_LANDLOCK_CREATE_RULESET,
        None,
        ctypes.c_size_t(0),
        ctypes.c_uint32(_LANDLOCK_CREATE_RULESET_VERSION),
    )
    return max(0, int(version))


def restrict_filesystem(plan: SandboxPlan, state: SandboxState) -> None:
    """Landlock: read (and execute) only the system and the plan's readable paths; write only
    the scratch folder and the plan's build caches. With ABI 6 and later, also refuse
    signals to, and abstract sockets of, every process outside this sandbox. A Landlock
    domain also forbids ptrace of any process outside it, whatever the capabilities."""
    abi = landlock_abi()
    if abi < 1:
        state.note("landlock", SandboxUnavailable("Landlock is not available in this kernel"))
        return
    handled = _FS_BY_ABI.get(abi, (1 << 16) - 1)
    scoped = (SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL) if abi >= 6 else 0
    attr = _RulesetAttr(handled, 0, scoped)
    size = ctypes.sizeof(_RulesetAttr) if abi >= 6 else 16
    try:
        ruleset = _check(
            _LIBC.syscall(
                _SYS_LANDLOCK_CREATE_RULESET,
                ctypes.byref(attr),
                ctypes.c_size_t(size),
                ctypes.c_uint32(0),
            ),
            "landlock_create_ruleset",
        )
        try:
            read = FS_READ & handled
            write = handled & ~(FS_MAKE_CHAR | FS_MAKE_BLOCK | FS_IOCTL_DEV)
            for path in [*SYSTEM_READABLE, *plan.readable]:
                _allow(ruleset, path, read)
            for path in plan.listable:
                _allow(ruleset, path, FS_READ_DIR & handled)
            for path in DEVICE_FILES:
                _allow(ruleset, path, (FS_READ_FILE | FS_WRITE_FILE | FS_TRUNCATE) & handled)
            if plan.cuda:
                for path in _cuda_nodes():
                    _allow(ruleset, path, (FS_READ_FILE | FS_WRITE_FILE | FS_IOCTL_DEV) & handled)
                # cuInit names the threads it starts by writing /proc/<pid>/task/<tid>/comm,
                # and answers error 304 when it cannot (seen on an H200: CUDA failed under
                # Landlock alone and started once writes were allowed). Only this process's
                # own task folder, resolved now, in the process that will start them: its own
                # threads' attributes, nothing of any other process.
                _allow(
                    ruleset, f"/proc/{os.getpid()}/task", (FS_WRITE_FILE | FS_TRUNCATE) & handled
                )
            for path in [plan.scratch, *plan.writable, "/dev/shm"]:
                _allow(ruleset, path, write)
            _check(_LIBC.prctl(38, 1, 0, 0, 0), "no_new_privs")  # PR_SET_NO_NEW_PRIVS
            _check(
                _LIBC.syscall(
                    _SYS_LANDLOCK_RESTRICT_SELF, ctypes.c_int(ruleset), ctypes.c_uint32(0)
                ),
                "landlock_restrict_self",
            )
        finally:
            os.close(ruleset)
        state.note(f"landlock-abi-{abi}", None)
        if not scoped:
            state.note(
                "landlock-signal-scope",
                SandboxUnavailable(f"Landlock ABI {abi} < 6 cannot scope signals"),
            )
    except (SandboxUnavailable, OSError) as exc:
        state.note("landlock", exc)


def _allow(ruleset: int, path: str, access: int) -> None:
    try:
        handle = os.open(path, os.O_PATH | os.O_CLOEXEC)
    except OSError:
        return  # absent paths are simply not granted
    try:
        if not os.path.isdir(f"/proc/self/fd/{handle}"):
            access &= FS_FILE_ONLY
        rule = _PathBeneathAttr(access, handle)
        _check(
            _LIBC.syscall(
                _SYS_LANDLOCK_ADD_RULE,
                ctypes.c_int(ruleset),
                ctypes.c_int(_RULE_PATH_BENEATH),
                ctypes.byref(rule),
                ctypes.c_uint32(0),
            ),
            f"landlock rule for {path}",
        )
    finally:
        os.close(handle)


def _cuda_nodes() -> list[str]:
    try:
        names = os.listdir("/dev")
    except OSError:
        return []
    return [
        f"/dev/{n}"
        for n in names
        if any(f"/dev/{n}".startswith(prefix) for prefix in CUDA_DEVICE_PREFIXES)
    ]


# -- capabilities, seccomp, limits ------------------------------------------------------------


def drop_capabilities(state: SandboxState) -> None:
    """Drop every capability (the ones the user namespace granted inside it), from the bounding
    set too, so that no later exec regains any: the candidate cannot remount or unmask."""
    try:
        last = int(open("/proc/sys/kernel/cap_last_cap").read())
        for cap in range(last + 1):
            _LIBC.prctl(24, cap, 0, 0, 0)  # PR_CAPBSET_DROP; absent caps fail harmlessly

        class Header(ctypes.Structure):
            _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]

        class Data(ctypes.Structure):
            _fields_ = [
                ("effective", ctypes.c_uint32),
                ("permitted", ctypes.c_uint32),
                ("inheritable", ctypes.c_uint32),
            ]

        header = Header(0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3
        data = (Data * 2)()
        _check(_LIBC.capset(ctypes.byref(header), data), "capset")
        _LIBC.prctl(47, 4, 0, 0, 0)  # PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL
        state.note("no-capabilities", None)
    except (SandboxUnavailable, OSError, ValueError) as exc:
        state.note("no-capabilities", exc)


def filter_syscalls(state: SandboxState) -> None:
    """seccomp: refuse (EPERM) the syscalls in :data:`DENIED_SYSCALLS`, and clone with any
    namespace flag. ``clone3`` answers ENOSYS (its flags are behind a pointer seccomp cannot
    read), so that libc falls back to ``clone``, whose flags it can."""
    try:
        import pyseccomp as seccomp
    except (ImportError, RuntimeError) as exc:
        state.note("seccomp", SandboxUnavailable(f"pyseccomp/libseccomp unavailable: {exc}"))
        return
    try:
        rules = seccomp.SyscallFilter(seccomp.ALLOW)
        for name in DENIED_SYSCALLS:
            try:
                rules.add_rule(seccomp.ERRNO(errno.EPERM), name)
            except (OSError, RuntimeError, ValueError):
                pass  # not a syscall on this architecture
        rules.add_rule(seccomp.ERRNO(errno.ENOSYS), "clone3")
        rules.add_rule(
            seccomp.ERRNO(errno.EPERM),
            "clone",
            seccomp.Arg(
                0, seccomp.MASKED_EQ, NAMESPACE_FLAGS & ~CLONE_NEWNS, NAMESPACE_FLAGS & ~CLONE_NEWNS
            ),
        )
        for flag in NAMESPACES.values():
            rules.add_rule(
                seccomp.ERRNO(errno.EPERM), "clone", seccomp.Arg(0, seccomp.MASKED_EQ, flag, flag)
            )
        rules.load()
        state.note("seccomp", None)
    except (OSError, RuntimeError, ValueError) as exc:
        state.note("seccomp", exc)


def limit_resources(state: SandboxState) -> None:
    """No core dumps, bounded file sizes, descriptors and processes."""
    import resource

    try:
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        resource.setrlimit(resource.RLIMIT_FSIZE, (MAX_FILE_BYTES, MAX_FILE_BYTES))
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        limit = min(MAX_OPEN_FILES, hard) if hard != resource.RLIM_INFINITY else MAX_OPEN_FILES
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(soft, limit), limit))
        processes = _processes_of(os.getuid()) + EXTRA_PROCESSES
        resource.setrlimit(resource.RLIMIT_NPROC, (processes, processes))
        state.note("resource-limits", None)
    except (OSError, ValueError) as exc:
        state.note("resource-limits", exc)


def _processes_of(uid: int) -> int:
    count = 0
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if os.stat(f"/proc/{entry}").st_uid == uid:
                    count += 1
            except OSError:
                pass
    return count


# -- the whole sequence -----------------------------------------------------------------------


def enter(plan: SandboxPlan) -> SandboxState:
    """Confine the calling process (a freshly forked, single-threaded candidate worker).

    Returns in B, the process that goes on to serve requests; P and A stay behind as waiters.
    What could not be enforced is in the returned state; the caller reports it and the
    controller decides the verdict (an unconfined candidate cannot be ``verified`` without
    ``--insecure-sandbox``)."""
    import tempfile

    state = SandboxState()
    os.environ["TMPDIR"] = plan.scratch
    tempfile.tempdir = plan.scratch  # tempfile caches its folder: the forkserver's was /tmp
    namespaced = enter_namespaces(state)
    if namespaced:
        private_mounts(plan, state)
        fork_into_pid_namespace()
        mount_proc(state)
    limit_resources(state)
    restrict_filesystem(plan, state)
    drop_capabilities(state)
    filter_syscalls(state)
    return state


def readable_defaults() -> list[str]:
    """The Python installation and kernelproof itself: everything the harness imports."""
    from kernelproof.paths import PACKAGE_DIR

    paths: list[str] = [sys.prefix, sys.base_prefix, sys.exec_prefix, str(PACKAGE_DIR.parent)]
    paths += [p for p in sys.path if p and os.path.isabs(p)]
    return grantable(os.path.realpath(p) for p in paths if p)


def protected_folders() -> list[str]:
    """Folders no candidate may read: kernelproof's cache (calibrations, compiled helpers,
    other candidates' builds) and the controller's working folder (results stores, reports).
    A grant of any of their parents would expose them, so none is given."""
    from kernelproof.config import cache_dir

    return [os.path.realpath(cache_dir()), os.path.realpath(os.getcwd())]


def holds_protected(path: str) -> bool:
    """Whether granting ``path`` (a folder, recursively) would expose a protected folder."""
    path = os.path.realpath(path)
    return any(_beneath(folder, path) for folder in protected_folders())


def grantable(paths: Iterable[str]) -> list[str]:
    """The paths that may be granted, in order, without duplicates: files always (only that
    file is granted), folders unless they hold a protected folder."""
    kept: list[str] = []
    for path in paths:
        if path not in kept and (os.path.isfile(path) or not holds_protected(path)):
            kept.append(path)
    return kept


#: prctl option: the signal the calling process gets when its parent dies.
PR_SET_PDEATHSIG = 1


def die_with_parent() -> None:
    """Have the kernel kill the calling process (SIGKILL, which a stopped process obeys too)
    when its parent dies. A frozen worker cannot notice that its controller is gone (it would
    otherwise read EOF and exit), so a controller killed while its candidate is stopped would
    leave it stopped forever; the forkserver exits with the controller, and the chain of
    parent-death signals takes the worker and its pid namespace with it."""
    parent = os.getppid()
    try:
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
    except (OSError, AttributeError):
        return
    if os.getppid() != parent:  # the parent died before the request was in place
        os._exit(1)
