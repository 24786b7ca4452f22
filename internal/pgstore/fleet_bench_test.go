package pgstore

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"
)

// BenchmarkClaim: three hosts claim at once, one task per claim, from a
// board of 10,000 pending tasks given in the board's order (ClaimPending
// locks the board's rows; Claim takes leases alone). fresh: each claim
// gives the tasks not yet claimed, as a host that moved its claims to
// in-progress and read the board again does; stale: the 10,000 every
// time, the claimed ones first. p50 and p99 are one claim's latency as a
// host sees it.
//
//	go test ./internal/pgstore -run '^$' -bench Claim -benchtime 1000x
func BenchmarkClaim(b *testing.B) {
	for _, board := range []bool{true, false} {
		for _, fresh := range []bool{true, false} {
			name := map[bool]string{true: "board", false: "leases"}[board] + "/" + map[bool]string{true: "fresh", false: "stale"}[fresh]
			b.Run(name, func(b *testing.B) { benchClaim(b, board, fresh) })
		}
	}
}

func benchClaim(b *testing.B, board, fresh bool) {
	ctx := context.Background()
	f, url := openFleet(b)
	all := tasks(10_000)
	putTasks(b, f, "pending", all...)
	hosts := []*Fleet{fleetAt(b, url), fleetAt(b, url), fleetAt(b, url)}
	claimed := map[string]bool{}
	pending := all
	var (
		mu    sync.Mutex
		lat   []time.Duration
		next  = make(chan struct{}, b.N)
		empty int
	)
	for range b.N {
		next <- struct{}{}
	}
	close(next)
	b.ResetTimer()
	var wg sync.WaitGroup
	for i, h := range hosts {
		host := fmt.Sprintf("h%d", i)
		wg.Go(func() {
			for range next {
				cands := all
				if fresh {
					mu.Lock()
					cands = pending
					mu.Unlock()
				}
				t0 := time.Now()
				var got []Lease
				var err error
				if board {
					got, err = h.ClaimPending(ctx, host, cands, 1, time.Minute)
				} else {
					got, err = h.Claim(ctx, host, cands, 1, time.Minute)
				}
				d := time.Since(t0)
				if err != nil {
					b.Error(err)
					return
				}
				mu.Lock()
				lat = append(lat, d)
				if len(got) == 0 {
					empty++
				}
				if fresh {
					for _, l := range got {
						claimed[l.TaskID] = true
					}
					pending = slices.DeleteFunc(slices.Clone(pending), func(id string) bool { return claimed[id] })
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	if empty > 0 {
		b.Fatalf("%d claims found nothing: give at most 10,000 claims (-benchtime 1000x)", empty)
	}
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
}

// BenchmarkRenew: one host renews the leases of its runs, as it does
// every lease/3; ns/run is the cost per run.
//
//	go test ./internal/pgstore -run '^$' -bench Renew
func BenchmarkRenew(b *testing.B) {
	for _, runs := range []int{1, 8, 100} {
		b.Run(fmt.Sprintf("runs=%d", runs), func(b *testing.B) {
			ctx := context.Background()
			f, _ := openFleet(b)
			held, err := f.Claim(ctx, "a", tasks(runs), runs, time.Minute)
			if err != nil || len(held) != runs {
				b.Fatalf("claimed %d (%v), want %d", len(held), err, runs)
			}
			b.ResetTimer()
			for b.Loop() {
				lost, err := f.Renew(ctx, "a", held, time.Minute)
				if err != nil || len(lost) != 0 {
					b.Fatalf("renewal lost %v (%v)", lost, err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*runs), "ns/run")
		})
	}
}
