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


def _encode(url: str, source_id: str, forms: tuple[str, ...]) -> tuple[int, str]:
    for number, form in enumerate(forms, start=1):
        prefix = form.format(id=source_id)
        if url.startswith(prefix):
            return number, url[len(prefix):]
    return 0, url


def _decode(number: int, stored: str, source_id: str, forms: tuple[str, ...]) -> str:
    return forms[number - 1].format(id=source_id) + stored if number else stored


def encode(source_id: str, item_url: str, image_url: str) -> tuple[int, str, str]:
    """``(url_forms, item_url, image_url)`` to store for a listing's URLs."""
    item_form, item_rest = _encode(item_url, source_id, ITEM_FORMS)
    image_form, image_rest = _encode(image_url, source_id, IMAGE_FORMS)
    return item_form + IMAGE_BASE * image_form, item_rest, image_rest


def item_url(source_id: str, url_forms: int | None, stored: str) -> str:
    """The page URL the crawler reported, from what ``encode`` stored (``url_forms`` None: a row written before
    the forms, stored whole)."""
    return _decode((url_forms or 0) % IMAGE_BASE, stored, source_id, ITEM_FORMS)


def image_url(source_id: str, url_forms: int | None, stored: str) -> str:
    """The thumbnail URL the crawler reported, from what ``encode`` stored."""
    return _decode((url_forms or 0) // IMAGE_BASE, stored, source_id, IMAGE_FORMS)
