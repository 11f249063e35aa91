"""/api/v1 fuzzed against its own OpenAPI document by Schemathesis, with every check it has (``--checks all``:
no 5xx, documented statuses, content types, headers and bodies, schema-valid requests accepted and
schema-violating ones refused, 405 with a true ``Allow`` for undocumented methods, authentication enforced...).

The real application (uvicorn on a loopback port) over the market data of three IPs and three real dead letters
(the ``dashboard`` and ``dead`` fixtures). With an operator token configured, every request carries it, and for
each operator operation Schemathesis also sends it without credentials and with wrong ones (``ignored_auth``);
read-only, the operations whose answers depend on the token are fuzzed again. The run is seeded and bounded: a
failure reproduces with the ``st replay`` or ``curl`` line it prints.
"""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from .conftest import TOKEN, call

#: Fixed so that a run is reproducible (and no example database carries cases from one run to the next).
SEED = 25
#: Cases per operation in the fuzzing phase; the coverage phase adds each parameter's boundary and invalid values.
EXAMPLES = 15
#: A hung request or run fails the test instead of stalling it.
REQUEST_TIMEOUT = 15
RUN_TIMEOUT = 240.0
#: The operations whose answers depend on the operator token (the read-only application's run).
OPERATOR_PATHS = r"^/api/v1/(deadletters/|session|meta|ips/\{ip_id\}/characters)"
#: The operations that change something: read-only, they refuse everything (401/403).
CHANGES = {"POST /api/v1/deadletters/purge", "POST /api/v1/deadletters/requeue", "PUT /api/v1/ips/{ip_id}/characters",
           "POST /api/v1/ips/{ip_id}/characters", "DELETE /api/v1/ips/{ip_id}/characters/{name}"}


def schemathesis(url: str, tmp_path, *options: str) -> str:
    """Run Schemathesis's CLI on the document at ``url``; its report, once it passed."""
    command = [sys.executable, "-m", "schemathesis.cli", "run", f"{url}/api/v1/openapi.json",
               "--checks", "all", "--max-examples", str(EXAMPLES), "--seed", str(SEED),
               "--generation-database", "none", "--workers", "1", "--request-timeout", str(REQUEST_TIMEOUT),
               "--no-color", "--suppress-health-check", "too_slow", *options]
    run = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=RUN_TIMEOUT)
    assert run.returncode == 0, run.stdout[-30000:] + run.stderr[-5000:]
    return run.stdout


def summary(report: str) -> tuple[int, int, list[str], set[str]]:
    """From a run's report: the operations selected and tested, the titles of its warnings, and the operations
    its warnings name."""
    selected = re.search(r"Selected: (\d+)/", report)
    tested = re.search(r"Tested: (\d+)", report)
    assert selected and tested, report
    warnings = report.split("=== WARNINGS ===", 1)[1].split("=== SUMMARY ===")[0] if "=== WARNINGS ===" in report \
        else ""
    titles = re.findall(r"^\s*⚠️ (.+)$", report.split("=== SUMMARY ===")[-1], re.MULTILINE)
    return int(selected[1]), int(tested[1]), titles, set(re.findall(r"^\s+- (\w+ /\S+)$", warnings, re.MULTILINE))


@pytest.mark.usefixtures("dead")
def test_the_api_keeps_to_its_openapi_document(dashboard, tmp_path):
    operator = dashboard.token is not None
    if operator:
        report = schemathesis(dashboard.url, tmp_path, "--header", f"Authorization: Bearer {TOKEN}")
    else:
        report = schemathesis(dashboard.url, tmp_path, "--include-path-regex", OPERATOR_PATHS)
    selected, tested, warnings, named = summary(report)
    assert tested == selected > 0, report
    if operator:
        # every operation of the document, the segments of an IP's listings among them
        doc = call(f"{dashboard.url}/api/v1/openapi.json").json()
        operations = {f"{method.upper()} {path}" for path, item in doc["paths"].items() for method in item}
        assert "GET /api/v1/ips/{ip_id}/segments" in operations and selected == len(operations), report
        assert warnings == [] and "No issues found" in report, report
    else:
        # read-only: the changes refuse everything (403), as they must; nothing else is amiss
        assert warnings == [f"Authentication failed: {len(CHANGES)} operations returned only 401/403 responses"], \
            report
        assert named == CHANGES, report
