package messages

import (
	"encoding/json"
	"time"

	"github.com/shopspring/decimal"
)

// Journal payloads of the order records (docs/tools.md "The action path" steps 7 and 9). They are
// event records: each adds to many-record state (the open attempts, the
// 24 h idempotency table, the rolling notional and rate counters), so
// replay applies every one in order instead of keeping only the last.
//
// They are kept minimal until the trading path lands: what replay needs to
// rebuild the user's state, and what reconciliation needs to find the
// order on the venue.

// OrderAttemptEvent is journaled as order_attempt, durably, before an order
// leaves for the venue.
type OrderAttemptEvent struct {
	// ActionID identifies the action; the client order id derives from it.
	ActionID string `json:"action_id"`
	// ClientOrderID is the orderLinkId sent to the venue ("gx-...").
	ClientOrderID string `json:"client_order_id"`
	// Environment is the venue the order was sent to (paper, bybit-demo,
	// ...): only a process serving that venue can reconcile it. Empty in
	// records written before it existed, which mean this process's venue.
	Environment string    `json:"environment,omitempty"`
	Tool        string    `json:"tool"`
	Category    Category  `json:"category"`
	Symbol      string    `json:"symbol"`
	At          time.Time `json:"at"`
	// NotionalUSDT is the order's value; it counts against the rolling
	// daily cap when RiskIncreasing.
	NotionalUSDT   decimal.Decimal `json:"notional_usdt"`
	RiskIncreasing bool            `json:"risk_increasing"`
	// Confirmed is true for an action a human confirmed; unconfirmed ones
	// count against max_unconfirmed_actions_per_hour.
	Confirmed bool `json:"confirmed,omitempty"`
	// IdempotencyKey and ArgsSHA256 claim the key for 24 h (docs/tools.md "The action path" step 6).
	IdempotencyKey string `json:"idempotency_key,omitempty"`
	ArgsSHA256     string `json:"args_sha256,omitempty"`
	// Expect is what an order found for this attempt must match to settle
	// it (stream, read-back, reconcile); nil in records written before it
	// existed, which are matched by client order id, category and symbol.
	Expect *OrderExpectation `json:"expect,omitempty"`
	// StepOf names the tool whose action this write is a first step of
	// (a set_leverage that lowers the leverage before a place_order,
	// decisions D111); empty for a tool's own write.
	StepOf string `json:"step_of,omitempty"`
	// AfterStep is the client order id of the first step this write
	// followed (the set_leverage attempt of StepOf); empty when none.
	AfterStep string `json:"after_step,omitempty"`
}

// Order outcome statuses.
const (
	// OutcomeAccepted: the venue accepted the order.
	OutcomeAccepted = "accepted"
	// OutcomeRejected: the venue refused it; nothing was placed.
	OutcomeRejected = "rejected"
	// OutcomeFound: reconciliation found the order on the venue.
	OutcomeFound = "found"
	// OutcomeNotFound: reconciliation did not find it: it never reached
	// the venue, or cannot be seen; the answer is outcome_unknown.
	OutcomeNotFound = "not_found"
)

// OrderOutcomeEvent is journaled as order_outcome when the venue's answer
// (or the reconciled outcome) of an attempt is known. It closes the attempt.
type OrderOutcomeEvent struct {
	ActionID      string    `json:"action_id"`
	ClientOrderID string    `json:"client_order_id"`
	At            time.Time `json:"at"`
	Status        string    `json:"status"`
	// VenueStatus is the venue's orderStatus when known.
	VenueStatus string `json:"venue_status,omitempty"`
	// ResultSource is "venue" or "reconnaissance" (docs/tools.md "The action path" step 8).
	ResultSource string `json:"result_source,omitempty"`
	// Answer is the answer given (an OrderAnswer or an Error), kept so
	// that a repeat of the same call, after a restart too, gets it again.
	Answer json.RawMessage `json:"answer,omitempty"`
	// ReleaseKey frees the attempt's idempotency key: nothing was
	// decided (not sent, or refused by the venue's rate limit).
	ReleaseKey bool `json:"release_key,omitempty"`
}

// OrderRepeatEvent is journaled as order_repeat when a call is answered
// from an earlier one (docs/tools.md "The action path" step 6) instead of acting again.
type OrderRepeatEvent struct {
	Tool           string `json:"tool"`
	IdempotencyKey string `json:"idempotency_key,omitempty"`
	ClientOrderID  string `json:"client_order_id,omitempty"`
	// Reason is "replay", "in_progress", "conflict" or "safety_net".
	Reason string `json:"reason"`
}
