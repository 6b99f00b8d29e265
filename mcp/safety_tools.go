package mcp

import (
	"context"
	"fmt"

	"github.com/guarded-exchange/guarded-exchange/messages"
)

// safetyTools are offered to every profile. None of them can loosen
// anything: there is no argument that turns the kill switch off, names
// another user or changes policy (docs/invariants.md "G1").
func (s *server) safetyTools() []*tool {
	empty := inputSchema[noArgs]()
	return []*tool{
		{
			name:        "get_my_policy",
			title:       "Get my policy",
			description: "Your effective limits, the admin ceiling, your own settings and the kill switch. No tool changes them.",
			kind:        KindRead, // a read, offered to every profile
			schema:      empty,
			handle:      s.getMyPolicy,
		},
		{
			name:        "activate_kill_switch",
			title:       "Activate the kill switch",
			description: "Stop all risk-increasing actions until a human resets it outside the chat. Use it if something looks wrong.",
			kind:        KindSafety,
			schema:      empty,
			handle:      s.activateKillSwitch,
		},
		{
			name:  "get_confirmation_status",
			title: "Get a confirmation's status",
			description: "Status of an action parked for a human, the plan shown, and the tool's answer once executed. " +
				"Only a human decides, outside the chat.",
			kind:   KindRead,
			schema: inputSchema[confirmationArgs](),
			handle: s.getConfirmationStatus,
		},
		{
			name:        "cancel_confirmation",
			title:       "Withdraw a confirmation",
			description: "Withdraw an action of yours that waits for a human: it can no longer be approved, and nothing is sent. It cannot approve anything.",
			kind:        KindSafety,
			schema:      inputSchema[confirmationArgs](),
			handle:      s.cancelConfirmation,
		},
	}
}

func (s *server) confirmationCall(ctx context.Context, c *call, cancel bool) (any, error) {
	id := c.args.str("confirmation_id", true, messages.ConfirmationIDRE, "must be the confirmation_id of a pending answer (cf_ and 24 hex digits)")
	if err := c.args.done(); err != nil {
		return nil, err
	}
	var cmd messages.Command = &messages.ConfirmationStatusCommand{User: c.principal.User, ConfirmationID: id}
	if cancel {
		cmd = &messages.CancelConfirmationCommand{User: c.principal.User, ConfirmationID: id}
	}
	return answerOf[*messages.ConfirmationStatus](s.opts.Backend.Handle(ctx, cmd, messages.ActorAgent))
}

func (s *server) getConfirmationStatus(ctx context.Context, c *call) (any, error) {
	return s.confirmationCall(ctx, c, false)
}

func (s *server) cancelConfirmation(ctx context.Context, c *call) (any, error) {
	return s.confirmationCall(ctx, c, true)
}

type policyOut struct {
	Venue      string                  `json:"venue"`
	User       string                  `json:"user"`
	Effective  messages.Policy         `json:"effective"`
	Ceiling    messages.PolicySettings `json:"ceiling"`
	Own        messages.PolicySettings `json:"own"`
	KillSwitch messages.KillSwitch     `json:"kill_switch"`
	// ConfirmationRule states in one line which actions a human always
	// confirms and which only above confirm_above_notional_usdt.
	ConfirmationRule string `json:"confirmation_rule"`
}

func (s *server) getMyPolicy(ctx context.Context, c *call) (any, error) {
	if err := c.args.done(); err != nil {
		return nil, err
	}
	v, err := s.policyView(ctx, &messages.ShowPolicyRequest{User: c.principal.User})
	if err != nil {
		return nil, err
	}
	return policyOut{Venue: s.opts.Venue, User: v.User, Effective: v.Effective, Ceiling: v.Ceiling, Own: v.Own, KillSwitch: v.KillSwitch,
		ConfirmationRule: v.Effective.ConfirmationRule()}, nil
}

type killSwitchOut struct {
	KillSwitch messages.KillSwitch `json:"kill_switch"`
	Changed    bool                `json:"changed"`
	Message    string              `json:"message"`
}

func (s *server) activateKillSwitch(ctx context.Context, c *call) (any, error) {
	if err := c.args.done(); err != nil {
		return nil, err
	}
	v, err := s.policyView(ctx, &messages.SetKillSwitchRequest{User: c.principal.User, On: true, Level: messages.KillSwitchUser})
	if err != nil {
		return nil, err
	}
	msg := "the kill switch is on; risk-increasing actions are refused until a human turns it off"
	if !v.Changed {
		msg = "the kill switch was already on (" + string(v.KillSwitch) + ")"
	}
	return killSwitchOut{KillSwitch: v.KillSwitch, Changed: v.Changed, Message: msg}, nil
}

func (s *server) policyView(ctx context.Context, cmd messages.Command) (*messages.PolicyView, error) {
	res, err := s.opts.Backend.Handle(ctx, cmd, messages.ActorAgent)
	if err != nil {
		return nil, err
	}
	v, ok := res.(*messages.PolicyView)
	if !ok {
		return nil, messages.Internal(fmt.Errorf("unexpected answer %T", res))
	}
	return v, nil
}
