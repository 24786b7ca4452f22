package pgstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/cra-dev/cra/internal/world"
)

// boardSettings is fleet_settings' row of the web board's settings.
const boardSettings = "board"

// MaxSettingsBytes bounds the stored settings: a handful of keys.
const MaxSettingsBytes = 64 << 10

// Settings returns the fleet's shared board settings as the last host
// that changed them stored them (JSON), and false when no host has.
func (l *Log) Settings(ctx context.Context) ([]byte, bool, error) {
	var body []byte
	err := l.pool.QueryRow(ctx, "SELECT body FROM fleet_settings WHERE name = $1", boardSettings).Scan(&body)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return nil, false, nil
	case err != nil:
		return nil, false, fmt.Errorf("read the fleet's settings: %w", err)
	}
	return body, true, nil
}

// SetSettings stores body (a JSON object) as the fleet's shared board
// settings and logs why, through logged, in one transaction: a change
// that is not logged is not made, and one that is logged is made.
func (l *Log) SetSettings(ctx context.Context, body []byte, logged func(ctx context.Context, log world.Store) error) error {
	if len(body) > MaxSettingsBytes {
		return fmt.Errorf("the settings are %d bytes, over the %d a fleet stores", len(body), MaxSettingsBytes)
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(body, &obj); err != nil {
		return fmt.Errorf("the settings are not a JSON object: %w", err)
	}
	return l.Tx(ctx, func(tx pgx.Tx, log world.Store) error {
		if err := logged(ctx, log); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `INSERT INTO fleet_settings (name, body, updated) VALUES ($1, $2, clock_timestamp())
			ON CONFLICT (name) DO UPDATE SET body = EXCLUDED.body, updated = EXCLUDED.updated`, boardSettings, body)
		if err != nil {
			return fmt.Errorf("store the fleet's settings: %w", err)
		}
		return nil
	})
}
