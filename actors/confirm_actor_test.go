package actors

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/guarded-exchange/guarded-exchange/messages"
)

// The human's decision at the client's form replays under its own name
// (client_ui:user), and so does the older journals' form of it (the
// session's mcp:agent); the name decides nothing else: not a withdrawal,
// not a decision on a confirmation parked for the CLI, not another
// record type.
func TestReplayNamesTheFormsHuman(t *testing.T) {
	const id = "cf_0123456789abcdef01234567"
	now := time.Now().UTC()
	requested := func(channel string) messages.ConfirmationRequestedEvent {
		return messages.ConfirmationRequestedEvent{ConfirmationID: id, Tool: "place_order", Channel: channel, Environment: "paper",
			CreatedAt: now, ExpiresAt: now.Add(time.Minute), ShownToUser: &messages.ShownToUser{Tool: "place_order"}, Args: json.RawMessage(`{}`)}
	}
	decided := func(decision, channel, status string) messages.ConfirmationDecidedEvent {
		return messages.ConfirmationDecidedEvent{ConfirmationID: id, Decision: decision, Channel: channel, Status: status, At: now}
	}
	approve := decided(messages.DecisionApprove, messages.ConfirmChannelClientUI, messages.ConfirmStatusApproved)
	reject := decided(messages.DecisionReject, messages.ConfirmChannelClientUI, messages.ConfirmStatusRejected)
	cancel := decided(messages.DecisionCancel, "agent", messages.ConfirmStatusCancelled)
	cases := []struct {
		name    string
		parked  string
		actor   string
		typ     messages.RecordType
		v       any
		refused bool
	}{
		{"the form's approval by its human", messages.ConfirmChannelClientUI, messages.ActorClientUI, messages.RecordConfirmationDecided, approve, false},
		{"the form's rejection by its human", messages.ConfirmChannelClientUI, messages.ActorClientUI, messages.RecordConfirmationDecided, reject, false},
		{"an older journal's form approval", messages.ConfirmChannelClientUI, messages.ActorAgent, messages.RecordConfirmationDecided, approve, false},
		{"the form's human on a cli confirmation", messages.ConfirmChannelCLI, messages.ActorClientUI, messages.RecordConfirmationDecided, approve, true},
		{"the form's human withdrawing", messages.ConfirmChannelClientUI, messages.ActorClientUI, messages.RecordConfirmationDecided, cancel, true},
		{"the form's human turning a kill switch on", messages.ConfirmChannelClientUI, messages.ActorClientUI, messages.RecordKillSwitchOn,
			messages.KillSwitchEvent{Before: messages.KillSwitchNone, After: messages.KillSwitchUser}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			ts := startUsers(t, dir)
			ts.must(t, &messages.CreateUserRequest{User: "rae"}, messages.ActorCLIAdmin)
			forge(t, ts.log, messages.RecordConfirmationRequested, "rae", messages.ActorAgent, requested(c.parked))
			last := forge(t, ts.log, c.typ, "rae", c.actor, c.v)
			ts.stop()
			_, err := reopen(t, dir)
			if c.refused != (err != nil) || c.refused && !containsSeq(err, last) {
				t.Fatalf("start: %v, want refused %v (seq %d)", err, c.refused, last)
			}
		})
	}
}
