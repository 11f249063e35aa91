"""Titles as the relist rule compares them (docs/concepts/measures.md, definition 2): a fingerprint of a title's
normalized form, and the fingerprints of the titles a relist may have had first (the same, or without its first or
last word). The worker's relist lookup (``lib.market.relists``) and the crawler's page plan
(``lib.crawling.page_plan``) both key listings by them."""

from __future__ import annotations

import functools
import hashlib

from lib.segments.normalize import compact, normalize


@functools.lru_cache(maxsize=32768)
def title_match(title: str) -> str | None:
    """The fingerprint of a title's normalized form (64 bits; None for a title with no word). Cached: a listing's
    title comes back with every crawl that sees it, and normalizing one costs about 17 µs."""
    folded = compact(normalize(title))
    return hashlib.blake2b(folded.encode(), digest_size=8).hexdigest() if folded else None


def earlier_titles(title: str) -> set[str]:
    """The fingerprints of the titles a relist titled ``title`` may have had first: the same, or without its first
    or last word."""
    words = normalize(title).split(" ")
    forms = [words] + ([words[1:], words[:-1]] if len(words) > 1 else [])
    return {key for form in forms if (key := title_match(" ".join(form))) is not None}
