"""The test suite (docs/getting-started.md, "While working")."""

import sys

# The tests keep their compiled bytecode, and pytest its rewritten assertions, even where PYTHONDONTWRITEBYTECODE
# is set (as it is on the machines the suite was timed on). Without it every pytest worker compiles every test
# module and the code it imports again, which cost the fast tier about a tenth of its processor time. This package
# is imported before tests/conftest.py and every test module.
sys.dont_write_bytecode = False
