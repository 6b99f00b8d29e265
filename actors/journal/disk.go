package journal

import (
	"sync/atomic"
	"syscall"
	"time"

	"github.com/guarded-exchange/guarded-exchange/messages"
)

// DefaultDiskFloor is the journal's last reserve: below it only the
// records that make things safer or settle what is in flight are written
// (essentialRecord), whatever the margin; below half of it, none of the
// agent's calls (innerRecord).
const DefaultDiskFloor = 8 << 20

// DiskWatch measures the free space of the journal's file system
// (statfs), at most every diskEvery, for the posture's disk_low cause and
// the journal's last reserve. Safe for concurrent use.
type DiskWatch struct {
	dir string
	// margin: REDUCING below floor+margin; floor: the last reserve.
	margin, floor uint64
	free          atomic.Uint64
	measuredAt    atomic.Int64 // unix nanos; 0: never
	measured      atomic.Bool
}

const diskEvery = 100 * time.Millisecond

// NewDiskWatch watches the file system of dir: REDUCING below
// floor+margin free bytes, the last reserve below floor. An empty dir
// watches nothing (nil: every method answers "plenty of space").
func NewDiskWatch(dir string, margin, floor uint64) *DiskWatch {
	if dir == "" {
		return nil
	}
	d := &DiskWatch{dir: dir, margin: margin, floor: floor}
	d.measure(time.Now())
	return d
}

func (d *DiskWatch) measure(now time.Time) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(d.dir, &st); err != nil {
		return
	}
	d.free.Store(uint64(st.Bavail) * uint64(st.Bsize))
	d.measured.Store(true)
	d.measuredAt.Store(now.UnixNano())
}

// FreeBytes is the free space, measured again when the last measure is
// older than diskEvery.
func (d *DiskWatch) FreeBytes() uint64 {
	now := time.Now()
	if now.UnixNano()-d.measuredAt.Load() > int64(diskEvery) {
		d.measure(now)
	}
	return d.free.Load()
}

// MarginBytes is the free space below which the disk is low: the
// margin above the last reserve, plus the reserve.
func (d *DiskWatch) MarginBytes() uint64 {
	if d == nil {
		return 0
	}
	return d.margin + d.floor
}

// Low reports whether the disk is below the margin (REDUCING).
func (d *DiskWatch) Low() bool {
	if d == nil {
		return false
	}
	free := d.FreeBytes()
	return d.measured.Load() && free < d.margin+d.floor
}

// BelowFloor reports whether the disk is in its last reserve.
func (d *DiskWatch) BelowFloor() bool {
	if d == nil {
		return false
	}
	free := d.FreeBytes()
	return d.measured.Load() && free < d.floor
}

// BelowInnerFloor reports whether the disk is in the inner half of its
// last reserve, kept for what a human and the dead-man switch need.
func (d *DiskWatch) BelowInnerFloor() bool {
	if d == nil {
		return false
	}
	free := d.FreeBytes()
	return d.measured.Load() && free < d.floor/2
}

// Refuses reports whether a record of type t is refused for lack of space:
// in the last reserve only essentialRecord types are written, and in its
// inner half (below floor/2) only innerRecord types.
func (d *DiskWatch) Refuses(t messages.RecordType) bool {
	if d == nil {
		return false
	}
	free := d.FreeBytes()
	switch {
	case !d.measured.Load() || free >= d.floor:
		return false
	case free < d.floor/2:
		return !innerRecord(t)
	default:
		return !essentialRecord(t)
	}
}

// essentialRecord reports whether a record is written from the disk's last
// reserve: turning the kill switch on, the posture, the dead-man switch's
// trigger, the agent's tool_call of a tool that is not a read (System.
// ToolCalled does not journal a read tool's call there), and
// what the action path needs to refuse, settle or reduce (under REDUCING
// nothing adds risk), and the private stream's audit trail (streamRecord).
// Everything else (policy, keys, tokens, users) is refused there.
func essentialRecord(t messages.RecordType) bool {
	return t == messages.RecordToolCall || streamRecord(t) || innerRecord(t)
}

// streamRecord reports whether a record is the private stream's audit
// trail (venue_update, stream_dropped): written from the last reserve,
// never from its inner half, so a flood of pushes cannot use up what the
// kill switch and the dead-man switch need.
func streamRecord(t messages.RecordType) bool {
	return t == messages.RecordVenueUpdate || t == messages.RecordStreamDropped
}

// innerRecord reports whether a record is written from the inner half of
// the last reserve: everything essential except the agent's tool_call, so
// no call of the agent (each starts with its tool_call) can use it up,
// while the kill switch going on, the posture, the dead-man switch and the
// action path of a human's or the dead-man switch's cancel or close still
// work.
func innerRecord(t messages.RecordType) bool {
	switch t {
	case messages.RecordKillSwitchOn, messages.RecordPostureChanged, messages.RecordDeadmanTriggered,
		messages.RecordOrderAttempt, messages.RecordOrderOutcome, messages.RecordOrderRefused,
		messages.RecordOrderRepeat:
		return true
	}
	return false
}

// ReserveRefusal Refuses a record that is not essential while the
// journal's disk is in its last reserve.
func ReserveRefusal() *messages.Error {
	return &messages.Error{Code: messages.CodeInternalError,
		Message:  "the journal's disk is almost full; only the kill switch, the posture and risk-reducing actions are journaled",
		NextStep: "free disk space on the journal's file system; nothing was changed",
		Details:  map[string]any{"reason": "disk_reserve"}}
}
