package stage

import (
	"slices"
	"strings"
	"testing"
)

func TestParseRetrieval(t *testing.T) {
	tests := []struct {
		list    string
		want    []string
		wantErr string
	}{
		{list: "scope,precision", want: []string{"scope", "precision"}},
		{list: " precision , scope ", want: []string{"precision", "scope"}},
		{list: "scope", want: []string{"scope"}},
		{list: "scope,scope", want: []string{"scope", "scope"}},
		{list: "", wantErr: `unknown stage "": known stages are precision, scope`},
		{list: "scope,ranking", wantErr: `unknown stage "ranking": known stages are precision, scope`},
		{list: "task_analysis", wantErr: `unknown stage "task_analysis"`},
	}
	for _, tc := range tests {
		got, err := ParseRetrieval(tc.list)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%q: got %v, %v, want error %q", tc.list, got, err, tc.wantErr)
			}
			continue
		}
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("%q: got %v, %v, want %v", tc.list, got, err, tc.want)
		}
	}
}
