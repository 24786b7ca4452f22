package pgstore

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"
)

// Keeper is a host's side of its leases: every Lease/3 it sends the
// host's heartbeat and renews the leases of the runs it holds, and hands
// each run whose lease another host took over (or a sweep freed) to
// Lost, which stops this host's copy rather than let it finish twice. A
// host cut off from the database for longer than its lease finds, on its
// first pass back, which of its runs were restarted elsewhere.
type Keeper struct {
	// Fleet is the database; required.
	Fleet *Fleet
	// Host is this host as its heartbeat gives it (name, slots,
	// version, start); required.
	Host Host
	// Lease is [fleet] lease; required.
	Lease time.Duration
	// Held returns the leases of this host's live runs; required.
	Held func() []Lease
	// Lost is called with each run this host must stop; required.
	Lost func(Lost)
	// Logger gets the passes' errors; nil discards.
	Logger *slog.Logger
}

// Run makes a pass every Lease/3 until ctx ends.
func (k *Keeper) Run(ctx context.Context) error {
	if k.Fleet == nil || k.Held == nil || k.Lost == nil || k.Lease <= 0 {
		return errors.New("lease keeper: give Fleet, Held, Lost and a positive Lease")
	}
	t := time.NewTicker(k.Lease / 3)
	defer t.Stop()
	for {
		if err := k.Pass(ctx); err != nil && ctx.Err() == nil && k.Logger != nil {
			// The database is out of reach: the next pass tries again,
			// and learns what was lost meanwhile.
			k.Logger.Warn("lease keeper: pass failed", "host", k.Host.Name, "err", err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// Pass sends the heartbeat, renews the held leases and calls Lost for
// each run lost.
func (k *Keeper) Pass(ctx context.Context) error {
	if err := k.Fleet.Heartbeat(ctx, k.Host); err != nil {
		return err
	}
	lost, err := k.Fleet.Renew(ctx, k.Host.Name, k.Held(), k.Lease)
	if err != nil {
		return fmt.Errorf("lease keeper: %w", err)
	}
	for _, l := range lost {
		k.Lost(l)
	}
	return nil
}
