"""The codebase's SQLite SQL, run on PostgreSQL: translated once per distinct statement.

Why translate rather than keep a second copy of every statement: ~540 ``execute`` calls in
~70 modules are written for SQLite, and a PostgreSQL copy of each would drift the day one side
changes. ``sqlglot`` parses SQLite and writes PostgreSQL (placeholders, ``IFNULL``,
``GROUP_CONCAT``, ``IS`` comparisons, ``MAX(a, b)``...); what it does not know is rewritten on
its syntax tree here:

- ``INSERT OR IGNORE`` -> ``ON CONFLICT DO NOTHING``; ``INSERT OR REPLACE`` -> ``ON CONFLICT
  (primary key) DO UPDATE`` every inserted column (the table's key from :data:`KEYS`);
- ``json_extract(col, '$.a')`` on a TEXT column -> ``(col::jsonb #>> '{a}')``;
- ``strftime('%s', 'now')`` and friends -> ``EXTRACT``/``to_char`` on ``now()``;
- the conflict target sqlglot writes as ``(a NULLS FIRST)`` -> ``(a)``;
- ``%`` in string literals doubled when the statement has parameters (psycopg's placeholders).

Measured coverage, and what does not translate (FTS5 ``MATCH``/``bm25``, ``PRAGMA``,
``sqlite_master``), is in docs/team.md; :class:`Untranslatable` names the statement.
The cache is keyed by the statement text: f-string statements with a few variants each stay a
handful of entries.
"""

from __future__ import annotations

import functools
import re

import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError

KEYS: dict[str, tuple[str, ...]] = {}
"""``INSERT OR REPLACE`` targets: table -> its primary key columns (filled from the
PostgreSQL schema, signet.store.pg_schema)."""


_DO_NOTHING = sqlglot.parse_one("INSERT INTO t (a) VALUES (1) ON CONFLICT DO NOTHING", read="postgres").args["conflict"]


class Untranslatable(ValueError):
    """A statement that has no PostgreSQL form yet (an engine-specific one, e.g. FTS5)."""


_SQLITE_ONLY = re.compile(r"(?is)^\s*(PRAGMA|VACUUM|ANALYZE\s+sqlite_|REINDEX)|\b(main|old|temp)\.sqlite_")

_CATALOG = """(SELECT 'table' AS type, table_name::text AS name, table_name::text AS tbl_name
  FROM information_schema.tables WHERE table_schema = current_schema()
  UNION ALL SELECT 'index', indexname::text, tablename::text FROM pg_indexes WHERE schemaname = current_schema()
  UNION ALL SELECT 'trigger', tgname::text, c.relname::text FROM pg_trigger t
    JOIN pg_class c ON c.oid = t.tgrelid JOIN pg_namespace n ON n.oid = c.relnamespace
    WHERE t.tgisinternal = false AND n.nspname = current_schema())"""
"""``sqlite_master``'s type/name/tbl_name columns from PostgreSQL's catalog (``sql`` has none)."""


def _strftime(node: exp.Expr) -> exp.Expr:
    fmt = node.args.get("format") or (node.expressions[0] if node.expressions else None)
    this = node.this if isinstance(node.this, exp.Literal) else node.this.find(exp.Literal)  # TsOrDsToTimestamp('now')
    fmt_s = fmt.name if isinstance(fmt, exp.Literal) else None
    when = this.name if isinstance(this, exp.Literal) else None
    if when != "now" or fmt_s is None:
        raise Untranslatable("strftime other than of 'now'")
    now = "clock_timestamp() AT TIME ZONE 'UTC'"
    mapping = {
        "%s": "EXTRACT(EPOCH FROM clock_timestamp())::BIGINT::TEXT",
        "%Y-%m-%dT%H:%M:%fZ": f'to_char({now}, \'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"\')',
        "%Y-%m-%dT%H:%M:%SZ": f'to_char({now}, \'YYYY-MM-DD"T"HH24:MI:SS"Z"\')',
        "%Y-%m-%d": f"to_char({now}, 'YYYY-MM-DD')",
    }
    if fmt_s not in mapping:
        raise Untranslatable(f"strftime format {fmt_s!r}")
    return sqlglot.parse_one(mapping[fmt_s], read="postgres")


def _conditions(tree: exp.Expr) -> list[exp.Expr]:
    """The places a truth value is read (WHERE, HAVING, ON, CASE WHEN, and the operands of
    AND/OR/NOT under them)."""
    found: list[exp.Expr] = []
    for node in tree.find_all(exp.Where, exp.Having, exp.If, exp.Join):
        cond = node.args.get("on") if isinstance(node, exp.Join) else node.this
        if cond is not None:
            found.append(cond)
    out: list[exp.Expr] = []
    while found:
        cond = found.pop()
        if isinstance(cond, exp.Paren | exp.Not):
            found.append(cond.this)
        elif isinstance(cond, exp.And | exp.Or):
            found.extend([cond.this, cond.expression])
        else:
            out.append(cond)
    return out


FTS_TABLES = {
    "memories_fts": "memories",
    "memories_ctx_fts": "memories",
    "transcript_turns_fts": "transcript_turns",
    "memory_hints_fts": "memory_hints",
}
"""FTS5 table -> the table whose ``fts`` tsvector column stands for it (signet.store.pg_schema).
``memories_ctx_fts`` (content + thread context) is answered from the content alone."""


def _first_placeholder(tree: exp.Expr) -> exp.Expr | None:
    """The placeholder written first in the statement's text (the tree's order is not the text's)."""
    marks = [p for p in tree.find_all(exp.Placeholder) if not p.this]
    for i, mark in enumerate(marks):
        mark.set("this", f"signet_p{i}_")
    try:
        text = tree.sql(dialect="sqlite")
        found = sorted((text.find(f":signet_p{i}_"), i) for i in range(len(marks)))
    finally:
        for mark in marks:
            mark.set("this", None)
    return marks[found[0][1]] if found else None


def _fts(tree: exp.Expr) -> None:
    """``T MATCH ?`` / ``bm25(T, …)`` over an FTS5 table as a ``tsvector`` search.

    The table becomes its content table under the same name, the MATCH parameter moves into
    ``CROSS JOIN signet_fts_query(?) AS signet_q`` (a function in PostgreSQL, signet.store.
    pg_migrations), ``T MATCH ?`` becomes ``T.fts @@ signet_q`` and ``bm25(T, …)`` becomes
    ``-ts_rank(T.fts, signet_q)`` (negative, best first, as bm25; its column weights are not
    kept). Moving the parameter keeps the parameter order only when it is the statement's first:
    otherwise the statement is refused."""
    matches = [m for m in tree.find_all(exp.Match) if isinstance(m.this, exp.Column) and m.this.name in FTS_TABLES]
    if not matches:
        return
    if len(matches) > 1:
        raise Untranslatable("more than one FTS5 MATCH in a statement")
    match = matches[0]
    fts_name = match.this.name
    param: exp.Expr | None = match.expression
    if param is None:
        raise Untranslatable("an FTS5 MATCH without a parameter")
    if _first_placeholder(tree) is not param:
        raise Untranslatable("an FTS5 MATCH whose parameter is not the statement's first")
    select = match.find_ancestor(exp.Select)
    table = next(
        (t for t in (select.find_all(exp.Table) if select else []) if t.name == fts_name and not t.alias), None
    )
    if select is None or table is None:
        raise Untranslatable(f"an FTS5 MATCH on {fts_name} outside its FROM")
    table.replace(exp.alias_(exp.to_table(FTS_TABLES[fts_name]), fts_name, table=True))
    join = sqlglot.parse_one("SELECT 1 FROM x CROSS JOIN signet_fts_query(%s) AS signet_q", read="postgres")
    join_node = join.args["joins"][0]
    next(join_node.find_all(exp.Placeholder)).replace(param.copy())
    select.set("joins", [join_node, *(select.args.get("joins") or [])])
    match.replace(sqlglot.parse_one(f"{fts_name}.fts @@ signet_q", read="postgres"))
    for fn in list(tree.find_all(exp.Anonymous)):
        if fn.name.lower() == "bm25":
            fn.replace(sqlglot.parse_one(f"-ts_rank({fts_name}.fts, signet_q)", read="postgres"))


def _rewrite(tree: exp.Expr) -> exp.Expr:
    _fts(tree)
    for table in list(tree.find_all(exp.Table)):
        if table.name in ("sqlite_master", "sqlite_schema") and not table.args.get("db"):
            catalog = sqlglot.parse_one(f"SELECT 1 FROM {_CATALOG} AS x", read="postgres").args["from_"].this
            catalog.set("alias", exp.TableAlias(this=exp.to_identifier(table.alias_or_name)))
            table.replace(catalog)
    for join in tree.find_all(exp.Join):  # SQLite's CROSS JOIN … ON (a planner hint) is an inner join
        if (join.args.get("kind") or "").upper() == "CROSS" and join.args.get("on") is not None:
            join.set("kind", None)
    for node in list(tree.find_all(exp.Insert)):
        alt = (node.args.get("alternative") or "").upper()
        if alt == "IGNORE":
            node.set("alternative", None)
            node.set("conflict", _DO_NOTHING.copy())
        elif alt == "REPLACE":
            table = node.this.this if isinstance(node.this, exp.Schema) else node.this
            name = table.name if isinstance(table, exp.Table) else ""
            keys = KEYS.get(name)
            cols = [c.name for c in node.this.expressions] if isinstance(node.this, exp.Schema) else []
            if not keys or not cols:
                raise Untranslatable(f"INSERT OR REPLACE into {name or '?'} (no key or column list)")
            node.set("alternative", None)
            sets = [c for c in cols if c not in keys]
            conflict = f"ON CONFLICT ({', '.join(keys)}) " + (
                "DO UPDATE SET " + ", ".join(f"{c} = excluded.{c}" for c in sets) if sets else "DO NOTHING"
            )
            probe = sqlglot.parse_one(f"INSERT INTO t (a) VALUES (1) {conflict}", read="postgres")
            node.set("conflict", probe.args["conflict"])
    for oc in list(tree.find_all(exp.OnConflict)):
        keys = oc.args.get("conflict_keys")
        if keys:
            oc.set("conflict_keys", [k.this if isinstance(k, exp.Ordered) else k for k in keys])
        ins = oc.parent
        target = ins.this.this if isinstance(ins, exp.Insert) and isinstance(ins.this, exp.Schema) else None
        if isinstance(target, exp.Table):  # SQLite reads a bare column in DO UPDATE as the target row's
            for assign in oc.args.get("expressions") or []:
                for col in assign.expression.find_all(exp.Column) if assign.expression is not None else []:
                    if not col.table:
                        col.set("table", exp.to_identifier(target.alias_or_name))
    unnamed = [s for s in tree.find_all(exp.Subquery) if isinstance(s.parent, exp.From | exp.Join) and not s.alias]
    for i, sub in enumerate(unnamed):  # PostgreSQL 15 wants a name on a FROM subquery
        sub.set("alias", exp.TableAlias(this=exp.to_identifier(f"_s{i}")))
    for agg in list(tree.find_all(exp.Sum, exp.Avg)):  # SUM(a = 1): SQLite's comparisons are 0/1
        if isinstance(agg.this, exp.Predicate | exp.Connector | exp.Not):
            agg.set("this", exp.cast(agg.this, "INT"))
    for fn in list(tree.find_all(exp.Anonymous)):
        if fn.name.lower() == "strftime":
            fn.replace(_strftime(fn))
        elif fn.name.lower() == "json_each" and len(fn.expressions) == 1:  # a JSON array's values
            holder = fn.parent
            fn.replace(
                exp.Anonymous(this="json_array_elements_text", expressions=[exp.cast(fn.expressions[0], "JSON")])
            )
            if isinstance(holder, exp.Table):  # one column, `value`, named `json_each.value` when unaliased
                if not holder.alias:
                    holder.set("alias", exp.TableAlias(this=exp.to_identifier("json_each")))
                holder.args["alias"].set("columns", [exp.to_identifier("value")])
    for table in tree.find_all(exp.Table):  # INDEXED BY: a SQLite planner hint
        if table.args.get("indexed") is not None:
            table.set("indexed", None)
    for limit in list(tree.find_all(exp.Limit)):  # SQLite's LIMIT -1 (any negative): no limit
        n = limit.expression
        if isinstance(n, exp.Neg) and isinstance(n.this, exp.Literal) and not n.this.is_string:
            limit.set("expression", exp.var("ALL"))
    for cond in _conditions(tree):  # SQLite's flags are 0/1 integers read as truth values
        numeric = isinstance(cond, exp.Literal) and not cond.is_string  # `WHERE 1` (a built clause)
        if numeric or isinstance(cond, exp.Column | exp.Placeholder):  # a parameter too: a bool is sent as 0/1
            cond.replace(exp.paren(exp.NEQ(this=cond.copy(), expression=exp.Literal.number(0))))
    for tf in list(tree.find_all(exp.TimeToStr)):
        tf.replace(_strftime(exp.Anonymous(this=tf.this, expressions=[tf.args.get("format")])))
    for je in list(tree.find_all(exp.JSONExtract, exp.JSONExtractScalar)):
        path = je.expression
        raw = path.sql(dialect="sqlite") if path is not None else ""
        m = re.fullmatch(r"'\$((?:\.\w+|\[\d+\])*)'", raw)  # keys and array indexes: $.a[0].b
        if m is None:
            raise Untranslatable(f"json path {raw}")
        parts = re.findall(r"\w+", m.group(1))  # `#>>` takes an index as a path element too
        path_sql = sqlglot.parse_one(f"(x #>> '{{{','.join(parts)}}}')", read="postgres")
        hole = next(c for c in path_sql.find_all(exp.Column) if c.name == "x")
        hole.replace(exp.cast(je.this, "JSONB"))
        je.replace(path_sql)
    return tree


KEYS_SQL = """
SELECT c.relname, array_agg(a.attname::text ORDER BY k.ord)
FROM pg_index i
JOIN pg_class c ON c.oid = i.indrelid
JOIN pg_namespace n ON n.oid = c.relnamespace AND n.nspname = current_schema()
CROSS JOIN LATERAL unnest(i.indkey) WITH ORDINALITY AS k(attnum, ord)
JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum = k.attnum
WHERE i.indisprimary
GROUP BY c.relname
"""
"""Each table's primary key columns, for :data:`KEYS`."""


def load_keys(rows: list[tuple[str, list[str]]]) -> None:
    """Set :data:`KEYS` from :data:`KEYS_SQL`'s rows (before the first ``INSERT OR REPLACE``)."""
    KEYS.update({name: tuple(cols) for name, cols in rows})
    _translate.cache_clear()


_MARKER_LIST = re.compile(r"(?i)\bIN\s*\(\s*\?(?:\s*,\s*\?)+\s*\)")
"""``IN (?, ?, …)``: a list of parameters whose length varies call by call."""
_LIST_HOLE = "signet_marker_list"


def translate(sql: str, *, with_params: bool) -> str:
    """``sql`` (SQLite) as PostgreSQL; raises :class:`Untranslatable` with the reason.

    An ``IN (?, ?, …)`` list is translated once whatever its length: recall's statements
    filter a pool of ids by primary key, so nearly every call had a new length, missed the
    cache and paid sqlglot's parse (15-40 ms; a third of a recall's time on PostgreSQL)."""
    counts: list[int] = []

    def hole(m: re.Match[str]) -> str:
        counts.append(m.group(0).count("?"))
        return f"IN ({_LIST_HOLE}(?))"

    short = _MARKER_LIST.sub(hole, sql)
    if not counts:
        return _translate(sql, with_params=with_params)
    marker = "%s"  # sqlglot writes a ``?`` as psycopg's placeholder
    pieces = re.split(rf'"?{_LIST_HOLE}"?\(%s\)', _translate(short, with_params=with_params), flags=re.IGNORECASE)
    if len(pieces) != len(counts) + 1:  # the hole did not survive as written: translate as it is
        return _translate(sql, with_params=with_params)
    out = [pieces[0]]
    for n, piece in zip(counts, pieces[1:], strict=True):
        out.append(", ".join([marker] * n))
        out.append(piece)
    return "".join(out)


@functools.lru_cache(maxsize=4096)
def _translate(sql: str, *, with_params: bool) -> str:
    """:func:`translate` without the ``IN`` lists' folding, cached per distinct text."""
    if _SQLITE_ONLY.search(sql):
        raise Untranslatable(f"SQLite-only statement: {sql.strip()[:80]}")
    try:
        trees = sqlglot.parse(sql, read="sqlite")
    except SqlglotError as exc:
        raise Untranslatable(f"does not parse: {str(exc)[:120]}") from None
    out: list[str] = []
    for tree in trees:
        if tree is None:
            continue
        tree = _rewrite(tree)
        if with_params:
            for lit in tree.find_all(exp.Literal):
                if lit.is_string and "%" in lit.this:
                    lit.set("this", lit.this.replace("%", "%%"))
        out.append(tree.sql(dialect="postgres", identify=True))
    return ";\n".join(out)
