package main

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/assessd/assessd/api"
	"github.com/assessd/assessd/internal/store"
	"github.com/assessd/assessd/tenancy"
)

// layers measures GET /users/{id} in process, without sockets or a load
// generator, adding one layer at a time: the baseline handler, its query
// behind the API's transport, the same with the query in the tenant scope
// (the store's one round trip of scope and statement under row-level
// security), and assessd whole (middleware, authentication, quota). Each
// layer's throughput over the baseline's says what that layer costs.
func layers(ctx context.Context, rounds int, fx fixture, db *store.DB, base, transport, assessd http.Handler) error {
	scoped, err := api.NewTransport(api.Transport{GetUser: func(ctx context.Context, id string) (tenancy.User, error) {
		ctx = store.WithOrg(ctx, fx.orgID)
		var u tenancy.User
		err := db.Q(ctx).QueryRow(ctx, scopedUserQuery, id).
			Scan(&u.ID, &u.OrgID, &u.Email, &u.Name, &u.Role, &u.Metadata, &u.CreatedAt, &u.UpdatedAt)
		return u, err
	}})
	if err != nil {
		return err
	}
	targets := []struct {
		name   string
		h      http.Handler
		bearer string
	}{{"baseline", base, ""}, {"transport", transport, ""}, {"+ tenant scope", scoped, ""}, {"assessd", assessd, fx.key}}
	fmt.Printf("\nthe same in process (no sockets, no load generator; 32 concurrent requests), one layer at a time, median of %d rounds\n\n", rounds)
	perOp := make([][]float64, len(targets))
	allocs := make([]int64, len(targets))
	for range rounds {
		for i, t := range targets {
			var failed atomic.Int64
			res := testing.Benchmark(func(b *testing.B) {
				b.SetParallelism(16)
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						req := httptest.NewRequestWithContext(ctx, http.MethodGet, "/users/"+fx.userID, nil)
						if t.bearer != "" {
							req.Header.Set("Authorization", "Bearer "+t.bearer)
						}
						rec := httptest.NewRecorder()
						t.h.ServeHTTP(rec, req)
						if rec.Code != http.StatusOK {
							failed.Add(1)
						}
					}
				})
			})
			if failed.Load() > 0 {
				return fmt.Errorf("%s: %d requests failed", t.name, failed.Load())
			}
			perOp[i] = append(perOp[i], float64(res.NsPerOp())/1000)
			allocs[i] = res.AllocsPerOp()
		}
	}
	fmt.Printf("%-16s %10s %10s %14s\n", "layer", "µs/op", "allocs/op", "vs baseline")
	var baseline float64
	for i, t := range targets {
		slices.Sort(perOp[i])
		median := perOp[i][len(perOp[i])/2]
		if i == 0 {
			baseline = median
		}
		fmt.Printf("%-16s %10.1f %10d %14.2f\n", t.name, median, allocs[i], baseline/median)
	}
	return nil
}
