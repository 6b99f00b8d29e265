package sim

import "github.com/shopspring/decimal"

// StartingLeverage is the leverage a fresh simulator account has on every
// symbol until set_leverage changes it (Bybit's default for a new linear
// account).
func StartingLeverage() decimal.Decimal { return defaultLeverage }
