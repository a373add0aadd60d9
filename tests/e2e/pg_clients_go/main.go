// pg_clients_go -- the ten seed asks through pgx (v4, the driver family
// Grafana's PostgreSQL data source is built on) against straum-serve, each
// answer compared with PostgreSQL's own over the raw tables; then a query
// written the way a Grafana time-series panel sends it, and an error by
// SQLSTATE.
//
// usage: pg_clients_go STRAUM_URL POSTGRES_CONNINFO ASKS_JSON
//
// pgx prepares each query (Parse, Describe: the parameter types the ask
// infers) and reads results in binary. Rows compare as sets of values:
// numerics as exact rationals, timestamps as instants, floats exactly, and
// each value's Go type too. Built offline against Debian's
// golang-github-jackc-pgx-v4-dev (GOPATH=/usr/share/gocode, GO111MODULE=off)
// by tests/e2e/test_serve_pg.c.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgconn"
	"github.com/jackc/pgtype"
	"github.com/jackc/pgx/v4"
)

type ask struct {
	Name   string   `json:"name"`
	SQL    string   `json:"sql"`
	Ask    string   `json:"ask"`
	Params []string `json:"params"`
}

func norm(v interface{}) string {
	switch x := v.(type) {
	case nil:
		return "NULL"
	case pgtype.Numeric:
		if x.Status != pgtype.Present {
			return "numeric:NULL"
		}
		r := new(big.Rat).SetInt(x.Int)
		if x.Exp > 0 {
			r.Mul(r, new(big.Rat).SetInt(new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(x.Exp)), nil)))
		} else if x.Exp < 0 {
			r.Quo(r, new(big.Rat).SetInt(new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(-x.Exp)), nil)))
		}
		return "numeric:" + r.RatString()
	case time.Time:
		return "time:" + x.UTC().Format(time.RFC3339Nano)
	case float64:
		return "float64:" + strconv.FormatFloat(x, 'g', -1, 64)
	default:
		return fmt.Sprintf("%T:%v", v, v)
	}
}

func rows(ctx context.Context, c *pgx.Conn, q string, args ...interface{}) ([]string, []uint32, error) {
	r, err := c.Query(ctx, q, args...)
	if err != nil {
		return nil, nil, err
	}
	defer r.Close()
	var out []string
	var oids []uint32
	for _, f := range r.FieldDescriptions() {
		oids = append(oids, f.DataTypeOID)
	}
	for r.Next() {
		vals, err := r.Values()
		if err != nil {
			return nil, nil, err
		}
		var cells []string
		for _, v := range vals {
			cells = append(cells, norm(v))
		}
		out = append(out, strings.Join(cells, "|"))
	}
	sort.Strings(out)
	return out, oids, r.Err()
}

func fail(f string, a ...interface{}) {
	fmt.Fprintf(os.Stderr, f+"\n", a...)
	os.Exit(1)
}

func main() {
	ctx := context.Background()
	var asks []ask
	b, err := os.ReadFile(os.Args[3])
	if err != nil {
		fail("%v", err)
	}
	if err := json.Unmarshal(b, &asks); err != nil {
		fail("%v", err)
	}
	pg, err := pgx.Connect(ctx, os.Args[2])
	if err != nil {
		fail("postgres: %v", err)
	}
	st, err := pgx.Connect(ctx, os.Args[1])
	if err != nil {
		fail("straum: %v", err)
	}
	for _, c := range []*pgx.Conn{pg, st} {
		if _, err := c.Exec(ctx, "SET TimeZone TO 'America/New_York'"); err != nil {
			fail("SET TimeZone: %v", err)
		}
	}
	for _, a := range asks {
		want, woids, err := rows(ctx, pg, a.SQL)
		if err != nil {
			fail("%s: postgres: %v", a.Name, err)
		}
		args := make([]interface{}, len(a.Params))
		for i, p := range a.Params {
			if n, err := strconv.Atoi(p); err == nil {
				args[i] = n
			} else {
				args[i] = p
			}
		}
		got, goids, err := rows(ctx, st, a.Ask, args...)
		if err != nil {
			fail("%s: straum: %v", a.Name, err)
		}
		if fmt.Sprint(woids) != fmt.Sprint(goids) {
			fail("%s: column types %v, PostgreSQL's %v", a.Name, goids, woids)
		}
		if strings.Join(want, "\n") != strings.Join(got, "\n") {
			fail("%s: answers differ\n  postgres: %v\n  straum:   %v", a.Name, want, got)
		}
	}
	fmt.Println("pgx: 10 seed asks equal")

	// A time-series panel: $__timeFilter expanded to RFC 3339 literals, the
	// time column first, ordered by it.
	from := time.Date(2024, 1, 17, 0, 0, 0, 0, time.UTC)
	q := fmt.Sprintf("SELECT bucket, trips FROM trips WHERE bucket >= '%s' AND bucket < '%s' "+
		"GROUP BY bucket ORDER BY bucket", from.Format(time.RFC3339), from.Add(24*time.Hour).Format(time.RFC3339))
	r, err := st.Query(ctx, q)
	if err != nil {
		fail("panel: %v", err)
	}
	n := 0
	var last time.Time
	for r.Next() {
		var t time.Time
		var trips int64
		if err := r.Scan(&t, &trips); err != nil {
			fail("panel: %v", err)
		}
		if !t.After(last) || trips <= 0 {
			fail("panel: row %d: %v %d", n, t, trips)
		}
		last = t
		n++
	}
	if r.Err() != nil || n == 0 {
		fail("panel: %v, %d rows", r.Err(), n)
	}
	var one int64
	if err := st.QueryRow(ctx, "SELECT trips FROM trips WHERE bucket >= $1 AND bucket < $2",
		from, from.Add(time.Hour)).Scan(&one); err != nil {
		fail("QueryRow with time.Time parameters: %v", err)
	}
	_, err = st.Exec(ctx, "SELECT trips FROM nosuch WHERE bucket >= '2024-01-01' AND bucket < '2024-02-01'")
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "42P01" {
		fail("unknown view: %v", err)
	}
	fmt.Println("pgx: panel query and errors")
}
