package repair

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/flightns/flightns/internal/namespace"
	"github.com/flightns/flightns/manifesttable"
)

// OverlappingLocation is the drift of a table directory that equals,
// contains or lies inside another table's, or a dropped table's that a
// drop keeps for undrop (catalogs written before directories were kept
// disjoint may hold such pairs). Reported only, once per pair, naming both: which table should
// move needs a person. Verify repairs no version record of a table in
// such a pair, and drops, purges and gc delete nothing another table's
// directory holds.
const OverlappingLocation DriftKind = "overlapping-location"

// dirOwner is a table directory and what holds it.
type dirOwner struct {
	loc, id string
	kept    bool // a dropped table's, kept for undrop
}

func (o dirOwner) String() string {
	if o.kept {
		return fmt.Sprintf("dropped table %s (kept for undrop)", quoted(o.id))
	}
	return "table " + quoted(o.id)
}

// overlaps reports every pair of tables (live or kept by a drop) whose
// directories meet, and returns the ids of the live tables concerned.
func overlaps(ctx context.Context, c Catalog, tables []Table, rep *VerifyReport) (map[string]bool, error) {
	var dirs []dirOwner
	for _, t := range tables {
		dirs = append(dirs, dirOwner{loc: t.Location, id: t.ID})
	}
	kept, err := namespace.KeptTables(ctx, c.Claims.Objects())
	if err != nil {
		return nil, err
	}
	for _, k := range kept {
		if checkLocation(k.Location) == nil {
			dirs = append(dirs, dirOwner{loc: k.Location, id: k.ID, kept: true})
		}
	}
	// Sorted by location+"/", the directories inside one (those starting
	// with location+"/") follow it in one run: each directory is compared
	// with that run alone.
	slices.SortFunc(dirs, func(a, b dirOwner) int {
		return strings.Compare(a.loc+"/", b.loc+"/")
	})
	involved := map[string]bool{}
	for i, a := range dirs {
		for _, b := range dirs[i+1:] {
			if !namespace.Inside(b.loc, a.loc) {
				break
			}
			how := "lies inside the directory " + quoted(a.loc) + " of " + a.String()
			if a.loc == b.loc {
				how = "shares its directory with " + a.String()
			}
			if b.kept && a.kept {
				continue // two drops: nothing live is at stake until an undrop, which refuses
			}
			d := Drift{Kind: OverlappingLocation, Table: b.id, Path: b.loc, Object: manifesttable.TypeTable,
				Detail: fmt.Sprintf("the directory of %s %s", b.String(), how)}
			rep.Drift = append(rep.Drift, d)
			for _, o := range []dirOwner{a, b} {
				if !o.kept {
					involved[o.id] = true
				}
			}
		}
	}
	return involved, nil
}
