package index

import "path"

// excludedMemo is excludedPath keeping each directory's answer, which
// depends on the directory alone: the files of a repository share a few
// hundred directories, and a run with nothing to do spends much of its
// time on the listing.
func excludedMemo(isVenv func(dir string) bool) func(rel string) bool {
	dirs := map[string]bool{}
	return func(rel string) bool {
		dir := path.Dir(rel)
		v, ok := dirs[dir]
		if !ok {
			v = excludedPath(rel, isVenv)
			dirs[dir] = v
		}
		return v
	}
}
