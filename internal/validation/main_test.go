package validation

import (
	"context"
	"fmt"
	"os"
	"testing"
)

// checkerEnv makes the test binary a validator (TestMain): it runs the
// test command in the variable in the directory checkerEnv_DIR, as cra's
// daemon or reviewer does, and is killed mid-check by the test.
const checkerEnv = "CRA_VALIDATION_TEST_CHECKER"

func TestMain(m *testing.M) {
	if command := os.Getenv(checkerEnv); command != "" {
		v := &Validator{Test: command}
		_, err := v.Run(context.Background(), os.Getenv(checkerEnv+"_DIR"))
		fmt.Println("check ended:", err) // the test kills this process first
		os.Exit(1)
	}
	os.Exit(m.Run())
}
