package lancemanifest

import (
	"net/url"
	"strings"
)

// treeDir is the directory of a Lance table under which each branch keeps
// its own dataset: tree/<branch>/_versions/ holds the branch's manifests.
const treeDir = "tree"

// A Chain is a version chain: the table (its directory) and the branch
// ("" for main) whose manifests it holds. Lance keeps a branch's
// manifests under <table>/tree/<branch>/_versions/, so a branch's chain is
// a table of its own to the claim protocol, with its own head, records,
// staging and final paths; main's chain is the table itself.
type Chain struct {
	Table  string
	Branch string
}

// Key names the chain to the claim protocol and in storage: the table's
// directory for main, <table>/tree/<branch> for a branch.
func (c Chain) Key() string {
	if c.Branch == "" {
		return c.Table
	}
	return c.Table + "/" + treeDir + "/" + c.Branch
}

// TreePrefix is the listing prefix of the directories in which a table's
// branches keep their datasets (Chain.Key's tree/).
func TreePrefix(table string) string { return table + "/" + treeDir + "/" }

// BranchRefsPrefix is the listing prefix of the files in which Lance
// records a table's branches: _refs/branches/<name>.json, the name
// path-escaped ("team/x" is team%2Fx.json).
func BranchRefsPrefix(table string) string { return table + "/_refs/branches/" }

// BranchOfRef is the branch a file under BranchRefsPrefix records (its
// name relative to the prefix); ok is false for any other file.
func BranchOfRef(file string) (branch string, ok bool) {
	stem, found := strings.CutSuffix(file, ".json")
	if !found || strings.Contains(stem, "/") {
		return "", false
	}
	name, err := url.PathUnescape(stem)
	return name, err == nil && name != ""
}

// ParseChain is the chain a key names (Chain.Key), given which keys are
// tables: its table is the shortest prefix before a /tree/ that isTable
// accepts. A key that is a table, or has no such prefix, is main's chain
// of itself.
func ParseChain(key string, isTable func(string) bool) Chain {
	if isTable(key) {
		return Chain{Table: key}
	}
	sep := "/" + treeDir + "/"
	for i := 0; ; {
		j := strings.Index(key[i:], sep)
		if j < 0 {
			return Chain{Table: key}
		}
		if t := key[:i+j]; isTable(t) {
			return Chain{Table: t, Branch: key[i+j+len(sep):]}
		}
		i += j + 1
	}
}

// TagsPrefix is the listing prefix of the files in which Lance records a
// table's tags: _refs/tags/<name>.json.
func TagsPrefix(table string) string { return table + "/_refs/tags/" }

// TagKey is the key of the file that records tag.
func TagKey(table, tag string) string { return TagsPrefix(table) + tag + ".json" }
