package manifesttable

import (
	"context"
	"encoding/json"
	"errors"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/flightns/flightns/nserror"
	"github.com/flightns/flightns/objstore"
)

// TrashPrefix holds one record per drop kept recoverable (the namespace
// service's drop retention): what a DropTable or DropNamespace removed
// from the catalog, as the rows it removed, while the dropped tables'
// directories stay. The namespace service writes a record create-only
// before the drop applies and deletes it when the drop is undone or
// purged; the SQL engine shows the records in the `dropped` view.
const TrashPrefix = Prefix + "_trash/"

// Trash is the record of one drop kept recoverable.
type Trash struct {
	// DropID names the drop: a UUID (v7, so ids sort by time).
	DropID string `json:"drop_id"`
	// ID is the dropped table or namespace (its names); Type its object
	// type.
	ID   []string `json:"id"`
	Type string   `json:"object_type"`
	// DroppedAt is when the drop was recorded.
	DroppedAt time.Time `json:"dropped_at"`
	// Rows are the catalog rows the drop removed (MarshalRow), each
	// namespace before what it holds.
	Rows []json.RawMessage `json:"rows"`

	objects []Row // Rows decoded (by ReadTrash)
}

// Objects decodes the record's rows; a row that does not decode fails.
func (t *Trash) Objects() ([]Row, error) {
	if t.objects != nil {
		return t.objects, nil
	}
	out := make([]Row, len(t.Rows))
	for i, b := range t.Rows {
		r, err := UnmarshalRow(b)
		if err != nil {
			return nil, err
		}
		out[i] = r
	}
	return out, nil
}

var dropIDPattern = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

// ValidDropID fails with InvalidInput unless id is a drop id as drops
// write them (a lower-case UUID): nothing else becomes a key.
func ValidDropID(id string) error {
	if !dropIDPattern.MatchString(id) {
		return nserror.New(nserror.InvalidInput, "drop id %q is not a drop id (a lower-case UUID)", id)
	}
	return nil
}

// TrashKey is the key of drop dropID's record.
func TrashKey(dropID string) string { return TrashPrefix + dropID + ".json" }

// ListTrash lists the drops kept recoverable, oldest first. Records that
// are not ours (a name or a body a drop does not write) are skipped.
func ListTrash(ctx context.Context, objs *objstore.Store) ([]Trash, error) {
	var out []Trash
	for a, err := range objs.List(ctx, TrashPrefix) {
		if err != nil {
			return nil, err
		}
		name := strings.TrimSuffix(strings.TrimPrefix(a.Key, TrashPrefix), ".json")
		if ValidDropID(name) != nil || TrashKey(name) != a.Key {
			continue
		}
		t, err := ReadTrash(ctx, objs, name)
		if err != nil {
			if nserror.CodeOf(err) == nserror.InvalidInput || errors.Is(err, objstore.ErrNotFound) {
				continue
			}
			return nil, err
		}
		out = append(out, *t)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].DropID < out[j].DropID })
	return out, nil
}

// ReadTrash reads drop dropID's record: objstore.ErrNotFound when there
// is none, InvalidInput when it is not a record a drop writes.
func ReadTrash(ctx context.Context, objs *objstore.Store, dropID string) (*Trash, error) {
	b, err := objs.Get(ctx, TrashKey(dropID))
	if err != nil {
		return nil, err
	}
	var t Trash
	if err := json.Unmarshal(b, &t); err != nil || t.DropID != dropID || len(t.Rows) == 0 || len(t.ID) == 0 {
		return nil, nserror.New(nserror.InvalidInput, "the record of drop %s is not a drop record", dropID)
	}
	rows, err := t.Objects()
	if err != nil {
		return nil, nserror.New(nserror.InvalidInput, "the record of drop %s: %v", dropID, err)
	}
	t.objects = rows
	return &t, nil
}
