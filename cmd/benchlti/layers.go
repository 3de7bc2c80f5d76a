package main

import (
	"context"
	"fmt"
	"time"

	"github.com/go-redis/redis_rate/v10"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"
)

// layers are the libraries beneath assessd's launch, called directly: the
// ceiling a launch could reach with none of assessd's own code between
// them. A returning learner's login takes from the rate limit, reads the
// registration by issuer and keeps the state in Redis; the launch takes
// from the rate limit, takes the state once, reads the registration, the
// learner's match and writes an audit row.
type layers struct {
	rdb     *redis.Client
	limiter *redis_rate.Limiter
	db      *pgxpool.Pool
}

func newLayers(ctx context.Context, dbURL string) (*layers, error) {
	db, err := pgxpool.New(ctx, dbURL)
	if err != nil {
		return nil, err
	}
	if _, err := db.Exec(ctx, `CREATE TABLE bench_launch_audit (issuer text NOT NULL, subject text NOT NULL, at timestamptz NOT NULL DEFAULT now())`); err != nil {
		db.Close()
		return nil, err
	}
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379"})
	return &layers{rdb: rdb, limiter: redis_rate.NewLimiter(rdb), db: db}, nil
}

func (l *layers) close() {
	l.db.Close()
	_ = l.rdb.Close()
}

func (l *layers) allow(ctx context.Context, endpoint, addr string) error {
	_, err := l.limiter.Allow(ctx, "benchlti:"+endpoint+":"+addr, redis_rate.PerMinute(1_000_000_000))
	return err
}

func (l *layers) login(ctx context.Context, addr, issuer, state, nonce string) error {
	if err := l.allow(ctx, "login", addr); err != nil {
		return err
	}
	var id string
	if err := l.db.QueryRow(ctx, `SELECT id FROM lti_platforms WHERE issuer = $1 AND client_id = $2`, issuer, clientID).Scan(&id); err != nil {
		return fmt.Errorf("registration: %w", err)
	}
	return l.rdb.Set(ctx, "benchlti:state:"+state, nonce, 5*time.Minute).Err()
}

func (l *layers) take(ctx context.Context, addr, state string) (nonce string, ok bool, err error) {
	if err := l.allow(ctx, "launch", addr); err != nil {
		return "", false, err
	}
	nonce, err = l.rdb.GetDel(ctx, "benchlti:state:"+state).Result()
	if err == redis.Nil {
		return "", false, nil
	}
	return nonce, err == nil, err
}

func (l *layers) record(ctx context.Context, issuer, subject string) error {
	var platform, user string
	if err := l.db.QueryRow(ctx, `SELECT id FROM lti_platforms WHERE issuer = $1`, issuer).Scan(&platform); err != nil {
		return fmt.Errorf("registration: %w", err)
	}
	if err := l.db.QueryRow(ctx, `SELECT user_id FROM lti_users WHERE issuer = $1 AND subject = $2`, issuer, subject).Scan(&user); err != nil {
		return fmt.Errorf("match: %w", err)
	}
	_, err := l.db.Exec(ctx, `INSERT INTO bench_launch_audit (issuer, subject) VALUES ($1, $2)`, issuer, subject)
	return err
}
