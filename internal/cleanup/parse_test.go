package cleanup

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const goodRewrite = `<think>
Let me merge the duplicates. <WORLD_MODEL> is the format.
</think>
Here is the cleanup:
` + "```xml" + `
<WORLD_MODEL>
# Project knowledge

## Project
- cra is a local-first coding agent.
- cra is a local-first coding agent
## Decisions
- The log is the truth.
## Project
- Tasks live in .clean_room/tasks.
</WORLD_MODEL>
<TODOS>
## HIGH
-HIGH: Develop ambient AI solutions
- **MEDIUM**: Write the README tour
* low: tidy the prompts

-DONE: ship the board
</TODOS>
` + "```\n"

func TestParseRewrite(t *testing.T) {
	got, err := ParseRewrite(goodRewrite)
	if err != nil {
		t.Fatal(err)
	}
	wantWM := "# Project knowledge\n\n## Project\n- cra is a local-first coding agent.\n- Tasks live in .clean_room/tasks.\n\n## Decisions\n- The log is the truth."
	if diff := cmp.Diff(wantWM, got.WorldModel); diff != "" {
		t.Errorf("world model (-want +got):\n%s", diff)
	}
	if got.Duplicates != 2 {
		t.Errorf("got %d duplicates removed, want 2 (a line and a heading)", got.Duplicates)
	}
	want := []Todo{{"HIGH", "Develop ambient AI solutions"}, {"MEDIUM", "Write the README tour"}, {"LOW", "tidy the prompts"}, {"DONE", "ship the board"}}
	if diff := cmp.Diff(want, got.Todos); diff != "" {
		t.Errorf("todos (-want +got):\n%s", diff)
	}
}

func TestParseRewriteMalformed(t *testing.T) {
	for _, tc := range []struct{ name, reply, want string }{
		{"no tags", "Here is the world model: ## People", "want one <WORLD_MODEL>"},
		{"no todos", "<WORLD_MODEL>\n## A\nx\n</WORLD_MODEL>", "want one <TODOS>"},
		{"unclosed", "<WORLD_MODEL>\n## A\n<TODOS>\n-HIGH: x\n</TODOS>", "</WORLD_MODEL>"},
		{"twice", "<WORLD_MODEL>## A</WORLD_MODEL><WORLD_MODEL>## B</WORLD_MODEL><TODOS></TODOS>", "want one"},
		{"reversed", "</WORLD_MODEL>## A<WORLD_MODEL><TODOS></TODOS>", "comes before"},
		{"no section", "<WORLD_MODEL>\n# Title\njust text\n</WORLD_MODEL><TODOS>\n-HIGH: x\n</TODOS>", "no ## section"},
		{"empty", "<WORLD_MODEL>\n\n</WORLD_MODEL><TODOS></TODOS>", "empty"},
		{"bad todo", "<WORLD_MODEL>\n## A\nx\n</WORLD_MODEL><TODOS>\n-HIGH: x\nURGENT: y\n</TODOS>", `TODOS line 3 "URGENT: y"`},
		{"empty todo", "<WORLD_MODEL>\n## A\nx\n</WORLD_MODEL><TODOS>\n-LOW:\n</TODOS>", "no text"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseRewrite(tc.reply)
			if !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want ErrMalformed with %q", err, tc.want)
			}
		})
	}
}

func TestParseCollapse(t *testing.T) {
	reply := "<think>t-1 and t-2 | look alike</think>\n```\n" +
		"Develop ambient AI solutions | t-1 | t-3,t-4, t-5\n" +
		"- Write docs | for the parser | `t-2` | \"t-6\"\n" +
		"```\n"
	got, err := ParseCollapse(reply)
	if err != nil {
		t.Fatal(err)
	}
	want := []Merge{
		{Canonical: "Develop ambient AI solutions", Keep: "t-1", Drops: []string{"t-3", "t-4", "t-5"}},
		{Canonical: "Write docs | for the parser", Keep: "t-2", Drops: []string{"t-6"}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	for _, none := range []string{"", "NONE", "none.", "\n`NONE`\n"} {
		if got, err := ParseCollapse(none); err != nil || len(got) != 0 {
			t.Errorf("ParseCollapse(%q) = %v, %v, want nothing", none, got, err)
		}
	}
}

func TestParseCollapseMalformed(t *testing.T) {
	for _, tc := range []struct{ name, reply, want string }{
		{"prose", "These two are duplicates: t-1 and t-2", "is not 'canonical text"},
		{"one bar", "text | t-1", "is not 'canonical text"},
		{"no canonical", " | t-1 | t-2", "no canonical text"},
		{"bad keep", "text | t 1 | t-2", "keep_id"},
		{"bad drop", "text | t-1 | t-2,t/3", "drop id"},
		{"no drops", "text | t-1 | ", "no task to drop"},
		{"one good one bad", "a | t-1 | t-2\nNo other groups.", "line 2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseCollapse(tc.reply)
			if !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want ErrMalformed with %q", err, tc.want)
			}
		})
	}
}

func FuzzParseRewrite(f *testing.F) {
	f.Add(goodRewrite)
	f.Add("<WORLD_MODEL>\n## A\n- x\n- x\n</WORLD_MODEL>\n<TODOS>\n-HIGH: y\n</TODOS>")
	f.Add("<think><WORLD_MODEL></think><WORLD_MODEL>## </WORLD_MODEL><TODOS>-DONE:</TODOS>")
	f.Fuzz(func(t *testing.T, reply string) {
		r, err := ParseRewrite(reply)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("error %v is not ErrMalformed", err)
			}
			return
		}
		if !hasSection(r.WorldModel) {
			t.Fatalf("accepted a world model without a ## section: %q", r.WorldModel)
		}
		again, n := CleanWorldModel(r.WorldModel)
		if again != r.WorldModel || n != 0 {
			t.Fatalf("the cleaned world model is not clean: %d more removed\n%q\n%q", n, r.WorldModel, again)
		}
		for _, td := range r.Todos {
			if td.Text == "" || strings.Contains(td.Text, "\n") {
				t.Fatalf("todo %+v", td)
			}
			switch td.Priority {
			case PriorityHigh, PriorityMedium, PriorityLow, PriorityDone:
			default:
				t.Fatalf("todo priority %q", td.Priority)
			}
		}
	})
}

func FuzzParseCollapse(f *testing.F) {
	f.Add("Develop ambient AI solutions | t-1 | t-3,t-4")
	f.Add("NONE")
	f.Add("a | b | c | d\n- `x` | 'y' | z, w")
	f.Fuzz(func(t *testing.T, reply string) {
		ms, err := ParseCollapse(reply)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("error %v is not ErrMalformed", err)
			}
			return
		}
		for _, m := range ms {
			if m.Canonical == "" || strings.Contains(m.Canonical, "\n") || len(m.Drops) == 0 {
				t.Fatalf("merge %+v", m)
			}
			for _, id := range append([]string{m.Keep}, m.Drops...) {
				if !idPattern(id) {
					t.Fatalf("id %q of %+v is not a task id", id, m)
				}
			}
		}
	})
}

func idPattern(id string) bool {
	if id == "" || len(id) > 64 {
		return false
	}
	return !strings.ContainsFunc(id, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-')
	})
}

// TestCleanWorldModelTables: two tables may share a header and their
// separator rows; only a repeated fact is a duplicate.
func TestCleanWorldModelTables(t *testing.T) {
	in := `## Documents
| path | status |
|---|---|
| conventions/errors.md | established |

## Decisions
| path | status |
| --- | :---: |
| design/storage.md | provisional |
| design/storage.md | provisional |
- SQLite over Postgres
- SQLite over Postgres.`
	want := `## Documents
| path | status |
|---|---|
| conventions/errors.md | established |

## Decisions
| path | status |
| --- | :---: |
| design/storage.md | provisional |
- SQLite over Postgres`
	got, n := CleanWorldModel(in)
	if got != want || n != 2 {
		t.Errorf("got %d removed:\n%s\nwant 2 removed:\n%s", n, got, want)
	}
}
