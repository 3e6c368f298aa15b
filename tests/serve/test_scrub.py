"""What a server publishes: reports with its secrets and paths taken out, and, for
``--private-code``, without the lines of the submitted source."""

from __future__ import annotations

from kernelproof.schema import Artifact, Environment, Finding, Report, Repro, Severity, Verdict
from kernelproof.serve.scrub import (
    PRIVATE_LINE,
    REDACTED,
    Scrubber,
    secret_values,
    server_paths,
    without_source,
)
from kernelproof.serve.supervisor import worker_environment
from kernelproof.serve.worker import WorkerConfig

from .conftest import SUITE

URL = "postgresql+psycopg://kp:Pa55-w0rd-xyz@db.internal:5432/kernelproof"
ENVIRON = {
    "OPENAI_API_KEY": "sk-live-0123456789abcdef",
    "HOME": "/home/op",
    "LANG": "C.UTF-8",
    "MIRROR": "https://bob:hunter22@mirror.example/simple",
    "OMP_NUM_THREADS": "2",
}


def _report(message: str, script: str = "") -> Report:
    return Report(
        verdict=Verdict.BROKEN,
        environment=Environment(device="cpu"),
        findings=[
            Finding(check="crash", severity=Severity.FAIL, forces=Verdict.BROKEN, message=message)
        ],
        repros=[Repro(failure="crash", knobs={}, seed=1, command="python repro.py", script=script)]
        if script
        else [],
        candidate=Artifact(path=f"{SUITE}/../x/submission_1.py", sha256="0" * 64),
        reference=Artifact(path=str(SUITE / "level1" / "19_NewGELU.py"), sha256="1" * 64),
    )


def test_the_store_url_its_password_and_secret_looking_variables_are_secrets():
    secrets = secret_values(URL, ENVIRON)
    for value in (URL, "Pa55-w0rd-xyz", "sk-live-0123456789abcdef", "hunter22"):
        assert value in secrets
    assert "C.UTF-8" not in secrets and "/home/op" not in secrets and "2" not in secrets


def test_secrets_are_redacted_whole_and_where_a_message_was_cut_short():
    scrub = Scrubber.for_server(URL, SUITE, ENVIRON)
    whole = scrub.text(f"environ({{'DB': '{URL}', 'OPENAI_API_KEY': 'sk-live-0123456789abcdef'}})")
    assert "Pa55" not in whole and "sk-live" not in whole and whole.count(REDACTED) == 2
    cut = scrub.text("KeyError: environ({'OPENAI_API_KEY': 'sk-live-0123...")
    assert "sk-live-0123" not in cut and cut.endswith(REDACTED + "...")
    assert scrub.text("speedup 1.3x on seed 0") == "speedup 1.3x on seed 0"


def test_report_paths_of_the_server_become_labels():
    scrub = Scrubber.for_server(URL, SUITE, ENVIRON)
    report = scrub.report(_report(f"failed in {SUITE}/level1/19_NewGELU.py and /tmp/kp-1/x"))
    assert report.reference is not None and report.reference.path == "<suite>/level1/19_NewGELU.py"
    message = report.findings[0].message
    assert str(SUITE) not in message and "/tmp/" not in message and "<tmp>/kp-1/x" in message
    assert all(path.startswith("/") for path, _ in server_paths(SUITE))


def test_private_code_hides_source_lines_frames_and_repro_scripts_only():
    source = (
        "import torch\n\nclass ModelNew(torch.nn.Module):\n"
        "    def forward(self, x):  # secret trick: fold the bias\n"
        "        return launch_my_kernel(x, 0.5)\n"
    )
    traceback = (
        "Traceback (most recent call last):\n"
        '  File "<candidate>", line 5, in forward\n'
        "    return launch_my_kernel(x, 0.5)\n"
        "NameError: a name is not defined"
    )
    public = without_source(_report(traceback, script=source), source)
    message = public.findings[0].message
    assert "launch_my_kernel" not in message and "forward" not in message
    assert message.startswith("Traceback") and message.endswith("NameError: a name is not defined")
    assert (
        public.repros[0].script == PRIVATE_LINE and "fold the bias" not in public.model_dump_json()
    )
    unrelated = without_source(_report("wrong on seed:0"), source)
    assert unrelated.findings[0].message == "wrong on seed:0"


def test_a_worker_gets_no_variable_that_holds_the_store_url():
    config = WorkerConfig(db_url=URL, suite=SUITE, run_id=1)
    environ = worker_environment(
        config,
        {**ENVIRON, "KERNELPROOF_DB": URL, "PGPASSWORD": "Pa55-w0rd-xyz", "PATH": "/usr/bin"},
    )
    assert "KERNELPROOF_DB" not in environ and "PGPASSWORD" not in environ
    assert environ["PATH"] == "/usr/bin" and environ["LANG"] == "C.UTF-8"


def test_a_private_name_that_is_also_a_verdict_or_check_keeps_the_report_valid():
    source = "import torch\nbroken = crash = 1\nclass ModelNew(torch.nn.Module):\n    pass\n"
    public = without_source(_report("the worker crashed: broken pipe in crash handler"), source)
    assert public.verdict is Verdict.BROKEN and public.findings[0].check == "crash"
    assert "broken" not in public.findings[0].message


def test_a_secret_equal_to_a_schema_value_leaves_the_report_valid():
    scrub = Scrubber(secrets=("broken",))
    report = scrub.report(_report("the worker is broken"))
    assert (
        report.verdict is Verdict.BROKEN
        and report.findings[0].message == f"the worker is {REDACTED}"
    )
