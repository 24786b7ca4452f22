package cli

import (
	"fmt"
	"reflect"
)

// deepDiff says how got differs from want, "" when they are deeply equal
// (reflect.DeepEqual, unexported fields included). The package's tests
// compare without go-cmp: every 'cra' the scripts start is this test
// binary, and go-cmp's package initialisation cost each of them a few
// milliseconds of CPU under -race, a thousand times and more per run.
func deepDiff(want, got any) string {
	if reflect.DeepEqual(want, got) {
		return ""
	}
	ws, wok := want.(string)
	gs, gok := got.(string)
	if wok && gok {
		return fmt.Sprintf("-want:\n%s\n+got:\n%s", ws, gs)
	}
	return fmt.Sprintf("-want: %+v\n+got:  %+v", want, got)
}
