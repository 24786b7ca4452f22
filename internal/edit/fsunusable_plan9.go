package edit

// fsUnusable reports whether err says the file system takes no writes at
// all; plan9's errors are strings, so none is told apart from a path's.
func fsUnusable(err error) bool { return false }
