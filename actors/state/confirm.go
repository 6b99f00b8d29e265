package state

import (
	"encoding/json"
	"time"

	"github.com/guarded-exchange/guarded-exchange/messages"
)

// Confirmation is one parked action as the user actor keeps it.
type Confirmation struct {
	ID             string
	Tool           string
	Channel        string
	Environment    string
	Status         string
	CreatedAt      time.Time
	ExpiresAt      time.Time
	Shown          *messages.ShownToUser
	Args           json.RawMessage
	ArgsSHA256     string
	IdempotencyKey string
	DecidedChannel string
	DecidedAt      time.Time
	ClientOrderID  string
	Result         json.RawMessage
	Error          *messages.Error
	// ConfirmedBy is the policy setting that asked for it.
	ConfirmedBy string
}

// confirmationKeep is how long a confirmation that can no longer change is
// remembered (for get_confirmation_status and confirm list --all).
const confirmationKeep = 24 * time.Hour

// ConfirmationKeepMax is how many confirmations that can no longer change
// are remembered at most: beyond it the oldest (by creation) are
// forgotten first, so a loop of park and withdraw cannot grow the state.
// Live ones (max_pending at most waiting) are always kept.
const ConfirmationKeepMax = 200

// Waiting reports whether a confirmation still waits for a human (as of
// its status; expiry is journaled by the sweep).
func (c Confirmation) Waiting() bool { return c.Status == messages.ConfirmStatusPending }

// Live reports whether a confirmation may still lead to an execution.
func (c Confirmation) Live() bool {
	return c.Status == messages.ConfirmStatusPending || c.Status == messages.ConfirmStatusApproved
}

// LiveConfirmations reports whether a confirmation waits, is approved or
// executing: the user actor starts at once to run or expire it.
func (s *User) LiveConfirmations() bool {
	for _, c := range s.Confirmations {
		if c.Live() || c.Status == messages.ConfirmStatusExecuting {
			return true
		}
	}
	return false
}

// setConfirmation replaces one confirmation. The map is changed in place:
// it is the user actor's own, like the order part (D77: readers' snapshots
// leave it out, a restarted actor gets its own copy), so a change costs
// one entry, not a copy of every remembered confirmation.
func (s *User) setConfirmation(c Confirmation) {
	if s.Confirmations == nil {
		s.Confirmations = map[string]Confirmation{}
	}
	s.Confirmations[c.ID] = c
	if messages.FinalConfirmStatus(c.Status) {
		s.capConfirmations()
	}
}

// DecidedStatus is the status a decision leads to from the status before;
// "" for a decision the confirmation cannot take there (the server never
// journals one; replay refuses it). Status is derived, never read from the
// record apart from its decision.
func DecidedStatus(decision, before string) string {
	switch before {
	case messages.ConfirmStatusPending:
		switch decision {
		case messages.DecisionApprove:
			return messages.ConfirmStatusApproved
		case messages.DecisionReject:
			return messages.ConfirmStatusRejected
		case messages.DecisionCancel:
			return messages.ConfirmStatusCancelled
		case messages.DecisionExpire:
			return messages.ConfirmStatusExpired
		}
	case messages.ConfirmStatusApproved:
		switch decision {
		case messages.DecisionExpire:
			return messages.ConfirmStatusExpiredAfterApproval
		case messages.DecisionCancel:
			// Only the server's own cancel (venue_changed) follows an
			// approval.
			return messages.ConfirmStatusCancelled
		}
	}
	return ""
}

// VenueChangedError is why a confirmation parked on another venue was
// cancelled.
func VenueChangedError() *messages.Error {
	return &messages.Error{Code: messages.CodePermissionDenied,
		Message:  "the server now runs on another venue than the one this confirmation was parked for; it was cancelled and nothing was sent",
		NextStep: "call the tool again if the action is still wanted on this venue; a new confirmation shows the plan for it",
		Details:  map[string]any{"reason": messages.ReasonVenueChanged}}
}

// applyConfirm applies the confirmation records, and what other records
// mean for confirmations (an outcome settles an executing one; a key
// replaced or deleted cancels the live ones of its environment). It
// reports whether ev was a confirmation record.
func (s *User) applyConfirm(ev Event) bool {
	switch p := ev.Payload.(type) {
	case messages.ConfirmationRequestedEvent:
		s.setConfirmation(Confirmation{ID: p.ConfirmationID, Tool: p.Tool, Channel: p.Channel, Environment: p.Environment,
			Status: messages.ConfirmStatusPending, CreatedAt: p.CreatedAt, ExpiresAt: p.ExpiresAt, Shown: p.ShownToUser,
			Args: p.Args, ArgsSHA256: p.ArgsSHA256, IdempotencyKey: p.IdempotencyKey, ConfirmedBy: p.ConfirmedBy})
		return true
	case messages.ConfirmationDecidedEvent:
		c, ok := s.Confirmations[p.ConfirmationID]
		if !ok {
			return true
		}
		st := DecidedStatus(p.Decision, c.Status)
		if st == "" {
			return true
		}
		c.Status = st
		if p.Decision == messages.DecisionApprove || p.Decision == messages.DecisionReject {
			c.DecidedChannel, c.DecidedAt = p.Channel, p.At
		}
		if p.Reason == messages.ReasonVenueChanged {
			c.Error = VenueChangedError()
		}
		s.setConfirmation(c)
		return true
	case messages.ConfirmationExecutedEvent:
		c, ok := s.Confirmations[p.ConfirmationID]
		if !ok {
			return true
		}
		c.Status = p.Status
		if p.ClientOrderID != "" {
			c.ClientOrderID = p.ClientOrderID
		}
		if len(p.Result) > 0 {
			c.Result = p.Result
		}
		if p.Error != nil {
			c.Error = p.Error
		}
		s.setConfirmation(c)
		return true
	case messages.OrderOutcomeEvent:
		for _, c := range s.Confirmations {
			if c.Status != messages.ConfirmStatusExecuting || c.ClientOrderID != p.ClientOrderID || p.ClientOrderID == "" {
				continue
			}
			c.Status = messages.ConfirmStatusExecuted
			if p.Status == messages.OutcomeRejected || p.Status == messages.OutcomeNotFound {
				c.Status = messages.ConfirmStatusFailed
			}
			if len(p.Answer) > 0 {
				c.Result = p.Answer
			}
			s.setConfirmation(c)
		}
	case messages.CredentialAddedEvent:
		s.cancelLive(p.Environment)
	case messages.CredentialDeletedEvent:
		s.cancelLive(p.Environment)
	}
	return false
}

// cancelLive cancels the waiting and approved confirmations of env: the
// key they were decided for is gone.
func (s *User) cancelLive(env string) {
	for _, c := range s.Confirmations {
		if c.Live() && (c.Environment == env || c.Environment == "") {
			c.Status = messages.ConfirmStatusCancelled
			c.Error = &messages.Error{Code: messages.CodeExchangeCredentialsInvalid, Message: "the exchange key was replaced or deleted; the confirmation was cancelled",
				NextStep: "call the tool again if the action is still wanted", Details: map[string]any{"reason": "key_replaced"}}
			s.setConfirmation(c)
		}
	}
}

// pruneConfirmations forgets the confirmations that can no longer change
// and were created over confirmationKeep ago.
func (s *User) pruneConfirmations(now time.Time) {
	for id, c := range s.Confirmations {
		if messages.FinalConfirmStatus(c.Status) && now.Sub(c.CreatedAt) >= confirmationKeep {
			delete(s.Confirmations, id)
		}
	}
}

// capConfirmations forgets, beyond ConfirmationKeepMax confirmations that
// can no longer change, the oldest of them (by creation, then id: replay
// forgets the same ones). It runs when one becomes final, so it is over
// by one at most.
func (s *User) capConfirmations() {
	final := 0
	for _, c := range s.Confirmations {
		if messages.FinalConfirmStatus(c.Status) {
			final++
		}
	}
	for ; final > ConfirmationKeepMax; final-- {
		var oldest *Confirmation
		for _, c := range s.Confirmations {
			if !messages.FinalConfirmStatus(c.Status) {
				continue
			}
			if oldest == nil || c.CreatedAt.Before(oldest.CreatedAt) || c.CreatedAt.Equal(oldest.CreatedAt) && c.ID < oldest.ID {
				c := c
				oldest = &c
			}
		}
		delete(s.Confirmations, oldest.ID)
	}
}

// WaitingConfirmations counts the confirmations that wait for a human at
// now (not decided, not expired): what max_pending bounds, and what
// get_posture shows as its use.
func (s *User) WaitingConfirmations(now time.Time) int {
	n := 0
	for _, c := range s.Confirmations {
		if c.Waiting() && now.Before(c.ExpiresAt) {
			n++
		}
	}
	return n
}
