package namespace

// The service's parts. Service is the facade: it holds the catalog's
// state (the claim store, the __manifest table, the object index's Redis
// state, the root) and the helpers every operation shares, and serves
// the namespace and table operations itself (namespaces.go, tables.go,
// batch.go, cleanup.go, partition.go). The other operations fall along
// seams, each a part with the operations of one concern and nothing else:
//
//   - Access: roles and grants, the checks every operation makes
//     (access.go, grants.go).
//   - Drops: drops kept recoverable, undrop and the purge of the trash
//     (trash.go).
//   - Branches: a table's branches and tags, and restoring a version
//     (branches.go, branchwrite.go, tags.go, restoretable.go).
//   - Versions: a table's versions, their retention and its statistics
//     (versions.go, retention.go, stats.go).
//   - Index: what the catalog holds and where, as this process reads it
//     (indexread.go, LocationURI), the locations the object index
//     reserves (reserve.go) and the repairs of the index (restore.go).
//
// A part is a view of its service: it holds the service, whose state and
// shared helpers (row, tableLoc, durable, changeIndex, …) it works with,
// and adds only its own operations. It is made by the service's method of
// its name, costs nothing to make, and is valid as long as the service.
// Ops runs each operation on its part (ops.go's on).

// Access holds the service's access control: the catalog's grants and
// the checks of a caller's role.
type Access struct{ s *Service }

// Access is the service's access control.
func (s *Service) Access() Access { return Access{s} }

// Drops holds what drops keep recoverable: undrop and the purge of the
// trash.
type Drops struct{ s *Service }

// Drops are the service's dropped objects.
func (s *Service) Drops() Drops { return Drops{s} }

// Branches holds the operations on a table's branches and tags, and
// restoring an old version.
type Branches struct{ s *Service }

// Branches are the service's branch, tag and restore operations.
func (s *Service) Branches() Branches { return Branches{s} }

// Versions holds the operations on a table's versions, their retention
// and the table's statistics.
type Versions struct{ s *Service }

// Versions are the service's version operations.
func (s *Service) Versions() Versions { return Versions{s} }

// Index holds what the catalog holds and where: reads of this process's
// index of __manifest, the locations the object index reserves, and the
// repairs that rebuild the index from storage.
type Index struct{ s *Service }

// Index is the service's object index.
func (s *Service) Index() Index { return Index{s} }
