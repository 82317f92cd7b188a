package manifesttable

import "time"

// Observer receives what the table does, for metrics. Its functions run
// on the table's goroutines and must not block.
type Observer struct {
	// Segment is called after every __manifest log segment this process
	// wrote (one group commit), with the catalog sequences (commits and
	// catalog mutations) it carries and how long its create-only write
	// took.
	Segment func(sequences int, took time.Duration)
	// Opened is called once when Open has loaded the table, with the
	// table: an observer that reads it when asked (the metrics read
	// MaintenanceTotals at each scrape) keeps it.
	Opened func(*Table)
}
