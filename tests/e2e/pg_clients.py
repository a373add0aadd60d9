"""pg_clients.py -- the ten seed asks through Python's PostgreSQL drivers
against straum-serve, each answer compared with PostgreSQL's own over the
raw tables; then a few errors by SQLSTATE.

usage: pg_clients.py STRAUM_CONNINFO POSTGRES_CONNINFO ASKS_JSON

psycopg 3 binds parameters server-side (the extended protocol), results in
binary, and once more with binary parameters (aware datetimes, ints);
psycopg2 interpolates them into the text client-side and uses the simple
protocol. Rows compare as sets of Python values: Decimal digit for digit,
floats exactly, timestamps as instants, and each value's Python type too
(so a column typed int8 where PostgreSQL says numeric fails). Run by
tests/e2e/test_serve_pg.c."""
import datetime
import json
import re
import sys
import zoneinfo

import psycopg
import psycopg2

ZONE = "America/New_York"


def normalized(rows):
    def norm(v):
        return (type(v).__name__, v)
    return sorted((tuple(norm(v) for v in r) for r in rows), key=repr)


def placeholders(ask, params):
    """$n into %s, with the parameters in the order the $n appear."""
    order = [int(n) - 1 for n in re.findall(r"\$(\d+)", ask)]
    return re.sub(r"\$\d+", "%s", ask), [params[i] for i in order]


def typed(p):
    """A parameter as a Python value: dates as aware datetimes in the
    session zone, integers as int, else the string."""
    if re.fullmatch(r"\d{4}-\d\d-\d\d", p):
        d = datetime.date.fromisoformat(p)
        return datetime.datetime(d.year, d.month, d.day, tzinfo=zoneinfo.ZoneInfo(ZONE))
    if re.fullmatch(r"-?\d+", p):
        return int(p)
    return p


def compare(who, name, want, got):
    if normalized(want) != normalized(got):
        sys.exit(f"{who}: {name}: answers differ\n  postgres: {normalized(want)}\n"
                 f"  straum:   {normalized(got)}")


def main():
    straum, postgres, asks_path = sys.argv[1:4]
    asks = json.load(open(asks_path))
    want = {}
    with psycopg.connect(postgres) as pg:
        pg.execute(f"SET TIME ZONE '{ZONE}'")
        for a in asks:
            want[a["name"]] = pg.execute(a["sql"]).fetchall()

    with psycopg.connect(straum, autocommit=True) as c:
        c.execute(f"SET TimeZone TO '{ZONE}'")
        for a in asks:
            q, params = placeholders(a["ask"], a["params"])
            got = c.cursor(binary=True).execute(q, params).fetchall()
            compare("psycopg", a["name"], want[a["name"]], got)
            qb = q.replace("%s", "%b")
            got = c.cursor(binary=True).execute(qb, [typed(p) for p in params]).fetchall()
            compare("psycopg binary parameters", a["name"], want[a["name"]], got)
            got = c.execute(q, params, prepare=True).fetchall()
            compare("psycopg prepared", a["name"], want[a["name"]], got)
        print("psycopg: 10 seed asks equal" if len(asks) == 10 else "psycopg: wrong ask count")
        for sql, state in [
            ("SELECT trips FROM nosuch WHERE bucket >= '2024-01-01' AND bucket < '2024-02-01'",
             "42P01"),
            ("SELECT nope FROM trips WHERE bucket >= '2024-01-01' AND bucket < '2024-02-01'",
             "42703"),
            ("SELECT trips FROM trips WHERE", "42601"),
        ]:
            try:
                c.execute(sql)
                sys.exit(f"psycopg: {sql}: no error")
            except psycopg.Error as e:
                if e.sqlstate != state:
                    sys.exit(f"psycopg: {sql}: {e.sqlstate}, not {state}: {e}")
        if c.execute("SELECT 1").fetchone() != (1,):
            sys.exit("psycopg: SELECT 1")

    c = psycopg2.connect(straum)
    cur = c.cursor()  # psycopg2 opens a transaction: BEGIN ... ROLLBACK
    cur.execute(f"SET TimeZone TO '{ZONE}'")
    for a in asks:
        q, params = placeholders(a["ask"], a["params"])
        cur.execute(q, [typed(p) if isinstance(typed(p), int) else p for p in params])
        compare("psycopg2", a["name"], want[a["name"]], cur.fetchall())
    try:
        cur.execute("SELECT trips FROM nosuch WHERE bucket >= '2024-01-01' AND bucket < '2024-02-01'")
        sys.exit("psycopg2: no error")
    except psycopg2.Error as e:
        if e.pgcode != "42P01":
            sys.exit(f"psycopg2: {e.pgcode}: {e}")
    c.rollback()
    cur.execute("SELECT 1")
    if cur.fetchone() != (1,):
        sys.exit("psycopg2: SELECT 1 after ROLLBACK")
    c.close()
    print("psycopg2: 10 seed asks equal")


main()
