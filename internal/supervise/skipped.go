package supervise

import (
	"context"
	"fmt"
	"strings"

	"github.com/cra-dev/cra/internal/world"
)

// SkippedMarker is the read marker of the pass's report of skipped
// entries: each entry appended since the last pass that the log's fold
// skips is told once.
const SkippedMarker = "level1-skipped"

// maxSkipReports bounds the lines one pass logs about skipped entries; the
// rest are counted in one more line.
const maxSkipReports = 20

// skippedReport is one skipped entry to report.
type skippedReport struct {
	line  int64
	entry world.Entry
	why   string
}

// reportSkipped logs, as [event:system][ID] lines, the agent entries
// appended since the last pass that the log's fold skips because the
// lifecycle forbids them (a verified appended by hand, say): they move no
// task, and a person hears of them where the board shows the supervisors'
// activity and in 'cra log query --source system'. A dry run reports
// nothing and leaves the marker.
func (p *Pass) reportSkipped(ctx context.Context) error {
	if p.DryRun {
		return nil
	}
	var found []skippedReport
	total := 0
	_, err := p.Log.CheckThen(ctx, SkippedMarker, func(r *world.Record) error {
		if r.Skipped == nil {
			return nil
		}
		total++
		if len(found) < maxSkipReports {
			found = append(found, skippedReport{line: r.Line, entry: r.Entry, why: r.Skipped.Error()})
		}
		return nil
	}, nil)
	if err != nil {
		return fmt.Errorf("report skipped world-log entries: %w", err)
	}
	for _, s := range found {
		msg := fmt.Sprintf("skipped line %d of the world log, [agent:%s][%s] %s: %s", s.line, s.entry.Status, s.entry.ID,
			clipText(s.entry.Output, 120), s.why)
		p.say("warning: %s", msg)
		if _, err := p.Log.Event(ctx, world.SourceSystem, s.entry.ID, msg); err != nil {
			return err
		}
	}
	if more := total - len(found); more > 0 {
		msg := fmt.Sprintf("skipped %d more world-log entries the lifecycle forbids: 'cra log query --kind agent --json' marks them", more)
		p.say("warning: %s", msg)
		if _, err := p.Log.Event(ctx, world.SourceSystem, "world-log", msg); err != nil {
			return err
		}
	}
	return nil
}

// clipText cuts s to about n bytes at a whole character, on one line.
func clipText(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "") + "…"
}
