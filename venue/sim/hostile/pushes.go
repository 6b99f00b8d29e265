package hostile

import (
	"encoding/json"
	"maps"
	"strconv"
	"sync/atomic"
	"time"
)

var pushSeq atomic.Uint64

// Push is one private stream push of topic ("order", "execution",
// "position", "wallet") with rows as its data, in Bybit's shape.
func Push(topic string, rows ...map[string]any) []byte {
	if rows == nil {
		rows = []map[string]any{}
	}
	b, err := json.Marshal(map[string]any{
		"id":           "hostile-" + strconv.FormatUint(pushSeq.Add(1), 10),
		"topic":        topic,
		"creationTime": time.Now().UnixMilli(),
		"data":         rows,
	})
	if err != nil {
		panic("hostile: push does not encode: " + err.Error())
	}
	return b
}

// Order is a linear order row that the stream parser accepts: a resting
// 0.001 BTCUSDT limit buy unless over says otherwise. over's fields
// replace or add to the defaults.
func Order(over map[string]any) map[string]any {
	now := strconv.FormatInt(time.Now().UnixMilli(), 10)
	row := map[string]any{
		"category":       "linear",
		"symbol":         "BTCUSDT",
		"orderId":        "00000000-0000-4000-8000-000000000000",
		"orderLinkId":    "",
		"side":           "Buy",
		"orderType":      "Limit",
		"timeInForce":    "GTC",
		"price":          "50000",
		"qty":            "0.001",
		"avgPrice":       "",
		"cumExecQty":     "0",
		"cumExecValue":   "0",
		"leavesQty":      "0.001",
		"orderStatus":    "New",
		"rejectReason":   "EC_NoError",
		"reduceOnly":     false,
		"closeOnTrigger": false,
		"stopOrderType":  "",
		"triggerPrice":   "0",
		"createdTime":    now,
		"updatedTime":    now,
	}
	maps.Copy(row, over)
	return row
}

// Position is a linear one-way position row that the stream parser
// accepts: flat BTCUSDT unless over says otherwise.
func Position(over map[string]any) map[string]any {
	now := strconv.FormatInt(time.Now().UnixMilli(), 10)
	row := map[string]any{
		"category":       "linear",
		"positionIdx":    0,
		"symbol":         "BTCUSDT",
		"side":           "",
		"size":           "0",
		"entryPrice":     "0",
		"positionValue":  "0",
		"markPrice":      "50000",
		"liqPrice":       "",
		"leverage":       "10",
		"unrealisedPnl":  "0",
		"cumRealisedPnl": "0",
		"takeProfit":     "0",
		"stopLoss":       "0",
		"createdTime":    now,
		"updatedTime":    now,
	}
	maps.Copy(row, over)
	return row
}

// Execution is a linear trade execution row that the stream parser
// accepts: 0.001 BTCUSDT bought at 50000 unless over says otherwise.
func Execution(over map[string]any) map[string]any {
	row := map[string]any{
		"category":    "linear",
		"symbol":      "BTCUSDT",
		"execId":      "00000000-0000-4000-8000-0000000000e1",
		"orderId":     "00000000-0000-4000-8000-000000000000",
		"orderLinkId": "",
		"side":        "Buy",
		"execPrice":   "50000",
		"execQty":     "0.001",
		"execValue":   "50",
		"execFee":     "0.03",
		"feeRate":     "0.0006",
		"feeCurrency": "USDT",
		"isMaker":     false,
		"execType":    "Trade",
		"execTime":    strconv.FormatInt(time.Now().UnixMilli(), 10),
	}
	maps.Copy(row, over)
	return row
}
