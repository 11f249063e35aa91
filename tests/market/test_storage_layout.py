"""The storage layout of issue 26 point 1 (docs/concepts/market-data.md), on SQLite and MariaDB: a listing's URLs
are stored as their canonical form plus what follows it, and read back exactly as the crawler reported them;
events keep only their time (their hour is implied); listing ids are stored as a few bytes and read back exactly;
and ``animetop db init`` brings a database written with either previous layout to this one without changing a
stored fact or a measure."""

from __future__ import annotations

import peewee
import pytest

from lib.core import listing_ids
from lib.core.db import database
from lib.market import listing_urls
from lib.market.schema import create_tables
from lib.market.series import latest_sales
from lib.market.statistics import hour_bucket
from lib.market.windows import segment_measures
from models import IpStatsHourly, ItemSnapshot, ListingEvent, ListingSegment, ListingSighting
from models.base import BaseModel, CodeField, ExactCharField, NaturalKeyMetadata, exact_collation

from .scripted import H, make_script
from .test_sighting_runs import apply_all, measures, new_ip, stored_events, stored_runs

#: Titles the packaged goods types classify (one type each), so the listings have segment rows.
TITLES = ["アクリルスタンド", "缶バッジ", "ぬいぐるみ", "クリアファイル", "ポスター", "タペストリー"]

ODD_URLS = ["", "https://example.com/x", "0", "1?x", "javascript:alert(1)", "https://jp.mercari.com/item/",
            "https://jp.mercari.com/item/m1-0?ref=a", "https://static.mercdn.net/thumb/item/webp/m1-0_1.jpg?17"]


@pytest.mark.parametrize("url", ODD_URLS + ["https://jp.mercari.com/item/m1-0", "https://jp.mercari.com/shops/product/m1-0",
                                            "https://static.mercdn.net/thumb/item/webp/m1-0_1.jpg"])
def test_urls_read_back_exactly(url):
    for source_id in ("m1-0", "m1", "", "0"):
        forms, item, image = listing_urls.encode(source_id, url, url)
        assert listing_urls.item_url(source_id, forms, item) == url
        assert listing_urls.image_url(source_id, forms, image) == url
    if url.endswith(("/m1-0", "/m1-0_1.jpg")):  # a canonical URL of the id: only its form is stored
        forms, item, image = listing_urls.encode("m1-0", url, url)
        assert forms > 0 and "" in (item, image)


#: Listing ids of every shape: Mercari items (the compact form, its bounds), Mercari Shops products, and ids the
#: compact form must leave as text (a leading zero, too long, other digits, a trailing newline, empty).
IDS = ["m12345678901", "m1", "m9", "m10000000000", "m99999999999", "m999999999999999999", "2SXmGd8vTe5xdv5fZ3CyJQ",
       "0a1b2c3d4e5f60718293a4", "m0", "m012", "m1000000000000000000", "m12-3", "M123", "ｍ１２", "m١٢٣", "m12\n",
       "m", "", "推しの子", "🔥m1", "x" * 64, "🔥" * 64]


@pytest.mark.parametrize("source_id", IDS)
def test_listing_ids_read_back_exactly(source_id):
    stored = listing_ids.encode(source_id)
    assert listing_ids.decode(stored) == source_id
    # a Mercari item's id is its number's bytes: at most 8, 5 for today's 11 digits; anything else is its text
    if source_id[:1] == "m" and source_id[1:].isascii() and source_id[1:].isdigit() and source_id[1:2] != "0" \
            and len(source_id) <= 19:
        assert stored == int(source_id[1:]).to_bytes(len(stored), "big") and len(stored) <= 8
    else:
        assert stored == b"\x00" + source_id.encode()
    assert len(listing_ids.encode("m12345678901")) == 5
    assert len(listing_ids.encode("🔥" * 64)) == listing_ids.MAX_BYTES  # the longest id a crawl may report


def test_listing_ids_are_exact_in_the_database(db):
    """Every shape stored, read back, found and told apart through the model (the key is the bytes, compared
    exactly on both databases)."""
    ListingSegment.insert_many([{"ip_id": 1, "source_id": sid, "kind": "goods", "key": "k"} for sid in IDS]).execute()
    assert sorted(s.source_id for s in ListingSegment.select()) == sorted(IDS)
    for sid in IDS:
        assert [s.source_id for s in ListingSegment.select().where(ListingSegment.source_id == sid)] == [sid]
    assert {s.source_id for s in ListingSegment.select().where(ListingSegment.source_id.in_(IDS[:3]))} == set(IDS[:3])
    for prefix in ("m12-", "m0", "M", "x", "推し", "🔥", "2SX", "m1000000000000000000"):
        found = {s.source_id for s in ListingSegment.select().where(ListingSegment.source_id.startswith(prefix))}
        assert found == {sid for sid in IDS if sid.startswith(prefix)}, prefix
    for prefix in ("", "m", "m1", "m12345678901"):  # item ids are stored as numbers: no range of bytes holds these
        with pytest.raises(ValueError, match="no Mercari item id starts with"):
            ListingSegment.source_id.startswith(prefix)


def test_db_init_encodes_listing_ids_as_this_version_does(db):
    """The conversion ``db init`` runs on a text column (SQL on MariaDB, the module's function on SQLite) stores
    every shape of id exactly as ``listing_ids.encode`` does."""
    field = ListingSegment.source_id
    database.execute_sql("CREATE TABLE text_ids (source_id VARCHAR(64) NOT NULL)"
                         if isinstance(database.obj, peewee.SqliteDatabase) else
                         "CREATE TABLE text_ids (source_id VARCHAR(64) CHARACTER SET utf8mb4 COLLATE "
                         f"{exact_collation()} NOT NULL)")
    try:
        for sid in IDS:
            database.execute_sql(f"INSERT INTO text_ids VALUES ({database.param})", (sid,))  # noqa: S608
        query = peewee.Select([peewee.Table("text_ids")], [peewee.Entity("source_id"),
                                                            field.from_previous(peewee.Entity("source_id"))])
        converted = dict(database.execute(query).fetchall())
        assert {sid: bytes(b) for sid, b in converted.items()} == {sid: listing_ids.encode(sid) for sid in IDS}
    finally:
        database.execute_sql("DROP TABLE text_ids")


def test_canonical_urls_store_nothing():
    forms, item, image = listing_urls.encode("m123", "https://jp.mercari.com/item/m123",
                                             "https://static.mercdn.net/thumb/item/webp/m123_1.jpg?1700000000")
    assert (item, image) == ("", "?1700000000") and forms


class PreviousEvent(BaseModel):
    """``listing_events`` as the previous version created it (frozen here: the layout ``db init`` migrates)."""

    id = peewee.AutoField()
    ip_id = peewee.IntegerField()
    source_id = ExactCharField(max_length=64)
    kind = peewee.CharField(max_length=8)
    occurrence = peewee.IntegerField()
    event_at = peewee.DoubleField()
    hour_bucket = peewee.DateTimeField()
    price = peewee.IntegerField(null=True)
    listed_price = peewee.IntegerField(null=True)
    created_at = peewee.DoubleField(null=True)

    class Meta:
        table_name = "listing_events"
        indexes = ((("ip_id", "source_id", "kind", "occurrence"), True), (("ip_id", "hour_bucket"), False),
                   (("kind", "event_at", "ip_id", "source_id", "price", "listed_price"), False))


class PreviousSighting(BaseModel):
    """``listing_sightings`` as the previous version created it: a row id beside the unique key, the status as
    text."""

    id = peewee.AutoField()
    ip_id = peewee.IntegerField()
    source_id = ExactCharField(max_length=64)
    crawled_at = peewee.DoubleField()
    last_seen = peewee.DoubleField(null=True)
    status = peewee.CharField(max_length=16)
    price = peewee.IntegerField(null=True)
    created = peewee.DoubleField(null=True)
    updated = peewee.DoubleField(null=True)

    class Meta:
        table_name = "listing_sightings"
        indexes = ((("ip_id", "source_id", "crawled_at"), True),)


class PreviousSegment(BaseModel):
    """``listing_segments`` as the previous version created it."""

    id = peewee.AutoField()
    ip_id = peewee.IntegerField()
    source_id = ExactCharField(max_length=64)
    kind = peewee.CharField(max_length=16)
    key = ExactCharField(max_length=100)

    class Meta:
        table_name = "listing_segments"
        indexes = ((("ip_id", "source_id", "kind", "key"), True),)


class PreviousSnapshot(BaseModel):
    """``item_snapshots`` as the previous version created it: both URLs stored whole."""

    id = peewee.AutoField()
    ip_id = peewee.IntegerField()
    source_id = ExactCharField(max_length=64)
    title = peewee.CharField(max_length=500, default="")
    price = peewee.IntegerField(null=True)
    status = peewee.CharField(max_length=16)
    image_url = peewee.CharField(max_length=500, default="")
    item_url = peewee.CharField(max_length=500, default="")
    first_seen = peewee.DoubleField()
    last_seen = peewee.DoubleField()
    created = peewee.DoubleField(null=True)
    updated = peewee.DoubleField(null=True)

    class Meta:
        table_name = "item_snapshots"
        indexes = ((("ip_id", "source_id"), True),)


def with_urls(crawls: list[tuple[float, list[dict]]]) -> list[tuple[float, list[dict]]]:
    """The crawler's URLs: canonical for most listings, a shop's product page or something odd for a few."""
    out = []
    for at, items in crawls:
        urled = []
        for it in items:
            k = int(it["source_id"].rsplit("-", 1)[1])
            item = (f"https://jp.mercari.com/shops/product/{it['source_id']}" if k % 11 == 0
                    else ODD_URLS[k % len(ODD_URLS)] if k % 7 == 0 else f"https://jp.mercari.com/item/{it['source_id']}")
            image = ODD_URLS[k % len(ODD_URLS)] if k % 5 == 0 else \
                f"https://static.mercdn.net/thumb/item/webp/{it['source_id']}_1.jpg"
            urled.append({**it, "item_url": item, "image_url": image})
        out.append((at, urled))
    return out


def stored(ip_id: int, now: float) -> tuple:
    """Every fact the layout changes, read through the models and the read side."""
    urls = {s.source_id: (listing_urls.item_url(s.source_id, s.url_forms, s.item_url),
                          listing_urls.image_url(s.source_id, s.url_forms, s.image_url))
            for s in ItemSnapshot.select().where(ItemSnapshot.ip_id == ip_id)}
    hourly = sorted((r.hour_bucket, r.inflow, r.outflow, r.sample_count, r.median_price)
                    for r in IpStatsHourly.select().where(IpStatsHourly.ip_id == ip_id))
    segments = sorted((s.source_id, s.kind, s.key)
                      for s in ListingSegment.select().where(ListingSegment.ip_id == ip_id))
    return (stored_events(ip_id), measures(ip_id, now), hourly, urls, latest_sales(ip_id, limit=1000),
            stored_runs(ip_id), segments, segment_measures(ip_id, "goods", 24, now))


def test_db_init_migrates_the_previous_layout(db, settings):
    script = make_script(6, n_crawls=12, on_sale_page=30, sold_page=25, titles=TITLES)
    crawls = with_urls(script.crawls)
    ip_id = new_ip(settings, "layout")
    apply_all(settings, ip_id, [(f"t{k}", at, items) for k, (at, items) in enumerate(crawls)])
    now = crawls[-1][0] + 600
    before = stored(ip_id, now)
    reported = {it["source_id"]: (it["item_url"], it["image_url"]) for _, items in crawls for it in items}
    assert before[3] == reported  # the URLs read back as the crawler reported them
    assert any(s.item_url == "" and s.image_url == "" for s in ItemSnapshot.select())  # canonical: nothing stored
    assert {kind for _, kind, _ in before[6]} == {"goods"} and len(before[7]) > 1  # segmented titles

    # the same facts written with the previous layout
    events = list(ListingEvent.select().dicts())
    runs, segments = list(ListingSighting.select().dicts()), list(ListingSegment.select().dicts())
    snapshots = []
    for s in ItemSnapshot.select().dicts():
        forms = s.pop("url_forms")
        snapshots.append({**s, "item_url": listing_urls.item_url(s["source_id"], forms, s["item_url"]),
                          "image_url": listing_urls.image_url(s["source_id"], forms, s["image_url"])})
    database.drop_tables([ListingEvent, ItemSnapshot, ListingSighting, ListingSegment])
    database.create_tables([PreviousEvent, PreviousSnapshot, PreviousSighting, PreviousSegment])
    PreviousEvent.insert_many([{**e, "hour_bucket": hour_bucket(e["event_at"])} for e in events]).execute()
    # the columns a later version added (the seller's hash, the title's fingerprint, the auction flag) are not in it
    PreviousSnapshot.insert_many([{k: v for k, v in s.items() if k in PreviousSnapshot._meta.fields}
                                  for s in snapshots]).execute()
    PreviousSighting.insert_many(runs).execute()
    PreviousSegment.insert_many(segments).execute()
    assert "hour_bucket" in {c.name for c in database.get_columns("listing_events")}
    assert database.get_primary_keys("listing_sightings") == ["id"]

    create_tables()
    for model in (ListingEvent, ListingSighting, ListingSegment):
        table = model._meta.table_name
        assert {c.name for c in database.get_columns(table)} == {f.column_name for f in model._meta.sorted_fields}
        assert database.get_primary_keys(table) == list(model._meta.primary_key.field_names)
        assert f"{table}_previous" not in database.get_tables()
    indexes = {tuple(i.columns) for i in database.get_indexes("listing_events")}
    assert ("ip_id", "event_at") in indexes and ("ip_id", "hour_bucket") not in indexes
    assert stored(ip_id, now) == before
    create_tables()  # once: nothing left to do
    assert stored(ip_id, now) == before

    # and the IP goes on in the new layout as one that never left it
    last_at, last_items = crawls[-1]
    apply_all(settings, ip_id, [("next", last_at + H, last_items)])
    fresh = new_ip(settings, "fresh")
    apply_all(settings, fresh, [(f"t{k}", at, items) for k, (at, items) in enumerate(crawls)]
              + [("next", last_at + H, last_items)])
    assert stored(ip_id, last_at + H + 600) == stored(fresh, last_at + H + 600)


class TextIdEvent(BaseModel):
    """``listing_events`` as the version before the encoded ids created it (frozen here): the ids as text."""

    ip_id = peewee.IntegerField()
    source_id = ExactCharField(max_length=64)
    kind = CodeField(("created", "sold"))
    occurrence = peewee.IntegerField()
    event_at = peewee.DoubleField()
    price = peewee.IntegerField(null=True)
    listed_price = peewee.IntegerField(null=True)
    created_at = peewee.DoubleField(null=True)

    class Meta:
        table_name = "listing_events"
        model_metadata_class = NaturalKeyMetadata
        primary_key = peewee.CompositeKey("ip_id", "source_id", "kind", "occurrence")
        without_rowid = True
        indexes = ((("ip_id", "event_at"), False),
                   (("kind", "event_at", "ip_id", "source_id", "price", "listed_price"), False))


class TextIdSighting(BaseModel):
    """``listing_sightings`` before the encoded ids."""

    ip_id = peewee.IntegerField()
    source_id = ExactCharField(max_length=64)
    crawled_at = peewee.DoubleField()
    last_seen = peewee.DoubleField(null=True)
    status = CodeField(("on_sale", "sold"))
    price = peewee.IntegerField(null=True)
    created = peewee.DoubleField(null=True)
    updated = peewee.DoubleField(null=True)

    class Meta:
        table_name = "listing_sightings"
        model_metadata_class = NaturalKeyMetadata
        primary_key = peewee.CompositeKey("ip_id", "source_id", "crawled_at")
        without_rowid = True


class TextIdSegment(BaseModel):
    """``listing_segments`` before the encoded ids."""

    ip_id = peewee.IntegerField()
    source_id = ExactCharField(max_length=64)
    kind = CodeField(("goods", "character"))
    key = ExactCharField(max_length=100)

    class Meta:
        table_name = "listing_segments"
        model_metadata_class = NaturalKeyMetadata
        primary_key = peewee.CompositeKey("ip_id", "source_id", "kind", "key")
        without_rowid = True


class TextIdSnapshot(BaseModel):
    """``item_snapshots`` before the encoded ids: a row id beside the unique (IP, id) index."""

    id = peewee.AutoField()
    ip_id = peewee.IntegerField()
    source_id = ExactCharField(max_length=64)
    title = peewee.CharField(max_length=500, default="")
    price = peewee.IntegerField(null=True)
    status = peewee.CharField(max_length=16)
    image_url = peewee.CharField(max_length=500, default="")
    item_url = peewee.CharField(max_length=500, default="")
    url_forms = peewee.SmallIntegerField(null=True)
    first_seen = peewee.DoubleField()
    last_seen = peewee.DoubleField()
    created = peewee.DoubleField(null=True)
    updated = peewee.DoubleField(null=True)

    class Meta:
        table_name = "item_snapshots"
        indexes = ((("ip_id", "source_id"), True),)


def with_ids(crawls: list[tuple[float, list[dict]]]) -> list[tuple[float, list[dict]]]:
    """The script's listings under ids of the shapes the site gives (and the odd ones ``IDS`` holds): a
    Mercari item's ``m`` and 11 digits for most, a shop's product id or an id of another shape for some."""
    def real(sid: str) -> str:
        k = int(sid.rsplit("-", 1)[1])
        return (IDS[k % len(IDS)][:40] + sid if k % 4 == 0 else f"{sid}shop{k:018d}" if k % 4 == 1
                else f"m{10_000_000_000 + k * 7919 + int(sid[1:].split('-')[0])}")
    return [(at, [{**it, "source_id": real(it["source_id"])} for it in items]) for at, items in crawls]


def test_db_init_migrates_listing_ids_stored_as_text(db, settings):
    """A database of the layout before the encoded ids (the ids as text in every key) comes to this one with the
    same facts and measures, on SQLite (in Python) and MariaDB (in SQL)."""
    script = make_script(7, n_crawls=12, on_sale_page=30, sold_page=25, titles=TITLES)
    crawls = with_ids(with_urls(script.crawls))
    ip_id = new_ip(settings, "ids")
    apply_all(settings, ip_id, [(f"t{k}", at, items) for k, (at, items) in enumerate(crawls)])
    now = crawls[-1][0] + 600
    before = stored(ip_id, now)
    ids = {it["source_id"] for _, items in crawls for it in items}
    assert {s.source_id for s in ItemSnapshot.select()} == ids and len(before[0]) > 50 and len(before[6]) > 10
    assert sum(len(listing_ids.encode(sid)) == 5 for sid in ids) > len(ids) / 3  # the compact form is exercised

    rows = {model: list(model.select().dicts()) for model in (ListingEvent, ListingSighting, ListingSegment,
                                                              ItemSnapshot)}
    database.drop_tables(list(rows))
    text = {ListingEvent: TextIdEvent, ListingSighting: TextIdSighting, ListingSegment: TextIdSegment,
            ItemSnapshot: TextIdSnapshot}
    database.create_tables(list(text.values()))
    for model, dicts in rows.items():
        text[model].insert_many([{k: v for k, v in d.items() if k in text[model]._meta.fields}
                                 for d in dicts]).execute()
    assert {c.name: c.data_type.lower()[:7] for c in database.get_columns("listing_events")}["source_id"] == "varchar"

    create_tables()
    for model in rows:
        table = model._meta.table_name
        assert database.get_primary_keys(table) == [f.column_name for f in model._meta.get_primary_keys()]
        assert "source_id" not in {c.name for c in database.get_columns(table) if "char" in c.data_type.lower()}
        assert f"{table}_previous" not in database.get_tables()
        stored_ids = [bytes(b) for (b,) in database.execute_sql(f"SELECT source_id FROM {table}").fetchall()]  # noqa: S608
        assert stored_ids and all(listing_ids.decode(b) in ids for b in stored_ids)
        assert all(listing_ids.encode(listing_ids.decode(b)) == b for b in stored_ids)  # as this version writes them
    assert stored(ip_id, now) == before
    create_tables()  # once: nothing left to do
    assert stored(ip_id, now) == before

    # and the IP goes on as one that never left this layout
    last_at, last_items = crawls[-1]
    apply_all(settings, ip_id, [("next", last_at + H, last_items)])
    fresh = new_ip(settings, "fresh")
    apply_all(settings, fresh, [(f"t{k}", at, items) for k, (at, items) in enumerate(crawls)]
              + [("next", last_at + H, last_items)])
    assert stored(ip_id, last_at + H + 600) == stored(fresh, last_at + H + 600)
