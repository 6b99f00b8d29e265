package actors

import (
	"testing"
	"time"
)

// A flood of anomalies writes at most anomalyRecordsPerWindow records a
// window; the ones not written are counted into the next record.
func TestAnomalyRecordsAreRateLimited(t *testing.T) {
	var l anomalyLimiter
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	written := 0
	for i := 0; i < 10000; i++ {
		if n, ok := l.admit(now.Add(time.Duration(i) * time.Millisecond)); ok {
			written++
			if n != 1 {
				t.Fatalf("record %d stands for %d anomalies, want 1 within the first window", written, n)
			}
		}
	}
	if written != anomalyRecordsPerWindow {
		t.Fatalf("%d records for 10000 anomalies in 10 s, want %d", written, anomalyRecordsPerWindow)
	}
	n, ok := l.admit(now.Add(anomalyWindow))
	if !ok || n != 10000-anomalyRecordsPerWindow+1 {
		t.Fatalf("the next window's first record stands for %d (%v), want the %d suppressed and itself", n, ok, 10000-anomalyRecordsPerWindow)
	}
}
