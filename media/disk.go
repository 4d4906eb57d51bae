package media

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"text/tabwriter"
	"time"

	"github.com/botd-dev/botd/diskbudget"
	"github.com/botd-dev/botd/groups"
	"github.com/botd-dev/botd/mediaregistry"
)

// CacheArea names the download cache in disk usage reports; groups go by
// their folder, which cannot contain parentheses.
const CacheArea = "(cache)"

// Areas are the places botd stores media bytes, for the disk budget: the
// download cache, and each group's media/ folder (its copies of fetched
// media and the inline copies the agent saved).
func Areas(cache *mediaregistry.Cache, groupsDir string, gs []*groups.Group) []diskbudget.Area {
	areas := []diskbudget.Area{{
		Name: CacheArea, Open: cache.OpenRoot, Dir: ".", Busy: cache.InProgress,
		Forget: func(ctx context.Context, sha string) error {
			err := cache.Forget(ctx, sha)
			if errors.Is(err, mediaregistry.ErrPendingUpload) {
				// The only copy until the upload succeeds.
				return fmt.Errorf("%w: %w", diskbudget.ErrKeep, err)
			}
			return err
		},
	}}
	for _, g := range gs {
		ws := groups.Workspace{Root: filepath.Join(groupsDir, g.Folder)}
		areas = append(areas, diskbudget.Area{Name: g.Folder, Open: ws.OpenRoot, Dir: "media", Busy: groups.Writing})
	}
	return areas
}

// GroupUsage is one group's media: what its chats posted, how much of it
// was fetched, and what its folder holds now.
type GroupUsage struct {
	Folder string
	mediaregistry.Stats
	Files    int
	OnDisk   int64
	LastUsed time.Time // most recent use of a file in its folder; zero if none
}

// DiskUsage is `botd media`: every group, the cache, against the budget.
type DiskUsage struct {
	Groups []GroupUsage
	Cache  diskbudget.AreaUsage
	// Other are the areas that are neither the cache nor a group (the
	// web channel's files).
	Other []diskbudget.AreaUsage
	Total int64
	Max   int64
}

// Usage measures the disk use of every group and the cache.
func Usage(ctx context.Context, reg *mediaregistry.Registry, b *diskbudget.Budget, gs []*groups.Group) (DiskUsage, error) {
	u, err := b.Scan(ctx)
	if err != nil {
		return DiskUsage{}, err
	}
	out := DiskUsage{Total: u.Total, Max: u.Max}
	byName := map[string]diskbudget.AreaUsage{}
	for _, a := range u.Areas {
		byName[a.Name] = a
	}
	out.Cache = byName[CacheArea]
	known := map[string]bool{CacheArea: true}
	for _, g := range gs {
		known[g.Folder] = true
	}
	for _, a := range u.Areas {
		if !known[a.Name] {
			out.Other = append(out.Other, a)
		}
	}
	for _, g := range gs {
		st, err := reg.Stats(ctx, g)
		if err != nil {
			return DiskUsage{}, err
		}
		a := byName[g.Folder]
		out.Groups = append(out.Groups, GroupUsage{Folder: g.Folder, Stats: st, Files: a.Files, OnDisk: a.Bytes, LastUsed: a.Newest})
	}
	return out, nil
}

// WriteTable prints u for people.
func (u DiskUsage) WriteTable(w io.Writer, now time.Time) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "GROUP\tREFS\tFETCHED\tPOSTED\tDOWNLOADED\tFILES\tON DISK\tLAST USED\t")
	for _, g := range u.Groups {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%s\t%d\t%s\t%s\t\n", g.Folder, g.Refs, g.Fetched, mediaregistry.FormatSize(g.Posted),
			mediaregistry.FormatSize(g.Downloaded), g.Files, mediaregistry.FormatSize(g.OnDisk), ago(now, g.LastUsed))
	}
	for _, a := range append([]diskbudget.AreaUsage{u.Cache}, u.Other...) {
		name := a.Name
		if name == "" {
			name = CacheArea
		}
		fmt.Fprintf(tw, "%s\t\t\t\t\t%d\t%s\t%s\t\n", name, a.Files, mediaregistry.FormatSize(a.Bytes), ago(now, a.Newest))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	pct := 0.0
	if u.Max > 0 {
		pct = 100 * float64(u.Total) / float64(u.Max)
	}
	_, err := fmt.Fprintf(w, "\nmedia on disk: %s of %s (media.max_disk_bytes), %.1f%%\n",
		mediaregistry.FormatSize(u.Total), mediaregistry.FormatSize(u.Max), pct)
	return err
}

func ago(now, t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return age(now.Sub(t)) + " ago"
}

// PruneOptions choose what Prune removes. Both empty: whatever the budget
// needs evicted, least recently used first.
type PruneOptions struct {
	// Group removes the group's copies, and the cached bytes no other
	// group's refs share.
	Group *groups.Group
	// OlderThan removes files last used longer ago than this.
	OlderThan time.Duration
}

// Prune removes stored media as o says; files a fetch is using stay.
func Prune(ctx context.Context, cache *mediaregistry.Cache, b *diskbudget.Budget, o PruneOptions) (diskbudget.Result, error) {
	if o.Group == nil && o.OlderThan <= 0 {
		return b.Sweep(ctx)
	}
	var f diskbudget.Filter
	if o.OlderThan > 0 {
		f.UsedBefore = b.Now().Add(-o.OlderThan)
	}
	if g := o.Group; g != nil {
		shas, err := cache.OnlyUsedBy(ctx, g)
		if err != nil {
			return diskbudget.Result{}, err
		}
		own := make(map[string]bool, len(shas))
		for _, s := range shas {
			own[s] = true
		}
		f.Areas = []string{CacheArea, g.Folder}
		f.Only = func(fl diskbudget.File) bool { return fl.Area == g.Folder || own[fl.Rel] }
	}
	return b.Prune(ctx, f)
}
