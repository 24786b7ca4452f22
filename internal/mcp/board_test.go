package mcp_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/cra-dev/cra/internal/mcp"
)

// TestBoardTools: a person's agent lists, shows and adds tasks; the task
// it adds says in its own log who added it; malformed calls name the
// field.
func TestBoardTools(t *testing.T) {
	t.Parallel()
	root := newRepo(t, shop...)
	s := connect(t, root, nil)
	added, text := ok[mcp.TaskAddOutput](t, s, "task_add", map[string]any{"title": "round refunds to cents", "need": "refunds are rounded", "priority": "high"})
	if added.ID == "" || added.Folder != "pending" || !strings.HasPrefix(text, "added "+added.ID+" to pending: round refunds to cents") {
		t.Fatalf("task_add: got %+v, %q", added, text)
	}
	list, _ := ok[mcp.TaskListOutput](t, s, "task_list", map[string]any{"folder": "pending"})
	if len(list.Tasks) != 1 || list.Tasks[0].ID != added.ID || list.Tasks[0].Priority != "high" || list.Tasks[0].Need != "refunds are rounded" {
		t.Errorf("task_list: got %+v", list)
	}
	if empty, _ := ok[mcp.TaskListOutput](t, s, "task_list", map[string]any{"folder": "failed-blocked"}); len(empty.Tasks) != 0 {
		t.Errorf("task_list failed-blocked: got %+v", empty)
	}
	show, _ := ok[mcp.TaskShowOutput](t, s, "task_show", map[string]any{"id": added.ID})
	var kinds []string
	for _, l := range show.Log {
		kinds = append(kinds, l.Kind+" "+l.Text)
	}
	want := []string{"agent:start round refunds to cents", "event:mcp added by a person's agent (cra-test) through MCP"}
	if show.Folder != "pending" || !slices.Equal(kinds, want) {
		t.Errorf("task_show: folder %s, log %q, want %q", show.Folder, kinds, want)
	}

	for _, tc := range []struct {
		tool  string
		args  map[string]any
		field string
	}{
		{"task_add", map[string]any{"need": "x"}, "title"},
		{"task_add", map[string]any{"title": "x", "priority": "urgent"}, "priority"},
		{"task_show", map[string]any{"id": "../../etc"}, "id"},
		{"task_list", map[string]any{"folder": "done"}, "folder"},
		{"task_list", map[string]any{"limit": 1000}, "limit"},
		{"task_add", map[string]any{"title": "two\nlines"}, "title"},
		{"task_add", map[string]any{"title": "x", "need": "y", "extra": 1}, "extra"},
	} {
		_, err := call(t, s, tc.tool, tc.args)
		var we *jsonrpc.Error
		if !errors.As(err, &we) || !strings.Contains(we.Message, tc.tool+": "+tc.field+": ") {
			t.Errorf("%s %v: got %v, want an error naming %s", tc.tool, tc.args, err, tc.field)
		}
	}
	res, err := call(t, s, "task_show", map[string]any{"id": "t-00000000"})
	if err != nil || !res.IsError || !strings.Contains(textOf(res), "t-00000000") {
		t.Errorf("unknown task: got %v, %v", res, err)
	}
}

// TestRunTools: inside a board run, an agent reports on its own task
// through the MCP server as 'cra log agent' does: an event and finish are
// logged and the task moves to completed; verified is never available; a
// wrong or missing token is refused; ask_person blocks the task with its
// question. The agent is a real MCP client (mcp-agent, below) run by
// 'cra task run' in its sandbox, and the server it starts inherits the
// run's token.
func TestRunTools(t *testing.T) {
	t.Parallel()
	root := newRepo(t, shop...)
	config := `[agents.reporter]
command = "mcp-agent --config {mcp_config} tools 'report,status=verified,output=I checked it' 'report,status=failed,output=stuck' 'wrongtoken:report,status=event,output=forged' 'notoken:report,status=event,output=forged' 'report,status=event,output=ran the tests' 'report,status=finish,output=all done'"

[agents.asker]
command = "mcp-agent --config {mcp_config} 'ask_person,question=Which of the two coupon rules applies after tax?'"
`
	write(t, root, ".clean_room/config.toml", config)
	add := func(title, agent string) string {
		t.Helper()
		out, err := exec.Command("cra", "task", "add", title, "--repo", root, "--agent", agent).Output()
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(string(out))
	}
	run := func(id string) string {
		t.Helper()
		// A run that ends blocked exits 1: its outcome is checked below.
		out, _ := exec.Command("cra", "task", "run", id, "--repo", root).CombinedOutput()
		t.Logf("cra task run %s:\n%s", id, out)
		log, err := os.ReadFile(filepath.Join(root, ".clean_room", "runs", id, "run-1.log"))
		if err != nil {
			t.Fatal(err)
		}
		return string(log)
	}
	rep := add("fix the coupon", "reporter")
	log := run(rep)
	for _, want := range []string{
		"server: cra mcp --repo " + root + " --files " + filepath.Join(root, ".clean_room", "worktrees", rep),
		// A run's agent reports on its own task; it adds no tasks, and
		// its sandbox, which may not write the world log, leaves the
		// board's tools out where no daemon answers for it.
		"tools: ask_person context file_context knowledge localize overview report symbols\n",
		"report,status=verified,output=I checked it: rpc error: report: status: verified is not an agent's to give",
		"report,status=failed,output=stuck: rpc error: report: need: empty with failed",
		"wrongtoken:report,status=event,output=forged: tool error: report: cra refused the report: no run holds this token",
		"notoken:report,status=event,output=forged: tool error: report: no run token",
		"report,status=event,output=ran the tests: ok: logged: [",
		"report,status=finish,output=all done: ok: logged: [",
	} {
		if !strings.Contains(log, want) {
			t.Errorf("the agent's run log lacks %q:\n%s", want, log)
		}
	}
	prompt, err := os.ReadFile(filepath.Join(root, ".clean_room", "runs", rep, "prompt-1.md"))
	if err != nil || !strings.Contains(string(prompt), "\n## TOOLS\n\ncra's MCP server") || !strings.Contains(string(prompt), "- report: ") {
		t.Errorf("the prompt file has no TOOLS section naming report (%v):\n%s", err, prompt)
	}
	wl := worldLog(t, root)
	for _, want := range []string{"][event:bash][" + rep + "] ran the tests\n", "][agent:finish][" + rep + "] all done\n"} {
		if !strings.Contains(wl, want) {
			t.Errorf("world log lacks %q", want)
		}
	}
	for _, bad := range []string{"][agent:verified][" + rep + "]", "forged"} {
		if strings.Contains(wl, bad) {
			t.Errorf("world log has %q", bad)
		}
	}
	if _, err := os.Stat(filepath.Join(root, ".clean_room", "tasks", "completed", rep+".yaml")); err != nil {
		t.Errorf("after report finish the task is not in completed: %v", err)
	}

	ask := add("choose the coupon rule", "asker")
	log = run(ask)
	if !strings.Contains(log, "ask_person,question=Which of the two coupon rules applies after tax?: ok: logged: [") {
		t.Errorf("the asker's run log:\n%s", log)
	}
	if want := "][agent:failed][" + ask + "] asked a person: Which of the two coupon rules applies after tax? | need: Which of the two coupon rules applies after tax?\n"; !strings.Contains(worldLog(t, root), want) {
		t.Errorf("world log lacks %q", want)
	}
	if _, err := os.Stat(filepath.Join(root, ".clean_room", "tasks", "failed-blocked", ask+".yaml")); err != nil {
		t.Errorf("after ask_person the task is not in failed-blocked: %v", err)
	}
}

func worldLog(t *testing.T, root string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, ".clean_room", "world.log"))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// mcpAgent is an agent that only speaks MCP, as a real one configured
// with the run's $CRA_MCP_CONFIG does: each argument is a call,
// "tool,key=value,…", made to the server the configuration names, started
// with the agent's environment (the run's) and the configuration's; "tools"
// lists the server's tools; "--config PATH" first checks that the
// {mcp_config} placeholder is $CRA_MCP_CONFIG; "wrongtoken:" or "notoken:" before a call
// starts that call's server with a forged or no token. It prints each
// call's outcome, and exits 0.
func mcpAgent(args []string) int {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	path := os.Getenv("CRA_MCP_CONFIG")
	if len(args) > 1 && args[0] == "--config" {
		if args[1] != path {
			fmt.Printf("{mcp_config} is %q, $CRA_MCP_CONFIG %q\n", args[1], path)
			return 1
		}
		args = args[2:]
	}
	var cfg struct {
		Servers map[string]struct {
			Command string
			Args    []string
			Env     map[string]string
		} `json:"mcpServers"`
	}
	data, err := os.ReadFile(path)
	if err == nil {
		err = json.Unmarshal(data, &cfg)
	}
	srv, found := cfg.Servers["cra"]
	if err != nil || !found {
		fmt.Printf("no cra server in $CRA_MCP_CONFIG (%q): %v\n", path, err)
		return 1
	}
	fmt.Printf("server: %s %s\n", filepath.Base(srv.Command), strings.Join(srv.Args, " "))
	for _, arg := range args {
		step := arg
		env := os.Environ()
		for k, v := range srv.Env {
			env = append(env, k+"="+v)
		}
		if rest, ok := strings.CutPrefix(step, "wrongtoken:"); ok {
			step, env = rest, append(env, "CRA_RUN_TOKEN=forged")
		} else if rest, ok := strings.CutPrefix(step, "notoken:"); ok {
			step, env = rest, append(env, "CRA_RUN_TOKEN=")
		}
		parts := strings.Split(step, ",")
		params := map[string]any{}
		for _, kv := range parts[1:] {
			k, v, _ := strings.Cut(kv, "=")
			params[k] = v
		}
		cmd := exec.Command(srv.Command, srv.Args...)
		cmd.Env, cmd.Stderr = env, os.Stderr
		s, err := sdk.NewClient(&sdk.Implementation{Name: "mcp-agent", Version: "1"}, nil).Connect(ctx, &sdk.CommandTransport{Command: cmd}, nil)
		if err != nil {
			fmt.Printf("%s: connect: %v\n", arg, err)
			continue
		}
		if parts[0] == "tools" {
			var names []string
			for tool, err := range s.Tools(ctx, nil) {
				if err != nil {
					fmt.Printf("%s: error: %v\n", arg, err)
					break
				}
				names = append(names, tool.Name)
			}
			slices.Sort(names)
			fmt.Printf("%s: %s\n", arg, strings.Join(names, " "))
			s.Close()
			continue
		}
		res, err := s.CallTool(ctx, &sdk.CallToolParams{Name: parts[0], Arguments: params})
		var we *jsonrpc.Error
		switch {
		case errors.As(err, &we):
			fmt.Printf("%s: rpc error: %s\n", arg, we.Message)
		case err != nil:
			fmt.Printf("%s: error: %v\n", arg, err)
		case res.IsError:
			fmt.Printf("%s: tool error: %s\n", arg, textOf(res))
		default:
			fmt.Printf("%s: ok: %s", arg, textOf(res))
		}
		s.Close()
	}
	return 0
}
