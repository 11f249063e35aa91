"""A listing's page and thumbnail URLs as ``item_snapshots`` stores them: nearly always the site's canonical URL
for the listing's id, so only which canonical form it is (``url_forms``) and what follows it (usually nothing)
are stored; any other URL is stored whole (``url_forms`` 0 for it). The round trip is exact for every string, so
what the crawler reported is what the read side shows (docs/concepts/market-data.md)."""

from __future__ import annotations

#: The canonical page URLs of a listing, by form number (1…): a Mercari item, a Mercari Shops product.
ITEM_FORMS = ("https://jp.mercari.com/item/{id}", "https://jp.mercari.com/shops/product/{id}")
#: The canonical thumbnails: the API's first thumbnail (possibly followed by a ``?`` version, kept as the rest).
IMAGE_FORMS = ("https://static.mercdn.net/thumb/item/webp/{id}_1.jpg",
               "https://static.mercari.com/thumb/photos/{id}_1.jpg", "https://static.mercdn.net/thumb/photos/{id}_1.jpg")
#: ``url_forms`` = item form + IMAGE_BASE × image form (0: the column holds the whole URL).
IMAGE_BASE = len(ITEM_FORMS) + 1


def _split(forms: tuple[str, ...]) -> tuple[tuple[str, str], ...]:
    return tuple((head, tail) for head, _, tail in (form.partition("{id}") for form in forms))


#: The forms as (before the id, after it): matched without formatting a URL per form (a result has a thousand).
_ITEM_PARTS, _IMAGE_PARTS = _split(ITEM_FORMS), _split(IMAGE_FORMS)


def _encode(url: str, source_id: str, parts: tuple[tuple[str, str], ...]) -> tuple[int, str]:
    for number, (head, tail) in enumerate(parts, start=1):
        if url.startswith(head) and url.startswith(source_id + tail, len(head)):
            return number, url[len(head) + len(source_id) + len(tail):]
    return 0, url


def _decode(number: int, stored: str, source_id: str, forms: tuple[str, ...]) -> str:
    return forms[number - 1].format(id=source_id) + stored if number else stored


def encode(source_id: str, item_url: str, image_url: str) -> tuple[int, str, str]:
    """``(url_forms, item_url, image_url)`` to store for a listing's URLs."""
    item_form, item_rest = _encode(item_url, source_id, _ITEM_PARTS)
    image_form, image_rest = _encode(image_url, source_id, _IMAGE_PARTS)
    return item_form + IMAGE_BASE * image_form, item_rest, image_rest


def item_url(source_id: str, url_forms: int | None, stored: str) -> str:
    """The page URL the crawler reported, from what ``encode`` stored (``url_forms`` None: a row written before
    the forms, stored whole)."""
    return _decode((url_forms or 0) % IMAGE_BASE, stored, source_id, ITEM_FORMS)


def image_url(source_id: str, url_forms: int | None, stored: str) -> str:
    """The thumbnail URL the crawler reported, from what ``encode`` stored."""
    return _decode((url_forms or 0) // IMAGE_BASE, stored, source_id, IMAGE_FORMS)
