package workflows

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"

	"github.com/assessd/assessd/internal/outbox"
	"github.com/assessd/assessd/internal/platform/failurelog"
	"github.com/assessd/assessd/internal/store"
	"github.com/assessd/assessd/observability/promreg"
)

// Route says how an outbox kind becomes a workflow.
type Route struct {
	// Workflow is the workflow function.
	Workflow any
	// IDPrefix and the subject id make the workflow id: one subject, one
	// workflow id, so starting twice joins instead of running twice.
	IDPrefix string
	// Input is the workflow's input for an outbox row.
	Input func(it outbox.Item) any
	Subjects
	// Sleeps says the workflow runs for its subject's whole life, mostly
	// asleep (an attempt's deadline timer): the reconciler looks at its
	// rows every DispatchOptions.SleeperQuiet, and after every other
	// kind's.
	Sleeps bool
}

// Subjects is what the dispatcher asks a kind's feature about the kind's
// subjects, with ctx scoped to their organization (store.WithOrg), so
// another organization's are not found. It is the one place that knows
// when a subject is finished (decision 0198).
type Subjects struct {
	// Unfinished returns those of subjectIDs whose subjects still await
	// their workflow: the reconciler looks after their workflows and
	// deletes the rows of the others. Nil counts every subject unfinished.
	Unfinished func(ctx context.Context, subjectIDs []string) ([]string, error)
	// Abandon finishes the subject as failed, with reason, when its
	// workflow cannot be run. It must do nothing to a subject that is
	// already finished.
	Abandon func(ctx context.Context, subjectID, reason string) error
}

// WorkflowID is the workflow id of the route's subject.
func (r Route) WorkflowID(subjectID string) string { return r.IDPrefix + subjectID }

// Start is the one place that starts a workflow: on the task queue of the
// row's region, with the id the route derives from the subject. A second
// start of a running or completed workflow joins it, unless the row was
// restarted (the reconciler found the subject unfinished after its workflow
// ended, or the subject must be processed again): then a completed run is
// run anew, as a failed, terminated or timed-out one always is. Running
// again is safe: every write of the activities is conditional on the
// subject still awaiting it, so nothing is done twice.
func Start(ctx context.Context, c client.Client, r Route, it outbox.Item) error {
	return start(ctx, c, r, it, false)
}

// start is Start, asking with eager that the start's answer carry the
// first workflow task to a worker of c with a free slot (decision 0130);
// without such a worker the task goes through matching as usual. Only a
// regional dispatcher asks: it runs beside its region's worker, so c has
// read the server's capabilities before any start (the SDK reads them
// unlocked for an eager start, which races with a lazy client's first
// concurrent starts).
func start(ctx context.Context, c client.Client, r Route, it outbox.Item, eager bool) error {
	queue, err := RegionTaskQueue(it.Region)
	if err != nil {
		return err
	}
	reuse := enums.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE_FAILED_ONLY
	if it.Restarts > 0 {
		reuse = enums.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE
	}
	_, err = c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID:                       r.WorkflowID(it.SubjectID),
		TaskQueue:                queue,
		WorkflowIDConflictPolicy: enums.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
		WorkflowIDReusePolicy:    reuse,
		EnableEagerStart:         eager,
	}, r.Workflow, r.Input(it))
	if err != nil {
		return fmt.Errorf("start %s of %s: %w", it.Kind, it.SubjectID, err)
	}
	return nil
}

// DispatchOptions tune a Dispatcher; zero values take the defaults.
type DispatchOptions struct {
	// Sweep is how often pending rows are looked for without a
	// notification (default 2s).
	Sweep time.Duration
	// Batch is how many rows one claim takes (default 32) and Parallel how
	// many starts run at once (default 8).
	Batch, Parallel int
	// StartTimeout bounds one start (default 5s).
	StartTimeout time.Duration
	// MaxDelay caps the backoff between a row's attempts (default 30s).
	MaxDelay time.Duration
	// Reconcile is how often the reconciler runs (default 30s); Quiet is
	// how long a dispatched, unfinished subject goes unchecked (default
	// 2m); after MaxRestarts restarts (default 3) a subject is abandoned.
	Reconcile, Quiet time.Duration
	// SleeperQuiet is Quiet for the routes that Sleep (default 15m).
	SleeperQuiet time.Duration
	MaxRestarts  int
	// Region, when set, makes a regional dispatcher (decision 0130): it
	// claims only that region's rows and leaves reconciling and the backlog
	// gauges to serve's dispatcher. Run in the region's worker process, it
	// hands the workflows it starts their first task on that worker.
	Region string
	// Grace makes a fallback dispatcher: it claims a row only once it has
	// been due that long, leaving fresh rows to the regional dispatchers,
	// and it finds rows by its sweep rather than by notifications.
	Grace time.Duration
}

func (o DispatchOptions) withDefaults() DispatchOptions {
	set := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	set(&o.Sweep, 2*time.Second)
	set(&o.StartTimeout, 5*time.Second)
	set(&o.MaxDelay, 30*time.Second)
	set(&o.Reconcile, 30*time.Second)
	set(&o.Quiet, 2*time.Minute)
	set(&o.SleeperQuiet, 15*time.Minute)
	if o.Batch <= 0 {
		o.Batch = 32
	}
	if o.Parallel <= 0 {
		o.Parallel = 8
	}
	if o.MaxRestarts <= 0 {
		o.MaxRestarts = 3
	}
	return o
}

// lease is how long a claimed row is reserved for the dispatcher that
// claimed it; it covers a whole batch of starts.
const lease = time.Minute

// Dispatch outcomes, the outcome label of assessd_outbox_dispatches_total.
const (
	outcomeStarted   = "started"   // the workflow was started or joined
	outcomeRetried   = "retried"   // the start failed; the row is due again later
	outcomeRestarted = "restarted" // the reconciler found the workflow lost or failed
	outcomeAbandoned = "abandoned" // the subject was finished as failed
)

// Dispatcher turns outbox rows into workflow starts, and reconciles
// dispatched subjects whose workflow disappeared. Several instances may run
// against one database: rows are claimed with FOR UPDATE SKIP LOCKED and a
// lease, and starts are idempotent.
type Dispatcher struct {
	client client.Client
	store  *outbox.Store
	routes map[outbox.Kind]Route
	opts   DispatchOptions
	wake   chan struct{}
	// slots holds one token per start in flight, across batches.
	slots chan struct{}
	// starting tracks the starts in flight, for Run to wait on.
	starting sync.WaitGroup
	pending  *prometheus.GaugeVec
	oldest   *prometheus.GaugeVec
	results  *prometheus.CounterVec
	// claims, backlogs and reconciles log the failures of the work each
	// sweep or reconciliation repeats, once per outage.
	claims, backlogs, reconciles *failurelog.Log
}

// NewDispatcher returns a Dispatcher starting routes' workflows with c and
// registers its metrics on reg, shared with the process's other
// dispatchers (assessd dev runs serve's and both regions').
func NewDispatcher(c client.Client, s *outbox.Store, routes map[outbox.Kind]Route, reg prometheus.Registerer, opts DispatchOptions) *Dispatcher {
	d := &Dispatcher{
		client: c, store: s, routes: routes, opts: opts.withDefaults(), wake: make(chan struct{}, 1),
		pending: promreg.Register(reg, prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "assessd_outbox_pending", Help: "Outbox rows waiting for their workflow to start, by kind.",
		}, []string{"kind"})),
		oldest: promreg.Register(reg, prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "assessd_outbox_oldest_pending_seconds", Help: "Age of the oldest outbox row waiting for its workflow to start, by kind.",
		}, []string{"kind"})),
		results: promreg.Register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "assessd_outbox_dispatches_total", Help: "Outbox dispatches by kind and outcome (started, retried, restarted, abandoned).",
		}, []string{"kind", "outcome"})),
	}
	d.slots = make(chan struct{}, d.opts.Parallel)
	d.claims, d.backlogs = failurelog.New("outbox claim", slog.LevelError), failurelog.New("outbox backlog", slog.LevelError)
	d.reconciles = failurelog.New("outbox reconciliation", slog.LevelError)
	return d
}

// Wake makes the dispatcher look for pending rows now.
func (d *Dispatcher) Wake() {
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

// Run dispatches and reconciles until ctx ends. It listens for outbox
// notifications, so a committed row is started within milliseconds, and
// sweeps every DispatchOptions.Sweep in case a notification was missed; the
// backlog gauges are measured at each sweep. A regional dispatcher only
// dispatches, a fallback one only sweeps (DispatchOptions).
func (d *Dispatcher) Run(ctx context.Context) {
	regional := d.opts.Region != ""
	var wg sync.WaitGroup
	if d.opts.Grace == 0 {
		wg.Go(func() { d.store.Listen(ctx, d.Wake) })
	}
	if !regional {
		wg.Go(func() { d.reconcileLoop(ctx) })
	}
	measureBacklog := func() {
		if !regional {
			d.measureBacklog(ctx)
		}
	}
	sweep := time.NewTicker(d.opts.Sweep)
	defer sweep.Stop()
	measureBacklog()
	for ctx.Err() == nil {
		d.dispatchDue(ctx)
		select {
		case <-ctx.Done():
		case <-d.wake:
		case <-sweep.C:
			measureBacklog()
		}
	}
	d.starting.Wait()
	wg.Wait()
}

// dispatchDue starts the workflows of due rows. A batch that is not full
// (the usual case: rows come as they are committed) starts in the
// background, so rows notified meanwhile are claimed at once rather than
// after the batch's starts; a full batch is waited for before the next is
// claimed, which bounds a backlog's claims by the pace of its starts.
func (d *Dispatcher) dispatchDue(ctx context.Context) {
	for ctx.Err() == nil {
		items, err := d.store.Claim(ctx, outbox.Filter{Region: d.opts.Region, Grace: d.opts.Grace}, d.opts.Batch, lease)
		if ctx.Err() == nil {
			d.claims.Record(ctx, err)
		}
		if err != nil {
			return
		}
		failed := d.dispatch(ctx, items)
		if len(items) < d.opts.Batch || failed() {
			return
		}
	}
}

// dispatch starts items, at most Parallel at once across batches, and
// returns a function that waits for them and reports whether any failed.
// Once a start fails the rest of the batch is not tried (the workflow
// engine is most likely away) and waits like the failed one. The rows
// whose workflow started are recorded together once the batch is done:
// one statement and one commit for the batch rather than one per row
// (decision 0136); their lease keeps other dispatchers off them meanwhile.
func (d *Dispatcher) dispatch(ctx context.Context, items []outbox.Item) (wait func() bool) {
	var (
		failed  atomic.Bool
		batch   sync.WaitGroup
		mu      sync.Mutex
		started = make([]outbox.Item, 0, len(items))
	)
	for _, it := range items {
		d.slots <- struct{}{}
		batch.Add(1)
		d.starting.Go(func() {
			defer func() { <-d.slots; batch.Done() }()
			if d.dispatchOne(ctx, it, &failed) {
				mu.Lock()
				started = append(started, it)
				mu.Unlock()
			}
		})
	}
	d.starting.Go(func() {
		batch.Wait()
		d.dispatched(ctx, started...)
	})
	return func() bool {
		batch.Wait()
		return failed.Load()
	}
}

// dispatchOne starts its workflow and reports whether it started; a row
// that did not is due again later, or abandoned.
func (d *Dispatcher) dispatchOne(ctx context.Context, it outbox.Item, batchFailed *atomic.Bool) bool {
	if _, err := RegionTaskQueue(it.Region); err != nil {
		// No retry can fix the row: its subject is finished with the reason.
		d.abandon(ctx, d.routes[it.Kind], it, err.Error())
		return false
	}
	var err error
	if batchFailed.Load() {
		err = errors.New("not tried: an earlier start of the batch failed")
	} else {
		err = d.start(ctx, it)
	}
	if err != nil {
		batchFailed.Store(true)
		d.retry(ctx, it, err)
		return false
	}
	d.count(it, outcomeStarted)
	return true
}

// dispatched records that items need no start anymore.
func (d *Dispatcher) dispatched(ctx context.Context, items ...outbox.Item) {
	if len(items) == 0 {
		return
	}
	if err := d.store.Dispatched(ctx, items...); err != nil {
		slog.ErrorContext(ctx, "outbox dispatched", "rows", len(items), "subject", items[0].SubjectID, "err", err)
	}
}

func (d *Dispatcher) start(ctx context.Context, it outbox.Item) error {
	route, ok := d.routes[it.Kind]
	if !ok {
		return fmt.Errorf("no workflow for outbox kind %q", it.Kind)
	}
	ctx, cancel := context.WithTimeout(ctx, d.opts.StartTimeout)
	defer cancel()
	return start(ctx, d.client, route, it, d.opts.Region != "")
}

// retry puts a row whose start failed back, after a backoff doubling from
// one second up to MaxDelay.
func (d *Dispatcher) retry(ctx context.Context, it outbox.Item, cause error) {
	delay := d.opts.MaxDelay
	if it.Attempts < 16 {
		delay = min(delay, time.Second<<max(it.Attempts-1, 0))
	}
	slog.WarnContext(ctx, "workflow start failed; retrying", "kind", it.Kind, "subject", it.SubjectID, "attempt", it.Attempts, "in", delay, "err", cause)
	d.count(it, outcomeRetried)
	if err := d.store.Retry(ctx, it, cause.Error(), delay); err != nil {
		slog.ErrorContext(ctx, "outbox retry", "kind", it.Kind, "subject", it.SubjectID, "err", err)
	}
}

func (d *Dispatcher) count(it outbox.Item, outcome string) {
	d.results.WithLabelValues(string(it.Kind), outcome).Inc()
}

// measureBacklog sets the backlog gauges of every routed kind.
func (d *Dispatcher) measureBacklog(ctx context.Context) {
	backlog, err := d.store.Backlog(ctx)
	if ctx.Err() == nil {
		d.backlogs.Record(ctx, err)
	}
	if err != nil {
		return
	}
	for kind := range d.routes {
		b := backlog[kind]
		d.pending.WithLabelValues(string(kind)).Set(float64(b.Pending))
		d.oldest.WithLabelValues(string(kind)).Set(b.Oldest.Seconds())
	}
}

func (d *Dispatcher) reconcileLoop(ctx context.Context) {
	t := time.NewTicker(d.opts.Reconcile)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			d.Reconcile(ctx)
		}
	}
}

// reconcileLimit bounds the workflows one reconciliation asks Temporal
// about; it reads rows reconcilePage at a time, so that the routes are
// asked about many subjects of an organization at once.
const (
	reconcileLimit = 100
	reconcilePage  = 1000
)

// Reconcile checks the dispatched rows that nobody checked for
// DispatchOptions.Quiet (SleeperQuiet for the routes that Sleep, after the
// others). The rows of subjects their route finds finished are deleted; of
// the unfinished ones, up to reconcileLimit, a workflow that Temporal no
// longer knows (lost with its history) or that ended without finishing its
// subject is started again, up to MaxRestarts times; then the subject is
// abandoned (finished as failed with a reason). Rows are read
// reconcilePage at a time until they run out, the limit is reached or a
// step fails: each read row leaves the unchecked ones (deleted, checked or
// re-armed) unless a step failed or the limit was reached, so the reads
// end.
func (d *Dispatcher) Reconcile(ctx context.Context) {
	for judged := 0; judged < reconcileLimit; {
		items, err := d.store.Unchecked(ctx, d.quiet(), reconcilePage)
		if ctx.Err() == nil {
			d.reconciles.Record(ctx, err)
		}
		if err != nil {
			return
		}
		open, ok := d.unfinished(ctx, items)
		for _, it := range open[:min(len(open), reconcileLimit-judged)] {
			judged++
			if !d.judge(ctx, it) {
				return
			}
		}
		if !ok || len(items) < reconcilePage {
			return
		}
	}
}

// What the reconciler learns of a row's subject from its route.
type verdict int

const (
	subjectFinished verdict = iota
	subjectUnfinished
	subjectUnanswered // the route failed
	kindUnrouted      // written by another release
)

// unfinished returns the items whose subjects their route finds
// unfinished, in their order, and deletes the rows of the finished ones;
// ok is false when a route or the store failed (those rows wait for the
// next reconciliation). The rows of a kind without a route are marked
// checked, so they do not hold up the others.
func (d *Dispatcher) unfinished(ctx context.Context, items []outbox.Item) (open []outbox.Item, ok bool) {
	verdicts := d.verdicts(ctx, items)
	ok = true
	var done []outbox.Item
	for _, it := range items {
		switch verdicts[subject{it.Kind, it.SubjectID}] {
		case subjectFinished:
			done = append(done, it)
		case subjectUnfinished:
			open = append(open, it)
		case subjectUnanswered:
			ok = false
		case kindUnrouted:
			slog.WarnContext(ctx, "reconcile: no route for the row's kind", "kind", it.Kind, "subject", it.SubjectID)
			if err := d.store.Checked(ctx, it); err != nil {
				slog.ErrorContext(ctx, "reconcile", "kind", it.Kind, "subject", it.SubjectID, "err", err)
				ok = false
			}
		}
	}
	if len(done) > 0 {
		if err := d.store.Forget(ctx, done...); err != nil {
			slog.ErrorContext(ctx, "reconcile: forget finished subjects", "rows", len(done), "err", err)
			ok = false
		}
	}
	return open, ok
}

// subject names an outbox row.
type subject struct {
	kind outbox.Kind
	id   string
}

// verdicts asks each route about its items' subjects, one call per
// organization.
func (d *Dispatcher) verdicts(ctx context.Context, items []outbox.Item) map[subject]verdict {
	type group struct {
		kind outbox.Kind
		org  string
	}
	ids := map[group][]string{}
	for _, it := range items {
		g := group{it.Kind, it.OrgID}
		ids[g] = append(ids[g], it.SubjectID)
	}
	out := make(map[subject]verdict, len(items))
	mark := func(kind outbox.Kind, ids []string, v verdict) {
		for _, id := range ids {
			out[subject{kind, id}] = v
		}
	}
	for g, subjects := range ids {
		route, routed := d.routes[g.kind]
		if !routed {
			mark(g.kind, subjects, kindUnrouted)
			continue
		}
		found := subjects
		if route.Unfinished != nil {
			var err error
			if found, err = route.Unfinished(store.WithOrg(ctx, g.org), subjects); err != nil {
				slog.ErrorContext(ctx, "reconcile: unfinished subjects", "kind", g.kind, "org", g.org, "err", err)
				mark(g.kind, subjects, subjectUnanswered)
				continue
			}
		}
		mark(g.kind, found, subjectUnfinished)
	}
	return out
}

// judge asks Temporal about an unfinished subject's workflow and checks,
// restarts or abandons it; false means Temporal does not answer, and
// nothing more can be judged.
func (d *Dispatcher) judge(ctx context.Context, it outbox.Item) bool {
	route := d.routes[it.Kind]
	alive, why, err := d.alive(ctx, route, it)
	if err != nil {
		slog.WarnContext(ctx, "reconcile: workflow engine unavailable", "err", err)
		return false
	}
	if alive {
		err = d.store.Checked(ctx, it)
	} else {
		err = d.restartOrAbandon(ctx, route, it, why)
	}
	if err != nil {
		slog.ErrorContext(ctx, "reconcile", "kind", it.Kind, "subject", it.SubjectID, "err", err)
	}
	return true
}

// quiet is how long the reconciler leaves each kind's rows unchecked.
func (d *Dispatcher) quiet() outbox.Quiet {
	q := outbox.Quiet{Rows: d.opts.Quiet, Sleepers: d.opts.SleeperQuiet}
	for kind, r := range d.routes {
		if r.Sleeps {
			q.SleeperKinds = append(q.SleeperKinds, kind)
		}
	}
	return q
}

// alive asks Temporal whether the row's workflow still runs; if not, why says
// what became of it.
func (d *Dispatcher) alive(ctx context.Context, route Route, it outbox.Item) (alive bool, why string, err error) {
	ctx, cancel := context.WithTimeout(ctx, d.opts.StartTimeout)
	defer cancel()
	desc, err := d.client.DescribeWorkflowExecution(ctx, route.WorkflowID(it.SubjectID), "")
	var notFound *serviceerror.NotFound
	switch {
	case errors.As(err, &notFound):
		return false, "the workflow was lost", nil
	case err != nil:
		return false, "", err
	}
	status := desc.GetWorkflowExecutionInfo().GetStatus()
	if status == enums.WORKFLOW_EXECUTION_STATUS_RUNNING {
		return true, "", nil
	}
	return false, "the workflow ended " + status.String() + " without finishing", nil
}

func (d *Dispatcher) restartOrAbandon(ctx context.Context, route Route, it outbox.Item, why string) error {
	if it.Restarts >= d.opts.MaxRestarts {
		d.abandon(ctx, route, it, why)
		return d.store.Checked(ctx, it)
	}
	slog.WarnContext(ctx, "workflow restarted", "kind", it.Kind, "subject", it.SubjectID, "why", why)
	d.count(it, outcomeRestarted)
	return d.store.Rearm(ctx, it, why)
}

// abandon finishes the row's subject as failed.
func (d *Dispatcher) abandon(ctx context.Context, route Route, it outbox.Item, why string) {
	slog.ErrorContext(ctx, "workflow abandoned", "kind", it.Kind, "subject", it.SubjectID, "why", why)
	if route.Abandon == nil {
		return
	}
	d.count(it, outcomeAbandoned)
	reason := fmt.Sprintf("the %s could not be completed", it.Kind)
	if err := route.Abandon(store.WithOrg(ctx, it.OrgID), it.SubjectID, reason); err != nil {
		slog.ErrorContext(ctx, "abandon", "kind", it.Kind, "subject", it.SubjectID, "err", err)
		return
	}
	d.dispatched(ctx, it)
}
