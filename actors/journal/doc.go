// Package journal is the server's one journal writer: the Writer owns the
// *wal.Log through a single flusher goroutine for the life of the process,
// and every record reaches the journal through Writer.Append with an
// explicit Durability (docs/architecture.md "Group commit").
//
// Beside the Writer live what only the journal's writing decides: its
// health (a write that failed, or a flush that hangs, refuses every later
// write: Writer.Down), the disk's free space and the last reserve that
// keeps room for the records that make things safer (DiskWatch), and the
// in-memory index of each user's recent records that get_my_journal reads
// (Index), filled by the flusher once a batch is durable.
//
// The package imports wal and messages only: the actors reach it through
// callbacks (Append's done), never through an actor of its own.
package journal
