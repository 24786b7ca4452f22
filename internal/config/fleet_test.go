package config

import (
	"strings"
	"testing"
	"time"
)

func TestFleet(t *testing.T) {
	s, err := (*Config)(nil).FleetSettings()
	if err != nil || s.Remote != "origin" || s.Lease != 2*time.Minute || s.Host == "" || s.DatabaseURLEnv != "" || s.Push {
		t.Fatalf("defaults = %+v, %v", s, err)
	}
	// push is off unless set: one machine needs no remote, a database
	// alone does not turn it on.
	for _, tc := range []struct {
		toml string
		want bool
	}{
		{"[fleet]\nremote = \"origin\"\n", false},
		{"[fleet]\ndatabase_url_env = \"CRA_DB\"\n", false},
		{"[fleet]\ndatabase_url_env = \"CRA_DB\"\npush = true\n", true},
		{"[fleet]\ndatabase_url_env = \"CRA_DB\"\npush = false\n", false},
		{"[fleet]\npush = true\n", true},
	} {
		c, err := Parse([]byte(tc.toml))
		if err != nil {
			t.Fatal(err)
		}
		if s, err := c.FleetSettings(); err != nil || s.Push != tc.want {
			t.Errorf("%q: push %v, %v; want %v", tc.toml, s.Push, err, tc.want)
		}
	}
	// A database without push: hosts that share a board but neither
	// branches nor knowledge, said with the fix.
	for _, tc := range []struct{ toml, want string }{
		{"[fleet]\ndatabase_url_env = \"CRA_DB\"\n", "push is unset"},
		{"[fleet]\ndatabase_url_env = \"CRA_DB\"\npush = false\n", "push is false"},
		{"[fleet]\ndatabase_url_env = \"CRA_DB\"\npush = true\n", ""},
		{"[fleet]\npush = false\n", ""},
		{"[board]\nmax_parallel = 2\n", ""},
		{"", ""},
	} {
		c, err := Parse([]byte(tc.toml))
		if err != nil {
			t.Fatal(err)
		}
		got := strings.Join(c.Warnings(), "\n")
		if tc.want == "" && got != "" || tc.want != "" && (!strings.Contains(got, tc.want) || !strings.Contains(got, "set push = true")) {
			t.Errorf("%q: warnings %q, want %q", tc.toml, got, tc.want)
		}
	}
	if _, err := s.DatabaseURL(func(string) string { return "postgres://x" }); err != ErrNoDatabase {
		t.Errorf("DatabaseURL with none configured = %v, want ErrNoDatabase", err)
	}
	c, err := Parse([]byte("[fleet]\ndatabase_url_env = \"CRA_DB\"\nhost = \"box-1\"\nremote = \"shared\"\nlease = \"90s\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	s, err = c.FleetSettings()
	if err != nil || s.Host != "box-1" || s.Remote != "shared" || s.Lease != 90*time.Second || s.DatabaseURLEnv != "CRA_DB" {
		t.Fatalf("set = %+v, %v", s, err)
	}
	env := map[string]string{"CRA_DB": " postgres:///db?host=/tmp \n"}
	if url, err := s.DatabaseURL(func(k string) string { return env[k] }); err != nil || url != "postgres:///db?host=/tmp" {
		t.Errorf("DatabaseURL = %q, %v", url, err)
	}
	if _, err := s.DatabaseURL(func(string) string { return "" }); err == nil || !strings.Contains(err.Error(), "export CRA_DB=") {
		t.Errorf("DatabaseURL unset = %v, want how to set it", err)
	}

	for _, tc := range []struct{ toml, want string }{
		{`database_url_env = "postgres://u:secret@h/db"`, "looks like a URL"},
		{`database_url_env = "1BAD"`, `fleet.database_url_env is "1BAD"`},
		{`host = "-x"`, `fleet.host is "-x"`},
		{`host = "a b"`, `fleet.host is "a b"`},
		{`remote = "-o"`, `fleet.remote is "-o"`},
		{`remote = "a/../b"`, `fleet.remote is "a/../b"`},
		{`lease = "soon"`, `fleet.lease is "soon"`},
		{`lease = "1s"`, "fleet.lease is 1s: use 10s to 24h0m0s"},
		{`lease = "-2m"`, "fleet.lease is -2m0s"},
	} {
		_, err := Parse([]byte("[fleet]\n" + tc.toml + "\n"))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.toml, err, tc.want)
		}
		if err != nil && strings.Contains(err.Error(), "secret") {
			t.Errorf("%s: the error repeats the password: %v", tc.toml, err)
		}
	}
}
