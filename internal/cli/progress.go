package cli

import (
	"io"
	"time"

	"github.com/schollz/progressbar/v3"
)

// termProgress is a progress bar on a terminal, made on the first report
// (when the total is known): report(done, total) as work advances, and
// finish when it ends. Off a terminal nothing is drawn.
type termProgress struct {
	w    io.Writer
	desc string
	bar  *progressbar.ProgressBar
}

func newTermProgress(w io.Writer, desc string) *termProgress {
	return &termProgress{w: w, desc: desc}
}

func (p *termProgress) report(done, total int) {
	if p.bar == nil {
		p.bar = progressbar.NewOptions(total,
			progressbar.OptionSetWriter(p.w),
			progressbar.OptionSetDescription(p.desc),
			progressbar.OptionShowCount(),
			progressbar.OptionShowIts(),
			progressbar.OptionSetItsString("files"),
			progressbar.OptionThrottle(100*time.Millisecond),
			progressbar.OptionClearOnFinish())
	}
	p.bar.Set(done)
}

func (p *termProgress) finish() {
	if p.bar != nil {
		p.bar.Finish()
	}
}
