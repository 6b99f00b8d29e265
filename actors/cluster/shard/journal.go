package shard

import (
	"encoding/json"
	"errors"
	"time"

	"github.com/guarded-exchange/guarded-exchange/messages"
	"github.com/guarded-exchange/guarded-exchange/wal"
)

// Fence is what a shard journal needs of the shard's lock; *fence.Lock is
// one.
type Fence interface {
	// Epoch is the lock's epoch, greater than every earlier owner's.
	Epoch() uint64
	// Held reports, at the moment of the call, whether the lock still
	// counts as held.
	Held() bool
}

// ErrFenced is the cause of every append refused because this member no
// longer holds the shard's lock: the wal's own sentinel, since the log
// checks the fence itself (wal.Options.Fence).
var ErrFenced = wal.ErrFenced

// ReasonFenced is details.reason of the error a fenced append answers.
const ReasonFenced = messages.ReasonShardFenced

// FencedError is the error a fenced write answers: code internal_error
// (the codes are a closed list, docs/errors.md), details.reason
// ReasonFenced, cause ErrFenced. A retry reaches the shard's new owner.
// The System answers a write its fenced journal refused the same way
// (actors/journal.Refusal).
func FencedError() *messages.Error { return messages.ShardFenced(ErrFenced) }

// Options configures Open.
type Options struct {
	// Shard is the shard's number, Member this member's name (its
	// advertised address); both go into the owner record.
	Shard  int
	Member string
	// SegmentSize, OnRecord and Now are wal.Options'.
	SegmentSize int
	OnRecord    func(wal.Record) error
	Now         func() time.Time
}

// OwnerPayload is the payload of a shard_owner record.
type OwnerPayload struct {
	Shard  int    `json:"shard"`
	Epoch  uint64 `json:"epoch"`
	Member string `json:"member"`
}

// Open opens the shard's journal in dir for the holder of f and returns
// the fenced log with the shard_owner record it appended. It replays the
// chain through o.OnRecord, refuses a chain that holds a greater epoch
// (wal.ErrStaleEpoch), and appends the shard_owner record of f's epoch.
//
// The log asks f.Held before each write and again after its fsync
// (wal.Options.Fence): once the lock is lost nothing more is written and
// nothing is acknowledged, and every Append answers wal.ErrFenced. The
// caller must hold f while it writes; it owns the log (the System's
// journal writer is its one user) and closes it.
func Open(dir string, f Fence, o Options) (*wal.Log, wal.Record, *wal.Recovery, error) {
	if !f.Held() {
		return nil, wal.Record{}, nil, FencedError()
	}
	log, rec, err := wal.Open(dir, wal.Options{SegmentSize: o.SegmentSize, OnRecord: o.OnRecord, Now: o.Now,
		Epoch: f.Epoch(), Fence: f.Held})
	if err != nil {
		return nil, wal.Record{}, nil, err
	}
	payload, err := json.Marshal(OwnerPayload{Shard: o.Shard, Epoch: f.Epoch(), Member: o.Member})
	if err != nil {
		log.Close()
		return nil, wal.Record{}, nil, err
	}
	recs, err := log.Append([]wal.Entry{{Type: uint16(messages.RecordShardOwner), Actor: messages.ActorSystem, Payload: payload}})
	if err != nil {
		log.Close()
		if errors.Is(err, wal.ErrFenced) {
			return nil, wal.Record{}, nil, FencedError()
		}
		return nil, wal.Record{}, nil, err
	}
	return log, recs[0], rec, nil
}
