package actors

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/guarded-exchange/guarded-exchange/actors/cluster/route"
	"github.com/guarded-exchange/guarded-exchange/actors/journal"
	"github.com/guarded-exchange/guarded-exchange/messages"
	"github.com/guarded-exchange/guarded-exchange/venue"
	"github.com/guarded-exchange/guarded-exchange/wal"
)

// Config configures the actor system. Zero values mean the documented
// defaults.
type Config struct {
	// Journal is the opened WAL; the journal writer becomes its only user.
	// Required.
	Journal *wal.Log
	// Prepared, if set, is the actor system to run on, built by Prepare
	// with Logger; nil builds it in Start.
	Prepared *Prepared
	// Market serves the public market reads System makes on its callers'
	// goroutines (market.go). Nil means none (commands that only journal,
	// such as init); the reads then fail with internal_error.
	Market MarketSource
	// Logger receives the system's and protoactor's logs (JSON on stderr in
	// the server). Nil discards.
	Logger *slog.Logger
	// RequestTimeout bounds one venue call (default 10 s).
	RequestTimeout time.Duration
	// Now is the clock for journal timestamps (default time.Now).
	Now func() time.Time
	// Users is the user state rebuilt from the journal. Nil means no
	// users supervisor (a process that only reads market data).
	Users *UserReplay
	// Venue is the arming level of the venue this process talks to; it
	// selects the default limits (docs/policy.md). Default paper.
	Venue messages.VenueLevel
	// Environment names this process's venue for keys: paper, bybit-demo,
	// bybit-testnet or bybit-live. Default paper.
	Environment string
	// MasterKey opens and seals the stored exchange keys (32 bytes). Nil:
	// key commands fail closed.
	MasterKey []byte
	// Clients builds a user's REST client for this venue. Nil: every
	// account read and key check fails closed.
	Clients ClientFactory
	// Streams opens a user's private stream for this venue. Nil: no
	// stream.
	Streams StreamFactory
	// Feed serves a place_order decision's market from caches the
	// streams keep fresh (marketcache.go, D148). Nil: every decision
	// reads the market by REST.
	Feed *venue.MarketFeed
	// SettleWait bounds the wait for an unknown outcome's client order id
	// on the stream (default DefaultSettleWait).
	SettleWait time.Duration
	// JournalDir is the journal's directory, whose file system's free
	// space is watched (posture): empty, not watched.
	JournalDir string
	// DiskMarginBytes: a user is REDUCING while the journal's disk has
	// less free space than DiskFloorBytes + DiskMarginBytes (zero: the
	// floor alone).
	DiskMarginBytes uint64
	// DiskFloorBytes is the last reserve: below it the journal writes only
	// essential records (kill switch on, posture, the action path).
	// Zero: DefaultDiskFloor.
	DiskFloorBytes uint64
	// PostureEvery is how often each user's automatic posture causes are
	// evaluated (default DefaultPostureEvery); PositionPoll how often an
	// open position's mark is read by REST (default DefaultPositionPoll).
	PostureEvery, PositionPoll time.Duration
	// RecoveryWait bounds how long a write waits for the recovery phase
	// (open attempts reconciled by REST at start or after a stream
	// reconnect) before it is answered exchange_unavailable, reason
	// "reconciling" (default DefaultRecoveryWait).
	RecoveryWait time.Duration
	// ConfirmCLI lets the CLI decide confirmations over the control
	// socket (GX_CONFIRM_CLI_ENABLED=true). Off: a confirmation needs the
	// client's own form, or the action is refused.
	ConfirmCLI bool
	// Shard is the cluster shard this system serves (docs/cluster.md
	// "Routing"). The zero Slot is local mode: every user is served here.
	// A clustered slot draws each new token and token id until they route
	// to it, and refuses the calls of users of other shards (wrongShard).
	Shard route.Slot
	// Fence, if set, is asked just before each venue write leaves (after
	// its timestamp is fixed): false stops the write, which sends nothing
	// and is answered like a fenced journal write (shard_fenced). A
	// cluster shard sets its lock's Held (docs/cluster.md "Fenced venue
	// writes", D198); nil (local mode) lets every write go.
	Fence func() bool
}

// System is a running actor system. Its methods are safe for concurrent use;
// each is one typed message to the actor that owns the state.
type System struct {
	sys     *actor.ActorSystem
	root    *actor.PID
	journal *journal.Writer
	// market serves the public market reads (market.go); nil: none.
	market  MarketSource
	users   *actor.PID
	logger  *slog.Logger
	timeout time.Duration
	// bounds are the step bounds every ask's wait is derived from
	// (askbound.go); tickets tie a trading call's ask to its action.
	bounds  stepBounds
	tickets *sendTickets
	now     func() time.Time
	// registry names the running user actors and every user's committed
	// state.
	registry *userRegistry
	// venue and env are the arming level and the name of this process's
	// venue, as the user actors have them (CallerProfile).
	venue messages.VenueLevel
	env   string
	// tokens finds the user of a bearer token (tokens.go).
	tokens *tokenIndex
	// index keeps each user's recent records for get_my_journal
	// (actors/journal/index.go).
	index *journal.Index
	// disk watches the journal's free space (nil: not watched).
	disk *journal.DiskWatch
	// readsNotJournaled counts the read tools' tool_call records skipped
	// in the disk's last reserve (ToolCalled).
	readsNotJournaled atomic.Uint64
	// slot is the cluster shard served (Config.Shard); zero: local.
	slot route.Slot
	// fronts counts a shard's agent sessions per front (sessionfronts.go).
	fronts *frontSessions
}

// Start starts the journal writer and builds the actor system: the root
// supervisor and, under it, the users supervisor.
func Start(cfg Config) (*System, error) {
	if cfg.Journal == nil {
		return nil, errors.New("actors: Config.Journal is required")
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	s := &System{logger: logger, timeout: cfg.RequestTimeout, now: cfg.Now, registry: newUserRegistry(),
		tickets: newSendTickets(), market: cfg.Market, slot: cfg.Shard}
	floor := cfg.DiskFloorBytes
	if floor == 0 {
		floor = DefaultDiskFloor
	}
	disk := journal.NewDiskWatch(cfg.JournalDir, cfg.DiskMarginBytes, floor)
	s.disk = disk
	if s.timeout <= 0 {
		s.timeout = 10 * time.Second
	}
	s.bounds = stepBounds{request: s.timeout, settle: DefaultSettleWait, hold: DefaultRecoveryWait}
	if s.now == nil {
		s.now = time.Now
	}
	if s.sys = cfg.Prepared.take(); s.sys == nil {
		s.sys = newActorSystem(logger)
	}
	mw := actor.WithReceiverMiddleware(answerPanics(logger))
	rootProps := actor.PropsFromProducer(func() actor.Actor {
		return &rootActor{logger: logger, strategies: map[string]actor.SupervisorStrategy{}}
	}, actor.WithGuardian(restartStrategy()))
	root, err := s.sys.Root.SpawnNamed(rootProps, "root")
	if err != nil {
		return nil, fmt.Errorf("actors: spawn root: %w", err)
	}
	s.root = root

	s.index, s.fronts = journal.NewIndex(), newFrontSessions()
	if cfg.Users != nil {
		s.index, s.fronts = cfg.Users.index, cfg.Users.fronts
	}
	s.journal = journal.New(cfg.Journal, journal.Options{Logger: logger, Disk: disk, Index: s.index})
	started := false
	defer func() {
		if !started {
			s.journal.Close() // the caller gets no System to stop
		}
	}()
	if cfg.Users != nil {
		level := cfg.Venue
		if level == "" {
			level = messages.VenuePaper
		}
		holders, err := cfg.Users.holders(s.now())
		if err != nil {
			return nil, fmt.Errorf("actors: rebuild users: %w", err)
		}
		s.tokens = newTokenIndex(holders)
		for user, c := range holders {
			s.registry.publish(user, c)
		}
		deps := &userDeps{
			venue: level, env: cfg.Environment, journal: s.journal, logger: logger, masterKey: cfg.MasterKey,
			factory: cfg.Clients, timeout: s.timeout, now: s.now, mw: mw, registry: s.registry,
			tokens: s.tokens, streams: cfg.Streams, settleWait: cfg.SettleWait, recoveryWait: cfg.RecoveryWait,
			disk: disk, postureEvery: cfg.PostureEvery, positionPoll: cfg.PositionPoll, confirmCLI: cfg.ConfirmCLI,
			tickets: s.tickets, feed: cfg.Feed, fence: cfg.Fence, sendsFrom: time.Now(), sends: &sendClocks{},
		}
		if deps.recoveryWait <= 0 {
			deps.recoveryWait = DefaultRecoveryWait
		}
		if deps.postureEvery == 0 {
			deps.postureEvery = DefaultPostureEvery
		}
		if deps.positionPoll == 0 {
			deps.positionPoll = DefaultPositionPoll
		}
		if deps.settleWait <= 0 {
			deps.settleWait = DefaultSettleWait
		}
		if deps.env == "" {
			deps.env = "paper"
		}
		s.bounds = stepBounds{request: s.timeout, settle: deps.settleWait, hold: deps.recoveryWait}
		s.venue, s.env = deps.venue, deps.env
		if deps.factory == nil {
			deps.factory = func(string, string) (*venue.Client, error) {
				return nil, messages.Errorf(messages.CodeExchangeUnavailable, "this process has no venue")
			}
		}
		s.users, err = s.spawnChild(childSpec{
			name: "users",
			props: actor.PropsFromProducer(func() actor.Actor {
				return &usersActor{userDeps: deps, holders: holders}
			}, mw, actor.WithSupervisor(restartStrategy())),
			strategy: restartStrategy(),
		})
		if err != nil {
			return nil, err
		}
		// Recovery phase: every user with an open attempt (an
		// order_attempt without an outcome) is started now and reconciles
		// it before it takes new writes; so is every user with a live
		// confirmation, to run or expire it (confirm.go), and every user
		// with heartbeat_s on, whose silence counts from now
		// (deadman.go). The others start on first use.
		for user, c := range holders {
			if st := c.p.Load(); len(st.Attempts) == 0 && !st.LiveConfirmations() && st.Effective(deps.venue, deps.env).HeartbeatS <= 0 {
				continue
			}
			if _, err := ask[*ensureUserResponse](context.Background(), s, s.users, &ensureUserRequest{user: user}); err != nil {
				return nil, fmt.Errorf("actors: start %s for recovery: %w", user, err)
			}
		}
	}
	started = true
	return s, nil
}

func (s *System) spawnChild(spec childSpec) (*actor.PID, error) {
	res, err := s.sys.Root.RequestFuture(s.root, &spawnChildRequest{spec: spec}, 5*time.Second).Result()
	if err != nil {
		return nil, fmt.Errorf("actors: spawn %s: %w", spec.name, err)
	}
	r := res.(*spawnChildResponse)
	if r.err != nil {
		return nil, fmt.Errorf("actors: spawn %s: %w", spec.name, r.err)
	}
	return r.pid, nil
}

// Stop drains the journal (everything queued is made durable) and stops
// every actor. It does not close the WAL; the caller owns it.
func (s *System) Stop() {
	s.journal.Drain(journal.Timeout)
	_, _ = s.sys.Root.PoisonFuture(s.root).Result()
	s.sys.Shutdown()
	// What was appended between the drain and the stop is written, and
	// the flusher has returned, before the caller may close the log.
	s.journal.Close()
}

// journalEntry appends one record and returns it once it is durable.
func (s *System) journalEntry(ctx context.Context, e wal.Entry) (wal.Record, error) {
	if e.Time.IsZero() {
		e.Time = s.now().UTC()
	}
	// A channel reply, not a protoactor future, and no timer per write:
	// this is the hot path of every durable write from outside the actors.
	// A hung journal is caught by the writer's one watcher.
	reply := make(chan journal.Result, 1)
	s.journal.Append(e, journal.Sync, func(r journal.Result) { reply <- r })
	return s.awaitAppend(ctx, reply)
}

// awaitAppend waits for the journal's answer to one append.
func (s *System) awaitAppend(ctx context.Context, reply <-chan journal.Result) (wal.Record, error) {
	select {
	case res := <-reply:
		if res.Err != nil {
			return wal.Record{}, res.Err
		}
		return res.Record, nil
	case <-ctx.Done():
		return wal.Record{}, messages.Internal(fmt.Errorf("journal: %w", ctx.Err()))
	case <-s.journal.Down():
		select {
		case res := <-reply: // answered as it went down
			if res.Err != nil {
				return wal.Record{}, res.Err
			}
			return res.Record, nil
		default:
		}
		if e := s.journal.DownError(); e.Details["reason"] == messages.ReasonShardFenced {
			return wal.Record{}, e
		}
		return wal.Record{}, messages.Internal(errors.New("journal: the journal failed before answering; the record may or may not be durable"))
	}
}

// Flushes returns how many batches the journal has written so far, each
// one fsync: what tests and benchmarks count to prove a call costs one.
func (s *System) Flushes() uint64 { return s.journal.Flushes() }

// journalAsync queues one record without waiting for it to be durable. It
// is for records whose loss in a crash acknowledges nothing (the tool_call
// record of a read-only tool); state changes use Journal. Once the journal
// has failed it refuses, so nothing is served unjournaled.
func (s *System) journalAsync(e wal.Entry) error {
	if s.journal.IsDown() {
		return s.journal.DownError()
	}
	if e.Time.IsZero() {
		e.Time = s.now().UTC()
	}
	s.journal.Append(e, journal.Sync, nil)
	return nil
}

// JournalJSONQueued is JournalJSON that does not wait: the record is
// appended now (its place in the journal is fixed) and synced at once,
// and wait returns when it is durable or has failed. serve queues
// server_started this way, so its first answers do not wait for the
// fsync.
func (s *System) JournalJSONQueued(typ messages.RecordType, v any) (wait func(context.Context) error, err error) {
	if info, ok := messages.RecordInfo(typ); !ok || info.Writer != messages.WriterSystem {
		return nil, messages.Internal(fmt.Errorf("journal: a direct write may only carry a system record (got %s)", typ))
	}
	payload, err := json.Marshal(v)
	if err != nil {
		return nil, messages.Internal(err)
	}
	if s.journal.IsDown() {
		return nil, s.journal.DownError()
	}
	reply := make(chan journal.Result, 1)
	s.journal.Append(wal.Entry{Type: uint16(typ), Actor: messages.ActorSystem, Payload: payload, Time: s.now().UTC()}, journal.Sync,
		func(r journal.Result) { reply <- r })
	return func(ctx context.Context) error {
		_, err := s.awaitAppend(ctx, reply)
		return err
	}, nil
}

// JournalJSON journals one of the server's own records (the record table's
// WriterSystem types: server_started, recovered_torn_tail, control_refused)
// with the payload marshalled from v, and returns once it is durable. It
// cannot write any other type, nor under any other actor than
// system:server, nor for a user: every other record is written by the part
// of the server that owns it, after deciding.
func (s *System) JournalJSON(ctx context.Context, typ messages.RecordType, user, actorName string, v any) (wal.Record, error) {
	if info, ok := messages.RecordInfo(typ); !ok || info.Writer != messages.WriterSystem || actorName != messages.ActorSystem || user != "" {
		return wal.Record{}, messages.Internal(fmt.Errorf("journal: a direct write may only carry a system record as %s (got %s by %q)", messages.ActorSystem, typ, actorName))
	}
	payload, err := json.Marshal(v)
	if err != nil {
		return wal.Record{}, messages.Internal(err)
	}
	return s.journalEntry(ctx, wal.Entry{Type: uint16(typ), User: user, Actor: actorName, Payload: payload})
}

// Handle is Submit for callers that know only the journal actor of the
// command's origin (messages.ActorAgent, ActorCLIUser, ActorCLIAdmin,
// ActorSystem): tests, the MCP server (always the agent) and the server's
// own start-up steps.
func (s *System) Handle(ctx context.Context, cmd messages.Command, origin string) (any, error) {
	return s.Submit(ctx, cmd, messages.OriginOfActor(origin))
}

// Submit sends one command to the actor that owns its state and returns the
// answer (the command table's Result type). origin is set by the channel
// the command came on; Permit decides whether it may send the command at
// all. This is the one code path for a change, whether the command came
// over MCP, the control socket or an in-process CLI.
func (s *System) Submit(ctx context.Context, cmd messages.Command, origin messages.Origin) (any, error) {
	if s.users == nil {
		return nil, messages.Internal(fmt.Errorf("no users supervisor in this process"))
	}
	info, ok := messages.CommandByName(cmd.CommandName())
	if !ok {
		return nil, messages.InvalidParams("type", "not a command this server handles")
	}
	if e := messages.Permit(origin, cmd); e != nil {
		return nil, e
	}
	if e := s.prepareToken(cmd); e != nil {
		return nil, e
	}
	if c, ok := cmd.(messages.UserCommand); ok {
		if e := s.homeUser(c.TargetUser()); e != nil {
			return nil, e
		}
	}
	msg := &userCommand{ctx: ctx, cmd: cmd, origin: origin}
	if d, args, _ := toolOfCommand(cmd); d != nil {
		// A trading call's arguments are validated here, once, in the
		// caller's goroutine, before any actor hop: an invalid call
		// neither queues behind the user's writes nor waits for a key
		// re-check. The driver trusts them (D139), and the channel only
		// decoded them (D140).
		if e := d.Validate(args); e != nil {
			return nil, e
		}
		msg.checked = true
	}
	if info.Users {
		return ask[any](ctx, s, s.users, msg)
	}
	if c, ok := cmd.(messages.UserCommand); ok {
		return s.askUser(ctx, c.TargetUser(), msg)
	}
	return nil, messages.InvalidParams("type", "not a command this server handles")
}

// Validate checks a trading command's arguments with its tool's Validate,
// as Submit does, and nothing else (nil for any other command): for the
// MCP call that repeats a parked one with a form's state, which submits
// no trading command (D140).
func (s *System) Validate(cmd messages.Command) error { return ValidateCommand(cmd) }

// ValidateCommand is System.Validate without a system: the checks read
// only the command, so a cluster member runs them before any hop to the
// user's shard (docs/cluster.md "The wire").
func ValidateCommand(cmd messages.Command) error {
	if d, args, _ := toolOfCommand(cmd); d != nil {
		if e := d.Validate(args); e != nil {
			return e
		}
	}
	return nil
}

// Account sends an account read to the user's actor, which hands it to the
// user's venue actor. The answer is *messages.WalletBalance or a
// *messages.Page of positions, orders or executions.
func (s *System) Account(ctx context.Context, req messages.AccountRequest) (any, error) {
	return s.askUser(ctx, messages.AccountUser(req), &accountAsk{ctx: ctx, req: req})
}

// Decide asks the user's actor whether an action may proceed (docs/tools.md "The action path" steps
// 2 and 3).
func (s *System) Decide(ctx context.Context, r *messages.DecideActionRequest) (*messages.Decision, error) {
	res, err := s.askUser(ctx, r.User, &decideAsk{ctx: ctx, req: r})
	if err != nil {
		return nil, err
	}
	d, ok := res.(*messages.Decision)
	if !ok {
		return nil, messages.Internal(fmt.Errorf("decide: unexpected reply %T", res))
	}
	return d, nil
}

// CallerProfile is the profile of the user's effective policy, as the MCP
// guard admits and lists tools by it (docs/architecture.md "One tool call,
// hop by hop"). It is read from the user's committed state, which the user
// actor publishes after each change is durable and applied, so it asks no
// actor and never waits behind the user's journal writes: a loosening is
// seen only once it is durable, a tightening as soon as its answer was
// sent. A user whose actors have not started yet has the state replay
// rebuilt from the journal. A disabled user has no profile (""); a user
// never created is not_found, like every command for them.
func (s *System) CallerProfile(user string) (messages.Profile, error) {
	if s.users == nil {
		return "", messages.Internal(fmt.Errorf("no users supervisor in this process"))
	}
	if !messages.UserNamePattern.MatchString(user) {
		return "", messages.InvalidParams("user", "must be 1-64 of lowercase letters, digits, '.', '_' or '-'")
	}
	if e := s.homeUser(user); e != nil {
		return "", e
	}
	c := s.registry.committedOf(user)
	if c == nil {
		return "", noSuchUser()
	}
	st := c.p.Load()
	if !st.Exists {
		return "", noSuchUser()
	}
	if st.Disabled {
		return "", nil
	}
	return st.Effective(s.venue, s.env).Profile, nil
}

// askUser sends msg to the named user's actor. A user without an actor is
// not_found.
func (s *System) askUser(ctx context.Context, user string, msg any) (any, error) {
	if s.users == nil {
		return nil, messages.Internal(fmt.Errorf("no users supervisor in this process"))
	}
	if !messages.UserNamePattern.MatchString(user) {
		return nil, messages.InvalidParams("user", "must be 1-64 of lowercase letters, digits, '.', '_' or '-'")
	}
	if e := s.homeUser(user); e != nil {
		return nil, e
	}
	// User actors are spawned on first use. The registry names the
	// running ones; a user without an entry is started by the users
	// supervisor. A dead letter (the actor stopped after the lookup) means
	// the message was never seen, so it is safe to start it and send once
	// more.
	pid := s.registry.get(user)
	if pid != nil {
		res, err := ask[any](ctx, s, pid, msg)
		if err == nil || !errors.Is(messages.AsError(err).Err, actor.ErrDeadLetter) {
			return res, err
		}
	}
	ens, err := ask[*ensureUserResponse](ctx, s, s.users, &ensureUserRequest{user: user})
	if err != nil {
		return nil, err
	}
	if ens.err != nil {
		return nil, ens.err
	}
	return ask[any](ctx, s, ens.pid, msg)
}

// minLevel drops records below min.
type minLevel struct {
	slog.Handler
	min slog.Level
}

func (h minLevel) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= h.min && h.Handler.Enabled(ctx, l)
}

func (h minLevel) WithAttrs(as []slog.Attr) slog.Handler {
	return minLevel{Handler: h.Handler.WithAttrs(as), min: h.min}
}

func (h minLevel) WithGroup(name string) slog.Handler {
	return minLevel{Handler: h.Handler.WithGroup(name), min: h.min}
}

// errOrNil turns a nil *messages.Error into a nil error interface.
func errOrNil(e *messages.Error) error {
	if e == nil {
		return nil
	}
	return e
}

// ask sends msg to pid and waits for a reply of type T. A *messages.Error
// reply (from a supervisor answering a crash) is returned as the error; a
// dead actor becomes internal_error. The wait is the action's own bound
// (stepBounds.askBound), or less when the caller's context ends first. A
// trading call or approval whose wait ends early is answered by its send
// ticket (System.waitEnded): outcome_unknown with the client order id (or
// the confirmation id) once its write may have left or the approval was
// taken, else "nothing was sent" (and nothing will be); any other
// command's early end is internal_error.
func ask[T any](ctx context.Context, s *System, pid *actor.PID, msg any) (T, error) {
	var zero T
	if pid == nil {
		return zero, messages.Internal(fmt.Errorf("ask %T: no actor serves this in this process", msg))
	}
	if err := ctx.Err(); err != nil {
		return zero, messages.Internal(fmt.Errorf("ask %T: %w", msg, err))
	}
	timeout := s.bounds.askBound(msg)
	if dl, ok := ctx.Deadline(); ok {
		timeout = min(timeout, time.Until(dl))
	}
	if timeout <= 0 {
		return zero, messages.Internal(context.DeadlineExceeded)
	}
	f := actor.NewFuture(s.sys, timeout)
	ticket := sendsWrite(msg)
	if ticket {
		s.tickets.open(f.PID())
		defer s.tickets.done(f.PID())
	}
	s.sys.Root.RequestWithCustomSender(pid, msg, f.PID())
	// The future is waited for on its own goroutine: nothing but the
	// answer may be sent to it (protoactor's future does not guard its
	// result against two senders). When the caller's context ends first,
	// that goroutine lasts until the answer or the bound, no longer.
	type answer struct {
		res any
		err error
	}
	answered := make(chan answer, 1)
	go func() {
		res, err := f.Result()
		answered <- answer{res, err}
	}()
	var res any
	var err error
	select {
	case a := <-answered:
		res, err = a.res, a.err
	case <-ctx.Done():
		select {
		case a := <-answered: // it came at the same moment
			res, err = a.res, a.err
		default:
			err = ctx.Err()
		}
	}
	if err != nil {
		if !errors.Is(err, actor.ErrDeadLetter) {
			cause := fmt.Errorf("ask %T: %w", msg, err)
			if ticket {
				return zero, s.waitEnded(msg, f.PID(), cause)
			}
		}
		return zero, messages.Internal(fmt.Errorf("ask %T: %w", msg, err))
	}
	switch v := res.(type) {
	case *messages.Error:
		return zero, v
	case T:
		return v, nil
	default:
		return zero, messages.Internal(fmt.Errorf("ask %T: unexpected reply %T", msg, res))
	}
}

// ToolCalled queues the tool_call record of one MCP call (actor
// mcp:agent) and returns without waiting for the disk.
//
// For a read-only tool (durable false) the record goes out with the next
// flush and nobody waits for it; wait is nil. For any other tool the record
// is lazy (it starts no flush of its own) and wait blocks until it is
// durable: the call's own record, journaled after it, carries it to disk in
// the same fsync, so wait then returns at once; a call that wrote nothing
// else makes wait force a flush. Either way a state-changing call costs one
// fsync, not two in a row.
//
// When the journal's disk is in its last reserve, a read-only tool's
// record is not journaled (reads acknowledge nothing, and the agent must
// not use up the space kept for the kill switch and the ways out): the
// call goes on, and the skipped records are counted in memory and logged.
// In the inner half of the reserve every other call is refused here
// (internal_error, details.reason disk_reserve) before anything is
// journaled (posturecache.go), except activate_kill_switch: it goes on
// without its tool_call, and its kill_switch_on record (written only when
// the switch changes, by mcp:agent) is its trace.
func (s *System) ToolCalled(ctx context.Context, call *messages.ToolCalled, durable bool) (wait func(context.Context) error, err error) {
	if e := s.homeUser(call.User); e != nil {
		return nil, e
	}
	inner := durable && s.disk.BelowInnerFloor()
	if inner && !(call.Admitted && call.Tool == killSwitchTool) {
		return nil, agentReserveRefusal()
	}
	// In the last reserve a read, and a call refused before its handler
	// (an unknown, withheld or hidden tool), is answered without its
	// tool_call record: neither changes anything (D74, D86).
	if inner || ((!durable || !call.Admitted) && s.disk.BelowFloor()) {
		if n := s.readsNotJournaled.Add(1); n&(n-1) == 0 {
			s.logger.Warn("journal disk in its last reserve: read and refused tool calls are answered but not journaled", "not_journaled", n)
		}
		return nil, nil
	}
	payload, err := json.Marshal(call)
	if err != nil {
		return nil, messages.Internal(err)
	}
	e := wal.Entry{Type: uint16(messages.RecordToolCall), User: call.User, Actor: messages.ActorAgent, Payload: payload}
	if !durable {
		return nil, s.journalAsync(e)
	}
	if s.journal.IsDown() {
		return nil, s.journal.DownError()
	}
	e.Time = s.now().UTC()
	reply := make(chan journal.Result, 1)
	s.journal.Append(e, journal.NoSync, func(r journal.Result) { reply <- r })
	return func(ctx context.Context) error {
		select {
		case res := <-reply:
			return errOrNil(res.Err)
		default:
		}
		s.journal.Flush()
		_, err := s.awaitAppend(ctx, reply)
		return err
	}, nil
}

// MyJournal returns a page of the user's own recent records, newest
// first, with a seq below before (0: from the newest). It reads the
// in-memory index only: no actor, no disk.
func (s *System) MyJournal(user string, before uint64, limit int) messages.JournalPage {
	if s.homeUser(user) != nil {
		return messages.JournalPage{}
	}
	return s.index.Page(user, before, limit)
}
