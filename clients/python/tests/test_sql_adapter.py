"""The DB-API adapter as ``postgres.execute``, on a real sqlite3 cursor
(the same DB-API 2.0 calls psycopg takes): ordinary statements run,
destructive ones are denied and leave the data alone."""

from __future__ import annotations

import sqlite3

import pytest

from conftest import AGENT_TOKEN, Server
from parallax_client import Denied, Firewall, Parallax
from parallax_client.adapters.dbapi import SqlAdapter


def test_queries_run_and_destructive_sql_is_denied(server: Server, tmp_path) -> None:
    conn = sqlite3.connect(tmp_path / "crm.db")
    conn.execute("CREATE TABLE customers (name TEXT)")
    conn.execute("INSERT INTO customers VALUES ('ana'), ('bob')")
    conn.commit()
    fw = Firewall(Parallax(server.url, token=AGENT_TOKEN, timeout=10))
    cur = fw.wrap(SqlAdapter(conn.cursor()))
    cur.execute("SELECT name FROM customers WHERE name = ?", ("ana",))
    assert cur.fetchall() == [("ana",)]
    with pytest.raises(Denied) as e:
        cur.execute("DELETE FROM customers;")
    assert e.value.rule_ids == ["policy.no-destructive-sql"]
    with pytest.raises(Denied) as e:
        cur.execute("TRUNCATE customers")
    assert e.value.rule_ids == ["policy.no-destructive-sql"]
    with pytest.raises(Denied) as e:
        cur.execute("drop table customers")
    # A block stops the chain: the regex evaluator's rule, before the policies.
    assert e.value.rule_ids == ["sql-drop-table"]
    assert conn.execute("SELECT count(*) FROM customers").fetchone() == (2,)
