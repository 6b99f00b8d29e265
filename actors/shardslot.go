package actors

import (
	"github.com/guarded-exchange/guarded-exchange/actors/cluster/route"
	"github.com/guarded-exchange/guarded-exchange/messages"
)

// ReasonWrongShard is details.reason of the refusal a shard's system
// answers for a user another shard serves (docs/cluster.md "Routing").
const ReasonWrongShard = "wrong_shard"

// homeUser refuses a call for a user this system does not serve: in a
// cluster every user belongs to one shard (route.OfUser), and a call that
// reached another shard is a routing fault, answered before anything is
// journaled. In local mode (the zero Slot) every user is home.
func (s *System) homeUser(user string) *messages.Error {
	if s.slot.Holds(route.OfUser, user) {
		return nil
	}
	return wrongShard(route.OfUser(user, s.slot.Count))
}

// wrongShard is the refusal of a call routed to the wrong shard:
// internal_error (the error codes are a closed list) with reason
// wrong_shard and the user's shard, so that the fault is found in the
// routing, never in the user's state. Nothing was done.
func wrongShard(home int) *messages.Error {
	return &messages.Error{
		Code:     messages.CodeInternalError,
		Message:  "this call reached a shard that does not serve its user; nothing was done",
		NextStep: "retry; if it persists, ask the operator to check the cluster's routing",
		Details:  map[string]any{"reason": ReasonWrongShard, "shard": home},
	}
}

// maxTokenDraws bounds the draws of a token (or token id) that must route
// to this shard: each draw lands here with probability 1/Count, so the
// expected number is Count, and 64·Count draws all miss with probability
// below e^-64.
func (s *System) maxTokenDraws() int {
	return 64*max(s.slot.Count, 1) + 64
}
