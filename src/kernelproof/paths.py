"""Where kernelproof itself is installed: a leaf, so that code that needs the package's folder
(the sandbox's readable paths, the audit hook's own-code filter) does not import the package."""

from __future__ import annotations

from pathlib import Path

#: The ``kernelproof`` package folder.
PACKAGE_DIR: Path = Path(__file__).resolve().parent
