package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/term"

	"github.com/botd-dev/botd/channels/web"
	"github.com/botd-dev/botd/config"
	"github.com/botd-dev/botd/diskbudget"
	"github.com/botd-dev/botd/groups"
	"github.com/botd-dev/botd/media"
	"github.com/botd-dev/botd/mediaregistry"
	"github.com/botd-dev/botd/store"
)

const (
	mediaUsageLine   = "botd media [usage] [--config FILE]"
	mediaPruneLine   = "botd media prune [--group FOLDER] [--older-than AGE] [--yes] [--config FILE]"
	mediaMigrateLine = "botd media migrate --to s3|local [--config FILE]"
)

func cmdMedia(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	sub := "usage"
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		sub, args = args[0], args[1:]
	}
	switch sub {
	case "usage":
		return mediaUsage(ctx, args, stdout, stderr)
	case "prune":
		return mediaPrune(ctx, args, stdout, stderr)
	case "migrate":
		return mediaMigrate(ctx, args, stdout, stderr)
	}
	fmt.Fprintf(stderr, "Usage:\n  %s\n  %s\n  %s\n", mediaUsageLine, mediaPruneLine, mediaMigrateLine)
	return fail(2, "unknown media command %q", sub)
}

// mediaEnv is what both media commands read: safe beside a running
// daemon (SQLite in WAL mode; files a fetch holds are never removed).
type mediaEnv struct {
	cfg    *config.Config
	set    *groups.Set
	st     *store.Store
	reg    *mediaregistry.Registry
	cache  *mediaregistry.Cache
	budget *diskbudget.Budget
}

func openMedia(ctx context.Context, cfgFlag string) (*mediaEnv, error) {
	cfg, err := loadConfig(cfgFlag)
	if err != nil {
		return nil, err
	}
	set, err := groups.NewSet(cfg.AssistantName, cfg.GroupList())
	if err != nil {
		return nil, fail(1, "groups: %v", err)
	}
	if err := databaseExists(cfg, "no media yet"); err != nil {
		return nil, err
	}
	st, err := store.Connect(ctx, *config.Section[store.Config](cfg), cfg.DataDir)
	if err != nil {
		return nil, fail(1, "%v", err)
	}
	cache := mediaregistry.NewCache(filepath.Join(cfg.DataDir, "media"), st.DB, config.Section[media.Config](cfg).CacheTTL.D())
	if err := useStore(cfg, cache); err != nil {
		st.Close()
		return nil, err
	}
	return &mediaEnv{
		cfg: cfg, set: set, st: st, reg: mediaregistry.New(st.DB, config.Section[media.Config](cfg).RefTTL.D()), cache: cache,
		budget: newBudget(cfg, cache, set, nil),
	}, nil
}

func mediaUsage(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("media usage", mediaUsageLine,
		"Show the media of each group (refs shared, fetched, bytes posted against bytes downloaded, its folder's files) "+
			"and the download cache, against media.max_disk_bytes.", stderr)
	cfgFlag := configFlag(fs)
	if err := parse(fs, args); err != nil {
		return err
	}
	env, err := openMedia(ctx, *cfgFlag)
	if err != nil {
		return err
	}
	defer env.st.Close()
	u, err := media.Usage(ctx, env.reg, env.budget, env.set.All())
	if err != nil {
		return fail(1, "%v", err)
	}
	if err := u.WriteTable(stdout, time.Now()); err != nil {
		return err
	}
	if !env.cache.Remote() {
		return nil
	}
	pend, err := env.cache.PendingUploads(ctx)
	if err != nil {
		return fail(1, "%v", err)
	}
	fmt.Fprintf(stdout, "media store: %s, %d blob(s) waiting for upload\n", env.cache.ObjectStore().ID(), len(pend))
	if len(pend) > 0 && pend[len(pend)-1].LastError != "" {
		fmt.Fprintf(stdout, "last upload error: %s\n", pend[len(pend)-1].LastError)
	}
	return nil
}

func mediaMigrate(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("media migrate", mediaMigrateLine,
		"Copy the stored media bytes to the bucket of media.store (--to s3) or back to data_dir/media (--to local), "+
			"beside a running daemon: it keeps serving meanwhile, refs keep working, nothing is deleted. "+
			"Then set media.store.type to the target and restart botd; what it fetched in between is uploaded by it "+
			"(to s3) or was already local. The bucket settings are read from media.store whatever its type. "+
			"Running it again copies only what is missing.", stderr)
	to := fs.String("to", "", "`s3` or `local`")
	cfgFlag := configFlag(fs)
	if err := parse(fs, args); err != nil {
		return err
	}
	if *to != media.StoreS3 && *to != media.StoreLocal {
		fs.Usage()
		return fail(2, "--to must be s3 or local")
	}
	env, err := openMedia(ctx, *cfgFlag)
	if err != nil {
		return err
	}
	defer env.st.Close()
	b, err := bucket(env.cfg)
	if err != nil {
		return err
	}
	// Against a fresh cache handle: the store of the target, whatever the
	// configured type.
	cache := mediaregistry.NewCache(filepath.Join(env.cfg.DataDir, "media"), env.st.DB, config.Section[media.Config](env.cfg).CacheTTL.D())
	cache.UseStore(b)
	if err := b.Check(ctx); err != nil {
		return fail(1, "media.store: %v", err)
	}
	progress := func(info mediaregistry.ObjectInfo, err error) {
		if err != nil {
			fmt.Fprintf(stderr, "  %s: %v\n", info.SHA256, err)
		}
	}
	var res mediaregistry.MigrateResult
	if *to == media.StoreS3 {
		res, err = cache.MigrateToStore(ctx, progress)
	} else {
		need, nerr := cache.LocalBytes(ctx)
		if nerr != nil {
			return fail(1, "%v", nerr)
		}
		if need > env.budget.Max() {
			return fail(1, "the media in the bucket (%s) exceed media.max_disk_bytes (%s): raise it first, or the disk "+
				"budget would evict what the migration copies", mediaregistry.FormatSize(need), mediaregistry.FormatSize(env.budget.Max()))
		}
		res, err = cache.MigrateToLocal(ctx, progress)
	}
	if err != nil {
		return fail(1, "%v", err)
	}
	fmt.Fprintf(stdout, "%d blob(s) in %s, %d copied now (%s); %d missing from both places (their refs download again)\n",
		res.Blobs, *to, res.Copied, mediaregistry.FormatSize(res.Bytes), res.Missing)
	if res.Failed > 0 {
		return fail(1, "%d blob(s) could not be copied (first: %v); run it again", res.Failed, res.Err)
	}
	if config.Section[media.Config](env.cfg).Store.Type != *to {
		fmt.Fprintf(stdout, "now set media.store.type: %s and restart botd\n", *to)
	}
	return nil
}

func mediaPrune(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("media prune", mediaPruneLine,
		"Remove stored media: a group's copies and the cached bytes only it uses (--group), files not used for AGE "+
			"(--older-than, e.g. 12h or 7d), or both. Without either, evict least recently used files until "+
			"media.max_disk_bytes is kept. Files a fetch is using stay; refs stay valid and download again when asked.", stderr)
	group := fs.String("group", "", "prune this group folder's media")
	older := fs.String("older-than", "", "prune files last used longer ago than `AGE` (e.g. 36h, 7d)")
	yes := fs.Bool("yes", false, "without --group or --older-than: evict without asking")
	cfgFlag := configFlag(fs)
	if err := parse(fs, args); err != nil {
		return err
	}
	if *group == "" && *older == "" && !*yes {
		// Bare, it removes files of every group: a typo must not do that.
		if err := confirm(os.Stdin, stderr, "Remove the least recently used media of every group until media.max_disk_bytes is kept? [y/N] "); err != nil {
			return err
		}
	}
	var o media.PruneOptions
	if *older != "" {
		d, err := parseAge(*older)
		if err != nil {
			return fail(2, "--older-than: %v", err)
		}
		o.OlderThan = d
	}
	env, err := openMedia(ctx, *cfgFlag)
	if err != nil {
		return err
	}
	defer env.st.Close()
	if *group != "" {
		g, ok := env.set.ByFolder(*group)
		if !ok {
			return unknownGroup(env.set, *group)
		}
		o.Group = g
	}
	res, err := media.Prune(ctx, env.cache, env.budget, o)
	if err != nil {
		return fail(1, "%v", err)
	}
	fmt.Fprintf(stdout, "removed %d file(s), %s; media on disk now %s of %s\n", res.Files,
		mediaregistry.FormatSize(res.Freed), mediaregistry.FormatSize(res.Left), mediaregistry.FormatSize(env.budget.Max()))
	if res.InUse > 0 {
		fmt.Fprintf(stdout, "kept %d file(s) a fetch is using\n", res.InUse)
	}
	if res.Failed != nil {
		return fail(1, "some files could not be removed: %v", res.Failed)
	}
	return nil
}

// parseAge is a Go duration, or a whole number of days ("7d").
func parseAge(s string) (time.Duration, error) {
	if n, ok := strings.CutSuffix(s, "d"); ok {
		days, err := strconv.Atoi(n)
		if err != nil || days <= 0 {
			return 0, fmt.Errorf("invalid age %q (want e.g. 36h or 7d)", s)
		}
		return time.Duration(days) * 24 * time.Hour, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("invalid age %q (want e.g. 36h or 7d)", s)
	}
	return d, nil
}

// newBudget is the disk budget over diskAreas, shared among the groups:
// media.group_share each, or an equal part of the budget but at least two
// of the largest downloads, so that a group among many can still take a
// few files.
func newBudget(cfg *config.Config, cache *mediaregistry.Cache, set *groups.Set, log *slog.Logger) *diskbudget.Budget {
	mc := config.Section[media.Config](cfg)
	b := diskbudget.New(mc.MaxDiskBytes, diskAreas(cfg, cache, set), log)
	b.SetShares(len(set.All()), mc.GroupShare, 2*mc.MaxDownloadBytes)
	return b
}

// diskAreas is everything the disk budget counts: the cache, each group's
// media folder, and the web channel's files when it is on.
func diskAreas(cfg *config.Config, cache *mediaregistry.Cache, set *groups.Set) []diskbudget.Area {
	areas := media.Areas(cache, cfg.GroupsDir, set.All())
	if webSection(cfg).Enabled {
		areas = append(areas, web.DiskAreas(cfg.DataDir, set.All())...)
	}
	return areas
}

// confirm asks a person at a terminal; anything but y/yes, or no
// terminal to ask at, is a refusal that names --yes.
func confirm(in *os.File, out io.Writer, question string) error {
	if !term.IsTerminal(int(in.Fd())) {
		return fail(2, "botd media prune without --group or --older-than removes media of every group: add --yes to go ahead")
	}
	fmt.Fprint(out, question)
	line, _ := bufio.NewReader(io.LimitReader(in, 64)).ReadString('\n')
	switch strings.ToLower(strings.TrimSpace(line)) {
	case "y", "yes":
		return nil
	}
	return fail(1, "nothing removed")
}
