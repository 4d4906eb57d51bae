package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/botd-dev/botd/config"
	"github.com/botd-dev/botd/store"
)

const usageLine = "botd usage [--group FOLDER] [--since AGE|DATE] [--runs N] [--config FILE]"

// maxUsageRuns bounds --runs: a listing to read, not an export.
const maxUsageRuns = 1000

func cmdUsage(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("usage", usageLine,
		"Print what the model calls and media generation cost, per group, day and model: attempts (failed ones too), tokens "+
			"(input, output, cache read, cache write, reasoning), media made (images, seconds of audio and video) and cost in USD; "+
			"then where each group's input tokens went each day: the fixed prompt, the tools, the conversation and media; "+
			"with --runs, the same for each of the newest runs.", stderr)
	group := fs.String("group", "", "only this group folder")
	since := fs.String("since", "30d", "from this long ago (e.g. 7d, 36h) or this date (2026-11-01)")
	nRuns := fs.Int("runs", 0, fmt.Sprintf("also list this many of the newest runs (of --group), each with where its input tokens went (at most %d)", maxUsageRuns))
	cfgFlag := configFlag(fs)
	cfg, err := parseAndLoad(fs, args, cfgFlag)
	if err != nil {
		return err
	}
	if *group != "" {
		known := false
		var folders []string
		for _, g := range cfg.Groups {
			known = known || g.Folder == *group
			folders = append(folders, g.Folder)
		}
		if !known {
			kept := keptFolders(ctx, cfg)
			known = slices.Contains(kept, *group)
			folders = append(folders, kept...)
		}
		if !known {
			return fail(2, "--group: no group %q in the config or approved live (groups: %s)", *group, strings.Join(folders, ", "))
		}
	}
	if *nRuns < 0 || *nRuns > maxUsageRuns {
		return fail(2, "--runs: %d is not between 0 and %d", *nRuns, maxUsageRuns)
	}
	loc := cfg.Location()
	from, err := time.ParseInLocation(time.DateOnly, *since, loc)
	if err != nil {
		d, aerr := parseAge(*since)
		if aerr != nil {
			return fail(2, "--since: %q is neither an age (7d, 36h) nor a date (2026-11-01)", *since)
		}
		from = time.Now().Add(-d)
	}
	if err := databaseExists(cfg, "no usage yet"); err != nil {
		return err
	}
	st, err := store.Connect(ctx, *config.Section[store.Config](cfg), cfg.DataDir)
	if err != nil {
		return fail(1, "%v", err)
	}
	defer st.Close()
	rows, err := st.Usage(ctx, *group, from, loc)
	if err != nil {
		return fail(1, "%v", err)
	}
	if len(rows) == 0 {
		fmt.Fprintf(stdout, "no model calls since %s\n", from.In(loc).Format("2006-01-02 15:04"))
		return usageRuns(ctx, st, stdout, *group, *nRuns, loc)
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "GROUP\tDAY\tMODEL\tCALLS\tFAILED\tINPUT\tOUTPUT\tCACHE READ\tCACHE WRITE\tREASONING\tMEDIA\tCOST (USD)\t")
	var total int64
	for _, r := range rows {
		cost := fmt.Sprintf("%.4f", float64(r.CostMicrocents)/1e8)
		if r.Unpriced > 0 {
			cost += fmt.Sprintf(" (+%d unpriced)", r.Unpriced)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%s\t%s\t\n", r.Folder, r.Day, r.Model, r.Attempts, r.Failed,
			r.Input, r.Output, r.CacheRead, r.CacheWrite, r.Reasoning, mediaUnits(r), cost)
		total += r.CostMicrocents
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if _, err := fmt.Fprintf(stdout, "\ntotal: %.4f USD\n", float64(total)/1e8); err != nil {
		return err
	}
	splits, err := st.UsageSplit(ctx, *group, from, loc)
	if err != nil {
		return fail(1, "%v", err)
	}
	if err := printSplit(stdout, splits); err != nil {
		return err
	}
	return usageRuns(ctx, st, stdout, *group, *nRuns, loc)
}

// usageRuns lists the n newest runs (of group; "" every group), each
// with its input tokens and where they went: "—" for a run recorded
// before botd split the bill.
func usageRuns(ctx context.Context, st *store.Store, w io.Writer, group string, n int, loc *time.Location) error {
	if n == 0 {
		return nil
	}
	runs, err := st.FindRuns(ctx, store.RunFilter{Folder: group, Limit: n})
	if err != nil {
		return fail(1, "%v", err)
	}
	if len(runs) == 0 {
		_, err := fmt.Fprintln(w, "\nno runs yet")
		return err
	}
	if _, err := fmt.Fprintf(w, "\nThe newest %d run(s), newest first, and where their input tokens went:\n", len(runs)); err != nil {
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "STARTED\tGROUP\tMODEL\tOUTCOME\tINPUT\tFIXED PROMPT\tTOOLS\tCONVERSATION\tMEDIA\t")
	for _, r := range runs {
		model := r.Model
		if model == "" {
			model = "-"
		}
		cells := []string{"—", "—", "—", "—"}
		if sp := r.Split; sp != nil {
			cells = []string{share(sp.Prompt, r.InputTokens), share(sp.Tools, r.InputTokens), share(sp.Conversation, r.InputTokens),
				share(sp.Media, r.InputTokens)}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\t\n", r.Started.In(loc).Format("2006-01-02 15:04"), r.Folder, model, r.Outcome,
			r.InputTokens, strings.Join(cells, "\t"))
	}
	return tw.Flush()
}

// printSplit says where each group's input tokens went each day: the
// runs' input tokens (cache reads and writes included) split into the
// fixed prompt, the tools' schemas, the conversation and media, with
// each part's share. Runs recorded before botd split the bill are
// counted apart, their parts shown as "—".
func printSplit(w io.Writer, rows []store.SplitRow) error {
	if len(rows) == 0 {
		return nil
	}
	if _, err := fmt.Fprint(w, "\nWhere the input tokens went, per group and day: each run's input tokens (cache included) split into the fixed\n"+
		"prompt, the tools offered, the conversation and media, in the shares an estimate of its requests gives them.\n"); err != nil {
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "GROUP\tDAY\tRUNS\tINPUT\tFIXED PROMPT\tTOOLS\tCONVERSATION\tMEDIA\t")
	for _, r := range rows {
		runs := fmt.Sprint(r.Runs)
		if r.Unsplit > 0 {
			runs += fmt.Sprintf(" (%d not split)", r.Unsplit)
		}
		cells := []string{"—", "—", "—", "—", "—"}
		if r.Unsplit < r.Runs {
			cells = []string{fmt.Sprint(r.Input), share(r.Split.Prompt, r.Input), share(r.Split.Tools, r.Input),
				share(r.Split.Conversation, r.Input), share(r.Split.Media, r.Input)}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t\n", r.Folder, r.Day, runs, strings.Join(cells, "\t"))
	}
	return tw.Flush()
}

// share is n tokens with its percentage of all: "1200 (31%)".
func share(n, all int64) string {
	if all <= 0 {
		return fmt.Sprint(n)
	}
	return fmt.Sprintf("%d (%d%%)", n, (n*100+all/2)/all)
}

// mediaUnits is what a generation model made: "2 images", "14s audio",
// "8s video"; "-" for a chat model.
func mediaUnits(r store.UsageRow) string {
	var parts []string
	if r.Images > 0 {
		parts = append(parts, fmt.Sprintf("%d image(s)", r.Images))
	}
	if r.AudioSeconds > 0 {
		parts = append(parts, fmt.Sprintf("%.0fs audio", r.AudioSeconds))
	}
	if r.HeardSeconds > 0 {
		parts = append(parts, fmt.Sprintf("%.0fs transcribed", r.HeardSeconds))
	}
	if r.Searches > 0 {
		parts = append(parts, fmt.Sprintf("%d web search(es)", r.Searches))
	}
	if r.VideoSeconds > 0 {
		parts = append(parts, fmt.Sprintf("%.0fs video", r.VideoSeconds))
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, ", ")
}
