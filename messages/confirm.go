package messages

import (
	"encoding/json"
	"regexp"
	"time"
)

// Human confirmation (docs/tools.md "Confirmation"): an action the policy wants confirmed is
// parked in the user actor as a pending confirmation; a human decides it
// through one of two channels; the approved action then runs as a message
// of its own, re-checked as of that moment.

// Confirmation channels: how a human decides.
const (
	// ConfirmChannelClientUI is the MCP client's own form (elicitation),
	// used only when the client declared form elicitation and the
	// effective policy trusts the client UI (never on live).
	ConfirmChannelClientUI = "client_ui"
	// ConfirmChannelCLI is `confirm approve|reject` over the control
	// socket, accepted only when the server runs with
	// GX_CONFIRM_CLI_ENABLED=true.
	ConfirmChannelCLI = "cli"
)

// Decisions.
const (
	DecisionApprove = "approve"
	DecisionReject  = "reject"
)

// Confirmation statuses. A confirmation is pending until decided, expired
// or cancelled; approved until its execution starts; executing while the
// order is on its way; then executed (Result holds the tool's answer) or
// failed (Error holds why the re-check or the venue refused).
const (
	ConfirmStatusPending              = "pending"
	ConfirmStatusApproved             = "approved"
	ConfirmStatusExecuting            = "executing"
	ConfirmStatusExecuted             = "executed"
	ConfirmStatusFailed               = "failed"
	ConfirmStatusRejected             = "rejected"
	ConfirmStatusExpired              = "expired"
	ConfirmStatusExpiredAfterApproval = "expired_after_approval"
	ConfirmStatusCancelled            = "cancelled"
)

// ConfirmationIDRE is the shape of a confirmation id: "cf_" and 24
// lowercase hex digits (so a client order id derived from it fits in 36
// characters).
var ConfirmationIDRE = regexp.MustCompile(`^cf_[0-9a-f]{24}$`)

// ExecuteWithin is how soon after approval execution must start, or the
// confirmation becomes expired_after_approval (docs/tools.md "Confirmation").
const ExecuteWithin = 30 * time.Second

// ShownToUser is the server's own plan of a parked action, what the human
// approves: sizes after rounding, the worst price of a market order, each
// order a cancel touches with its origin. It is built from the action's
// dry run, never from the model's words. Exactly one of the tool fields is
// set.
type ShownToUser struct {
	Tool  string `json:"tool"`
	User  string `json:"user"`
	Venue string `json:"venue"`
	// Summary is one line built by the server from the plan, e.g. "Buy
	// 0.010 BTCUSDT (linear) Market, worst price 65000.00, ~650.00 USDT".
	Summary string `json:"summary"`
	// RiskIncreasing is the action's risk direction when it was parked.
	RiskIncreasing bool               `json:"risk_increasing"`
	Order          *OrderAnswer       `json:"order,omitempty"`
	Cancel         *CancelAnswer      `json:"cancel,omitempty"`
	Amend          *AmendAnswer       `json:"amend,omitempty"`
	CancelAll      *CancelAllAnswer   `json:"cancel_all,omitempty"`
	Leverage       *LeverageAnswer    `json:"leverage,omitempty"`
	TradingStop    *TradingStopAnswer `json:"trading_stop,omitempty"`
}

// ConfirmationPending is a trading command's answer when the action was
// parked for a human instead of run (journaled confirmation_requested
// first). Repeating the same call or idempotency key answers the same
// pending confirmation.
type ConfirmationPending struct {
	ConfirmationID string `json:"confirmation_id"`
	// Channel is the channel the human decides on: ConfirmChannelClientUI
	// or ConfirmChannelCLI.
	Channel     string       `json:"channel"`
	Tool        string       `json:"tool"`
	Venue       string       `json:"venue"`
	ExpiresAt   time.Time    `json:"expires_at"`
	ShownToUser *ShownToUser `json:"shown_to_user"`
	// ArgsSHA256 is the hex SHA-256 of the parked command's canonical
	// arguments; a client_ui decision must carry it back.
	ArgsSHA256 string `json:"args_sha256"`
	// ConfirmedBy names the policy setting that asked for the
	// confirmation: ConfirmByActions or ConfirmByNotional.
	ConfirmedBy string `json:"confirmed_by,omitempty"`
}

// DecideConfirmationCommand is a human's decision. Channel "cli" comes
// only from the control socket (user, admin or approver uid, and only when
// GX_CONFIRM_CLI_ENABLED=true); channel "client_ui" only from the MCP
// layer, after the human answered the client's form, for a confirmation
// parked for client_ui. Answer on approve: the tool's normal answer once
// the outcome is durable; on reject: *ConfirmationStatus. A confirmation
// no longer pending → confirmation_not_pending (an invalid_params with
// field confirmation_id).
type DecideConfirmationCommand struct {
	User           string `json:"user"`
	ConfirmationID string `json:"confirmation_id"`
	// Decision is DecisionApprove or DecisionReject.
	Decision string `json:"decision"`
	// Channel is ConfirmChannelClientUI or ConfirmChannelCLI.
	Channel string `json:"channel"`
	// ArgsSHA256 must match the confirmation's for a client_ui decision.
	ArgsSHA256 string `json:"args_sha256,omitempty"`
}

// ConfirmationStatusCommand reads one confirmation. Answer:
// *ConfirmationStatus.
type ConfirmationStatusCommand struct {
	User           string `json:"user"`
	ConfirmationID string `json:"confirmation_id"`
}

// CancelConfirmationCommand withdraws a pending confirmation (the agent
// may withdraw its own; it never decides). Answer: *ConfirmationStatus.
type CancelConfirmationCommand struct {
	User           string `json:"user"`
	ConfirmationID string `json:"confirmation_id"`
}

// ListConfirmationsCommand lists a user's confirmations: the waiting ones,
// and with All the decided ones still remembered. Answer:
// *ConfirmationList.
type ListConfirmationsCommand struct {
	User string `json:"user"`
	All  bool   `json:"all,omitempty"`
}

// ConfirmationStatus is one confirmation as the server keeps it.
type ConfirmationStatus struct {
	ConfirmationID string       `json:"confirmation_id"`
	User           string       `json:"user"`
	Status         string       `json:"status"`
	Tool           string       `json:"tool"`
	Channel        string       `json:"channel"`
	CreatedAt      time.Time    `json:"created_at"`
	ExpiresAt      time.Time    `json:"expires_at"`
	ShownToUser    *ShownToUser `json:"shown_to_user"`
	// ConfirmedBy names the policy setting that asked for the
	// confirmation: confirm_actions or confirm_above_notional_usdt.
	ConfirmedBy string `json:"confirmed_by,omitempty"`
	// DecidedChannel names the channel whose decision won, once decided.
	DecidedChannel string `json:"decided_channel,omitempty"`
	// DecidedAt is when the decision was journaled.
	DecidedAt *time.Time `json:"decided_at,omitempty"`
	// ClientOrderID is the client order id execution uses (derived from
	// the confirmation id), for an order-placing action.
	ClientOrderID string `json:"client_order_id,omitempty"`
	// Result is the tool's answer once executed.
	Result json.RawMessage `json:"result,omitempty"`
	// Error is why execution was refused or failed, or why the
	// confirmation ended (the key was replaced, it expired).
	Error *Error `json:"error,omitempty"`
}

// ConfirmationList is the answer of ListConfirmationsCommand.
type ConfirmationList struct {
	User          string               `json:"user"`
	Confirmations []ConfirmationStatus `json:"confirmations"`
}

func (*DecideConfirmationCommand) CommandName() string  { return "confirm.decide" }
func (c *DecideConfirmationCommand) TargetUser() string { return c.User }
func (*ConfirmationStatusCommand) CommandName() string  { return "confirm.status" }
func (c *ConfirmationStatusCommand) TargetUser() string { return c.User }
func (*CancelConfirmationCommand) CommandName() string  { return "confirm.cancel" }
func (c *CancelConfirmationCommand) TargetUser() string { return c.User }
func (*ListConfirmationsCommand) CommandName() string   { return "confirm.list" }
func (c *ListConfirmationsCommand) TargetUser() string  { return c.User }

// FinalConfirmStatus reports whether a confirmation in status s can no
// longer change.
func FinalConfirmStatus(s string) bool {
	return s != ConfirmStatusPending && s != ConfirmStatusApproved && s != ConfirmStatusExecuting
}

// CheckConfirmationID is the invalid_params answer for a malformed
// confirmation id, or nil.
func CheckConfirmationID(id string) *Error {
	if !ConfirmationIDRE.MatchString(id) {
		return InvalidParams("confirmation_id", "must be cf_ and 24 hex digits")
	}
	return nil
}

// Validate checks a decision's shape (not who may send it: see Permit).
func (c *DecideConfirmationCommand) Validate() *Error {
	if e := CheckConfirmationID(c.ConfirmationID); e != nil {
		return e
	}
	if c.Decision != DecisionApprove && c.Decision != DecisionReject {
		return InvalidParams("decision", "must be approve or reject")
	}
	if c.Channel != ConfirmChannelCLI && c.Channel != ConfirmChannelClientUI {
		return InvalidParams("channel", "must be client_ui or cli")
	}
	return nil
}

// ConfirmationRequestedEvent is journaled as confirmation_requested when
// an action is parked: the plan shown to the human and the arguments to
// run again once approved (never anything the model wrote besides its
// typed arguments).
type ConfirmationRequestedEvent struct {
	ConfirmationID string       `json:"confirmation_id"`
	Tool           string       `json:"tool"`
	Channel        string       `json:"channel"`
	Environment    string       `json:"environment"`
	CreatedAt      time.Time    `json:"created_at"`
	ExpiresAt      time.Time    `json:"expires_at"`
	ShownToUser    *ShownToUser `json:"shown_to_user"`
	// Args are the tool's typed arguments, to run again once approved.
	Args           json.RawMessage `json:"args"`
	ArgsSHA256     string          `json:"args_sha256"`
	IdempotencyKey string          `json:"idempotency_key,omitempty"`
	// ConfirmedBy names the policy setting that asked a human to confirm
	// the action: ConfirmByActions or ConfirmByNotional (empty in records
	// written before it was recorded).
	ConfirmedBy string `json:"confirmed_by,omitempty"`
}

// Decisions journaled besides a human's approve and reject.
const (
	// DecisionCancel: the agent withdrew the confirmation.
	DecisionCancel = "cancel"
	// DecisionExpire: the TTL ran out, or execution did not start within
	// ExecuteWithin of the approval.
	DecisionExpire = "expire"
)

// ConfirmationDecidedEvent is journaled as confirmation_decided when a
// confirmation stops waiting: a human's approve or reject (naming the
// channel, and the approver's uid for the CLI), the agent's cancel, or the
// server's expiry.
type ConfirmationDecidedEvent struct {
	ConfirmationID string `json:"confirmation_id"`
	// Decision is approve, reject, cancel or expire.
	Decision string `json:"decision"`
	// Channel is client_ui or cli for a human's decision, agent for a
	// cancel, system for an expiry.
	Channel string `json:"channel"`
	// ApproverUID is the socket peer's uid of a CLI decision.
	ApproverUID *int64 `json:"approver_uid,omitempty"`
	// Status is the confirmation's status after the decision; it follows
	// from the decision and the status before (replay refuses a mismatch).
	Status string    `json:"status"`
	At     time.Time `json:"at"`
	// Reason is why the server itself cancelled a confirmation:
	// ReasonVenueChanged (channel system), else empty.
	Reason string `json:"reason,omitempty"`
}

// ReasonVenueChanged is the reason of a confirmation the server cancelled
// because it now runs on another venue (environment) than the one the
// confirmation was parked for: the human approved a plan for that venue
// only.
const ReasonVenueChanged = "venue_changed"

// ConfirmationExecutedEvent is journaled as confirmation_executed when an
// approved action starts executing (status executing, naming the client
// order id derived from the confirmation id), and again with its end
// (executed with the tool's answer, or failed with the refusal).
type ConfirmationExecutedEvent struct {
	ConfirmationID string          `json:"confirmation_id"`
	Status         string          `json:"status"`
	ClientOrderID  string          `json:"client_order_id,omitempty"`
	At             time.Time       `json:"at"`
	Result         json.RawMessage `json:"result,omitempty"`
	Error          *Error          `json:"error,omitempty"`
}
