package index

import "github.com/cra-dev/cra/internal/lang"

// The kinds of symbol the index records (lang's), as 'cra query symbols
// --kind' names them.
const (
	KindFunction  = lang.KindFunction
	KindClass     = lang.KindClass
	KindMethod    = lang.KindMethod
	KindInterface = lang.KindInterface
	KindTypeAlias = lang.KindTypeAlias
	KindEnum      = lang.KindEnum
	KindVariable  = lang.KindVariable
)
