"""The storage marks of a database from before their table read as "never pruned"; any other error of the table is
raised. Told apart by the database's error code (MySQL/MariaDB) or its schema (SQLite), on both databases."""

from __future__ import annotations

import sqlite3

import peewee
import pymysql
import pytest

from lib.core.db import database, execute_statement, is_mysql
from lib.market import marks
from models import StorageMark


def test_a_set_mark_is_read(db):
    StorageMark.create(name=marks.PRUNED_BEFORE, value=1_700_000_000)
    assert marks.pruned_before() == 1_700_000_000.0
    assert marks.details_pruned_before() == 1_700_000_000.0


def test_a_database_from_before_the_marks_table_was_never_pruned(db):
    database.drop_tables([StorageMark])
    with pytest.raises((peewee.OperationalError, peewee.ProgrammingError)) as caught:
        StorageMark.get_or_none(StorageMark.name == marks.PRUNED_BEFORE)
    # what the drivers raise for it: MySQL's code, and for SQLite an error whose code is any SQL error's
    cause = caught.value.orig
    if is_mysql():
        assert isinstance(cause, pymysql.MySQLError) and cause.args[0] == marks.MYSQL_NO_SUCH_TABLE
    else:
        assert isinstance(cause, sqlite3.OperationalError)
    assert marks.pruned_before() is None and marks.details_pruned_before() is None


def test_another_error_of_the_marks_table_is_raised(db):
    """A marks table there but not as the code reads it (its value column missing): not a database that was
    never pruned, and its error is raised."""
    table = StorageMark._meta.table_name
    database.drop_tables([StorageMark])
    execute_statement("CREATE TABLE ", peewee.Entity(table), " (name VARCHAR(40) PRIMARY KEY)")
    with pytest.raises((peewee.OperationalError, peewee.ProgrammingError)):
        marks.pruned_before()
