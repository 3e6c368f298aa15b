"""Opening a server: the store migrated, the suite read, a run recorded, the workers chosen;
then serving it with uvicorn."""

from __future__ import annotations

from collections.abc import Callable

from kernelproof.config import resolve_settings
from kernelproof.serve.app import Server, create_app
from kernelproof.serve.catalog import SuiteCatalog
from kernelproof.serve.config import SERVE_RUN_SOLUTIONS, ServeConfig
from kernelproof.serve.database import open_store
from kernelproof.serve.leftovers import reap_leftovers, workers_root
from kernelproof.serve.queue import SubmissionQueue
from kernelproof.serve.supervisor import (
    LocalWorkers,
    RayWorkers,
    WorkerPool,
    recover_dead_local_workers,
)
from kernelproof.serve.worker import WorkerConfig

__all__ = ["open_server", "run_server"]

#: Builds the worker pool of a server; the default is :func:`default_pool`.
PoolFactory = Callable[[Server], WorkerPool | None]


def default_pool(server: Server) -> WorkerPool | None:
    """Local worker processes, or Ray actors with ``--ray``; none with ``--workers 0``."""
    config = server.config
    if config.workers == 0:
        return None
    worker = WorkerConfig(
        db_url=config.db_url,
        suite=server.catalog.suite,
        run_id=server.run_id,
        profile=config.profile,
        overrides=config.overrides,
    )
    if config.ray is not None:
        return RayWorkers(
            server.queue,
            worker,
            count=config.workers,
            address=None if config.ray == "local" else config.ray,
        )
    return LocalWorkers(server.queue, worker, count=config.workers)


def open_server(config: ServeConfig, pool_factory: PoolFactory = default_pool) -> Server:
    """Everything a server needs, checked before it listens: the tokens file, the suite, the
    settings and the database (migrated). Submissions left running by workers that died with
    an earlier server are requeued now (not counted as an attempt), and what its workers left
    (candidate processes, scratch folders) is killed and removed."""
    from kernelproof.roofline import machine_fingerprint
    from kernelproof.serve.tokens import TokenBook

    TokenBook.load(config.tokens)  # a missing or bad tokens file stops the server at once
    settings = resolve_settings(profile=config.profile, overrides=config.overrides)
    fingerprint = machine_fingerprint(settings.device)
    catalog = SuiteCatalog.read(config.suite, config.profile, config.overrides, fingerprint)
    store = open_store(config.db_url)
    queue = SubmissionQueue(store)
    run_id = store.start_run(
        suite=catalog.suite,
        solutions=SERVE_RUN_SOLUTIONS,
        settings=settings.model_dump(mode="json"),
        fingerprint=fingerprint,
        device=settings.device,
        label="serve",
    )
    server = Server(config=config, store=store, queue=queue, catalog=catalog, run_id=run_id)
    recover_dead_local_workers(queue)
    reap_leftovers(workers_root(config.db_url, catalog.suite))
    server.pool = pool_factory(server)
    return server


def run_server(server: Server) -> None:
    """Serve until interrupted (Ctrl-C or SIGTERM stop the workers and record the run)."""
    import uvicorn

    uvicorn.run(
        create_app(server),
        host=server.config.host,
        port=server.config.port,
        log_level="warning",
        access_log=False,
    )
