package wal

import (
	"fmt"
	"os"
	"testing"

	twal "github.com/tidwall/wal"
)

// benchPayload is a 256-byte JSON payload (a string).
func benchPayload() []byte {
	p := make([]byte, 256)
	p[0], p[255] = '"', '"'
	for i := 1; i < 255; i++ {
		p[i] = 'a' + byte(i%26)
	}
	return p
}

var benchBatches = []int{1, 8, 64, 512}

// BenchmarkAppendBatch: Log.Append of n entries with 256-byte payloads,
// one fsync per Append. One op is one Append.
func BenchmarkAppendBatch(b *testing.B) {
	payload := benchPayload()
	for _, n := range benchBatches {
		b.Run(fmt.Sprintf("batch=%d", n), func(b *testing.B) {
			l, _, err := Open(b.TempDir(), Options{})
			if err != nil {
				b.Fatal(err)
			}
			defer l.Close()
			es := make([]Entry, n)
			for i := range es {
				es[i] = Entry{Type: 3, User: "local", Actor: "mcp:agent", Payload: payload}
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := l.Append(es); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N*n)/b.Elapsed().Seconds(), "records/s")
		})
	}
}

// BenchmarkRawWriteBatch: tidwall/wal WriteBatch of n 256-byte entries,
// fsync on, for comparison with BenchmarkAppendBatch.
func BenchmarkRawWriteBatch(b *testing.B) {
	data := benchPayload()
	for _, n := range benchBatches {
		b.Run(fmt.Sprintf("batch=%d", n), func(b *testing.B) {
			w, err := twal.Open(b.TempDir(), &twal.Options{LogFormat: twal.Binary})
			if err != nil {
				b.Fatal(err)
			}
			defer w.Close()
			var batch twal.Batch
			idx := uint64(0)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				batch.Clear()
				for j := 0; j < n; j++ {
					idx++
					batch.Write(idx, data)
				}
				if err := w.WriteBatch(&batch); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N*n)/b.Elapsed().Seconds(), "records/s")
		})
	}
}

// BenchmarkOpenVerify1M builds 1,000,000 records with 256-byte payloads
// once (raw frames, no fsync), then times Open (full verification,
// OnRecord a no-op), Verify, and a plain read of the segment files as the
// floor.
func BenchmarkOpenVerify1M(b *testing.B) {
	const n = 1_000_000
	dir := b.TempDir()
	head := buildRaw(b, dir, n, 256, DefaultSegmentSize)
	var size int64
	segs, _, _ := listSegments(dir)
	for _, s := range segs {
		fi, _ := os.Stat(s.path)
		size += fi.Size()
	}

	b.Run("ReadFiles", func(b *testing.B) {
		b.SetBytes(size)
		for i := 0; i < b.N; i++ {
			for _, s := range segs {
				if _, err := os.ReadFile(s.path); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
	b.Run("Open", func(b *testing.B) {
		b.SetBytes(size)
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			count := 0
			l, rec, err := Open(dir, Options{OnRecord: func(Record) error { count++; return nil }})
			if err != nil {
				b.Fatal(err)
			}
			if rec.TornTail || count != n {
				b.Fatalf("recovery %+v, %d records", rec, count)
			}
			if s, h := l.Head(); s != head.Seq || h != head.Hash {
				b.Fatal("head differs")
			}
			l.Close()
		}
		b.ReportMetric(float64(b.N*n)/b.Elapsed().Seconds(), "records/s")
	})
	b.Run("Verify", func(b *testing.B) {
		b.SetBytes(size)
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			res, err := Verify(dir, head.String())
			if err != nil || !res.OK() || res.Records != n {
				b.Fatalf("%+v %v", res.Problems, err)
			}
		}
		b.ReportMetric(float64(b.N*n)/b.Elapsed().Seconds(), "records/s")
	})
}

// BenchmarkEncodeRecord: one tool_call-sized record framed and hashed
// into a reused buffer, as the journal writer does for each record of a
// batch.
func BenchmarkEncodeRecord(b *testing.B) {
	payload := []byte(`{"user":"local","profile":"trade","tool":"place_order","args_sha256":"` +
		"9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08" + `","admitted":true}`)
	var h hasher
	var prev [32]byte
	buf := make([]byte, 0, 4096)
	b.ReportAllocs()
	b.SetBytes(int64(len(payload)))
	for i := 0; b.Loop(); i++ {
		buf, prev = appendFrame(buf[:0], &h, uint64(i+1), 3, int64(i), &prev, 0, "local", "mcp:agent", "", payload)
	}
}
