package board

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/cra-dev/cra/internal/lazyre"
)

// MaxFileBytes bounds a task file: the output tail, the notes and the
// description fit many times over, and a damaged file cannot make a
// listing hold gigabytes.
const MaxFileBytes = 1 << 20

// Parse reads a task file. Fields left out take their defaults (kind task,
// priority normal, processor_auto_requeue true, counters 0); fields this
// cra does not know are kept for Encode. The task is validated; every
// error names the field, what is wrong and the fix. The caller adds the
// file's name.
func Parse(data []byte) (*Task, error) {
	if len(data) > MaxFileBytes {
		return nil, fmt.Errorf("file is %d bytes, over the limit of %d: shorten its notes or results.output", len(data), MaxFileBytes)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("not valid YAML: %v: fix the syntax", strings.TrimPrefix(err.Error(), "yaml: "))
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, errors.New("not a mapping of fields: a task file holds lines of key: value (id, title, …)")
	}
	m := doc.Content[0]
	if hasAlias(m) {
		return nil, errors.New("uses YAML anchors or aliases (&name, *name): write the values out")
	}
	t := &Task{ProcessorAutoRequeue: true}
	if err := m.Decode(t); err != nil {
		return nil, decodeError(m, err)
	}
	t.applyDefaults()
	t.node = m
	if err := t.Validate(); err != nil {
		return nil, err
	}
	return t, nil
}

// hasAlias reports whether n or a node below it is an alias or anchored.
// Rewrites replace known fields' nodes, so an alias among the unknown ones
// could lose its anchor; task files are plain enough to do without.
func hasAlias(n *yaml.Node) bool {
	if n.Kind == yaml.AliasNode || n.Anchor != "" {
		return true
	}
	for _, c := range n.Content {
		if hasAlias(c) {
			return true
		}
	}
	return false
}

var yamlLine = lazyre.New(`^line (\d+): (.*)$`)

// decodeError turns yaml's type errors ("line 3: cannot unmarshal !!str
// `x` into int") into a *FieldError naming the field on that line.
func decodeError(m *yaml.Node, err error) error {
	var te *yaml.TypeError
	if !errors.As(err, &te) || len(te.Errors) == 0 {
		return fmt.Errorf("cannot read the fields: %v", err)
	}
	msg := te.Errors[0]
	field := "?"
	if sm := yamlLine().FindStringSubmatch(msg); sm != nil {
		line, _ := strconv.Atoi(sm[1])
		field = fieldAtLine(m, line, "")
		msg = sm[2]
	}
	return &FieldError{Field: field, Err: msg, Fix: "give it a value of the right type (text, a whole number, true/false, a time like 2025-01-02T03:04:05Z, a list of ids)"}
}

// fieldAtLine returns the dotted key whose value covers line in mapping m.
func fieldAtLine(m *yaml.Node, line int, prefix string) string {
	best := ""
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := m.Content[i], m.Content[i+1]
		if k.Line > line {
			break
		}
		best = prefix + k.Value
		if v.Kind == yaml.MappingNode && v.Line <= line {
			if sub := fieldAtLine(v, line, best+"."); sub != best+"." && sub != "" {
				best = sub
			}
		}
	}
	if best == "" {
		return "?"
	}
	return best
}

// The keys Task and Results write, from their yaml tags: a known key that
// a rewrite leaves out (an emptied field) is dropped, any other is kept.
var (
	taskKeys   = yamlKeys(reflect.TypeFor[Task]())
	resultKeys = yamlKeys(reflect.TypeFor[Results]())
)

func yamlKeys(t reflect.Type) map[string]bool {
	keys := map[string]bool{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if name == "" {
			name = strings.ToLower(f.Name)
		}
		keys[name] = true
	}
	return keys
}

// document returns the mapping t was parsed from: its node, or for a
// task from the list index its file as it is now, read and parsed (the
// index keeps no copy of the files' bytes); nil for a task never read
// from a file, or whose file is gone or no longer a mapping.
func (t *Task) document() *yaml.Node {
	if t.node != nil || t.srcDir == "" || CheckID(t.ID) != nil {
		return t.node
	}
	data, err := readRegular(filepath.Join(t.srcDir, t.ID+".yaml"))
	if err != nil {
		return nil
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil || len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
		return nil
	}
	return doc.Content[0]
}

// Encode renders t as a task file. A task read by Parse keeps the keys
// this cra does not know, in their order, and the layout of the values
// that did not change; known fields are written in the order of Task.
func Encode(t *Task) ([]byte, error) {
	var fresh yaml.Node
	if err := fresh.Encode(t); err != nil {
		return nil, fmt.Errorf("encode task %s: %w", t.ID, err)
	}
	out := &fresh
	if node := t.document(); node != nil {
		out = mergeMapping(node, &fresh, taskKeys, map[string]map[string]bool{"results": resultKeys})
	}
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(out); err != nil {
		return nil, fmt.Errorf("encode task %s: %w", t.ID, err)
	}
	if err := enc.Close(); err != nil {
		return nil, fmt.Errorf("encode task %s: %w", t.ID, err)
	}
	return buf.Bytes(), nil
}

// mergeMapping returns old with the values of fresh: each key of old that
// fresh has takes fresh's value (old's node when equal, for its style and
// comments), a known key fresh lacks is dropped, an unknown key stays, and
// fresh's other keys follow in their order. nested names the keys whose
// mappings merge the same way, with their own known keys. old is not
// changed.
func mergeMapping(old, fresh *yaml.Node, known map[string]bool, nested map[string]map[string]bool) *yaml.Node {
	vals := map[string]*yaml.Node{}
	for i := 0; i+1 < len(fresh.Content); i += 2 {
		vals[fresh.Content[i].Value] = fresh.Content[i+1]
	}
	out := *old
	out.Content = make([]*yaml.Node, 0, len(old.Content)+len(fresh.Content))
	used := map[string]bool{}
	for i := 0; i+1 < len(old.Content); i += 2 {
		k, v := old.Content[i], old.Content[i+1]
		fv, ok := vals[k.Value]
		switch {
		case ok && !used[k.Value]:
			used[k.Value] = true
			out.Content = append(out.Content, k, mergeValue(v, fv, nested[k.Value]))
		case known[k.Value]:
			// an emptied field: dropped
		default:
			out.Content = append(out.Content, k, v)
		}
	}
	for i := 0; i+1 < len(fresh.Content); i += 2 {
		if k := fresh.Content[i]; !used[k.Value] {
			out.Content = append(out.Content, k, fresh.Content[i+1])
		}
	}
	return &out
}

func mergeValue(old, fresh *yaml.Node, known map[string]bool) *yaml.Node {
	switch {
	case known != nil && old.Kind == yaml.MappingNode && fresh.Kind == yaml.MappingNode:
		return mergeMapping(old, fresh, known, nil)
	case old.Kind == yaml.ScalarNode && fresh.Kind == yaml.ScalarNode && old.Value == fresh.Value && old.ShortTag() == fresh.ShortTag():
		return old
	}
	return fresh
}
