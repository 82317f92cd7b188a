package namespace

import (
	"context"
	"errors"
	"sort"
	"strconv"

	"github.com/flightns/flightns/api"
	"github.com/flightns/flightns/internal/lancemanifest"
	"github.com/flightns/flightns/nserror"
)

// Unmanaged catalogs (Config.Unmanaged): Lance commits each version to the
// table's _versions directory itself, without CreateTableVersion, so the
// claim records do not follow the table. Version reads come from storage
// instead: the final manifests listed there are the table's versions.
// Commits through CreateTableVersion still work: the claim protocol
// re-reads storage when it is behind, and its final writes are create-only,
// so they and Lance's own commits can never both take a version.

// managed reports whether the catalog's tables commit through
// CreateTableVersion (managed_versioning in DeclareTable and
// DescribeTable).
func (s *Service) managed() bool { return !s.cfg.Unmanaged }

// storageVersions lists a table's committed versions from its _versions
// directory, ascending; a version found under both namings is the V2 one,
// as Lance reads it.
func (s *Service) storageVersions(ctx context.Context, loc string) ([]api.TableVersion, error) {
	prefix := lancemanifest.Dir(loc).Versions()
	byVersion := map[uint64]api.TableVersion{}
	schemes := map[uint64]lancemanifest.NamingScheme{}
	for a, err := range s.objs.List(ctx, prefix) {
		if err != nil {
			return nil, err
		}
		m, err := lancemanifest.ParseManifestName(a.Key[len(prefix):])
		if err != nil || m.Staging || m.Detached || m.Version == 0 {
			continue // latest_version_hint.json, staging and detached manifests
		}
		if prev, ok := schemes[m.Version]; ok && prev == lancemanifest.V2 {
			continue
		}
		tv := api.TableVersion{Version: int64(m.Version), ManifestPath: s.root.objectPath(a.Key), ETag: a.ETag}
		size := a.Size
		tv.ManifestSize = &size
		if !a.ModTime.IsZero() {
			ms := a.ModTime.UnixMilli()
			tv.TimestampMillis = &ms
		}
		byVersion[m.Version], schemes[m.Version] = tv, m.Scheme
	}
	out := make([]api.TableVersion, 0, len(byVersion))
	for _, tv := range byVersion {
		out = append(out, tv)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Version < out[j].Version })
	return out, nil
}

// storageVersion returns one version (0: the latest) from storage.
func (s *Service) storageVersion(ctx context.Context, id api.ID, loc string, version int64) (api.TableVersion, error) {
	all, err := s.storageVersions(ctx, loc)
	if err != nil {
		return api.TableVersion{}, err
	}
	if version == 0 {
		if len(all) == 0 {
			return api.TableVersion{}, nserror.New(nserror.TableVersionNotFound, "table %q has no versions", id.String())
		}
		return all[len(all)-1], nil
	}
	i := sort.Search(len(all), func(i int) bool { return all[i].Version >= version })
	if i == len(all) || all[i].Version != version {
		return api.TableVersion{}, nserror.New(nserror.TableVersionNotFound, "table %q has no version %d", id.String(), version)
	}
	return all[i], nil
}

// storageVersionPage is ListTableVersions of an unmanaged table: page_token
// is the last version of the previous page, as for managed tables.
func (s *Service) storageVersionPage(ctx context.Context, loc string, req api.ListTableVersionsRequest) (*api.ListTableVersionsResponse, error) {
	all, err := s.storageVersions(ctx, loc)
	if err != nil {
		return nil, err
	}
	desc := req.Descending != nil && *req.Descending
	if desc {
		for i, j := 0, len(all)-1; i < j; i, j = i+1, j-1 {
			all[i], all[j] = all[j], all[i]
		}
	}
	if req.PageToken != "" {
		after, err := strconv.ParseInt(req.PageToken, 10, 64)
		if err != nil {
			return nil, nserror.New(nserror.InvalidInput, "page_token %q is not one this server gave", req.PageToken)
		}
		i := 0
		for i < len(all) && ((!desc && all[i].Version <= after) || (desc && all[i].Version >= after)) {
			i++
		}
		all = all[i:]
	}
	resp := &api.ListTableVersionsResponse{Versions: all}
	if req.Limit != nil && *req.Limit > 0 && len(all) > *req.Limit {
		resp.Versions = all[:*req.Limit]
		resp.PageToken = strconv.FormatInt(resp.Versions[len(resp.Versions)-1].Version, 10)
	}
	return resp, nil
}

// latestVersion is a table's newest version (ok false: none yet): from the
// claims, or from storage when the catalog is unmanaged.
func (s *Service) latestVersion(ctx context.Context, id api.ID, loc string) (int64, bool, error) {
	if s.managed() {
		l, ok, err := s.claims.GetLatestManifestLocation(ctx, loc)
		return int64(l.Version), ok, err
	}
	tv, err := s.storageVersion(ctx, id, loc, 0)
	if errors.Is(err, nserror.ErrTableVersionNotFound) {
		return 0, false, nil
	}
	return tv.Version, err == nil, err
}

// versionExists fails with TableVersionNotFound unless the table has
// version v.
func (s *Service) versionExists(ctx context.Context, id api.ID, loc string, v int64) error {
	_, err := s.versionOf(ctx, id, loc, v)
	return err
}

// versionOf describes version v of the table, with its manifest's size:
// from the claim records, or from storage for an unmanaged catalog.
func (s *Service) versionOf(ctx context.Context, id api.ID, loc string, v int64) (api.TableVersion, error) {
	if !s.managed() {
		return s.storageVersion(ctx, id, loc, v)
	}
	l, err := s.liveVersion(ctx, id, loc, uint64(v))
	if err != nil {
		return api.TableVersion{}, err
	}
	return s.tableVersion(l), nil
}

// unmanagedWithVersions keeps the tables (full ids) that have a version in
// storage.
func (s *Service) unmanagedWithVersions(ctx context.Context, ids []string) ([]string, error) {
	var out []string
	for _, sid := range ids {
		id, err := api.ParseID(sid, "")
		if err != nil {
			return nil, err
		}
		loc, err := s.tableLoc(ctx, id)
		if nserror.CodeOf(err) == nserror.TableNotFound {
			continue // dropped meanwhile
		}
		if err != nil {
			return nil, err
		}
		if _, ok, err := s.latestVersion(ctx, id, loc); err != nil {
			return nil, err
		} else if ok {
			out = append(out, sid)
		}
	}
	return out, nil
}
