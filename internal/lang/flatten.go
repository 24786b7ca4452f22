package lang

/*
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

// These declarations repeat, byte for byte, the ones of tree_sitter/api.h in
// github.com/tree-sitter/go-tree-sitter v0.25.0. The functions are compiled
// into that package, which this one imports, so the linker resolves them;
// TestFlattenMatchesBindings walks the same trees through the Go binding and
// fails if the layouts ever drift apart.
typedef struct TSTree TSTree;
typedef struct TSNode {
	uint32_t context[4];
	const void *id;
	const TSTree *tree;
} TSNode;
typedef struct TSTreeCursor {
	const void *tree;
	const void *id;
	uint32_t context[3];
} TSTreeCursor;

void ts_set_allocator(void *(*new_malloc)(size_t), void *(*new_calloc)(size_t, size_t),
	void *(*new_realloc)(void *, size_t), void (*new_free)(void *));
TSTreeCursor ts_tree_cursor_new(TSNode node);
void ts_tree_cursor_delete(TSTreeCursor *self);
bool ts_tree_cursor_goto_first_child(TSTreeCursor *self);
bool ts_tree_cursor_goto_next_sibling(TSTreeCursor *self);
bool ts_tree_cursor_goto_parent(TSTreeCursor *self);
TSNode ts_tree_cursor_current_node(const TSTreeCursor *self);
uint16_t ts_tree_cursor_current_field_id(const TSTreeCursor *self);
uint16_t ts_node_symbol(TSNode self);
uint32_t ts_node_start_byte(TSNode self);
uint32_t ts_node_end_byte(TSNode self);
bool ts_node_is_missing(TSNode self);
uint32_t ts_node_descendant_count(TSNode self);

// cra_node mirrors the Go type node.
typedef struct {
	uint16_t kind;
	uint16_t field;
	uint32_t start;
	uint32_t end;
	int32_t parent;
	int32_t prev;
	int32_t next;
	int32_t skip;
	uint32_t flags;
} cra_node;

static void cra_use_libc_allocator(void) {
	ts_set_allocator(malloc, calloc, realloc, free);
}

static uint32_t cra_descendants(const TSNode *root) {
	return ts_node_descendant_count(*root);
}

// cra_flatten writes the visible nodes under root in pre-order and returns
// how many it wrote, at most cap.
static uint32_t cra_flatten(const TSNode *root, cra_node *out, uint32_t cap) {
	if (cap == 0) {
		return 0;
	}
	TSTreeCursor c = ts_tree_cursor_new(*root);
	uint32_t n = 0;
	int32_t parent = -1, prev = -1;
	for (;;) {
		TSNode node = ts_tree_cursor_current_node(&c);
		int32_t idx = (int32_t)n;
		cra_node *o = &out[n++];
		o->kind = ts_node_symbol(node);
		o->field = ts_tree_cursor_current_field_id(&c);
		o->start = ts_node_start_byte(node);
		o->end = ts_node_end_byte(node);
		o->parent = parent;
		o->prev = prev;
		o->next = -1;
		o->skip = idx + 1;
		o->flags = ts_node_is_missing(node) ? 1 : 0;
		if (n < cap && ts_tree_cursor_goto_first_child(&c)) {
			parent = idx;
			prev = -1;
			continue;
		}
		int32_t cur = idx;
		for (;;) {
			out[cur].skip = (int32_t)n;
			if (n < cap && ts_tree_cursor_goto_next_sibling(&c)) {
				out[cur].next = (int32_t)n;
				prev = cur;
				parent = out[cur].parent;
				break;
			}
			if (cur == 0 || !ts_tree_cursor_goto_parent(&c)) {
				ts_tree_cursor_delete(&c);
				return n;
			}
			cur = out[cur].parent;
		}
	}
}
*/
import "C"

import (
	"unsafe"

	sitter "github.com/tree-sitter/go-tree-sitter"
)

// node is one syntax node in the flat pre-order form the extractors read.
// Its layout must match cra_node above.
type node struct {
	kind   uint16 // grammar symbol, 0xFFFF for ERROR
	field  uint16 // field id in the parent, 0 for none
	start  uint32 // byte offsets, end exclusive
	end    uint32
	parent int32 // index of the parent, -1 for the root
	prev   int32 // index of the previous sibling, or -1
	next   int32 // index of the next sibling, or -1
	skip   int32 // index just past the node's subtree
	flags  uint32
}

const (
	flagMissing = 1 << iota // a MISSING node inserted by error recovery
	flagDone                // an extractor has read the node: skip its subtree
	flagSym                 // the node's symbol is already recorded
)

// The two array lengths are negative, and the build fails, unless the Go and
// C structs have the same size.
var (
	_ [unsafe.Sizeof(node{}) - C.sizeof_cra_node]byte
	_ [C.sizeof_cra_node - unsafe.Sizeof(node{})]byte
)

func init() {
	// go-tree-sitter routes every allocation of the C library through a cgo
	// callback into Go, which then calls C.malloc anyway; that costs a fifth
	// of the parse time and four fifths of Tree.Close. Pointing the library
	// at libc directly is equivalent (the same heap) and much cheaper. It is
	// safe at init: no tree-sitter object exists yet, and memory from either
	// allocator can be freed by the other.
	C.cra_use_libc_allocator()
}

// flatten copies the tree under root into buf in pre-order with one cgo
// call. Walking with the binding's TreeCursor costs six cgo calls a node,
// which made extraction slower than parsing itself. sitter.Node is
// documented as a C-compatible struct: it is a TSNode.
func flatten(root *sitter.Node, buf []node) []node {
	croot := (*C.TSNode)(unsafe.Pointer(root))
	n := int(C.cra_descendants(croot))
	if cap(buf) < n {
		buf = make([]node, n)
	}
	buf = buf[:n]
	if n == 0 {
		return buf
	}
	got := C.cra_flatten(croot, (*C.cra_node)(unsafe.Pointer(&buf[0])), C.uint32_t(n))
	return buf[:got]
}
