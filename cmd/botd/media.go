package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/botd-dev/botd/config"
	"github.com/botd-dev/botd/diskbudget"
	"github.com/botd-dev/botd/groups"
	"github.com/botd-dev/botd/media"
	"github.com/botd-dev/botd/mediaregistry"
	"github.com/botd-dev/botd/store"
)

const (
	mediaUsageLine = "botd media [usage] [--config FILE]"
	mediaPruneLine = "botd media prune [--group FOLDER] [--older-than AGE] [--config FILE]"
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
	}
	fmt.Fprintf(stderr, "Usage:\n  %s\n  %s\n", mediaUsageLine, mediaPruneLine)
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
	db := filepath.Join(cfg.DataDir, "botd.db")
	if _, err := os.Stat(db); err != nil {
		return nil, fail(1, "no media yet: %s does not exist (has `botd run` run with data_dir %s?)", db, cfg.DataDir)
	}
	st, err := store.Open(ctx, db)
	if err != nil {
		return nil, fail(1, "%v", err)
	}
	cache := mediaregistry.NewCache(filepath.Join(cfg.DataDir, "media"), st.DB, cfg.Media.CacheTTL.D())
	return &mediaEnv{
		cfg: cfg, set: set, st: st, reg: mediaregistry.New(st.DB, cfg.Media.RefTTL.D()), cache: cache,
		budget: diskbudget.New(cfg.Media.MaxDiskBytes, media.Areas(cache, cfg.GroupsDir, set.All()), nil),
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
	return u.WriteTable(stdout, time.Now())
}

func mediaPrune(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("media prune", mediaPruneLine,
		"Remove stored media: a group's copies and the cached bytes only it uses (--group), files not used for AGE "+
			"(--older-than, e.g. 12h or 7d), or both. Without either, evict least recently used files until "+
			"media.max_disk_bytes is kept. Files a fetch is using stay; refs stay valid and download again when asked.", stderr)
	group := fs.String("group", "", "prune this group folder's media")
	older := fs.String("older-than", "", "prune files last used longer ago than `AGE` (e.g. 36h, 7d)")
	cfgFlag := configFlag(fs)
	if err := parse(fs, args); err != nil {
		return err
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
			return fail(1, "no group with folder %q in the config", *group)
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
