package api

import (
	"bytes"
	"encoding/json"
	"io"

	"github.com/flightns/flightns/nserror"
)

// DecodeRequest reads a request model from a JSON body, as every surface
// does: an empty body or the literal null (what Lance's Rust client sends
// to version/list) is the empty request; anything else must be one JSON
// object; unknown fields are ignored (newer clients send fields flightns
// does not use).
func DecodeRequest(body []byte, v any) error {
	b := bytes.TrimSpace(body)
	if len(b) == 0 || string(b) == "null" {
		return nil
	}
	if b[0] != '{' {
		return nserror.New(nserror.InvalidInput, "the request body must be a JSON object (the operation's request model)")
	}
	// Numbers decode as json.Number where the model leaves them open
	// (partition values, rows): int64 beyond 2^53 stays exact.
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		return nserror.New(nserror.InvalidInput, "the request body is not valid: %v", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nserror.New(nserror.InvalidInput, "the request body is not valid: data after the JSON object")
	}
	return nil
}

// The request and response models of the Lance Namespace operations, with
// the JSON field names of the REST protocol (the Flight actions use the same
// bodies). Fields the protocol has that flightns does not use (identity,
// context, vend_credentials, …) are accepted and ignored; branch selects
// the branch's own version chain.

// Common fields every request may carry.
type Common struct {
	Identity *Identity         `json:"identity,omitempty"`
	Context  map[string]string `json:"context,omitempty"`
}

// Identity carries credentials in the body (REST sends them as headers).
type Identity struct {
	APIKey    string `json:"api_key,omitempty"`
	AuthToken string `json:"auth_token,omitempty"`
}

// Properties are string key-value properties.
type Properties map[string]string

// Modes and behaviors, as the protocol spells them (matched without regard
// to case or underscores).
const (
	ModeCreate    = "Create"
	ModeExistOk   = "ExistOk"
	ModeOverwrite = "Overwrite"
	ModeFail      = "Fail"
	ModeSkip      = "Skip"

	BehaviorRestrict = "Restrict"
	BehaviorCascade  = "Cascade"
)

// CreateNamespaceRequest creates a namespace.
type CreateNamespaceRequest struct {
	Common
	ID         ID         `json:"id"`
	Mode       string     `json:"mode,omitempty"`
	Properties Properties `json:"properties,omitempty"`
}

// CreateNamespaceResponse answers CreateNamespace.
type CreateNamespaceResponse struct {
	TransactionID string     `json:"transaction_id,omitempty"`
	Properties    Properties `json:"properties"`
}

// ListNamespacesRequest lists the namespaces directly inside ID.
type ListNamespacesRequest struct {
	Common
	ID        ID     `json:"id"`
	PageToken string `json:"page_token,omitempty"`
	Limit     *int   `json:"limit,omitempty"`
}

// ListNamespacesResponse holds child names relative to the parent.
type ListNamespacesResponse struct {
	Namespaces []string `json:"namespaces"`
	PageToken  string   `json:"page_token,omitempty"`
}

// DescribeNamespaceRequest describes a namespace.
type DescribeNamespaceRequest struct {
	Common
	ID ID `json:"id"`
}

// DescribeNamespaceResponse holds a namespace's properties.
type DescribeNamespaceResponse struct {
	Properties Properties `json:"properties"`
}

// NamespaceExistsRequest asks whether a namespace exists.
type NamespaceExistsRequest struct {
	Common
	ID ID `json:"id"`
}

// DropNamespaceRequest drops a namespace.
type DropNamespaceRequest struct {
	Common
	ID       ID     `json:"id"`
	Mode     string `json:"mode,omitempty"`     // Fail (default) or Skip
	Behavior string `json:"behavior,omitempty"` // Restrict (default) or Cascade
}

// DropNamespaceResponse answers DropNamespace.
type DropNamespaceResponse struct {
	Properties    Properties `json:"properties,omitempty"`
	TransactionID []string   `json:"transaction_id,omitempty"`
}

// DeclareTableRequest declares a table (a location, no data yet).
type DeclareTableRequest struct {
	Common
	ID              ID         `json:"id"`
	Location        string     `json:"location,omitempty"`
	VendCredentials *bool      `json:"vend_credentials,omitempty"`
	Properties      Properties `json:"properties,omitempty"`
}

// DeclareTableResponse answers DeclareTable.
type DeclareTableResponse struct {
	TransactionID     string            `json:"transaction_id,omitempty"`
	Location          string            `json:"location"`
	StorageOptions    map[string]string `json:"storage_options,omitempty"`
	Properties        Properties        `json:"properties"`
	ManagedVersioning bool              `json:"managed_versioning"`
}

// RegisterTableRequest registers an existing table directory.
type RegisterTableRequest struct {
	Common
	ID         ID         `json:"id"`
	Location   string     `json:"location"`
	Mode       string     `json:"mode,omitempty"` // Create (default) or Overwrite
	Properties Properties `json:"properties,omitempty"`
}

// RegisterTableResponse answers RegisterTable.
type RegisterTableResponse struct {
	TransactionID string     `json:"transaction_id,omitempty"`
	Location      string     `json:"location"`
	Properties    Properties `json:"properties"`
}

// DescribeTableRequest describes a table.
type DescribeTableRequest struct {
	Common
	ID                   ID     `json:"id"`
	Version              *int64 `json:"version,omitempty"`
	Tag                  string `json:"tag,omitempty"`
	Branch               string `json:"branch,omitempty"`
	WithTableURI         *bool  `json:"with_table_uri,omitempty"`
	LoadDetailedMetadata *bool  `json:"load_detailed_metadata,omitempty"`
	CheckDeclared        *bool  `json:"check_declared,omitempty"`
	VendCredentials      *bool  `json:"vend_credentials,omitempty"`
}

// DescribeTableResponse describes a table.
type DescribeTableResponse struct {
	Table             string            `json:"table,omitempty"`
	Namespace         []string          `json:"namespace,omitempty"`
	Version           *int64            `json:"version,omitempty"`
	Location          string            `json:"location"`
	TableURI          string            `json:"table_uri,omitempty"`
	StorageOptions    map[string]string `json:"storage_options,omitempty"`
	Properties        Properties        `json:"properties"`
	ManagedVersioning bool              `json:"managed_versioning"`
	IsOnlyDeclared    *bool             `json:"is_only_declared,omitempty"`
	// With load_detailed_metadata, from the version's manifest.
	Schema   *JSONSchema       `json:"schema,omitempty"`
	Stats    *TableBasicStats  `json:"stats,omitempty"`
	Metadata map[string]string `json:"metadata,omitempty"`
}

// TableExistsRequest asks whether a table (at a version) exists.
type TableExistsRequest struct {
	Common
	ID      ID     `json:"id"`
	Version *int64 `json:"version,omitempty"`
}

// ListTablesRequest lists the tables directly inside namespace ID.
type ListTablesRequest struct {
	Common
	ID              ID     `json:"id"`
	PageToken       string `json:"page_token,omitempty"`
	Limit           *int   `json:"limit,omitempty"`
	IncludeDeclared *bool  `json:"include_declared,omitempty"`
}

// ListTablesResponse holds table names relative to the namespace (or full
// ids, for ListAllTables).
type ListTablesResponse struct {
	Tables    []string `json:"tables"`
	PageToken string   `json:"page_token,omitempty"`
}

// DropTableRequest drops a table: its record and its data.
type DropTableRequest struct {
	Common
	ID ID `json:"id"`
}

// DropTableResponse answers DropTable and DeregisterTable.
type DropTableResponse struct {
	TransactionID string     `json:"transaction_id,omitempty"`
	ID            []string   `json:"id"`
	Location      string     `json:"location"`
	Properties    Properties `json:"properties,omitempty"`
}

// DeregisterTableRequest forgets a table; its data stays.
type DeregisterTableRequest struct {
	Common
	ID ID `json:"id"`
}

// DeregisterTableResponse answers DeregisterTable.
type DeregisterTableResponse = DropTableResponse

// RenameTableRequest renames a table, within or across namespaces.
type RenameTableRequest struct {
	Common
	ID             ID     `json:"id"`
	NewTableName   string `json:"new_table_name"`
	NewNamespaceID *ID    `json:"new_namespace_id,omitempty"`
}

// RenameTableResponse answers RenameTable.
type RenameTableResponse struct {
	TransactionID string `json:"transaction_id,omitempty"`
}

// TableVersion describes one committed version.
type TableVersion struct {
	Version         int64             `json:"version"`
	ManifestPath    string            `json:"manifest_path"`
	ManifestSize    *int64            `json:"manifest_size,omitempty"`
	ETag            string            `json:"e_tag,omitempty"`
	TimestampMillis *int64            `json:"timestamp_millis,omitempty"`
	Metadata        map[string]string `json:"metadata,omitempty"`
}

// CreateTableVersionRequest commits a staged manifest as a version.
type CreateTableVersionRequest struct {
	Common
	ID           ID                `json:"id"`
	Version      int64             `json:"version"`
	Branch       string            `json:"branch,omitempty"`
	ManifestPath string            `json:"manifest_path"`
	ManifestSize *int64            `json:"manifest_size,omitempty"`
	ETag         string            `json:"e_tag,omitempty"`
	Metadata     map[string]string `json:"metadata,omitempty"`
	NamingScheme string            `json:"naming_scheme,omitempty"`
}

// CreateTableVersionResponse holds the committed version.
type CreateTableVersionResponse struct {
	TransactionID string        `json:"transaction_id,omitempty"`
	Version       *TableVersion `json:"version"`
}

// DescribeTableVersionRequest describes a version (absent: the latest).
type DescribeTableVersionRequest struct {
	Common
	ID      ID     `json:"id"`
	Version *int64 `json:"version,omitempty"`
	Branch  string `json:"branch,omitempty"`
}

// DescribeTableVersionResponse holds the version.
type DescribeTableVersionResponse struct {
	Version *TableVersion `json:"version"`
}

// ListTableVersionsRequest lists a table's versions.
type ListTableVersionsRequest struct {
	Common
	ID         ID     `json:"id"`
	Branch     string `json:"branch,omitempty"`
	PageToken  string `json:"page_token,omitempty"`
	Limit      *int   `json:"limit,omitempty"`
	Descending *bool  `json:"descending,omitempty"`
}

// ListTableVersionsResponse holds a page of versions.
type ListTableVersionsResponse struct {
	Versions  []TableVersion `json:"versions"`
	PageToken string         `json:"page_token,omitempty"`
}

// VersionRange is [StartVersion, EndVersion); {0, -1} is every version.
type VersionRange struct {
	StartVersion int64 `json:"start_version"`
	EndVersion   int64 `json:"end_version"`
}

// BatchDeleteTableVersionsRequest forgets version records (not data).
type BatchDeleteTableVersionsRequest struct {
	Common
	ID     ID             `json:"id"`
	Branch string         `json:"branch,omitempty"`
	Ranges []VersionRange `json:"ranges"`
}

// BatchDeleteTableVersionsResponse answers BatchDeleteTableVersions.
type BatchDeleteTableVersionsResponse struct {
	DeletedCount  int64  `json:"deleted_count"`
	TransactionID string `json:"transaction_id,omitempty"`
}

// CreateTableVersionEntry is one table's part of a batch.
type CreateTableVersionEntry struct {
	ID           ID                `json:"id"`
	Version      int64             `json:"version"`
	Branch       string            `json:"branch,omitempty"`
	ManifestPath string            `json:"manifest_path"`
	ManifestSize *int64            `json:"manifest_size,omitempty"`
	ETag         string            `json:"e_tag,omitempty"`
	Metadata     map[string]string `json:"metadata,omitempty"`
	NamingScheme string            `json:"naming_scheme,omitempty"`
}

// BatchCreateTableVersionsRequest commits versions of several tables, all
// or nothing.
type BatchCreateTableVersionsRequest struct {
	Common
	Entries []CreateTableVersionEntry `json:"entries"`
}

// BatchCreateTableVersionsResponse holds the versions, in entry order.
type BatchCreateTableVersionsResponse struct {
	TransactionID string         `json:"transaction_id,omitempty"`
	Versions      []TableVersion `json:"versions"`
}

// CommitTableOperation is one operation of BatchCommitTables: exactly one
// field is set.
type CommitTableOperation struct {
	DeclareTable        *DeclareTableRequest             `json:"declare_table,omitempty"`
	CreateTableVersion  *CreateTableVersionRequest       `json:"create_table_version,omitempty"`
	DeleteTableVersions *BatchDeleteTableVersionsRequest `json:"delete_table_versions,omitempty"`
	DeregisterTable     *DeregisterTableRequest          `json:"deregister_table,omitempty"`
	// Extensions of flightns (not in the Lance Namespace spec), for
	// serializable writes to partitioned tables.
	AssertTableVersion *AssertTableVersionRequest `json:"assert_table_version,omitempty"`
	SetReadVersion     *SetReadVersionRequest     `json:"set_read_version,omitempty"`
}

// AssertTableVersionRequest is a read-set guard of BatchCommitTables: the
// batch applies only if the table's latest version is still Version (0: the
// table has no version). A failed assertion is ConcurrentModification and
// nothing is applied.
type AssertTableVersionRequest struct {
	ID      ID    `json:"id"`
	Version int64 `json:"version"`
}

// SetReadVersionRequest sets a table's read_version column in __manifest,
// the version readers of a partitioned table read, in the same catalog
// sequence as the batch's claim. Version 0 means the version this batch
// commits for the table. read_version only moves up.
type SetReadVersionRequest struct {
	ID      ID    `json:"id"`
	Version int64 `json:"version,omitempty"`
}

// SetReadVersionResponse holds the read_version set.
type SetReadVersionResponse struct {
	Version int64 `json:"version"`
}

// BatchCommitTablesRequest applies operations atomically.
type BatchCommitTablesRequest struct {
	Common
	Operations []CommitTableOperation `json:"operations"`
}

// CommitTableResult is one operation's result: the field of its kind.
type CommitTableResult struct {
	DeclareTable        *DeclareTableResponse             `json:"declare_table,omitempty"`
	CreateTableVersion  *CreateTableVersionResponse       `json:"create_table_version,omitempty"`
	DeleteTableVersions *BatchDeleteTableVersionsResponse `json:"delete_table_versions,omitempty"`
	DeregisterTable     *DeregisterTableResponse          `json:"deregister_table,omitempty"`
	AssertTableVersion  *struct{}                         `json:"assert_table_version,omitempty"`
	SetReadVersion      *SetReadVersionResponse           `json:"set_read_version,omitempty"`
}

// BatchCommitTablesResponse holds the results, in operation order.
type BatchCommitTablesResponse struct {
	TransactionID string              `json:"transaction_id,omitempty"`
	Results       []CommitTableResult `json:"results"`
}

// RestoreTableRequest makes a version of a table (of its branch; main
// when none is named) its newest: the version's content committed as the
// next version, as Lance's restore does.
type RestoreTableRequest struct {
	Common
	ID      ID     `json:"id"`
	Version int64  `json:"version"`
	Branch  string `json:"branch,omitempty"`
}

// RestoreTableResponse answers RestoreTable.
type RestoreTableResponse struct {
	TransactionID string `json:"transaction_id,omitempty"`
}

// CreateTableBranchRequest makes a branch of a table from a version of
// one of its branches (main, at its latest, when none is named).
type CreateTableBranchRequest struct {
	Common
	ID          ID     `json:"id"`
	Name        string `json:"name"`
	FromBranch  string `json:"from_branch,omitempty"`
	FromVersion *int64 `json:"from_version,omitempty"`
}

// CreateTableBranchResponse answers CreateTableBranch.
type CreateTableBranchResponse struct {
	TransactionID string `json:"transaction_id,omitempty"`
}

// DeleteTableBranchRequest deletes a branch of a table.
type DeleteTableBranchRequest struct {
	Common
	ID   ID     `json:"id"`
	Name string `json:"name"`
}

// DeleteTableBranchResponse answers DeleteTableBranch.
type DeleteTableBranchResponse struct {
	TransactionID string `json:"transaction_id,omitempty"`
}

// UndropTableRequest puts a dropped table back (flightns): the drop
// DropID of table ID, or its newest drop when DropID is empty.
type UndropTableRequest struct {
	Common
	ID     ID     `json:"id"`
	DropID string `json:"drop_id,omitempty"`
}

// UndropNamespaceRequest puts a dropped namespace back with what the drop
// removed inside it (flightns); DropID as UndropTableRequest's.
type UndropNamespaceRequest struct {
	Common
	ID     ID     `json:"id"`
	DropID string `json:"drop_id,omitempty"`
}

// UndropResponse names what came back.
type UndropResponse struct {
	DropID     string   `json:"drop_id"`
	Namespaces []string `json:"namespaces,omitempty"`
	Tables     []string `json:"tables,omitempty"`
}
