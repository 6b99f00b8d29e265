package cli

import (
	"errors"
	"time"

	"github.com/alecthomas/kong"
)

// TimeFlag is a command-line time: an RFC 3339 time, a date (YYYY-MM-DD,
// midnight UTC), or a Go duration such as 24h or 90m meaning that long
// before now. The zero value is "not given".
type TimeFlag struct {
	time.Time
}

// errTimeFlag is the refusal of a value that is none of the three forms.
// It does not repeat the value.
var errTimeFlag = errors.New("not a time: give an RFC 3339 time (2026-01-02T15:04:05Z), a date (2026-01-02, midnight UTC) or a duration before now (24h, 90m)")

// Decode implements kong.MapperValue.
func (t *TimeFlag) Decode(ctx *kong.DecodeContext) error {
	var s string
	if err := ctx.Scan.PopValueInto("time", &s); err != nil {
		return err
	}
	v, err := parseTimeFlag(s, time.Now())
	if err != nil {
		return err
	}
	t.Time = v
	return nil
}

// parseTimeFlag reads the three forms of TimeFlag; a duration counts back
// from now.
func parseTimeFlag(s string, now time.Time) (time.Time, error) {
	if v, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return v, nil
	}
	if v, err := time.Parse(time.DateOnly, s); err == nil {
		return v, nil
	}
	if d, err := time.ParseDuration(s); err == nil && d >= 0 {
		return now.Add(-d).UTC(), nil
	}
	return time.Time{}, errTimeFlag
}
