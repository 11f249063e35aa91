"""No SQL is built from strings: a scan of the code base fails on SQL built with f-strings, ``format`` or
``%`` (Peewee builds every query)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


# -- no SQL built from strings, anywhere in the code ----------------------------------------------------------

#: Calls whose first argument is SQL text.
SQL_SINKS = {"execute_sql", "SQL", "raw", "RawQuery", "execute", "executemany", "executescript", "mogrify"}
#: Reviewed exceptions: (path, line text) of SQL built from constant identifiers only. Keep this empty if you can.
REVIEWED: set[tuple[str, str]] = set()


def _built_string(node: ast.AST) -> bool:
    """An f-string, ``"…".format(…)``, ``"…" % …`` or string concatenation."""
    if isinstance(node, ast.JoinedStr):
        return True
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in ("format",
                                                                                                 "format_map"):
        return True
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Mod, ast.Add)):
        return any(isinstance(side, (ast.Constant, ast.JoinedStr)) and not isinstance(getattr(side, "value", ""),
                                                                                        (int, float))
                   or _built_string(side) for side in (node.left, node.right))
    return False


def sql_built_from_strings(source: str, path: str = "<snippet>") -> list[str]:
    """Places where SQL text handed to a database call is built with f-strings, format or % (directly, or
    through a local variable assigned such a string)."""
    tree = ast.parse(source)
    built_names: dict[ast.AST, set[str]] = {}
    for scope in ast.walk(tree):
        if isinstance(scope, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef)):
            names = set()
            for node in ast.walk(scope):
                if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)) and node.value is not None:
                    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                    if _built_string(node.value) or isinstance(node, ast.AugAssign):
                        names |= {t.id for t in targets if isinstance(t, ast.Name)}
            built_names[scope] = names
    suspicious = set().union(*built_names.values()) if built_names else set()
    found = []
    lines = source.splitlines()
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call) or not node.args:
            continue
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
        if name not in SQL_SINKS:
            continue
        first = node.args[0]
        if _built_string(first) or (isinstance(first, ast.Name) and first.id in suspicious):
            line = lines[node.lineno - 1].strip()
            if (path, line) not in REVIEWED:
                found.append(f"{path}:{node.lineno}: {line}")
    return found


def test_the_scan_catches_sql_built_from_strings():
    bad = [
        "db.execute_sql(f\"SELECT * FROM ip_metadata WHERE keyword = '{kw}'\")",
        "peewee.SQL('keyword = %s' % kw)",
        "IpMetadata.raw('SELECT * FROM ip_metadata WHERE keyword = {}'.format(kw))",
        "cursor.execute('DELETE FROM titles WHERE id = ' + ident)",
        "def f(kw):\n    query = f'SELECT {kw}'\n    database.execute_sql(query)",
        "def f(kw):\n    query = 'SELECT '\n    query += kw\n    database.execute_sql(query)",
    ]
    for snippet in bad:
        assert sql_built_from_strings(snippet), snippet
    good = [
        "db.execute_sql('SELECT * FROM ip_metadata WHERE keyword = %s', (kw,))",
        "peewee.SQL('CHARACTER SET utf8mb4 COLLATE utf8mb4_bin')",
        "IpMetadata.select().where(IpMetadata.keyword == kw)",
        "pipe.execute()",
        "ctx = database.get_sql_context()\ndatabase.execute(ctx)",
        "logger.info('%s rows' % n)",
    ]
    for snippet in good:
        assert not sql_built_from_strings(snippet), snippet


def test_no_sql_is_built_from_strings_in_the_code_base():
    found = []
    for folder in ("lib", "models", "actors"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            found += sql_built_from_strings(path.read_text(encoding="utf-8"), str(path.relative_to(ROOT)))
    assert found == [], "SQL built from strings (use Peewee's query builder or parameters):\n" + "\n".join(found)


# == 2. Credentials never reach logs or status output ==========================================================
