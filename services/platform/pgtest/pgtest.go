// Package pgtest gives tests real Postgres databases, migrated once per
// schema and cloned per test.
//
// Tests read ZIMMER_TEST_DATABASE_URL (an admin URL; `make test` starts a
// private cluster and sets it). Without it they skip — unless
// ZIMMER_REQUIRE_DB=1, as in CI, where a missing database is a failure.
package pgtest

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/zimmerhq/zimmer/services/platform/pgdb"
)

// AdminURL returns the test server's admin URL, or skips (fails under
// ZIMMER_REQUIRE_DB=1) when there is none.
func AdminURL(t testing.TB) string {
	t.Helper()
	u := os.Getenv("ZIMMER_TEST_DATABASE_URL")
	if u == "" {
		if os.Getenv("ZIMMER_REQUIRE_DB") == "1" {
			t.Fatal("ZIMMER_TEST_DATABASE_URL is not set but ZIMMER_REQUIRE_DB=1: run the tests with `make test`")
		}
		t.Skip("ZIMMER_TEST_DATABASE_URL not set; run `make test` to start a private Postgres")
	}
	return u
}

// NewDatabase creates a database cloned from a template migrated with sets,
// drops it when the test ends, and returns its URL.
func NewDatabase(t testing.TB, sets ...pgdb.MigrationSet) string {
	t.Helper()
	admin := AdminURL(t)
	name, u := clone(t, admin, "test_", sets)
	t.Cleanup(func() {
		conn, err := pgx.Connect(context.Background(), admin)
		if err != nil {
			t.Errorf("drop test database %s: %v", name, err)
			return
		}
		defer conn.Close(context.Background())
		if _, err := conn.Exec(context.Background(), fmt.Sprintf(`DROP DATABASE IF EXISTS %q WITH (FORCE)`, name)); err != nil {
			t.Errorf("drop test database %s: %v", name, err)
		}
	})
	return u
}

// DB returns a pool on a fresh database (see NewDatabase), closed when the
// test ends. Use it when the code under test commits, listens or notifies.
func DB(t testing.TB, sets ...pgdb.MigrationSet) *pgxpool.Pool {
	t.Helper()
	pool, err := pgdb.Open(context.Background(), NewDatabase(t, sets...))
	if err != nil {
		t.Fatalf("open test database: %v", err)
	}
	t.Cleanup(pool.Close)
	return pool
}

var (
	sharedMu    sync.Mutex
	sharedPools = map[string]*pgxpool.Pool{}
)

// Tx returns a transaction on a migrated database shared by the test binary,
// rolled back when the test ends; nothing a test writes is seen by another.
func Tx(t testing.TB, sets ...pgdb.MigrationSet) pgx.Tx {
	t.Helper()
	admin := AdminURL(t) // may skip or fail: before taking the lock
	key := templateName(sets)
	sharedMu.Lock()
	defer sharedMu.Unlock()
	pool, ok := sharedPools[key]
	if !ok {
		// Deliberately not tied to t: the database outlives this test and is
		// reclaimed with the cluster that `make test` discards.
		var err error
		_, u := clone(t, admin, "shared_", sets)
		pool, err = pgdb.Open(context.Background(), u)
		if err != nil {
			t.Fatalf("open shared test database: %v", err)
		}
		sharedPools[key] = pool
	}
	tx, err := pool.Begin(context.Background())
	if err != nil {
		t.Fatalf("begin test transaction: %v", err)
	}
	t.Cleanup(func() { _ = tx.Rollback(context.Background()) })
	return tx
}

// clone creates a database named prefix+random from the template for sets.
func clone(t testing.TB, admin, prefix string, sets []pgdb.MigrationSet) (name, dbURL string) {
	t.Helper()
	ctx := context.Background()
	tpl, err := ensureTemplate(ctx, admin, sets)
	if err != nil {
		t.Fatalf("prepare template database: %v", err)
	}
	name = prefix + randomHex(8)
	if err := withLock(ctx, admin, tpl, func(conn *pgx.Conn) error {
		_, err := conn.Exec(ctx, fmt.Sprintf(`CREATE DATABASE %q TEMPLATE %q STRATEGY FILE_COPY`, name, tpl))
		return err
	}); err != nil {
		t.Fatalf("clone template %s: %v", tpl, err)
	}
	return name, withDatabase(admin, name)
}

// ensureTemplate creates (once per schema, across processes) a database
// migrated with sets. It is built under a temporary name and renamed when
// complete, so a run that died half-way never leaves a broken template.
func ensureTemplate(ctx context.Context, admin string, sets []pgdb.MigrationSet) (string, error) {
	tpl := templateName(sets)
	err := withLock(ctx, admin, tpl, func(conn *pgx.Conn) error {
		var exists bool
		if err := conn.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)`, tpl).Scan(&exists); err != nil {
			return err
		}
		if exists {
			return nil
		}
		building := tpl + "_building"
		if _, err := conn.Exec(ctx, fmt.Sprintf(`DROP DATABASE IF EXISTS %q WITH (FORCE)`, building)); err != nil {
			return err
		}
		if _, err := conn.Exec(ctx, fmt.Sprintf(`CREATE DATABASE %q`, building)); err != nil {
			return err
		}
		if err := pgdb.Migrate(ctx, withDatabase(admin, building), sets...); err != nil {
			return err
		}
		_, err := conn.Exec(ctx, fmt.Sprintf(`ALTER DATABASE %q RENAME TO %q`, building, tpl))
		return err
	})
	return tpl, err
}

// withLock runs fn holding a cluster-wide advisory lock named by key:
// Postgres refuses to clone a template that another session is cloning or
// connected to, and test packages run as separate processes.
func withLock(ctx context.Context, admin, key string, fn func(*pgx.Conn) error) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		return fmt.Errorf("connect to test server: %w", err)
	}
	defer conn.Close(context.Background())
	sum := sha256.Sum256([]byte(key))
	id := int64(binary.BigEndian.Uint64(sum[:8]))
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock($1)`, id); err != nil {
		return fmt.Errorf("lock %s: %w", key, err)
	}
	defer conn.Exec(context.Background(), `SELECT pg_advisory_unlock($1)`, id) //nolint:errcheck // released with the connection anyway
	return fn(conn)
}

// templateName derives the template from the migrations' names and contents,
// so a changed migration gets a fresh template instead of a stale one.
func templateName(sets []pgdb.MigrationSet) string {
	h := sha256.New()
	for _, s := range sets {
		fmt.Fprintf(h, "set %s\n", s.Name)
		var names []string
		_ = fs.WalkDir(s.FS, ".", func(p string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				names = append(names, p)
			}
			return nil
		})
		sort.Strings(names)
		for _, n := range names {
			b, _ := fs.ReadFile(s.FS, n)
			fmt.Fprintf(h, "%s %d\n", n, len(b))
			h.Write(b)
		}
	}
	return "tpl_" + hex.EncodeToString(h.Sum(nil))[:16]
}

func withDatabase(admin, name string) string {
	u, err := url.Parse(admin)
	if err != nil {
		panic(fmt.Sprintf("parse ZIMMER_TEST_DATABASE_URL: %v", err))
	}
	u.Path = "/" + name
	return u.String()
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
