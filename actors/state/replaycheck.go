package state

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/guarded-exchange/guarded-exchange/messages"
)

// replayClockSkew is how far a payload's own time (an attempt's at, a
// key check's checked_at) may lie after the time the journal gave its
// record. Both come from the same clock, a moment apart; a later payload
// time is a record written outside the server.
const replayClockSkew = 5 * time.Minute

// replayGuard is what replay keeps per user, beyond the records, to
// refuse a record that the live user actor could never have journaled
// after the records before it: the running kill switch, the posture's
// causes and the last own settings. Both are cheap to keep while scanning; only the small records
// that change them are decoded.
type replayGuard struct {
	kill messages.KillSwitch
	// ownRaw is the payload of the record that set the own settings (nil:
	// none yet, the own settings are empty). It is decoded only when a
	// later tighten with another payload must be compared with it.
	ownRaw []byte
	// posture is the causes of the last posture_changed record (none
	// before the first): each record's causes_before must be them, as the
	// live actor journals its own causes as the before, so a record that
	// does not follow from the one before it (one that names no causes
	// before, to drop a human's REDUCING) is refused.
	posture messages.PostureCauses
	// confirms is where each confirmation stands (confirmStep) and what
	// it was parked for, so that a decision or an execution the live
	// actor could not have journaled (a second human decision, an
	// execution never approved, a client_ui decision on a confirmation
	// parked for the CLI) is refused.
	confirms map[string]confirmSeen
	// pnl is the day and the positions of the last daily_pnl_noted
	// record of each venue: the live cache only adds positions to a day,
	// so a record of the same day and venue that drops one is refused
	// (D86, D100).
	pnl map[string]pnlSeen
}

// pnlSeen is the day and the positions of one venue's last
// daily_pnl_noted record.
type pnlSeen struct {
	day  string
	rows map[pnlRow]bool
}

// pnlRow names one position of a daily_pnl_noted record.
type pnlRow struct {
	category messages.Category
	symbol   string
	idx      int
}

// confirmStep is where a confirmation stands during replay.
type confirmStep uint8

const (
	confirmRequested confirmStep = iota + 1
	confirmApproved
	confirmExecuting
	confirmEnded
)

// confirmSeen is one confirmation as replay follows it.
type confirmSeen struct {
	step confirmStep
	// clientUI: parked for the client's form (the only confirmations a
	// client_ui decision may decide).
	clientUI bool
	env      string
}

// liveEnvironment reports whether env may reach real money: anything but
// the paper simulator and Bybit's demo and testnet (unknown names count as
// live: the check fails closed).
func liveEnvironment(env string) bool {
	return !slices.Contains([]string{"paper", "bybit-demo", "bybit-testnet"}, env)
}

// replayedStatus is the status a replayed decision must carry, from where
// the confirmation stands; "" when the live actor could not have decided
// it there.
func replayedStatus(at confirmStep, decision, reason string) string {
	switch at {
	case confirmRequested:
		return DecidedStatus(decision, messages.ConfirmStatusPending)
	case confirmApproved:
		if decision == messages.DecisionExpire || decision == messages.DecisionCancel && reason == messages.ReasonVenueChanged {
			return DecidedStatus(decision, messages.ConfirmStatusApproved)
		}
	}
	return ""
}

// errEditedJournal is the start refusal for a record the server could not
// have written.
func errEditedJournal(seq uint64, typ messages.RecordType, why string) error {
	return fmt.Errorf("journal seq %d (%s): %s; the journal was edited outside the server (inspect it with `guarded-exchange journal dump`)", seq, typ, why)
}

// knownRecord reports whether t is in the record table.
func knownRecord(t messages.RecordType) bool {
	return int(t) < len(inTable) && inTable[t]
}

// inTable is the record table's types by number, read for every record at
// start.
var inTable = func() []bool {
	var out []bool
	for _, info := range messages.RecordTypes {
		for int(info.Type) >= len(out) {
			out = append(out, false)
		}
		out[info.Type] = true
	}
	return out
}()

// checkPayloadUser refuses a surviving record whose payload names another
// user than the record (user_created, user_disabled: they are decoded by
// the final apply anyway, so the check costs nothing while scanning).
func checkPayloadUser(rr *replayRecord, user string, ev Event) error {
	var named string
	switch p := ev.Payload.(type) {
	case messages.UserCreatedEvent:
		named = p.User
	case messages.UserDisabledEvent:
		named = p.User
	default:
		return nil
	}
	if named != user {
		return errEditedJournal(rr.seq, rr.typ, "the payload's user differs from the record's user")
	}
	return nil
}

// killRank orders kill switch levels: none < user < admin; -1 is not a level.
func killRank(k messages.KillSwitch) int {
	return slices.Index([]messages.KillSwitch{messages.KillSwitchNone, messages.KillSwitchUser, messages.KillSwitchAdmin}, k)
}

// checkUserName refuses a record whose user the server could never have
// created (a user is an actor name and a path element).
func checkUserName(rec Record, typ messages.RecordType) error {
	if !messages.UserNamePattern.MatchString(rec.User) {
		return errEditedJournal(rec.Seq, typ, "the record's user is not a valid user name")
	}
	return nil
}

// check refuses a record whose content the live user actor could not have
// journaled given the records before it, and advances the running state.
// Only the record types it names are decoded.
func (g *replayGuard) check(rec Record, typ messages.RecordType) error {
	fail := func(why string) error { return errEditedJournal(rec.Seq, typ, why) }
	decode := func(v any) error {
		if err := json.Unmarshal(rec.Payload, v); err != nil {
			return fmt.Errorf("journal seq %d (%s): %w", rec.Seq, typ, err)
		}
		return nil
	}
	switch typ {
	case messages.RecordKillSwitchOn, messages.RecordKillSwitchOff:
		var p messages.KillSwitchEvent
		if err := decode(&p); err != nil {
			return err
		}
		if p.Before != g.kill {
			return fail("its before is not the kill switch at that point")
		}
		if typ == messages.RecordKillSwitchOn {
			if killRank(p.After) <= killRank(g.kill) {
				return fail("turning the kill switch on must make it stricter")
			}
		} else {
			if p.After != messages.KillSwitchNone || g.kill == messages.KillSwitchNone {
				return fail("turning the kill switch off must turn an on switch to none")
			}
			if g.kill == messages.KillSwitchAdmin && rec.Actor != messages.ActorCLIAdmin {
				return fail("only the admin turns off the admin's kill switch")
			}
		}
		g.kill = p.After
	case messages.RecordDailyPnlNoted:
		var p messages.DailyPnlEvent
		if err := decode(&p); err != nil {
			return err
		}
		rows := make(map[pnlRow]bool, len(p.Rows))
		for _, r := range p.Rows {
			rows[pnlRow{r.Category, r.Symbol, r.PositionIdx}] = true
		}
		if last := g.pnl[p.Environment]; p.Day == last.day {
			for k := range last.rows {
				if !rows[k] {
					return fail("it drops a position the day's record before it counted")
				}
			}
		}
		if g.pnl == nil {
			g.pnl = map[string]pnlSeen{}
		}
		g.pnl[p.Environment] = pnlSeen{day: p.Day, rows: rows}
	case messages.RecordPostureChanged:
		var p messages.PostureChangedEvent
		if err := decode(&p); err != nil {
			return err
		}
		if !slices.Equal(p.CausesBefore, g.posture) {
			return fail("its causes_before are not the causes of the posture record before it")
		}
		g.posture = p.Causes
	case messages.RecordPolicyTightened, messages.RecordPolicyOverridesReset:
		if g.ownRaw != nil && bytes.Equal(rec.Payload, g.ownRaw) {
			return nil // the same after as the record that set own
		}
		// Nothing is looser than empty own settings, and a reset is the
		// admin's: only a tighten over set own settings is compared.
		if typ == messages.RecordPolicyTightened && g.ownRaw != nil {
			type after struct {
				After messages.PolicySettings `json:"after"`
			}
			var before, next after
			if err := json.Unmarshal(g.ownRaw, &before); err != nil {
				return fmt.Errorf("journal seq %d (%s): %w", rec.Seq, typ, err)
			}
			if err := decode(&next); err != nil {
				return err
			}
			if looser := looserOwn(before.After, next.After); len(looser) > 0 {
				return fail("a tighten may not loosen the user's own settings (" + strings.Join(looser, ", ") + ")")
			}
		}
		g.ownRaw = slices.Clone(rec.Payload)
	case messages.RecordOrderAttempt, messages.RecordOrderOutcome:
		var p struct {
			At time.Time `json:"at"`
		}
		if err := decode(&p); err != nil {
			return err
		}
		if p.At.After(rec.Time.Add(replayClockSkew)) {
			return fail("its at is later than the record's own time")
		}
	case messages.RecordConfirmationRequested, messages.RecordConfirmationDecided, messages.RecordConfirmationExecuted:
		var p struct {
			ID          string `json:"confirmation_id"`
			Decision    string `json:"decision"`
			Channel     string `json:"channel"`
			Environment string `json:"environment"`
			Status      string `json:"status"`
			Reason      string `json:"reason"`
		}
		if err := decode(&p); err != nil {
			return err
		}
		if g.confirms == nil {
			g.confirms = map[string]confirmSeen{}
		}
		seen, known := g.confirms[p.ID]
		switch {
		case typ == messages.RecordConfirmationRequested:
			if known {
				return fail("a confirmation id was requested twice")
			}
			clientUI := p.Channel == messages.ConfirmChannelClientUI
			if !clientUI && p.Channel != messages.ConfirmChannelCLI {
				return fail("a confirmation parked for an unknown channel")
			}
			if clientUI && liveEnvironment(p.Environment) {
				return fail("a confirmation parked for the client's form on a live environment")
			}
			g.confirms[p.ID] = confirmSeen{step: confirmRequested, clientUI: clientUI, env: p.Environment}
		case !known:
			return fail("it names a confirmation that was never requested")
		case typ == messages.RecordConfirmationExecuted:
			switch {
			case seen.step == confirmApproved && p.Status == messages.ConfirmStatusExecuting:
				seen.step = confirmExecuting
			case seen.step == confirmExecuting && (p.Status == messages.ConfirmStatusExecuted || p.Status == messages.ConfirmStatusFailed):
			default:
				return fail("an execution of a confirmation that was not approved")
			}
			g.confirms[p.ID] = seen
		default:
			want := replayedStatus(seen.step, p.Decision, p.Reason)
			switch {
			case want == "" && seen.step == confirmRequested:
				return fail("an unknown decision")
			case want == "":
				return fail("a second decision on one confirmation (or one whose key was replaced)")
			case p.Status != want:
				return fail("its status does not follow from its decision")
			case p.Channel == messages.ConfirmChannelClientUI && (p.Decision == messages.DecisionApprove || p.Decision == messages.DecisionReject) &&
				(!seen.clientUI || liveEnvironment(seen.env)):
				return fail("a decision on the client's form of a confirmation not parked for it")
			}
			seen.step = confirmEnded
			if want == messages.ConfirmStatusApproved {
				seen.step = confirmApproved
			}
			g.confirms[p.ID] = seen
		}
	case messages.RecordCredentialDeleted:
		// Replacing or deleting a key cancels the live confirmations of
		// its environment (applyConfirm): nothing decides them after.
		var p struct {
			Environment string `json:"environment"`
		}
		if err := decode(&p); err != nil {
			return err
		}
		g.keyChanged(p.Environment)
	case messages.RecordCredentialAdded, messages.RecordCredentialChecked:
		var p struct {
			CheckedAt   time.Time `json:"checked_at"`
			Environment string    `json:"environment"`
		}
		if err := decode(&p); err != nil {
			return err
		}
		if p.CheckedAt.After(rec.Time.Add(replayClockSkew)) {
			return fail("its checked_at is later than the record's own time")
		}
		if typ == messages.RecordCredentialAdded {
			g.keyChanged(p.Environment)
		}
	}
	return nil
}

// keyChanged ends the requested and approved confirmations of env, as
// applyConfirm cancels them when its key is replaced or deleted.
func (g *replayGuard) keyChanged(env string) {
	for id, seen := range g.confirms {
		if (seen.step == confirmRequested || seen.step == confirmApproved) && (seen.env == env || seen.env == "") {
			seen.step = confirmEnded
			g.confirms[id] = seen
		}
	}
}

// looserOwn lists the fields in which after is looser than before: a field
// set in before and unset in after, or set to a looser value.
func looserOwn(before, after messages.PolicySettings) []string {
	set := before.Fields()
	var out []string
	for _, f := range set {
		if !slices.Contains(after.Fields(), f) {
			out = append(out, f)
		}
	}
	var others []string
	for _, f := range after.Fields() {
		if !slices.Contains(set, f) {
			others = append(others, f)
		}
	}
	// Policy.Looser compares the fields set in its argument with the
	// policy's; overlaying before on any defaults puts before's values in
	// every field before sets.
	base := messages.DefaultPolicy(messages.VenueDemo).Overlay(before)
	return append(out, base.Looser(after.Without(others))...)
}
