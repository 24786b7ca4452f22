package learn

import (
	"math"
	"sort"
)

// SplitByTime splits each repository's examples by date: the newest
// share of them (at least one, when there are two or more) to validate
// on, the older ones to train on. Ties of date go by commit hash, so the
// split is the same whatever order the examples come in.
func SplitByTime(examples []Example, share float64) (train, valid []Example) {
	byRepo := map[string][]Example{}
	var names []string
	for _, e := range examples {
		if byRepo[e.Repo] == nil {
			names = append(names, e.Repo)
		}
		byRepo[e.Repo] = append(byRepo[e.Repo], e)
	}
	sort.Strings(names)
	for _, n := range names {
		ex := byRepo[n]
		sortByTime(ex)
		k := int(math.Round(share * float64(len(ex))))
		if k == 0 && share > 0 && len(ex) >= 2 {
			k = 1
		}
		k = min(k, len(ex))
		train = append(train, ex[:len(ex)-k]...)
		valid = append(valid, ex[len(ex)-k:]...)
	}
	return train, valid
}

// sortByTime orders examples oldest first, ties by commit hash.
func sortByTime(ex []Example) {
	sort.SliceStable(ex, func(i, j int) bool {
		if !ex[i].Date.Equal(ex[j].Date) {
			return ex[i].Date.Before(ex[j].Date)
		}
		return ex[i].Commit < ex[j].Commit
	})
}
