"""Name tables of the static scan: what a reference means, and the names each detector watches."""

from __future__ import annotations

import builtins
import re
from dataclasses import dataclass

from kernelproof.checks.static_scan.findings import StaticCheck
from kernelproof.schema.verdict import Severity

#: Canonical order of the languages the scan reports; ``StaticScan.languages`` follows it.
LANGUAGES: tuple[str, ...] = ("pytorch", "cpp", "cuda", "numba", "triton", "torch.compile")

#: Code excerpts in evidence are cut here: enough to recognise the line, short enough for a report.
MAX_SNIPPET_CHARS = 120

#: Strings folded from literals stop growing here, so ``"a" + "a" + ...`` cannot exhaust memory.
MAX_FOLDED_CHARS = 4096

#: Nesting limit for string folding; real disguises need a handful of levels.
MAX_FOLD_DEPTH = 32

#: The reference class of a KernelBench task; a candidate deriving from it is the reference.
REFERENCE_CLASS_NAMES: frozenset[str] = frozenset({"Model"})


@dataclass(frozen=True)
class Rule:
    """What a reference to one qualified name means."""

    check: StaticCheck
    severity: Severity
    what: str
    """Completes the message "References ...": a short phrase a reviewer understands."""

    builtin: bool = False
    """A bare builtin name: a local definition of the same name shadows it."""


def _rules(check: StaticCheck, severity: Severity, what: str, *names: str) -> dict[str, Rule]:
    return {name: Rule(check, severity, what) for name in names}


def _builtin_rules(
    check: StaticCheck, severity: Severity, what: str, *names: str
) -> dict[str, Rule]:
    return {name: Rule(check, severity, what, builtin=True) for name in names}


_INFO, _WARN = Severity.INFO, Severity.WARN

#: Qualified names (and their prefixes: ``threading`` covers ``threading.Lock``) the scan watches.
#: The longest matching prefix wins, so ``threading.settrace`` is introspection, not concurrency.
RULES: dict[str, Rule] = {
    **_rules(
        StaticCheck.TIMER,
        _INFO,
        "a clock the harness may rely on",
        "time.perf_counter",
        "time.perf_counter_ns",
        "time.time",
        "time.time_ns",
        "time.monotonic",
        "time.monotonic_ns",
        "time.process_time",
        "time.process_time_ns",
        "time.thread_time",
        "time.thread_time_ns",
        "time.clock_gettime",
        "timeit",
        "torch.utils.benchmark",
        "triton.testing",
    ),
    **_rules(
        StaticCheck.TIMER,
        _INFO,
        "a timing event or synchronization",
        "torch.cuda.Event",
        "torch.Event",
        "torch.cpu.Event",
        "torch.cuda.synchronize",
        "torch.cpu.synchronize",
        "torch.synchronize",
        "numba.cuda.synchronize",
        "numba.cuda.event",
        "cupy.cuda.Event",
    ),
    **_rules(StaticCheck.CONCURRENCY, _INFO, "the threading module", "threading", "_thread"),
    **_rules(
        StaticCheck.CONCURRENCY,
        _WARN,
        "a thread, process or fork that can outlive the call",
        "threading.Thread",
        "threading.Timer",
        "threading.start_new_thread",
        "_thread.start_new_thread",
        "_thread.start_new",
        "concurrent.futures",
        "multiprocessing",
        "torch.multiprocessing",
        "os.fork",
        "os.forkpty",
        "os.register_at_fork",
        "torch.jit.fork",
        "torch.futures",
    ),
    **_rules(
        StaticCheck.CONCURRENCY,
        _WARN,
        "asyncio, which can run work after the call returns",
        "asyncio",
    ),
    **_rules(
        StaticCheck.CONCURRENCY,
        _WARN,
        "a side stream a timer on the current stream misses",
        "torch.cuda.Stream",
        "torch.cuda.stream",
        "torch.cuda.ExternalStream",
        "torch.cuda.set_stream",
        "torch.cuda.streams",
        "torch.Stream",
        "numba.cuda.stream",
        "cupy.cuda.Stream",
    ),
    **_builtin_rules(
        StaticCheck.DYNAMIC_CODE,
        _WARN,
        "code built or imported at run time",
        "exec",
        "eval",
        "compile",
        "__import__",
    ),
    **_builtin_rules(
        StaticCheck.DYNAMIC_CODE, _INFO, "a namespace dictionary", "globals", "locals", "vars"
    ),
    **_rules(
        StaticCheck.DYNAMIC_CODE,
        _WARN,
        "code built or imported at run time",
        "importlib.import_module",
        "importlib.__import__",
        "importlib.reload",
        "importlib.util",
        "importlib.machinery",
        "runpy",
        "types.CodeType",
        "types.FunctionType",
        "marshal",
    ),
    **_rules(
        StaticCheck.INTROSPECTION,
        _INFO,
        "runtime introspection",
        "gc",
        "inspect",
        "faulthandler",
        "tracemalloc",
    ),
    **_rules(
        StaticCheck.INTROSPECTION,
        _WARN,
        "object or frame introspection that can find the harness's tensors",
        "gc.get_objects",
        "gc.get_referrers",
        "gc.get_referents",
        "inspect.currentframe",
        "inspect.stack",
        "inspect.getouterframes",
        "inspect.getinnerframes",
        "inspect.trace",
        "inspect.getframeinfo",
        "inspect.getmembers",
        "sys._getframe",
        "sys._current_frames",
        "sys.modules",
        "sys.settrace",
        "sys.setprofile",
        "sys.addaudithook",
        "threading.settrace",
        "threading.setprofile",
        "threading.enumerate",
    ),
    **_rules(StaticCheck.INTROSPECTION, _WARN, "raw memory access", "ctypes"),
    **_rules(StaticCheck.INTROSPECTION, _INFO, "the builtins namespace", "builtins"),
    **_rules(
        StaticCheck.INTROSPECTION,
        _WARN,
        "a hard exit or signal handling that can take the harness down",
        "os._exit",
        "os.kill",
        "os.abort",
        "signal",
    ),
    **_builtin_rules(StaticCheck.IO, _WARN, "file access", "open"),
    **_rules(
        StaticCheck.IO,
        _WARN,
        "file access",
        "io.open",
        "io.FileIO",
        "os.open",
        "os.fdopen",
        "os.read",
        "os.listdir",
        "os.scandir",
        "os.walk",
        "codecs.open",
        "glob",
        "shutil",
        "numpy.load",
        "numpy.loadtxt",
        "numpy.fromfile",
        "numpy.genfromtxt",
        "numpy.memmap",
        "torch.load",
        "torch.from_file",
        "pickle",
        "shelve",
        "mmap",
    ),
    **_rules(
        StaticCheck.IO,
        _INFO,
        "file system helpers",
        "pathlib",
        "tempfile",
        "os.path.exists",
        "os.path.isfile",
        "os.path.isdir",
        "os.path.getsize",
        "os.stat",
        "numpy.save",
        "numpy.savez",
        "torch.save",
    ),
    **_rules(
        StaticCheck.IO,
        _WARN,
        "network access",
        "socket",
        "ssl",
        "urllib",
        "urllib3",
        "requests",
        "http",
        "httpx",
        "aiohttp",
        "ftplib",
        "smtplib",
        "xmlrpc",
    ),
    **_rules(
        StaticCheck.IO,
        _WARN,
        "a subprocess or shell command",
        "subprocess",
        "os.system",
        "os.popen",
        "os.execv",
        "os.execve",
        "os.execl",
        "os.execle",
        "os.execlp",
        "os.execlpe",
        "os.execvp",
        "os.execvpe",
        "os.spawnv",
        "os.spawnve",
        "os.spawnl",
        "os.posix_spawn",
        "os.posix_spawnp",
        "pty",
    ),
    **_rules(
        StaticCheck.CACHING, _INFO, "a memoisation helper", "functools.lru_cache", "functools.cache"
    ),
    **_rules(
        StaticCheck.PRECISION,
        _INFO,
        "mixed-precision execution",
        "torch.autocast",
        "torch.cuda.amp",
        "torch.amp",
        "torch.cpu.amp",
        "torch.set_float32_matmul_precision",
    ),
}

#: Last components matched on any object (``start.elapsed_time(end)``, ``Path.read_text``) when no
#: qualified rule applies; these names are specific enough to mean the same thing everywhere.
ATTRIBUTE_RULES: dict[str, Rule] = {
    **_rules(
        StaticCheck.TIMER,
        _INFO,
        "a clock the harness may rely on",
        "perf_counter",
        "perf_counter_ns",
        "monotonic",
        "monotonic_ns",
        "process_time",
        "process_time_ns",
    ),
    **_rules(
        StaticCheck.TIMER, _INFO, "a timing event or synchronization", "elapsed_time", "synchronize"
    ),
    **_rules(
        StaticCheck.IO, _WARN, "file access", "read_text", "read_bytes", "write_text", "write_bytes"
    ),
    **_rules(
        StaticCheck.INTROSPECTION,
        _WARN,
        "frame or closure internals (frame walking)",
        "f_back",
        "f_locals",
        "f_globals",
        "f_builtins",
        "tb_frame",
        "gi_frame",
        "cr_frame",
        "__globals__",
        "__closure__",
        "__subclasses__",
        "_getframe",
    ),
}

#: Names the scan resolves through: an alias whose value starts here is followed, other local
#: assignments (``out = x``) are not, so ordinary variables never masquerade as modules.
WATCHED_ROOTS: frozenset[str] = frozenset(
    {name.split(".")[0] for name, rule in RULES.items() if not rule.builtin}
    | {
        "torch",
        "numpy",
        "numba",
        "triton",
        "cupy",
        "functools",
        "contextlib",
        "importlib",
        "types",
        "sys",
        "os",
        "time",
        "builtins",
    }
)

#: (language, module root): importing or referencing the root means the source uses the language.
LANGUAGE_ROOTS: tuple[tuple[str, str], ...] = (
    ("pytorch", "torch"),
    ("numba", "numba"),
    ("triton", "triton"),
)

#: Names whose use means the candidate goes through torch.compile (Dynamo and Inductor).
TORCH_COMPILE_NAMES: tuple[str, ...] = ("torch.compile", "torch._dynamo", "torch._inductor")

#: String methods the folder applies to a literal receiver without arguments.
STRING_CASE_METHODS: frozenset[str] = frozenset(
    {"lower", "upper", "strip", "lstrip", "rstrip", "casefold", "title"}
)

#: Names Python provides without an import; a star import never shadows these in our guesses.
PYTHON_BUILTINS: frozenset[str] = frozenset(dir(builtins))

#: Callables that turn a (possibly built) string into an attribute of an object.
ATTRIBUTE_ACCESSORS: frozenset[str] = frozenset({"getattr", "setattr", "delattr", "hasattr"})

#: Callables that turn a (possibly built) string into a module.
DYNAMIC_IMPORTERS: frozenset[str] = frozenset(
    {"__import__", "importlib.import_module", "importlib.__import__"}
)

#: Functions that compile a C++/CUDA extension from source (torch.utils.cpp_extension).
EXTENSION_LOADERS: frozenset[str] = frozenset(
    {"torch.utils.cpp_extension.load_inline", "torch.utils.cpp_extension.load", "load_inline"}
)

#: CuPy kernel constructors: ``RawKernel(code, name)`` defines a CUDA kernel from a string.
CUPY_KERNELS: frozenset[str] = frozenset(
    {"cupy.RawKernel", "cupy.RawModule", "cupy.ElementwiseKernel", "cupy.ReductionKernel"}
)

#: Last components of numba/triton decorators that turn a Python function into a kernel.
KERNEL_DECORATOR_LEAVES: frozenset[str] = frozenset(
    {"jit", "njit", "vectorize", "guvectorize", "cfunc", "stencil", "autotune", "heuristics"}
)

#: Kernel libraries whose import inside a try block makes the kernel path optional.
KERNEL_LIBRARIES: frozenset[str] = frozenset(
    {"triton", "numba", "cupy", "torch.utils.cpp_extension"}
)

#: torch namespaces that do no tensor computation; a handler calling them is not a fallback.
TORCH_NON_COMPUTE_PREFIXES: tuple[str, ...] = (
    "torch.cuda.is_available",
    "torch.cuda.device_count",
    "torch.cuda.current_device",
    "torch.cuda.get_device",
    "torch.cuda.synchronize",
    "torch.device",
    "torch.dtype",
    "torch.utils",
    "torch.no_grad",
    "torch.inference_mode",
    "torch.is_tensor",
    "torch.get_default_dtype",
    "torch.ops",
    "torch.library",
    "torch._C",
    "torch.backends",
    "torch.version",
    "torch.manual_seed",
)

#: Tensor methods that clearly compute (used to spot a torch fallback written as ``x.matmul(w)``).
TENSOR_COMPUTE_METHODS: frozenset[str] = frozenset(
    {
        "matmul",
        "mm",
        "bmm",
        "addmm",
        "baddbmm",
        "einsum",
        "softmax",
        "log_softmax",
        "relu",
        "gelu",
        "silu",
        "sigmoid",
        "tanh",
        "conv1d",
        "conv2d",
        "conv3d",
        "layer_norm",
        "group_norm",
        "batch_norm",
        "cumsum",
        "cumprod",
        "logsumexp",
    }
)

#: ``torch.ops`` namespaces that belong to PyTorch itself; any other one is a registered custom op.
TORCH_OPS_BUILTIN_NAMESPACES: frozenset[str] = frozenset(
    {"aten", "prims", "quantized", "_c10d_functional", "c10d", "profiler", "higher_order"}
)

#: Allocators that hand back memory without initialising it.
EMPTY_ALLOCATORS: frozenset[str] = frozenset(
    {
        "torch.empty",
        "torch.empty_like",
        "torch.empty_strided",
        "numpy.empty",
        "numpy.empty_like",
        "cupy.empty",
        "cupy.empty_like",
        "numba.cuda.device_array",
        "numba.cuda.device_array_like",
    }
)

#: Tensor methods that allocate uninitialised memory.
EMPTY_METHODS: frozenset[str] = frozenset({"new_empty", "new_empty_strided"})

#: Attribute reads that only inspect a tensor's metadata: using them does not write the tensor.
METADATA_ATTRIBUTES: frozenset[str] = frozenset(
    {
        "shape",
        "dtype",
        "device",
        "size",
        "numel",
        "dim",
        "ndim",
        "ndimension",
        "stride",
        "is_contiguous",
        "element_size",
        "nelement",
        "layout",
        "is_cuda",
        "requires_grad",
        "storage_offset",
    }
)

#: Last components of reduced-precision dtypes in torch, numpy, triton, numba and cupy.
LOW_PRECISION_DTYPES: frozenset[str] = frozenset(
    {"float16", "half", "bfloat16", "HalfTensor", "BFloat16Tensor", "fp16", "bf16"}
)

#: Roots whose dtypes ``LOW_PRECISION_DTYPES`` names.
DTYPE_ROOTS: frozenset[str] = frozenset({"torch", "numpy", "triton", "numba", "cupy"})

#: Method calls that cast a tensor down to a lower precision.
DOWNCAST_METHODS: frozenset[str] = frozenset({"half", "bfloat16"})

#: Strings that name a reduced precision in ``.to("...")``, ``.type(...)``, ``dtype="..."``.
LOW_PRECISION_STRINGS: frozenset[str] = frozenset(
    {
        "float16",
        "half",
        "bfloat16",
        "torch.HalfTensor",
        "torch.BFloat16Tensor",
        "torch.float16",
        "torch.bfloat16",
        "torch.half",
    }
)

#: Backend flags that let matmuls and convolutions drop to TF32 or reduced-precision reductions.
REDUCED_PRECISION_FLAGS: frozenset[str] = frozenset(
    {
        "allow_tf32",
        "allow_fp16_reduced_precision_reduction",
        "allow_bf16_reduced_precision_reduction",
    }
)

#: Half and bfloat16 types in C++/CUDA source strings.
CPP_LOW_PRECISION = re.compile(
    r"(?<![\w:])(__half2?|half2|__nv_bfloat162?|__float2half\w*|__half2float|__float2bfloat16\w*|"
    r"__bfloat162float|(?:at|c10|torch)::(?:kHalf|Half|kBFloat16|BFloat16|kFloat16))(?!\w)"
)

#: Threads, processes and side streams created from C++/CUDA source strings.
CPP_CONCURRENCY = re.compile(
    r"(?<![\w:])(std::(?:thread|jthread|async)|pthread_create|fork(?=\s*\()|cudaStreamCreate\w*|"
    r"(?:\w+::)*(?:getStreamFromPool|setCurrentCUDAStream)|cudaLaunchHostFunc|cudaStreamAddCallback)"
    r"(?!\w)"
)

#: A CUDA kernel in a source string.
CUDA_SOURCE_MARKER = re.compile(r"__global__|<<<[^>]*>>>")

#: Components of a module attribute path that hold configuration, not callables to patch.
CONFIG_COMPONENTS: frozenset[str] = frozenset({"backends", "config", "environ", "flags"})

#: Dunder methods that write an attribute when called directly (``time.__setattr__(...)``).
SETATTR_DUNDERS: frozenset[str] = frozenset({"__setattr__", "__delattr__"})

#: Calls that fingerprint an input: a cache keyed on them replays outputs (HACKS.md #9).
FINGERPRINT_METHODS: dict[str, str] = {
    "data_ptr": "pointer",
    "untyped_storage": "pointer",
    "storage": "pointer",
    "tobytes": "content",
    "item": "content",
    "tolist": "content",
}

#: Builtins that fingerprint an object.
FINGERPRINT_BUILTINS: dict[str, str] = {"id": "id", "hash": "hash"}

#: Fingerprints that identify a specific input (as opposed to a shape, which many inputs share).
IDENTITY_FINGERPRINTS: frozenset[str] = frozenset({"pointer", "id", "hash", "content"})

#: Dict methods that look a key up or store it.
DICT_KEY_METHODS: frozenset[str] = frozenset(
    {"get", "setdefault", "pop", "__getitem__", "__setitem__", "__contains__"}
)

#: Memoisation decorators; on a forward or kernel they replay outputs.
MEMO_DECORATORS: frozenset[str] = frozenset({"functools.lru_cache", "functools.cache", "lru_cache"})

#: Methods through which a module's ``__call__`` runs; caching them caches outputs.
FORWARD_NAMES: frozenset[str] = frozenset({"forward", "__call__"})
