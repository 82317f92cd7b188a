package redisstate

import "testing"

// INFO replication's connected_slaves is how many replicas "auto" waits
// for (at most one).
func TestConnectedReplicasIsReadFromInfo(t *testing.T) {
	for info, want := range map[string]int{
		"# Replication\r\nrole:master\r\nconnected_slaves:2\r\n": 2,
		"# Replication\r\nrole:master\r\nconnected_slaves:0\r\n": 0,
		"# Replication\r\nrole:slave\r\n":                        0,
	} {
		if got := connectedReplicas(info); got != want {
			t.Errorf("%q: %d replicas, want %d", info, got, want)
		}
	}
}
