package storetest

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/assessd/assessd/internal/store"
)

// A test's database is a slot, assessd_slot_<migrations hash>_<n>: a copy
// of the template that later tests reuse, emptied, instead of a copy made
// and dropped per test. Making and dropping one cost the server about
// 130 ms of CPU, most of it in the kernel (creating and unlinking the
// files of some 700 relations); emptying one costs a few milliseconds.
//
// A process claims slot n with a session advisory lock on a connection it
// keeps open while it runs, so that slots are shared by every test process
// of the server and a process that dies frees its slots at once. A slot
// is emptied when claimed, not when freed, so one left mid-test by a
// killed process is emptied as well; and is made again from the template
// when its schema no longer matches the fingerprint recorded in its
// comment when it was made (a test changed the schema).

// slotLockClass is the first key of the slots' advisory locks; the second
// is the slot's number.
const slotLockClass = 0x61737365 // "asse"

// maxSlots bounds the slots of one template: beyond them (more tests at
// once than the server should run), a test gets a database of its own.
const maxSlots = 64

var slots struct {
	sync.Mutex
	// conn holds this process's slot locks; held are their numbers (a
	// session takes an advisory lock it holds again, so the process must
	// tell its own slots apart).
	conn *pgx.Conn
	held map[int]bool
}

func slotName(hash string, n int) string { return "assessd_slot_" + hash + "_" + strconv.Itoa(n) }

// slotLockKey is the slot locks' first key for hash: the slots of
// checkouts of other migrations are locked apart.
func slotLockKey(hash string) int32 {
	sum := sha256.Sum256([]byte(hash))
	return int32(binary.BigEndian.Uint32(sum[:4])) ^ slotLockClass
}

// claimSlot returns the URL of a free slot, emptied, and a function that
// frees it. ok is false when every slot is taken.
func claimSlot(ctx context.Context) (dbURL string, release func() error, ok bool, err error) {
	hash := store.MigrationsHash()
	n, err := lockSlot(ctx, hash)
	if err != nil || n < 0 {
		return "", nil, false, err
	}
	release = func() error { return unlockSlot(hash, n) }
	name := slotName(hash, n)
	if err := prepareSlot(ctx, name); err != nil {
		return "", nil, false, errors.Join(err, release())
	}
	return databaseURL(ServerURL(), name), release, true, nil
}

// lockSlot locks the lowest free slot number, or returns -1.
func lockSlot(ctx context.Context, hash string) (int, error) {
	slots.Lock()
	defer slots.Unlock()
	if slots.conn == nil || slots.conn.IsClosed() {
		conn, err := pgx.Connect(ctx, ServerURL())
		if err != nil {
			return -1, fmt.Errorf("storetest: connect %s: %w", ServerURL(), err)
		}
		slots.conn, slots.held = conn, map[int]bool{}
	}
	key := slotLockKey(hash)
	for n := range maxSlots {
		if slots.held[n] {
			continue
		}
		var locked bool
		if err := slots.conn.QueryRow(ctx, "SELECT pg_try_advisory_lock($1, $2)", key, int32(n)).Scan(&locked); err != nil {
			return -1, fmt.Errorf("storetest: lock a slot: %w", err)
		}
		if locked {
			slots.held[n] = true
			return n, nil
		}
	}
	return -1, nil
}

func unlockSlot(hash string, n int) error {
	slots.Lock()
	defer slots.Unlock()
	delete(slots.held, n)
	_, err := slots.conn.Exec(context.Background(), "SELECT pg_advisory_unlock($1, $2)", slotLockKey(hash), int32(n))
	return err
}

// prepareSlot makes the locked slot name ready for a test: made from the
// template if missing or changed, otherwise emptied of the rows an
// earlier test left.
func prepareSlot(ctx context.Context, name string) error {
	admin, err := pgx.Connect(ctx, ServerURL())
	if err != nil {
		return fmt.Errorf("storetest: connect %s: %w", ServerURL(), err)
	}
	defer admin.Close(ctx)
	orphansDropped.Do(func() { _, _ = dropOrphans(ctx, admin) })
	var fingerprint *string
	err = admin.QueryRow(ctx, "SELECT shobj_description(oid, 'pg_database') FROM pg_database WHERE datname = $1", name).Scan(&fingerprint)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return makeSlot(ctx, admin, name)
	case err != nil:
		return fmt.Errorf("storetest: find slot %s: %w", name, err)
	}
	// What the last holder left connected (a server it started, a pool it
	// never closed) goes first.
	if _, err := admin.Exec(ctx, "SELECT pg_terminate_backend(pid, 5000) FROM pg_stat_activity WHERE datname = $1", name); err != nil {
		return fmt.Errorf("storetest: end the sessions of slot %s: %w", name, err)
	}
	if fingerprint != nil {
		err = emptySlot(ctx, name, *fingerprint)
	}
	var pgErr *pgconn.PgError
	if fingerprint == nil || errors.As(err, &pgErr) && pgErr.Code == schemaChanged {
		if _, err := admin.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
			return fmt.Errorf("storetest: drop changed slot %s: %w", name, err)
		}
		return makeSlot(ctx, admin, name)
	}
	return err
}

// makeSlot creates slot name from the template and records its schema's
// fingerprint.
func makeSlot(ctx context.Context, admin *pgx.Conn, name string) error {
	if err := createDatabase(ctx, admin, name, true); err != nil {
		return fmt.Errorf("storetest: create slot %s: %w", name, err)
	}
	// Nothing a test does needs to outlive a crash of the server.
	if _, err := admin.Exec(ctx, "ALTER DATABASE "+name+" SET synchronous_commit = off"); err != nil {
		return fmt.Errorf("storetest: configure slot %s: %w", name, err)
	}
	conn, err := pgx.Connect(ctx, databaseURL(ServerURL(), name))
	if err != nil {
		return fmt.Errorf("storetest: connect slot %s: %w", name, err)
	}
	defer conn.Close(ctx)
	var fingerprint string
	if err := conn.QueryRow(ctx, fingerprintSQL).Scan(&fingerprint); err != nil {
		return fmt.Errorf("storetest: fingerprint slot %s: %w", name, err)
	}
	_, err = admin.Exec(ctx, "COMMENT ON DATABASE "+name+" IS '"+fingerprint+"'")
	return err
}

// schemaChanged is the SQLSTATE emptySlot raises for a slot whose schema
// differs from its fingerprint.
const schemaChanged = "SLOT1"

// emptySlot deletes every row of slot name but the schema version, after
// checking its schema against fingerprint. Triggers (and the foreign
// keys' checks, which are triggers) are off while it deletes.
func emptySlot(ctx context.Context, name, fingerprint string) error {
	conn, err := pgx.Connect(ctx, databaseURL(ServerURL(), name))
	if err != nil {
		return fmt.Errorf("storetest: connect slot %s: %w", name, err)
	}
	defer conn.Close(ctx)
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	_, err = conn.Exec(ctx, `DO $$
		DECLARE tbl record;
		BEGIN
			IF (`+fingerprintSQL+`) IS DISTINCT FROM '`+fingerprint+`' THEN
				RAISE EXCEPTION 'the slot''s schema changed' USING ERRCODE = '`+schemaChanged+`';
			END IF;
			SET LOCAL session_replication_role = replica;
			FOR tbl IN SELECT schemaname, tablename FROM pg_tables
			          WHERE schemaname = 'public' AND tablename <> 'schema_version' LOOP
				EXECUTE format('DELETE FROM %I.%I', tbl.schemaname, tbl.tablename);
			END LOOP;
		END $$`)
	if err != nil {
		return fmt.Errorf("storetest: empty slot %s: %w", name, err)
	}
	return nil
}

// fingerprintSQL sums up a database's schema: its relations and columns,
// functions (with their bodies and grants), triggers, policies,
// constraints and schemas. A test's DDL changes it; its rows do not.
const fingerprintSQL = `SELECT md5(string_agg(d, E'\n' ORDER BY d)) FROM (
	SELECT format('r %s %s %s %s', c.oid, c.relname, c.relkind, c.relacl) AS d FROM pg_class c
	 WHERE c.relnamespace NOT IN ('pg_catalog'::regnamespace, 'information_schema'::regnamespace, 'pg_toast'::regnamespace)
	UNION ALL SELECT format('a %s %s %s %s', a.attrelid, a.attname, a.atttypid, a.attnotnull) FROM pg_attribute a
	 JOIN pg_class c ON c.oid = a.attrelid
	 WHERE a.attnum > 0 AND NOT a.attisdropped AND c.relnamespace = 'public'::regnamespace
	UNION ALL SELECT format('f %s %s %s %s', p.oid, p.proname, md5(p.prosrc), p.proacl) FROM pg_proc p
	 WHERE p.pronamespace NOT IN ('pg_catalog'::regnamespace, 'information_schema'::regnamespace)
	UNION ALL SELECT format('t %s %s', t.oid, t.tgenabled) FROM pg_trigger t
	UNION ALL SELECT format('p %s', oid) FROM pg_policy
	UNION ALL SELECT format('c %s', oid) FROM pg_constraint
	UNION ALL SELECT format('n %s %s %s', oid, nspname, nspacl) FROM pg_namespace
) s`
