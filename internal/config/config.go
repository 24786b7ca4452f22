// Package config loads and writes .clean_room/config.toml (seed 001 §10).
//
// The file is a convenience for not retyping flags, never a silent fallback:
// every value is optional in the file, and the command that needs a value
// resolves it as flag > config > hard error naming the flag (§10.2). Code
// holds no defaults for required values; the only defaults here are tuning
// knobs the seed allows (temperatures) and indexer bounds that are not
// user-facing requirements.
package config

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/BurntSushi/toml"
)

// Dir is the name of cra's state directory beside the target repository.
const Dir = ".clean_room"

// FileName is the config file's name inside Dir.
const FileName = "config.toml"

// ErrNoModels is returned when an LLM-using command finds no [models] section.
var ErrNoModels = errors.New("no [models] section in config: run 'cra init --coding MODEL --reasoning MODEL --base-url URL' first")

// Config mirrors config.toml. Pointer and zero values mean "not set": the
// file records only what the user gave (§10.1).
type Config struct {
	Models  *Models  `toml:"models,omitempty"`
	Budget  *Budget  `toml:"budget,omitempty"`
	Solve   *Solve   `toml:"solve,omitempty"`
	Stages  *Stages  `toml:"stages,omitempty"`
	Index   *Index   `toml:"index,omitempty"`
	World   *World   `toml:"world,omitempty"`
	Unknown []string `toml:"-"` // keys present in the file that cra does not know
}

// Models is the [models] section (§3.2, §10.1).
type Models struct {
	Coding    string            `toml:"coding,omitempty"`
	Reasoning string            `toml:"reasoning,omitempty"`
	BaseURL   string            `toml:"base_url,omitempty"`
	Overrides map[string]string `toml:"overrides,omitempty"`
}

// Budget is the [budget] section (§7.1).
type Budget struct {
	ContextWindow  *int `toml:"context_window,omitempty"`
	ReservedTokens *int `toml:"reserved_tokens,omitempty"`
}

// Solve is the [solve] section.
type Solve struct {
	MaxAttempts        *int `toml:"max_attempts,omitempty"`
	MaxRefinementLoops *int `toml:"max_refinement_loops,omitempty"`
}

// Stages is the [stages] section.
type Stages struct {
	Default string `toml:"default,omitempty"`
}

// Index is the [index] section: bounds for the git history miner. Both are
// optional; the indexer documents its own defaults because they are
// resource bounds, not required inputs.
type Index struct {
	// HistoryDepth caps how many commits are mined (newest first).
	HistoryDepth *int `toml:"history_depth,omitempty"`
	// MaxCommitFiles leaves commits touching more files than this out of
	// co-change counting as noise (mass renames, formatting sweeps).
	MaxCommitFiles *int `toml:"max_commit_files,omitempty"`
}

// World is the [world] section: the world log's durability.
type World struct {
	// Fsync says which appends are fsynced before they return: "agent"
	// (lifecycle entries only), "always" or "never". The --fsync flag
	// overrides it; unset means "agent".
	Fsync string `toml:"fsync,omitempty"`
}

// Path returns the config file path for a repository root.
func Path(repo string) string { return filepath.Join(repo, Dir, FileName) }

// Load reads the config of the repository at repo. A missing file returns
// (nil, nil): config is optional for commands that need no model (§10.3).
func Load(repo string) (*Config, error) {
	data, err := os.ReadFile(Path(repo))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read config: %w", err)
	}
	return Parse(data)
}

// Parse decodes config.toml text. Unknown keys are collected in
// Config.Unknown so the caller can warn about them instead of ignoring them.
func Parse(data []byte) (*Config, error) {
	var c Config
	md, err := toml.Decode(string(data), &c)
	if err != nil {
		return nil, fmt.Errorf("parse %s: %w (fix the file or re-run 'cra init')", FileName, err)
	}
	for _, k := range md.Undecoded() {
		c.Unknown = append(c.Unknown, k.String())
	}
	sort.Strings(c.Unknown)
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return &c, nil
}

// Validate checks the values that are present. It never complains about a
// missing value: that is the job of the command that needs it.
func (c *Config) Validate() error {
	var problems []string
	if b := c.Budget; b != nil {
		if b.ContextWindow != nil && *b.ContextWindow <= 0 {
			problems = append(problems, "budget.context_window must be > 0")
		}
		if b.ReservedTokens != nil && *b.ReservedTokens < 0 {
			problems = append(problems, "budget.reserved_tokens must be >= 0")
		}
		if b.ContextWindow != nil && b.ReservedTokens != nil && *b.ReservedTokens >= *b.ContextWindow {
			problems = append(problems, "budget.reserved_tokens must be < budget.context_window")
		}
	}
	if s := c.Solve; s != nil {
		if s.MaxAttempts != nil && *s.MaxAttempts < 1 {
			problems = append(problems, "solve.max_attempts must be >= 1")
		}
		if s.MaxRefinementLoops != nil && *s.MaxRefinementLoops < 0 {
			problems = append(problems, "solve.max_refinement_loops must be >= 0")
		}
	}
	if ix := c.Index; ix != nil {
		if ix.HistoryDepth != nil && *ix.HistoryDepth < 0 {
			problems = append(problems, "index.history_depth must be >= 0")
		}
		if ix.MaxCommitFiles != nil && *ix.MaxCommitFiles < 2 {
			problems = append(problems, "index.max_commit_files must be >= 2")
		}
	}
	if w := c.World; w != nil {
		switch w.Fsync {
		case "", "agent", "always", "never":
		default:
			problems = append(problems, fmt.Sprintf("world.fsync is %q: use agent, always or never", w.Fsync))
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("invalid %s: %s", FileName, strings.Join(problems, "; "))
	}
	return nil
}

// RequireModels returns the [models] section or ErrNoModels (§3.2, §14.1).
func (c *Config) RequireModels() (*Models, error) {
	if c == nil || c.Models == nil || (c.Models.Coding == "" && c.Models.Reasoning == "") {
		return nil, ErrNoModels
	}
	return c.Models, nil
}

// Encode renders the config as TOML. Only set values appear.
func (c *Config) Encode() ([]byte, error) {
	var buf bytes.Buffer
	buf.WriteString("# cra configuration (seed 001 §10). Written by 'cra init'; edit freely.\n")
	buf.WriteString("# Only values you gave are here: a command that needs a missing value says which flag to pass.\n\n")
	enc := toml.NewEncoder(&buf)
	enc.Indent = ""
	if err := enc.Encode(c); err != nil {
		return nil, fmt.Errorf("encode config: %w", err)
	}
	return buf.Bytes(), nil
}

// Save writes the config atomically: temp file, fsync, rename.
func (c *Config) Save(repo string) error {
	data, err := c.Encode()
	if err != nil {
		return err
	}
	return WriteFileAtomic(Path(repo), data, 0o644)
}

// WriteFileAtomic writes data to a temp file in path's directory, fsyncs it
// and renames it over path, so a reader sees the old or the new content,
// never a partial one (DESIGN.md principle 5).
func WriteFileAtomic(path string, data []byte, perm os.FileMode) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	tmp := f.Name()
	cleanup := func(err error) error {
		f.Close()
		os.Remove(tmp)
		return fmt.Errorf("write %s: %w", path, err)
	}
	if _, err := f.Write(data); err != nil {
		return cleanup(err)
	}
	if err := f.Chmod(perm); err != nil {
		return cleanup(err)
	}
	if err := f.Sync(); err != nil {
		return cleanup(err)
	}
	if err := f.Close(); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write %s: %w", path, err)
	}
	if d, err := os.Open(dir); err == nil {
		d.Sync() // best effort: make the rename durable
		d.Close()
	}
	return nil
}
