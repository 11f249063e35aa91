"""``python -m lib.docs.generate [--check]``: write the documentation's generated files from the code (settings,
the OpenAPI document, metrics), or with ``--check`` only say which differ from what the code produces (exit 1)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

from lib.docs import configuration, grafana, http_api

ROOT = Path(__file__).resolve().parent.parent.parent

#: Each generated file, relative to the repository's top, and what makes its text.
GENERATED: dict[str, Callable[[], str]] = {
    "docs/reference/configuration.md": configuration.page,
    "docs/reference/api.md": http_api.page,
    "docs/operating/grafana-dashboard.json": grafana.dashboard_json,
}


def generated() -> dict[str, str]:
    """Every generated file's text, by its path (relative to the repository's top)."""
    return {path: make() for path, make in GENERATED.items()}


def stale(root: Path = ROOT) -> list[str]:
    """The generated files whose committed text differs from what the code produces (or that are missing)."""
    out = []
    for path, text in generated().items():
        file = root / path
        if not file.exists() or file.read_text(encoding="utf-8") != text:
            out.append(path)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m lib.docs.generate", description=__doc__)
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 if a generated file is stale")
    args = parser.parse_args(argv)
    if args.check:
        old = stale()
        for path in old:
            print(f"{path}: stale (run python -m lib.docs.generate)", file=sys.stderr)
        return 1 if old else 0
    for path, text in generated().items():
        file = ROOT / path
        file.parent.mkdir(parents=True, exist_ok=True)
        if not file.exists() or file.read_text(encoding="utf-8") != text:
            file.write_text(text, encoding="utf-8")
            print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
