package actors

import (
	"context"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/shopspring/decimal"

	"github.com/guarded-exchange/guarded-exchange/messages"
	"github.com/guarded-exchange/guarded-exchange/venue"
)

// streamCache is what the user's private stream showed last: its health,
// the open orders and the positions. The venue actor writes it (stream
// events, and REST reads that seed it on each (re)connect and refresh the
// positions' mark while one is open); the user actor reads it for
// get_posture and the automatic posture causes, without a round trip. One
// per user, made by the user's supervisor; safe for concurrent use.
type streamCache struct {
	mu sync.Mutex
	// guarded by mu
	open      bool
	connected bool
	since     time.Time // when it last connected, or went down
	// unstableSince is when the stream last stopped being healthy (the
	// stale clock, streamFlapping); zero while it is healthy. connects
	// holds the times of the last (re)connects, at most streamFlapMax+1.
	unstableSince time.Time
	connects      []time.Time
	lastPush      func() time.Time
	known         bool // something was cached (a push or a seed)
	orders        map[string]messages.Order
	// seeding counts the REST reads of the open orders under way
	// (beginSeed); pushedDuringSeed keeps, by order id, the latest row
	// pushed meanwhile, so that a read, which may have been taken before
	// those pushes, does not lose them when it replaces orders.
	seeding          int
	pushedDuringSeed map[string]messages.Order
	positions        map[string]messages.Position
	// dayStart is the UTC day counted; day is each position's count of
	// that day (dayCount), by posKey. dirty: the count changed since it
	// was last journaled (daily_pnl_noted); version counts the changes.
	dayStart  time.Time
	day       map[string]*dayCount
	dirty     bool
	version   uint64
	polledAt  time.Time
	polling   bool
	positionN int // non-flat positions

	// The truth of the positions (D94): positions holds each position's
	// latest row (a push or a REST read), by posKey; rest its last REST
	// row. worst is, for a position pushed since its last REST read, the
	// lowest PnL of the day (contribution) any of those pushes showed:
	// the stream may make the day's loss larger at once, but never smaller
	// until a REST read confirms it.
	rest  map[string]messages.Position
	worst map[string]decimal.Decimal
	// traded holds the instruments (symKey) with the account's own
	// executions: an execution pushed, an order this server placed, an
	// open position a REST read showed, a row of the day's journaled
	// count. Realised PnL counts only on them.
	traded map[string]bool
	// tradedOverflow: pushed executions named more instruments than
	// traded holds (maxTraded); realised PnL then counts on every
	// instrument until the day's roll (fail closed).
	tradedOverflow bool
	// listing looks up whether the venue lists an instrument (nil: every
	// instrument is taken as listed); listed remembers the answers
	// (false: not listed), held the rows waiting for one, by posKey.
	listing  func(ctx context.Context, cat messages.Category, symbol string) (listed bool, err error)
	listed   map[string]bool
	held     map[string]heldRow
	checking bool
	// retryAt is when an instrument whose look-up failed may be looked up
	// again (its rows wait; others are looked up meanwhile).
	retryAt map[string]time.Time
	// unreadablePushes counts the pushed position rows dropped since the
	// last REST read of the positions because their symbol or position
	// index is not one (never kept; shown in the exposure's unreadable
	// positions).
	unreadablePushes int
}

func newStreamCache() *streamCache {
	return &streamCache{orders: map[string]messages.Order{}, positions: map[string]messages.Position{}, rest: map[string]messages.Position{},
		worst: map[string]decimal.Decimal{}, traded: map[string]bool{}, listed: map[string]bool{}, held: map[string]heldRow{}, retryAt: map[string]time.Time{}, day: map[string]*dayCount{}}
}

// heldRow is a position row that waits for its instrument's listing.
type heldRow struct {
	row  messages.Position
	rest bool
}

// Bounds of the listing look-ups: at most maxHeldRows pushed rows wait
// for one (the others are dropped: the next push or read brings them
// again), and apart from them at most maxHeldRESTRows rows of REST reads
// (pushed rows never take their room; past it a REST row applies without
// its look-up: fail closed). At most one look-up runs at a time,
// listingPace apart, and at most maxListed answers are remembered (past
// it the "not listed" ones are forgotten).
const (
	maxHeldRows     = 32
	maxHeldRESTRows = 256
	listingPace     = 100 * time.Millisecond
	listingRetry    = time.Second
	maxListed       = 4096
)

// Bounds of the maps keyed by names the exchange chooses: at most
// maxPositions positions are held (a pushed row of a new position past it
// is dropped; REST rows always apply), and at most maxTraded instruments
// are remembered as traded from pushed executions (the server's own
// orders, REST reads and the journaled count always are; past it every
// instrument counts as traded until the day's roll: fail closed).
const (
	maxPositions = 1024
	maxTraded    = 256
)

// dayCount is one position's realised PnL of the day: carried plus, once
// the position was seen since the process started, its cumulative
// realised PnL now minus base.
//
// The exchange's cumRealisedPnl is all-time (Bybit keeps a flat
// position's row and its value), so the day's part is its move since the
// day's first sight. A restart restores carried (the day's realised PnL
// as last journaled) and floor (the cumulative value then): at the next
// sight base is the higher of the value seen and floor, so a loss
// realised while the server was down counts, and a value that fell back
// toward zero (a paper venue that restarted, a row the exchange no longer
// shows) does not erase the loss already counted: fail closed.
type dayCount struct {
	category messages.Category
	symbol   string
	idx      int
	carried  decimal.Decimal
	base     decimal.Decimal
	floor    decimal.Decimal
	seen     bool
}

// opened notes a stream that was just started (down until it connects).
func (c *streamCache) opened(now time.Time, st *venue.Stream) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.open, c.connected, c.since = true, false, now
	c.unstableSince, c.connects = now, nil
	c.lastPush = st.LastPush
}

// closed notes that no stream runs.
func (c *streamCache) closed() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.open, c.connected, c.lastPush = false, false, nil
}

// note applies one stream event.
func (c *streamCache) note(ev messages.StreamEvent, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch ev.Kind {
	case messages.StreamConnected, messages.StreamReconnected:
		c.connected, c.since = true, now
		c.connects = append(c.connects, now)
		if len(c.connects) > streamChurnMax+1 {
			c.connects = slices.Delete(c.connects, 0, len(c.connects)-streamChurnMax-1)
		}
		if !c.flappingLocked(now) {
			c.unstableSince = time.Time{}
		}
	case messages.StreamDisconnected:
		if c.unstableSince.IsZero() || (c.connected && now.Sub(c.since) >= streamStableFor && !c.churningLocked(now)) {
			// A healthy or stable stream went down: the stale clock
			// starts now. A flapping one keeps its clock running.
			c.unstableSince = now
		}
		if c.connected {
			c.connected, c.since = false, now
		}
	case messages.StreamOrders:
		c.noteOrdersLocked(ev.Orders)
		if c.seeding > 0 {
			for _, o := range ev.Orders {
				if _, ok := c.pushedDuringSeed[o.OrderID]; ok || len(c.pushedDuringSeed) < maxCachedOrders {
					c.pushedDuringSeed[o.OrderID] = o
				}
			}
		}
	case messages.StreamPositions:
		c.notePositionsLocked(ev.Positions, now, false)
	case messages.StreamExecutions:
		for _, e := range ev.Executions {
			c.pushedTradeLocked(e.Category, e.Symbol)
		}
	}
}

// symKey names an instrument.
func symKey(cat messages.Category, symbol string) string { return string(cat) + ":" + symbol }

// tradedLocked notes the account's own execution on an instrument whose
// name is one (exchange text that is not a symbol never counts).
func (c *streamCache) tradedLocked(cat messages.Category, symbol string) {
	if messages.SymbolRE.MatchString(symbol) {
		c.traded[symKey(cat, symbol)] = true
	}
}

// pushedTradeLocked notes a pushed execution (exchange text): remembered
// while traded holds fewer than maxTraded instruments; past it every
// instrument's realised PnL counts until the day's roll.
func (c *streamCache) pushedTradeLocked(cat messages.Category, symbol string) {
	if !messages.SymbolRE.MatchString(symbol) || c.traded[symKey(cat, symbol)] {
		return
	}
	if len(c.traded) >= maxTraded {
		c.tradedOverflow = true
		return
	}
	c.traded[symKey(cat, symbol)] = true
}

// tradedOnLocked reports whether realised PnL counts on an instrument.
func (c *streamCache) tradedOnLocked(cat messages.Category, symbol string) bool {
	return c.tradedOverflow || c.traded[symKey(cat, symbol)]
}

// markTraded notes an order this server placed on the instrument: its
// realised PnL counts from now on.
func (c *streamCache) markTraded(cat messages.Category, symbol string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.tradedLocked(cat, symbol)
}

// markListed notes that the venue lists the instrument (the server read
// its rules).
func (c *streamCache) markListed(cat messages.Category, symbol string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if messages.SymbolRE.MatchString(symbol) {
		c.listed[symKey(cat, symbol)] = true
	}
}

// setListing makes the cache accept position rows only of instruments the
// venue lists, looked up with lookup (nil: every instrument).
func (c *streamCache) setListing(lookup func(ctx context.Context, cat messages.Category, symbol string) (bool, error)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.listing = lookup
}

// listingOf looks up whether the venue lists an instrument: its rules
// read (not_found, or a name the venue refuses: not listed).
func listingOf(client *venue.Client) func(ctx context.Context, cat messages.Category, symbol string) (bool, error) {
	return func(ctx context.Context, cat messages.Category, symbol string) (bool, error) {
		_, err := client.Instrument(ctx, cat, symbol)
		switch messages.CodeOf(err) {
		case "":
			return true, nil
		case messages.CodeNotFound, messages.CodeInvalidParams:
			return false, nil
		}
		return false, err
	}
}

// admitLocked reports whether a position row applies now: its instrument
// is listed (or the cache does not check). A row of an instrument not yet
// looked up waits for the look-up (bounded); one of an instrument the
// venue does not list is dropped. A pushed row whose symbol or position
// index is not one is dropped, counted only in unreadablePushes: no REST
// read by symbol could ever confirm or drop it. A REST read's such row
// applies (counted in the exposure's unreadable positions) and is dropped
// by the next read of every position that does not show it (absentFrom).
// A pushed row of a new position past maxPositions is dropped.
func (c *streamCache) admitLocked(p messages.Position, rest bool) bool {
	k := posKey(p.Category, p.Symbol, p.PositionIdx)
	if !rest {
		if !messages.SymbolRE.MatchString(p.Symbol) || p.PositionIdx < 0 || p.PositionIdx > 2 {
			c.unreadablePushes++
			return false
		}
		if _, ok := c.positions[k]; !ok && len(c.positions) >= maxPositions {
			return false
		}
	}
	if c.listing == nil || !messages.SymbolRE.MatchString(p.Symbol) {
		return true
	}
	listed, known := c.listed[symKey(p.Category, p.Symbol)]
	if known {
		return listed
	}
	h, waiting := c.held[k]
	switch {
	case waiting && h.rest && !rest:
		// A push never takes a REST row's place: the REST row's loss
		// keeps counting until its look-up answers (D94).
	case waiting:
		c.held[k] = heldRow{row: p, rest: rest}
	case rest && c.heldCountLocked(true) >= maxHeldRESTRows:
		return true // no room to wait: the REST row applies (fail closed)
	case rest || c.heldCountLocked(false) < maxHeldRows:
		c.held[k] = heldRow{row: p, rest: rest}
	}
	c.startListingLocked()
	return false
}

// heldCountLocked counts the held rows of REST reads (rest) or of pushes.
func (c *streamCache) heldCountLocked(rest bool) int {
	n := 0
	for _, h := range c.held {
		if h.rest == rest {
			n++
		}
	}
	return n
}

// startListingLocked starts the look-up of the held rows' instruments
// unless one runs.
func (c *streamCache) startListingLocked() {
	if c.checking || len(c.held) == 0 || c.listing == nil {
		return
	}
	c.checking = true
	lookup := c.listing
	go func() {
		for {
			c.mu.Lock()
			cat, symbol, wait := c.nextListingLocked(time.Now())
			if symbol == "" && wait == 0 {
				c.checking = false
				c.mu.Unlock()
				return
			}
			c.mu.Unlock()
			if symbol == "" {
				time.Sleep(wait) // every waiting instrument's look-up failed a moment ago
				continue
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			listed, err := lookup(ctx, cat, symbol)
			cancel()
			c.listedAnswer(cat, symbol, listed, err)
			time.Sleep(listingPace)
		}
	}()
}

// nextListingLocked picks an instrument of the held rows to look up: one
// whose last look-up did not fail within listingRetry. None: wait is how
// long until one may be tried again (0: no row waits).
func (c *streamCache) nextListingLocked(now time.Time) (messages.Category, string, time.Duration) {
	var wait time.Duration
	for _, h := range c.held {
		at, failed := c.retryAt[symKey(h.row.Category, h.row.Symbol)]
		if !failed || !now.Before(at) {
			return h.row.Category, h.row.Symbol, 0
		}
		if d := at.Sub(now); wait == 0 || d < wait {
			wait = d
		}
	}
	return "", "", wait
}

// listedAnswer applies a listing look-up: the held rows of a listed
// instrument apply, those of one not listed are dropped. When the look-up
// failed, a pushed row is dropped (the next push or read brings it again)
// and a REST read's row keeps waiting, so a real position's loss is not
// forgotten while the venue cannot answer.
func (c *streamCache) listedAnswer(cat messages.Category, symbol string, listed bool, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	sk := symKey(cat, symbol)
	delete(c.retryAt, sk)
	if err == nil {
		if len(c.listed) >= maxListed {
			for k, v := range c.listed {
				if !v {
					delete(c.listed, k)
				}
			}
		}
		c.listed[sk] = listed
	}
	now := time.Now()
	for k, h := range c.held {
		if symKey(h.row.Category, h.row.Symbol) != sk {
			continue
		}
		if err != nil && h.rest {
			continue
		}
		delete(c.held, k)
		if err == nil && listed {
			c.notePositionsLocked([]messages.Position{h.row}, now, h.rest)
		}
	}
	for _, h := range c.held {
		if err != nil && symKey(h.row.Category, h.row.Symbol) == sk {
			// Rows still wait for this instrument: look the others up
			// first, and this one again in a moment.
			c.retryAt[sk] = now.Add(listingRetry)
			break
		}
	}
}

// openStatus reports whether an order status is still open.
func openStatus(s string) bool {
	return s == "New" || s == "PartiallyFilled" || s == "Untriggered"
}

// maxCachedOrders bounds the open orders the cache holds: a flood of
// pushed orders, each new, cannot grow it further (the next REST seed
// replaces them).
const maxCachedOrders = 1000

func (c *streamCache) noteOrdersLocked(list []messages.Order) {
	c.known = true
	for _, o := range list {
		if openStatus(o.Status) {
			if _, ok := c.orders[o.OrderID]; !ok && len(c.orders) >= maxCachedOrders {
				continue
			}
			c.orders[o.OrderID] = o
		} else {
			delete(c.orders, o.OrderID)
		}
	}
}

// posKey is a position's key: in hedge mode a symbol has two positions
// (positionIdx 1 and 2).
func posKey(cat messages.Category, symbol string, idx int) string {
	return string(cat) + ":" + symbol + ":" + strconv.Itoa(idx)
}

// notePositionsLocked applies position rows, of a REST read (rest) or a
// push. A REST row is the truth: it sets the day's baseline and the
// journaled count, and replaces what the pushes showed since the last
// read. A pushed row only lowers the position's PnL of the day (worst)
// until the next REST read: the stream may make the posture stricter at
// once, never looser (D94).
func (c *streamCache) notePositionsLocked(list []messages.Position, now time.Time, rest bool) {
	c.known = true
	c.rollDayLocked(now)
	for _, p := range list {
		if !c.admitLocked(p, rest) {
			continue
		}
		k := posKey(p.Category, p.Symbol, p.PositionIdx)
		c.positions[k] = p
		if !rest {
			if v := c.contributionLocked(k, p.Category, p.Symbol, &p); !c.hasWorst(k) || v.LessThan(c.worst[k]) {
				c.worst[k] = v
			}
			continue
		}
		if p.Size.IsPositive() {
			c.tradedLocked(p.Category, p.Symbol)
		}
		old, had := c.rest[k]
		c.rest[k] = p
		delete(c.worst, k)
		d := c.day[k]
		switch {
		case d == nil:
			c.day[k] = &dayCount{category: p.Category, symbol: p.Symbol, idx: p.PositionIdx, base: p.CumRealisedPnl, seen: true}
			c.changedLocked()
		case !d.seen:
			d.base, d.seen = decimal.Max(p.CumRealisedPnl, d.floor), true
			c.changedLocked()
		case !had || !old.CumRealisedPnl.Equal(p.CumRealisedPnl):
			c.changedLocked()
		}
	}
	c.countPositionsLocked()
}

// pushedOpen reports whether the stream showed a position open on the
// symbol since its last REST read: the leverage step (D111) is not taken
// under it, whatever the REST read shows (a push may make a decision
// stricter, never looser: D94).
func (c *streamCache) pushedOpen(cat messages.Category, symbol string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k, p := range c.positions {
		if p.Category == cat && p.Symbol == symbol && !p.Size.IsZero() && c.hasWorst(k) {
			return true
		}
	}
	return false
}

// countPositionsLocked counts the non-flat positions (positionN).
func (c *streamCache) countPositionsLocked() {
	c.positionN = 0
	for _, p := range c.positions {
		if p.Size.IsPositive() {
			c.positionN++
		}
	}
}

func (c *streamCache) hasWorst(k string) bool { _, ok := c.worst[k]; return ok }

// contributionLocked is a position's PnL of the day as row shows it
// (nil: no row): its realised PnL of the day, on an instrument the
// account traded, plus an open position's unrealised PnL.
func (c *streamCache) contributionLocked(k string, cat messages.Category, symbol string, row *messages.Position) decimal.Decimal {
	pnl := decimal.Zero
	if d := c.day[k]; d != nil && c.tradedOnLocked(cat, symbol) {
		pnl = d.carried
		if d.seen && row != nil {
			pnl = pnl.Add(row.CumRealisedPnl.Sub(d.base))
		}
	}
	if row != nil && row.Size.IsPositive() {
		pnl = pnl.Add(row.UnrealisedPnl)
	}
	return pnl
}

// pnlLocked is a position's PnL of the day as counted: as its last REST
// read shows it, or lower when a push since then showed less.
func (c *streamCache) pnlLocked(k string, cat messages.Category, symbol string) decimal.Decimal {
	var row *messages.Position
	if r, ok := c.rest[k]; ok {
		row = &r
	}
	pnl := c.contributionLocked(k, cat, symbol, row)
	if w, ok := c.worst[k]; ok && w.LessThan(pnl) {
		pnl = w
	}
	return pnl
}

func (c *streamCache) changedLocked() { c.dirty, c.version = true, c.version+1 }

// rollDayLocked starts a new day's count at 00:00 UTC: every position
// known starts from its value now.
func (c *streamCache) rollDayLocked(now time.Time) {
	day := messages.DayStart(now)
	if day.Equal(c.dayStart) {
		return
	}
	c.dayStart = day
	c.day = map[string]*dayCount{}
	c.worst = map[string]decimal.Decimal{}
	// traded starts again: the instruments of REST rows (open, or traded)
	// and of open orders that were traded stay (their realised PnL keeps
	// counting); the others' executions are forgotten.
	traded := map[string]bool{}
	for _, o := range c.orders {
		// An open order's fill of today counts (the order may be the
		// server's own).
		if sk := symKey(o.Category, o.Symbol); c.traded[sk] {
			traded[sk] = true
		}
	}
	for k, p := range c.rest {
		c.day[k] = &dayCount{category: p.Category, symbol: p.Symbol, idx: p.PositionIdx, base: p.CumRealisedPnl, seen: true}
		if sk := symKey(p.Category, p.Symbol); c.traded[sk] || p.Size.IsPositive() {
			traded[sk] = true
		}
	}
	c.traded, c.tradedOverflow = traded, false
	c.dirty = false
	if len(c.day) > 0 {
		c.changedLocked()
	}
}

// realisedLocked is a position's realised PnL of the day as REST
// confirmed it.
func (c *streamCache) realisedLocked(k string, d *dayCount) decimal.Decimal {
	if !d.seen {
		return d.carried
	}
	return d.carried.Add(c.rest[k].CumRealisedPnl.Sub(d.base))
}

// restoreDay starts the day's count from what was journaled last
// (state.User.DailyPnl): a record of another day counts nothing, and a
// position already counted since the process started (the user actor
// restarted, not the cache) keeps its count.
func (c *streamCache) restoreDay(ev messages.DailyPnlEvent, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.rollDayLocked(now)
	if ev.Day != c.dayStart.Format(time.DateOnly) {
		return
	}
	for _, r := range ev.Rows {
		k := posKey(r.Category, r.Symbol, r.PositionIdx)
		if _, ok := c.day[k]; ok {
			continue
		}
		c.tradedLocked(r.Category, r.Symbol)
		c.day[k] = &dayCount{category: r.Category, symbol: r.Symbol, idx: r.PositionIdx, carried: r.RealisedUSDT, floor: r.CumRealisedPnl}
	}
}

// pendingDay is the day's count to journal when it changed since it was
// last journaled, with its version for notedDay.
func (c *streamCache) pendingDay(now time.Time) (messages.DailyPnlEvent, uint64, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.rollDayLocked(now)
	if !c.dirty {
		return messages.DailyPnlEvent{}, 0, false
	}
	ev := messages.DailyPnlEvent{Day: c.dayStart.Format(time.DateOnly), Rows: make([]messages.DailyPnlRow, 0, len(c.day))}
	for k, d := range c.day {
		if !c.tradedOnLocked(d.category, d.symbol) {
			continue // its realised PnL does not count
		}
		cum := d.floor
		if d.seen {
			cum = c.rest[k].CumRealisedPnl
		}
		ev.Rows = append(ev.Rows, messages.DailyPnlRow{Category: d.category, Symbol: d.symbol, PositionIdx: d.idx,
			CumRealisedPnl: cum, RealisedUSDT: c.realisedLocked(k, d)})
	}
	slices.SortFunc(ev.Rows, func(a, b messages.DailyPnlRow) int {
		return strings.Compare(posKey(a.Category, a.Symbol, a.PositionIdx), posKey(b.Category, b.Symbol, b.PositionIdx))
	})
	return ev, c.version, true
}

// notedDay notes that the count of version is durable.
func (c *streamCache) notedDay(ev messages.DailyPnlEvent, version uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if version == c.version && ev.Day == c.dayStart.Format(time.DateOnly) {
		c.dirty = false
	}
}

// seed replaces the orders and positions with a REST read (after a
// (re)connect nothing missed is replayed). A nil list was not read.
func (c *streamCache) seed(orders []messages.Order, positions []messages.Position, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	pushed := c.pushedDuringSeed
	if c.seeding--; c.seeding <= 0 {
		c.seeding, c.pushedDuringSeed = 0, nil
	}
	if orders != nil {
		c.orders = map[string]messages.Order{}
		c.noteOrdersLocked(orders)
		// The read may predate what was pushed while it ran: an order
		// created or closed meanwhile keeps its pushed state. A row it
		// pushed before the read saw a newer one is corrected by the
		// stream's next push of that order.
		for _, o := range pushed {
			c.noteOrdersLocked([]messages.Order{o})
		}
	}
	if positions != nil {
		c.unreadablePushes = 0
		c.notePositionsLocked(positions, now, true)
	}
}

// beginSeed notes that a REST read of the open orders starts: the order
// rows pushed from now until seed are kept to be applied over the read.
func (c *streamCache) beginSeed() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.seeding++; c.pushedDuringSeed == nil {
		c.pushedDuringSeed = map[string]messages.Order{}
	}
}

// vanished is the positions a read of every open position (list) does
// not show and that must be read by symbol: those the cache holds open
// (closed while no push reached the cache: a flat row keeps its realised
// PnL, so that neither the exposure nor the day's loss keeps a position
// that is gone), and those a push changed since their last REST read
// (what the stream showed is confirmed, or corrected, by REST).
func (c *streamCache) vanished(list []messages.Position) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	listed := map[string]bool{}
	for _, p := range list {
		listed[posKey(p.Category, p.Symbol, p.PositionIdx)] = true
	}
	var out []string
	for k, p := range c.positions {
		if p.Category == messages.CategoryLinear && messages.SymbolRE.MatchString(p.Symbol) && (p.Size.IsPositive() || c.hasWorst(k)) &&
			!listed[k] && !slices.Contains(out, p.Symbol) {
			out = append(out, p.Symbol)
		}
	}
	slices.Sort(out)
	if len(out) > maxVanishedReads {
		out = out[:maxVanishedReads]
	}
	return out
}

// maxVanishedReads bounds the reads by symbol after one positions read;
// the rest are read at the next one.
const maxVanishedReads = 10

// readPositions reads every open linear position and, by symbol, the
// rows of the positions the cache holds open that the read no longer
// lists (vanished). nil: the read failed.
func readPositions(ctx context.Context, client *venue.Client, cache *streamCache) []messages.Position {
	page, err := client.Positions(ctx, venue.PositionQuery{Category: messages.CategoryLinear, Limit: 200})
	if err != nil {
		return nil
	}
	out := append([]messages.Position{}, page.Items...)
	if page.NextCursor == "" {
		cache.absentFrom(messages.CategoryLinear, out)
	}
	for _, sym := range cache.vanished(out) {
		if one, err := client.Positions(ctx, venue.PositionQuery{Category: messages.CategoryLinear, Symbol: sym}); err == nil {
			out = append(out, one.Items...)
			cache.absentIn(messages.CategoryLinear, sym, one.Items)
		}
	}
	return out
}

// absentIn notes a REST read of symbol's positions (rows): a position of
// the symbol that a push showed and the read does not list is not there.
// What the pushes showed of it is dropped: it is as its last REST row
// shows it, or gone.
func (c *streamCache) absentIn(cat messages.Category, symbol string, rows []messages.Position) {
	c.mu.Lock()
	defer c.mu.Unlock()
	listed := map[string]bool{}
	for _, p := range rows {
		listed[posKey(p.Category, p.Symbol, p.PositionIdx)] = true
	}
	for k := range c.worst {
		p := c.positions[k]
		if p.Category != cat || p.Symbol != symbol || listed[k] {
			continue
		}
		delete(c.worst, k)
		if r, ok := c.rest[k]; ok {
			c.positions[k] = r
		} else {
			delete(c.positions, k)
		}
	}
}

// absentFrom notes a complete REST read of every open position of a
// category (rows): a position whose name no read by symbol can ask for
// (it is not a symbol) and that the read does not list is not there; it
// is dropped with what its rows showed.
func (c *streamCache) absentFrom(cat messages.Category, rows []messages.Position) {
	c.mu.Lock()
	defer c.mu.Unlock()
	listed := map[string]bool{}
	for _, p := range rows {
		listed[posKey(p.Category, p.Symbol, p.PositionIdx)] = true
	}
	for k, p := range c.positions {
		if p.Category != cat || messages.SymbolRE.MatchString(p.Symbol) || listed[k] {
			continue
		}
		delete(c.positions, k)
		delete(c.rest, k)
		delete(c.worst, k)
		delete(c.day, k)
	}
	c.countPositionsLocked()
}

// wantsPositions reports whether the positions should be read again (a
// position is open and the last read is older than every), and marks the
// read as started.
func (c *streamCache) wantsPositions(now time.Time, every time.Duration) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if every <= 0 || !c.open || c.polling || (c.positionN == 0 && len(c.worst) == 0) || now.Sub(c.polledAt) < every {
		return false
	}
	c.polling = true
	return true
}

// polled ends a positions read (list nil: it failed).
func (c *streamCache) polled(list []messages.Position, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.polling, c.polledAt = false, now
	if list != nil {
		c.unreadablePushes = 0
		c.notePositionsLocked(list, now, true)
	}
}

// The flapping rule (docs/decisions.md D90): a stream that keeps
// reconnecting is not healthy, however briefly each connection is down.
// It is flapping while more than streamFlapMax (re)connects fall within
// streamFlapWindow and the current connection has not held for
// streamStableFor, or while more than streamChurnMax (re)connects fall
// within streamChurnWindow however long each connection held (churning).
// The stale clock (StreamHealth.DownForS, the posture's stream_stale
// cause) runs from when the stream last stopped being healthy (a healthy
// or stable connection went down; a churning one is never stable),
// through every reconnect of the flapping, until a connection holds for
// streamStableFor and the reconnects thin out.
const (
	streamFlapMax     = 3
	streamFlapWindow  = 10 * time.Second
	streamStableFor   = 3 * time.Second
	streamChurnMax    = 5
	streamChurnWindow = time.Minute
)

// flappingLocked reports whether the stream is connected but flapping.
func (c *streamCache) flappingLocked(now time.Time) bool {
	if !c.connected {
		return false
	}
	if c.churningLocked(now) {
		return true
	}
	if now.Sub(c.since) >= streamStableFor || len(c.connects) <= streamFlapMax {
		return false
	}
	return now.Sub(c.connects[len(c.connects)-streamFlapMax-1]) < streamFlapWindow
}

// churningLocked reports whether more than streamChurnMax (re)connects
// fall within streamChurnWindow.
func (c *streamCache) churningLocked(now time.Time) bool {
	return len(c.connects) > streamChurnMax && now.Sub(c.connects[len(c.connects)-streamChurnMax-1]) < streamChurnWindow
}

// health is the stream's health now.
func (c *streamCache) health(now time.Time) messages.StreamHealth {
	c.mu.Lock()
	defer c.mu.Unlock()
	h := messages.StreamHealth{Open: c.open, Connected: c.open && c.connected, LastMessageAgeS: -1}
	if c.lastPush != nil {
		if t := c.lastPush(); !t.IsZero() {
			h.LastMessageAgeS = roundS(now.Sub(t))
		}
	}
	h.Flapping = c.open && c.flappingLocked(now)
	if c.open && c.connected && !h.Flapping {
		c.unstableSince = time.Time{}
	}
	if c.open && !c.unstableSince.IsZero() {
		h.DownForS = roundS(now.Sub(c.unstableSince))
	}
	return h
}

func roundS(d time.Duration) float64 { return float64(d.Milliseconds()) / 1000 }

// dailyLoss is the day's realised plus unrealised loss (negative: a gain)
// of the linear positions: realised is each position's count of the day
// (dayCount), on instruments the account traded; each position counts as
// its last REST read shows it, or worse when a push since showed worse
// (pnlLocked). Spot trades are not counted (docs/decisions.md D59).
func (c *streamCache) dailyLoss(now time.Time) decimal.Decimal {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.rollDayLocked(now)
	pnl := decimal.Zero
	for k, d := range c.day {
		pnl = pnl.Add(c.pnlLocked(k, d.category, d.symbol))
	}
	for k, p := range c.positions {
		if c.day[k] == nil {
			pnl = pnl.Add(c.pnlLocked(k, p.Category, p.Symbol))
		}
	}
	for _, h := range c.held {
		// A REST read's open position waiting for its instrument's
		// listing: its loss counts meanwhile, never its gain.
		if h.rest && h.row.Size.IsPositive() && h.row.UnrealisedPnl.IsNegative() {
			pnl = pnl.Add(h.row.UnrealisedPnl)
		}
	}
	return pnl.Neg()
}

// exposure is the open orders by origin and the open positions (at most
// max listed, largest first); a position whose symbol or side is not one
// is counted in Unreadable instead.
func (c *streamCache) exposure(origin func(clientOrderID string) string, max int) messages.PostureExposure {
	c.mu.Lock()
	defer c.mu.Unlock()
	// Rows of a REST read that wait for their instrument's listing will
	// show in a moment: the exposure is not known until they do.
	heldRead := slices.ContainsFunc(slices.Collect(maps.Values(c.held)), func(h heldRow) bool { return h.rest })
	out := messages.PostureExposure{Known: c.known && !heldRead, Orders: map[string]messages.OriginOrders{}, Positions: []messages.PositionExposure{},
		Unreadable: c.unreadablePushes}
	for _, o := range c.orders {
		k := origin(o.OrderLinkID)
		agg := out.Orders[k]
		left := o.LeavesQty
		if !left.IsPositive() {
			left = o.Qty.Sub(o.CumExecQty)
		}
		agg.Count++
		agg.NotionalUSDT = agg.NotionalUSDT.Add(left.Mul(o.Price))
		out.Orders[k] = agg
	}
	for _, p := range c.positions {
		if !p.Size.IsPositive() {
			continue
		}
		if !messages.SymbolRE.MatchString(p.Symbol) || (p.Side != "Buy" && p.Side != "Sell") {
			// Exchange text that is not a symbol or side: counted, never shown.
			out.Unreadable++
			continue
		}
		mark := p.MarkPrice
		if !mark.IsPositive() {
			mark = p.AvgPrice
		}
		out.Positions = append(out.Positions, messages.PositionExposure{Category: p.Category, Symbol: p.Symbol, Side: p.Side, Size: p.Size,
			NotionalUSDT: p.Size.Mul(mark), UnrealisedPnl: p.UnrealisedPnl})
	}
	slices.SortFunc(out.Positions, func(a, b messages.PositionExposure) int { return b.NotionalUSDT.Cmp(a.NotionalUSDT) })
	if len(out.Positions) > max {
		out.More = len(out.Positions) - max
		out.Positions = out.Positions[:max]
	}
	return out
}

// seedCache reads the open orders and positions by REST into the cache,
// off the venue actor's mailbox (after a (re)connect or a gap). An order
// under a known order id and another client order id is left out and
// reported to the user actor (orderids.go).
func (v *venueActor) seedCache(actx actor.Context) {
	client, ok := v.session.(*venue.Client)
	if !ok || v.cache == nil {
		return
	}
	cache, timeout, now, ids := v.cache, v.timeout, v.now, v.ids
	root, parent := actx.ActorSystem().Root, actx.Parent()
	cache.beginSeed()
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		var orders []messages.Order
		for _, cat := range []messages.Category{messages.CategoryLinear, messages.CategorySpot} {
			page, err := client.OpenOrders(ctx, venue.OrderQuery{Category: cat})
			if err != nil {
				orders = nil
				break
			}
			orders = append(orders, page.Items...)
			if orders == nil {
				orders = []messages.Order{}
			}
		}
		if orders != nil {
			var reused []reusedOrder
			if orders, reused = ids.admitOrders(orders); len(reused) > 0 {
				root.Send(parent, &orderIDsReused{source: messages.AnomalySourceREST, orders: reused})
			}
		}
		cache.seed(orders, readPositions(ctx, client, cache), now())
	}()
}

// pollPositions refreshes the cache's positions by REST, off the mailbox.
func (v *venueActor) pollPositions() {
	client, ok := v.session.(*venue.Client)
	if !ok || v.cache == nil {
		if v.cache != nil {
			v.cache.polled(nil, v.now())
		}
		return
	}
	cache, timeout, now := v.cache, v.timeout, v.now
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		cache.polled(readPositions(ctx, client, cache), now())
	}()
}

// killSwitchTool is the agent's tool that turns the kill switch on: it
// still works in the inner half of the last reserve (System.ToolCalled).
const killSwitchTool = "activate_kill_switch"

// agentReserveRefusal refuses an agent's tool call before anything is
// journaled, in the inner half of the disk's last reserve.
func agentReserveRefusal() *messages.Error {
	return &messages.Error{Code: messages.CodeInternalError,
		Message:  "the journal's disk is almost full: no tool call that could change anything can be journaled until space is freed (activate_kill_switch still works; a human can still close from the CLI)",
		NextStep: "ask a human to free disk space on the server's journal; nothing was done",
		Details:  map[string]any{"reason": "disk_reserve"}}
}
