package manifesttable

import "time"

// Observer receives what the materializer does, for metrics. Its
// functions run on the materializer's goroutine and must not block.
type Observer struct {
	// Segment is called after every __manifest log segment this process
	// wrote (one group commit), with the catalog sequences (commits and
	// catalog mutations) it carries and how long its create-only write
	// took.
	Segment func(sequences int, took time.Duration)
}
