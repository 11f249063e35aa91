"""The project's own promises to a new user."""

import re
from pathlib import Path

ROOT = Path(__file__).parent.parent


def test_ci_runs_the_readme_test_command():
    readme = (ROOT / "README.md").read_text()
    blocks = re.findall(r"```sh\n(.*?)\n```", readme, re.S)
    test_command = next(b for b in blocks if "pytest" in b)
    assert test_command in (ROOT / ".ci" / "run").read_text()


def test_the_readme_is_read_in_five_minutes_and_its_links_lead_somewhere():
    """At most 150 lines (issue 28): the rest is in docs/. Every link to a file of the repository (the docs pages,
    the screenshot) names one that exists."""
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) <= 150
    targets = [t.split("#")[0] for t in re.findall(r"\]\(([^)\s]+)\)", readme) if "://" not in t]
    assert "docs/concepts/measures.md" in targets and "docs/images/dashboard.png" in targets
    assert [t for t in targets if not (ROOT / t).is_file()] == []


def test_procfile_has_the_three_process_types():
    lines = dict(line.split(":", 1) for line in (ROOT / "Procfile").read_text().splitlines() if line.strip())
    assert {k: v.strip() for k, v in lines.items()} == {
        "scheduler": "animetop run scheduler",
        "crawler": "animetop run crawler",
        "worker": "animetop run worker",
    }
