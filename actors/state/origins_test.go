package state

import (
	"testing"

	"github.com/guarded-exchange/guarded-exchange/messages"
)

// Who may journal which posture change.
func TestPostureOriginAllowed(t *testing.T) {
	none := messages.PostureCauses{}
	ev := func(before, after messages.PostureCauses) messages.PostureChangedEvent {
		return messages.PostureChangedEvent{CausesBefore: before, Causes: after}
	}
	h, a, s := messages.PostureCauses{messages.CauseHuman}, messages.PostureCauses{messages.CauseAgent}, messages.PostureCauses{messages.CauseStreamStale}
	for _, c := range []struct {
		ev    messages.PostureChangedEvent
		actor string
		want  bool
	}{
		{ev(none, a), messages.ActorAgent, true},
		{ev(none, h), messages.ActorAgent, false},
		{ev(a, none), messages.ActorAgent, false},
		{ev(a, none), messages.ActorCLIUser, true},
		{ev(h, none), messages.ActorCLIAdmin, true},
		{ev(none, h), messages.ActorCLIUser, true},
		{ev(none, s), messages.ActorSystem, true},
		{ev(s, none), messages.ActorSystem, true},
		{ev(s, none), messages.ActorAgent, false},
		{ev(none, s), messages.ActorCLIUser, false},
		{ev(h, none), messages.ActorSystem, false},
		{ev(none, none), messages.ActorAgent, true}, // the kill switch going on
		{ev(none, messages.PostureCauses{messages.CauseAgent, messages.CauseStreamStale}), messages.ActorAgent, false},
	} {
		if got := postureOriginAllowed(c.ev, c.actor); got != c.want {
			t.Errorf("%v -> %v by %s: allowed %v, want %v", c.ev.CausesBefore, c.ev.Causes, c.actor, got, c.want)
		}
	}
}
