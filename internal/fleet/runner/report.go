package runner

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/cra-dev/cra/internal/world"
)

// The variables a run's process finds its way back to cra by: the
// address its reports go to, and the token that proves which run it is.
const (
	EnvReportURL = "CRA_REPORT_URL"
	EnvRunToken  = "CRA_RUN_TOKEN"
)

// Report is what an agent tells cra from inside its run ('cra log agent'
// and 'cra log event' there, the MCP report tool): a lifecycle step of
// its own task (active, finish, or failed with a need) or an event line.
// verified and retry are never an agent's to give (DESIGN.md, "Trust").
type Report struct {
	// Kind is "agent" (a lifecycle step) or "event".
	Kind world.Kind `json:"kind"`
	// Status is the step of an agent report: active, finish or failed.
	Status world.Status `json:"status,omitempty"`
	// Source is an event's source: bash, file, chrome or api (seed 002's
	// event sources).
	Source world.Source `json:"source,omitempty"`
	// ID is the task the report is about: the run's own.
	ID     string `json:"id"`
	Output string `json:"output"`
	// Need is what a person must do, required with failed.
	Need string `json:"need,omitempty"`
}

// ReportError is a report refused: what was wrong and what may be sent.
type ReportError struct {
	Status  int    `json:"-"`
	Message string `json:"error"`
}

func (e *ReportError) Error() string { return e.Message }

// reportMaxBody caps a report's body: an output line is capped by the
// log anyway.
const reportMaxBody = 64 << 10

// runRef is the run a token was issued to.
type runRef struct {
	id  string
	run int
}

// reports is the processor's endpoint for its runs' reports: on
// loopback, each run with a token of its own, valid while it runs.
type reports struct {
	log world.Store

	mu     sync.Mutex
	url    string
	srv    *http.Server
	tokens map[string]runRef
}

// issue starts the endpoint when it is not yet listening and returns a
// new token for run n of task id, and the endpoint's address.
func (r *reports) issue(id string, n int) (token, url string, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.srv == nil {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return "", "", fmt.Errorf("listen for the run's reports: %w", err)
		}
		mux := http.NewServeMux()
		mux.HandleFunc("POST /report", r.handle)
		r.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
		r.url = "http://" + ln.Addr().String() + "/report"
		r.tokens = map[string]runRef{}
		go r.srv.Serve(ln)
	}
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", "", err
	}
	token = hex.EncodeToString(b)
	r.tokens[token] = runRef{id: id, run: n}
	return token, r.url, nil
}

// revoke ends a token: its run is over.
func (r *reports) revoke(token string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.tokens, token)
}

// close stops the endpoint.
func (r *reports) close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.srv == nil {
		return nil
	}
	err := r.srv.Close()
	r.srv = nil
	return err
}

// lookup returns the run a token names, comparing in constant time.
func (r *reports) lookup(token string) (runRef, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for t, ref := range r.tokens {
		if subtle.ConstantTimeCompare([]byte(t), []byte(token)) == 1 {
			return ref, true
		}
	}
	return runRef{}, false
}

func (r *reports) handle(w http.ResponseWriter, req *http.Request) {
	token, _ := strings.CutPrefix(req.Header.Get("Authorization"), "Bearer ")
	ref, ok := r.lookup(token)
	if !ok {
		writeReport(w, nil, &ReportError{Status: http.StatusUnauthorized, Message: "no run holds this token ($" + EnvRunToken + "): reports come only from a run cra started, while it runs"})
		return
	}
	var rep Report
	dec := json.NewDecoder(http.MaxBytesReader(w, req.Body, reportMaxBody))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&rep); err != nil {
		writeReport(w, nil, &ReportError{Status: http.StatusBadRequest, Message: "the report is not the JSON cra takes: " + err.Error()})
		return
	}
	e, err := r.append(req.Context(), ref, rep)
	writeReport(w, e, err)
}

// append checks rep against the run it came from and writes it to the
// log, whose own check refuses a step the lifecycle forbids.
func (r *reports) append(ctx context.Context, ref runRef, rep Report) (*world.Entry, error) {
	if rep.ID != ref.id {
		return nil, &ReportError{Status: http.StatusForbidden, Message: fmt.Sprintf("a run reports on its own task only: this is run %d of %s, not of %q", ref.run, ref.id, rep.ID)}
	}
	var e world.Entry
	var err error
	switch rep.Kind {
	case world.KindAgent:
		switch rep.Status {
		case world.StatusActive, world.StatusFinish:
		case world.StatusFailed:
			if strings.TrimSpace(rep.Need) == "" {
				return nil, &ReportError{Status: http.StatusBadRequest, Message: "failed needs --need: say what a person must do for the task to go on"}
			}
		case world.StatusVerified, world.StatusRetry:
			return nil, &ReportError{Status: http.StatusForbidden, Message: fmt.Sprintf("%s is not an agent's to give: only the recycler, Level 1 and 2 and a person verify or retry a task; report finish (or failed with a need) and the review decides", rep.Status)}
		default:
			return nil, &ReportError{Status: http.StatusForbidden, Message: fmt.Sprintf("a run reports active, finish or failed, not %q", rep.Status)}
		}
		e, err = r.log.Agent(ctx, rep.Status, rep.ID, rep.Output, rep.Need)
	case world.KindEvent:
		switch rep.Source {
		case world.SourceBash, world.SourceFile, world.SourceChrome, world.SourceAPI:
		default:
			// user, system and the stages are cra's and a person's: an
			// agent's event posing as a person's answer is refused.
			return nil, &ReportError{Status: http.StatusForbidden, Message: fmt.Sprintf("a run's events come from bash, file, chrome or api, not %q", rep.Source)}
		}
		e, err = r.log.Event(ctx, rep.Source, rep.ID, rep.Output)
	default:
		return nil, &ReportError{Status: http.StatusBadRequest, Message: fmt.Sprintf("kind %q: a report is kind agent or event", rep.Kind)}
	}
	if err != nil {
		var te *world.TransitionError
		if errors.As(err, &te) {
			return nil, &ReportError{Status: http.StatusConflict, Message: err.Error()}
		}
		return nil, &ReportError{Status: http.StatusInternalServerError, Message: "the report could not be logged: " + err.Error()}
	}
	return &e, nil
}

func writeReport(w http.ResponseWriter, e *world.Entry, err error) {
	w.Header().Set("Content-Type", "application/json")
	var re *ReportError
	if errors.As(err, &re) {
		w.WriteHeader(re.Status)
		json.NewEncoder(w).Encode(re)
		return
	}
	json.NewEncoder(w).Encode(e)
}

// Send sends rep to the endpoint at url with token, as 'cra log agent'
// does inside a run, and returns the entry logged.
func Send(ctx context.Context, url, token string, rep Report) (*world.Entry, error) {
	body, err := json.Marshal(rep)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("$%s %q: %w", EnvReportURL, url, err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
	if err != nil {
		return nil, fmt.Errorf("send the report to cra (the run's starter at $%s): %w", EnvReportURL, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		re := &ReportError{Status: resp.StatusCode}
		if json.Unmarshal(data, re) != nil || re.Message == "" {
			re.Message = "cra refused the report: " + resp.Status
		}
		return nil, re
	}
	var e world.Entry
	if err := json.Unmarshal(data, &e); err != nil {
		return nil, fmt.Errorf("read cra's answer to the report: %w", err)
	}
	return &e, nil
}
