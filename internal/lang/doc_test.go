package lang

import (
	"testing"
)

func TestClassifyDocstring(t *testing.T) {
	tests := []struct {
		name   string
		text   string
		lang   Language
		format string
		fields string
	}{
		{
			name:   "empty",
			text:   "",
			lang:   Python,
			format: DocPlain,
			fields: `{}`,
		},
		{
			name:   "plain",
			text:   "Return the thing.\n\nMore words here.",
			lang:   Python,
			format: DocPlain,
			fields: `{"summary":"Return the thing."}`,
		},
		{
			name:   "plain multi-line summary",
			text:   "Return the thing\nthat was asked for.\n\nMore.",
			lang:   Python,
			format: DocPlain,
			fields: `{"summary":"Return the thing that was asked for."}`,
		},
		{
			name: "google",
			text: `Fetch rows.

Args:
    table (str): The table name.
    keys: Keys to fetch, which may
        span lines.
    *args: Extra positional values.
    **kwargs (dict): Extra options.

Returns:
    dict[str, int]: Mapping of keys to rows.

Yields:
    Row: one row at a time.

Raises:
    IOError: An error occurred.
    ValueError: Bad key.`,
			lang:   Python,
			format: DocGoogle,
			fields: `{"summary":"Fetch rows.","params":[{"name":"table","type":"str","description":"The table name."},{"name":"keys","type":"","description":"Keys to fetch, which may span lines."},{"name":"*args","type":"","description":"Extra positional values."},{"name":"**kwargs","type":"dict","description":"Extra options."}],"returns":{"type":"dict[str, int]","description":"Mapping of keys to rows."},"yields":{"type":"Row","description":"one row at a time."},"raises":[{"type":"IOError","description":"An error occurred."},{"type":"ValueError","description":"Bad key."}]}`,
		},
		{
			name:   "google returns without type",
			text:   "Count.\n\nReturns:\n    The number of rows: never negative.",
			lang:   Python,
			format: DocGoogle,
			fields: `{"summary":"Count.","returns":{"type":"","description":"The number of rows: never negative."}}`,
		},
		{
			name: "numpy",
			text: `Compute VAT.

Parameters
----------
total, net : int
    Amounts in cents.
rate : float, optional
    The rate.

Returns
-------
int
    The VAT in cents.

Raises
------
ValueError
    If total is negative.

Attributes
----------
currency : str
    ISO code.`,
			lang:   Python,
			format: DocNumpy,
			fields: `{"summary":"Compute VAT.","params":[{"name":"total","type":"int","description":"Amounts in cents."},{"name":"net","type":"int","description":"Amounts in cents."},{"name":"rate","type":"float, optional","description":"The rate."}],"attributes":[{"name":"currency","type":"str","description":"ISO code."}],"returns":{"type":"int","description":"The VAT in cents."},"raises":[{"type":"ValueError","description":"If total is negative."}]}`,
		},
		{
			name: "sphinx",
			text: `Render an invoice.

:param invoice: The invoice to render,
    over two lines.
:type invoice: Invoice
:param str template: Template name.
:ivar cache: Rendered pages.
:returns: The HTML.
:rtype: str
:raises TemplateError: when the template is missing.`,
			lang:   Python,
			format: DocSphinx,
			fields: `{"summary":"Render an invoice.","params":[{"name":"invoice","type":"Invoice","description":"The invoice to render, over two lines."},{"name":"template","type":"str","description":"Template name."}],"attributes":[{"name":"cache","type":"","description":"Rendered pages."}],"returns":{"type":"str","description":"The HTML."},"raises":[{"type":"TemplateError","description":"when the template is missing."}]}`,
		},
		{
			name: "jsdoc",
			text: `Adds numbers.
@param {number} x - The first.
@param {Object} [opts={}] - Options
  on two lines.
@property {string} name the name
@returns {number} The sum.
@throws {RangeError} When it overflows.
@deprecated Use sum().`,
			lang:   TypeScript,
			format: DocJSDoc,
			fields: `{"summary":"Adds numbers.","params":[{"name":"x","type":"number","description":"The first."},{"name":"opts","type":"Object","description":"Options on two lines."}],"attributes":[{"name":"name","type":"string","description":"the name"}],"returns":{"type":"number","description":"The sum."},"raises":[{"type":"RangeError","description":"When it overflows."}],"deprecated":"Use sum()."}`,
		},
		{
			name:   "jsdoc fileoverview",
			text:   "@fileoverview Order service.",
			lang:   JavaScript,
			format: DocJSDoc,
			fields: `{"summary":"Order service."}`,
		},
		{
			name:   "jsdoc without tags is plain",
			text:   "A plain doc.",
			lang:   TSX,
			format: DocPlain,
			fields: `{"summary":"A plain doc."}`,
		},
		{
			name:   "epytext in python",
			text:   "Convert.\n\n@param value: the value\n@type value: str\n@return: the result\n@rtype: int\n@raise ValueError: when bad",
			lang:   Python,
			format: DocJSDoc,
			fields: `{"summary":"Convert.","params":[{"name":"value","type":"str","description":"the value"}],"returns":{"type":"int","description":"the result"},"raises":[{"type":"ValueError","description":"when bad"}]}`,
		},
		{
			name:   "python decorator in an example is not jsdoc",
			text:   "Use it as a decorator:\n\n@cached\ndef f(): ...",
			lang:   Python,
			format: DocPlain,
			fields: `{"summary":"Use it as a decorator:"}`,
		},
		{
			name:   "godoc",
			text:   "Store is the order store.\n\nDeprecated: use Repo\ninstead.",
			lang:   Go,
			format: DocGo,
			fields: `{"summary":"Store is the order store.","deprecated":"use Repo instead."}`,
		},
		{
			name:   "godoc with Args is still godoc",
			text:   "F does it.\n\nArgs:\n    x: a value",
			lang:   Go,
			format: DocGo,
			fields: `{"summary":"F does it."}`,
		},
		{
			name:   "returns inline is not google",
			text:   "Returns: the value.",
			lang:   Python,
			format: DocPlain,
			fields: `{"summary":"Returns: the value."}`,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			format, fields := ClassifyDocstring(tc.text, tc.lang)
			if format != tc.format {
				t.Errorf("format: got %v, want %v", format, tc.format)
			}
			if fields != tc.fields {
				t.Errorf("fields:\ngot  %v\nwant %v", fields, tc.fields)
			}
		})
	}
}

func TestCleandoc(t *testing.T) {
	tests := []struct{ in, want string }{
		{"One line.", "One line."},
		{"  Summary.\n\n    Body\n      indented\n    ", "Summary.\n\nBody\n  indented"},
		{"\n    Starts on the second line.\n    ", "Starts on the second line."},
		{"Tabs\n\tare four\n\t\tspaces", "Tabs\nare four\n    spaces"},
		{"", ""},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			if got := cleandoc(tc.in); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}
