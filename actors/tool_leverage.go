package actors

import (
	"github.com/guarded-exchange/guarded-exchange/actors/risk"
	"github.com/guarded-exchange/guarded-exchange/messages"
)

// set_leverage's carry-out half: one write (executeOnce), answered with
// the position as read back after it. Its decision: risk/tool_leverage.go.

// completeLeverage is set_leverage's answer of its outcome.
var completeLeverage = completePositionWrite(func(a *messages.LeverageAnswer, source, status string) {
	a.ResultSource, a.Status = source, status
})

// storedLeverage decodes a stored set_leverage answer.
var storedLeverage = storedAs(func(a *messages.LeverageAnswer) *string { return &a.ResultSource })

// setLeverageTool is set_leverage's descriptor: its pure half and the parts above,
// registered once. Its first gate reduces risk; the allowlist is applied
// once the venue shows whether the change adds risk (decideLeverage).
var setLeverageTool = register(&toolDescriptor{Tool: risk.SetLeverage,
	carryOut: (*userActor).executeOnce, complete: completeLeverage, stored: storedLeverage, heldOnRecheck: true})
