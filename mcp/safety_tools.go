package mcp

import (
	"context"
	"fmt"

	"github.com/guarded-exchange/guarded-exchange/messages"
)

// safetyTools are offered to every profile. None of them can loosen
// anything: there is no argument that turns the kill switch off, names
// another user or changes policy (SPEC §1 G1).
func (s *server) safetyTools() []*tool {
	empty := objectSchema(nil, map[string]any{})
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
	}
}

type policyOut struct {
	Venue      string                  `json:"venue"`
	User       string                  `json:"user"`
	Effective  messages.Policy         `json:"effective"`
	Ceiling    messages.PolicySettings `json:"ceiling"`
	Own        messages.PolicySettings `json:"own"`
	KillSwitch messages.KillSwitch     `json:"kill_switch"`
}

func (s *server) getMyPolicy(ctx context.Context, c *call) (any, error) {
	if err := c.args.done(); err != nil {
		return nil, err
	}
	v, err := s.policyView(ctx, &messages.ShowPolicyRequest{User: c.principal.User})
	if err != nil {
		return nil, err
	}
	return policyOut{Venue: s.opts.Venue, User: v.User, Effective: v.Effective, Ceiling: v.Ceiling, Own: v.Own, KillSwitch: v.KillSwitch}, nil
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
