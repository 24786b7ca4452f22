package review

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/cra-dev/cra/internal/atomicfile"
	"github.com/cra-dev/cra/internal/statedir"
)

// breaker is the recycler's circuit breaker (seed 004: pause after
// repeated model errors), kept in .clean_room/recycler-breaker.json so
// that every process that reviews shares it: a 'cra recycle --once' adds
// to the count another left, and a restarted daemon stays paused.
type breaker struct {
	// Errors is the model errors in a row since the last review the
	// model gave.
	Errors int `json:"errors"`
	// PausedUntil is when the pause ends; zero when none.
	PausedUntil time.Time `json:"paused_until,omitzero"`
}

// readBreaker reads the breaker of stateDir. A missing file is a closed
// breaker; one that does not parse is too, with the reason: the file is
// a view of a count, never worth stopping reviews for. A pause that
// ends later than cooldown from now (a clock stepped back, a hand edit)
// is cut to end then.
func readBreaker(stateDir string, now time.Time, cooldown time.Duration) (breaker, error) {
	var b breaker
	data, err := os.ReadFile(statedir.At(stateDir).RecyclerBreaker())
	if errors.Is(err, os.ErrNotExist) {
		return b, nil
	}
	if err == nil {
		err = json.Unmarshal(data, &b)
	}
	if err != nil || b.Errors < 0 {
		return breaker{}, fmt.Errorf("the recycler's breaker %s cannot be read (%v): it starts closed again", statedir.RecyclerBreaker, err)
	}
	if limit := now.Add(cooldown); b.PausedUntil.After(limit) {
		b.PausedUntil = limit
	}
	return b, nil
}

// save writes b, whole or not at all.
func (b breaker) save(stateDir string) error {
	data, err := json.Marshal(b)
	if err != nil {
		return err
	}
	if err := atomicfile.Write(statedir.At(stateDir).RecyclerBreaker(), data, 0o644); err != nil {
		return fmt.Errorf("keep the recycler's breaker: %w", err)
	}
	return nil
}
