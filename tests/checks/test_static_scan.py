"""Tests of the static AST scan: each detector, its disguises, and honest code it must leave alone."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pydantic
import pytest

from kernelproof.checks.static_scan import LANGUAGES, StaticCheck, StaticScan, scan_source
from kernelproof.schema.verdict import Severity

PATH = "candidate.py"


def scan(source: str) -> StaticScan:
    return scan_source(textwrap.dedent(source), PATH)


def checks(result: StaticScan) -> set[str]:
    return {finding.check for finding in result.findings}


def severities(result: StaticScan, check: StaticCheck) -> set[Severity]:
    return {finding.severity for finding in result.findings_for(check)}


def warned(result: StaticScan, check: StaticCheck) -> bool:
    return Severity.WARN in severities(result, check)


# ---------------------------------------------------------------------------------------------
# Honest candidates, one per kernel style: they must give no warning at all.
# ---------------------------------------------------------------------------------------------

HONEST_TORCH = """
import torch
import torch.nn as nn
import torch.nn.functional as F


class ModelNew(nn.Module):
    def __init__(self, dim: int) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        shifted = x - x.amax(dim=self.dim, keepdim=True)
        e = shifted.exp()
        return e / e.sum(dim=self.dim, keepdim=True)
"""

HONEST_CPP = '''
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_source = r"""
#include <torch/extension.h>
torch::Tensor relu_forward(torch::Tensor x) {
    auto out = torch::empty_like(x);
    auto src = x.data_ptr<float>();
    auto dst = out.data_ptr<float>();
    for (int64_t i = 0; i < x.numel(); ++i) dst[i] = src[i] > 0 ? src[i] : 0;
    return out;
}
"""

relu_ext = load_inline(
    name="relu_ext",
    cpp_sources=cpp_source,
    functions=["relu_forward"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.ext = relu_ext

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.ext.relu_forward(x.contiguous())
'''

HONEST_NUMBA = """
import numba
import numpy as np
import torch
import torch.nn as nn


@numba.njit(parallel=True, cache=False)
def add_kernel(a, b, out):
    for i in numba.prange(a.shape[0]):
        out[i] = a[i] + b[i]


class ModelNew(nn.Module):
    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        out = np.empty_like(a.numpy())
        add_kernel(a.numpy(), b.numpy(), out)
        return torch.from_numpy(out)
"""

HONEST_TRITON = """
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.autotune(configs=[triton.Config({"BLOCK": 128})], key=["n"])
@triton.jit
def scale_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offsets = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) * 2.0, mask=mask)


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = torch.empty_like(x)
        n = x.numel()
        grid = lambda meta: (triton.cdiv(n, meta["BLOCK"]),)
        scale_kernel[grid](x, out, n)
        return out
"""

HONEST_CPP_FILE = """
import os
import torch
from torch.utils.cpp_extension import load

_HERE = os.path.dirname(os.path.abspath(__file__))
gelu = load(name="gelu_ext", sources=[os.path.join(_HERE, "gelu.cpp")], extra_cflags=["-O3"])


class ModelNew(torch.nn.Module):
    def __init__(self, in_features: int, out_features: int) -> None:
        super().__init__()
        self.weight = torch.nn.Parameter(torch.randn(out_features, in_features))
        self.pos = torch.nn.Parameter(torch.zeros(1024, out_features))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = torch.empty(x.shape[0], self.weight.shape[0], device=x.device, dtype=x.dtype)
        gelu.gelu_linear(x.contiguous(), self.weight, out)
        return out + self.pos[: x.size(0)]
"""

HONEST = {
    "torch": HONEST_TORCH,
    "cpp": HONEST_CPP,
    "cpp-file": HONEST_CPP_FILE,
    "numba": HONEST_NUMBA,
    "triton": HONEST_TRITON,
}


@pytest.mark.parametrize("style", sorted(HONEST))
def test_honest_candidates_get_no_warning(style: str) -> None:
    result = scan(HONEST[style])
    assert [f for f in result.findings if f.severity != Severity.INFO] == []
    assert checks(result) - {StaticCheck.LANGUAGES.value, StaticCheck.PRECISION.value} == set()


def test_languages_and_custom_kernels_of_honest_styles() -> None:
    assert scan(HONEST_CPP_FILE).languages == ["pytorch", "cpp"]
    assert scan(HONEST_CPP_FILE).custom_kernels == ["gelu_ext"]
    assert scan(HONEST_TORCH).languages == ["pytorch"]
    assert scan(HONEST_TORCH).custom_kernels == []
    cpp = scan(HONEST_CPP)
    assert cpp.languages == ["pytorch", "cpp"]
    assert cpp.custom_kernels == ["relu_ext", "relu_forward"]
    numba = scan(HONEST_NUMBA)
    assert numba.languages == ["pytorch", "numba"]
    assert numba.custom_kernels == ["add_kernel"]
    triton = scan(HONEST_TRITON)
    assert triton.languages == ["pytorch", "triton"]
    assert triton.custom_kernels == ["scale_kernel"]


def test_languages_finding_lists_what_was_detected() -> None:
    result = scan(HONEST_CPP)
    (finding,) = result.findings_for(StaticCheck.LANGUAGES)
    assert finding.severity == Severity.INFO
    assert finding.evidence["languages"] == ["pytorch", "cpp"]
    assert finding.evidence["custom_kernels"] == ["relu_ext", "relu_forward"]
    assert result.findings[0] is finding


def test_cuda_language_from_cuda_sources_and_numba_cuda() -> None:
    result = scan(
        """
        import torch
        from torch.utils.cpp_extension import load_inline as build
        src = "__global__ void k(float* x) { x[threadIdx.x] = 0; }"
        ext = build("zero_ext", "void zero(torch::Tensor x);", src, ["zero"])
        """
    )
    assert result.languages == ["pytorch", "cpp", "cuda"]
    assert result.custom_kernels == ["zero_ext", "zero"]
    numba_cuda = scan(
        """
        from numba import cuda

        @cuda.jit
        def k(x):
            x[cuda.grid(1)] = 0
        """
    )
    assert numba_cuda.languages == ["cuda", "numba"]
    assert numba_cuda.custom_kernels == ["k"]


def test_extension_load_from_files_and_jit_applied_as_call() -> None:
    result = scan(
        """
        import numba
        from torch.utils import cpp_extension
        ext = cpp_extension.load(name="fused", sources=["fused.cpp", "fused_kernel.cu"])
        def body(x):
            return x + 1
        fast_body = numba.njit(parallel=True)(body)
        """
    )
    assert result.custom_kernels == ["fused", "body"]
    assert result.languages == ["pytorch", "cpp", "cuda", "numba"]


def test_torch_compile_detected_directly_and_through_getattr() -> None:
    direct = scan(
        """
        import torch
        class ModelNew(torch.nn.Module):
            @torch.compile
            def forward(self, x):
                return x * 2
        """
    )
    assert "torch.compile" in direct.languages
    hidden = scan(
        """
        import torch as T
        opt = getattr(T, "comp" + "ile")
        """
    )
    assert hidden.languages == ["pytorch", "torch.compile"]
    assert warned(hidden, StaticCheck.DYNAMIC_CODE)


def test_languages_are_a_subset_in_canonical_order() -> None:
    result = scan(HONEST_TRITON + HONEST_NUMBA + HONEST_CPP + "\nf = torch.compile(ModelNew())\n")
    assert result.languages == [lang for lang in LANGUAGES if lang in result.languages]
    assert set(result.languages) == {"pytorch", "cpp", "numba", "triton", "torch.compile"}


# ---------------------------------------------------------------------------------------------
# The contract every finding keeps
# ---------------------------------------------------------------------------------------------


def test_findings_are_ordered_and_located_on_the_offending_line() -> None:
    result = scan(
        """
        import torch

        def forward(x):
            return eval("x * 2")
        """
    )
    (finding,) = result.findings_for(StaticCheck.DYNAMIC_CODE)
    assert finding.location is not None
    assert (finding.location.line, finding.location.column) == (5, 12)
    assert finding.evidence["code"] == "eval"
    lines = [f.location.line for f in result.findings[1:] if f.location is not None]
    assert lines == sorted(lines)


def test_scan_result_is_frozen() -> None:
    result = scan(HONEST_TORCH)
    with pytest.raises(pydantic.ValidationError):
        result.lines_of_code = 3  # type: ignore[misc]


def test_lines_of_code_skip_blanks_and_comments() -> None:
    source = "# header\n\nimport torch  # trailing comment counts\n    # indented comment\nx = 1\n"
    assert scan_source(source, PATH).lines_of_code == 2


def test_module_does_not_import_torch() -> None:
    code = (
        "import sys\n"
        "import kernelproof.checks.static_scan as s\n"
        "s.scan_source('import torch\\nx = torch.empty(3)\\n', 'c.py')\n"
        "assert 'torch' not in sys.modules, 'static_scan imported torch'\n"
    )
    completed = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert completed.returncode == 0, completed.stderr


# ---------------------------------------------------------------------------------------------
# Syntax errors
# ---------------------------------------------------------------------------------------------


def test_syntax_error_becomes_a_finding_with_its_line() -> None:
    result = scan_source("import torch\n\ndef forward(x):\n    return x +\n", PATH)
    (finding,) = result.findings
    assert finding.check == StaticCheck.SYNTAX.value
    assert finding.severity == Severity.WARN
    assert finding.location is not None and finding.location.line == 4
    assert result.languages == [] and result.custom_kernels == []
    assert result.lines_of_code == 3


def test_null_bytes_and_deep_nesting_do_not_raise() -> None:
    assert scan_source("x = 1\x00\n", PATH).findings[0].check == StaticCheck.SYNTAX.value
    deep = "x = " + "(" * 5000 + "1" + ")" * 5000 + "\n"
    result = scan_source(deep, PATH)
    assert result.findings  # a syntax or incomplete finding, never an exception
    assert all(f.severity in (Severity.INFO, Severity.WARN) for f in result.findings)


# ---------------------------------------------------------------------------------------------
# static-fallback
# ---------------------------------------------------------------------------------------------

FALLBACK_PRELUDE = """
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

ext = load_inline(name="mm_ext", cpp_sources="", functions=["mm"])
"""

FALLBACK_PLAIN = (
    FALLBACK_PRELUDE
    + """
class ModelNew(nn.Module):
    def forward(self, a, b):
        try:
            return ext.mm(a, b)
        except RuntimeError:
            return torch.matmul(a, b)
"""
)

#: Disguise: the kernel is renamed twice and the fallback hides in a helper using ``@``.
FALLBACK_RENAMED = (
    FALLBACK_PRELUDE
    + """
fast_path = ext.mm

def _slow(a, b):
    return a @ b

class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.kernel = fast_path

    def forward(self, a, b):
        try:
            out = self.kernel(a, b)
        except Exception:
            out = _slow(a, b)
        return out
"""
)

#: Disguise: both the kernel and the torch op are reached by getattr with built names.
FALLBACK_GETATTR = (
    FALLBACK_PRELUDE
    + """
op = "".join(["ma", "tmul"])

class ModelNew(nn.Module):
    def forward(self, a, b):
        try:
            return getattr(ext, "m" + "m")(a, b)
        except BaseException:
            return getattr(torch, op)(a, b)
"""
)

#: Disguise: the Triton launch sits in a wrapper and the fallback is the reference's forward.
FALLBACK_WRAPPER = """
import torch
import triton
import triton.language as tl

@triton.jit
def k(x_ptr, n):
    pass

def launch(x):
    k[(1,)](x, x.numel())
    return x

class ModelNew(Model):
    def forward(self, x):
        try:
            return launch(x)
        except Exception:
            return super().forward(x)
"""

FALLBACK_GUARDED_BUILD = """
import contextlib
import torch
from torch.utils.cpp_extension import load_inline

try:
    ext = load_inline(name="e", cpp_sources="", functions=["f"])
except Exception:
    ext = None

def forward(x):
    out = torch.zeros_like(x)
    with contextlib.suppress(Exception):
        out = ext.f(x)
    return out
"""

FALLBACK_UNKNOWN_KERNEL = """
import torch.nn.functional as F

def forward(x, kernel):
    try:
        return kernel(x)
    except Exception:
        return F.softmax(x, dim=-1)
"""

FALLBACK_SOURCES: list[str] = [
    FALLBACK_PLAIN,
    FALLBACK_RENAMED,
    FALLBACK_GETATTR,
    FALLBACK_WRAPPER,
    FALLBACK_GUARDED_BUILD,
    FALLBACK_UNKNOWN_KERNEL,
]


def test_fallback_plain_try_except_to_torch() -> None:
    (finding,) = scan(FALLBACK_PLAIN).findings_for(StaticCheck.FALLBACK)
    assert finding.severity == Severity.WARN
    assert finding.evidence["kernels_called"] == ["ext.mm"]
    assert finding.evidence["handler_torch_calls"] == ["torch.matmul"]


def test_fallback_disguised_by_renamed_kernel_and_helper_function() -> None:
    (finding,) = scan(FALLBACK_RENAMED).findings_for(StaticCheck.FALLBACK)
    assert finding.severity == Severity.WARN
    assert finding.evidence["kernels_called"] == ["ext.mm"]
    assert finding.evidence["handler_torch_calls"] == ["_slow"]


def test_fallback_disguised_by_getattr_with_built_names() -> None:
    (finding,) = scan(FALLBACK_GETATTR).findings_for(StaticCheck.FALLBACK)
    assert finding.severity == Severity.WARN
    assert finding.evidence["kernels_called"] == ["ext.mm"]
    assert finding.evidence["handler_torch_calls"] == ["torch.matmul"]


def test_fallback_through_a_wrapper_and_super_forward() -> None:
    (finding,) = scan(FALLBACK_WRAPPER).findings_for(StaticCheck.FALLBACK)
    assert finding.severity == Severity.WARN
    assert finding.evidence["kernels_called"] == ["launch"]
    assert finding.evidence["handler_torch_calls"] == ["super().forward"]


def test_fallback_when_the_build_is_guarded_or_errors_are_suppressed() -> None:
    findings = scan(FALLBACK_GUARDED_BUILD).findings_for(StaticCheck.FALLBACK)
    assert [f.severity for f in findings] == [Severity.WARN, Severity.WARN]
    assert "swallows" in findings[0].message
    assert "suppress" in findings[1].message


def test_handler_computing_with_torch_is_a_fallback_even_without_a_known_kernel() -> None:
    (finding,) = scan(FALLBACK_UNKNOWN_KERNEL).findings_for(StaticCheck.FALLBACK)
    assert finding.severity == Severity.WARN
    assert finding.evidence["handler_torch_calls"] == ["torch.nn.functional.softmax"]


def test_optional_kernel_library_import_is_info() -> None:
    result = scan(
        """
try:
    import triton
except ImportError:
    triton = None
"""
    )
    assert severities(result, StaticCheck.FALLBACK) == {Severity.INFO}


def test_no_fallback_for_honest_kernel_or_loud_handlers() -> None:
    assert scan(HONEST_CPP).findings_for(StaticCheck.FALLBACK) == []
    loud = scan(
        FALLBACK_PRELUDE
        + """
import os

try:
    BLOCK = int(os.environ.get("BLOCK", "128"))
except ValueError:
    BLOCK = 128

class ModelNew(nn.Module):
    def forward(self, a, b):
        try:
            return ext.mm(a, b)
        except RuntimeError as error:
            print("kernel failed")
            raise RuntimeError(f"mm kernel failed for shape {tuple(a.shape)}") from error
"""
    )
    assert loud.findings_for(StaticCheck.FALLBACK) == []


# ---------------------------------------------------------------------------------------------
# static-concurrency
# ---------------------------------------------------------------------------------------------


CONCURRENCY_SNIPPETS: list[str] = [
    "import threading\nthreading.Thread(target=print).start()",
    "from concurrent.futures import ThreadPoolExecutor as Pool\npool = Pool(2)",
    "import multiprocessing as mp\nmp.Process(target=print).start()",
    "import os\npid = os.fork()",
    "import asyncio\nasyncio.get_event_loop()",
    "import torch\ns = torch.cuda.Stream()",
    "import torch\nwith torch.cuda.stream(torch.cuda.Stream()):\n    pass",
    "import threading as th\nT = getattr(th, 'Th' + 'read')",
    'src = """\nvoid go(torch::Tensor x) {\n  auto s = at::cuda::getStreamFromPool();\n}\n"""',
    'src = r"""\n#include <thread>\nvoid go() { std::thread t(work); t.detach(); }\n"""',
]


@pytest.mark.parametrize("snippet", CONCURRENCY_SNIPPETS)
def test_concurrency_is_warned(snippet: str) -> None:
    assert warned(scan(snippet), StaticCheck.CONCURRENCY)


def test_no_concurrency_for_honest_code_and_locks_are_info() -> None:
    for source in HONEST.values():
        assert scan(source).findings_for(StaticCheck.CONCURRENCY) == []
    lock = scan("import threading\n_LOCK = threading.Lock()\n")
    assert severities(lock, StaticCheck.CONCURRENCY) == {Severity.INFO}


# ---------------------------------------------------------------------------------------------
# static-dynamic-code
# ---------------------------------------------------------------------------------------------


DYNAMIC_CODE_SNIPPETS: list[str] = [
    "exec('import time')",
    "y = eval('1 + 1')",
    "code = compile('x = 1', '<s>', 'exec')",
    "m = __import__('os')",
    "import importlib\nm = importlib.import_module('time')",
    # disguises: a renamed builtin, builtins reached by a built name, an f-string module name
    "run = eval\nrun('1')",
    "import builtins\nrun = getattr(builtins, ''.join(['ex', 'ec']))\nrun('x = 1')",
    "import importlib as il\nsuffix = 'me'\nmod = il.import_module(f'ti{suffix}')",
    "__builtins__['ev' + 'al']('1')",
    "import torch\nf = getattr(torch, 'elipmoc'[::-1])",
]


@pytest.mark.parametrize("snippet", DYNAMIC_CODE_SNIPPETS)
def test_dynamic_code_is_warned(snippet: str) -> None:
    assert warned(scan(snippet), StaticCheck.DYNAMIC_CODE)


def test_built_attribute_name_is_reported_with_its_folded_value() -> None:
    result = scan("import time as t\nclock = getattr(t, 'perf_' + 'counter')\n")
    finding = next(
        f for f in result.findings_for(StaticCheck.DYNAMIC_CODE) if "attribute" in f.evidence
    )
    assert finding.evidence == {
        "function": "getattr",
        "attribute": "perf_counter",
        "object": "time",
        "code": "getattr(t, 'perf_' + 'counter')",
    }
    assert result.findings_for(StaticCheck.TIMER)  # the built name resolves to the clock


def test_runtime_computed_attribute_name_is_only_info() -> None:
    result = scan(
        """
        import torch.nn as nn
        class ModelNew(nn.Module):
            def forward(self, x):
                for name in ("a", "b"):
                    x = getattr(self, name)(x)
                return x
        """
    )
    assert severities(result, StaticCheck.DYNAMIC_CODE) == {Severity.INFO}


def test_no_dynamic_code_for_literal_getattr_and_lookalikes() -> None:
    result = scan(
        """
        import re
        import torch
        import torch.nn as nn
        PATTERN = re.compile(r"\\d+")

        def compile(graph):
            return graph

        class ModelNew(nn.Module):
            def forward(self, x):
                w = getattr(self, "weight", None)
                self.compile()
                return compile(x) if w is None else x @ w
        """
    )
    assert result.findings_for(StaticCheck.DYNAMIC_CODE) == []


# ---------------------------------------------------------------------------------------------
# static-timer
# ---------------------------------------------------------------------------------------------


def test_timer_references_are_info() -> None:
    result = scan(
        """
        import time
        from time import perf_counter as pc
        import torch
        start = pc()
        t0 = time.time()
        begin = torch.cuda.Event(enable_timing=True)
        torch.cuda.synchronize()
        ms = begin.elapsed_time(begin)
        """
    )
    timers = result.findings_for(StaticCheck.TIMER)
    assert {f.evidence["name"] for f in timers} == {
        "time.perf_counter",
        "time.time",
        "torch.cuda.Event",
        "torch.cuda.synchronize",
        "begin.elapsed_time",
    }
    assert severities(result, StaticCheck.TIMER) == {Severity.INFO}


MONKEYPATCH_CASES: list[tuple[str, str]] = [
    ("import time\ntime.perf_counter = lambda: 0.0", "time.perf_counter"),
    ("import time as t\nt.perf_counter = lambda: 0.0", "time.perf_counter"),
    ("import torch\ntorch.cuda.synchronize = lambda: None", "torch.cuda.synchronize"),
    ("from torch import cuda as c\nc.synchronize = lambda: None", "torch.cuda.synchronize"),
    ("import torch\ntorch.Tensor.__eq__ = lambda a, b: True", "torch.Tensor.__eq__"),
    ("from torch import Tensor\nTensor.__eq__ = lambda a, b: True", "torch.Tensor.__eq__"),
    ("import torch\nsetattr(torch, 'allclose', lambda *a, **k: True)", "torch.allclose"),
    ("setattr(__import__('ti' + 'me'), 'perf_' + 'counter', lambda: 0.0)", "time.perf_counter"),
    ("import sys\nsys.modules['ti' + 'me'].perf_counter = lambda: 0.0", "time.perf_counter"),
    ("import time\nvars(time)['perf_counter'] = lambda: 0.0", "time.perf_counter"),
    (
        "import torch\nEv = torch.cuda.Event\nEv.elapsed_time = lambda s, e: 0.001",
        "torch.cuda.Event.elapsed_time",
    ),
    (
        "import time\nmod = time\nmod.perf_counter, mod.time = (lambda: 0.0), (lambda: 0.0)",
        "time.perf_counter",
    ),
    ("import time\nobject.__setattr__(time, 'perf_counter', lambda: 0.0)", "time.perf_counter"),
    ("import time\ntime.__setattr__('perf_counter', lambda: 0.0)", "time.perf_counter"),
    ("import time\ntime.__dict__.update(perf_counter=lambda: 0.0)", "time.perf_counter"),
    ("import time\n(m := time).perf_counter = lambda: 0.0", "time.perf_counter"),
    ("from torch import *\ncuda.synchronize = lambda: None", "torch.cuda.synchronize"),
    (
        "def setup():\n    import torch.cuda as tc\n    tc.synchronize = lambda: None",
        "torch.cuda.synchronize",
    ),
]


@pytest.mark.parametrize(("snippet", "target"), MONKEYPATCH_CASES)
def test_monkeypatching_is_warned(snippet: str, target: str) -> None:
    result = scan(snippet)
    patches = [
        f for f in result.findings_for(StaticCheck.TIMER) if f.evidence.get("kind") == "monkeypatch"
    ]
    assert target in {f.evidence["target"] for f in patches}
    assert all(f.severity == Severity.WARN for f in patches)


def test_configuration_and_own_attributes_are_not_monkeypatching() -> None:
    result = scan(
        """
        import os
        import torch
        import torch.nn as nn
        torch.backends.cudnn.benchmark = True
        os.environ["TORCH_CUDA_ARCH_LIST"] = "9.0"

        class ModelNew(nn.Module):
            def __init__(self):
                super().__init__()
                self.timer = 0.0
                self.synchronize_every = 4
        ModelNew.version = 2
        """
    )
    assert result.findings_for(StaticCheck.TIMER) == []
    assert [f for f in result.findings if f.severity == Severity.WARN] == []


# ---------------------------------------------------------------------------------------------
# static-introspection
# ---------------------------------------------------------------------------------------------


INTROSPECTION_SNIPPETS: list[str] = [
    "import gc\nobjs = gc.get_objects()",
    "import gc as g\nrefs = g.get_referrers(object())",
    "import sys\nframe = sys._getframe(1)",
    "import sys\nmods = sys.modules",
    "import sys\nsys.settrace(None)",
    "import inspect\nf = inspect.currentframe().f_back.f_locals",
    "import ctypes\nctypes.memmove(0, 0, 0)",
    "import builtins\nbuiltins.print = lambda *a: None",
    "__builtins__['print'] = None",
    "import os\nos._exit(0)",
    "import signal\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)",
    "try:\n    1 / 0\nexcept Exception as e:\n    caller = e.__traceback__.tb_frame.f_back",
]


@pytest.mark.parametrize("snippet", INTROSPECTION_SNIPPETS)
def test_introspection_is_warned(snippet: str) -> None:
    assert warned(scan(snippet), StaticCheck.INTROSPECTION)


def test_no_introspection_for_honest_code() -> None:
    for source in HONEST.values():
        assert scan(source).findings_for(StaticCheck.INTROSPECTION) == []


# ---------------------------------------------------------------------------------------------
# static-io
# ---------------------------------------------------------------------------------------------


IO_SNIPPETS: list[str] = [
    "data = open('/tmp/answer.bin', 'rb').read()",
    "from pathlib import Path\ntext = Path('out.txt').read_text()",
    "import os\nnames = os.listdir('/tmp')",
    "import glob\nfiles = glob.glob('*.pt')",
    "import numpy as np\na = np.load('expected.npy')",
    "import torch\nt = torch.load('expected.pt')",
    "import socket\ns = socket.create_connection(('example.com', 80))",
    "from urllib.request import urlopen\nurlopen('http://example.com')",
    "import requests\nrequests.get('http://example.com')",
    "import subprocess\nsubprocess.run(['nvidia-smi'])",
    "import os\nos.system('ls')",
    "sp = __import__('sub' + 'process')\nsp.check_output(['ls'])",
]


@pytest.mark.parametrize("snippet", IO_SNIPPETS)
def test_io_is_warned(snippet: str) -> None:
    assert warned(scan(snippet), StaticCheck.IO)


def test_no_io_for_honest_code_or_a_local_open_method() -> None:
    for source in HONEST.values():
        assert scan(source).findings_for(StaticCheck.IO) == []
    result = scan(
        """
        class Pool:
            def open(self):
                return self
        def open(path):
            return path
        p = Pool().open()
        q = open("x")
        """
    )
    assert result.findings_for(StaticCheck.IO) == []


# ---------------------------------------------------------------------------------------------
# static-inheritance
# ---------------------------------------------------------------------------------------------


INHERITANCE_SNIPPETS: list[str] = [
    "class ModelNew(Model):\n    pass",
    "from reference import Model as Base\nclass ModelNew(Base):\n    pass",
    "class Helper(Model):\n    pass\nclass ModelNew(Helper):\n    pass",
    "ModelNew = Model",
    "ModelNew = type('ModelNew', (Model,), {})",
]


@pytest.mark.parametrize("snippet", INHERITANCE_SNIPPETS)
def test_inheritance_from_the_reference_is_warned(snippet: str) -> None:
    result = scan(snippet)
    findings = result.findings_for(StaticCheck.INHERITANCE)
    assert findings and all(f.severity == Severity.WARN for f in findings)
    assert "ModelNew" in {f.evidence["class"] for f in findings}


def test_no_inheritance_finding_for_nn_module_or_a_copied_reference() -> None:
    result = scan(
        """
        import torch.nn as nn
        class Model(nn.Module):
            def forward(self, x):
                return x
        class ModelNew(nn.Module):
            def forward(self, x):
                return x * 1
        """
    )
    assert result.findings_for(StaticCheck.INHERITANCE) == []


# ---------------------------------------------------------------------------------------------
# static-caching
# ---------------------------------------------------------------------------------------------


CACHING_SNIPPETS: list[str] = [
    # keyed on a pointer, through a local variable
    "class ModelNew:\n    def forward(self, x):\n        key = x.data_ptr()\n"
    "        if key in self._cache:\n            return self._cache[key]",
    # a module-level dict keyed on id()
    "_OUT = {}\ndef forward(x):\n    return _OUT.setdefault(id(x), x * 2)",
    # keyed on the input's shape
    "class ModelNew:\n    def forward(self, x):\n        return self.results[tuple(x.shape)]",
    # last-pointer replay
    "class ModelNew:\n    def forward(self, x):\n        if self._last == x.data_ptr():\n"
    "            return self._out\n        self._last = x.data_ptr()",
    # a mutable default argument keyed on a content hash
    "import hashlib\ndef forward(x, _memo={}):\n"
    "    return _memo.get(hashlib.sha1(x.numpy().tobytes()).hexdigest())",
    # memoised forward
    "import functools\nclass ModelNew:\n    @functools.lru_cache(maxsize=None)\n"
    "    def forward(self, x):\n        return x",
    "from functools import cache as memo\n@memo\ndef forward(x):\n    return x",
    "import functools\nclass ModelNew:\n    def forward(self, x):\n        return x\n"
    "    forward = functools.lru_cache()(forward)",
]


@pytest.mark.parametrize("snippet", CACHING_SNIPPETS)
def test_caching_is_warned(snippet: str) -> None:
    assert warned(scan(snippet), StaticCheck.CACHING)


def test_no_caching_for_buffers_sliced_by_shape_or_literal_keys() -> None:
    result = scan(
        """
        import functools
        import torch.nn as nn

        @functools.lru_cache(maxsize=None)
        def block_size(n: int) -> int:
            return 128 if n > 1024 else 32

        class ModelNew(nn.Module):
            def forward(self, x):
                n = x.shape[0]
                pos = self.pos_embedding[: x.size(1)]
                w = self.params["weight"]
                if self.threshold < x.max().item():
                    pass
                self.last_batch = n
                local = {}
                local[x.data_ptr()] = x
                return x + pos + w
        """
    )
    assert not warned(result, StaticCheck.CACHING)
    assert severities(result, StaticCheck.CACHING) <= {Severity.INFO}  # the helper's lru_cache


# ---------------------------------------------------------------------------------------------
# static-uninitialized
# ---------------------------------------------------------------------------------------------


UNINITIALIZED_BODIES: list[str] = [
    "return torch.empty_like(x)",
    "out = torch.empty_like(x)\n    return out",
    "out = x.new_empty(x.shape)\n    return out, out.shape",
    "out = torch.empty(x.shape, dtype=x.dtype, device=x.device)\n    n = out.numel()\n    return out",
]


@pytest.mark.parametrize("body", UNINITIALIZED_BODIES)
def test_unwritten_empty_output_is_info(body: str) -> None:
    result = scan(f"import torch\ndef forward(x):\n    {body}\n")
    findings = result.findings_for(StaticCheck.UNINITIALIZED)
    assert findings and all(f.severity == Severity.INFO for f in findings)


@pytest.mark.parametrize(
    "body",
    [
        "out = torch.empty_like(x)\n    ext.fill(x, out)\n    return out",
        "out = torch.empty_like(x)\n    kernel[(1,)](x, out, x.numel())\n    return out",
        "out = torch.empty_like(x)\n    out.copy_(x)\n    return out",
        "out = torch.empty_like(x)\n    out[:] = x * 2\n    return out",
        "out = torch.empty_like(x)\n    torch.mul(x, 2, out=out)\n    return out",
        "out = torch.zeros_like(x)\n    return out",
    ],
)
def test_written_empty_output_is_not_flagged(body: str) -> None:
    result = scan(f"import torch\ndef forward(x, ext, kernel):\n    {body}\n")
    assert result.findings_for(StaticCheck.UNINITIALIZED) == []


# ---------------------------------------------------------------------------------------------
# static-precision
# ---------------------------------------------------------------------------------------------


PRECISION_SNIPPETS: list[str] = [
    "def f(x):\n    return x.half()",
    "def f(x):\n    return x.bfloat16()",
    "import torch\ndef f(x):\n    return x.to(torch.float16)",
    "import torch\ndef f(x):\n    return torch.zeros(3, dtype=torch.bfloat16)",
    "def f(x):\n    return x.to(dtype='float16')",
    "import torch\ndef f(x):\n    with torch.autocast('cuda'):\n        return x @ x",
    "import torch\ntorch.backends.cuda.matmul.allow_tf32 = True",
    "import torch\ntorch.set_float32_matmul_precision('medium')",
    "src = '''\n__global__ void k(const float* x, __half* y) { y[0] = __float2half(x[0]); }\n'''",
]


@pytest.mark.parametrize("snippet", PRECISION_SNIPPETS)
def test_precision_downcasts_are_info(snippet: str) -> None:
    result = scan(snippet)
    assert severities(result, StaticCheck.PRECISION) == {Severity.INFO}


def test_cpp_half_types_are_located_on_their_line() -> None:
    result = scan('src = """\nint a;\n__half b;\n"""\n')
    (finding,) = result.findings_for(StaticCheck.PRECISION)
    assert finding.location is not None and finding.location.line == 3
    assert finding.evidence["tokens"] == ["__half"]


def test_no_precision_finding_for_upcasts_or_float32() -> None:
    result = scan(
        """
        import torch
        def f(x):
            y = x.float().to(torch.float32)
            return torch.zeros(3, dtype=torch.float32) + y.double()
        """
    )
    assert result.findings_for(StaticCheck.PRECISION) == []


# ---------------------------------------------------------------------------------------------
# The contract every finding keeps, over every sample in this file
# ---------------------------------------------------------------------------------------------

KITCHEN_SINK = """
import os, sys, gc, ctypes, signal, socket, subprocess, threading, asyncio, inspect
import torch
from torch.utils.cpp_extension import load_inline
ext = load_inline(name="e", cpp_sources="", functions=["f"])
exec("x = 1"); eval("1"); compile("1", "s", "eval")
torch.cuda.synchronize = lambda: None
gc.get_objects(); sys._getframe(); sys.modules["torch"]; ctypes.c_void_p(0)
open("answers.pt"); socket.socket(); subprocess.run(["ls"]); os._exit(0)
threading.Thread(target=print).start(); asyncio.run(None); torch.cuda.Stream()
_CACHE = {}
class ModelNew(Model):
    def forward(self, x):
        if id(x) in _CACHE:
            return _CACHE[id(x)]
        try:
            return ext.f(x.half())
        except Exception:
            return torch.relu(x)
    def other(self, x):
        return torch.empty_like(x)
"""


def all_samples() -> list[str]:
    samples = [KITCHEN_SINK, *HONEST.values(), *FALLBACK_SOURCES]
    samples += CONCURRENCY_SNIPPETS + DYNAMIC_CODE_SNIPPETS + INTROSPECTION_SNIPPETS + IO_SNIPPETS
    samples += INHERITANCE_SNIPPETS + CACHING_SNIPPETS + PRECISION_SNIPPETS
    samples += [snippet for snippet, _ in MONKEYPATCH_CASES]
    samples += [f"import torch\ndef forward(x):\n    {body}\n" for body in UNINITIALIZED_BODIES]
    return samples


def test_every_finding_is_supporting_evidence_only() -> None:
    assert all(check.value.startswith("static-") for check in StaticCheck)
    results = [scan(sample) for sample in all_samples()]
    for result in results:
        for finding in result.findings:
            assert finding.severity in (Severity.INFO, Severity.WARN)
            assert finding.check.startswith("static-")
            assert finding.location is not None and finding.location.path == PATH
            assert finding.location.line >= 1
            assert finding.evidence
            assert finding.forces is None
    expected = {check.value for check in StaticCheck} - {
        StaticCheck.SYNTAX.value,
        StaticCheck.INCOMPLETE.value,
    }
    assert checks(results[0]) == expected  # the kitchen sink trips every detector
