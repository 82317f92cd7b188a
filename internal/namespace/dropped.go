package namespace

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/flightns/flightns/manifesttable"
	"github.com/flightns/flightns/objstore"
)

// DroppedPrefix holds one tombstone per table location whose data a drop
// deleted: a writer that still held the location (it staged a version
// before the drop) may write files there afterwards, which no table owns
// and no table's gc walks. `admin gc` collects them by these tombstones;
// a deregistered table's data, which stays by design, has none (a
// deregistration clears those an earlier drop left there or above).
const DroppedPrefix = manifesttable.Prefix + "_dropped/"

// Dropped is a tombstone: a table location whose data was deleted.
type Dropped struct {
	Key       string    `json:"-"` // the tombstone's own key
	Location  string    `json:"location"`
	DroppedAt time.Time `json:"dropped_at"`
}

func droppedKey(loc string) string {
	h := sha256.Sum256([]byte(loc))
	return DroppedPrefix + hex.EncodeToString(h[:]) + ".json"
}

// markDropped writes the tombstone of a location before its data goes.
func (s *Service) markDropped(ctx context.Context, loc string) error {
	b, err := json.Marshal(Dropped{Location: loc, DroppedAt: s.now().UTC()})
	if err != nil {
		return err
	}
	return s.objs.Put(ctx, droppedKey(loc), b)
}

// keepDeregistered clears the tombstones of loc and of every directory
// above it, before a deregistration: its table's data stays by design,
// and a tombstone left by an earlier drop there (the directory declared
// again since) would have `admin gc` collect that data as the dropped
// table's left-overs once no live table holds it. While the table is
// live those tombstones protect nothing gc would not spare anyway.
func (s *Service) keepDeregistered(ctx context.Context, loc string) error {
	var keys []string
	for dir := loc; ; {
		keys = append(keys, droppedKey(dir))
		i := strings.LastIndexByte(dir, '/')
		if i < 0 {
			break
		}
		dir = dir[:i]
	}
	if err := s.objs.DeleteMany(ctx, keys); err != nil {
		return fmt.Errorf("clearing an earlier drop's tombstones where a deregistered table's data stays: %w", err)
	}
	return nil
}

// deleteTableData deletes a dropped table's files but what sp spares
// (another table's: Sparing), its location's tombstone first (so that gc
// knows the location even if the deletion stops half-way). A location
// spared whole is another table's: nothing is deleted, and no tombstone
// is written.
func (s *Service) deleteTableData(ctx context.Context, loc string, sp Sparing) error {
	if sp.All {
		s.log.Warn("namespace: a dropped table's directory belongs to another table too: its files stay", "location", loc)
		return nil
	}
	if err := s.markDropped(ctx, loc); err != nil {
		return fmt.Errorf("marking a dropped table's location for gc: %w", err)
	}
	if len(sp.Dirs) > 0 {
		s.log.Warn("namespace: a dropped table's directory holds other tables' directories: their files stay", "location", loc, "kept", len(sp.Dirs))
	}
	if _, err := s.objs.DeletePrefixExcept(ctx, loc+"/", sp.Dirs); err != nil {
		return fmt.Errorf("deleting a dropped table's data: %w", err)
	}
	return nil
}

// DroppedTables lists the tombstones of dropped tables' locations.
func DroppedTables(ctx context.Context, objs *objstore.Store) ([]Dropped, error) {
	var out []Dropped
	for a, err := range objs.List(ctx, DroppedPrefix) {
		if err != nil {
			return nil, err
		}
		b, err := objs.Get(ctx, a.Key)
		if errors.Is(err, objstore.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		var d Dropped
		if err := json.Unmarshal(b, &d); err != nil || d.Location == "" || droppedKey(d.Location) != a.Key {
			continue // not ours: never acted on
		}
		d.Key = a.Key
		out = append(out, d)
	}
	return out, nil
}
