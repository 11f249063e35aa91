"""The schema in the database: every model's table, created or brought up to date (``animetop db init``), with
the market's stored rows an upgrade changes (window rows, monthly partitions).

In the market's layer (docs/concepts/architecture.md, "Layers"): it imports the models, which bind to
``lib.core.db``'s proxy, and the market's window rows and partitions it brings up to date.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

import peewee

from lib.core.db import database, execute_statement, is_mysql
from models import ALL_MODELS
from models.base import CodeField, ExactCharField, ListingIdField, exact_collation

logger = logging.getLogger(__name__)


def create_tables() -> list[str]:
    """Create every model's table that does not exist yet; safe to run again."""
    database.create_tables(ALL_MODELS, safe=True)
    _rebuild_tables(ALL_MODELS)
    grown = _add_missing_columns(ALL_MODELS)
    from lib.market import window_rows

    if "ip_window_measures" in grown:
        window_rows.rebuild_all()  # its stored rows predate the new column (and their JSON the new measures)
    window_rows.ensure_current_version()  # rows whose stored measures an upgrade added to
    _drop_retired_indexes(ALL_MODELS)
    _add_missing_indexes(ALL_MODELS)
    if is_mysql():
        _make_exact_columns_exact(ALL_MODELS)
        from lib.core.clock import get_clock
        from lib.market import partitions

        partitions.ensure_partitioned(get_clock().now())  # hourly rows by month (docs/operating/storage.md)
    return [model._meta.table_name for model in ALL_MODELS]


def _natural_key(model: type[peewee.Model]) -> list[str] | None:
    key = model._meta.primary_key
    return [model._meta.fields[name].column_name for name in key.field_names] \
        if isinstance(key, peewee.CompositeKey) else None


def _text_columns(table: str) -> set[str]:
    """The table's columns stored as text (a listing id or a code column written by an earlier version)."""
    return {c.name for c in database.get_columns(table)
            if c.data_type.lower().startswith(("varchar", "char", "text", "nvarchar"))}


def _stale_layout(model: type[peewee.Model]) -> bool:
    """Whether the model's table is in an earlier layout that only a rebuild changes: keyed by a row id (an
    ``AutoField`` beside a unique index) where it is now keyed by its natural key
    (``models.base.NaturalKeyMetadata``), or its listing ids stored as text (``models.base.ListingIdField``)."""
    table = model._meta.table_name
    key = _natural_key(model)
    if key is not None and database.get_primary_keys(table) != key:
        return True
    ids = {f.column_name for f in model._meta.sorted_fields if isinstance(f, ListingIdField)}
    return bool(ids & _text_columns(table))


def _rebuild_tables(models: Iterable[type[peewee.Model]]) -> None:
    """Rebuild the tables in an earlier layout (``_stale_layout``): neither SQLite nor InnoDB changes a table's
    clustering in place, and SQLite changes no column's type. The rows are copied into a new table (the columns
    both layouts have, names stored as text becoming codes and listing ids their bytes; retired columns stay
    behind) and the old one dropped. On SQLite in one transaction; MySQL/MariaDB commits each DDL statement, so a
    rebuild cut short leaves ``<table>_previous``, and the next run starts the copy again from it."""
    for model in models:
        table = model._meta.table_name
        previous = f"{table}_previous"
        present = set(database.get_tables())
        if previous not in present and not _stale_layout(model):
            continue
        with database.atomic():
            if previous not in present:
                execute_statement("ALTER TABLE ", peewee.Entity(table), " RENAME TO ", peewee.Entity(previous))
                if not is_mysql():  # SQLite's index names are the schema's, not the table's: free them for the new one
                    for index in database.get_indexes(previous):
                        if not index.name.startswith("sqlite_autoindex"):
                            execute_statement("DROP INDEX ", peewee.Entity(index.name))
            else:
                database.drop_tables([model], safe=True)
            database.create_tables([model])
            old = {c.name for c in database.get_columns(previous)}
            text = _text_columns(previous)
            fields = [f for f in model._meta.sorted_fields if f.column_name in old]
            names = peewee.EnclosedNodeList([peewee.Entity(f.column_name) for f in fields])
            values = [_copied(f, f.column_name in text) for f in fields]
            execute_statement("INSERT INTO ", peewee.Entity(table), " ", names, " SELECT ",
                              peewee.CommaNodeList(values), " FROM ", peewee.Entity(previous))
            execute_statement("DROP TABLE ", peewee.Entity(previous))
        logger.info("%s: rebuilt in the current layout (rows copied)", table)


def _copied(field: peewee.Field, was_text: bool) -> peewee.Node:
    """What the new table's column holds, from the previous table's column of the same name: names stored as
    text become codes, listing ids stored as text their bytes; anything else is copied as it is."""
    column = peewee.Entity(field.column_name)
    if was_text and isinstance(field, (CodeField, ListingIdField)):
        return field.from_previous(column)
    return column


def _make_exact_columns_exact(models: Iterable[type[peewee.Model]]) -> None:
    """Convert ``ExactCharField`` columns of tables created before they existed to their binary collation
    (MySQL); columns that have it already are left alone, so this costs nothing after the first time."""
    info = peewee.Table("COLUMNS", schema="information_schema")
    columns = info.c
    for model in models:
        table = model._meta.table_name
        for field in model._meta.sorted_fields:
            if not isinstance(field, ExactCharField):
                continue
            current = (info.select(columns.COLLATION_NAME)
                       .where((columns.TABLE_SCHEMA == database.database) & (columns.TABLE_NAME == table)
                              & (columns.COLUMN_NAME == field.column_name))
                       .bind(database).scalar())
            if current is None or current == exact_collation():
                continue
            ctx = database.get_sql_context()  # ALTER TABLE `t` MODIFY <the field's definition>, built by Peewee
            ctx.literal("ALTER TABLE ").sql(peewee.Entity(table)).literal(" MODIFY ").sql(field.ddl(ctx))
            database.execute(ctx)
            logger.info("%s.%s: collation %s → %s (compared exactly)", table, field.column_name, current,
                        exact_collation())


def _drop_retired_indexes(models: Iterable[type[peewee.Model]]) -> None:
    """Drop the indexes a model's ``Meta.retired_indexes`` names (by their columns): replaced by slimmer ones."""
    for model in models:
        retired = set(getattr(model._meta, "retired_indexes", ()))
        if not retired:
            continue
        table = model._meta.table_name
        for index in database.get_indexes(table):
            if tuple(index.columns) in retired:
                ctx = database.get_sql_context()  # DROP INDEX `name` [ON `table`: MySQL]
                ctx.literal("DROP INDEX ").sql(peewee.Entity(index.name))
                if is_mysql():
                    ctx.literal(" ON ").sql(peewee.Entity(table))
                database.execute(ctx)
                logger.info("%s: index on %s dropped", table, ", ".join(index.columns))


def _add_missing_indexes(models: Iterable[type[peewee.Model]]) -> None:
    """Create the indexes a model gained since its table was created. SQLite's ``create_tables`` already does
    (``CREATE INDEX IF NOT EXISTS``); MySQL has no such clause, so Peewee skips every index of an existing table."""
    if not is_mysql():
        return
    for model in models:
        present = {tuple(index.columns) for index in database.get_indexes(model._meta.table_name)}
        for names, unique in model._meta.indexes:
            fields = [model._meta.fields[name] for name in names]
            if tuple(f.column_name for f in fields) not in present:
                database.execute(model.index(*fields, unique=unique))
                logger.info("%s: index on %s added", model._meta.table_name, ", ".join(names))


def _add_missing_columns(models: Iterable[type[peewee.Model]]) -> set[str]:
    """Add the columns a model gained since its table was created (all nullable or with a default), so an
    existing database reaches the current schema. Returns the tables that gained one."""
    from playhouse.migrate import SchemaMigrator, migrate

    migrator = SchemaMigrator.from_database(database.obj)
    grown: set[str] = set()
    for model in models:
        table = model._meta.table_name
        present = {c.name for c in database.get_columns(table)}
        missing = [f for f in model._meta.sorted_fields if f.column_name not in present]
        for field in missing:
            migrate(migrator.add_column(table, field.column_name, field))
            logger.info("%s: column %s added", table, field.column_name)
            grown.add(table)
    return grown
