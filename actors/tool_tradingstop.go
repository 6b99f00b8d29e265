package actors

import (
	"github.com/guarded-exchange/guarded-exchange/actors/risk"
	"github.com/guarded-exchange/guarded-exchange/messages"
)

// set_trading_stop's carry-out half: one write (executeOnce), answered
// with the position as read back after it. Its decision:
// risk/tool_tradingstop.go.

// completeStop is set_trading_stop's answer of its outcome.
var completeStop = completePositionWrite(func(a *messages.TradingStopAnswer, source, status string) {
	a.ResultSource, a.Status = source, status
})

// storedStop decodes a stored set_trading_stop answer.
var storedStop = storedAs(func(a *messages.TradingStopAnswer) *string { return &a.ResultSource })

// tradingStopTool is set_trading_stop's descriptor: its pure half and the parts above,
// registered once.
var tradingStopTool = register(&toolDescriptor{Tool: risk.TradingStop,
	carryOut: (*userActor).executeOnce, complete: completeStop, stored: storedStop, heldOnRecheck: true})
