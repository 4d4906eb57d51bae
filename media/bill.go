package media

import (
	"context"
	"log/slog"

	"github.com/botd-dev/botd/media/generate"
	"github.com/botd-dev/botd/store"
)

// Bill is where what media calls to providers cost is recorded, on the
// group's bill beside its model calls (*store.Store): transcriptions here,
// searches in media/links, generation in media/generation.
type Bill interface {
	RecordGeneration(ctx context.Context, g store.Generation) error
}

// Price fills rec's cost from p.
func Price(rec *store.Generation, p generate.Price, u generate.Usage) {
	if !p.Priced() {
		return
	}
	rec.CostMicrocents, rec.CostKnown = p.Cost(rec.Units, u), true
}

// Record writes rec with its outcome on bill (nil: nowhere); a failure to
// write is logged, the media itself is not lost over it.
func Record(ctx context.Context, bill Bill, log *slog.Logger, rec *store.Generation, outcome, errText string) {
	rec.Outcome, rec.Error = outcome, errText
	if bill == nil {
		return
	}
	if err := bill.RecordGeneration(context.WithoutCancel(ctx), *rec); err != nil {
		log.Warn("generation not recorded", "group", rec.Folder, "kind", rec.Kind, "err", err)
	}
}
