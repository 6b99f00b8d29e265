package mcp

import (
	"context"
	"fmt"

	"github.com/guarded-exchange/guarded-exchange/messages"
)

// postureTools are offered to every profile: get_posture reads where the
// agent stands; reduce_risk_only can only make things stricter. No tool
// or argument leaves REDUCING or HALTED (docs/invariants.md "G1", issue 13).
func (s *server) postureTools() []*tool {
	empty := inputSchema[noArgs]()
	return []*tool{
		{
			name:  "get_posture",
			title: "Get my posture",
			description: "Where you stand now, without asking the exchange: state ACTIVE, REDUCING (only risk-reducing actions) or HALTED (kill switch) and why; " +
				"each rolling limit used/left; open orders by origin and positions with PnL; the private stream's health. Call it before trading.",
			kind:   KindRead,
			schema: empty,
			handle: s.getPosture,
		},
		{
			name:        "reduce_risk_only",
			title:       "Allow only risk-reducing actions",
			description: "Enter REDUCING: from now on only cancel, close, reduce-only, SL/TP and lower leverage go through. Safe to repeat. Only a human can leave it.",
			kind:        KindSafety,
			schema:      empty,
			handle:      s.reduceRiskOnly,
		},
	}
}

func (s *server) getPosture(ctx context.Context, c *call) (any, error) {
	if err := c.args.done(); err != nil {
		return nil, err
	}
	return s.posture(ctx, &messages.ShowPostureRequest{User: c.principal.User})
}

func (s *server) reduceRiskOnly(ctx context.Context, c *call) (any, error) {
	if err := c.args.done(); err != nil {
		return nil, err
	}
	return s.posture(ctx, &messages.SetPostureRequest{User: c.principal.User, Reduce: true})
}

func (s *server) posture(ctx context.Context, cmd messages.Command) (*messages.PostureView, error) {
	res, err := s.opts.Backend.Handle(ctx, cmd, messages.ActorAgent)
	if err != nil {
		return nil, err
	}
	v, ok := res.(*messages.PostureView)
	if !ok {
		return nil, messages.Internal(fmt.Errorf("unexpected answer %T", res))
	}
	return v, nil
}
