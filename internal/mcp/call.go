package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"strings"
	"unicode/utf8"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/cra-dev/cra/internal/world"
)

// MaxText bounds the text of any tool result, in bytes: the largest
// context package (maxBudget tokens, about four characters each) with
// room for its headings. Longer text is cut, and says so.
const MaxText = 4*maxBudget + 16<<10

// reply is what a tool's work returns: the structured output, the text a
// model reads, and the summary for the world log.
type reply[Out any] struct {
	out     Out
	text    string
	summary string
}

// toolDef describes a tool to clients.
type toolDef struct {
	name, title, desc string
	// readsIndex: the call compares the files with the index first.
	readsIndex bool
	// writes: the tool changes the board or the world log, where every
	// other tool only reads.
	writes bool
}

// call is what a tool's work learns of its call besides its arguments.
type call struct {
	// index is how current the index was (zero for a tool that does not
	// read it).
	index IndexState
	// client is the name the client gave at initialize.
	client string
}

// addTool registers a tool whose calls are checked against sp, decoded
// into In and run by work with the index state (zero when the tool does
// not read the index). A malformed call is a JSON-RPC error; a failure
// or a panic of work is a tool error; every call is logged.
func addTool[In, Out any](s *Server, def toolDef, sp spec, work func(ctx context.Context, in In, c call) (reply[Out], error)) {
	out, err := jsonschema.For[Out](nil)
	if err != nil {
		panic(fmt.Sprintf("mcp: output schema of %s: %v", def.name, err)) // a programming error, found by every test
	}
	t := &sdk.Tool{Name: def.name, Title: def.title, Description: def.desc, InputSchema: sp.schema(), OutputSchema: out,
		Annotations: &sdk.ToolAnnotations{Title: def.title, ReadOnlyHint: !def.writes, IdempotentHint: !def.writes,
			DestructiveHint: new(bool), OpenWorldHint: new(bool)}}
	s.sdk.AddTool(t, func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		var in In
		if err := sp.decode(req.Params.Arguments, &in); err != nil {
			var ae *argError
			if errors.As(err, &ae) {
				s.logCall(ctx, def.name, "refused: "+ae.detail())
				return nil, ae.rpc()
			}
			return nil, err
		}
		var c call
		if def.readsIndex {
			c.index = s.freshen(ctx)
		}
		if req.Session != nil {
			if p := req.Session.InitializeParams(); p != nil && p.ClientInfo != nil {
				c.client = clipText(p.ClientInfo.Name, 60)
			}
		}
		r, err := safely(func() (reply[Out], error) { return work(ctx, in, c) })
		var wire *jsonrpc.Error
		if errors.As(err, &wire) {
			// Arguments whose fault shows only together (failed without
			// a need): a malformed call, as the decoder's refusals are.
			s.logCall(ctx, def.name, "refused: "+wire.Message)
			return nil, wire
		}
		if err != nil {
			s.logCall(ctx, def.name, "failed: "+err.Error())
			res := &sdk.CallToolResult{}
			res.SetError(fmt.Errorf("%s: %w", def.name, err))
			return res, nil
		}
		s.logCall(ctx, def.name, r.summary)
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: bound(r.text, MaxText)}}, StructuredContent: r.out}, nil
	})
}

// safely runs f, turning a panic into an error: a tool's bug fails its
// call, not the server.
func safely[T any](f func() (T, error)) (v T, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("internal error (a bug in cra, please report it): %v\n%s", p, firstLines(string(debug.Stack()), 12))
		}
	}()
	return f()
}

func firstLines(s string, n int) string {
	lines := strings.SplitN(s, "\n", n+1)
	return strings.Join(lines[:min(n, len(lines))], "\n")
}

// bound cuts text to at most n bytes at a character boundary, saying so.
func bound(text string, n int) string {
	if len(text) <= n {
		return text
	}
	note := fmt.Sprintf("\n… (cut at %d of %d bytes: ask for less)\n", n, len(text))
	cut := max(0, n-len(note))
	for cut > 0 && !utf8.RuneStart(text[cut]) {
		cut--
	}
	return text[:cut] + note
}

// clipText cuts s to n characters, whole ones, marking the cut.
func clipText(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n]) + "…"
}

// firstLine is s's first non-empty line, trimmed.
func firstLine(s string) string {
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			return l
		}
	}
	return ""
}

// maxLogOutput bounds a call's world-log line.
const maxLogOutput = 400

// logCall appends the call's [event:mcp] line to the world log: the
// caller's run when known, the tool and what it did. A read-only state
// directory, or a log that refuses the line, leaves it to the logger.
func (s *Server) logCall(ctx context.Context, tool, summary string) {
	id := "mcp"
	out := tool + ": " + summary
	if s.opts.TaskID != "" {
		id = s.opts.TaskID
		if s.opts.Run != "" {
			out = "run " + s.opts.Run + " " + out
		}
	}
	s.logEvent(ctx, id, out)
}

// logEvent appends [event:mcp][id] out, or gives it to the logger where
// the state directory is read-only or the log refuses it.
func (s *Server) logEvent(ctx context.Context, id, out string) {
	out = clipText(out, maxLogOutput)
	if s.opts.ReadOnly {
		s.opts.Logger.Info("mcp call", "id", id, "call", out)
		return
	}
	if err := world.LogEvent(context.WithoutCancel(ctx), s.stateDir, world.SourceMCP, id, out); err != nil {
		s.opts.Logger.Warn("mcp call not recorded in the world log", "err", err, "call", out)
	}
}

// quote is a task's first line, short, for a log line.
func quote(task string) string {
	return fmt.Sprintf("%q", clipText(firstLine(task), 80))
}

// jsonText is v as indented JSON, the text of the tools whose output is
// data rather than prose.
func jsonText(v any) string {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Sprintf("(the result could not be encoded: %v)", err)
	}
	return string(b)
}
