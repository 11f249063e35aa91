"""The project's own promises to a new user."""

import re
from pathlib import Path

ROOT = Path(__file__).parent.parent


def test_ci_runs_the_readme_test_command():
    readme = (ROOT / "README.md").read_text()
    blocks = re.findall(r"```sh\n(.*?)\n```", readme, re.S)
    test_command = next(b for b in blocks if "pytest" in b)
    assert test_command in (ROOT / ".ci" / "run").read_text()


def test_procfile_has_the_three_process_types():
    lines = dict(line.split(":", 1) for line in (ROOT / "Procfile").read_text().splitlines() if line.strip())
    assert {k: v.strip() for k, v in lines.items()} == {
        "scheduler": "animetop run scheduler",
        "crawler": "animetop run crawler",
        "worker": "animetop run worker",
    }
