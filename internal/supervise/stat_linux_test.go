package supervise

import "testing"

func TestParseStat(t *testing.T) {
	for _, tc := range []struct {
		name string
		data string
		want procStat
		bad  bool
	}{
		{name: "plain",
			data: "123 (sleep) S 1 123 123 0 -1 4194560 90 0 0 0 0 0 0 0 20 0 1 0 8888 2000 100 18446744073709551615\n",
			want: procStat{PGID: 123, StartTime: 8888}},
		{name: "name with spaces and parens",
			data: "77 (a) b (c) R 1 70 70 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 42 0 0\n",
			want: procStat{PGID: 70, StartTime: 42}},
		{name: "zombie",
			data: "9 (sh) Z 1 9 9 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 5 0 0\n",
			want: procStat{PGID: 9, StartTime: 5, Exited: true}},
		{name: "short", data: "9 (sh) S 1 9", bad: true},
		{name: "no name", data: "9 sh S 1 9 9 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 5 0 0", bad: true},
		{name: "not a number", data: "9 (sh) S 1 x 9 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 5 0 0", bad: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseStat(9, []byte(tc.data))
			if tc.bad {
				if err == nil {
					t.Errorf("got %+v, want an error", got)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("got %+v %v, want %+v", got, err, tc.want)
			}
		})
	}
}
