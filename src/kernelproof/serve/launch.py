"""``kernelproof serve`` from the command line: the configuration built and checked, the
exposure refused where the sandbox does not hold, the address printed, then the server run."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from pydantic import ValidationError
from rich.console import Console
from rich.markup import escape
from sqlalchemy.engine import make_url

from kernelproof.config import resolve_settings
from kernelproof.errors import UsageError
from kernelproof.serve.config import ServeConfig
from kernelproof.serve.exposure import check_exposure, is_loopback, sandbox_gaps
from kernelproof.serve.limits import Limits
from kernelproof.store.results import DB_ENV, default_url

__all__ = ["serve_from_cli"]


def serve_from_cli(
    suite: Path,
    *,
    db_url: str | None,
    host: str,
    port: int,
    workers: int,
    ray: str | None,
    tokens: Path,
    profile: str,
    overrides: dict[str, Any],
    limits: dict[str, Any],
    private_code: bool,
    console: Console,
) -> None:
    from kernelproof.serve.server import open_server, run_server

    try:
        config = ServeConfig(
            suite=suite,
            db_url=db_url or default_url(),
            tokens=tokens,
            host=host,
            port=port,
            workers=workers,
            ray=ray,
            profile=profile,
            overrides=overrides,
            limits=Limits(**limits),
            private_code=private_code,
        )
    except ValidationError as exc:
        raise UsageError(f"invalid serve options: {exc}") from None
    settings = resolve_settings(profile=profile, overrides=overrides)
    gaps = None if is_loopback(host) else sandbox_gaps()
    check_exposure(host, gaps, sandboxed=settings.sandbox)
    # Nothing the server starts (its workers, a local Ray cluster, their candidates) inherits
    # the store's URL: the workers get it down their stdin.
    os.environ.pop(DB_ENV, None)
    server = open_server(config)  # the store's URL is valid from here on
    store = make_url(config.db_url).render_as_string(hide_password=True)
    console.print(
        f"kernelproof serve: http://{host}:{port}/ ({workers} worker(s)"
        f"{', on Ray' if ray else ''}; store {escape(store)})"
    )
    run_server(server)
