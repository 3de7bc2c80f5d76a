package storetest

import (
	"context"
	"sync/atomic"

	"github.com/jackc/pgx/v5"
)

// RoundTrips is a tracer (store.WithTracer) that counts what the pool sends
// to PostgreSQL: every statement sent on its own (BEGIN, COMMIT and
// set_config included) and every batch, which pgx sends as one round trip
// however many statements it holds.
type RoundTrips struct{ n atomic.Int64 }

// Count returns the round trips so far.
func (c *RoundTrips) Count() int64 { return c.n.Load() }

// TraceQueryStart counts a statement sent on its own.
func (c *RoundTrips) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	c.n.Add(1)
	return ctx
}

// TraceQueryEnd implements pgx.QueryTracer.
func (c *RoundTrips) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// TraceBatchStart counts a batch.
func (c *RoundTrips) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	c.n.Add(1)
	return ctx
}

// TraceBatchQuery implements pgx.BatchTracer.
func (c *RoundTrips) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {}

// TraceBatchEnd implements pgx.BatchTracer.
func (c *RoundTrips) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) {}
