package llmtest

import (
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
)

// servers holds the server of each running script.
var servers = struct {
	sync.Mutex
	m map[*testscript.TestScript]*Server
}{m: map[*testscript.TestScript]*Server{}}

// ScriptCmd is the testscript command "llmtest", registered in Params.Cmds.
// The server runs in the test process, so the commands a script executes
// reach it over loopback:
//
//	llmtest start                   start the server; set $LLM_URL (Ollama) and $LLM_OPENAI_URL (…/v1)
//	llmtest models NAME...          the models /api/tags and /v1/models list
//	llmtest strict                  the Ollama chat answers only those models (and created ones), others 404
//	llmtest on PATTERN REPLY...     answer chat requests whose prompt matches the regexp, in order; the last repeats
//	llmtest on-model MODEL REPLY... answer chat requests for MODEL, in order; the last repeats
//	llmtest enqueue REPLY...        answer other chat requests in order
//	llmtest default REPLY           answer chat requests nothing else answers
//	llmtest requests [PATTERN]      print one line per chat request (matching PATTERN)
//	llmtest manage [PATTERN]        print one line per blobs or create request (matching PATTERN): method, path, status, model, from, adapters
//	llmtest blob FILE               hold FILE's content as an uploaded blob; print its digest
//	llmtest digest FILE             print the digest Ollama names FILE's content by
//	llmtest stop                    stop the server (its URL then refuses connections)
//
// A REPLY is @FILE (the file's text), text=STRING, status=CODE,
// ratelimit=SECONDS (a 429 with Retry-After), slow=DURATION[@FILE],
// malformed (a broken JSON body) or drop (the connection is closed); for
// agent CLIs, call=TOOL:ARGS or call=TOOL@FILE (a call of the tool the
// request offers, its JSON arguments inline or in FILE) and
// usage=IN/OUT/CACHED/TEXT (the text with those token counts).
func ScriptCmd(ts *testscript.TestScript, neg bool, args []string) {
	if neg {
		ts.Fatalf("llmtest: unsupported: ! llmtest")
	}
	if len(args) == 0 {
		ts.Fatalf("usage: llmtest start|models|strict|on|on-model|enqueue|default|requests|manage|blob|digest|stop ...")
	}
	servers.Lock()
	s := servers.m[ts]
	servers.Unlock()
	if args[0] != "start" && s == nil {
		ts.Fatalf("llmtest %s: no server: run 'llmtest start' first", args[0])
	}
	switch args[0] {
	case "start":
		if s != nil {
			ts.Fatalf("llmtest start: already started")
		}
		s = Start()
		servers.Lock()
		servers.m[ts] = s
		servers.Unlock()
		ts.Defer(func() {
			s.Close()
			servers.Lock()
			delete(servers.m, ts)
			servers.Unlock()
		})
		ts.Setenv("LLM_URL", s.OllamaURL())
		ts.Setenv("LLM_OPENAI_URL", s.OpenAIURL())
	case "models":
		s.SetModels(args[1:]...)
	case "strict":
		s.SetStrict(true)
	case "on":
		if len(args) < 3 {
			ts.Fatalf("usage: llmtest on PATTERN REPLY...")
		}
		re, err := regexp.Compile(args[1])
		ts.Check(err)
		s.On(Matches(re), parseReplies(ts, args[2:])...)
	case "on-model":
		if len(args) < 3 {
			ts.Fatalf("usage: llmtest on-model MODEL REPLY...")
		}
		s.On(Model(args[1]), parseReplies(ts, args[2:])...)
	case "enqueue":
		s.Enqueue(parseReplies(ts, args[1:])...)
	case "default":
		if len(args) != 2 {
			ts.Fatalf("usage: llmtest default REPLY")
		}
		s.SetDefault(parseReplies(ts, args[1:])[0])
	case "requests":
		// Claim stdout even when nothing matches, so that a following
		// 'stdout' or '! stdout' reads this command's (empty) output, not
		// the previous command's.
		w := ts.Stdout()
		var re *regexp.Regexp
		if len(args) > 1 {
			var err error
			re, err = regexp.Compile(args[1])
			ts.Check(err)
		}
		for _, r := range s.ChatRequests() {
			if re == nil || re.MatchString(r.Prompt()) {
				fmt.Fprintln(w, r.Summary())
			}
		}
	case "manage":
		w := ts.Stdout() // claimed even when nothing matches, as for requests
		var re *regexp.Regexp
		if len(args) > 1 {
			var err error
			re, err = regexp.Compile(args[1])
			ts.Check(err)
		}
		for _, r := range s.Requests() {
			if line := r.CreateSummary(); r.Manages() && (re == nil || re.MatchString(line)) {
				fmt.Fprintln(w, line)
			}
		}
	case "blob":
		if len(args) != 2 {
			ts.Fatalf("usage: llmtest blob FILE")
		}
		fmt.Fprintln(ts.Stdout(), s.PutBlob([]byte(ts.ReadFile(args[1]))))
	case "digest":
		if len(args) != 2 {
			ts.Fatalf("usage: llmtest digest FILE")
		}
		fmt.Fprintln(ts.Stdout(), Digest([]byte(ts.ReadFile(args[1]))))
	case "stop":
		s.Close()
	default:
		ts.Fatalf("llmtest: unknown subcommand %q", args[0])
	}
}

// Summary is one line describing a chat request: method, path, model, and
// the settings tests assert on.
func (r Request) Summary() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s model=%s", r.Method, r.Path, r.Model)
	if n := r.NumCtx(); n > 0 {
		fmt.Fprintf(&b, " num_ctx=%d", n)
	}
	if r.MaxTokens > 0 {
		fmt.Fprintf(&b, " max_tokens=%d", r.MaxTokens)
	}
	if r.Temperature != nil {
		fmt.Fprintf(&b, " temperature=%g", *r.Temperature)
	}
	fmt.Fprintf(&b, " json=%t stream=%t messages=%d", r.JSON, r.Stream, len(r.Messages))
	return b.String()
}

func parseReplies(ts *testscript.TestScript, specs []string) []Reply {
	if len(specs) == 0 {
		ts.Fatalf("llmtest: no reply given")
	}
	out := make([]Reply, len(specs))
	for i, spec := range specs {
		r, err := ParseReply(spec, ts.ReadFile)
		ts.Check(err)
		out[i] = r
	}
	return out
}

// ParseReply reads a reply spec of ScriptCmd; readFile reads @FILE.
func ParseReply(spec string, readFile func(string) string) (Reply, error) {
	key, val, _ := strings.Cut(spec, "=")
	switch {
	case strings.HasPrefix(spec, "@"):
		return Text(readFile(spec[1:])), nil
	case key == "text":
		return Text(val), nil
	case key == "status":
		code, err := strconv.Atoi(val)
		if err != nil || code < 100 || code > 599 {
			return Reply{}, fmt.Errorf("llmtest: bad status in %q", spec)
		}
		return Status(code, "llmtest: injected "+http.StatusText(code)), nil
	case key == "ratelimit":
		return RateLimited(val), nil
	case key == "slow":
		d, file, _ := strings.Cut(val, "@")
		delay, err := time.ParseDuration(d)
		if err != nil {
			return Reply{}, fmt.Errorf("llmtest: bad duration in %q", spec)
		}
		text := ""
		if file != "" {
			text = readFile(file)
		}
		return Slow(delay, text), nil
	case key == "call":
		name, args, ok := strings.Cut(val, ":")
		if at := strings.IndexByte(val, '@'); at >= 0 && (!ok || at < len(name)) {
			name, args = val[:at], readFile(val[at+1:])
		} else if !ok {
			return Reply{}, fmt.Errorf("llmtest: %q: use call=TOOL:{json} or call=TOOL@FILE", spec)
		}
		if name == "" {
			return Reply{}, fmt.Errorf("llmtest: %q names no tool", spec)
		}
		return Call(name, args), nil
	case key == "usage":
		parts := strings.SplitN(val, "/", 4)
		if len(parts) != 4 {
			return Reply{}, fmt.Errorf("llmtest: %q: use usage=IN/OUT/CACHED/TEXT", spec)
		}
		var n [3]int
		for i := range n {
			v, err := strconv.Atoi(parts[i])
			if err != nil || v < 0 {
				return Reply{}, fmt.Errorf("llmtest: bad token count %q in %q", parts[i], spec)
			}
			n[i] = v
		}
		return Usage(parts[3], n[0], n[1], n[2]), nil
	case spec == "malformed":
		return Malformed(), nil
	case spec == "drop":
		return Drop(), nil
	}
	return Reply{}, fmt.Errorf("llmtest: unknown reply %q: use @FILE, text=, status=, ratelimit=, slow=, call=, usage=, malformed or drop", spec)
}
