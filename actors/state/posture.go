package state

import (
	"slices"
	"strings"

	"github.com/guarded-exchange/guarded-exchange/messages"
)

// CurrentPosture is the state as last journaled (ACTIVE before any record).
func (s *User) CurrentPosture() messages.PostureState {
	if s.PostureState == "" {
		return messages.PostureActive
	}
	return s.PostureState
}

// reducingRefusal refuses a risk-increasing action while REDUCING; nil
// when no cause holds. details.reason names the first cause.
func (s *User) reducingRefusal() *messages.Error {
	if len(s.Posture) == 0 {
		return nil
	}
	return LimitExceeded("posture", "risk_reducing_only",
		"the posture is REDUCING ("+strings.Join(s.Posture, ", ")+"); only risk-reducing actions (cancel, close, reduce-only, SL/TP, lower leverage) go through",
		"reduce risk or wait: automatic causes clear themselves (see get_posture); a human cause only a human can lift outside the chat",
		map[string]any{"reason": s.Posture[0], "causes": []string(s.Posture)})
}

// postureOriginAllowed is who may journal a posture change: a human
// cause is added by a human (human) or the agent (agent) and removed only
// by a human; an automatic cause changes only by the server; a change of
// state alone (the kill switch) by whoever turned the switch.
func postureOriginAllowed(p messages.PostureChangedEvent, actor string) bool {
	human := actor == messages.ActorCLIUser || actor == messages.ActorCLIAdmin
	hb, ha := p.CausesBefore.Human(), p.Causes.Human()
	ab, aa := p.CausesBefore.Auto(), p.Causes.Auto()
	humanChanged, autoChanged := !slices.Equal(hb, ha), !slices.Equal(ab, aa)
	for _, c := range p.Causes {
		if !messages.IsHumanCause(c) && !slices.Contains(messages.AutoCauses, c) {
			return false
		}
	}
	switch {
	case humanChanged && autoChanged:
		return false
	case autoChanged:
		return actor == messages.ActorSystem
	case humanChanged:
		for _, c := range hb {
			if !slices.Contains(ha, c) && !human {
				return false // only a human leaves
			}
		}
		for _, c := range ha {
			if slices.Contains(hb, c) {
				continue
			}
			if c == messages.CauseAgent && actor != messages.ActorAgent || c == messages.CauseHuman && !human {
				return false
			}
		}
		return true
	}
	return human || actor == messages.ActorAgent || actor == messages.ActorSystem
}
