package lancemanifest

import (
	"net/url"
	"strings"
)

// treeDir is the directory of a Lance table under which each branch keeps
// its own dataset: tree/<branch>/_versions/ holds the branch's manifests.
const treeDir = "tree"

// A Dir is the directory of a Lance dataset in object storage, relative
// to the catalog's root and without a trailing slash: a table's location,
// or a branch's tree/<branch> inside it. Its methods are Lance's layout;
// every key flightns reads or writes inside a dataset comes from one of
// them, so no caller joins path segments of its own.
type Dir string

// Versions is the listing prefix of the dataset's manifests.
func (d Dir) Versions() string { return string(d) + "/" + VersionsDir + "/" }

// Manifest is the final manifest key of version v.
func (d Dir) Manifest(s NamingScheme, v uint64) string { return d.Versions() + ManifestName(s, v) }

// VersionHint is the file in which Lance records the dataset's latest
// version after each commit ({"version":N}), a hint its readers check.
func (d Dir) VersionHint() string { return d.Versions() + "latest_version_hint.json" }

// Transactions is the directory of the dataset's transaction files.
func (d Dir) Transactions() string { return string(d) + "/_transactions/" }

// Refs is the directory of the dataset's tags and branch records.
func (d Dir) Refs() string { return string(d) + "/_refs/" }

// Tags is the listing prefix of the files in which Lance records the
// dataset's tags: _refs/tags/<name>.json.
func (d Dir) Tags() string { return d.Refs() + "tags/" }

// Tag is the key of the file that records tag.
func (d Dir) Tag(tag string) string { return d.Tags() + tag + ".json" }

// BranchRefs is the listing prefix of the files in which Lance records
// the dataset's branches: _refs/branches/<name>.json, the name
// path-escaped ("team/x" is team%2Fx.json).
func (d Dir) BranchRefs() string { return d.Refs() + "branches/" }

// Tree is the listing prefix of the directories in which the dataset's
// branches keep their datasets (Chain.Dir's tree/).
func (d Dir) Tree() string { return string(d) + "/" + treeDir + "/" }

// Rel is key relative to the directory; ok is false for a key outside it.
func (d Dir) Rel(key string) (rel string, ok bool) { return strings.CutPrefix(key, string(d)+"/") }

// A Chain is a version chain: the table (its directory) and the branch
// ("" for main) whose manifests it holds. Lance keeps a branch's
// manifests under <table>/tree/<branch>/_versions/, so a branch's chain is
// a table of its own to the claim protocol, with its own head, records,
// staging and final paths; main's chain is the table itself.
type Chain struct {
	Table  Dir
	Branch string
}

// Dir is the directory of the chain's dataset, which also names the chain
// to the claim protocol: the table's directory for main,
// <table>/tree/<branch> for a branch.
func (c Chain) Dir() Dir {
	if c.Branch == "" {
		return c.Table
	}
	return Dir(c.Table.Tree() + c.Branch)
}

// Key is the chain's directory as the claim protocol names the chain (a
// redisclaim table).
func (c Chain) Key() string { return string(c.Dir()) }

// BranchOfRef is the branch a file under Dir.BranchRefs records (its
// name relative to the prefix); ok is false for any other file.
func BranchOfRef(file string) (branch string, ok bool) {
	stem, found := strings.CutSuffix(file, ".json")
	if !found || strings.Contains(stem, "/") {
		return "", false
	}
	name, err := url.PathUnescape(stem)
	return name, err == nil && name != ""
}

// ParseChain is the chain that key (a Chain.Dir, as the claim protocol
// names it) is, given which keys are table locations: its table is the
// shortest prefix before a /tree/ that isTable accepts. A key that is a
// table, or has no such prefix, is main's chain of itself.
func ParseChain(key string, isTable func(string) bool) Chain {
	if isTable(key) {
		return Chain{Table: Dir(key)}
	}
	sep := "/" + treeDir + "/"
	for i := 0; ; {
		j := strings.Index(key[i:], sep)
		if j < 0 {
			return Chain{Table: Dir(key)}
		}
		if t := key[:i+j]; isTable(t) {
			return Chain{Table: Dir(t), Branch: key[i+j+len(sep):]}
		}
		i += j + 1
	}
}
