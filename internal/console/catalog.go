package console

import (
	"context"
	"math"
	"net/http"
	"sort"
	"strconv"
	"strings"

	"github.com/flightns/flightns/api"
	"github.com/flightns/flightns/internal/repair"
	"github.com/flightns/flightns/manifesttable"
	"github.com/flightns/flightns/nserror"
)

// idOf is the object id of a call: its repeated id parameters, one per
// level (none: the root namespace).
func idOf(r *http.Request) api.ID {
	return api.ID(append([]string{}, r.URL.Query()["id"]...))
}

// intParam reads an optional integer parameter within [lo, hi].
func intParam(r *http.Request, name string, def, lo, hi int64) (int64, error) {
	s := r.URL.Query().Get(name)
	if s == "" {
		return def, nil
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil || v < lo || v > hi {
		return 0, nserror.New(nserror.InvalidInput, "%s %q: want an integer from %d to %d", name, s, lo, hi)
	}
	return v, nil
}

// child is one entry of the namespace tree.
type child struct {
	ID         api.ID `json:"id"`
	Name       string `json:"name"`
	Namespaces int64  `json:"namespaces"`
	Tables     int64  `json:"tables"`
}

// namespaces lists a namespace's children (a page, through
// ListNamespaces) with the counts of their own children, as the caller
// may see them (the SQL gate, in the caller's scope).
func (c *console) namespaces(w http.ResponseWriter, r *http.Request) {
	ctx, id := r.Context(), idOf(r)
	limit, err := intParam(r, "limit", 100, 1, 1000)
	if err != nil {
		writeError(w, c.log, err)
		return
	}
	lim := int(limit)
	list, err := call[*api.ListNamespacesResponse](ctx, c, api.OpListNamespaces,
		api.ListNamespacesRequest{ID: id, PageToken: r.URL.Query().Get("page_token"), Limit: &lim})
	if err != nil {
		writeError(w, c.log, err)
		return
	}
	nsCounts, tableCounts, err := c.childCounts(ctx, id, list.Namespaces)
	if err != nil {
		writeError(w, c.log, err)
		return
	}
	out := struct {
		ID         api.ID  `json:"id"`
		Namespaces []child `json:"namespaces"`
		Next       string  `json:"next_page_token"`
	}{ID: id, Namespaces: []child{}, Next: list.PageToken}
	for _, name := range list.Namespaces {
		out.Namespaces = append(out.Namespaces, child{ID: append(append(api.ID{}, id...), name), Name: name,
			Namespaces: nsCounts[name], Tables: tableCounts[name]})
	}
	writeJSON(w, http.StatusOK, out)
}

// childCounts counts, for each of parent's children named, its child
// namespaces and its tables: two grouped queries through the SQL gate
// (nothing without SQL).
func (c *console) childCounts(ctx context.Context, parent api.ID, children []string) (ns, tables map[string]int64, err error) {
	ns, tables = map[string]int64{}, map[string]int64{}
	if c.cfg.SQL == nil || len(children) == 0 {
		return ns, tables, nil
	}
	prefix := ""
	if !parent.IsRoot() {
		prefix = parent.String() + api.Delimiter
	}
	args := []any{int64(len(prefix) + 1), prefix}
	for _, name := range children {
		args = append(args, name)
	}
	in := strings.TrimSuffix(strings.Repeat("?, ", len(children)), ", ")
	for rel, into := range map[string]map[string]int64{"namespaces": ns, "tables": tables} {
		// The grandchildren of parent: ids of exactly two more levels.
		q := `SELECT child, count(*) AS n FROM (
			SELECT split_part(rest, '` + api.Delimiter + `', 1) AS child, rest FROM (
				SELECT substr(object_id, ?) AS rest FROM ` + rel + ` WHERE starts_with(object_id, ?)))
			WHERE len(string_split(rest, '` + api.Delimiter + `')) = 2 AND child IN (` + in + `) GROUP BY child`
		rows, _, err := c.rows(ctx, q, args...)
		if err != nil {
			return nil, nil, err
		}
		for _, row := range rows {
			name, _ := row[0].(string)
			n, _ := row[1].(int64)
			into[name] = n
		}
	}
	return ns, tables, nil
}

// namespace describes a namespace: its properties, its tables (a page),
// and whether it is a partitioned table (the planner's).
func (c *console) namespace(w http.ResponseWriter, r *http.Request) {
	ctx, id := r.Context(), idOf(r)
	desc, err := call[*api.DescribeNamespaceResponse](ctx, c, api.OpDescribeNamespace, api.DescribeNamespaceRequest{ID: id})
	if err != nil {
		writeError(w, c.log, err)
		return
	}
	lim := 1000
	list, err := call[*api.ListTablesResponse](ctx, c, api.OpListTables,
		api.ListTablesRequest{ID: id, PageToken: r.URL.Query().Get("page_token"), Limit: &lim})
	if err != nil {
		writeError(w, c.log, err)
		return
	}
	type table struct {
		ID   api.ID `json:"id"`
		Name string `json:"name"`
	}
	out := struct {
		ID          api.ID         `json:"id"`
		Properties  api.Properties `json:"properties"`
		Tables      []table        `json:"tables"`
		Next        string         `json:"next_page_token"`
		Partitioned bool           `json:"partitioned"`
	}{ID: id, Properties: desc.Properties, Tables: []table{}, Next: list.PageToken}
	for _, name := range list.Tables {
		out.Tables = append(out.Tables, table{ID: append(append(api.ID{}, id...), name), Name: name})
	}
	if c.cfg.Planner != nil && !id.IsRoot() {
		_, err := c.cfg.Planner.Describe(ctx, id)
		out.Partitioned = err == nil
	}
	writeJSON(w, http.StatusOK, out)
}

// describe is DescribeTable for the caller, never with vended
// credentials; detailed adds the latest manifest's schema.
func (c *console) describe(ctx context.Context, id api.ID, detailed bool) (*api.DescribeTableResponse, error) {
	no := false
	return call[*api.DescribeTableResponse](ctx, c, api.OpDescribeTable,
		api.DescribeTableRequest{ID: id, LoadDetailedMetadata: &detailed, VendCredentials: &no})
}

// table is the table page: its description, schema, branches and tags.
func (c *console) table(w http.ResponseWriter, r *http.Request) {
	ctx, id := r.Context(), idOf(r)
	seq := c.catalogSeq(ctx) // before the reads: they see it, and the feed what follows
	desc, err := c.describe(ctx, id, false)
	if err != nil {
		writeError(w, c.log, err)
		return
	}
	type field struct {
		Name     string `json:"name"`
		Type     string `json:"type"`
		Nullable bool   `json:"nullable"`
	}
	type branch struct {
		Name          string `json:"name"`
		ParentBranch  string `json:"parent_branch"`
		ParentVersion int64  `json:"parent_version"`
	}
	type tag struct {
		Name    string `json:"name"`
		Branch  string `json:"branch"`
		Version int64  `json:"version"`
	}
	out := struct {
		ID                api.ID         `json:"id"`
		Location          string         `json:"location"`
		ManagedVersioning bool           `json:"managed_versioning"`
		Version           *int64         `json:"version"`
		Properties        api.Properties `json:"properties"`
		Schema            []field        `json:"schema"`
		Branches          []branch       `json:"branches"`
		Tags              []tag          `json:"tags"`
		// SchemaError says why the schema is missing: no version yet, or
		// a manifest the reader cannot parse.
		SchemaError string `json:"schema_error,omitempty"`
		// Seq is the catalog sequence this answer is at (catalogSeq).
		Seq uint64 `json:"seq"`
	}{Seq: seq, ID: id, Location: desc.Location, ManagedVersioning: desc.ManagedVersioning, Version: desc.Version,
		Properties: desc.Properties, Schema: []field{}, Branches: []branch{}, Tags: []tag{}}
	switch detailed, err := c.describe(ctx, id, true); {
	case err != nil:
		out.SchemaError = messageOf(err)
	case detailed.Schema == nil:
		out.SchemaError = "no version yet"
	default:
		for _, f := range detailed.Schema.Fields {
			out.Schema = append(out.Schema, field{Name: f.Name, Type: typeName(f.Type.Type, len(f.Type.Fields)), Nullable: f.Nullable})
		}
	}
	lim := 1000
	branches, err := call[*api.ListTableBranchesResponse](ctx, c, api.OpListTableBranches, api.ListTableBranchesRequest{ID: id, Limit: &lim})
	if err != nil {
		writeError(w, c.log, err)
		return
	}
	for name, b := range branches.Branches {
		out.Branches = append(out.Branches, branch{Name: name, ParentBranch: b.ParentBranch, ParentVersion: b.ParentVersion})
	}
	sort.Slice(out.Branches, func(i, j int) bool { return out.Branches[i].Name < out.Branches[j].Name })
	tags, err := call[*api.ListTableTagsResponse](ctx, c, api.OpListTableTags, api.ListTableTagsRequest{ID: id, Limit: &lim})
	if err != nil {
		writeError(w, c.log, err)
		return
	}
	for name, t := range tags.Tags {
		out.Tags = append(out.Tags, tag{Name: name, Branch: t.Branch, Version: t.Version})
	}
	sort.Slice(out.Tags, func(i, j int) bool { return out.Tags[i].Name < out.Tags[j].Name })
	writeJSON(w, http.StatusOK, out)
}

// typeName is a schema type for people: a struct or list shows how many
// fields it has.
func typeName(t string, children int) string {
	if children > 0 {
		return t + "<" + strconv.Itoa(children) + " fields>"
	}
	return t
}

// versions pages a table's versions newest first, from table_versions
// through the SQL gate (a table with 100,000 versions reads one page).
func (c *console) versions(w http.ResponseWriter, r *http.Request) {
	id := idOf(r)
	before, err := intParam(r, "before", math.MaxInt64, 1, math.MaxInt64)
	if err == nil {
		var limit int64
		if limit, err = intParam(r, "limit", 100, 1, 1000); err == nil {
			err = c.versionPage(w, r, id, before, limit)
		}
	}
	if err != nil {
		writeError(w, c.log, err)
	}
}

func (c *console) versionPage(w http.ResponseWriter, r *http.Request, id api.ID, before, limit int64) error {
	ctx := r.Context()
	if _, err := c.describe(ctx, id, false); err != nil { // the table exists, and the caller may read it
		return err
	}
	if c.cfg.SQL == nil {
		return nserror.New(nserror.ServiceUnavailable, "SQL is off (no Flight SQL surface): the versions are read through it")
	}
	rows, _, err := c.rows(ctx, `SELECT version, coalesce(branch, '') AS branch, committed_at, num_rows, num_fragments, data_bytes
		FROM table_versions WHERE table_id = ? AND coalesce(branch, '') = ? AND version < ?
		ORDER BY version DESC LIMIT ?`, id.String(), r.URL.Query().Get("branch"), before, limit)
	if err != nil {
		return err
	}
	type version struct {
		Version     any `json:"version"`
		Branch      any `json:"branch"`
		CommittedAt any `json:"committed_at"`
		Rows        any `json:"rows"`
		Fragments   any `json:"fragments"`
		Bytes       any `json:"bytes"`
	}
	out := struct {
		Versions   []version `json:"versions"`
		NextBefore any       `json:"next_before"`
	}{Versions: []version{}}
	for _, row := range rows {
		out.Versions = append(out.Versions, version{row[0], row[1], row[2], row[3], row[4], row[5]})
	}
	if int64(len(rows)) == limit {
		out.NextBefore = rows[len(rows)-1][0]
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// verify is `flightns admin verify` of one table, read-only: its version
// records against its manifests (repair.VerifyTable).
func (c *console) verify(w http.ResponseWriter, r *http.Request) {
	ctx, id := r.Context(), idOf(r)
	if _, err := c.describe(ctx, id, false); err != nil {
		writeError(w, c.log, err)
		return
	}
	row, ok := c.cfg.Service.Table().Object(manifesttable.TypeTable, id.String())
	if !ok {
		writeError(w, c.log, nserror.New(nserror.TableNotFound, "table %s not found", id))
		return
	}
	// One verification at a time: it reads every version record of the
	// table, which a caller must not multiply against the commits.
	select {
	case c.verifying <- struct{}{}:
		defer func() { <-c.verifying }()
	default:
		writeError(w, c.log, nserror.New(nserror.Throttling, "another verification is running; try again when it ends"))
		return
	}
	rep, err := repair.VerifyTable(ctx, repair.CatalogOf(c.cfg.Service), repair.Table{ID: row.ObjectID, Location: row.Location})
	if err != nil {
		writeError(w, c.log, err)
		return
	}
	type problem struct {
		Kind   string `json:"kind"`
		Detail string `json:"detail"`
	}
	out := struct {
		OK       bool      `json:"ok"`
		Checked  int       `json:"checked"`
		Problems []problem `json:"problems"`
	}{OK: len(rep.Drift) == 0, Checked: rep.Versions, Problems: []problem{}}
	for _, d := range rep.Drift {
		out.Problems = append(out.Problems, problem{Kind: string(d.Kind), Detail: strings.TrimPrefix(d.String(), string(d.Kind)+": ")})
	}
	writeJSON(w, http.StatusOK, out)
}
