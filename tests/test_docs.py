"""The documentation site (docs/, mkdocs.yml): its generated pages equal what the code produces now, it builds in
strict mode (no broken link, anchor or missing page), the Grafana dashboard covers every exported metric, and the
pages the code and tests cite exist."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from lib.core.settings import SPECS
from lib.docs.generate import GENERATED

ROOT = Path(__file__).parent.parent
DOCS = ROOT / "docs"


@pytest.mark.parametrize("path", sorted(GENERATED))
def test_a_generated_file_equals_what_the_code_produces(path):
    """Nobody copies settings, routes or metrics into the docs by hand: the committed file is the generator's
    output for the code as it is (regenerate with ``python -m lib.docs.generate``)."""
    committed = (ROOT / path).read_text(encoding="utf-8")
    assert committed == GENERATED[path](), f"{path} is stale: run python -m lib.docs.generate"


def test_the_site_builds_in_strict_mode(tmp_path):
    site = tmp_path / "site"
    result = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
                            cwd=ROOT, capture_output=True, text=True, timeout=120,
                            env={"PATH": "/usr/bin:/bin", "NO_MKDOCS_2_WARNING": "1"})
    assert result.returncode == 0, result.stderr
    for page in ("index.html", "concepts/measures.html", "reference/configuration.html", "reference/api.html",
                 "operating/grafana-dashboard.json", "images/dashboard.png"):
        assert (site / page).is_file(), page
    # Python-Markdown nests a list only at four spaces (GitHub at two): a list that did not nest or a list item
    # swallowed by a paragraph shows as a marker in the text, and the definitions would be numbered past 8
    stray = {}
    for page in site.rglob("*.html"):
        text = re.sub(r"<(pre|code)\b.*?</\1>", "", page.read_text(), flags=re.S)
        found = re.findall(r"\n[ \t]*(?:[*+-]|\d+\.) \S.{0,40}", text)
        if found:
            stray[str(page.relative_to(site))] = found
    assert stray == {}
    assert top_level_items((site / "concepts" / "measures.html").read_text(), "ol") == 8


def top_level_items(html: str, kind: str) -> int:
    """How many items the first list of ``kind`` in the page's article has, nested lists' items not counted."""
    from html.parser import HTMLParser

    class Lists(HTMLParser):
        def __init__(self) -> None:
            super().__init__()
            self.open: list[str] = []
            self.level: int | None = None
            self.items = 0
            self.done = False

        def handle_starttag(self, tag, attrs):
            if tag in ("ol", "ul"):
                self.open.append(tag)
                if tag == kind and self.level is None and not self.done:
                    self.level = len(self.open)
            elif tag == "li" and self.level is not None and len(self.open) == self.level:
                self.items += 1

        def handle_endtag(self, tag):
            if tag in ("ol", "ul"):
                if self.level == len(self.open):
                    self.level, self.done = None, True
                self.open.pop()

    parser = Lists()
    parser.feed(html[html.index("<article"):])
    return parser.items


def test_nested_lists_are_indented_four_spaces():
    """GitHub nests a list at two spaces, Python-Markdown (MkDocs) at four: text moved from the README must be
    re-indented, or its nested items become siblings of their parent."""
    shallow = []
    for page in DOCS.rglob("*.md"):
        fence = False
        for number, line in enumerate(page.read_text().splitlines(), 1):
            if line.lstrip().startswith("```"):
                fence = not fence
            elif not fence and re.match(r"^( {1,3}| {5,7})(?:[*+-]|\d+\.) ", line):
                shallow.append(f"{page.relative_to(ROOT)}:{number}: {line.strip()[:40]}")
    assert shallow == []


def test_a_broken_link_fails_the_strict_build(tmp_path):
    """Strict mode with mkdocs.yml's validation is what catches broken links: a site built with that validation
    (two pages; MkDocs' own theme, to be quick), one page linking to a missing anchor and to a missing page,
    does not build, naming both; without them it builds."""
    import yaml

    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text())
    site = tmp_path / "site"
    (site / "docs").mkdir(parents=True)
    (site / "docs" / "index.md").write_text("# Home\n\n[measures](measures.md#heat)\n")
    (site / "docs" / "measures.md").write_text("# Measures\n\n## Heat\n")
    (site / "mkdocs.yml").write_text(yaml.safe_dump({
        "site_name": "t", "strict": config["strict"], "validation": config["validation"],
        "nav": ["index.md", "measures.md"]}))

    def build() -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(tmp_path / "out")],
                              cwd=site, capture_output=True, text=True, timeout=120, env={"PATH": "/usr/bin:/bin"})

    assert build().returncode == 0
    (site / "docs" / "index.md").write_text("# Home\n\n[gone](measures.md#no-such-anchor) [lost](no-such-page.md)\n")
    result = build()
    assert result.returncode != 0
    assert "no-such-anchor" in result.stderr and "no-such-page.md" in result.stderr


def test_the_configuration_page_has_every_setting_with_its_default():
    text = (DOCS / "reference" / "configuration.md").read_text()
    rows = {line.split("|")[1].strip(" `"): line.split("|")[2].strip() for line in text.splitlines()
            if line.startswith("| `")}
    assert list(rows) == [spec.name for spec in SPECS]
    for spec in SPECS:
        expected = "(unset)" if spec.default is None else "(empty)" if spec.default == "" else f"`{spec.default}`"
        assert rows[spec.name] == expected, spec.name


def test_the_api_page_has_every_route_parameter_and_status_of_the_served_document():
    """Read against the document the app serves, fetched through its own route (not the generator's function)."""
    import urllib.request

    from lib.core.settings import load_settings
    from lib.market.read_side import ReadSide
    from lib.web.api import WebContext
    from lib.web.app import create_app
    from lib.web.auth import OperatorAuth
    from lib.web.server import BackgroundServer

    settings = load_settings({})
    server = BackgroundServer(create_app(WebContext(settings=settings, read_side=ReadSide(settings, None),
                                                    status=dict, dead_letters=None, auth=OperatorAuth(None)))).start()
    try:
        with urllib.request.urlopen(f"{server.url}/api/v1/openapi.json", timeout=15) as response:
            doc = json.loads(response.read())
    finally:
        server.stop()
    text = (DOCS / "reference" / "api.md").read_text()
    sections = re.split(r"^### ", text, flags=re.M)
    assert doc["paths"]
    for path, item in doc["paths"].items():
        for method, op in item.items():
            section = next(s for s in sections if s.startswith(f"`{method.upper()} {path}`"))
            for parameter in op.get("parameters", ()):
                row = next(line for line in section.splitlines() if line.startswith(f"| `{parameter['name']}` |"))
                for bound in ("minimum", "maximum", "maxLength"):
                    if bound in parameter["schema"]:
                        assert str(parameter["schema"][bound]) in row, (path, parameter["name"], bound)
            statuses = re.findall(r"^\| `(\d{3})` \|", section, flags=re.M)
            assert statuses == list(op["responses"]), (method, path)
            assert ("**Operator only**" in section) == bool(op.get("security")), (method, path)
    assert "2160" in text and "730" in text  # RETENTION_WINDOW (90 days) and RETENTION_DAILY in hours and days


def exported_metrics() -> set[str]:
    """Every metric the code declares: ours in lib/ (prometheus_client's constructors and the collectors' metric
    families) and Dramatiq's Prometheus middleware's."""
    import dramatiq.middleware.prometheus as dramatiq_prometheus

    pattern = re.compile(r"(?:Histogram|Counter|Gauge|Summary|MetricFamily)\(\s*\"(\w+)\"")
    names = {name for path in (ROOT / "lib").rglob("*.py") for name in pattern.findall(path.read_text())}
    names |= set(pattern.findall(Path(dramatiq_prometheus.__file__).read_text()))
    return names


def test_the_grafana_dashboard_queries_every_exported_metric_and_no_other():
    dashboard = json.loads((DOCS / "operating" / "grafana-dashboard.json").read_text())
    exprs = [target["expr"] for panel in dashboard["panels"] for target in panel.get("targets", ())]
    queried = {re.sub(r"_bucket$", "", name) for expr in exprs
               for name in re.findall(r"\b(?:animetop|dramatiq)_\w+", expr)}
    exported = exported_metrics()
    assert {"animetop_queue_depth", "animetop_crawler_drift", "dramatiq_messages_total"} <= exported
    assert exported - queried == set(), "metrics no panel shows"
    assert queried - exported == set(), "panels reading metrics nobody exports"
    ids = [panel["id"] for panel in dashboard["panels"]]
    assert len(ids) == len(set(ids))
    assert all(panel["datasource"]["uid"] == "${datasource}" for panel in dashboard["panels"] if "targets" in panel)


def test_the_metrics_page_describes_every_metric_of_ours():
    text = (DOCS / "operating" / "metrics.md").read_text()
    missing = [name for name in exported_metrics() if name.startswith("animetop_") and f"`{name}" not in text]
    assert missing == []


def test_the_measures_page_keeps_its_numbered_definitions():
    """Tests and code cite "definition N" of docs/concepts/measures.md: the eight stay numbered 1 to 8."""
    text = (DOCS / "concepts" / "measures.md").read_text()
    numbers = [int(n) for n in re.findall(r"^(\d+)\. \*\*", text, flags=re.M)]
    assert numbers == list(range(1, 9))


def test_the_benchmarks_page_names_every_benchmark_and_which_run_only_when_named():
    from bench.__main__ import BENCHMARKS, ONLY_NAMED

    opening = (DOCS / "benchmarks.md").read_text().split("Timings live here", 1)[0]
    default, named = opening.split("run only when", 1)
    assert set(re.findall(r"`(\w+)`", default)) == set(BENCHMARKS) - ONLY_NAMED
    assert set(re.findall(r"`(\w+)`", named)) == ONLY_NAMED


def test_every_docs_page_the_code_and_tests_cite_exists():
    cited: dict[str, set[str]] = {}
    for folder in ("lib", "actors", "models", "bench", "tests", ".ci"):
        for path in (ROOT / folder).rglob("*"):
            if path.is_file() and path.suffix in ("", ".py", ".js", ".html", ".md"):
                for page in re.findall(r"docs/[\w/.-]+?\.(?:md|json)", path.read_text(errors="replace")):
                    cited.setdefault(page, set()).add(str(path.relative_to(ROOT)))
    missing = {page: sorted(where) for page, where in cited.items() if not (ROOT / page).is_file()}
    assert "docs/concepts/measures.md" in cited
    assert missing == {}


# Development history and design documents outside the repository, which no user or newcomer can open: pages and
# comments state results with the command that reproduces them and cite docs/ pages, never these.
HISTORY = re.compile(
    r"(?<![a-z])seed[\s_-]*0\d\d(?!\d)"  # the design documents ("seed 000 §5.5", "seed 002's")
    r"|\bsessions?\s+\d+"                  # "session 11's code"
    r"|\bissues?\s+#?\d+"                  # "issue 26 point 1"
    r"|\bother\s+engineers\b"
    r"|\b(?:before|after|until)\s+this\s+change\b",
    re.I)
# Only where no CSS colour can be: an issue or pull request by number, a commit id (7 to 40 hex digits, letters and
# digits mixed; the all-digit ones are checked against the repository's commits below)
REFERENCE = re.compile(r"(?<![\w&#/])#\d{1,5}\b|\b(?=[0-9a-f]*[a-f])(?=[0-9a-f]*\d)[0-9a-f]{7,40}\b", re.I)
DIGITS = re.compile(r"\b\d{7,40}\b")
CODE = ("lib", "actors", "models", "bench")
#: Mentions left to the page's owner: architecture.md is edited elsewhere; these, and no more, until it is.


def python_comments(source: str) -> list[tuple[int, str]]:
    """The comments and docstrings of a Python module, each with its first line: what a reader takes as prose."""
    import ast
    import io
    import tokenize

    found = [(token.start[0], token.string) for token in tokenize.generate_tokens(io.StringIO(source).readline)
             if token.type == tokenize.COMMENT]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) \
                    and isinstance(first.value.value, str):
                found.append((first.lineno, first.value.value))
    return found


def prose() -> list[tuple[str, int, str, bool]]:
    """(file, line, text, whether references by number and hex may be looked for): the docs pages and README
    whole, the Python comments and docstrings of the code, the other text files of the code whole (their CSS
    colours and hex data keep them to the word patterns)."""
    out = []
    for page in [ROOT / "README.md", *sorted(DOCS.rglob("*.md"))]:
        out.append((str(page.relative_to(ROOT)), 1, page.read_text(encoding="utf-8"), True))
    for folder in CODE:
        for path in sorted((ROOT / folder).rglob("*")):
            if not path.is_file() or "vendor" in path.parts or path.suffix in (".pyc", ".png", ".svg"):
                continue
            name = str(path.relative_to(ROOT))
            if path.suffix == ".py":
                out += [(name, line, text, True) for line, text in python_comments(path.read_text(encoding="utf-8"))]
            elif path.suffix in (".md", ".toml", ".js", ".html", ".css", ".txt", ".sql", ".lua"):
                out.append((name, 1, path.read_text(encoding="utf-8"), False))
    return out


def history_in(text: str, references: bool = True) -> list[tuple[str, int]]:
    """Each mention found (its words lower-cased and joined by single spaces) with its offset in ``text``."""
    matches = [*HISTORY.finditer(text), *(REFERENCE.finditer(text) if references else ())]
    return [(" ".join(m.group(0).lower().split()), m.start()) for m in matches]


def commits_among(words: set[str]) -> set[str]:
    """Those of ``words`` that name a commit of this repository (none where git or its history is missing)."""
    if not words or not (ROOT / ".git").exists():
        return set()
    result = subprocess.run(["git", "cat-file", "--batch-check"], cwd=ROOT, capture_output=True, text=True,
                            input="".join(f"{word}^{{commit}}\n" for word in sorted(words)), timeout=60)
    lines = result.stdout.splitlines() if result.returncode == 0 else []
    return {word for word, line in zip(sorted(words), lines) if not line.endswith("missing")
            and not line.endswith("ambiguous")}


def test_no_development_history_or_outside_design_documents():
    """Docs pages, the README and the code's comments speak to users and cite docs/ pages: no session, issue or
    commit, no design document outside the repository ("seed 000"), no "other engineers"."""
    found: dict[tuple[str, str], list[int]] = {}
    digits: dict[str, list[tuple[str, int]]] = {}
    for name, first, text, references in prose():
        for words, at in history_in(text, references):
            found.setdefault((name, words), []).append(first + text.count("\n", 0, at))
        if references:
            for match in DIGITS.finditer(text):
                digits.setdefault(match.group(0), []).append((name, first + text.count("\n", 0, match.start())))
    for word in commits_among(set(digits)):
        for name, first in digits[word]:
            found.setdefault((name, word), []).append(first)
    assert found == {}


@pytest.mark.parametrize("text", [
    "on the storage layout before issue 26 point 1's (commit 7d39dfd; the fill's sizes",
    "measured in session\n12, the same on session 11's code",
    "(seed 000 §5.5's single SET, re-expired on every add)",
    "Seed 001 calls a scheduled job a \"collector\"",
    "def test_defaults_follow_seed_000_appendix_a",
    "beside other engineers' work",
    "| 1,000-item result | before (8f639b8) | after |",
    "fixed in #27",
    "the layout before this change on the same bench",
])
def test_the_history_patterns_catch_what_they_are_for(text):
    assert history_in(text)


@pytest.mark.parametrize("text", [
    "Python 3.11, SQLite/MariaDB 10.11, Redis 7.0", "color: #1e90ff", "MESSAGE_MAX_BYTES 16777216",
    "the session cookie POST /api/v1/session sets", "random.Random(seed) with seed=7, a seeded order",
    "Conover (3rd ed., 1999), §3.2", "≤ 2147483647", "[Segments](concepts/measures.md#segments)",
    "definition 8", "#: The default seed: an interval is a function of its data.", "deadbeef", "&#12345;",
])
def test_the_history_patterns_pass_what_users_need(text):
    assert history_in(text) == []
