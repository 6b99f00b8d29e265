package shard

import (
	"encoding/json"
	"errors"
	"sync"
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
// longer holds the shard's lock.
var ErrFenced = errors.New("shard: the shard's lock is lost; this member no longer owns the shard")

// ReasonFenced is details.reason of the error a fenced append answers.
const ReasonFenced = "shard_fenced"

// FencedError is the error a fenced append answers: code internal_error
// (the codes are a closed list, docs/errors.md), details.reason
// ReasonFenced, cause ErrFenced. A retry reaches the shard's new owner.
func FencedError() *messages.Error {
	return &messages.Error{
		Code:     messages.CodeInternalError,
		Message:  "this server no longer owns the user's shard",
		NextStep: "retry: the call goes to the shard's new owner",
		Details:  map[string]any{"reason": ReasonFenced},
		Err:      ErrFenced,
	}
}

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

// Journal is one shard's journal while this member owns the shard. Its
// methods are safe for concurrent use; appends are serialised.
type Journal struct {
	fence Fence

	mu     sync.Mutex
	log    *wal.Log
	owner  wal.Record
	fenced bool
}

// Open opens the shard's journal in dir for the holder of f: it replays
// the chain through o.OnRecord, refuses a chain that holds a greater
// epoch (wal.ErrStaleEpoch), and appends the shard_owner record of f's
// epoch. The caller must hold f and keep it while it writes.
func Open(dir string, f Fence, o Options) (*Journal, *wal.Recovery, error) {
	if !f.Held() {
		return nil, nil, FencedError()
	}
	log, rec, err := wal.Open(dir, wal.Options{SegmentSize: o.SegmentSize, OnRecord: o.OnRecord, Now: o.Now, Epoch: f.Epoch()})
	if err != nil {
		return nil, nil, err
	}
	payload, err := json.Marshal(OwnerPayload{Shard: o.Shard, Epoch: f.Epoch(), Member: o.Member})
	if err != nil {
		log.Close()
		return nil, nil, err
	}
	j := &Journal{fence: f, log: log}
	recs, err := j.Append([]wal.Entry{{Type: uint16(messages.RecordShardOwner), Actor: messages.ActorSystem, Payload: payload}})
	if err != nil {
		log.Close()
		return nil, nil, err
	}
	j.owner = recs[0]
	return j, rec, nil
}

// Owner returns the shard_owner record this journal opened with.
func (j *Journal) Owner() wal.Record { return j.owner }

// Append writes entries as one batch (one fsync) with the lock's epoch
// and returns their records: only if the lock is held before the write
// and still held after the fsync. Otherwise it returns FencedError, and
// so does every later call. A batch refused after its fsync is in the
// chain but was never acknowledged, like a batch fsynced just before a
// crash; the next owner replays it.
func (j *Journal) Append(entries []wal.Entry) ([]wal.Record, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.fenced || !j.fence.Held() {
		j.fenced = true
		return nil, FencedError()
	}
	recs, err := j.log.Append(entries)
	if err != nil {
		return nil, err
	}
	if !j.fence.Held() {
		j.fenced = true
		return nil, FencedError()
	}
	return recs, nil
}

// Fenced reports whether the journal has refused an append for a lost
// lock (it refuses every one after).
func (j *Journal) Fenced() bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.fenced
}

// Close closes the journal's log. It does not release the lock.
func (j *Journal) Close() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.log.Close()
}
