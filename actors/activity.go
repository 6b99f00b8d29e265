package actors

import (
	"github.com/guarded-exchange/guarded-exchange/actors/state"
	"github.com/guarded-exchange/guarded-exchange/messages"
)

// logActivity writes the activity log line of a record the user actor
// just committed: an order sent and settled, a confirmation asked for
// and decided, a kill switch or posture change. One line at info level
// each, with ids and the server's own words only: never an argument the
// agent wrote (an idempotency key, the arguments of a parked call).
func (u *userActor) logActivity(ev state.Event) {
	user := u.state.User
	switch p := ev.Payload.(type) {
	case messages.OrderAttemptEvent:
		u.logger.Info("order sent", "user", user, "tool", p.Tool, "category", string(p.Category), "symbol", p.Symbol,
			"action_id", p.ActionID, "client_order_id", p.ClientOrderID, "notional_usdt", p.NotionalUSDT.String(),
			"risk_increasing", p.RiskIncreasing, "confirmed", p.Confirmed)
	case messages.OrderOutcomeEvent:
		attrs := []any{"user", user, "action_id", p.ActionID, "client_order_id", p.ClientOrderID, "status", p.Status}
		if p.VenueStatus != "" {
			attrs = append(attrs, "venue_status", p.VenueStatus)
		}
		if p.ResultSource != "" {
			attrs = append(attrs, "result_source", p.ResultSource)
		}
		u.logger.Info("order settled", attrs...)
	case messages.ConfirmationRequestedEvent:
		u.logger.Info("confirmation requested", "user", user, "confirmation_id", p.ConfirmationID, "tool", p.Tool,
			"channel", p.Channel, "confirmed_by", p.ConfirmedBy, "expires_at", p.ExpiresAt)
	case messages.ConfirmationDecidedEvent:
		attrs := []any{"user", user, "confirmation_id", p.ConfirmationID, "decision", p.Decision, "channel", p.Channel, "status", p.Status}
		if p.Reason != "" {
			attrs = append(attrs, "reason", p.Reason)
		}
		u.logger.Info("confirmation decided", attrs...)
	case messages.ConfirmationExecutedEvent:
		attrs := []any{"user", user, "confirmation_id", p.ConfirmationID, "status", p.Status}
		if p.ClientOrderID != "" {
			attrs = append(attrs, "client_order_id", p.ClientOrderID)
		}
		if p.Error != nil {
			attrs = append(attrs, "code", string(p.Error.Code))
		}
		u.logger.Info("confirmation executed", attrs...)
	case messages.KillSwitchEvent:
		u.logger.Info("kill switch changed", "user", user, "before", string(p.Before), "after", string(p.After))
	case messages.PostureChangedEvent:
		u.logger.Info("posture changed", "user", user, "before", string(p.Before), "after", string(p.After),
			"reason", p.Reason, "by", p.Actor)
	}
}
