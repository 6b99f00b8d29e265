package actors

import (
	"github.com/guarded-exchange/guarded-exchange/actors/risk"
)

// close_position's carry-out half: sent and answered exactly like
// place_order (executeOrder, tool_place.go). Its decision:
// risk/tool_close.go.

// closePositionTool is close_position's descriptor: its pure half and the
// parts above, registered once. A close is planned and sent like
// place_order (tool_place.go).
var closePositionTool = register(&toolDescriptor{Tool: risk.ClosePosition,
	carryOut: (*userActor).executeOrder, complete: completeOrder, stored: storedOrder, heldOnRecheck: true})
