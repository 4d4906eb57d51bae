package mediaregistry

import (
	"context"
	"fmt"
	"time"
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
	rows, err := r.db.QueryContext(ctx, `SELECT created / 86400000 AS day, COUNT(*), COALESCE(SUM(size), 0),
		COUNT(NULLIF(downloads, 0)), COALESCE(SUM(downloaded_bytes), 0)
		FROM media_refs WHERE created >= ? GROUP BY day ORDER BY day`, since.UnixMilli())
	if err != nil {
		return nil, fmt.Errorf("daily media stats: %w", err)
	}
	defer rows.Close()
	var out []DayStats
	for rows.Next() {
		var d DayStats
		var day int64
		if err := rows.Scan(&day, &d.Refs, &d.Posted, &d.Fetched, &d.Downloaded); err != nil {
			return nil, fmt.Errorf("daily media stats: %w", err)
		}
		d.Day = time.Unix(day*86400, 0).UTC()
		out = append(out, d)
	}
	return out, rows.Err()
}
