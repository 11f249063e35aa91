"""The segments of the stored listings (``listing_segments``, docs/concepts/measures.md "Segments"): each listing's
goods types and the characters its title names, derived from its stored title (``item_snapshots.title``).

Two ways in, one derivation (``Segmenter``):

- when a crawl result is applied (``segment_applied``, in the result's transaction): the listings whose title is
  new, changed, or was never segmented are classified again; the others keep their rows (classifying a title
  costs a fraction of a millisecond, and a crawl sees hundreds of unchanged ones);
- ``reapply``: every kept listing's rows recomputed from its stored title, after the taxonomy
  (``SEGMENTS_TAXONOMY``) or an IP's characters changed. Batched, one transaction a batch; idempotent (a second
  run changes nothing).

A listing's characters come from ``characters_for_ip``, the one source of the IPs' character lists; an IP
without a readable list has none (no character rows). The lists are read when a result is applied and by
``reapply``: after a list changes, ``animetop segments reapply --ip ID`` matches the listings already kept.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import lru_cache, partial
from pathlib import Path
from typing import Any, Protocol

import peewee

from lib.core.db import ParameterList, insert_rows, is_mysql, retrying_deadlocks, select_tuples, write_transaction
from lib.core.settings import Settings
from lib.segments.character_lists import CharactersUnavailable, characters_for_ip
from lib.segments.characters import Character, CharacterMatcher
from lib.segments.classify import Classifier, default_classifier
from lib.segments.taxonomy import Taxonomy, default_taxonomy, load_taxonomy
from models import IpMetadata, ItemSnapshot, ListingSegment
from models.segment import SEGMENT_KEY_MAX_LENGTH

logger = logging.getLogger(__name__)

GOODS = "goods"
CHARACTER = "character"
#: The kinds of segment, as the API, CSV and command line name them.
KINDS = (GOODS, CHARACTER)
#: Listings a reapply transaction takes at once.
BATCH = 500

#: A listing's segments: (kind, key) pairs.
Segments = frozenset[tuple[str, str]]
def _rows(query: Any) -> list[tuple[Any, ...]]:
    return select_tuples(query)


def configured_taxonomy(settings: Settings) -> Taxonomy:
    """The goods types of ``SEGMENTS_TAXONOMY`` (the packaged file when unset)."""
    return default_taxonomy() if settings.segments_taxonomy is None else _taxonomy_at(settings.segments_taxonomy)


def segment_labels(settings: Settings, kind: str) -> dict[str, str]:
    """The display names of a kind's segment keys: a goods type's Japanese name by its id (none for characters, whose
    key is their name)."""
    return {t.id: t.ja for t in configured_taxonomy(settings).types} if kind == GOODS else {}


@lru_cache(maxsize=4)
def _taxonomy_at(path: str) -> Taxonomy:
    return load_taxonomy(Path(path))


def configured_classifier(settings: Settings) -> Classifier:
    """The classifier of ``SEGMENTS_TAXONOMY``, compiled once a process."""
    return default_classifier() if settings.segments_taxonomy is None else _classifier_at(settings.segments_taxonomy)


@lru_cache(maxsize=4)
def _classifier_at(path: str) -> Classifier:
    return Classifier(_taxonomy_at(path))


def ip_characters(ip_id: int) -> list[Character]:
    """The IP's characters from its character list (``animetop ip characters``); none for an IP without one."""
    try:
        return characters_for_ip(ip_id)
    except CharactersUnavailable:
        return []


class Segmenter:
    """The segments of one IP's titles: the goods types the title sells and the characters it names.

    Parameters:
        classifier: the goods types' classifier (its taxonomy's stuffing rules also apply to the names).
        characters: the IP's characters.
    """

    def __init__(self, classifier: Classifier, characters: Iterable[Character]) -> None:
        self.classifier = classifier
        listed = list(characters)
        self.matcher = CharacterMatcher(listed, classifier) if listed else None

    @classmethod
    def for_ip(cls, settings: Settings, ip_id: int) -> Segmenter:
        return cls(configured_classifier(settings), ip_characters(ip_id))

    def of(self, title: str) -> Segments:
        folded = self.classifier.searched_text(title)  # once for both
        found = {(GOODS, t) for t in self.classifier.types_in(folded)}
        if self.matcher is not None:
            found |= {(CHARACTER, name[:SEGMENT_KEY_MAX_LENGTH]) for name in self.matcher.match_in(folded)}
        return frozenset(found)


@dataclass(frozen=True)
class StoredTitle:
    """A listing's stored title, and whether it has its segments (goods rows: every segmented listing has one, if
    only ``other``; a listing stored before segments existed has none)."""

    title: str
    segmented: bool


def stored_titles(ip_id: int, source_ids: list[str]) -> dict[str, StoredTitle]:
    """The stored titles of these listings (those with a snapshot), each with whether it is segmented: one read
    of the snapshots, with an index probe of ``listing_segments`` per listing in the database."""
    goods = (ListingSegment.select(peewee.SQL("1"))
             .where((ListingSegment.ip_id == ItemSnapshot.ip_id) & (ListingSegment.source_id == ItemSnapshot.source_id)
                    & (ListingSegment.kind == GOODS)))
    found: dict[str, StoredTitle] = {}
    for start in range(0, len(source_ids), BATCH):
        chunk = source_ids[start:start + BATCH]
        for sid, title, segmented in _rows(
                ItemSnapshot.select(ItemSnapshot.source_id, ItemSnapshot.title, peewee.fn.EXISTS(goods).coerce(False))
                .where((ItemSnapshot.ip_id == ip_id) & ItemSnapshot.source_id.in_(ParameterList(chunk)))):
            found[sid] = StoredTitle(title, bool(segmented))
    return found


def segment_applied(ip_id: int, titles: dict[str, str], previous: dict[str, StoredTitle],
                    segmenter: Callable[[], Segmenter]) -> int:
    """Bring the segments of the listings a result wrote up to their new titles (``titles``; ``previous``: what
    ``stored_titles`` read before the result's snapshots were written): a listing new, retitled or never segmented
    is classified again. Runs in the result's transaction; returns the listings classified. ``segmenter`` is made
    only when one is."""
    retitled = sorted(sid for sid, title in titles.items() if sid in previous and previous[sid].title != title)
    due = set(retitled) | {sid for sid in titles if sid not in previous or not previous[sid].segmented}
    if not due:
        return 0
    # Only a retitled listing has rows to replace (a new one has no snapshot, so none; a pruned one lost them
    # with its snapshot). They go whole, not diffed: a delete acts on the latest rows whatever this transaction
    # read before. Deleting nothing would still lock gaps of the index on MariaDB, where another IP's result
    # inserting into the same gap could deadlock with it.
    for start in range(0, len(retitled), BATCH):
        chunk = retitled[start:start + BATCH]
        ListingSegment.delete().where((ListingSegment.ip_id == ip_id)
                                      & ListingSegment.source_id.in_(ParameterList(chunk))).execute()
    derive = segmenter()
    _insert(ip_id, [(sid, kind, key) for sid in sorted(due) for kind, key in sorted(derive.of(titles[sid]))])
    return len(due)


def _insert(ip_id: int, rows: list[tuple[str, str, str]]) -> None:
    insert_rows(ListingSegment, [{"ip_id": ip_id, "source_id": sid, "kind": kind, "key": key}
                                 for sid, kind, key in rows], conflict="ignore")


@dataclass
class ReapplyReport:
    """What a reapply changed.

    Parameters:
        ips: the IPs gone through.
        listings: the listings whose title was classified.
        added, removed: segment rows written and deleted (0 and 0 when nothing changed since the last run).
        changed_ips: the IPs some of whose rows changed (their cached answers are stale).
    """

    ips: int = 0
    listings: int = 0
    added: int = 0
    removed: int = 0
    changed_ips: list[int] | None = None


def reapply(settings: Settings, ip_id: int | None = None, *, batch: int = BATCH,
            changed: Callable[[int], None] | None = None) -> ReapplyReport:
    """Recompute the segments of every kept listing (of ``ip_id``, or of every IP) from its stored title, with
    the configured taxonomy and the IPs' characters now, ``batch`` listings a transaction (on MySQL/MariaDB their
    snapshots locked, so a result retitling one of them waits for the batch, then segments it anew). Rows of
    listings no longer kept (pruned) go too. ``changed(ip_id)`` runs inside each transaction that changed an IP's
    rows, so what follows a change (its days marked for the rollup) commits with it: a process stopped midway
    leaves no change unmarked."""
    report = ReapplyReport(changed_ips=[])
    classifier = configured_classifier(settings)
    ips = [ip_id] if ip_id is not None else [i for (i,) in _rows(IpMetadata.select(IpMetadata.id)
                                                                  .order_by(IpMetadata.id))]
    for ip in ips:
        segmenter = Segmenter(classifier, ip_characters(ip))
        before = report.added + report.removed
        after: str | None = ""  # source ids are never empty
        while after is not None:
            after = retrying_deadlocks(partial(_reapply_batch, ip, after, batch, segmenter, report, changed))
        while retrying_deadlocks(partial(_sweep_orphans, ip, batch, report, changed)):
            pass
        report.ips += 1
        if report.added + report.removed > before:
            assert report.changed_ips is not None
            report.changed_ips.append(ip)
    logger.info("segments reapplied: %s", report)
    return report


class SegmentsChanged(Protocol):
    """What follows the IPs whose segments were derived again (``lib.market.read_side.ReadSide``): their segments'
    daily rows (``mark_resegmented``, in the transaction of the change) and their cached answers
    (``segments_changed``, once the reapply is done)."""

    def mark_resegmented(self, ip_id: int) -> None: ...

    def segments_changed(self, ip_ids: list[int]) -> None: ...


def resegment(settings: Settings, side: SegmentsChanged, ip_id: int | None = None) -> ReapplyReport:
    """``reapply`` (of ``ip_id``, or of every IP), then tell ``side`` (the read side) the IPs whose segments changed:
    after the taxonomy or an IP's character list changed."""
    report = reapply(settings, ip_id, changed=side.mark_resegmented)
    side.segments_changed(report.changed_ips or [])
    return report


def _reapply_batch(ip_id: int, after: str, batch: int, segmenter: Segmenter, report: ReapplyReport,
                   changed: Callable[[int], None] | None = None) -> str | None:
    """One transaction: the IP's next ``batch`` listings by source id after ``after``; returns the last source id
    taken (None: there were none). The report is counted only once the transaction committed."""
    with write_transaction():
        # through the unique (ip_id, source_id) index: on MariaDB only this IP's snapshots are locked (a range of
        # ids would lock every IP's rows it scans)
        snapshots = (ItemSnapshot.select(ItemSnapshot.source_id, ItemSnapshot.title)
                     .where((ItemSnapshot.ip_id == ip_id) & (ItemSnapshot.source_id > after))
                     .order_by(ItemSnapshot.source_id).limit(batch))
        if is_mysql():
            snapshots = snapshots.for_update()
        rows = _rows(snapshots)
        if not rows:
            return None
        wanted = {(sid, kind, key) for sid, title in rows for kind, key in segmenter.of(title)}
        # a plain read: with the listings' snapshots locked, no result writes their rows until this commits, and
        # it sees every result committed before (a locking read would also lock the index's gaps, where other
        # IPs' results insert)
        existing = set(_rows(
            ListingSegment.select(ListingSegment.source_id, ListingSegment.kind, ListingSegment.key)
            .where((ListingSegment.ip_id == ip_id) & ListingSegment.source_id.in_([sid for sid, _ in rows]))))
        gone = sorted(existing - wanted)
        new = sorted(wanted - existing)
        if gone:  # by their key (the table's primary key), the listings' range of it first
            key = peewee.Tuple(ListingSegment.source_id, ListingSegment.kind, ListingSegment.key)
            stored_key = [(ListingSegment.source_id.db_value(sid), ListingSegment.kind.db_value(kind), k)
                          for sid, kind, k in gone]  # a tuple's values are not converted by its columns
            ListingSegment.delete().where((ListingSegment.ip_id == ip_id)
                                          & ListingSegment.source_id.in_(sorted({sid for sid, _, _ in gone}))
                                          & key.in_(stored_key)).execute()
        _insert(ip_id, new)
        if changed is not None and (gone or new):
            changed(ip_id)
    report.listings += len(rows)
    report.added += len(new)
    report.removed += len(gone)
    return str(rows[-1][0])


def _sweep_orphans(ip_id: int, batch: int, report: ReapplyReport, changed: Callable[[int], None] | None = None) -> bool:
    """Delete the rows of up to ``batch`` of the IP's listings that have no snapshot any more; whether it found
    any."""
    with write_transaction():
        snapshot = ItemSnapshot.select(peewee.SQL("1")).where(
            (ItemSnapshot.ip_id == ListingSegment.ip_id) & (ItemSnapshot.source_id == ListingSegment.source_id))
        sids = [sid for (sid,) in _rows(ListingSegment.select(ListingSegment.source_id).distinct()
                                        .where((ListingSegment.ip_id == ip_id) & ~peewee.fn.EXISTS(snapshot))
                                        .limit(batch))]
        removed = ListingSegment.delete().where((ListingSegment.ip_id == ip_id)
                                                & ListingSegment.source_id.in_(sids)).execute() if sids else 0
        if changed is not None and removed:
            changed(ip_id)
    report.removed += removed
    return bool(sids)
