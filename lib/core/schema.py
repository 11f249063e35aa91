"""The schema in the database: every model's table, created or brought up to date (``animetop db init``).

Above ``models/`` (which bind to ``lib.core.db``'s proxy), so the database module never imports the models.
"""

from __future__ import annotations

import logging

import peewee

from lib.core.db import database, is_mysql
from models import ALL_MODELS
from models.base import ExactCharField, exact_collation

logger = logging.getLogger(__name__)


def create_tables() -> list[str]:
    """Create every model's table that does not exist yet; safe to run again."""
    database.create_tables(ALL_MODELS, safe=True)
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


def _make_exact_columns_exact(models) -> None:
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


def _drop_retired_indexes(models) -> None:
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


def _add_missing_indexes(models) -> None:
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


def _add_missing_columns(models) -> set[str]:
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
