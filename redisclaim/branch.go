package redisclaim

import (
	"context"
	"strings"

	"github.com/flightns/flightns/nserror"
)

// treeDir is the directory of a Lance table under which each branch keeps
// its own dataset: tree/<branch>/_versions/ holds the branch's manifests.
const treeDir = "tree"

// BranchChain is the table key of a branch's version chain: Lance keeps a
// branch's manifests under <table>/tree/<branch>/_versions/, so the chain
// is a table of its own to the claim protocol, with its own head, records,
// staging and final paths. Main's chain is the table itself.
func BranchChain(table, branch string) string {
	if branch == "" {
		return table
	}
	return table + "/" + treeDir + "/" + branch
}

// SplitChain splits a chain key into its table and branch, given which
// keys are tables: the shortest prefix before a /tree/ that isTable
// accepts. A key that is a table, or has no such prefix, is main's chain
// of itself.
func SplitChain(chain string, isTable func(string) bool) (table, branch string) {
	if isTable(chain) {
		return chain, ""
	}
	sep := "/" + treeDir + "/"
	for i := 0; ; {
		j := strings.Index(chain[i:], sep)
		if j < 0 {
			return chain, ""
		}
		if t := chain[:i+j]; isTable(t) {
			return t, chain[i+j+len(sep):]
		}
		i += j + 1
	}
}

// Fork prepares a branch's chain for a commit of version, the branch's
// first when the chain has none: Lance starts a branch at the version it
// forks from, so the chain's head becomes version - 1. A chain with
// versions in Redis whose manifests are all gone from storage (Lance
// removed the branch) is forgotten first, so the branch can be made
// again; a chain with versions in storage is left alone, and the claim
// decides (ConcurrentModification for a version taken).
func (s *Store) Fork(ctx context.Context, chain string, version uint64) error {
	if err := checkTable(chain); err != nil {
		return err
	}
	if err := checkVersion(version); err != nil {
		return err
	}
	head, _, ok, err := s.GetLatestVersion(ctx, chain)
	if err != nil {
		return err
	}
	if ok && head+1 == version {
		return nil
	}
	reset := "0"
	if ok {
		found, err := s.scanVersions(ctx, chain)
		if err != nil {
			return err
		}
		if len(found) > 0 {
			return nil
		}
		reset = "1"
	}
	var r reply
	err = s.withEpoch(ctx, func() (reply, error) {
		r, err = run(ctx, s.pipe, s.sc.fork,
			[]string{s.k.Epoch(), s.k.Heads(), s.k.Seq(), s.k.Log(), s.k.Versions(chain), s.k.Index(chain)},
			chain, version, reset, s.logMaxLen)
		return r, err
	})
	if err != nil {
		return err
	}
	if r.status() == "BUSY" {
		return nserror.New(nserror.ConcurrentModification, "branch chain %s has a commit in flight", chain)
	}
	return nil
}
