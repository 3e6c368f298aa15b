"""The environment variables a worker starts with: an allowlist the verifier builds, never the
caller's whole environment.

The caller of kernelproof (a shell, an RL trainer, the server, a Ray worker) often holds
secrets in its environment: API keys, tokens, a store URL with its password. A candidate
that raises ``RuntimeError(os.environ)`` or reads ``/proc/self/environ`` must find none of
them, and it must not depend on the caller having set anything to work either (a fresh
machine has no build-cache variables; the verifier gives each candidate its own folders).

Two layers, both built from an allowlist of names:

- :func:`trusted_environment` is what the forkserver is started with, so every worker forked
  from it (reference and candidate alike) holds nothing else in its memory, its ``environ``
  block or ``/proc/<pid>/environ``. It keeps kernelproof's and the libraries' own settings
  (cache folders, thread counts, device selection, the compiler), which trusted code needs.
- :func:`candidate_environment` is exactly what the candidate's process sees once it has
  started: the allowlisted names minus the caller's folders, plus its own scratch as
  ``TMPDIR`` and ``HOME`` and its own build caches.

Worker settings travel over the worker's private pipe (``WorkerSpec``), never here.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

#: Names passed through as they are: the locale, where programs are, the compiler toolchain
#: (torch's C++ builds read ``CC``/``CXX``), device selection and library behaviour switches.
#: None of them carries a credential by convention.
ALLOWED_NAMES = frozenset(
    {
        "PATH",
        "LANG",
        "LANGUAGE",
        "TZ",
        "TERM",
        "USER",
        "LOGNAME",
        "LD_LIBRARY_PATH",
        "CC",
        "CXX",
        "CFLAGS",
        "CXXFLAGS",
        "LDFLAGS",
        "MAX_JOBS",
        "CUDA_HOME",
        "CUDA_PATH",
        "CUDA_VISIBLE_DEVICES",
        "CUDA_DEVICE_ORDER",
        "CUDA_LAUNCH_BLOCKING",
        "ROCM_PATH",
        "HIP_VISIBLE_DEVICES",
        "NVIDIA_VISIBLE_DEVICES",
    }
)

#: Prefixes of library settings passed through (thread counts, torch's, numba's and Triton's
#: switches such as ``TRITON_INTERPRET``), unless the name looks secret (:func:`secret_name`).
ALLOWED_PREFIXES = (
    "LC_",
    "OMP_",
    "MKL_",
    "OPENBLAS_",
    "KMP_",
    "GOMP_",
    "NUMBA_",
    "TRITON_",
    "TORCH_",
    "TORCHINDUCTOR_",
    "TORCHDYNAMO_",
    "PYTORCH_",
    "CUDA_",
    "NCCL_",
)

#: kernelproof's own settings, for trusted workers only (the candidate must not learn where the
#: calibrations and compiled helpers are kept).
TRUSTED_NAMES = frozenset({"HOME", "TMPDIR", "KERNELPROOF_CACHE_DIR", "XDG_CACHE_HOME"})

#: Variables every worker starts with: no compile-worker pools, so that no helper process or
#: thread outlives a call, and idle OpenMP threads that sleep instead of spinning (after a
#: correctness call at full threads, spinning pool threads would read as CPU time off the main
#: thread in the next timed batch, see timing/evidence.py).
WORKER_DEFAULTS = {"TORCHINDUCTOR_COMPILE_THREADS": "1", "OMP_WAIT_POLICY": "PASSIVE"}

#: Build caches a candidate uses, each pointed at its own folder (see
#: ``workers.pair.candidate_build_cache``): the caller's folders, shared across candidates,
#: could be poisoned by one candidate for the next.
BUILD_CACHE_VARIABLES = {
    "TORCH_EXTENSIONS_DIR": "torch_extensions",
    "TORCHINDUCTOR_CACHE_DIR": "torchinductor",
    "NUMBA_CACHE_DIR": "numba",
    "TRITON_CACHE_DIR": "triton",
    "XDG_CACHE_HOME": "xdg",
}

#: Words that mark a variable's value as a secret, whatever else its name says.
_SECRET_WORDS = re.compile(
    r"KEY|TOKEN|SECRET|PASSWORD|PASSWD|PASSPHRASE|CREDENTIAL|AUTH|COOKIE|SESSION|PRIVATE|"
    r"SIGNATURE|CERT|DSN|DATABASE|_DB($|_)|^DB_|(^|_)URL$|(^|_)URI$|WEBHOOK",
    re.IGNORECASE,
)


def secret_name(name: str) -> bool:
    """Whether a variable of this name conventionally holds a secret (``OPENAI_API_KEY``,
    ``HF_TOKEN``, ``DATABASE_URL``, ``KERNELPROOF_DB``...)."""
    return bool(_SECRET_WORDS.search(name))


def allowed(name: str) -> bool:
    """Whether the caller's variable ``name`` may reach a worker at all."""
    if secret_name(name):
        return False
    return name in ALLOWED_NAMES or name.startswith(ALLOWED_PREFIXES)


def trusted_environment(source: Mapping[str, str]) -> dict[str, str]:
    """The forkserver's environment (and so every worker's before it starts): the allowlisted
    names of ``source`` and kernelproof's own settings, with the worker defaults."""
    environment = dict(WORKER_DEFAULTS)
    environment.update(
        {name: value for name, value in source.items() if allowed(name) or name in TRUSTED_NAMES}
    )
    return environment


def candidate_environment(
    source: Mapping[str, str], *, scratch: str, build_caches: Mapping[str, str]
) -> dict[str, str]:
    """Exactly the candidate process's environment: the allowlisted names of ``source``, its
    scratch folder as ``TMPDIR`` and ``HOME`` (libraries that write under the home find a
    writable one, and nothing of the caller's home), and ``build_caches`` (variable to folder)
    overriding any the caller set."""
    environment = dict(WORKER_DEFAULTS)
    environment.update(
        {
            name: value
            for name, value in source.items()
            if allowed(name) and name not in build_caches
        }
    )
    environment.update({"TMPDIR": scratch, "HOME": scratch, **build_caches})
    return environment
