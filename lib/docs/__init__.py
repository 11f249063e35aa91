"""The documentation site's generated pages (``docs/reference/``) and files, made from the code they describe:
``python -m lib.docs.generate`` writes them, and ``tests/test_docs.py`` fails when the committed ones differ."""
