package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/cra-dev/cra/internal/board"
	"github.com/cra-dev/cra/internal/fleetapi"
	"github.com/cra-dev/cra/internal/statedir"
	"github.com/cra-dev/cra/internal/world"
)

// Client does the fleet's operations through a running daemon's API, so
// that a command run beside 'cra serve' goes through it (gopls's
// connect): the daemon's processor holds the run, its board's lock the
// change. It implements fleetapi.Ops.
type Client struct {
	// Base is the daemon's address, http://HOST:PORT.
	Base string
	// Token is sent as a bearer token when set.
	Token string
	// Command names the cra command for the daemon's output (the
	// X-Cra-Command header).
	Command string
	// HTTP is the client; nil is one without a timeout (a run takes as
	// long as it takes).
	HTTP *http.Client
}

var _ fleetapi.Ops = (*Client)(nil)

// Dial returns a client of the daemon that serve.json in stateDir names
// when that daemon is alive and answers as the pid it wrote; nil when no
// daemon runs (no serve.json, a dead pid, a refused connection: a daemon
// killed with -9 leaves serve.json behind). token is the one to send; off
// loopback an empty one is read from the daemon's serve.token.
func Dial(ctx context.Context, stateDir, token, command string) (*Client, error) {
	data, err := os.ReadFile(statedir.At(stateDir).ServeInfo())
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", InfoName, err)
	}
	var info Info
	if err := json.Unmarshal(data, &info); err != nil || info.PID <= 0 || info.Addr == "" {
		return nil, nil // half written, or not ours: work in process
	}
	if !alive(info.PID) {
		return nil, nil
	}
	host, port, err := net.SplitHostPort(info.Addr)
	if err != nil {
		return nil, nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	if token == "" {
		// Made by a daemon off loopback; absent on loopback, where none
		// is needed.
		if data, err := os.ReadFile(statedir.At(stateDir).ServeToken()); err == nil {
			token = strings.TrimSpace(string(data))
		}
	}
	c := &Client{Base: "http://" + net.JoinHostPort(host, port), Token: token, Command: command}
	probe := &http.Client{Timeout: 2 * time.Second}
	var h struct {
		PID int `json:"pid"`
	}
	if err := c.call(ctx, probe, http.MethodGet, "/healthz", nil, &h); err != nil {
		var ae *APIError
		if errors.As(err, &ae) {
			return nil, fmt.Errorf("the daemon for this repository (pid %d, on %s) refused the command: %w", info.PID, info.Addr, err)
		}
		return nil, nil // not listening (yet, or any more)
	}
	if h.PID != info.PID {
		return nil, nil
	}
	return c, nil
}

// alive reports whether process pid exists.
func alive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// APIError is an error answer of the daemon: its status, and the message
// the daemon's own operation gave, unchanged.
type APIError struct {
	Status   int
	Message  string
	Field    string
	Fix      string
	Possible []board.Folder
}

func (e *APIError) Error() string { return e.Message }

// Unwrap makes a 404 board.ErrNotFound, as in process.
func (e *APIError) Unwrap() error {
	if e.Status == http.StatusNotFound {
		return board.ErrNotFound
	}
	return nil
}

// Invalid says the request's input was refused (400): a usage error.
func (e *APIError) Invalid() bool { return e.Status == http.StatusBadRequest }

func (c *Client) call(ctx context.Context, hc *http.Client, method, path string, in, out any) error {
	var body io.Reader
	if in != nil {
		data, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(data)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.Base+path, body)
	if err != nil {
		return err
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.Token)
	}
	if c.Command != "" && path != "/healthz" {
		req.Header.Set(CommandHeader, c.Command)
	}
	if hc == nil {
		hc = c.HTTP
	}
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		return fmt.Errorf("the daemon at %s: %w", c.Base, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("the daemon at %s: %w", c.Base, err)
	}
	if resp.StatusCode >= 300 {
		var ae apiError
		if json.Unmarshal(data, &ae) != nil || ae.Error == "" {
			ae.Error = fmt.Sprintf("the daemon at %s answered %s", c.Base, resp.Status)
		}
		return &APIError{Status: resp.StatusCode, Message: ae.Error, Field: ae.Field, Fix: ae.Fix, Possible: ae.Possible}
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("the daemon at %s: read its answer: %w", c.Base, err)
	}
	return nil
}

func taskPath(id string, rest string) string { return "/api/tasks/" + url.PathEscape(id) + rest }

// Add adds t through the daemon (POST /api/tasks).
func (c *Client) Add(ctx context.Context, t *board.Task) (*board.Task, error) {
	in := newTask{ID: t.ID, Title: t.Title, Description: t.Description, Need: t.Need, Type: t.Type,
		Kind: string(t.Kind), Priority: string(t.Priority), Milestone: t.Milestone, After: t.After,
		Agent: t.Agent, NoChange: t.NoChange, TestsMayChange: t.TestsMayChange}
	var out taskJSON
	if err := c.call(ctx, nil, http.MethodPost, "/api/tasks", in, &out); err != nil {
		return nil, err
	}
	return out.Task, nil
}

// Edit edits task id through the daemon (PATCH /api/tasks/{id}).
func (c *Client) Edit(ctx context.Context, id string, p fleetapi.Patch) (*board.Task, []string, error) {
	var out struct {
		Task    *board.Task `json:"task"`
		Changed []string    `json:"changed"`
	}
	if err := c.call(ctx, nil, http.MethodPatch, taskPath(id, ""), p, &out); err != nil {
		return nil, nil, err
	}
	return out.Task, out.Changed, nil
}

// Move moves task id through the daemon (POST /api/tasks/{id}/move).
func (c *Client) Move(ctx context.Context, id string, to board.Folder, why string) (board.Folder, error) {
	var before struct {
		Folder board.Folder `json:"folder"`
	}
	if err := c.call(ctx, nil, http.MethodGet, taskPath(id, "?view=card"), nil, &before); err != nil {
		return "", err
	}
	in := struct {
		To  string `json:"to"`
		Why string `json:"why"`
	}{string(to), why}
	if err := c.call(ctx, nil, http.MethodPost, taskPath(id, "/move"), in, nil); err != nil {
		return "", err
	}
	return before.Folder, nil
}

// Answer answers task id through the daemon.
func (c *Client) Answer(ctx context.Context, id, text string) (bool, error) {
	in := struct {
		Text string `json:"text"`
	}{text}
	var out struct {
		Resumed bool `json:"resumed"`
	}
	err := c.call(ctx, nil, http.MethodPost, taskPath(id, "/answer"), in, &out)
	return out.Resumed, err
}

// List lists folder's tasks through the daemon.
func (c *Client) List(ctx context.Context, folder board.Folder) (*fleetapi.Listing, error) {
	path := "/api/tasks"
	if folder != "" {
		path += "?folder=" + url.QueryEscape(string(folder))
	}
	var out struct {
		Tasks    []fleetapi.TaskView `json:"tasks"`
		Problems []string            `json:"problems"`
		Skipped  []string            `json:"skipped"`
	}
	if err := c.call(ctx, nil, http.MethodGet, path, nil, &out); err != nil {
		return nil, err
	}
	if out.Tasks == nil {
		out.Tasks = []fleetapi.TaskView{}
	}
	return &fleetapi.Listing{Tasks: out.Tasks, Problems: out.Problems, Skipped: out.Skipped}, nil
}

// NeedsYou lists the tasks that wait for a person through the daemon.
func (c *Client) NeedsYou(ctx context.Context) ([]fleetapi.NeedsYou, error) {
	out := []fleetapi.NeedsYou{}
	err := c.call(ctx, nil, http.MethodGet, "/api/needs-you", nil, &out)
	return out, err
}

// Show reads task id through the daemon, with every log line.
func (c *Client) Show(ctx context.Context, id string) (*fleetapi.Detail, error) {
	var in taskDetail
	if err := c.call(ctx, nil, http.MethodGet, taskPath(id, "?log=all"), nil, &in); err != nil {
		return nil, err
	}
	if in.Task == nil {
		return nil, fmt.Errorf("the daemon at %s: read its answer: it has no task", c.Base)
	}
	d := &fleetapi.Detail{Task: in.Task, Folder: in.Folder, Entries: []world.Entry{}, Runs: in.Runs, Reviews: in.Reviews,
		BadReviews: in.BadReviews, ReviewFile: in.ReviewFile, EvidenceText: in.EvidenceText, WaitsForPerson: in.WaitsForPerson}
	for _, m := range in.Log {
		if m.Entry != nil {
			d.Entries = append(d.Entries, *m.Entry)
		}
	}
	if d.Reviews == nil {
		d.Reviews = []fleetapi.Review{}
	}
	return d, nil
}

// RunOne runs task id in the daemon's processor and waits for it.
func (c *Client) RunOne(ctx context.Context, id string) (*fleetapi.Outcome, error) {
	var o fleetapi.Outcome
	if err := c.call(ctx, nil, http.MethodPost, taskPath(id, "/run"), struct{}{}, &o); err != nil {
		return nil, err
	}
	o.Duration = o.FinishedAt.Sub(o.StartedAt)
	return &o, nil
}

// RecycleOnce runs one recycler tick in the daemon; its lines go to out.
func (c *Client) RecycleOnce(ctx context.Context, out io.Writer) (*fleetapi.RecycleReport, error) {
	var r recycled
	if err := c.call(ctx, nil, http.MethodPost, "/api/recycle", struct{}{}, &r); err != nil {
		return nil, err
	}
	if out != nil && r.Output != "" {
		io.WriteString(out, r.Output)
	}
	if r.Report == nil {
		r.Report = &fleetapi.RecycleReport{}
	}
	return r.Report, nil
}

// Close does nothing: a client holds no connection between calls.
func (c *Client) Close() error { return nil }

// Stop stops task id's run through the daemon.
func (c *Client) Stop(ctx context.Context, id, why string) (*fleetapi.Stopped, error) {
	var out fleetapi.Stopped
	if err := c.call(ctx, nil, http.MethodPost, taskPath(id, "/stop"), whyBody{Why: why}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// CloseTask closes task id through the daemon.
func (c *Client) CloseTask(ctx context.Context, id, why string) (*board.Task, error) {
	var out taskJSON
	if err := c.call(ctx, nil, http.MethodPost, taskPath(id, "/close"), whyBody{Why: why}, &out); err != nil {
		return nil, err
	}
	return out.Task, nil
}

// Reopen reopens task id through the daemon.
func (c *Client) Reopen(ctx context.Context, id string) (*board.Task, error) {
	var out taskJSON
	if err := c.call(ctx, nil, http.MethodPost, taskPath(id, "/reopen"), struct{}{}, &out); err != nil {
		return nil, err
	}
	return out.Task, nil
}

// Merge merges task id's branch through the daemon.
func (c *Client) Merge(ctx context.Context, id string, o fleetapi.MergeOptions) (*board.Task, error) {
	var out taskJSON
	if err := c.call(ctx, nil, http.MethodPost, taskPath(id, "/merge"), o, &out); err != nil {
		return nil, err
	}
	return out.Task, nil
}

// PR pushes task id's branch and opens a pull request through the daemon.
func (c *Client) PR(ctx context.Context, id string, o fleetapi.PROptions) (*fleetapi.PullRequest, error) {
	var out fleetapi.PullRequest
	if err := c.call(ctx, nil, http.MethodPost, taskPath(id, "/pr"), o, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Settings reads the board's settings through the daemon (GET
// /api/settings).
func (c *Client) Settings(ctx context.Context) (*fleetapi.SettingsView, error) {
	var out fleetapi.SettingsView
	if err := c.call(ctx, nil, http.MethodGet, "/api/settings", nil, &out); err != nil {
		return nil, err
	}
	return compactView(&out), nil
}

// SetSettings changes the board's settings through the daemon (PUT
// /api/settings). A value the daemon refuses is a *fleetapi.SettingError,
// as in process.
func (c *Client) SetSettings(ctx context.Context, in fleetapi.Settings) (*fleetapi.SettingsView, error) {
	var out fleetapi.SettingsView
	if err := c.call(ctx, nil, http.MethodPut, "/api/settings", in, &out); err != nil {
		var ae *APIError
		if errors.As(err, &ae) && ae.Status == http.StatusBadRequest {
			return nil, &fleetapi.SettingError{Field: ae.Field, Msg: ae.Message, Fix: ae.Fix}
		}
		return nil, err
	}
	return compactView(&out), nil
}

// compactView drops the indentation the daemon's answer put inside
// enabled_for, so that the view is byte for byte the fleet's.
func compactView(v *fleetapi.SettingsView) *fleetapi.SettingsView {
	var b bytes.Buffer
	if json.Compact(&b, v.Recycler.EnabledFor) == nil {
		v.Recycler.EnabledFor = b.Bytes()
	}
	return v
}

// Cleanup runs one cleanup pass in the daemon and waits for its report
// (POST /api/cleanup?wait=true). A pass refused because one runs is
// fleetapi.ErrCleanupRunning, as in process.
func (c *Client) Cleanup(ctx context.Context, dryRun bool) (*fleetapi.CleanupReport, error) {
	path := "/api/cleanup?wait=true"
	if dryRun {
		path += "&dry_run=true"
	}
	var out fleetapi.CleanupReport
	if err := c.call(ctx, nil, http.MethodPost, path, struct{}{}, &out); err != nil {
		var ae *APIError
		if errors.As(err, &ae) && ae.Status == http.StatusConflict {
			return nil, fleetapi.ErrCleanupRunning
		}
		return nil, err
	}
	if out.Groups == nil {
		return nil, fmt.Errorf("the daemon at %s: read its answer: it is not a cleanup report", c.Base)
	}
	return &out, nil
}
