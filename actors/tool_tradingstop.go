package actors

import (
	"github.com/guarded-exchange/guarded-exchange/actors/risk"
	"github.com/guarded-exchange/guarded-exchange/messages"
)

// set_trading_stop's carry-out half: one write (executeOnce), answered
// with the position as read back after it. Its decision:
// risk/tool_tradingstop.go.

// tradingStopTool is set_trading_stop's descriptor: its pure half, the
// answer of its outcome (the position as read back, with its source and
// status) and the decoding of a stored answer, registered once.
var tradingStopTool = register(&toolDescriptor{Tool: risk.TradingStop,
	carryOut: (*userActor).executeOnce, heldOnRecheck: true,
	complete: completePositionWrite(func(a *messages.TradingStopAnswer, source, status string) {
		a.ResultSource, a.Status = source, status
	}),
	stored: storedAs(func(a *messages.TradingStopAnswer) *string { return &a.ResultSource })})
