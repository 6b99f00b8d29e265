package messages

import "time"

// SessionEventKind is what the MCP layer tells a user actor about one of
// the user's agent sessions (the dead-man switch's input).
type SessionEventKind uint8

// Session events.
const (
	// SessionOpened: a session of the user sent its first message.
	SessionOpened SessionEventKind = iota + 1
	// SessionHeard: a session of the user sent a message (any request or
	// notification: a heartbeat).
	SessionHeard
	// SessionClosed: a session that was opened ended (stdio EOF, an HTTP
	// session closed or expired, a relay client gone).
	SessionClosed
	// SessionCallStarted: a tool call of the user's agent is in flight; the
	// user counts as alive until the matching SessionCallEnded (a long
	// wait_for_update is no silence).
	SessionCallStarted
	// SessionCallEnded: that tool call was answered (or abandoned).
	SessionCallEnded
)

// FrontSessions is what a cluster member's HTTP front reports to a
// user's shard when one of the user's agent sessions there opens or ends
// (docs/cluster.md "Sessions and the dead-man switch"): how many of the
// user's sessions the front holds now, not the change, so that a report
// can be sent again after a lost answer without counting twice. Seq
// orders one front's reports: the shard takes a report only when its Seq
// is above the last one it took from that front for that user.
type FrontSessions struct {
	// User is the sessions' user.
	User string `json:"user"`
	// Front is the id of the member whose HTTP front holds the sessions
	// (new on every start of the member).
	Front string `json:"front"`
	// Event is what changed: SessionOpened or SessionClosed.
	Event SessionEventKind `json:"event"`
	// Open is how many of the user's sessions the front holds after it.
	Open int `json:"open"`
	// Seq numbers the front's reports, from 1, growing.
	Seq uint64 `json:"seq"`
}

// Dead-man trigger reasons.
const (
	// DeadmanDisconnect: the user's last open session ended and
	// cancel_on_disconnect is on.
	DeadmanDisconnect = "disconnect"
	// DeadmanSilence: no session of the user sent anything for
	// heartbeat_s.
	DeadmanSilence = "silence"
)

// DeadmanTriggeredEvent is journaled as deadman_triggered (actor
// system:deadman) when the dead-man switch fires, once the open orders
// were read: the cancels of the Orders system orders follow, one by one,
// as order records of the same actor.
type DeadmanTriggeredEvent struct {
	At     time.Time `json:"at"`
	Reason string    `json:"reason"`
	// HeartbeatS is the effective heartbeat_s when it fired.
	HeartbeatS int `json:"heartbeat_s"`
	// Orders is how many open orders of origin system it cancels;
	// External how many open orders it leaves because they are not the
	// server's (placed elsewhere), Protective how many reduce-only orders
	// of the server it leaves (they can only lower risk).
	Orders     int `json:"orders"`
	External   int `json:"external"`
	Protective int `json:"protective"`
	// Error is the code of a failed read of the open orders (the switch
	// then tries again a few times).
	Error Code `json:"error,omitempty"`
}

// CallsRateLimitedEvent is journaled as calls_rate_limited by the MCP
// guard, at most once per interval per session: Count tool calls were
// refused with rate_limited since the previous such record. The refused
// calls themselves journal nothing.
type CallsRateLimitedEvent struct {
	User    string    `json:"user"`
	TokenID string    `json:"token_id,omitempty"`
	Count   int       `json:"count"`
	Since   time.Time `json:"since"`
	Until   time.Time `json:"until"`
}

// SessionsRefusedEvent is journaled as sessions_refused by the HTTP
// front, at most once per interval per bearer token: Count new older-era
// sessions of the token were refused since the previous such record,
// because the token's open sessions (Scope "token") or the server's
// (Scope "server") were at Limit with none idle enough to give its place
// up.
type SessionsRefusedEvent struct {
	User    string    `json:"user"`
	TokenID string    `json:"token_id"`
	Scope   string    `json:"scope"`
	Limit   int       `json:"limit"`
	Count   int       `json:"count"`
	Since   time.Time `json:"since"`
	Until   time.Time `json:"until"`
}

// MaxWaitForUpdate bounds wait_for_update's timeout_s.
const MaxWaitForUpdate = 30 * time.Second

// WaitForUpdateRequest asks the user's venue actor for the next change its
// private stream shows to one order (OrderID) or to the user's orders and
// positions on one symbol (Symbol); with both, the order on that symbol.
type WaitForUpdateRequest struct {
	User    string
	OrderID string
	Symbol  string
	Timeout time.Duration
}

// UpdateAnswer is what wait_for_update saw: the rows of the first push that
// matched, or nothing (Changed false) when the timeout passed first.
// Interrupted says the stream reconnected or lost updates during the wait,
// so a change may have been missed.
type UpdateAnswer struct {
	Changed     bool
	Interrupted bool
	Orders      []Order
	Positions   []Position
}
