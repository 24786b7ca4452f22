package index

import (
	"testing"

	"github.com/cra-dev/cra/internal/lang"
)

// resolveTSTree is a monorepo: an app whose tsconfig extends a base config
// with paths, workspace packages, a jsconfig with baseUrl only, a config
// with paths but no baseUrl, ${configDir} templates and a cyclic extends.
var resolveTSTree = map[string]string{
	"root.ts": "",
	"tsconfig.base.json": `{
		// Shared settings; JSONC like every tsconfig.
		"compilerOptions": {
			"baseUrl": ".", /* the repository root */
			"paths": {
				"@shared/*": ["shared/*"],
				"@/*": ["web/src/*", "web/generated/*",],
				"@/special/*": ["shared/*"],
				"exact": ["shared/exact.ts"],
				"two/*/stars/*": ["shared/*"],
				"url": ["http://example.com/*"],
				"gen/*": ["missing/*"],
			},
		},
	}`,
	"web/tsconfig.json": `// app config
{
	"extends": "../tsconfig.base",
	"compilerOptions": {"strict": true, "outDir": "dist//x",},
	"include": ["src/**/*.ts",],
}
`,
	"web/src/app.ts":                         "",
	"web/src/util.ts":                        "",
	"web/src/components/Button.tsx":          "",
	"web/src/components/index.ts":            "",
	"web/src/esm.ts":                         "",
	"web/src/mod.mts":                        "",
	"web/src/common.cts":                     "",
	"web/src/types.d.ts":                     "",
	"web/src/legacy.js":                      "",
	"web/src/styles.css":                     "",
	"web/src/special/log.ts":                 "",
	"web/src/lib/package.json":               `{"main": "./main.js"}`,
	"web/src/lib/main.ts":                    "",
	"web/src/noentry/package.json":           `{"main": "./gone.js"}`,
	"web/src/noentry/index.tsx":              "",
	"web/generated/api.ts":                   "",
	"gen/out.ts":                             "",
	"shared/log.ts":                          "",
	"shared/exact.ts":                        "",
	"shared/deep/index.tsx":                  "",
	"dual/x.ts":                              "",
	"dual/x.js":                              "",
	"dual/a.ts":                              "",
	"dual/b.js":                              "",
	"packages/ui/package.json":               `{"name": "@acme/ui", "exports": {".": {"types": "./dist/index.d.ts", "import": "./dist/index.js"}, "./button": "./dist/button.js", "./icons/*": "./dist/icons/*.js", "./package.json": "./package.json"}}`,
	"packages/ui/src/index.ts":               "",
	"packages/ui/src/button.tsx":             "",
	"packages/ui/src/icons/star.tsx":         "",
	"packages/core/package.json":             `{"name": "core", "main": "index.js"}`,
	"packages/core/index.js":                 "",
	"packages/core/util/strings.js":          "",
	"packages/bare/package.json":             `{"name": "bare"}`,
	"packages/bare/src/index.ts":             "",
	"packages/bare/src/extra.ts":             "",
	"packages/lib/package.json":              `{"name": "@acme/lib", "types": "./dist/types/lib/index.d.ts", "exports": {"./element/*": {"types": "./dist/types/element/src/*.d.ts"}}}`,
	"packages/lib/tsconfig.json":             `{"compilerOptions": {"rootDir": "../", "outDir": "./dist/types"}}`,
	"packages/lib/index.ts":                  "",
	"packages/element/src/shape.ts":          "",
	"fixture/node_modules/core/package.json": `{"name": "core", "main": "lib/main.js"}`,
	"fixture/node_modules/core/lib/main.js":  "",
	"fixture/src/use.js":                     "",
	"admin/jsconfig.json":                    `{"compilerOptions": {"baseUrl": "src"}}`,
	"admin/src/main.js":                      "",
	"admin/src/helpers/format.js":            "",
	"nobase/tsconfig.json":                   `{"compilerOptions": {"paths": {"$lib/*": ["./lib/*"]}}}`,
	"nobase/lib/z.ts":                        "",
	"nobase/app/main.ts":                     "",
	"tsconfig.template.json":                 `{"compilerOptions": {"paths": {"#/*": ["${configDir}/src/*"]}}}`,
	"tpl/tsconfig.json":                      `{"extends": "../tsconfig.template.json"}`,
	"tpl/src/a.ts":                           "",
	"tpl/src/b.ts":                           "",
	"cyc/tsconfig.json":                      `{"extends": "./a.json"}`,
	"cyc/a.json":                             `{"extends": ["./tsconfig.json"], "compilerOptions": {"paths": {"~/*": ["lib/*"]}}}`,
	"cyc/x.ts":                               "",
	"cyc/lib/y.ts":                           "",
	"both/tsconfig.json":                     `{"compilerOptions": {"baseUrl": "ts"}}`,
	"both/jsconfig.json":                     `{"compilerOptions": {"baseUrl": "js"}}`,
	"both/ts/m.ts":                           "",
	"both/js/m.js":                           "",
	"both/main.ts":                           "",
	"override/tsconfig.json":                 `{"extends": "../tsconfig.base.json", "compilerOptions": {"baseUrl": "./src"}}`,
	"override/src/local.ts":                  "",
	"override/src/main.ts":                   "",
	"override/src/shared/log.ts":             "",
}

func TestResolveTSRelative(t *testing.T) {
	r := newResolveFixture(t, resolveTSTree)
	runResolveCases(t, r, lang.TypeScript, []resolveCase{
		{"extension .ts", "web/src/app.ts", lang.Import{Path: "./util"}, []string{"web/src/util.ts"}},
		{"extension .tsx", "web/src/app.ts", lang.Import{Path: "./components/Button"}, []string{"web/src/components/Button.tsx"}},
		{"directory index", "web/src/app.ts", lang.Import{Path: "./components"}, []string{"web/src/components/index.ts"}},
		{"directory with slash", "web/src/app.ts", lang.Import{Path: "./components/"}, []string{"web/src/components/index.ts"}},
		{"dot", "web/src/components/Button.tsx", lang.Import{Path: "."}, []string{"web/src/components/index.ts"}},
		{"dotdot", "web/src/components/Button.tsx", lang.Import{Path: ".."}, nil},
		{"declaration file", "web/src/app.ts", lang.Import{Path: "./types"}, []string{"web/src/types.d.ts"}},
		{"javascript file", "web/src/app.ts", lang.Import{Path: "./legacy"}, []string{"web/src/legacy.js"}},
		{"exact file", "web/src/app.ts", lang.Import{Path: "./styles.css"}, []string{"web/src/styles.css"}},
		{"esm .js means .ts", "web/src/app.ts", lang.Import{Path: "./esm.js"}, []string{"web/src/esm.ts"}},
		{"esm .mjs means .mts", "web/src/app.ts", lang.Import{Path: "./mod.mjs"}, []string{"web/src/mod.mts"}},
		{"esm .cjs means .cts", "web/src/app.ts", lang.Import{Path: "./common.cjs"}, []string{"web/src/common.cts"}},
		{"parent directories", "web/src/components/Button.tsx", lang.Import{Path: "../../../shared/log"}, []string{"shared/log.ts"}},
		{"beyond the root", "web/src/app.ts", lang.Import{Path: "../../../x"}, nil},
		{"package.json main", "web/src/app.ts", lang.Import{Path: "./lib"}, []string{"web/src/lib/main.ts"}},
		{"package.json main missing, index", "web/src/app.ts", lang.Import{Path: "./noentry"}, []string{"web/src/noentry/index.tsx"}},
		{"missing", "web/src/app.ts", lang.Import{Path: "./nope"}, nil},
		{"query suffix", "web/src/app.ts", lang.Import{Path: "./util?raw"}, []string{"web/src/util.ts"}},
		{"type only", "web/src/app.ts", lang.Import{Path: "./types", TypeOnly: true}, []string{"web/src/types.d.ts"}},
		{"self", "web/src/util.ts", lang.Import{Path: "./util"}, nil},
		{"ts importer prefers .ts", "dual/a.ts", lang.Import{Path: "./x"}, []string{"dual/x.ts"}},
		{"ts importer maps .js to .ts", "dual/a.ts", lang.Import{Path: "./x.js"}, []string{"dual/x.ts"}},
		{"empty", "web/src/app.ts", lang.Import{Path: ""}, nil},
		{"absolute", "web/src/app.ts", lang.Import{Path: "/web/src/util"}, nil},
	})
	runResolveCases(t, r, lang.JavaScript, []resolveCase{
		{"js importer prefers .js", "dual/b.js", lang.Import{Path: "./x"}, []string{"dual/x.js"}},
		{"js importer takes .js as written", "dual/b.js", lang.Import{Path: "./x.js"}, []string{"dual/x.js"}},
		{"js importer falls back to .ts", "web/src/legacy.js", lang.Import{Path: "./util"}, []string{"web/src/util.ts"}},
	})
}

func TestResolveTSConfig(t *testing.T) {
	r := newResolveFixture(t, resolveTSTree)
	runResolveCases(t, r, lang.TypeScript, []resolveCase{
		{"paths wildcard via extends", "web/src/app.ts", lang.Import{Path: "@shared/log"}, []string{"shared/log.ts"}},
		{"paths first substitution", "web/src/app.ts", lang.Import{Path: "@/util"}, []string{"web/src/util.ts"}},
		{"paths second substitution", "web/src/app.ts", lang.Import{Path: "@/api"}, []string{"web/generated/api.ts"}},
		{"paths longest prefix wins", "web/src/app.ts", lang.Import{Path: "@/special/log"}, []string{"shared/log.ts"}},
		{"paths exact key", "web/src/app.ts", lang.Import{Path: "exact"}, []string{"shared/exact.ts"}},
		{"paths directory index", "web/src/app.ts", lang.Import{Path: "@shared/deep"}, []string{"shared/deep/index.tsx"}},
		{"paths with two stars ignored", "web/src/app.ts", lang.Import{Path: "two/a/stars/log"}, nil},
		{"paths to a url", "web/src/app.ts", lang.Import{Path: "url"}, nil},
		{"paths unresolved falls back to baseUrl", "web/src/app.ts", lang.Import{Path: "gen/out"}, []string{"gen/out.ts"}},
		{"baseUrl", "web/src/app.ts", lang.Import{Path: "shared/log"}, []string{"shared/log.ts"}},
		{"bare package", "web/src/app.ts", lang.Import{Path: "react"}, nil},
		{"node builtin", "web/src/app.ts", lang.Import{Path: "node:fs"}, nil},
		{"no config at the root", "root.ts", lang.Import{Path: "@shared/log"}, nil},
		{"paths without baseUrl are relative to their config", "nobase/app/main.ts", lang.Import{Path: "$lib/z"}, []string{"nobase/lib/z.ts"}},
		{"configDir template", "tpl/src/b.ts", lang.Import{Path: "#/a"}, []string{"tpl/src/a.ts"}},
		{"cyclic extends still resolves", "cyc/x.ts", lang.Import{Path: "~/y"}, []string{"cyc/lib/y.ts"}},
		{"tsconfig over jsconfig", "both/main.ts", lang.Import{Path: "m"}, []string{"both/ts/m.ts"}},
		{"baseUrl overridden, paths inherited", "override/src/main.ts", lang.Import{Path: "local"}, []string{"override/src/local.ts"}},
		{"inherited paths follow the new baseUrl", "override/src/main.ts", lang.Import{Path: "@shared/log"}, []string{"override/src/shared/log.ts"}},
	})
	runResolveCases(t, r, lang.JavaScript, []resolveCase{
		{"jsconfig baseUrl", "admin/src/main.js", lang.Import{Path: "helpers/format"}, []string{"admin/src/helpers/format.js"}},
		{"jsconfig baseUrl missing", "admin/src/main.js", lang.Import{Path: "lodash"}, nil},
	})
}

func TestResolveTSWorkspace(t *testing.T) {
	r := newResolveFixture(t, resolveTSTree)
	runResolveCases(t, r, lang.TSX, []resolveCase{
		{"exports conditions to source", "web/src/app.ts", lang.Import{Path: "@acme/ui"}, []string{"packages/ui/src/index.ts"}},
		{"exports subpath", "web/src/app.ts", lang.Import{Path: "@acme/ui/button"}, []string{"packages/ui/src/button.tsx"}},
		{"exports subpath pattern", "web/src/app.ts", lang.Import{Path: "@acme/ui/icons/star"}, []string{"packages/ui/src/icons/star.tsx"}},
		{"exports exact file", "web/src/app.ts", lang.Import{Path: "@acme/ui/package.json"}, []string{"packages/ui/package.json"}},
		{"outDir mapped back to rootDir", "root.ts", lang.Import{Path: "@acme/lib"}, []string{"packages/lib/index.ts"}},
		{"outDir mapped back to a sibling package", "root.ts", lang.Import{Path: "@acme/lib/element/shape"}, []string{"packages/element/src/shape.ts"}},
		{"main", "root.ts", lang.Import{Path: "core"}, []string{"packages/core/index.js"}},
		{"subpath without exports", "root.ts", lang.Import{Path: "core/util/strings"}, []string{"packages/core/util/strings.js"}},
		{"no entry: src/index", "root.ts", lang.Import{Path: "bare"}, []string{"packages/bare/src/index.ts"}},
		{"no entry: src subpath", "root.ts", lang.Import{Path: "bare/extra"}, []string{"packages/bare/src/extra.ts"}},
		{"subpath escaping the package", "root.ts", lang.Import{Path: "bare/../../root"}, nil},
		{"node_modules above the importer", "fixture/src/use.js", lang.Import{Path: "core"}, []string{"fixture/node_modules/core/lib/main.js"}},
		{"node_modules not above the importer", "root.ts", lang.Import{Path: "core/lib/main"}, nil},
		{"scope only", "root.ts", lang.Import{Path: "@acme"}, nil},
		{"unknown scoped", "root.ts", lang.Import{Path: "@acme/nope/x"}, nil},
	})
}
