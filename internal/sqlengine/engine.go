//go:build duckdb_arrow

package sqlengine

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/flightns/flightns/nserror"
)

// DB is a locked-down in-process DuckDB (no files, no network, no
// extensions, configuration locked, bounded threads, memory and spill)
// that one writer fills and many queries read.
//
// The writer (Write) changes the tables in transactions and publishes
// each at a sequence: the _meta row records the sequence it reached,
// and Visible reports it. A query (Query, Schema) gets a new connection of
// its own, a read-only transaction on it (so it sees one sequence, which
// it reports), and passes the gate (gate.go) before anything of its text
// runs; its result streams chunk by chunk. At most Config.MaxQueries
// queries run at once, and as many statements are planned at once: this
// semaphore is the engine's one bound on concurrency.
type DB struct {
	duck *duckDB

	wmu    sync.Mutex // guards the writer
	writer *duckConn

	slots     chan struct{} // one per running query
	planSlots chan struct{} // one per statement being planned (its schema)
	ctxs      sync.Map      // DuckDB connection id -> the context of its request (table functions)

	// commits is a sequence lock over the rows queries see: odd while a
	// commit that changes them is in flight, incremented again once it is
	// visible. A query whose statement was bound between two equal even
	// values reads exactly the state of visible.
	commits atomic.Uint64

	vmu     sync.Mutex
	visible uint64 // sequence of the last published change
	oldest  uint64 // oldest sequence whose state is queryable
	changed *sync.Cond

	fmu   sync.Mutex
	funcs []*tableFunc // registered table functions (kept alive)
}

// Open opens an engine and runs ddl (the tables and views its writer
// fills) in its database, which also holds _meta: the sequence the
// writer published last, and the oldest one queries can reach.
func Open(cfg Config, ddl ...string) (*DB, error) {
	cfg.EnsureDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	d, err := openDuck(cfg.settings())
	if err != nil {
		return nil, err
	}
	db := &DB{duck: d}
	db.changed = sync.NewCond(&db.vmu)
	if db.writer, err = d.connect(); err != nil {
		d.close()
		return nil, err
	}
	stmts := append([]string{
		`ATTACH ':memory:' AS ` + DatabaseName,
		`USE ` + DatabaseName,
		`CREATE TABLE _meta (seq UBIGINT NOT NULL, oldest UBIGINT NOT NULL)`,
		`INSERT INTO _meta VALUES (0, 0)`,
	}, ddl...)
	if err := db.writer.execAll(stmts...); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("sqlengine: %w", err)
	}
	db.slots, db.planSlots = make(chan struct{}, cfg.MaxQueries), make(chan struct{}, cfg.MaxQueries)
	return db, nil
}

// MaxQueries is the number of queries that run at once (Config.MaxQueries).
func (db *DB) MaxQueries() int { return cap(db.slots) }

// Running is the number of queries holding a slot now (their results not
// yet released).
func (db *DB) Running() int { return len(db.slots) }

// Close closes the engine; queries still running fail.
func (db *DB) Close() error {
	if db.writer != nil {
		db.writer.close()
	}
	db.fmu.Lock()
	for _, f := range db.funcs {
		f.free()
	}
	db.funcs = nil
	db.fmu.Unlock()
	db.duck.close()
	return nil
}

// Writer is the engine's one writing connection, held for the length of
// a Write.
type Writer struct{ db *DB }

// Write runs fn with the writer, alone.
func (db *DB) Write(fn func(w *Writer) error) error {
	db.wmu.Lock()
	defer db.wmu.Unlock()
	return fn(&Writer{db: db})
}

// Exec runs one statement with arguments.
func (w *Writer) Exec(q string, args ...any) error { return w.db.writer.exec(q, args...) }

// ExecAll runs statements in order, stopping at the first that fails.
func (w *Writer) ExecAll(qs ...string) error { return w.db.writer.execAll(qs...) }

// ExecPrepared runs one statement whose text the writer runs again and
// again, prepared once and kept: q must be a constant (it is the key),
// its values go in args.
func (w *Writer) ExecPrepared(q string, args ...any) error {
	return w.db.writer.execPrepared(q, args...)
}

// InsertArrow appends rec's rows to table (its name, not quoted), rec's
// columns being cols, in that order; the table's other columns take their
// defaults. Call it inside a transaction (Publish): a failure leaves
// rows appended before it to the rollback.
func (w *Writer) InsertArrow(table string, cols []string, rec arrow.RecordBatch) error {
	return w.db.writer.appendArrow(table, cols, rec)
}

// Publish runs change in one transaction that ends with _meta at seq,
// and makes seq visible to queries once it commits. Only the commit
// itself is inside the sequence lock: a query that binds while change
// runs reads the state before it, which is the visible one.
func (w *Writer) Publish(seq uint64, change func() error) error {
	return w.transaction(change, "UPDATE _meta SET seq = ?", []any{seq}, func(commit func() error) error {
		w.db.commits.Add(1)
		defer w.db.commits.Add(1)
		if err := commit(); err != nil {
			return err
		}
		w.db.setVisible(seq)
		return nil
	})
}

// Replace is Publish for a change that replaces every row (a reload):
// the whole transaction is inside the sequence lock, so queries that bind
// during it read _meta, and no earlier state stays queryable (oldest is
// seq too).
func (w *Writer) Replace(seq uint64, change func() error) error {
	db := w.db
	db.commits.Add(1)
	defer db.commits.Add(1)
	return w.transaction(change, "UPDATE _meta SET seq = ?, oldest = ?", []any{seq, seq}, func(commit func() error) error {
		if err := commit(); err != nil {
			return err
		}
		db.vmu.Lock()
		db.oldest = seq
		db.vmu.Unlock()
		db.setVisible(seq)
		return nil
	})
}

// transaction runs change and the _meta update (meta, args) in one
// transaction, whose COMMIT runs inside wrap; a failure anywhere rolls
// everything back.
func (w *Writer) transaction(change func() error, meta string, args []any, wrap func(commit func() error) error) error {
	conn := w.db.writer
	if err := conn.run("BEGIN TRANSACTION"); err != nil {
		return err
	}
	err := change()
	if err == nil {
		err = conn.execPrepared(meta, args...)
	}
	if err == nil {
		err = wrap(func() error { return conn.run("COMMIT") })
	}
	if err != nil {
		_ = conn.run("ROLLBACK")
		return err
	}
	return nil
}

// Forget records that states before seq are no longer queryable (the
// writer deleted their rows).
func (w *Writer) Forget(seq uint64) error {
	if err := w.Exec(fmt.Sprintf(`UPDATE _meta SET oldest = greatest(oldest, %d)`, seq)); err != nil {
		return err
	}
	w.db.vmu.Lock()
	w.db.oldest = max(w.db.oldest, seq)
	w.db.vmu.Unlock()
	return nil
}

func (db *DB) setVisible(seq uint64) {
	db.vmu.Lock()
	if seq > db.visible {
		db.visible = seq
	}
	db.vmu.Unlock()
	db.changed.Broadcast()
}

// Visible returns the newest sequence queries see.
func (db *DB) Visible() uint64 {
	db.vmu.Lock()
	defer db.vmu.Unlock()
	return db.visible
}

// WaitVisible waits until sequence seq is visible to queries.
func (db *DB) WaitVisible(ctx context.Context, seq uint64) error {
	stop := context.AfterFunc(ctx, func() {
		db.vmu.Lock()
		db.changed.Broadcast()
		db.vmu.Unlock()
	})
	defer stop()
	db.vmu.Lock()
	defer db.vmu.Unlock()
	for db.visible < seq {
		if err := ctx.Err(); err != nil {
			return nserror.New(nserror.ServiceUnavailable, "sequence %d is not visible yet (at %d): %w", seq, db.visible, err)
		}
		db.changed.Wait()
	}
	return nil
}
