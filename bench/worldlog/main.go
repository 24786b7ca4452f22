// Command worldlog makes and loads world logs for the benchmarks in
// run.sh: 'gen' writes a realistic log of N lines, 'append' appends
// events through world.Log as one writer process among many.
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"time"

	"github.com/cra-dev/cra/internal/world"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: worldlog gen|append [flags]")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "gen":
		err = gen(os.Args[2:])
	case "append":
		err = appendRun(os.Args[2:])
	default:
		err = fmt.Errorf("unknown command %q: use gen or append", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "worldlog:", err)
		os.Exit(1)
	}
}

// gen writes -lines lines to <dir>/world.log: agents walking their
// lifecycles (about one line in five) among events from every source, with
// "captcha" in about one event in a thousand, the needle of the text query.
func gen(args []string) error {
	fs := flag.NewFlagSet("gen", flag.ExitOnError)
	dir := fs.String("dir", "", "state directory (.clean_room)")
	lines := fs.Int("lines", 1_000_000, "lines to write")
	seed := fs.Uint64("seed", 1, "random seed")
	fs.Parse(args)
	if *dir == "" {
		return fmt.Errorf("gen: -dir is required")
	}
	f, err := os.Create(world.Path(*dir))
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	rng := rand.New(rand.NewPCG(*seed, 0))
	sources := world.Sources()
	t := time.Now().Add(-time.Duration(*lines) * 50 * time.Millisecond).UTC()
	type agent struct {
		id   string
		step int
	}
	var live []*agent
	next := 0
	script := []world.Status{world.StatusStart, world.StatusActive, world.StatusFinish}
	for i := 0; i < *lines; i++ {
		t = t.Add(50 * time.Millisecond)
		e := world.Entry{Time: t}
		switch {
		case rng.IntN(5) == 0 || len(live) == 0:
			if len(live) < 200 && (len(live) == 0 || rng.IntN(3) == 0) {
				next++
				live = append(live, &agent{id: fmt.Sprintf("T-%d", next)})
			}
			k := rng.IntN(len(live))
			a := live[k]
			e.Kind, e.ID = world.KindAgent, a.id
			if a.step < len(script) {
				e.Status = script[a.step]
				e.Output = "step " + string(e.Status)
				if e.Status == world.StatusStart {
					e.Need = "tests pass and the flag is documented"
				}
				a.step++
			} else {
				// The end: mostly verified, some failed, some left unsettled.
				switch r := rng.IntN(10); {
				case r < 7:
					e.Status = world.StatusVerified
				case r < 9:
					e.Status, e.Need = world.StatusFailed, "a person must log in"
				default:
					e.Status = world.StatusRetry
					a.step = 1 // back to active
				}
				if e.Status != world.StatusRetry {
					live = append(live[:k], live[k+1:]...)
				}
			}
		default:
			e.Kind, e.Source = world.KindEvent, sources[rng.IntN(len(sources))]
			if len(live) > 0 && rng.IntN(2) == 0 {
				e.ID = live[rng.IntN(len(live))].id
			} else {
				e.ID = fmt.Sprintf("src/pkg%d/file%d.go", rng.IntN(50), rng.IntN(100))
			}
			e.Output = fmt.Sprintf("ran step %d: %s", i, strings.Repeat("ok ", 1+rng.IntN(12)))
			if rng.IntN(1000) == 0 {
				e.Output += " captcha required"
			}
		}
		line, err := world.Format(e)
		if err != nil {
			return err
		}
		w.WriteString(line)
		w.WriteByte('\n')
	}
	if err := w.Flush(); err != nil {
		return err
	}
	return f.Close()
}

// appendRun appends -n events of about -size bytes through world.Log.
func appendRun(args []string) error {
	fs := flag.NewFlagSet("append", flag.ExitOnError)
	dir := fs.String("dir", "", "state directory (.clean_room)")
	n := fs.Int("n", 10000, "events to append")
	size := fs.Int("size", 100, "output bytes per event")
	id := fs.String("id", "writer", "event identifier")
	sync := fs.String("fsync", "agent", "fsync policy: agent, always, never")
	fs.Parse(args)
	l, err := world.Open(*dir)
	if err != nil {
		return err
	}
	if l.Sync, err = world.ParseSyncPolicy(*sync); err != nil {
		return err
	}
	out := strings.Repeat("x", *size)
	ctx := context.Background()
	for range *n {
		if _, err := l.Event(ctx, world.SourceBash, *id, out); err != nil {
			return err
		}
	}
	return nil
}
