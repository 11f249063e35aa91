"""The taxonomy data file: the issue's ids, every term reachable, errors an operator can act on, and the file
shipped with the package (found from an installed copy, not only from this checkout)."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from lib.segments.classify import classify
from lib.segments.taxonomy import OTHER, TaxonomyError, default_taxonomy, load_taxonomy, packaged_path

if sys.version_info >= (3, 11):
    import tomllib
else:
    import tomli as tomllib

ROOT = Path(__file__).resolve().parent.parent.parent
ISSUE_IDS = ["acrylic_stand", "acrylic_keychain", "can_badge", "rubber_strap", "plush", "figure", "trading_card",
             "comic", "novel", "doujinshi", "apparel", "cosplay", "poster_tapestry", "clear_file", "shikishi", "disc",
             "game", "other"]


def test_the_ids_are_the_issues_in_order_other_last():
    assert default_taxonomy().ids == ISSUE_IDS


def test_every_term_alone_names_its_type():
    """A term shadowed by its own type's exclusions (a typo in not_in, a veto containing it) could never match."""
    data = tomllib.loads(packaged_path().read_text(encoding="utf-8"))
    for t in data["types"]:
        if t["id"] != OTHER:
            for term in t["terms"]:
                assert t["id"] in classify(term), (t["id"], term)


@pytest.mark.parametrize("text, message", [
    ("[[types]]\nid = 'mug'\n", "'other' (no type matched) is missing"),
    ("[[types]]\nid = 'other'\n[[types]]\nid = 'other'\n", "given twice: other"),
    ("[[types]]\nid = 'Mug'\n", "lower-case"),
    ("[[types]]\nid = 'mug'\nterm = ['マグ']\n[[types]]\nid = 'other'\n", "unknown field(s) term"),
    ("[[types]]\nid = 'mug'\nterms = 'マグ'\n[[types]]\nid = 'other'\n", "terms must be a list"),
    ("[[types]]\nid = 'mug'\npatterns = ['(']\n[[types]]\nid = 'other'\n", "patterns '('"),
    ("[[types]]\nid = 'mug'\nweak_yields_to = ['cup']\n[[types]]\nid = 'other'\n", "unknown type(s) cup"),
    ("[stuffing]\nbefor = ['好きな方']\n[[types]]\nid = 'other'\n", "[stuffing] has unknown field(s) befor"),
    ("[[types]\n", "line 1"),
])
def test_a_bad_file_is_refused_with_where(tmp_path, text, message):
    path = tmp_path / "goods.toml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(TaxonomyError) as e:
        load_taxonomy(path)
    assert message in str(e.value) and str(path) in str(e.value)


@pytest.mark.slow  # builds and installs the package; the fast tier reads the same file from the checkout
def test_the_file_ships_with_the_installed_package(tmp_path):
    """Build and install the package from a clean copy of the sources (no build directory of an earlier build
    to carry the file along), then read the taxonomy from the installed copy, away from this checkout."""
    source = tmp_path / "src"
    source.mkdir()
    for name in ("setup.cfg", "pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source / name)
    for package in ("lib", "models", "actors"):
        shutil.copytree(ROOT / package, source / package, ignore=shutil.ignore_patterns("__pycache__"))
    site = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target", str(site),
                    str(source)], check=True, capture_output=True, timeout=240)
    script = ("from lib.segments.taxonomy import default_taxonomy, packaged_path; "
              "print(packaged_path()); print(','.join(default_taxonomy().ids))")
    env = {**os.environ, "PYTHONPATH": str(site)}
    out = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, env=env, capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 0, out.stderr
    path, ids = out.stdout.splitlines()
    assert Path(path) == site / "lib" / "segments" / "goods_types.toml"
    assert ids.split(",") == ISSUE_IDS
