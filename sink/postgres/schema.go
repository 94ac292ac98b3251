package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/connector-dev/connector/internal/cfgkey"
	"github.com/connector-dev/connector/sink"
)

// column is a column of the table as the sink writes it.
type column struct {
	name    string
	field   string // dotted path into the record's value
	typ     string // format_type: "bigint", "character varying(20)", ...
	oid     uint32
	typmod  int32
	notNull bool
	conv    converter
}

// plan is what the sink writes: the table, its columns in COPY order, and
// for upsert the conflict target.
type plan struct {
	table    pgx.Identifier
	progress pgx.Identifier
	columns  []column
	key      []string
	// checkSQL finds the first staged row (by staging order) that a CHECK
	// constraint of the table on written columns refuses, among the rows
	// the merge would write (the last of each key): run at pre-commit, so
	// that such a row is refused there, as in insert mode, rather than by
	// the merge at commit, after its checkpoint completed, at every
	// commit again. "" when the table has no such check. checkNames are
	// the constraints it tests, by the index it returns.
	checkSQL   string
	checkNames []string
	// mergeOnly names the constraints only the merge meets (foreign keys,
	// unique and exclusion constraints other than the key's, CHECKs on
	// columns the sink does not write or on the whole row): logged at the
	// start.
	mergeOnly []string
}

func (p *plan) columnNames() []string {
	names := make([]string, len(p.columns))
	for i, c := range p.columns {
		names[i] = c.name
	}
	return names
}

func (p *plan) fields() []string {
	fields := make([]string, len(p.columns))
	for i, c := range p.columns {
		fields[i] = c.field
	}
	return fields
}

// identifier makes name or schema.name an identifier; an unqualified one
// takes schema, if given.
func identifier(s, schema string) pgx.Identifier {
	sch, name, _ := splitName(s)
	switch {
	case sch != "":
		return pgx.Identifier{sch, name}
	case schema != "":
		return pgx.Identifier{schema, name}
	}
	return pgx.Identifier{name}
}

// inspect reads the table's columns and checks what the config names
// against them: every problem that is the config's fault is
// sink.ErrInvalidConfig, naming the key and the object.
func inspect(ctx context.Context, conn *pgx.Conn, cfg *Config) (*plan, error) {
	table := identifier(cfg.Table, "")
	var schema string
	var exists bool
	err := conn.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL, coalesce((SELECT n.nspname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.oid = to_regclass($1)), '')`,
		table.Sanitize()).Scan(&exists, &schema)
	if err != nil {
		return nil, err
	}
	if !exists {
		return nil, cfgkey.Wrap("sink.table", fmt.Errorf("%w: sink.table: table %s does not exist in database %s (create it; the sink does not)", sink.ErrInvalidConfig, cfg.Table, conn.Config().Database))
	}
	p := &plan{table: table, progress: identifier(cfg.ProgressTable, schema), key: cfg.Key}
	rows, err := conn.Query(ctx, `SELECT a.attname, a.atttypid, a.atttypmod, a.attnotnull, a.atthasdef OR a.attidentity <> '', a.attgenerated <> '', format_type(a.atttypid, a.atttypmod)
		FROM pg_attribute a WHERE a.attrelid = $1::regclass AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum`, table.Sanitize())
	if err != nil {
		return nil, err
	}
	type attr struct {
		column
		hasDefault, generated bool
	}
	var attrs []attr
	for rows.Next() {
		var a attr
		if err := rows.Scan(&a.name, &a.oid, &a.typmod, &a.notNull, &a.hasDefault, &a.generated, &a.typ); err != nil {
			rows.Close()
			return nil, err
		}
		attrs = append(attrs, a)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	find := func(name string) *attr {
		for i := range attrs {
			if attrs[i].name == name {
				return &attrs[i]
			}
		}
		return nil
	}
	// problems are reported together; key is the first one's: a column
	// the sink cannot write is sink.columns' when it names the columns,
	// else sink.table's.
	var problems []string
	var key string
	problem := func(k, format string, args ...any) {
		if key == "" {
			key = k
		}
		problems = append(problems, fmt.Sprintf(format, args...))
	}
	columnsKey := "sink.table"
	if len(cfg.Columns) > 0 {
		columnsKey = "sink.columns"
	}
	add := func(c column) {
		conv, why := converterFor(c.oid, c.typmod)
		if why != "" {
			problem(columnsKey, "column %s (%s): %s", c.name, c.typ, why)
			return
		}
		c.conv = conv
		p.columns = append(p.columns, c)
	}
	if len(cfg.Columns) > 0 {
		for _, name := range sortedKeys(cfg.Columns) {
			a := find(name)
			switch {
			case a == nil:
				problem("sink.columns", "sink.columns: column %s does not exist in %s (it has %s)", name, cfg.Table, names(attrs, func(a attr) string { return a.name }))
			case a.generated:
				problem("sink.columns", "sink.columns: column %s of %s is generated: it cannot be written", name, cfg.Table)
			default:
				c := a.column
				c.field = cfg.Columns[name]
				add(c)
			}
		}
	} else {
		for _, a := range attrs {
			if !a.hasDefault && !a.generated {
				c := a.column
				c.field = c.name
				add(c)
			}
		}
		if len(p.columns) == 0 && len(problems) == 0 {
			problem("sink.columns", "sink.columns: every column of %s has a default or is generated: name the columns to write", cfg.Table)
		}
	}
	for _, k := range cfg.Key {
		if !slices.ContainsFunc(p.columns, func(c column) bool { return c.name == k }) {
			problem("sink.key", "sink.key: column %s is not among the columns written (%s)", k, strings.Join(p.columnNames(), ", "))
		}
	}
	if len(problems) > 0 {
		return nil, cfgkey.Wrap(key, fmt.Errorf("%w: %s", sink.ErrInvalidConfig, strings.Join(problems, "; ")))
	}
	if len(cfg.Key) > 0 {
		if err := checkUnique(ctx, conn, cfg, table); err != nil {
			return nil, err
		}
		if err := p.readConstraints(ctx, conn); err != nil {
			return nil, err
		}
	}
	if err := checkPrivileges(ctx, conn, cfg, table); err != nil {
		return nil, err
	}
	return p, nil
}

// checkUnique: upsert needs a primary key or unique index on exactly the
// key columns (ON CONFLICT's arbiter).
func checkUnique(ctx context.Context, conn *pgx.Conn, cfg *Config, table pgx.Identifier) error {
	var found bool
	err := conn.QueryRow(ctx, `SELECT EXISTS (
		SELECT 1 FROM pg_index i WHERE i.indrelid = $1::regclass AND i.indisunique AND i.indimmediate AND i.indpred IS NULL AND i.indexprs IS NULL
		AND (SELECT array_agg(a.attname::text ORDER BY a.attname) FROM pg_attribute a WHERE a.attrelid = i.indrelid AND a.attnum = ANY(i.indkey)) = $2)`,
		table.Sanitize(), sortedCopy(cfg.Key)).Scan(&found)
	if err != nil {
		return err
	}
	if !found {
		return cfgkey.Wrap("sink.key", fmt.Errorf("%w: sink.key: %s has no primary key or unique index on exactly (%s) that is not deferrable: upsert's ON CONFLICT needs one",
			sink.ErrInvalidConfig, cfg.Table, strings.Join(cfg.Key, ", ")))
	}
	return nil
}

// readConstraints sorts the table's constraints into the checks upsert
// tests at pre-commit (checkSQL) and those only the merge meets
// (mergeOnly): a foreign key or a unique constraint depends on the rows
// in the table, and a check on a column the sink does not write on the
// value the table gives it. The checks are not put on the staging table:
// a row refused there may be one a later row of its key replaces, which
// the merge never writes.
func (p *plan) readConstraints(ctx context.Context, conn *pgx.Conn) error {
	rows, err := conn.Query(ctx, `SELECT c.conname, c.contype::text, coalesce(pg_get_expr(c.conbin, c.conrelid), ''),
		coalesce((SELECT array_agg(a.attname::text ORDER BY a.attname) FROM pg_attribute a WHERE a.attrelid = c.conrelid AND a.attnum = ANY(c.conkey)), '{}'),
		coalesce(c.conkey && ARRAY[0::int2] OR EXISTS (SELECT 1 FROM unnest(c.conkey) k WHERE k < 0), false)
		FROM pg_constraint c WHERE c.conrelid = $1::regclass AND c.contype IN ('c', 'f', 'u', 'p', 'x') ORDER BY c.conname`, p.table.Sanitize())
	if err != nil {
		return err
	}
	defer rows.Close()
	written := p.columnNames()
	key := sortedCopy(p.key)
	var exprs []string
	for rows.Next() {
		var name, typ, expr string
		var cols []string
		var wholeRow bool
		if err := rows.Scan(&name, &typ, &expr, &cols, &wholeRow); err != nil {
			return err
		}
		switch {
		case typ == "c" && expr != "" && !wholeRow && !slices.ContainsFunc(cols, func(c string) bool { return !slices.Contains(written, c) }):
			exprs = append(exprs, expr)
			p.checkNames = append(p.checkNames, name)
		case (typ == "u" || typ == "p") && slices.Equal(cols, key):
			// the merge's arbiter
		default:
			p.mergeOnly = append(p.mergeOnly, name)
		}
	}
	if err := rows.Err(); err != nil {
		return err
	}
	if len(exprs) > 0 {
		p.checkSQL = checkSQL(p, exprs)
	}
	return nil
}

// checkSQL is plan.checkSQL for the check expressions exprs: the row's
// number in the transaction's staging order (from 1) and the index of the
// first check it fails. A check holds when its expression is not false.
func checkSQL(p *plan, exprs []string) string {
	cols := quoteColumns(p.columnNames())
	key := quoteColumns(p.key)
	var which, fails []string
	for i, e := range exprs {
		which = append(which, fmt.Sprintf("WHEN NOT (%s) THEN %d", e, i))
		fails = append(fails, "NOT ("+e+")")
	}
	return `SELECT connector_seq - (SELECT min(connector_seq) FROM ` + stageTable.Sanitize() + `) + 1, CASE ` + strings.Join(which, " ") + ` END
		FROM (SELECT DISTINCT ON (` + key + `) ` + cols + `, connector_seq FROM ` + stageTable.Sanitize() + ` ORDER BY ` + key + `, connector_seq DESC) AS s
		WHERE ` + strings.Join(fails, " OR ") + ` ORDER BY 1 LIMIT 1`
}

// checkPrivileges: INSERT on the table (and UPDATE for upsert).
func checkPrivileges(ctx context.Context, conn *pgx.Conn, cfg *Config, table pgx.Identifier) error {
	need := []string{"INSERT"}
	if cfg.Mode == ModeUpsert {
		need = append(need, "UPDATE")
	}
	for _, priv := range need {
		var ok bool
		if err := conn.QueryRow(ctx, `SELECT has_table_privilege($1::regclass, $2)`, table.Sanitize(), priv).Scan(&ok); err != nil {
			return err
		}
		if !ok {
			return cfgkey.Wrap("sink.table", fmt.Errorf("%w: sink.table: role %s lacks %s on %s (GRANT %s ON %s TO %s)",
				sink.ErrInvalidConfig, conn.Config().User, priv, cfg.Table, priv, table.Sanitize(), conn.Config().User))
		}
	}
	return nil
}

// pgCode returns the SQLSTATE of a server error, "" for another error.
func pgCode(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code
	}
	return ""
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func sortedCopy(s []string) []string {
	out := slices.Clone(s)
	slices.Sort(out)
	return out
}

func names[T any](xs []T, name func(T) string) string {
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i] = name(x)
	}
	return strings.Join(out, ", ")
}
