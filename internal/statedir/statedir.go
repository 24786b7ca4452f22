// Package statedir names every path under a repository's state directory,
// <repo>/.clean_room/, in one place (DESIGN.md and README.md, "Where state
// lives"). Code elsewhere asks a Dir for a path and never joins a state
// subfolder or file name by hand, so the tree the README shows is the tree
// the code writes (litestream's db.go, MetaPath and ShadowWALDir, is the
// model). internal/layout_test.go holds the rule.
//
//	.clean_room/
//	  .gitignore            "*": nothing of cra shows up in 'git status'
//	  config.toml           Config
//	  curated.sqlite        Curated
//	  raw.sqlite            Raw
//	  sessions/             Sessions, Session(id): session_<id>.sqlite
//	  world.log             WorldLog, and beside it WorldLock, WorldIndex,
//	                        WorldCompacted, WorldCompacting, WorldArchive
//	  markers/              Markers, Marker(name)
//	  tasks/<folder>/       Tasks, TaskFolder, TaskFile: <id>.yaml; TasksLock,
//	                        TaskIndex: tasks/.index.<folder>
//	  worktrees/<id>/       Worktrees, Worktree(id)
//	  runs/<id>/            Runs, Run(id): run.json, starting.json, prompt-N.md,
//	                        task-N.md, mcp-N.json, run-N.log, reviews.jsonl
//	  plans/<id>.md         Plans, Plan(id): what 'cra plan' writes
//	  training/             Training: plans/, datasets/, train/dataset-<id>/,
//	                        bootstrap/<name>/, curate.lock
//	  notify-pending.jsonl  NotifyPending; NotifyLock
//	  supervisors.jsonl     SupervisorsLog; SupervisorsLock
//	  serve.json            ServeInfo; ServeLock, ServeToken
//	  validation/base/      ValidationBase(key): <key>.json, a base commit's
//	                        test results, which every branch from it is
//	                        compared with
//	  *.lock                IndexLock, CleanupLock, AdaptersLock
//	  knowledge-sync.lock   KnowledgeSyncLock: one knowledge sync at a time
//	  knowledge-conflicts/  KnowledgeConflicts: this host's versions of
//	                        documents another host changed too
//	  fleet-raw-*/          FleetRaw: a merged copy of several hosts' raw
//	                        databases while train-plan or curate-data runs,
//	                        with FleetRawLock held by its process
//
// The package imports only the standard library, so that every floor may
// use it.
package statedir

import (
	"fmt"
	"path/filepath"
)

// Name is the state directory's name inside a repository.
const Name = ".clean_room"

// Names of the entries of the state directory that other packages show in
// messages or keep as their own constants. A path is built with Dir's
// methods, never by joining these.
const (
	ConfigFile      = "config.toml"
	CuratedFile     = "curated.sqlite"
	RawFile         = "raw.sqlite"
	SessionsDir     = "sessions"
	WorldLogFile    = "world.log"
	WorldLockFile   = "world.log.lock"        // flock(2) target; never renamed
	WorldIndexFile  = "world.log.idx"         // side index: agent states and byte offsets
	WorldCompacted  = "world.log.compacted"   // where appends resume after a compaction
	WorldCompacting = "world.log.compacting"  // a compaction's journal while it runs
	WorldArchive    = "world.log.archive"     // lines compaction dropped
	MarkersDir      = "markers"               // read markers, one file each
	TasksDir        = "tasks"                 // the board's folders
	TasksLockFile   = ".lock"                 // in TasksDir; the dot keeps it out of listings
	taskIndexPrefix = ".index."               // in TasksDir: a folder's list index
	WorktreesDir    = "worktrees"             // board tasks' and 'cra solve's worktrees
	RunsDir         = "runs"                  // one directory per task's runs
	AgentsDir       = "agents"                // isolated preset agents' state, one directory per profile
	RunFile         = "run.json"              // in a run directory: the running run's identity
	ClaimFile       = "starting.json"         // in a run directory: a starter's claim
	ReviewsFile     = "reviews.jsonl"         // in a run directory: the recycler's history
	PlansDir        = "plans"                 // 'cra plan' output
	TrainingDir     = "training"              // datasets, plans and trainer configs
	NotifyPending   = "notify-pending.jsonl"  // notifications not told yet
	NotifyLock      = "notify.lock"           // one sender at a time
	SupervisorsLog  = "supervisors.jsonl"     // the supervisors' run records
	SupervisorsLock = "supervisors.lock"      // one supervisor pass at a time
	ServeInfo       = "serve.json"            // the running daemon's pid and address
	ServeLock       = "serve.lock"            // one daemon per repository
	ServeToken      = "serve.token"           // the daemon's API token, mode 0600
	IndexLock       = "index.lock"            // the index writers
	ValidationDir   = "validation"            // the recycler's validation: base results
	validationBase  = "base"                  // in ValidationDir: one file per base and commands
	CleanupLock     = "cleanup.lock"          // one cleanup pass at a time
	RecyclerBreaker = "recycler-breaker.json" // the recycler's circuit breaker
	AdaptersLock    = "adapters.lock"         // adapter registration
	GitIgnoreFile   = ".gitignore"            // "*", so git never shows the directory
	KnowledgeSync   = "knowledge-sync.lock"   // one knowledge sync through the fleet's remote at a time
	KnowledgeClash  = "knowledge-conflicts"   // this host's versions of documents changed elsewhere too
	FleetRawPrefix  = "fleet-raw-"            // os.MkdirTemp's pattern of a merged raw copy
	fleetRawLock    = "in-use.lock"           // in a merged raw copy: held while a process reads it
	trainingCurate  = "curate.lock"           // in TrainingDir: one curate-data at a time
	trainingPlans   = "plans"                 // in TrainingDir
	trainingData    = "datasets"              // in TrainingDir
	trainingJobs    = "train"                 // in TrainingDir
	trainingBoot    = "bootstrap"             // in TrainingDir
	compactTempGlob = "." + WorldLogFile + ".compact*"
)

// Dir is a repository's state directory. The zero Dir names paths relative
// to the state directory ("runs/<id>/run-1.log"), as messages show them.
type Dir struct{ path string }

// FleetRawCopies is the glob of the merged raw copies (FleetRawPrefix).
func (d Dir) FleetRawCopies() string { return d.join(FleetRawPrefix + "*") }

// FleetRawLock is, in a merged raw copy's directory (a Dir of its own),
// the lock its process holds while it reads the copy: a copy whose lock
// is free was left by a process that died.
func (d Dir) FleetRawLock() string { return d.join(fleetRawLock) }

// Of returns the state directory of the repository whose root is root.
func Of(root string) Dir { return Dir{filepath.Join(root, Name)} }

// At returns the state directory at path (a .clean_room directory itself).
func At(path string) Dir { return Dir{path} }

// Path returns the state directory itself.
func (d Dir) Path() string { return d.path }

func (d Dir) join(elem ...string) string {
	return filepath.Join(append([]string{d.path}, elem...)...)
}

// GitIgnore is the directory's own .gitignore.
func (d Dir) GitIgnore() string { return d.join(GitIgnoreFile) }

// Config is config.toml.
func (d Dir) Config() string { return d.join(ConfigFile) }

// Curated is the curated database, the index.
func (d Dir) Curated() string { return d.join(CuratedFile) }

// Raw is the raw database: the activity log and the training corpus.
func (d Dir) Raw() string { return d.join(RawFile) }

// Sessions is the directory of the per-run session databases.
func (d Dir) Sessions() string { return d.join(SessionsDir) }

// Session is task id's session database, sessions/session_<id>.sqlite.
func (d Dir) Session(id string) string { return d.join(SessionsDir, "session_"+id+".sqlite") }

// WorldLog is the world log.
func (d Dir) WorldLog() string { return d.join(WorldLogFile) }

// WorldLock is the world log's flock(2) file.
func (d Dir) WorldLock() string { return d.join(WorldLockFile) }

// WorldIndex is the world log's side index.
func (d Dir) WorldIndex() string { return d.join(WorldIndexFile) }

// WorldCompacted is the note of where appends resume after a compaction.
func (d Dir) WorldCompacted() string { return d.join(WorldCompacted) }

// WorldCompacting is a running compaction's journal.
func (d Dir) WorldCompacting() string { return d.join(WorldCompacting) }

// WorldArchive holds the lines compaction moved out of the log.
func (d Dir) WorldArchive() string { return d.join(WorldArchive) }

// WorldCompactTemps is the glob of a compaction's temporary copies.
func (d Dir) WorldCompactTemps() string { return d.join(compactTempGlob) }

// Markers is the directory of the read markers of 'cra log check'.
func (d Dir) Markers() string { return d.join(MarkersDir) }

// Marker is the read marker called name.
func (d Dir) Marker(name string) string { return d.join(MarkersDir, name) }

// Tasks is the task board's directory.
func (d Dir) Tasks() string { return d.join(TasksDir) }

// TaskFolder is one folder of the board, tasks/<folder>.
func (d Dir) TaskFolder(folder string) string { return d.join(TasksDir, folder) }

// TaskFile is task id's file in folder, tasks/<folder>/<id>.yaml.
func (d Dir) TaskFile(folder, id string) string { return d.join(TasksDir, folder, id+".yaml") }

// TaskIndex is the list index of one folder of the board,
// tasks/.index.<folder>; the leading dot keeps it out of listings and
// sweeps.
func (d Dir) TaskIndex(folder string) string { return d.join(TasksDir, taskIndexPrefix+folder) }

// TasksLock is the board's flock(2) file, tasks/.lock.
func (d Dir) TasksLock() string { return d.join(TasksDir, TasksLockFile) }

// Worktrees is the directory of the agents' worktrees.
func (d Dir) Worktrees() string { return d.join(WorktreesDir) }

// Worktree is the worktree called name (a task id, or a task id with a
// suffix when 'cra solve' finds the name taken).
func (d Dir) Worktree(name string) string { return d.join(WorktreesDir, name) }

// Runs is the directory of the run directories.
func (d Dir) Runs() string { return d.join(RunsDir) }

// Run is task id's run directory, runs/<id>.
func (d Dir) Run(id string) Run { return Run{d.join(RunsDir, id)} }

// Plans is the directory where 'cra plan' writes its plans.
func (d Dir) Plans() string { return d.join(PlansDir) }

// Agent is where the agent of preset profile name keeps its state when
// the profile says state = "isolated" (internal/agentcli).
func (d Dir) Agent(name string) string { return d.join(AgentsDir, name) }

// Plan is the plan 'cra plan' writes for task id, plans/<id>.md.
func (d Dir) Plan(id string) string { return d.join(PlansDir, id+".md") }

// Training is the directory of the training artifacts.
func (d Dir) Training() string { return d.join(TrainingDir) }

// TrainingPlans is the directory of the training plans' files.
func (d Dir) TrainingPlans() string { return d.join(TrainingDir, trainingPlans) }

// TrainingPlan is plan id's editable file, training/plans/plan-<id>.toml.
func (d Dir) TrainingPlan(id int64) string {
	return d.join(TrainingDir, trainingPlans, fmt.Sprintf("plan-%d.toml", id))
}

// TrainingDatasets is the directory of the curated and bootstrapped
// datasets.
func (d Dir) TrainingDatasets() string { return d.join(TrainingDir, trainingData) }

// TrainingJob is dataset id's trainer configurations and output,
// training/train/dataset-<id>.
func (d Dir) TrainingJob(id int64) string {
	return d.join(TrainingDir, trainingJobs, fmt.Sprintf("dataset-%d", id))
}

// TrainingBootstrap is 'cra bootstrap's scratch directory for the
// repository it calls name, training/bootstrap/<name>.
func (d Dir) TrainingBootstrap(name string) string {
	return d.join(TrainingDir, trainingBoot, name)
}

// TrainingCurateLock is curate-data's flock(2) file.
func (d Dir) TrainingCurateLock() string { return d.join(TrainingDir, trainingCurate) }

// NotifyPending is the queue of notifications not told yet.
func (d Dir) NotifyPending() string { return d.join(NotifyPending) }

// NotifyLock is the notification sender's flock(2) file.
func (d Dir) NotifyLock() string { return d.join(NotifyLock) }

// SupervisorsLog is the supervisors' run records.
func (d Dir) SupervisorsLog() string { return d.join(SupervisorsLog) }

// SupervisorsLock is the supervisors' flock(2) file.
func (d Dir) SupervisorsLock() string { return d.join(SupervisorsLock) }

// ServeInfo is the running daemon's serve.json.
func (d Dir) ServeInfo() string { return d.join(ServeInfo) }

// ServeLock is the daemon's flock(2) file.
func (d Dir) ServeLock() string { return d.join(ServeLock) }

// ServeToken is the daemon's API token.
func (d Dir) ServeToken() string { return d.join(ServeToken) }

// RecyclerBreaker is the recycler's circuit breaker: its model errors in a
// row and the pause they started, kept here so that they hold for every
// process that reviews ('cra recycle --once', a restarted daemon).
func (d Dir) RecyclerBreaker() string { return d.join(RecyclerBreaker) }

// ValidationBases is the directory of the base commits' test results.
func (d Dir) ValidationBases() string { return d.join(ValidationDir, validationBase) }

// ValidationBase is one base's test results under the commands whose
// hash is key (evidence caches them: a base's tests ran once).
func (d Dir) ValidationBase(key string) string {
	return d.join(ValidationDir, validationBase, key+".json")
}

// IndexLock is the index writers' flock(2) file.
func (d Dir) IndexLock() string { return d.join(IndexLock) }

// CleanupLock is the cleanup pass's flock(2) file.
func (d Dir) CleanupLock() string { return d.join(CleanupLock) }

// AdaptersLock is adapter registration's flock(2) file.
func (d Dir) AdaptersLock() string { return d.join(AdaptersLock) }

// KnowledgeSyncLock is the knowledge sync's flock(2) file.
func (d Dir) KnowledgeSyncLock() string { return d.join(KnowledgeSync) }

// KnowledgeConflicts is where a knowledge sync keeps this host's version
// of a document both it and another host changed, the other's winning.
func (d Dir) KnowledgeConflicts() string { return d.join(KnowledgeClash) }

// Run is one task's run directory, runs/<id>/: what each of the task's
// runs left behind.
type Run struct{ path string }

// RunAt returns the run directory at path.
func RunAt(path string) Run { return Run{path} }

// Path returns the run directory itself.
func (r Run) Path() string { return r.path }

// Identity is the running run's identity, run.json.
func (r Run) Identity() string { return filepath.Join(r.path, RunFile) }

// Claim is a starter's claim on the run it starts, starting.json.
func (r Run) Claim() string { return filepath.Join(r.path, ClaimFile) }

// Prompt is run n's prompt, prompt-<n>.md.
func (r Run) Prompt(n int) string { return filepath.Join(r.path, fmt.Sprintf("prompt-%d.md", n)) }

// TaskText is run n's task text for agents that read a file, task-<n>.md.
func (r Run) TaskText(n int) string { return filepath.Join(r.path, fmt.Sprintf("task-%d.md", n)) }

// MCPConfig is run n's MCP configuration for its agent, mcp-<n>.json.
func (r Run) MCPConfig(n int) string { return filepath.Join(r.path, fmt.Sprintf("mcp-%d.json", n)) }

// Log is run n's capped output, run-<n>.log.
func (r Run) Log(n int) string { return filepath.Join(r.path, fmt.Sprintf("run-%d.log", n)) }

// Summary is run n's summary of what its agent's output said (issue 29).
func (r Run) Summary(n int) string { return filepath.Join(r.path, fmt.Sprintf("summary-%d.json", n)) }

// Alive is the file whose mtime is the last time run n showed it was
// alive (output, parsed events, files written, CPU time): Level 2 reads
// it (issue 29 item 4).
func (r Run) Alive(n int) string { return filepath.Join(r.path, fmt.Sprintf("alive-%d", n)) }

// File is the file called name in the run directory, for a listing's
// entries.
func (r Run) File(name string) string { return filepath.Join(r.path, name) }

// Reviews is the recycler's history of the task, reviews.jsonl.
func (r Run) Reviews() string { return filepath.Join(r.path, ReviewsFile) }
