// Package dataset writes and reads the training datasets of the
// self-improvement loop (seed 001 §3.4, §16): one directory per stage,
// separated by base model, holding train.jsonl and valid.jsonl in chat
// format,
//
//	{"messages":[{"role":"system","content":…},{"role":"user","content":…},{"role":"assistant","content":…}]}
//
// which mlx-lm (`--data DIR`), axolotl (`type: chat_template`) and
// torchtune (`openai` style) accept as they are, beside meta.train.jsonl
// and meta.valid.jsonl: one line per example, in the same order, saying
// where it came from (the commit, the logged call) and what a stage's
// evaluation needs (the gold files). Trainers never read the meta files.
//
// Examples are deduplicated by their messages and split by date: the
// newest are the validation set, so an adapter is judged on work later
// than anything it learned from. Negative examples (a logged call of a
// run that failed) never go into train.jsonl or valid.jsonl, since a
// supervised trainer learns from every line: they are written to
// rejected.jsonl and meta.rejected.jsonl, the material of a preference
// trainer's rejected side and of analysis.
package dataset

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/cra-dev/cra/internal/atomicfile"
	"github.com/cra-dev/cra/internal/stage"
)

// The stages a dataset trains (seed 001 §3.4), as package stage names
// them. They are the router's stage keys: [models.overrides] and
// adapter_metadata.stage_name use them.
const (
	TaskAnalysis = stage.TaskAnalysis
	Scope        = stage.Scope
	Precision    = stage.Precision
	ExecutePlan  = stage.ExecutePlan
	ExecuteCode  = stage.ExecuteCode
)

// Stages lists every stage, in pipeline order.
var Stages = []string{TaskAnalysis, Scope, Precision, ExecutePlan, ExecuteCode}

// The base models LoRAs are trained on (seed 001 §3.4): the router's
// coding and reasoning roles.
const (
	Reasoning = "reasoning"
	Coding    = "coding"
)

// BaseModel returns the base model a stage's adapter is trained on:
// coding for execute_code, reasoning for the others, "" for a stage cra
// does not train.
func BaseModel(stage string) string {
	switch stage {
	case ExecuteCode:
		return Coding
	case TaskAnalysis, Scope, Precision, ExecutePlan:
		return Reasoning
	}
	return ""
}

// CheckStage returns an error naming the stages when stage is not one.
func CheckStage(stage string) error {
	if BaseModel(stage) == "" {
		return fmt.Errorf("unknown stage %q: use one of %s", stage, strings.Join(Stages, ", "))
	}
	return nil
}

// Message is one turn of a chat example.
type Message struct {
	Role    string `json:"role"` // system, user or assistant
	Content string `json:"content"`
}

// Example is one line of train.jsonl or valid.jsonl.
type Example struct {
	Messages []Message `json:"messages"`
}

// Chat returns the example system → user → assistant, without the
// system message when system is "" (a call made without one).
func Chat(system, user, assistant string) Example {
	if system == "" {
		return Example{Messages: []Message{{"user", user}, {"assistant", assistant}}}
	}
	return Example{Messages: []Message{{"system", system}, {"user", user}, {"assistant", assistant}}}
}

// Meta is one line of a meta file: where an example came from and what
// evaluating a stage on it needs.
type Meta struct {
	Stage    string    `json:"stage"`
	Source   string    `json:"source"`   // "synthetic" or "logged"
	Positive bool      `json:"positive"` // a good example (logged: part of a successful run)
	Date     time.Time `json:"date"`     // the split key: commit or call time
	// Synthetic examples: the repository and the commit the pair was derived
	// from, checked out at Parent.
	Repo   string `json:"repo,omitempty"`
	Commit string `json:"commit,omitempty"`
	Parent string `json:"parent,omitempty"`
	// Logged examples: the task run and the raw-DB call.
	TaskID string `json:"task_id,omitempty"`
	CallID int64  `json:"call_id,omitempty"`
	// Gold lists the files the change touched (scope's evaluation).
	Gold []string `json:"gold,omitempty"`
}

// Record is an example and its meta line.
type Record struct {
	Example Example
	Meta    Meta
}

// Check returns an error when r cannot be written: a stage cra does not
// train, or messages that are not system?, user, assistant with content.
func (r Record) Check() error {
	if err := CheckStage(r.Meta.Stage); err != nil {
		return err
	}
	m := r.Example.Messages
	if len(m) > 0 && m[0].Role == "system" {
		m = m[1:]
	}
	if len(m) != 2 || m[0].Role != "user" || m[1].Role != "assistant" {
		return errors.New("an example is [system,] user, assistant")
	}
	if strings.TrimSpace(m[0].Content) == "" || strings.TrimSpace(m[1].Content) == "" {
		return errors.New("an example has an empty user or assistant message")
	}
	return nil
}

// Files in a stage's directory.
const (
	TrainFile     = "train.jsonl"
	ValidFile     = "valid.jsonl"
	TrainMetaFile = "meta.train.jsonl"
	ValidMetaFile = "meta.valid.jsonl"
	// RejectedFile and RejectedMetaFile hold the negative examples.
	RejectedFile     = "rejected.jsonl"
	RejectedMetaFile = "meta.rejected.jsonl"
)

// Dir is the directory of a stage's files under a dataset's root:
// root/<base model>/<stage>.
func Dir(root, stage string) string { return filepath.Join(root, BaseModel(stage), stage) }

// Summary counts what Write wrote.
type Summary struct {
	Dir        string // the stage's directory
	Train      int    // positive examples in train.jsonl
	Valid      int    // positive examples in valid.jsonl
	Positive   int    // Train + Valid
	Negative   int    // negative examples, in rejected.jsonl
	Duplicates int    // examples dropped because their messages repeated one kept
}

// Examples is the number of examples written, negatives included.
func (s Summary) Examples() int { return s.Positive + s.Negative }

// DefaultValidShare is the share of the newest examples Write keeps for
// validation when asked for 0.
const DefaultValidShare = 0.1

// Write writes the records of one stage under root (see Dir), replacing
// what was there. It drops records whose messages repeat an earlier
// one's (the oldest is kept), sorts the rest by date (then by their
// messages, so the files do not depend on the order given), puts the
// negatives in rejected.jsonl, and the newest validShare of the positives
// (0 means DefaultValidShare; at least one when there are two or more)
// in the validation split. The directory is
// written whole or not at all: the files go to a temporary directory that
// replaces the stage's in one rename.
func Write(root, stage string, recs []Record, validShare float64) (Summary, error) {
	if err := CheckStage(stage); err != nil {
		return Summary{}, err
	}
	if validShare < 0 || validShare >= 1 || math.IsNaN(validShare) {
		return Summary{}, fmt.Errorf("validation share %v: use a number in [0, 1)", validShare)
	}
	if validShare == 0 {
		validShare = DefaultValidShare
	}
	type keyed struct {
		Record
		line []byte
	}
	var all []keyed
	for i, r := range recs {
		if r.Meta.Stage != stage {
			return Summary{}, fmt.Errorf("record %d is of stage %q, not %q", i, r.Meta.Stage, stage)
		}
		if err := r.Check(); err != nil {
			return Summary{}, fmt.Errorf("record %d: %w", i, err)
		}
		line, err := json.Marshal(r.Example)
		if err != nil {
			return Summary{}, fmt.Errorf("record %d: %w", i, err)
		}
		all = append(all, keyed{r, line})
	}
	sort.SliceStable(all, func(i, j int) bool {
		if !all[i].Meta.Date.Equal(all[j].Meta.Date) {
			return all[i].Meta.Date.Before(all[j].Meta.Date)
		}
		return bytes.Compare(all[i].line, all[j].line) < 0
	})
	sum := Summary{Dir: Dir(root, stage)}
	seen := map[[32]byte]bool{}
	var kept, rejected []keyed
	for _, k := range all {
		h := sha256.Sum256(k.line)
		if seen[h] {
			sum.Duplicates++
			continue
		}
		seen[h] = true
		if k.Meta.Positive {
			kept = append(kept, k)
		} else {
			rejected = append(rejected, k)
		}
	}
	sum.Positive, sum.Negative = len(kept), len(rejected)
	valid := 0
	if len(kept) >= 2 {
		valid = max(1, int(math.Round(float64(len(kept))*validShare)))
	}
	sum.Train, sum.Valid = len(kept)-valid, valid

	var files [6]bytes.Buffer // train, valid, rejected, then their meta files
	put := func(file int, k keyed) error {
		files[file].Write(k.line)
		files[file].WriteByte('\n')
		meta, err := json.Marshal(k.Meta)
		if err != nil {
			return err
		}
		files[3+file].Write(meta)
		files[3+file].WriteByte('\n')
		return nil
	}
	for i, k := range kept {
		file := 0
		if i >= sum.Train {
			file = 1
		}
		if err := put(file, k); err != nil {
			return Summary{}, err
		}
	}
	for _, k := range rejected {
		if err := put(2, k); err != nil {
			return Summary{}, err
		}
	}
	if err := os.MkdirAll(filepath.Dir(sum.Dir), 0o755); err != nil {
		return Summary{}, fmt.Errorf("write dataset: %w", err)
	}
	tmp, err := os.MkdirTemp(filepath.Dir(sum.Dir), "."+stage+".tmp-")
	if err != nil {
		return Summary{}, fmt.Errorf("write dataset: %w", err)
	}
	defer os.RemoveAll(tmp)
	// Synced before the renames that publish them: a row recorded after
	// them must never name a directory of empty files after a crash.
	for i, name := range []string{TrainFile, ValidFile, RejectedFile, TrainMetaFile, ValidMetaFile, RejectedMetaFile} {
		if err := atomicfile.WriteNew(filepath.Join(tmp, name), files[i].Bytes(), 0o644); err != nil {
			return Summary{}, fmt.Errorf("write dataset: %w", err)
		}
	}
	if err := os.Chmod(tmp, 0o755); err != nil {
		return Summary{}, fmt.Errorf("write dataset: %w", err)
	}
	atomicfile.SyncDir(tmp)
	// Replace the old directory: move it aside, move the new one in, and
	// only then remove the old one, so a failure leaves one of them whole.
	old := ""
	if _, err := os.Stat(sum.Dir); err == nil {
		old = tmp + ".old"
		if err := os.Rename(sum.Dir, old); err != nil {
			return Summary{}, fmt.Errorf("write dataset: %w", err)
		}
	}
	if err := os.Rename(tmp, sum.Dir); err != nil {
		if old != "" {
			os.Rename(old, sum.Dir)
		}
		return Summary{}, fmt.Errorf("write dataset: %w", err)
	}
	atomicfile.SyncDir(filepath.Dir(sum.Dir))
	if old != "" {
		os.RemoveAll(old)
	}
	return sum, nil
}

// Place renames tmp, a run's complete directory of datasets written
// beside root's runs, into root as name, or name-2, name-3… when a run
// has that name, and returns the name and the directory. A run that
// writes its datasets in a temporary directory and places it only once
// complete leaves no partial directory a reader could take for a run's
// when it is killed in the middle; an existing directory, even an empty
// one, which rename(2) would replace, is never replaced.
func Place(root, name, tmp string) (string, string, error) {
	for i := 1; ; i++ {
		n := name
		if i > 1 {
			n = fmt.Sprintf("%s-%d", name, i)
		}
		dir := filepath.Join(root, n)
		if _, err := os.Lstat(dir); err == nil {
			continue
		} else if !errors.Is(err, os.ErrNotExist) {
			return "", "", fmt.Errorf("datasets directory: %w", err)
		}
		err := os.Rename(tmp, dir)
		if err == nil {
			atomicfile.SyncDir(root) // before the caller records it
			return n, dir, nil
		}
		if !errors.Is(err, os.ErrExist) { // ENOTEMPTY included: a run of the same name placed since
			return "", "", fmt.Errorf("datasets directory: %w", err)
		}
	}
}

// PendingFile, in a run's directory of datasets, says that the run placed
// it (Place) and has not recorded it yet: a run killed between the two
// leaves a complete directory that no row names, which the next run of
// the same writer removes (RemoveLeftovers). It holds the writer's
// temporary prefix.
const PendingFile = ".pending"

// MarkPending writes PendingFile, naming the writer by its temporary
// prefix, into tmp, the run's temporary directory, before it is placed.
func MarkPending(tmp, prefix string) error {
	if err := atomicfile.WriteNew(filepath.Join(tmp, PendingFile), []byte(prefix+"\n"), 0o644); err != nil {
		return fmt.Errorf("datasets directory: %w", err)
	}
	return nil
}

// Settle removes the PendingFile of dir, a placed run's directory, once
// its datasets are recorded. Best effort: a marker left behind is removed
// by the next RemoveLeftovers, which finds the run recorded.
func Settle(dir string) { os.Remove(filepath.Join(dir, PendingFile)) }

// runName is the name of the run directory that holds path, a stage's
// directory of a run (Dir): what a row's path and a directory of root
// have in common wherever the repository has moved since.
func runName(path string) string { return filepath.Base(filepath.Dir(filepath.Dir(path))) }

// RemoveLeftovers removes what the runs of one writer (its temporary
// directories begin with prefix; writer names it in errors) left when
// they were killed in the middle of their save: their temporary
// directories, and the directories they placed but never recorded, whose
// PendingFile names prefix and whose name is that of none of recorded,
// the stage directories the rows name. A directory a row names only
// loses its marker; one without a marker, or another writer's, is left
// alone. The caller holds the lock under which the writer writes, places
// and records, so no run of it is in the middle of its save.
func RemoveLeftovers(root, prefix, writer string, recorded []string) error {
	entries, err := os.ReadDir(root)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("datasets directory: %w", err)
	}
	runs := make(map[string]bool, len(recorded))
	for _, p := range recorded {
		runs[runName(p)] = true
	}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		dir := filepath.Join(root, e.Name())
		if !strings.HasPrefix(e.Name(), prefix) {
			b, err := os.ReadFile(filepath.Join(dir, PendingFile))
			if err != nil || strings.TrimSpace(string(b)) != prefix {
				continue
			}
			if runs[e.Name()] {
				Settle(dir)
				continue
			}
		}
		if err := os.RemoveAll(dir); err != nil {
			return fmt.Errorf("remove %s, which an interrupted %s left: %w (remove it by hand)", dir, writer, err)
		}
	}
	return nil
}

// Split names a split of a stage's directory.
type Split string

// The splits: the positives' two, and the negatives.
const (
	Train    Split = "train"
	Valid    Split = "valid"
	Rejected Split = "rejected"
)

// Read returns the records of one split of a stage's directory (as
// Summary.Dir or Dir name it), examples paired with their meta lines. A
// line that is not JSON, or files of different lengths, are errors that
// name the file and line.
func Read(dir string, split Split) ([]Record, error) {
	data, meta := TrainFile, TrainMetaFile
	switch split {
	case Train:
	case Valid:
		data, meta = ValidFile, ValidMetaFile
	case Rejected:
		data, meta = RejectedFile, RejectedMetaFile
	default:
		return nil, fmt.Errorf("unknown split %q: use train, valid or rejected", split)
	}
	examples, err := readLines[Example](filepath.Join(dir, data))
	if err != nil {
		return nil, err
	}
	metas, err := readLines[Meta](filepath.Join(dir, meta))
	if err != nil {
		return nil, err
	}
	if len(examples) != len(metas) {
		return nil, fmt.Errorf("%s has %d lines but %s has %d: write the dataset again",
			filepath.Join(dir, data), len(examples), meta, len(metas))
	}
	out := make([]Record, len(examples))
	for i := range examples {
		out[i] = Record{Example: examples[i], Meta: metas[i]}
	}
	return out, nil
}

// maxLine bounds one line of a dataset file (an execute_code example
// holds a context package: tens of kilobytes).
const maxLine = 16 << 20

func readLines[T any](path string) ([]T, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []T
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), maxLine)
	for n := 1; sc.Scan(); n++ {
		var v T
		if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, n, err)
		}
		out = append(out, v)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return out, nil
}
