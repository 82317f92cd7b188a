package lancemanifest

import (
	"net/url"
	"strings"
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

// TreePrefix is the listing prefix of the directories in which a table's
// branches keep their datasets (BranchChain's tree/).
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

// TagsPrefix is the listing prefix of the files in which Lance records a
// table's tags: _refs/tags/<name>.json.
func TagsPrefix(table string) string { return table + "/_refs/tags/" }

// TagKey is the key of the file that records tag.
func TagKey(table, tag string) string { return TagsPrefix(table) + tag + ".json" }
