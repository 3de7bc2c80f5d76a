package outbox_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/assessd/assessd/internal/outbox"
	"github.com/assessd/assessd/internal/store"
	"github.com/assessd/assessd/internal/testkit/storetest"
	"github.com/assessd/assessd/tenancy"
)

// add writes an outbox row for org in its own transaction.
func add(t *testing.T, db *store.DB, orgID string, kind outbox.Kind, subjectID, region string) {
	t.Helper()
	ctx := store.WithOrg(context.Background(), orgID)
	if err := db.Tx(ctx, func(ctx context.Context) error { return outbox.Add(ctx, db.Q(ctx), kind, subjectID, region) }); err != nil {
		t.Fatal(err)
	}
}

func TestClaimLeasesEachRowToOneDispatcher(t *testing.T) {
	ctx := context.Background()
	db := storetest.New(t)
	ten := tenancy.NewService(db)
	var orgs []string
	for _, country := range []string{"US", "DE"} {
		org, err := ten.CreateOrg(ctx, tenancy.NewOrg{Name: country, Country: country})
		if err != nil {
			t.Fatal(err)
		}
		orgs = append(orgs, org.ID)
	}
	for i := range 20 {
		add(t, db, orgs[i%2], outbox.KindGrading, "res_"+string(rune('a'+i)), "global")
	}
	add(t, db, orgs[0], outbox.KindGrading, "res_a", "global") // the same subject again keeps one row
	s := outbox.NewStore(db)

	// Four dispatchers claim at once: every row goes to exactly one.
	var mu sync.Mutex
	claimed := map[string]int{}
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			items, err := s.Claim(ctx, outbox.Filter{}, 8, time.Minute)
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			defer mu.Unlock()
			for _, it := range items {
				claimed[it.SubjectID]++
			}
		})
	}
	wg.Wait()
	if len(claimed) != 20 {
		t.Fatalf("%d rows claimed, want 20", len(claimed))
	}
	for id, n := range claimed {
		if n != 1 {
			t.Fatalf("%s claimed %d times", id, n)
		}
	}
	// Leased rows are not due; the backlog still counts them as pending.
	if items, err := s.Claim(ctx, outbox.Filter{}, 8, time.Minute); err != nil || len(items) != 0 {
		t.Fatalf("claim during the lease: %v, %v", items, err)
	}
	backlog, err := s.Backlog(ctx)
	if err != nil || backlog[outbox.KindGrading].Pending != 20 {
		t.Fatalf("backlog %+v, %v", backlog, err)
	}
}

func TestRetryDispatchedAndRearm(t *testing.T) {
	ctx := context.Background()
	db := storetest.New(t)
	org, err := tenancy.NewService(db).CreateOrg(ctx, tenancy.NewOrg{Name: "X", Country: "FR"})
	if err != nil {
		t.Fatal(err)
	}
	add(t, db, org.ID, outbox.KindGeneration, "gen_1", "eu")
	s := outbox.NewStore(db)
	items, err := s.Claim(ctx, outbox.Filter{}, 10, time.Minute)
	if err != nil || len(items) != 1 {
		t.Fatalf("claim: %v, %v", items, err)
	}
	it := items[0]
	if it.OrgID != org.ID || it.Region != "eu" || it.Kind != outbox.KindGeneration || it.Attempts != 1 {
		t.Fatalf("claimed %+v", it)
	}
	// A failed start makes the row due again after the delay, not before.
	if err := s.Retry(ctx, it, "temporal unavailable", 0); err != nil {
		t.Fatal(err)
	}
	if items, err = s.Claim(ctx, outbox.Filter{}, 10, time.Minute); err != nil || len(items) != 1 || items[0].Attempts != 2 {
		t.Fatalf("claim after retry: %v, %v", items, err)
	}
	if err := s.Retry(ctx, items[0], "temporal unavailable", time.Hour); err != nil {
		t.Fatal(err)
	}
	if items, err = s.Claim(ctx, outbox.Filter{}, 10, time.Minute); err != nil || len(items) != 0 {
		t.Fatalf("claim before the retry delay: %v, %v", items, err)
	}
	if err := s.Dispatched(ctx, it); err != nil {
		t.Fatal(err)
	}
	backlog, err := s.Backlog(ctx)
	if err != nil || backlog[outbox.KindGeneration].Pending != 0 {
		t.Fatalf("backlog after dispatch %+v, %v", backlog, err)
	}
	// The reconciler re-arms a row whose workflow was lost: pending again,
	// due now, with the restart counted.
	if err := s.Rearm(ctx, it, "lost"); err != nil {
		t.Fatal(err)
	}
	if items, err = s.Claim(ctx, outbox.Filter{}, 10, time.Minute); err != nil || len(items) != 1 || items[0].Restarts != 1 || items[0].Attempts != 1 {
		t.Fatalf("claim after rearm: %v, %v", items, err)
	}
}

func TestDispatchedRecordsABatchInOneCall(t *testing.T) {
	ctx := context.Background()
	db := storetest.New(t)
	org, err := tenancy.NewService(db).CreateOrg(ctx, tenancy.NewOrg{Name: "X", Country: "FR"})
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"res_1", "res_2", "res_3"} {
		add(t, db, org.ID, outbox.KindGrading, id, "global")
	}
	add(t, db, org.ID, outbox.KindGeneration, "res_1", "global") // same subject, other kind
	s := outbox.NewStore(db)
	items, err := s.Claim(ctx, outbox.Filter{}, 10, time.Minute)
	if err != nil || len(items) != 4 {
		t.Fatalf("claim: %v, %v", items, err)
	}
	var started []outbox.Item
	for _, it := range items {
		if it.Kind == outbox.KindGrading && it.SubjectID != "res_3" {
			started = append(started, it)
		}
	}
	if err := s.Dispatched(ctx, started...); err != nil {
		t.Fatal(err)
	}
	backlog, err := s.Backlog(ctx)
	if err != nil || backlog[outbox.KindGrading].Pending != 1 || backlog[outbox.KindGeneration].Pending != 1 {
		t.Fatalf("backlog after dispatching res_1 and res_2's grading: %+v, %v", backlog, err)
	}
	if err := s.Dispatched(ctx); err != nil {
		t.Fatalf("nothing dispatched: %v", err)
	}
}

func TestClaimByRegionAndGrace(t *testing.T) {
	ctx := context.Background()
	db := storetest.New(t)
	org, err := tenancy.NewService(db).CreateOrg(ctx, tenancy.NewOrg{Name: "X", Country: "US"})
	if err != nil {
		t.Fatal(err)
	}
	add(t, db, org.ID, outbox.KindGrading, "res_eu", "eu")
	add(t, db, org.ID, outbox.KindGrading, "res_global", "global")
	s := outbox.NewStore(db)

	// A fallback dispatcher leaves rows alone for their grace period.
	if items, err := s.Claim(ctx, outbox.Filter{Grace: time.Hour}, 10, time.Minute); err != nil || len(items) != 0 {
		t.Fatalf("claim within the grace period: %v, %v", items, err)
	}
	// A regional dispatcher takes its region's rows only, at once.
	items, err := s.Claim(ctx, outbox.Filter{Region: "eu"}, 10, time.Minute)
	if err != nil || len(items) != 1 || items[0].SubjectID != "res_eu" {
		t.Fatalf("eu claim: %v, %v", items, err)
	}
	if items, err = s.Claim(ctx, outbox.Filter{Region: "eu"}, 10, time.Minute); err != nil || len(items) != 0 {
		t.Fatalf("second eu claim: %v, %v", items, err)
	}
	// Once due for longer than the grace, the fallback takes what is left.
	time.Sleep(50 * time.Millisecond)
	items, err = s.Claim(ctx, outbox.Filter{Grace: 20 * time.Millisecond}, 10, time.Minute)
	if err != nil || len(items) != 1 || items[0].SubjectID != "res_global" {
		t.Fatalf("fallback claim after the grace: %v, %v", items, err)
	}
}

// A kind is checked in Go, where rows are added (decision 0198): an
// unknown one is refused before anything is written, and the table itself
// no longer lists kinds.
func TestAnUnknownKindIsRefused(t *testing.T) {
	ctx := context.Background()
	db := storetest.New(t)
	org, err := tenancy.NewService(db).CreateOrg(ctx, tenancy.NewOrg{Name: "X", Country: "US"})
	if err != nil {
		t.Fatal(err)
	}
	scoped := store.WithOrg(ctx, org.ID)
	err = db.Tx(scoped, func(ctx context.Context) error { return outbox.Add(ctx, db.Q(ctx), "grading_v2", "res_1", "global") })
	if !errors.Is(err, outbox.ErrUnknownKind) || !strings.Contains(err.Error(), `"grading_v2"`) {
		t.Fatalf("add of an unknown kind: %v, want ErrUnknownKind naming it", err)
	}
	if err := outbox.Queue(&pgx.Batch{}, "", "res_1", "global"); !errors.Is(err, outbox.ErrUnknownKind) {
		t.Fatalf("queue of an empty kind: %v, want ErrUnknownKind", err)
	}
	backlog, err := outbox.NewStore(db).Backlog(ctx)
	if err != nil || len(backlog) != 0 {
		t.Fatalf("backlog after refused adds: %+v, %v", backlog, err)
	}
	for _, kind := range outbox.Kinds() {
		add(t, db, org.ID, kind, "subject_1", "global")
	}
	if backlog, err = outbox.NewStore(db).Backlog(ctx); err != nil || len(backlog) != len(outbox.Kinds()) {
		t.Fatalf("backlog after a row of each kind: %+v, %v", backlog, err)
	}
}

// The reconciler reads the rows nobody checked for their quiet: a
// sleeping kind's after its longer quiet and after any other kind's, so a
// lost grading workflow is not queued behind an exam's timers. It deletes
// the rows of finished subjects, but not one re-armed since it read it.
func TestUncheckedListsSleepersLastAndForgetKeepsRearmedRows(t *testing.T) {
	ctx := context.Background()
	url := storetest.NewURL(t)
	db, err := store.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	org, err := tenancy.NewService(db).CreateOrg(ctx, tenancy.NewOrg{Name: "X", Country: "US"})
	if err != nil {
		t.Fatal(err)
	}
	owner, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer owner.Close(ctx)
	quietFor := func(kind outbox.Kind, subject string, d time.Duration) {
		t.Helper()
		if _, err := owner.Exec(ctx, `INSERT INTO workflow_outbox (kind, subject_id, org_id, region, dispatched_at) VALUES ($1, $2, $3, 'global', now() - $4::interval)
			ON CONFLICT (kind, subject_id) DO UPDATE SET dispatched_at = excluded.dispatched_at, checked_at = NULL`, kind, subject, org.ID, d.String()); err != nil {
			t.Fatal(err)
		}
	}
	subjects := func(items []outbox.Item) []string {
		var out []string
		for _, it := range items {
			out = append(out, it.SubjectID)
		}
		return out
	}
	quietFor(outbox.KindAttempt, "att_1", 10*time.Minute)
	quietFor(outbox.KindGrading, "res_1", 3*time.Minute)
	quietFor(outbox.KindGrading, "res_2", time.Minute)
	s := outbox.NewStore(db)
	quiet := outbox.Quiet{Rows: 2 * time.Minute, Sleepers: 15 * time.Minute, SleeperKinds: []outbox.Kind{outbox.KindAttempt}}
	items, err := s.Unchecked(ctx, quiet, 10)
	if got := subjects(items); err != nil || len(got) != 1 || got[0] != "res_1" {
		t.Fatalf("unchecked after 10 minutes of the attempt's quiet: %v, %v; want only res_1", got, err)
	}
	quietFor(outbox.KindAttempt, "att_1", 20*time.Minute)
	if items, err = s.Unchecked(ctx, quiet, 1); err != nil || len(items) != 1 || items[0].SubjectID != "res_1" {
		t.Fatalf("the first unchecked row: %v, %v; want res_1, quieter for less", subjects(items), err)
	}
	if items, err = s.Unchecked(ctx, quiet, 10); err != nil || len(items) != 2 || items[1].SubjectID != "att_1" {
		t.Fatalf("unchecked after 20 minutes: %v, %v; want res_1 then att_1", subjects(items), err)
	}

	// res_1's result is graded again after the read: its row is re-armed
	// and kept; att_1's is deleted.
	again := func(ctx context.Context) error {
		return outbox.Again(ctx, db.Q(ctx), outbox.KindGrading, "res_1", "global")
	}
	if err := db.Tx(store.WithOrg(ctx, org.ID), again); err != nil {
		t.Fatal(err)
	}
	if err := s.Forget(ctx, items...); err != nil {
		t.Fatal(err)
	}
	var left []string
	if err := owner.QueryRow(ctx, `SELECT array_agg(subject_id ORDER BY subject_id) FROM workflow_outbox`).Scan(&left); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(left) != "[res_1 res_2]" {
		t.Fatalf("rows after forgetting res_1 and att_1, res_1 re-armed meanwhile: %v", left)
	}
}

func TestTheApplicationRoleCannotReadTheOutbox(t *testing.T) {
	ctx := context.Background()
	db := storetest.New(t)
	org, err := tenancy.NewService(db).CreateOrg(ctx, tenancy.NewOrg{Name: "X", Country: "US"})
	if err != nil {
		t.Fatal(err)
	}
	add(t, db, org.ID, outbox.KindGrading, "res_1", "global")
	scoped := store.WithOrg(ctx, org.ID)
	var n int
	if err := db.Q(scoped).QueryRow(scoped, `SELECT count(*) FROM workflow_outbox`).Scan(&n); err == nil {
		t.Fatalf("the application role read %d outbox rows directly", n)
	}
	if _, err := db.Q(scoped).Exec(scoped, `DELETE FROM workflow_outbox`); err == nil {
		t.Fatal("the application role deleted outbox rows directly")
	}
	// Another tenant cannot write a row for this one.
	other := store.WithOrg(ctx, "org_other")
	if _, err := db.Q(other).Exec(other, `INSERT INTO workflow_outbox (kind, subject_id, org_id, region) VALUES ('grading', 'res_2', $1, 'global')`, org.ID); err == nil {
		t.Fatal("a row for another organization was written")
	}
}

// The outbox functions keep their statements' plans for the connection
// (migration 014): plans settled while the outbox is young must still read
// only the rows they need once it holds thousands of dispatched ones.
func TestOutboxCallsReadOnlyTheirRows(t *testing.T) {
	ctx := context.Background()
	url := storetest.NewURL(t)
	db, err := store.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	org, err := tenancy.NewService(db).CreateOrg(ctx, tenancy.NewOrg{Name: "X", Country: "US"})
	if err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	// rowsRead adds, claims and dispatches one row in a transaction and
	// returns the outbox rows the three read.
	n := 0
	rowsRead := func() int64 {
		t.Helper()
		n++
		subject := fmt.Sprintf("res_%d", n)
		// The view counts since the connection last reported its
		// statistics, hence the difference.
		const readSQL = `SELECT coalesce(sum(seq_tup_read + idx_tup_fetch), 0) FROM pg_stat_xact_user_tables WHERE relname = 'workflow_outbox'`
		var before, after int64
		err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			b := &pgx.Batch{}
			b.Queue(readSQL).QueryRow(func(row pgx.Row) error { return row.Scan(&before) })
			b.Queue(`SELECT set_config('app.org_id', $1, true)`, org.ID)
			b.Queue(`SELECT outbox_add('grading', $1, 'eu', false)`, subject)
			b.Queue(`SELECT count(*) FROM outbox_claim(10, 60, 'eu', 0)`)
			b.Queue(`SELECT outbox_dispatched('{grading}', ARRAY[$1])`, subject)
			b.Queue(readSQL).QueryRow(func(row pgx.Row) error { return row.Scan(&after) })
			return tx.SendBatch(ctx, b).Close()
		})
		if err != nil {
			t.Fatal(err)
		}
		return after - before
	}
	// More than five times, so that PostgreSQL settles on the plans it
	// keeps for the connection.
	var young int64
	for range 6 {
		young = rowsRead()
	}
	if _, err := conn.Exec(ctx, `INSERT INTO workflow_outbox (kind, subject_id, org_id, region, dispatched_at)
		SELECT 'grading', 'res_old' || i, $1, 'eu', now() FROM generate_series(1, 5000) i`, org.ID); err != nil {
		t.Fatal(err)
	}
	if read := rowsRead(); read > young {
		t.Errorf("adding, claiming and dispatching a row read %d outbox rows among 5,000 dispatched ones, %d among a few", read, young)
	}
}
