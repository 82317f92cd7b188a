package ssetest

import (
	"bufio"
	"io"
	"strings"
)

// Message is one Server-Sent Events message: an event (Event and Data),
// or, from flightns's change feed, an id alone (the sequence the feed has
// been read through).
type Message struct {
	Event, Data, ID string
}

// Read calls fn with each whole message of r, in order, until r ends (a
// message its end cuts is dropped) or fn fails (its error). Lines are at
// most 16 MiB.
func Read(r io.Reader, fn func(Message) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	var m Message
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			if m != (Message{}) {
				if err := fn(m); err != nil {
					return err
				}
			}
			m = Message{}
			continue
		}
		field, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch field {
		case "event":
			m.Event = value
		case "data":
			m.Data = value
		case "id":
			m.ID = value
		}
	}
	return sc.Err()
}
