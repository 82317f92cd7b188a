package auth

import "testing"

// A full map drops only what is stale, and says whether a new entry fits.
func TestRoomForDropsOnlyStaleEntries(t *testing.T) {
	m := map[int]int{1: 0, 2: 5, 3: 0}
	stale := func(v int) bool { return v == 0 }
	if !roomFor(m, 4, stale) || len(m) != 3 {
		t.Fatalf("a map with room was pruned: %v", m)
	}
	if !roomFor(m, 3, stale) || len(m) != 1 || m[2] != 5 {
		t.Fatalf("a full map with stale entries: %v", m)
	}
	m[4] = 6
	if roomFor(m, 2, stale) || len(m) != 2 {
		t.Fatalf("a full map with nothing stale: %v", m)
	}
}
