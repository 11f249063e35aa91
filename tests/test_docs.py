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
