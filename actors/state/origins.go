package state

import (
	"encoding/json"
	"fmt"
	"slices"

	"github.com/guarded-exchange/guarded-exchange/messages"
)

// OriginAllowed is who may cause each user record (docs/invariants.md "G1"): the agent
// may only turn the kill switch on; only the admin sets ceilings, resets
// overrides, creates or disables users, attests keys and turns off an admin
// kill switch; permission re-checks are the server's own. The user actor
// checks it before journaling, and replay checks it again for every record,
// so a record appended to the journal under the wrong name refuses start
// instead of changing state.
func OriginAllowed(ev Event, actor string) bool {
	admin := actor == messages.ActorCLIAdmin
	human := admin || actor == messages.ActorCLIUser
	switch ev.Type {
	case messages.RecordUserCreated, messages.RecordPolicyCeilingSet, messages.RecordPolicyOverridesReset, messages.RecordUserDisabled,
		messages.RecordTokenIssued, messages.RecordTokenRevoked:
		return admin
	case messages.RecordPolicyTightened, messages.RecordCredentialDeleted, messages.RecordCredentialRejected:
		return human
	case messages.RecordKillSwitchOn:
		return human || actor == messages.ActorAgent
	case messages.RecordKillSwitchOff:
		p, ok := ev.Payload.(messages.KillSwitchEvent)
		if !ok {
			return false
		}
		if p.Before == messages.KillSwitchAdmin {
			return admin
		}
		return human
	case messages.RecordCredentialAdded:
		p, ok := ev.Payload.(messages.CredentialAddedEvent)
		if !ok {
			return false
		}
		if p.Attested {
			return admin
		}
		return human
	case messages.RecordCredentialChecked, messages.RecordVenueAnomaly:
		return actor == messages.ActorSystem
	case messages.RecordOrderAttempt:
		return actor == messages.ActorAgent || actor == messages.ActorExecutor || actor == messages.ActorDeadman
	case messages.RecordOrderOutcome:
		return slices.Contains([]string{messages.ActorAgent, messages.ActorExecutor, messages.ActorVenue, messages.ActorSystem, messages.ActorDeadman}, actor)
	case messages.RecordDeadmanTriggered:
		return actor == messages.ActorDeadman
	case messages.RecordOrderRepeat:
		return actor == messages.ActorAgent || actor == messages.ActorExecutor
	case messages.RecordVenueUpdate:
		return actor == messages.ActorSystem || actor == messages.ActorVenue
	case messages.RecordStreamDropped:
		return actor == messages.ActorSystem
	case messages.RecordDailyPnlNoted:
		return actor == messages.ActorSystem
	case messages.RecordPostureChanged:
		p, ok := ev.Payload.(messages.PostureChangedEvent)
		return ok && postureOriginAllowed(p, actor)
	case messages.RecordOrderRefused:
		return slices.Contains([]string{messages.ActorAgent, messages.ActorCLIUser, messages.ActorCLIAdmin, messages.ActorExecutor}, actor)
	case messages.RecordConfirmationRequested:
		return actor == messages.ActorAgent
	case messages.RecordConfirmationExecuted:
		return actor == messages.ActorExecutor
	case messages.RecordConfirmationDecided:
		p, ok := ev.Payload.(messages.ConfirmationDecidedEvent)
		if !ok {
			return false
		}
		return decisionAllowed(p, actor)
	}
	return false
}

// decisionAllowed is who may journal a confirmation decision: a human's
// decision on the CLI comes from the CLI; a decision on the client's form
// is that form's answer (client_ui:user, a human's only as far as
// trust_client_ui trusts the client), relayed by the MCP layer of the
// session (never a tool call of the model: no tool decides; replaycheck.go
// also requires that the confirmation was parked for the form); the agent
// or a human may withdraw a waiting one;
// only the server expires one, or cancels one parked on another venue
// (reason venue_changed, the only reason a record may carry).
func decisionAllowed(p messages.ConfirmationDecidedEvent, actor string) bool {
	human := actor == messages.ActorCLIUser || actor == messages.ActorCLIAdmin
	if p.Reason != "" {
		return p.Reason == messages.ReasonVenueChanged && p.Decision == messages.DecisionCancel && actor == messages.ActorSystem
	}
	switch p.Decision {
	case messages.DecisionApprove, messages.DecisionReject:
		switch p.Channel {
		case messages.ConfirmChannelCLI:
			return human
		case messages.ConfirmChannelClientUI:
			// The human at the session's form (checkReplayedOrigin reads
			// the older journals' mcp:agent as that human).
			return actor == messages.ActorClientUI
		}
	case messages.DecisionCancel:
		return human || actor == messages.ActorAgent
	case messages.DecisionExpire:
		return actor == messages.ActorSystem
	}
	return false
}

// RefuseOrigin is the refusal for a command whose channel may not cause
// the change it asks for.
func RefuseOrigin(ev Event, actor string) *messages.Error {
	return &messages.Error{
		Code:     messages.CodePermissionDenied,
		Message:  fmt.Sprintf("%s may not cause a %s change", actor, ev.Type),
		NextStep: "this change is made by a human outside the chat",
	}
}

// checkReplayedOrigin checks a journal record's actor during replay. Only
// the record types whose rule depends on the payload are decoded.
func checkReplayedOrigin(seq uint64, typ messages.RecordType, actor string, payload []byte) error {
	ev := Event{Type: typ}
	switch typ {
	case messages.RecordKillSwitchOff:
		var p messages.KillSwitchEvent
		if err := json.Unmarshal(payload, &p); err != nil {
			return fmt.Errorf("journal seq %d (%s): %w", seq, typ, err)
		}
		ev.Payload = p
	case messages.RecordCredentialAdded:
		var p struct {
			Attested bool `json:"attested"`
		}
		if err := json.Unmarshal(payload, &p); err != nil {
			return fmt.Errorf("journal seq %d (%s): %w", seq, typ, err)
		}
		ev.Payload = messages.CredentialAddedEvent{Attested: p.Attested}
	case messages.RecordPostureChanged:
		var p messages.PostureChangedEvent
		if err := json.Unmarshal(payload, &p); err != nil {
			return fmt.Errorf("journal seq %d (%s): %w", seq, typ, err)
		}
		ev.Payload = p
	case messages.RecordConfirmationDecided:
		var p messages.ConfirmationDecidedEvent
		if err := json.Unmarshal(payload, &p); err != nil {
			return fmt.Errorf("journal seq %d (%s): %w", seq, typ, err)
		}
		ev.Payload = p
		if actor == messages.ActorAgent && p.Channel == messages.ConfirmChannelClientUI && p.Reason == "" &&
			(p.Decision == messages.DecisionApprove || p.Decision == messages.DecisionReject) {
			// Journals written before D92 named the human's decision at
			// the client's form by the session's actor, mcp:agent.
			actor = messages.ActorClientUI
		}
	}
	if !OriginAllowed(ev, actor) {
		return fmt.Errorf("journal seq %d: a %s record by %q is not allowed; the journal was edited outside the server (inspect it with `guarded-exchange journal dump`)", seq, typ, actor)
	}
	return nil
}
