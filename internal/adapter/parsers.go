package adapter

import "github.com/cra-dev/cra/internal/retrieve"

// The readers of the reasoning stages' replies are the stages' own
// (internal/retrieve/stages.go): scope's {"files": […]}, precision's
// {"symbols": […]}, task analysis's {"intent", "type", "symbols",
// "files"}, so an evaluation reads a reply as inference does.
var (
	parseScopeReply     = retrieve.ParseScopeReply
	parsePrecisionReply = retrieve.ParsePrecisionReply
	parseTaskAnalysis   = retrieve.ParseTaskAnalysis
)
