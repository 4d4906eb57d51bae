package mediaregistry

import (
	"context"
	"time"

	"github.com/botd-dev/botd/internal/sqlrows"
)

// DayStats is what every chat posted on one UTC day and how much of it was
// downloaded since: Stats per day, for a chart of what laziness saves.
type DayStats struct {
	Day time.Time // midnight UTC
	Stats
}

// Daily counts the refs registered since since, by the UTC day they were
// posted, oldest first; days without refs are left out. A ref's downloads
// count on the day it was posted, whenever they happened: that is what
// the registry keeps.
func (r *Registry) Daily(ctx context.Context, since time.Time) ([]DayStats, error) {
	return sqlrows.Query(ctx, r.db, "daily media stats", func(row sqlrows.Scanner) (DayStats, error) {
		var d DayStats
		var day int64
		err := row.Scan(&day, &d.Refs, &d.Posted, &d.Fetched, &d.Downloaded)
		d.Day = time.Unix(day*86400, 0).UTC()
		return d, err
	}, `SELECT created / 86400000 AS day, COUNT(*), COALESCE(SUM(size), 0),
		COUNT(NULLIF(downloads, 0)), COALESCE(SUM(downloaded_bytes), 0)
		FROM media_refs WHERE created >= ? GROUP BY day ORDER BY day`, since.UnixMilli())
}
